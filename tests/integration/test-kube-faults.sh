#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The daemon's pod condition sync (agent/io/podsync.c) under the API server's
# faults that test-kube.sh does not inject: a first GET that fails (a proxy's
# 502 HTML page), 401 again after the token was re-read, 429 without
# Retry-After, 400 and 415 for the patch, 404 and 409 for an Event, and
# malformed watch streams (a line that is not JSON, an event of an unknown
# type, an object over the client's limit). For each: the log line that
# names the request, the metrics, the condition on the fake's pod, a bounded
# number of requests (backoff, never a busy loop), and /metrics still served.
. "$(dirname "$0")/lib.sh"

kube_test_tools

NS=slurm
UID0=0b8c0a52-6f0e-4c47-9a57-5d1f7e3c9a10
TYPE=EnrootConfigCurrent
POD=/api/v1/namespaces/$NS/pods/worker-0
kube_test_dirs

kube_pki "$sa" "$NS" token-1
cat >"$WORK/pods.json" <<EOF
{"items": [{"metadata": {"name": "worker-0", "namespace": "$NS", "uid": "$UID0",
                         "resourceVersion": "100"},
            "status": {"conditions": [
              {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"}]}}]}
EOF

section() { echo "== $* (at ${SECONDS}s)" >&2; }
pod_condition() { ctl GET /pods/worker-0 | jq -c --arg t "$TYPE" '.status.conditions[] | select(.type == $t)'; }
condition_field() { pod_condition | jq -r ".$1"; }
condition_is() { [ "$(condition_field status)/$(condition_field reason)" = "$1" ]; }
expect_condition() { # STATUS/REASON [SECONDS]
        if wait_for "${2:-10}" condition_is "$1"; then pass; else
                fail "condition is '$(condition_field status)/$(condition_field reason)', expected $1"
        fi
}
# requests [JQ-FILTER]: API requests logged since the last reset, one per line
requests() { ctl GET /requests | jq -r ".[] | select(${1:-true}) | \"\(.method) \(.path) \(.status)\""; }
count_requests() { requests "$1" | wc -l; }
patches() { count_requests '.method == "PATCH"'; }
# gaps FILTER: the seconds between the requests FILTER selects, rounded to 0.1
gaps() { ctl GET /requests | jq -r "[.[] | select($1) | .time] | [range(1; length) as \$i | (.[\$i] - .[\$i - 1]) * 10 | floor / 10] | map(tostring) | join(\" \")"; }
min_gap_at_least() { # FILTER SECONDS: every gap between those requests is at least SECONDS
        ctl GET /requests | jq -e --argjson min "$2" "[.[] | select($1) | .time] | [range(1; length) as \$i | .[\$i] - .[\$i - 1]] | all(. >= \$min)" >/dev/null
}
reset_requests() { ctl POST /reset-requests >/dev/null; }
fault() { ctl POST /faults "$1" >/dev/null; }
metrics_served() { # LABEL: /metrics answers within a second while the API misbehaves
        if curl -sf -m 1 "http://127.0.0.1:$PORT/metrics" >/dev/null; then pass; else
                fail "$1: /metrics is not served"
        fi
}
# log_has LABEL REGEX: the agent's log since the mark says it (within 5 s)
log_mark=0
mark_log() { log_mark=$(wc -l <"$AGENT_LOG"); }
log_since() { tail -n +$((log_mark + 1)) "$AGENT_LOG"; }
log_has() {
        if wait_for 5 sh -c "tail -n +$((log_mark + 1)) '$AGENT_LOG' | grep -q -- \"\$1\"" _ "$2"; then pass; else
                fail "$1: no log line /$2/ in:"$'\n'"$(log_since | tail -5)"
        fi
}
kube_args() {
        echo --desired-dir "$cm" --running-root "$root" --kube on --kube-api "$API" \
                --serviceaccount-dir "$sa" --pod-name worker-0 --pod-uid "$UID0"
}
make_current() { publish 'ENROOT_MOUNT_HOME=yes\n' 'NCCL_DEBUG=WARN\n'; }
make_drift() { publish "ENROOT_MOUNT_HOME=no\n" 'NCCL_DEBUG=WARN\n'; }
# another drift: the condition's message names the keys (never values), so
# only another key makes another condition
make_other_drift() { publish "ENROOT_MOUNT_HOME=no\nENROOT_REMAP_ROOT=yes\n" 'NCCL_DEBUG=WARN\n'; }
# The condition is re-asserted after another writer drops it: the sync works.
still_syncs() { # LABEL STATUS/REASON
        ctl POST /pods/worker-0/rewrite-conditions '[{"type":"Ready","status":"True"}]' >/dev/null
        if wait_for 10 condition_is "$2"; then pass; else
                fail "$1: the condition was not re-asserted: $(pod_condition)"
        fi
}

make_current
cp "$WORK/src/enroot.conf" "$root/etc/enroot/enroot.conf"
cp "$WORK/src/99-aicr-defaults.env" "$root/etc/enroot/environ.d/99-aicr-defaults.env"
start_fake "$WORK/pods.json" --rbac "$AGENT_RBAC"

# --- the first GET fails: a proxy's 502 page, twice; backoff, then it works ---------
section "a failed first GET"
HTML='<html>
<head><title>502 Bad Gateway</title></head>
<body><center><h1>502 Bad Gateway</h1></center></body>
</html>'
fault "$(jq -nc --arg b "$HTML" --arg p "$POD" '{match: {method: "GET", path: $p, watch: false},
        status: 502, body: $b, content_type: "text/html", count: 2}')"
start_agent "$WORK/agent.log" $(kube_args) || { finish; exit 1; }
log_has "502 from a proxy" "Kubernetes API: reading the pod: 502 error (not a Kubernetes Status: <html> <head><title>502 Bad Gateway</title></head>.*); retrying in"
metrics_served "502 on the first GET"
expect_condition True/ConfigCurrent 10
[ "$(count_requests ".method == \"GET\" and (.watch | not)")" = 3 ] && pass || fail "GETs for two 502s: $(requests)"
# backoff: 0.5-1 s after the first, 1-2 s after the second
min_gap_at_least '.method == "GET" and (.watch | not)' 0.45 && pass ||
        fail "no backoff between the failed GETs: $(gaps '.method == "GET" and (.watch | not)')"
expect_metric 'aicr_enroot_agent_kube_requests_total{verb="get",code="502"}' 2
log_has "recovery" "Kubernetes API: reading the pod works again"

# --- an Event refused with 404, then one with 409: dropped, never retried ------------
section "Events refused with 404 and 409"
for code in 404 409; do
        reset_requests
        mark_log
        if [ "$code" = 404 ]; then
                fault '{"match": {"method": "POST", "path_prefix": "/api/v1/namespaces/'$NS'/events"}, "status": 404,
                        "message": "namespaces \"'$NS'\" not found", "count": 100}'
                make_drift
                expect_condition False/ConfigDrifted
                log_has "Event 404" "Kubernetes API: creating an Event: 404 Not Found (namespaces \"$NS\" not found); the Event is dropped"
        else
                fault '{"match": {"method": "POST", "path_prefix": "/api/v1/namespaces/'$NS'/events"}, "status": 409,
                        "reason": "AlreadyExists", "message": "events \"worker-0.1\" already exists", "count": 100}'
                make_current
                expect_condition True/ConfigCurrent
                log_has "Event 409" "Kubernetes API: creating an Event: 409 AlreadyExists (events \"worker-0.1\" already exists); not retrying"
        fi
        sleep 2
        [ "$(count_requests '.method == "POST"')" = 1 ] && pass || fail "Event $code retried: $(requests)"
        [ "$(ctl GET /events | jq length)" = 0 ] && pass || fail "an Event was stored: $(ctl GET /events)"
        metrics_served "Event $code"
        expect_metric "aicr_enroot_agent_kube_requests_total{verb=\"create\",code=\"$code\"}" 1
        ctl DELETE /faults >/dev/null
done

# --- 401 again after the token was re-read: one quick retry, then backoff ------------
section "401 after re-reading the token"
reset_requests
mark_log
fault '{"match": {"method": "PATCH"}, "status": 401, "count": 1000}'
make_drift
log_has "second 401" "Kubernetes API: writing the condition: 401 Unauthorized with a freshly read token (Unauthorized); is the projected service account token mounted and current? Retrying in"
sleep 3
metrics_served "401"
n=$(patches)
# 401, at once 401 (the token re-read), then 0.5-1 s, 1-2 s, 2-4 s: 3 to 5 in 3 s
[ "$n" -ge 3 ] && [ "$n" -le 5 ] && pass || fail "$n PATCHes in 3 s of 401s: $(gaps '.method == "PATCH"')"
gap2=$(gaps '.method == "PATCH"' | awk '{print $2}')
awk -v g="${gap2:-0}" 'BEGIN { exit !(g >= 0.4) }' && pass || fail "no backoff after the second 401: gaps $(gaps '.method == "PATCH"')"
# The agent goes on retrying: the metric is compared with the PATCHes the
# server saw at the same moment (the count read before and after it agree).
metric_is_patches() {
        local before after m
        before=$(patches)
        m=$(metric 'aicr_enroot_agent_kube_requests_total{verb="patch",code="401"}')
        after=$(patches)
        [ "$before" = "$after" ] && [ "$m" = "$before" ]
}
wait_for "$HANG" metric_is_patches && pass ||
        fail "the 401 PATCHes counted by the agent never matched those the server saw: $(metric 'aicr_enroot_agent_kube_requests_total{verb="patch",code="401"}') against $(patches)"
expect_metric 'aicr_enroot_agent_condition_synced ' 0
[ "$(condition_field status)" = True ] && pass || fail "the condition changed under 401: $(pod_condition)"
ctl DELETE /faults >/dev/null
kill -HUP "$AGENT_PID" # retry now
expect_condition False/ConfigDrifted

# --- 429 without Retry-After: the agent's own backoff ---------------------------------
section "429 without Retry-After"
reset_requests
mark_log
fault '{"match": {"method": "PATCH"}, "status": 429, "count": 3}'
make_current
log_has "429" "Kubernetes API: writing the condition: 429 Too Many Requests; retrying in"
metrics_served "429"
expect_condition True/ConfigCurrent 15
[ "$(patches)" = 4 ] && pass || fail "3 x 429 then success: $(requests)"
# no Retry-After: 0.5-1 s, 1-2 s, 2-4 s between the tries
min_gap_at_least '.method == "PATCH"' 0.45 && pass || fail "429 retried without waiting: gaps $(gaps '.method == "PATCH"')"
expect_metric 'aicr_enroot_agent_kube_requests_total{verb="patch",code="429"}' 3

# --- 400 and 415: the patch is refused as it is; not repeated until it changes --------
section "400 and 415"
for code in 400 415; do
        reset_requests
        mark_log
        fault '{"match": {"method": "PATCH"}, "status": '$code', "count": 1000}'
        make_drift
        log_has "$code" "Kubernetes API: writing the condition: $code [A-Za-z]* (.*); not retrying until the condition changes"
        sleep 2
        [ "$(patches)" = 1 ] && pass || fail "$code repeated: $(requests)"
        [ "$(condition_field status)" = True ] && pass || fail "$code: the condition changed: $(pod_condition)"
        metrics_served "$code"
        expect_metric "aicr_enroot_agent_kube_requests_total{verb=\"patch\",code=\"$code\"}" 1
        ctl DELETE /faults >/dev/null
        make_other_drift # another condition: sent
        expect_condition False/ConfigDrifted
        condition_field message | grep -q ENROOT_REMAP_ROOT && pass || fail "$code: the new condition: $(pod_condition)"
        make_current
        expect_condition True/ConfigCurrent
done

# --- malformed watch streams --------------------------------------------------------
# The next watch (the agent's resumes when the stream closes) starts with the
# bad line: the agent reads the pod again (a line it cannot use) or resumes
# the watch after a backoff (a stream broken by an object over its limit).
section "malformed watch events"
for kind in not-json unknown-type oversized; do
        reset_requests
        mark_log
        fault '{"match": {"watch": true}, "watch_event": "'$kind'", "count": 1}'
        ctl POST /close-watches >/dev/null
        case $kind in
        not-json) log_has "$kind" "Kubernetes API: a watch event is not usable (.*); reading the pod again." ;;
        unknown-type) log_has "$kind" "Kubernetes API: a watch event is not usable (the watch event has no known type); reading the pod again." ;;
        oversized) log_has "$kind" "Kubernetes API https://127.0.0.1:[0-9]*: watching the pod failed: the answer holds an object larger than KUBE_MAX_OBJECT_BYTES (4 MiB); retrying in" ;;
        esac
        metrics_served "watch $kind"
        wait_for 5 sh -c "curl -sf '$CTL/faults' | jq -e '.faults | length == 0' >/dev/null" || fail "$kind: the fault was never taken"
        sleep 2
        gets=$(count_requests '.method == "GET" and (.watch | not)')
        case $kind in
        oversized) [ "$gets" = 0 ] && pass || fail "$kind: the pod was read again: $(requests)" ;;
        *) [ "$gets" = 1 ] && pass || fail "$kind: $gets GETs of the pod after a bad watch line: $(requests)" ;;
        esac
        [ "$(count_requests '.watch')" -le 3 ] && pass || fail "$kind: watches busy-loop: $(requests)"
        still_syncs "after $kind" True/ConfigCurrent
done

# No busy loop anywhere: the fake saw a bounded number of requests in all.
total=$(ctl GET /state | jq -r '.requests // empty')
[ -n "$total" ] && [ "$total" -lt 60 ] && pass || fail "'$total' API requests since the last reset"
stop_agent

finish
