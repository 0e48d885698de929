#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The login notice of `aicr-enroot-agent rollout` (the guide's "notify
# connected users and replace the login pods"), against the real Slurm
# cluster of tests/tools/slurm-cluster.sh and the fake API server under the
# rollout's documented RBAC (rollout-rbac.yaml).
# Covers: plan shows the step with the default grace (300 s), the command
# and the pods, in text and JSON, and runs nothing; apply runs
# --notify-command once with the pods, their nodes, the rollout id and the
# time left in its environment, posts an Event on each login pod (the pod's
# UID, reason EnrootConfigRollout), records the notice in the Lease, and
# deletes the first login pod only once the grace has passed; a failing
# command is reported (exit status, last line of stderr) and the rollout goes
# on; a command that is not found blocks apply before anything changes;
# Events refused (403 by RBAC, 500) are reported, not fatal; an apply killed
# during the grace and continued tells nobody twice and waits only what is
# left (status shows the notice and the time left meanwhile); with no login
# pod to replace, nobody is told and nothing is waited for.
. "$(dirname "$0")/lib.sh"

: "${TOP_SRCDIR:?run through make check}"
. "$(dirname "$0")/rollout-lib.sh"
rollout_cluster_start

EVENTS=/api/v1/namespaces/$NS/events
LA=slurm-login-slinky-a
LB=slurm-login-slinky-b
UA=00000000-0000-0000-0000-0000000000aa
UB=00000000-0000-0000-0000-0000000000bb

# start_login_pods [RBAC-FILE]: every worker current, two drifted login pods
# (a on the Kubernetes node k8s-login-1, b not scheduled), the policies.
start_login_pods() {
        local w
        stop_fake
        {
                for w in 0 1 2 3; do worker_json "$w" "00000000-0000-0000-0000-00000000000$w" True; done
                pod_json $LA $UA login False | jq -c '.spec.nodeName = "k8s-login-1"'
                pod_json $LB $UB login False
        } | jq -s '{items: .}' >"$WORK/pods.json"
        configmap_json >"$WORK/configmaps.json"
        start_fake "$WORK/pods.json" --namespace "$NS" --rbac "${1:-$ROLLOUT_RBAC}" --user "$ROLLOUT_USER" \
                --configmaps "$WORK/configmaps.json"
        seed_policies || fail "cannot seed the admission policies"
        : >"$NOTIFY_LOG"
}
# The stand-in for the LoginSet's Deployment: each deleted login pod comes
# back as NAME-r, Ready and current.
login_controller() {
        local name
        while sleep 0.1; do
                ctl GET /pods >"$WORK/lc.now" 2>/dev/null || continue
                for name in $LA $LB; do
                        jq -e --arg n "$name" '.items[] | select(.metadata.name == $n or .metadata.name == $n + "-r")' \
                                "$WORK/lc.now" >/dev/null && continue
                        pod_json "$name-r" "20000000-0000-0000-0000-00000000000${name##*-}" login True |
                                curl -sf -X POST "$CTL/pods" -H 'Content-Type: application/json' --data-binary @- >/dev/null
                done
        done
}
lc_pid=
start_login_controller() { stop_login_controller; login_controller & lc_pid=$!; }
stop_login_controller() {
        [ -n "$lc_pid" ] || return 0
        kill "$lc_pid" 2>/dev/null || true
        wait "$lc_pid" 2>/dev/null || true
        lc_pid=
}
trap 'stop_login_controller; rollout_cleanup' EXIT

# The notify commands: each run appends its time, its arguments and its
# AICR_ROLLOUT_* environment to $NOTIFY_LOG (which it inherits).
export NOTIFY_LOG=$WORK/notify.log
cat >"$WORK/notify.sh" <<'EOF'
#!/bin/bash
{ echo "time=$(date +%s.%N)"; echo "args=$*"; env | grep '^AICR_ROLLOUT_' | sort; echo end; } >>"$NOTIFY_LOG"
EOF
cat >"$WORK/notify-fails.sh" <<'EOF'
#!/bin/bash
echo "time=$(date +%s.%N)" >>"$NOTIFY_LOG"
echo "wall: connecting to slurm-login-slinky-a" >&2
echo "wall: pod slurm-login-slinky-b: container not found" >&2
exit 3
EOF
chmod +x "$WORK/notify.sh" "$WORK/notify-fails.sh"
runs() { grep -c '^time=' "$NOTIFY_LOG"; }
env_of() { sed -n "s/^$1=//p" "$NOTIFY_LOG" | head -1; } # VAR: in the first run
# Times from the fake's request log (epoch seconds): the first login pod's
# DELETE, the last POST of an Event.
first_login_delete() { ctl GET /requests | jq '[.[] | select(.method == "DELETE" and (.path | test("slurm-login"))) | .time] | min'; }
last_event_post() { ctl GET /requests | jq --arg p "$EVENTS" '[.[] | select(.method == "POST" and .path == $p) | .time] | max'; }
# The notice in the stored Lease's record: its time (epoch seconds) and grace.
notice_steps() {
        ctl GET /leases | jq -c '[.[] | select(.metadata.name == "aicr-enroot-rollout") |
                .metadata.annotations["aicr-enroot-agent/rollout"] | fromjson | .steps[] | select(.step == "notify")]'
}
notice_time() { # 0 when there is none
        local t
        t=$(notice_steps | jq -r '.[0].time // empty')
        if [ -n "$t" ]; then date -d "$t" +%s.%N; else echo 0; fi
}
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; } # A >= B (decimals)
add() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f\n", a + b }'; }

# --- plan: the step, with its defaults --------------------------------------------
section "plan shows the notice, with the default grace"
start_login_pods
LOGIN_GRACE='' rollout plan
expect_rc 1 "plan"
expect_said out "plan" "login notice: before the first of 2 login pod(s) goes, no --notify-command: an Event on each (reason EnrootConfigRollout), then a wait of 300 s (--login-grace)"
LOGIN_GRACE='' rollout plan --format json --notify-command "$WORK/notify.sh --all"
expect_rc 1 "plan --format json"
[ "$(jq -c .login_notice "$WORK/out")" = "{\"pods\":[\"$LA\",\"$LB\"],\"command\":\"$WORK/notify.sh --all\",\"grace_seconds\":300}" ] &&
        pass || fail "plan's login_notice: $(jq -c .login_notice "$WORK/out")"
expect_said err "plan --notify-command" "login notice: before the first of 2 login pod(s) goes, run \`$WORK/notify.sh --all\`, an Event on each"
[ "$(runs)" = 0 ] && pass || fail "plan ran the notify command"
[ "$(ctl GET /events | jq length)" = 0 ] && pass || fail "plan posted Events: $(ctl GET /events)"
# a command that cannot run: plan says so, apply changes nothing
rollout plan --notify-command "/nonexistent/wall-all --now"
expect_rc 1 "plan with a missing notify command"
expect_said out "plan, missing command" "blocked: --notify-command: \"/nonexistent/wall-all\" is not an executable file: the users of the login pods could not be told."
rollout apply --notify-command "no-such-wall-command"
expect_rc 1 "apply with a notify command not in PATH"
expect_said out "apply, missing command" "blocked: --notify-command: \"no-such-wall-command\" is not an executable file in PATH"
[ "$(deletes)" = "" ] && [ "$(ctl GET /events | jq length)" = 0 ] && [ "$(ctl GET /leases | jq length)" = 0 ] &&
        pass || fail "apply with a missing notify command changed something: deletes '$(deletes)', $(ctl GET /leases)"
rollout apply --notify-command "'unbalanced"
expect_rc 2 "a notify command that is not words"

# --- apply: told once, Events, the grace, then the login pods ------------------------
section "apply: the command once, an Event on each login pod, the grace, then the pods"
start_login_pods
start_login_controller
LOGIN_GRACE=3 rollout apply --format json --notify-command "$WORK/notify.sh --all 'two words'"
expect_rc 0 "apply with a notice"
stop_login_controller
[ "$(runs)" = 1 ] && pass || fail "the notify command ran $(runs) times"
id=$(jq -r .rollout_id "$WORK/out")
[ "$(env_of args)" = "--all two words" ] && pass || fail "its arguments: $(env_of args)"
[ "$(env_of AICR_ROLLOUT_LOGIN_PODS)" = "$LA $LB" ] && pass || fail "LOGIN_PODS: $(env_of AICR_ROLLOUT_LOGIN_PODS)"
[ "$(env_of AICR_ROLLOUT_LOGIN_NODES)" = "k8s-login-1 -" ] && pass || fail "LOGIN_NODES: $(env_of AICR_ROLLOUT_LOGIN_NODES)"
[ "$(env_of AICR_ROLLOUT_ID)" = "$id" ] && pass || fail "ID: $(env_of AICR_ROLLOUT_ID), the rollout's $id"
[ "$(env_of AICR_ROLLOUT_NAMESPACE)" = "$NS" ] && pass || fail "NAMESPACE: $(env_of AICR_ROLLOUT_NAMESPACE)"
[ "$(env_of AICR_ROLLOUT_GRACE_SECONDS)" = 3 ] && pass || fail "GRACE_SECONDS: $(env_of AICR_ROLLOUT_GRACE_SECONDS)"
told=$(env_of time)
at=$(env_of AICR_ROLLOUT_DELETE_AT_EPOCH)
[ "$(env_of AICR_ROLLOUT_DELETE_AT)" = "$(date -u -d "@$at" +%Y-%m-%dT%H:%M:%SZ)" ] && pass ||
        fail "DELETE_AT $(env_of AICR_ROLLOUT_DELETE_AT) is not DELETE_AT_EPOCH $at"
ge "$at" "$(add "${told%.*}" 2)" && ge "$(add "$told" 3)" "$at" &&
        pass || fail "DELETE_AT_EPOCH $at is not 3 s after the command ran ($told)"
# the order: the notice recorded, the command, the Events, then (the grace
# later) the first login pod's DELETE
deleted=$(first_login_delete)
recorded=$(notice_time)
ge "$told" "$recorded" && pass || fail "the command ran ($told) before the notice was recorded ($recorded)"
ge "$deleted" "$(last_event_post)" && pass || fail "a login pod was deleted ($deleted) before the last Event ($(last_event_post))"
ge "$deleted" "$(add "$recorded" 3)" && pass ||
        fail "the first login pod was deleted at $deleted, less than 3 s after the notice ($recorded)"
[ "$(notice_steps | jq -c '[.[] | [.grace_seconds, .pods]]')" = "[[3,[\"$LA\",\"$LB\"]]]" ] && pass ||
        fail "the Lease's notice: $(notice_steps)"
# an Event on each login pod, as the real server stores them
ctl GET /events >"$WORK/events.json"
[ "$(jq -c '[.[] | [.involvedObject.apiVersion, .involvedObject.kind, .involvedObject.name, .involvedObject.namespace, .involvedObject.uid]] | sort' "$WORK/events.json")" = \
        "[[\"v1\",\"Pod\",\"$LA\",\"$NS\",\"$UA\"],[\"v1\",\"Pod\",\"$LB\",\"$NS\",\"$UB\"]]" ] && pass ||
        fail "the Events' objects: $(jq -c '[.[].involvedObject]' "$WORK/events.json")"
jq -e --arg at "$(env_of AICR_ROLLOUT_DELETE_AT)" --arg id "$id" 'all(.[]; .type == "Normal" and .reason == "EnrootConfigRollout" and
        .source.component == "aicr-enroot-agent" and .reportingComponent == "aicr-enroot-agent" and
        (.message | contains("Rollout " + $id) and contains($at) and contains("(in 3 s)")))' "$WORK/events.json" >/dev/null &&
        pass || fail "the Events: $(jq -c . "$WORK/events.json")"
[ "$(jq -c '[.steps[] | select(.step == "notify" or .step == "event" or .step == "login-grace") | [.step, .target, .result]]' "$WORK/out")" = \
        "[[\"notify\",\"--notify-command\",\"done\"],[\"event\",\"$LA\",\"done\"],[\"event\",\"$LB\",\"done\"],[\"login-grace\",null,\"done\"]]" ] &&
        pass || fail "the report's steps: $(jq -c .steps "$WORK/out")"
[ "$(deletes)" = "$LA $LB " ] && pass || fail "deleted: '$(deletes)'"

# --- a notify command that fails: said, and the rollout goes on ---------------------------
section "a notify command that fails"
start_login_pods
start_login_controller
LOGIN_GRACE=1 rollout apply --notify-command "$WORK/notify-fails.sh"
expect_rc 0 "apply with a failing notify command"
stop_login_controller
expect_said out "the failure" "notify: \`$WORK/notify-fails.sh\` failed (exit status 3: wall: pod slurm-login-slinky-b: container not found). Going on"
[ "$(runs)" = 1 ] && pass || fail "the failing command ran $(runs) times"
[ "$(ctl GET /events | jq length)" = 2 ] && pass || fail "Events after a failed command: $(ctl GET /events | jq length)"
[ "$(deletes)" = "$LA $LB " ] && pass || fail "deleted: '$(deletes)'"

# --- Events refused: 403 (RBAC without events), 500: said, not fatal -------------------------
section "Events refused"
grep -v -e '    resources: \[events\]' "$ROLLOUT_RBAC" |
        awk '/- apiGroups: \[""\]/ { held = $0; next } held != "" { if ($0 ~ /verbs: \[create\]/) { held = ""; next } print held; held = "" } { print }' \
        >"$WORK/no-events-rbac.yaml"
grep -q events "$WORK/no-events-rbac.yaml" && fail "the copy of the RBAC still grants events"
start_login_pods "$WORK/no-events-rbac.yaml"
start_login_controller
LOGIN_GRACE=0 rollout apply
expect_rc 0 "apply without create on events"
stop_login_controller
expect_said out "403" "event: not posted on pod $LA: POST $API$EVENTS: 403 Forbidden: events is forbidden: User \"$ROLLOUT_USER\" cannot create resource \"events\" in API group \"\" in the namespace \"$NS\". The rollout needs create on events in namespace $NS; going on"
[ "$(deletes)" = "$LA $LB " ] && pass || fail "deleted after 403: '$(deletes)'"
start_login_pods
start_login_controller
ctl POST /faults "{\"match\": {\"method\": \"POST\", \"path\": \"$EVENTS\"}, \"status\": 500, \"count\": 1}" >/dev/null
LOGIN_GRACE=0 rollout apply
expect_rc 0 "apply with an Event answered 500"
stop_login_controller
expect_said out "500" "event: not posted on pod $LA: POST $API$EVENTS: 500 "
[ "$(ctl GET /events | jq -r '[.[].involvedObject.name] | join(" ")')" = "$LB" ] && pass ||
        fail "the Events stored after one 500: $(ctl GET /events | jq -c '[.[].involvedObject.name]')"
[ "$(deletes)" = "$LA $LB " ] && pass || fail "deleted after 500: '$(deletes)'"

# --- killed during the grace, then continued: nobody told twice, the rest of the wait -------
section "killed during the grace, then continued"
start_login_pods
start_login_controller
"$AGENT" rollout apply --kube-api "$API" --serviceaccount-dir "$WORK/sa" --namespace "$NS" \
        --poll-interval 100 --lease-duration 2 --login-grace 15 --notify-command "$WORK/notify.sh" \
        >"$WORK/first.out" 2>&1 &
bg=$!
wait_for 30 grep -q '^end$' "$NOTIFY_LOG" || fail "the first run did not notify: $(cat "$WORK/first.out")"
# status meanwhile: the notice given, and the time left
rollout status --format json
expect_rc 1 "status during the grace"
left=$(jq -r .login_notice.seconds_left "$WORK/out")
[ "$left" -ge 9 ] && [ "$left" -le 15 ] && pass || fail "status: seconds_left $left: $(jq -c .login_notice "$WORK/out")"
expect_said err "status during the grace" "login notice: given at "
sleep 0.5
kill -KILL "$bg" 2>/dev/null || true
wait "$bg" 2>/dev/null || true
bg=
[ "$(deletes)" = "" ] && pass || fail "a login pod went during the grace: '$(deletes)'"
sleep 2.5 # the killed run's Lease expires
start=$(date +%s.%N)
LOGIN_GRACE=15 rollout apply --notify-command "$WORK/notify.sh" --lease-duration 2
expect_rc 0 "the continued apply"
stop_login_controller
[ "$(runs)" = 1 ] && pass || fail "told $(runs) times"
[ "$(ctl GET /events | jq length)" = 2 ] && pass || fail "$(ctl GET /events | jq length) Events, not 2"
expect_said out "continued" "by an earlier run of this rollout: not again"
waited=$(sed -n 's/.* login grace: waiting \([0-9]*\) s, until .*/\1/p' "$WORK/out")
[ -n "$waited" ] && [ "$waited" -ge 2 ] && [ "$waited" -le 13 ] && pass ||
        fail "the continued apply waited '$waited' s of 15: $(cat "$WORK/out")"
deleted=$(first_login_delete)
recorded=$(notice_time)
ge "$deleted" "$(add "$recorded" 15)" && pass ||
        fail "the first login pod went at $deleted, less than 15 s after the notice ($recorded)"
ge "$(add "$start" 14)" "$deleted" && pass ||
        fail "the grace started over: the first login pod went at $deleted, the continued run began at $start"
[ "$(notice_steps | jq length)" = 1 ] && pass || fail "the Lease records $(notice_steps | jq length) notices"
[ "$(deletes)" = "$LA $LB " ] && pass || fail "deleted: '$(deletes)'"

# --- no login pod to replace: nobody told, nothing waited for -------------------------------
section "no login pod to replace"
if why=$(replace_node_unavailable); then
        skip_part no-time-namespace "$why"
else
        start_pods "0:True 1:False 2:True 3:True" True
        : >"$NOTIFY_LOG"
        LOGIN_GRACE='' rollout plan --format json --notify-command "$WORK/notify.sh"
        expect_rc 1 "plan, no login pod"
        [ "$(jq -c .login_notice "$WORK/out")" = null ] && pass || fail "plan's login_notice: $(jq -c .login_notice "$WORK/out")"
        start_controller
        start=$SECONDS
        LOGIN_GRACE='' rollout apply --notify-command "$WORK/notify.sh"
        expect_rc 0 "apply, no login pod"
        stop_controller
        [ "$(runs)" = 0 ] && pass || fail "told the users with no login pod to replace"
        [ "$(ctl GET /events | jq length)" = 0 ] && pass || fail "Events with no login pod to replace"
        grep -q 'login notice\|login grace' "$WORK/out" && fail "the apply spoke of a notice: $(grep 'login notice\|login grace' "$WORK/out")" || pass
        [ $((SECONDS - start)) -lt 120 ] && pass || fail "the apply took $((SECONDS - start)) s: it waited a grace"
        [ "$(deletes)" = "slurm-worker-slinky-1 " ] && pass || fail "deleted: '$(deletes)'"
        reset_nodes
fi

finish
