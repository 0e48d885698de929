#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The fake Kubernetes API server (tests/tools/fake-apiserver) checked from
# outside with curl over real TLS against a throwaway CA, before the agent's
# kube client is ever tested against it: if the fake lied, those tests would
# prove nothing. Covers what the kube client's tests rely on: bearer token from a file
# that rotates, GET and list, strategic merge patch by condition type and JSON
# merge patch replacing the list, the UID precondition, watch streams
# (MODIFIED after a patch and after an operator-style rewrite, history replay,
# 410 for a compacted resourceVersion, DELETED/ADDED for a replacement pod),
# every injected fault, slow answers that do not hold other requests, dropped
# connections, the request log, and a clean stop.
. "$(dirname "$0")/lib.sh"

command -v openssl >/dev/null || skip no-openssl "openssl is not installed (scripts/setup-deps.sh installs it)"
command -v curl >/dev/null || skip no-curl "curl is not installed (scripts/setup-deps.sh installs it)"
command -v jq >/dev/null || skip no-jq "jq is not installed (scripts/setup-deps.sh installs it)"
FAKE=${FAKE_APISERVER:-$(dirname "$AGENT")/tests/tools/fake-apiserver}
if [ ! -x "$FAKE" ]; then
        echo "FAIL: $FAKE is not built (make tests/tools/fake-apiserver)" >&2
        exit 1
fi
: "${TOP_SRCDIR:?run through make check}"

fake_pid=
stop_fake() {
        if [ -n "$fake_pid" ]; then
                kill "$fake_pid" 2>/dev/null || true
                wait "$fake_pid" 2>/dev/null || true
                fake_pid=
        fi
}
trap 'stop_fake; rm -rf "$WORK"' EXIT

expect_eq() { # LABEL WANT GOT
        if [ "$2" = "$3" ]; then
                pass
        else
                fail "$1: expected '$2', got '$3'"
        fi
}

# wait_until SECONDS CMD...: polls CMD every 50 ms; false when time runs out.
wait_until() {
        local deadline=$((SECONDS + $1))
        shift
        until "$@"; do
                [ "$SECONDS" -lt "$deadline" ] || return 1
                sleep 0.05
        done
}

# --- set-up ------------------------------------------------------------------
bash "$TOP_SRCDIR/tests/tools/make-test-ca.sh" "$WORK/pki" || {
        echo "FAIL: make-test-ca.sh failed" >&2
        exit 1
}
bash "$TOP_SRCDIR/tests/tools/make-test-ca.sh" "$WORK/other-pki" >/dev/null

NS=slurm
BASE=/api/v1/namespaces/$NS
W0_UID=0b8c0a52-6f0e-4c47-9a57-5d1f7e3c9a10
cat >"$WORK/pods.json" <<EOF
{"kind": "PodList", "apiVersion": "v1", "items": [
  {"metadata": {"name": "worker-0", "namespace": "$NS", "uid": "$W0_UID",
                "resourceVersion": "100",
                "labels": {"app.kubernetes.io/instance": "slinky-slurm-worker-slinky"}},
   "spec": {"hostname": "slinky-0"},
   "status": {"phase": "Running", "conditions": [
     {"type": "PodScheduled", "status": "True", "lastProbeTime": null,
      "lastTransitionTime": "2026-01-01T00:00:00Z"},
     {"type": "Ready", "status": "True", "lastProbeTime": null,
      "lastTransitionTime": "2026-01-01T00:01:00Z"},
     {"type": "SlurmNodeStateIdle", "status": "True", "reason": "", "message": "",
      "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:02:00Z"}]}},
  {"metadata": {"name": "worker-1", "namespace": "$NS", "resourceVersion": "101",
                "labels": {"app.kubernetes.io/instance": "slinky-slurm-worker-slinky"}},
   "spec": {"hostname": "slinky-1"},
   "status": {"conditions": [{"type": "Ready", "status": "True"},
                             {"type": "SlurmNodeStateIdle", "status": "True"}]}},
  {"metadata": {"name": "login-0", "namespace": "$NS", "resourceVersion": "102",
                "labels": {"app.kubernetes.io/instance": "slinky-slurm-login-slinky"}},
   "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
]}
EOF
printf 'token-one\n' >"$WORK/token"
TOKEN=token-one

"$FAKE" --pods "$WORK/pods.json" --token-file "$WORK/token" --tls-cert "$WORK/pki/server.crt" \
        --tls-key "$WORK/pki/server.key" --port 0 --control-port 0 \
        >"$WORK/fake.out" 2>"$WORK/fake.err" &
fake_pid=$!
if ! wait_until "$HANG" grep -q '^control on ' "$WORK/fake.out"; then
        echo "FAIL: waited ${HANG} s for the fake API server to start: $(cat "$WORK/fake.err")" >&2
        exit 1
fi
API=$(sed -n 's|^listening on \(https://127\.0\.0\.1:[0-9]*\)$|\1|p' "$WORK/fake.out")
CTL=$(sed -n 's|^control on \(http://127\.0\.0\.1:[0-9]*\)$|\1|p' "$WORK/fake.out")
[ -n "$API" ] && [ -n "$CTL" ] && pass || fail "bad start-up lines: $(cat "$WORK/fake.out")"
API_PORT=${API##*:}

# api METHOD PATH [CURL ARGS...]: prints the HTTP status (000: no answer);
# body in $WORK/body, headers in $WORK/headers, curl's exit status in $WORK/rc.
api() {
        local method=$1 path=$2 rc=0
        shift 2
        curl -sS --cacert "$WORK/pki/ca.crt" -X "$method" -H "Authorization: Bearer $TOKEN" \
                -D "$WORK/headers" -o "$WORK/body" -w '%{http_code}' "$@" "$API$path" \
                2>"$WORK/curl.err" || rc=$?
        echo "$rc" >"$WORK/rc"
}
body() { jq -r "$1" "$WORK/body"; }
ctl() { # METHOD PATH [CURL ARGS...]: the control port's answer on stdout
        local method=$1 path=$2
        shift 2
        curl -sS -X "$method" "$@" "$CTL$path"
}
state() { ctl GET /state | jq -r ".$1"; }
smp() { # NAME JSON: strategic merge patch of pods/NAME/status
        api PATCH "$BASE/pods/$1/status" -H 'Content-Type: application/strategic-merge-patch+json' \
                --data-binary "$2"
}
pod_rv() { ctl GET "/pods/$1" | jq -r .metadata.resourceVersion; }
cond_types() { ctl GET "/pods/$1" | jq -c '[.status.conditions[].type]'; }
agent_patch() { # STATUS REASON: the patch the agent sends (agent/model/condition.c)
        printf '{"metadata":{"uid":"%s"},"status":{"conditions":[{"type":"EnrootConfigCurrent",' "$W0_UID"
        printf '"status":"%s","reason":"%s","message":"m-%s",' "$1" "$2" "$2"
        printf '"lastTransitionTime":"2026-02-01T00:00:00Z","lastProbeTime":"2026-02-01T00:00:00Z"}]}}'
}

# --- TLS -----------------------------------------------------------------------
expect_eq "GET with the test CA" 200 "$(api GET "$BASE/pods/worker-0")"
rc=0
curl -sS --cacert "$WORK/other-pki/ca.crt" -H "Authorization: Bearer $TOKEN" -o /dev/null \
        "$API$BASE/pods/worker-0" 2>/dev/null || rc=$?
expect_eq "another CA is refused (curl: peer certificate cannot be authenticated)" 60 "$rc"
code=$(curl -sS --cacert "$WORK/pki/ca.crt" -H "Authorization: Bearer $TOKEN" -o /dev/null \
        -w '%{http_code}' "https://localhost:$API_PORT$BASE/pods/worker-0" 2>/dev/null || true)
expect_eq "the certificate is valid for localhost too" 200 "$code"

# --- authentication --------------------------------------------------------------
code=$(curl -sS --cacert "$WORK/pki/ca.crt" -o "$WORK/body" -w '%{http_code}' \
        "$API$BASE/pods/worker-0")
expect_eq "no token" 401 "$code"
expect_eq "401 is a Status" "Status Failure Unauthorized 401" \
        "$(body '[.kind, .status, .reason, .code] | join(" ")')"
TOKEN=wrong
expect_eq "wrong token" 401 "$(api GET "$BASE/pods/worker-0")"
code=$(curl -sS --cacert "$WORK/pki/ca.crt" -H 'Authorization: Basic dG9rZW4tb25lCg==' \
        -o /dev/null -w '%{http_code}' "$API$BASE/pods/worker-0")
expect_eq "not a bearer token" 401 "$code"
printf 'token-two' >"$WORK/token.new" && mv "$WORK/token.new" "$WORK/token" # as kubelet rotates it
TOKEN=token-one
expect_eq "the old token after rotation" 401 "$(api GET "$BASE/pods/worker-0")"
TOKEN=token-two
expect_eq "the rotated token (no trailing newline)" 200 "$(api GET "$BASE/pods/worker-0")"

# --- GET ---------------------------------------------------------------------------
expect_eq "GET pod" "Pod v1 worker-0 $W0_UID 100 slinky-0" \
        "$(body '[.kind, .apiVersion, .metadata.name, .metadata.uid, .metadata.resourceVersion,
                  .spec.hostname] | join(" ")')"
expect_eq "GET pods/NAME/status" 200 "$(api GET "$BASE/pods/worker-0/status")"
expect_eq "missing pod" 404 "$(api GET "$BASE/pods/nope")"
expect_eq "missing pod's Status" 'NotFound pods "nope" not found 404' \
        "$(body '[.reason, .message, .code] | join(" ")')"
expect_eq "another namespace" 403 "$(api GET /api/v1/namespaces/kube-system/pods/worker-0)"
expect_eq "another namespace's reason" Forbidden "$(body .reason)"
expect_eq "unknown path" 404 "$(api GET /api/v1/nodes)"
expect_eq "PUT pods/NAME/status (the agent may only patch)" 403 \
        "$(api PUT "$BASE/pods/worker-0/status" -H 'Content-Type: application/json' -d '{}')"
expect_eq "PATCH pods/NAME (not status)" 403 \
        "$(api PATCH "$BASE/pods/worker-0" -H 'Content-Type: application/merge-patch+json' -d '{}')"
expect_eq "403 names the RBAC rule" 'cannot patch resource "pods" in API group ""' \
        "$(body .message | grep -o 'cannot patch resource "pods" in API group ""')"

# --- list ------------------------------------------------------------------------------
list_names() { api GET "$BASE/pods" -G --data-urlencode "$1" >/dev/null && body '[.items[].metadata.name] | join(",")'; }
expect_eq "labelSelector =" worker-0,worker-1 \
        "$(list_names 'labelSelector=app.kubernetes.io/instance=slinky-slurm-worker-slinky')"
expect_eq "labelSelector ==, two terms" login-0 \
        "$(list_names 'labelSelector=app.kubernetes.io/instance==slinky-slurm-login-slinky,!nope')"
expect_eq "labelSelector !=" login-0 \
        "$(list_names 'labelSelector=app.kubernetes.io/instance!=slinky-slurm-worker-slinky')"
expect_eq "fieldSelector metadata.name" worker-1 "$(list_names 'fieldSelector=metadata.name=worker-1')"
expect_eq "list kind and resourceVersion" "PodList 102" \
        "$(body '[.kind, .metadata.resourceVersion] | join(" ")')"
# set-based terms, as kubectl passes `-l 'k in (a,b)'` through
expect_eq "labelSelector in (...)" worker-0,worker-1,login-0 \
        "$(list_names 'labelSelector=app.kubernetes.io/instance in (slinky-slurm-worker-slinky, slinky-slurm-login-slinky)')"
expect_eq "labelSelector notin (...), with another term" login-0 \
        "$(list_names 'labelSelector=app.kubernetes.io/instance notin (slinky-slurm-worker-slinky),app.kubernetes.io/instance')"
expect_eq "notin matches pods without the label" worker-0,worker-1,login-0 \
        "$(list_names 'labelSelector=nope notin (x)')"
expect_eq "in needs the label" "" "$(list_names 'labelSelector=nope in (x)')"
expect_eq "malformed set" 400 "$(api GET "$BASE/pods" -G --data-urlencode 'labelSelector=a in (b,)')"
expect_eq "unclosed set" 400 "$(api GET "$BASE/pods" -G --data-urlencode 'labelSelector=a in (b')"
expect_eq "set-based field selector" 400 "$(api GET "$BASE/pods" -G --data-urlencode 'fieldSelector=metadata.name in (a)')"
# what kubectl asks before anything else: discovery, and content types
expect_eq "discovery /api" "APIVersions v1" "$(api GET /api >/dev/null; body '.kind + " " + .versions[0]')"
expect_eq "discovery /api/v1 pods" "pods pod true Pod" \
        "$(api GET /api/v1 >/dev/null; body '.resources[] | select(.name == "pods") | [.name, .singularName, .namespaced, .kind] | map(tostring) | join(" ")')"
expect_eq "discovery /apis" "APIGroupList events.k8s.io/v1" \
        "$(api GET /apis >/dev/null; body '.kind + " " + .groups[0].preferredVersion.groupVersion')"
expect_eq "discovery needs the token" 401 "$(TOKEN=nope api GET /api/v1)"
expect_eq "aggregated discovery or plain JSON: plain" "APIVersions" \
        "$(api GET /api -H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json' >/dev/null; body .kind)"
expect_eq "Table or plain JSON: plain" "PodList" \
        "$(api GET "$BASE/pods" -H 'Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json' >/dev/null; body .kind)"
expect_eq "Table only: 406" "406NotAcceptable" \
        "$(api GET "$BASE/pods" -H 'Accept: application/json;as=Table;v=v1;g=meta.k8s.io' | tr '\n' ' '; body .reason)"
expect_eq "protobuf only: 406" 406 "$(api GET "$BASE/pods/worker-0" -H 'Accept: application/vnd.kubernetes.protobuf')"
expect_eq "*/*: JSON" 200 "$(api GET "$BASE/pods/worker-0" -H 'Accept: */*')"
expect_eq "unsupported field" 400 "$(api GET "$BASE/pods" -G --data-urlencode 'fieldSelector=spec.nodeName=n1')"
expect_eq "bad watch flag" 400 "$(api GET "$BASE/pods?watch=maybe")"

# --- strategic merge patch: conditions merge by type ------------------------------------
ready_before=$(ctl GET /pods/worker-0 | jq -cS '.status.conditions[] | select(.type == "Ready")')
rv0=$(pod_rv worker-0)
expect_eq "SMP adds the agent's condition" 200 "$(smp worker-0 "$(agent_patch False Drifted)")"
expect_eq "answer is the patched pod" "worker-0 False" \
        "$(body '.metadata.name + " " + (.status.conditions[] | select(.type == "EnrootConfigCurrent") | .status)')"
expect_eq "other conditions survive" '["PodScheduled","Ready","SlurmNodeStateIdle","EnrootConfigCurrent"]' \
        "$(cond_types worker-0)"
expect_eq "kubelet's Ready untouched" "$ready_before" \
        "$(ctl GET /pods/worker-0 | jq -cS '.status.conditions[] | select(.type == "Ready")')"
expect_eq "phase untouched" Running "$(ctl GET /pods/worker-0 | jq -r .status.phase)"
rv1=$(pod_rv worker-0)
[ "$rv1" -gt "$rv0" ] && pass || fail "resourceVersion $rv0 -> $rv1 after a patch"
expect_eq "one counter for all objects, as etcd's revision" "$(state resourceVersion)" "$rv1"
# fields merge: a patch without message keeps the stored one
smp worker-0 '{"status":{"conditions":[{"type":"EnrootConfigCurrent","status":"True","reason":"Current"}]}}' >/dev/null
expect_eq "fields of one condition merge" "True Current m-Drifted" \
        "$(ctl GET /pods/worker-0 | jq -r '.status.conditions[] | select(.type == "EnrootConfigCurrent") | [.status, .reason, .message] | join(" ")')"
rv2=$(pod_rv worker-0)
expect_eq "no-op patch answers 200" 200 \
        "$(smp worker-0 '{"status":{"conditions":[{"type":"EnrootConfigCurrent","status":"True"}]}}')"
expect_eq "no-op patch keeps the resourceVersion (etcd skips equal writes)" "$rv2" "$(pod_rv worker-0)"
expect_eq "kubelet-style \$setElementOrder is accepted" 200 \
        "$(smp worker-0 '{"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"conditions":[{"type":"Ready","status":"True"}]}}')"
expect_eq "\$patch: delete removes one condition" 200 \
        "$(smp worker-0 '{"status":{"conditions":[{"type":"EnrootConfigCurrent","$patch":"delete"}]}}')"
expect_eq "... and only it" '["PodScheduled","Ready","SlurmNodeStateIdle"]' "$(cond_types worker-0)"
smp worker-0 "$(agent_patch True Current)" >/dev/null

# --- JSON merge patch replaces the whole list (what the operator does) --------------------
code=$(api PATCH "$BASE/pods/worker-1/status" -H 'Content-Type: application/merge-patch+json' \
        --data-binary '{"status":{"conditions":[{"type":"SlurmNodeStateDrain","status":"True"}]}}')
expect_eq "merge patch" 200 "$code"
expect_eq "merge patch replaced the list" '["SlurmNodeStateDrain"]' "$(cond_types worker-1)"

# --- UID precondition -------------------------------------------------------------------
rv=$(pod_rv worker-0)
code=$(smp worker-0 '{"metadata":{"uid":"00000000-0000-4000-8000-000000000000"},"status":{"conditions":[{"type":"EnrootConfigCurrent","status":"False"}]}}')
expect_eq "UID mismatch" 409 "$code"
expect_eq "UID mismatch Status" "Conflict 409" "$(body '[.reason, .code] | join(" ")')"
body .message | grep -qF "Precondition failed: UID in precondition: 00000000-0000-4000-8000-000000000000, UID in object meta: $W0_UID" &&
        pass || fail "409 message: $(body .message)"
expect_eq "UID mismatch writes nothing" "$rv" "$(pod_rv worker-0)"

# --- bad patches ---------------------------------------------------------------------------
expect_eq "invalid JSON" 400 "$(smp worker-0 '{"status":')"
expect_eq "invalid JSON reason" BadRequest "$(body .reason)"
expect_eq "not an object" 400 "$(smp worker-0 '[1]')"
expect_eq "condition without type" 422 "$(smp worker-0 '{"status":{"conditions":[{"status":"True"}]}}')"
expect_eq "422 Status" "Invalid status.conditions[0].type" "$(body '[.reason, .details.causes[0].field] | join(" ")')"
expect_eq "merge patch: condition without type" 422 \
        "$(api PATCH "$BASE/pods/worker-1/status" -H 'Content-Type: application/merge-patch+json' \
                --data-binary '{"status":{"conditions":[{"status":"True"}]}}')"
expect_eq "type not a qualified name" 422 "$(smp worker-0 '{"status":{"conditions":[{"type":"-bad-","status":"True"}]}}')"
expect_eq "time not RFC 3339" 422 \
        "$(smp worker-0 '{"status":{"conditions":[{"type":"X","status":"True","lastTransitionTime":"yesterday"}]}}')"
expect_eq "JSON patch" 415 "$(api PATCH "$BASE/pods/worker-0/status" -H 'Content-Type: application/json-patch+json' --data-binary '[]')"
expect_eq "no content type" 415 "$(api PATCH "$BASE/pods/worker-0/status" --data-binary '{}')"
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' >"$WORK/big"
expect_eq "body over 1 MiB" 413 "$(api PATCH "$BASE/pods/worker-0/status" \
        -H 'Content-Type: application/merge-patch+json' --data-binary @"$WORK/big")"
expect_eq "body over 1 MiB, chunked" 413 "$(api PATCH "$BASE/pods/worker-0/status" \
        -H 'Content-Type: application/merge-patch+json' -H 'Transfer-Encoding: chunked' \
        --data-binary @"$WORK/big")"
expect_eq "still serving after bad input" 200 "$(api GET "$BASE/pods/worker-0")"
expect_eq "nothing above changed the pod" "$rv" "$(pod_rv worker-0)"

# --- watch ---------------------------------------------------------------------------------
watch_start() { # OUT QUERY: a streaming watch in the background; sets watch_pid
        curl -sSN --cacert "$WORK/pki/ca.crt" -H "Authorization: Bearer $TOKEN" \
                "$API$BASE/pods?$2" >"$1" 2>"$1.err" &
        watch_pid=$!
}
lines_at_least() { [ "$(wc -l <"$1")" -ge "$2" ]; }
watches_are() { [ "$(state watches)" = "$1" ]; }

rv_before=$(pod_rv worker-0)
watch_start "$WORK/w1" "watch=1&fieldSelector=metadata.name%3Dworker-0&resourceVersion=$rv_before&timeoutSeconds=30"
w1=$watch_pid
wait_until "$HANG" watches_are 1 && pass || fail "waited ${HANG} s for the watch to open"
smp worker-0 "$(agent_patch False Drifted)" >/dev/null
rv_patch=$(pod_rv worker-0)
if wait_until "$HANG" lines_at_least "$WORK/w1" 1; then
        expect_eq "watch: MODIFIED after a patch" "MODIFIED $rv_patch False" \
                "$(sed -n 1p "$WORK/w1" | jq -r '[.type, .object.metadata.resourceVersion, (.object.status.conditions[] | select(.type == "EnrootConfigCurrent") | .status)] | join(" ")')"
else
        fail "watch: no event after a patch: $(cat "$WORK/w1" "$WORK/w1.err")"
fi
# a change to another pod is not this watch's business
smp worker-1 '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}' >/dev/null
ctl POST /pods/worker-0/rewrite-conditions \
        -d '[{"type":"PodScheduled","status":"True"},{"type":"Ready","status":"True"},{"type":"SlurmNodeStateIdle","status":"True"}]' >/dev/null
rv_rewrite=$(pod_rv worker-0)
if wait_until "$HANG" lines_at_least "$WORK/w1" 2; then
        expect_eq "watch: MODIFIED after the operator's rewrite, agent's condition gone" \
                "MODIFIED $rv_rewrite PodScheduled,Ready,SlurmNodeStateIdle" \
                "$(sed -n 2p "$WORK/w1" | jq -r '[.type, .object.metadata.resourceVersion, (.object.status.conditions | map(.type) | join(","))] | join(" ")')"
else
        fail "watch: no event after the rewrite: $(cat "$WORK/w1")"
fi
expect_eq "rewrite dropped the agent's condition" '["PodScheduled","Ready","SlurmNodeStateIdle"]' "$(cond_types worker-0)"
ctl POST /close-watches >/dev/null
wait_until "$HANG" eval '! kill -0 $w1 2>/dev/null' && pass || fail "waited ${HANG} s for close-watches to end the stream"
wait "$w1" 2>/dev/null || true
expect_eq "the stream held exactly the two worker-0 events" 2 "$(wc -l <"$WORK/w1")"

# history: from the resourceVersion before the patch, both changes come at once;
# a bookmark, then the end, at timeoutSeconds: the server ends the stream
# (curl exits 0, not at its own -m), and not before the second is out (a
# lower bound on the monotonic clock)
start=$(awk '{ print int($1 * 1000) }' /proc/uptime)
rc=0
curl -sSN -m "$HANG" --cacert "$WORK/pki/ca.crt" -H "Authorization: Bearer $TOKEN" \
        "$API$BASE/pods?watch=true&fieldSelector=metadata.name%3Dworker-0&resourceVersion=$rv_before&allowWatchBookmarks=true&timeoutSeconds=1" \
        >"$WORK/w2" 2>&1 || rc=$?
elapsed_ms=$(($(awk '{ print int($1 * 1000) }' /proc/uptime) - start))
expect_eq "watch from an older resourceVersion replays, then bookmarks" \
        "MODIFIED $rv_patch,MODIFIED $rv_rewrite,BOOKMARK $rv_rewrite" \
        "$(jq -r '.type + " " + .object.metadata.resourceVersion' "$WORK/w2" | paste -sd,)"
expect_eq "timeoutSeconds=1: the server ends the watch (curl's exit status; 28: waited ${HANG} s)" 0 "$rc"
[ "$elapsed_ms" -ge 900 ] && pass || fail "timeoutSeconds=1 ended the watch after $elapsed_ms ms"

# no resourceVersion: the current state as ADDED
watch_start "$WORK/w3" "watch=1&labelSelector=app.kubernetes.io%2Finstance%3Dslinky-slurm-worker-slinky&timeoutSeconds=30"
w3=$watch_pid
if wait_until "$HANG" lines_at_least "$WORK/w3" 2; then
        expect_eq "watch without resourceVersion: ADDED per matching pod" "ADDED worker-0,ADDED worker-1" \
                "$(jq -r '.type + " " + .object.metadata.name' "$WORK/w3" | paste -sd,)"
else
        fail "watch without resourceVersion: $(cat "$WORK/w3")"
fi

# a replacement pod: same name, new UID
ctl GET /pods/worker-1 | jq -c '.metadata.uid = "5d6c1f3e-2b9a-4c1d-8e7f-0a1b2c3d4e5f" | del(.metadata.resourceVersion)' >"$WORK/replacement"
expect_eq "control: add a replacement pod" 5d6c1f3e-2b9a-4c1d-8e7f-0a1b2c3d4e5f \
        "$(ctl POST /pods --data-binary @"$WORK/replacement" | jq -r .metadata.uid)"
if wait_until "$HANG" lines_at_least "$WORK/w3" 4; then
        expect_eq "watch: the replacement is DELETED then ADDED" \
                "DELETED worker-1,ADDED worker-1 5d6c1f3e-2b9a-4c1d-8e7f-0a1b2c3d4e5f" \
                "$(sed -n 3,4p "$WORK/w3" | jq -r '.type + " " + .object.metadata.name + (if .type == "ADDED" then " " + .object.metadata.uid else "" end)' | paste -sd,)"
else
        fail "watch: no events for the replacement: $(cat "$WORK/w3")"
fi
w1_old_uid=$(sed -n 3p "$WORK/w3" | jq -r .object.metadata.uid)
expect_eq "a stale agent's patch to the replacement" 409 \
        "$(smp worker-1 "{\"metadata\":{\"uid\":\"$w1_old_uid\"},\"status\":{\"conditions\":[{\"type\":\"EnrootConfigCurrent\",\"status\":\"True\"}]}}")"
expect_eq "DELETE pod" 200 "$(api DELETE "$BASE/pods/worker-1")"
if wait_until "$HANG" lines_at_least "$WORK/w3" 5; then
        expect_eq "watch: DELETED" "DELETED worker-1" "$(sed -n 5p "$WORK/w3" | jq -r '.type + " " + .object.metadata.name')"
else
        fail "watch: no DELETED: $(cat "$WORK/w3")"
fi
expect_eq "deleted pod is gone" 404 "$(api GET "$BASE/pods/worker-1")"
ctl POST /pods --data-binary @"$WORK/replacement" >/dev/null # back for later checks

# a client that leaves: its parked watch is noticed and freed
kill "$w3" 2>/dev/null
wait "$w3" 2>/dev/null || true
wait_until "$HANG" watches_are 0 && pass || fail "waited ${HANG} s for a watch whose client left to be freed: $(ctl GET /state)"

# too old: 200, one ERROR event with a 410 Status, end
curl -sSN -m "$HANG" --cacert "$WORK/pki/ca.crt" -H "Authorization: Bearer $TOKEN" \
        "$API$BASE/pods?watch=1&fieldSelector=metadata.name%3Dworker-0&resourceVersion=1" >"$WORK/w4" 2>&1 || true
expect_eq "watch from resourceVersion 1: 410 Expired" "ERROR 410 Expired 1" \
        "$(jq -r '[.type, (.object.code | tostring), .object.reason] | join(" ")' "$WORK/w4") $(wc -l <"$WORK/w4")"
jq -r .object.message "$WORK/w4" | grep -q '^too old resource version: 1 (' && pass ||
        fail "410 message: $(cat "$WORK/w4")"
ctl POST /compact >/dev/null
curl -sSN -m "$HANG" --cacert "$WORK/pki/ca.crt" -H "Authorization: Bearer $TOKEN" \
        "$API$BASE/pods?watch=1&fieldSelector=metadata.name%3Dworker-0&resourceVersion=$rv_before" >"$WORK/w5" 2>&1 || true
expect_eq "after compaction an older resourceVersion is gone" "ERROR 410" \
        "$(jq -r '[.type, (.object.code | tostring)] | join(" ")' "$WORK/w5")"

# newer than the server: a get or list is answered 504 at once (the real
# server's cache waited 3 s for it); a watch is accepted and sends only what
# comes after it, as the real server's cacheWatcher does
rv_now=$(state resourceVersion)
future=$((rv_now + 2))
expect_eq "GET from a resourceVersion newer than the server's" 504 \
        "$(api GET "$BASE/pods/worker-0?resourceVersion=$future")"
expect_eq "... the real server's Status" "Timeout 504 ResourceVersionTooLarge Too large resource version 1" \
        "$(body '[.reason, (.code | tostring), .details.causes[0].reason, .details.causes[0].message,
                  (.details.retryAfterSeconds | tostring)] | join(" ")')"
expect_eq "... and message" "Timeout: Too large resource version: $future, current: $rv_now" "$(body .message)"
grep -qi '^Retry-After: 1' "$WORK/headers" && pass || fail "504 without Retry-After: $(cat "$WORK/headers")"
expect_eq "list from a newer resourceVersion" 504 "$(api GET "$BASE/pods?resourceVersion=$future")"
expect_eq "list from the current resourceVersion" 200 "$(api GET "$BASE/pods?resourceVersion=$rv_now")"
watch_start "$WORK/w7" "watch=1&fieldSelector=metadata.name%3Dworker-0&resourceVersion=$future&allowWatchBookmarks=true&timeoutSeconds=30"
w7=$watch_pid
wait_until "$HANG" watches_are 1 && pass || fail "waited ${HANG} s for a watch from a newer resourceVersion to be accepted: $(cat "$WORK/w7")"
smp worker-0 "$(agent_patch True Current)" >/dev/null  # rv_now + 1
ctl POST /bookmark >/dev/null                           # at rv_now + 1: not after the start
smp worker-0 "$(agent_patch False Drifted)" >/dev/null # rv_now + 2: the start itself
smp worker-0 "$(agent_patch True Current)" >/dev/null  # rv_now + 3: sent
ctl POST /bookmark >/dev/null                           # at rv_now + 3: sent
# the server ends the stream after the last bookmark: all it sent is there
ctl POST /close-watches >/dev/null
wait_until "$HANG" eval '! kill -0 $w7 2>/dev/null' || { fail "waited ${HANG} s for close-watches to end the stream"; kill "$w7"; }
wait "$w7" 2>/dev/null || true
expect_eq "a watch from a newer resourceVersion skips up to it" \
        "MODIFIED $((rv_now + 3)),BOOKMARK $((rv_now + 3))" \
        "$(jq -r '.type + " " + .object.metadata.resourceVersion' "$WORK/w7" | paste -sd,)"

# --- injected faults --------------------------------------------------------------------
STATUS_PATH=$BASE/pods/worker-0/status
for code in 401 403 404 409 422 429 500 503; do
        extra=
        [ "$code" = 429 ] && extra=', "retry_after": 2'
        ctl POST /faults -d "{\"match\": {\"method\": \"PATCH\", \"path_prefix\": \"$STATUS_PATH\"}, \"status\": $code$extra}" >/dev/null
        expect_eq "fault $code" "$code" "$(smp worker-0 "$(agent_patch True Current)")"
        expect_eq "fault $code answers a Status" "Status Failure $code" \
                "$(body '[.kind, .status, (.code | tostring)] | join(" ")')"
        expect_eq "fault $code is used once" 200 "$(smp worker-0 "$(agent_patch True Current)")"
done
ctl POST /faults -d "{\"match\": {\"method\": \"PATCH\", \"path_prefix\": \"$STATUS_PATH\"}, \"status\": 429, \"retry_after\": 2}" >/dev/null
smp worker-0 "$(agent_patch True Current)" >/dev/null
expect_eq "429 carries Retry-After" 2 "$(tr -d '\r' <"$WORK/headers" | sed -n 's/^[Rr]etry-[Aa]fter: //p')"
expect_eq "429 Status" "TooManyRequests 2" "$(body '[.reason, (.details.retryAfterSeconds | tostring)] | join(" ")')"
ctl POST /faults -d "{\"match\": {\"method\": \"PATCH\", \"path_prefix\": \"$STATUS_PATH\"}, \"status\": 403}" >/dev/null
smp worker-0 "$(agent_patch True Current)" >/dev/null
body .message | grep -qF 'cannot patch resource "pods/status" in API group "" in the namespace "slurm"' &&
        pass || fail "403 message: $(body .message)"
ctl POST /faults -d "[{\"match\": {\"method\": \"PATCH\"}, \"status\": 500, \"count\": 2}]" >/dev/null
expect_eq "a PATCH fault leaves GET alone" 200 "$(api GET "$BASE/pods/worker-0")"
expect_eq "count 2: first" 500 "$(smp worker-0 "$(agent_patch True Current)")"
expect_eq "count 2: second" 500 "$(smp worker-0 "$(agent_patch True Current)")"
expect_eq "count 2: then served" 200 "$(smp worker-0 "$(agent_patch True Current)")"
expect_eq "no fault left" 0 "$(ctl GET /faults | jq '.faults | length')"
expect_eq "a watch-only fault" 200 "$(ctl POST /faults -o /dev/null -w '%{http_code}' \
        -d '{"match": {"watch": true}, "status": 503, "message": "etcd is away"}')"
expect_eq "... leaves list alone" 200 "$(api GET "$BASE/pods")"
expect_eq "... hits the watch" 503 "$(api GET "$BASE/pods?watch=1")"
expect_eq "... with its message" "etcd is away" "$(body .message)"
expect_eq "fault with an unknown key" 400 "$(ctl POST /faults -o /dev/null -w '%{http_code}' -d '{"status": 500, "cuont": 2}')"
expect_eq "fault that does nothing" 400 "$(ctl POST /faults -o /dev/null -w '%{http_code}' -d '{"count": 2}')"
expect_eq "fault status not an error" 400 "$(ctl POST /faults -o /dev/null -w '%{http_code}' -d '{"status": 200}')"

# a slow answer does not hold the others: the fast one is answered while the
# slow one is still parked, in that order (the delay only has to outlast one
# request)
ctl POST /faults -d "{\"match\": {\"method\": \"GET\", \"path\": \"$BASE/pods/worker-0\"}, \"delay_ms\": 3000}" >/dev/null
curl -sS -m $((3 + HANG)) --cacert "$WORK/pki/ca.crt" -H "Authorization: Bearer $TOKEN" -o /dev/null \
        -w '%{http_code} %{time_total}' "$API$BASE/pods/worker-0" >"$WORK/slow" 2>&1 &
slow=$!
wait_until "$HANG" eval '[ "$(state suspended)" = 1 ]' && pass || fail "waited ${HANG} s for the slow request to be parked"
fast=$(curl -sS -m "$HANG" --cacert "$WORK/pki/ca.crt" -H "Authorization: Bearer $TOKEN" -o /dev/null \
        -w '%{http_code}' "$API$BASE/pods/login-0")
expect_eq "served while another is slow" 200 "$fast"
expect_eq "the slow request is still parked after the fast one" 1 "$(state suspended)"
kill -0 "$slow" 2>/dev/null && pass || fail "the slow request ended before the fast one"
wait "$slow" || true
read -r slow_code slow_time <"$WORK/slow" || true # no newline at the end
expect_eq "the slow request is answered" 200 "$slow_code"
awk -v t="$slow_time" 'BEGIN { exit !(t >= 2.9) }' && pass || fail "delay_ms 3000 took $slow_time s"
ctl POST /faults -d "{\"match\": {\"method\": \"PATCH\"}, \"delay_ms\": 300, \"status\": 500}" >/dev/null
start=$(date +%s%N)
expect_eq "delay then an error" 500 "$(smp worker-0 "$(agent_patch True Current)")"
[ $((($(date +%s%N) - start) / 1000000)) -ge 290 ] && pass || fail "delay_ms 300 with status 500 came early"

# a dropped connection
ctl POST /faults -d "{\"match\": {\"path\": \"$BASE/pods/worker-0\"}, \"drop_connection\": true}" >/dev/null
expect_eq "dropped connection: no HTTP answer" 000 "$(api GET "$BASE/pods/worker-0")"
[ "$(cat "$WORK/rc")" -ne 0 ] && pass || fail "curl succeeded on a dropped connection"
expect_eq "served again after the drop" 200 "$(api GET "$BASE/pods/worker-0")"

# --- the request log ------------------------------------------------------------------
ctl POST /reset-requests >/dev/null
api GET "$BASE/pods/worker-0" >/dev/null
api GET "$BASE/pods/login-0" >/dev/null
smp worker-0 "$(agent_patch False Drifted)" >/dev/null
smp worker-0 "$(agent_patch False Drifted)" >/dev/null
TOKEN=token-one api GET "$BASE/pods/worker-0" >/dev/null
ctl POST /faults -d '{"match": {"method": "GET"}, "status": 500}' >/dev/null
api GET "$BASE/pods/worker-0" >/dev/null
ctl GET /requests >"$WORK/log"
expect_eq "log: every API request, none of the control port's" 6 "$(jq length "$WORK/log")"
expect_eq "log: PATCH count and content type" "2 application/strategic-merge-patch+json" \
        "$(jq -r '[.[] | select(.method == "PATCH")] | "\(length) \(.[0].content_type)"' "$WORK/log")"
expect_eq "log: statuses in order" "200,200,200,200,401,500" "$(jq -r '[.[].status] | join(",")' "$WORK/log")"
expect_eq "log: fault flag" "false,false,false,false,false,true" "$(jq -r '[.[].fault] | join(",")' "$WORK/log")"
expect_eq "log: the patch body" "$W0_UID" "$(jq -r '[.[] | select(.method == "PATCH")][0].body.metadata.uid' "$WORK/log")"
expect_eq "log: sequence numbers run on across resets" "true 1 1 1 1 1" \
        "$(jq -r '"\(.[0].seq > 6) " + ([range(1; length) as $i | .[$i].seq - .[$i - 1].seq] | map(tostring) | join(" "))' "$WORK/log")"
jq -e 'all(.[]; (.time | type) == "number" and .time > 1e9)' "$WORK/log" >/dev/null && pass ||
        fail "log: times are not epoch seconds"

# --- events ------------------------------------------------------------------------------
event() { # NAME [INVOLVED_NS]
        printf '{"apiVersion":"v1","kind":"Event","metadata":{"name":"%s","namespace":"%s"},' "$1" "$NS"
        printf '"involvedObject":{"apiVersion":"v1","kind":"Pod","name":"worker-0","namespace":"%s","uid":"%s"},' "${2:-$NS}" "$W0_UID"
        printf '"reason":"EnrootConfigDrifted","message":"enroot.conf drifted","type":"Warning",'
        printf '"source":{"component":"aicr-enroot-agent"},"count":1}'
}
expect_eq "POST event" 201 "$(api POST "$BASE/events" -H 'Content-Type: application/json' --data-binary "$(event worker-0.1)")"
expect_eq "stored event" "worker-0.1 EnrootConfigDrifted Warning" \
        "$(ctl GET /events | jq -r '.[0] | [.metadata.name, .reason, .type] | join(" ")')"
expect_eq "same name again" 409 "$(api POST "$BASE/events" -H 'Content-Type: application/json' --data-binary "$(event worker-0.1)")"
expect_eq "same name again: reason" AlreadyExists "$(body .reason)"
expect_eq "involvedObject in another namespace" 422 \
        "$(api POST "$BASE/events" -H 'Content-Type: application/json' --data-binary "$(event worker-0.2 other)")"
expect_eq "event: invalid JSON" 400 "$(api POST "$BASE/events" -H 'Content-Type: application/json' --data-binary '{')"
# the create handler's checks: the body's kind and group version, its namespace
post_event() { api POST "$BASE/events" -H 'Content-Type: application/json' --data-binary "$1"; }
expect_eq "event: a Pod posted as an Event" "400 Pod in version \"v1\" cannot be handled as a Event" \
        "$(post_event "$(event worker-0.3 | jq -c '.kind = "Pod"')") $(body .message | sed 's/: no kind.*//')"
expect_eq "event: events.k8s.io/v1 posted to core/v1" "400 the API version in the data (events.k8s.io/v1) does not match the expected API version (v1)" \
        "$(post_event "$(event worker-0.4 | jq -c '.apiVersion = "events.k8s.io/v1"')") $(body .message)"
expect_eq "event: another namespace in the body" "400 the namespace of the provided object does not match the namespace sent on the request" \
        "$(post_event "$(event worker-0.5 | jq -c '.metadata.namespace = "other"')") $(body .message)"
expect_eq "event: no involvedObject namespace" "422 Event \"worker-0.6\" is invalid: involvedObject.namespace: Invalid value: \"\": does not match event.namespace" \
        "$(post_event "$(event worker-0.6 | jq -c 'del(.involvedObject.namespace)')") $(body .message)"
# with eventTime, the newer Event's fields are required (legacyValidateEvent)
expect_eq "event: eventTime without reportingComponent" "422 Event \"worker-0.7\" is invalid: source: Required value" \
        "$(post_event "$(event worker-0.7 | jq -c '.eventTime = "2026-12-06T10:00:00.000000Z"')") $(body .message)"
expect_eq "event: eventTime with all its fields" 201 \
        "$(post_event "$(event worker-0.8 | jq -c '.eventTime = "2026-12-06T10:00:00.000000Z" | .reportingComponent = "c" |
                .reportingInstance = "i" | .action = "Notify"')")"
# kind and apiVersion may be left out: the path says them; stored with both
expect_eq "event: no kind or apiVersion" "201 Event v1" \
        "$(post_event "$(event worker-0.9 | jq -c 'del(.kind, .apiVersion)')") $(body '.kind + " " + (.apiVersion // "v1")')"
expect_eq "events stored" "worker-0.1 worker-0.8 worker-0.9" "$(ctl GET /events | jq -r '[.[].metadata.name] | join(" ")')"

# --- admission policies: cluster-scoped, read-only, 404 until the test creates them -----
ADM=/apis/admissionregistration.k8s.io/v1
VAP=aicr-enroot-agent-condition-writers
expect_eq "policy: missing" 404 "$(api GET "$ADM/validatingadmissionpolicies/$VAP")"
expect_eq "policy: the real server's 404" \
        "Status Failure NotFound 404 validatingadmissionpolicies.admissionregistration.k8s.io \"$VAP\" not found $VAP admissionregistration.k8s.io validatingadmissionpolicies" \
        "$(body '[.kind, .status, .reason, .code, .message, .details.name, .details.group, .details.kind] | join(" ")')"
expect_eq "binding: missing" 404 "$(api GET "$ADM/validatingadmissionpolicybindings/$VAP")"
expect_eq "binding: the real server's 404" "validatingadmissionpolicybindings.admissionregistration.k8s.io \"$VAP\" not found" "$(body .message)"
policy='{"metadata": {"name": "'$VAP'"}, "spec": {"failurePolicy": "Fail",
          "validations": [{"expression": "true"}]}}'
expect_eq "control: create a policy" 201 "$(ctl POST /validatingadmissionpolicies -o /dev/null -w '%{http_code}' -d "$policy")"
expect_eq "policy: found" 200 "$(api GET "$ADM/validatingadmissionpolicies/$VAP")"
expect_eq "policy: kind and apiVersion first, as the real server writes them" \
        "kind apiVersion metadata spec" "$(body 'keys_unsorted | join(" ")')"
expect_eq "policy: what the server sets" "ValidatingAdmissionPolicy admissionregistration.k8s.io/v1 1 true true true" \
        "$(body '[.kind, .apiVersion, .metadata.generation, (.metadata.uid | length == 36),
                  (.metadata.creationTimestamp | test("^[0-9-]{10}T[0-9:]{8}Z$")), (.metadata.resourceVersion | test("^[0-9]+$"))] | map(tostring) | join(" ")')"
expect_eq "policy: cluster-scoped, no namespace" null "$(body .metadata.namespace)"
expect_eq "policy: list" "ValidatingAdmissionPolicyList $VAP null" \
        "$(api GET "$ADM/validatingadmissionpolicies" >/dev/null; body '[.kind, .items[0].metadata.name, (.items[0].kind | tostring)] | join(" ")')"
expect_eq "policy: read-only" 405 "$(api DELETE "$ADM/validatingadmissionpolicies/$VAP")"
expect_eq "policy: needs the token" 401 "$(TOKEN=wrong api GET "$ADM/validatingadmissionpolicies/$VAP")"
expect_eq "policy: an unknown resource of the group" 404 "$(api GET "$ADM/mutatingadmissionpolicies/$VAP")"
binding() { # ACTIONS [CREATED]
        printf '{"metadata": {"name": "%s"%s}, "spec": {"policyName": "%s", "validationActions": %s}}' \
                "$VAP" "${2:+, \"creationTimestamp\": \"$2\"}" "$VAP" "$1"
}
expect_eq "control: a binding without validationActions" 422 \
        "$(ctl POST /validatingadmissionpolicybindings -o /dev/null -w '%{http_code}' -d "$(binding '[]')")"
expect_eq "control: a binding with an unknown action" 422 \
        "$(ctl POST /validatingadmissionpolicybindings -o /dev/null -w '%{http_code}' -d "$(binding '["Block"]')")"
expect_eq "control: a binding with a duplicate action" 422 \
        "$(ctl POST /validatingadmissionpolicybindings -o /dev/null -w '%{http_code}' -d "$(binding '["Deny","Deny"]')")"
expect_eq "control: a namespaced binding" 422 \
        "$(ctl POST /validatingadmissionpolicybindings -o /dev/null -w '%{http_code}' \
                -d '{"metadata": {"name": "x", "namespace": "slurm"}, "spec": {"policyName": "x", "validationActions": ["Deny"]}}')"
expect_eq "control: a policy posted as a binding" 422 \
        "$(ctl POST /validatingadmissionpolicybindings -o /dev/null -w '%{http_code}' \
                -d '{"kind": "ValidatingAdmissionPolicy", "metadata": {"name": "x"}, "spec": {"policyName": "x", "validationActions": ["Deny"]}}')"
expect_eq "policy: no binding made by refused requests" 404 "$(api GET "$ADM/validatingadmissionpolicybindings/$VAP")"
expect_eq "control: create a binding, older" 201 \
        "$(ctl POST /validatingadmissionpolicybindings -o /dev/null -w '%{http_code}' -d "$(binding '["Deny","Audit"]' 2026-01-01T00:00:00Z)")"
expect_eq "binding: found, with the creationTimestamp given" \
        "ValidatingAdmissionPolicyBinding 2026-01-01T00:00:00Z $VAP Deny,Audit" \
        "$(api GET "$ADM/validatingadmissionpolicybindings/$VAP" >/dev/null
           body '[.kind, .metadata.creationTimestamp, .spec.policyName, (.spec.validationActions | join(","))] | join(" ")')"
expect_eq "control: delete the binding" 200 "$(ctl DELETE "/validatingadmissionpolicybindings/$VAP" -o /dev/null -w '%{http_code}')"
expect_eq "binding: gone" 404 "$(api GET "$ADM/validatingadmissionpolicybindings/$VAP")"
expect_eq "control: delete a missing binding" 404 "$(ctl DELETE "/validatingadmissionpolicybindings/$VAP" -o /dev/null -w '%{http_code}')"

# --- control port hygiene ------------------------------------------------------------------
expect_eq "control: invalid JSON" 400 "$(ctl POST /faults -o /dev/null -w '%{http_code}' -d '{')"
expect_eq "control: unknown endpoint" 404 "$(ctl GET /nope -o /dev/null -w '%{http_code}')"
expect_eq "control: wrong method" 405 "$(ctl PUT /faults -o /dev/null -w '%{http_code}')"
expect_eq "control: rewrite of a missing pod" 404 "$(ctl POST /pods/nope/rewrite-conditions -o /dev/null -w '%{http_code}' -d '[]')"
# plain HTTP on the TLS port, and a connection that says nothing
curl -sS -m 3 -o /dev/null "http://127.0.0.1:$API_PORT/" 2>/dev/null || true
(exec 3<>"/dev/tcp/127.0.0.1/$API_PORT" && printf 'garbage\r\n\r\n' >&3) 2>/dev/null || true
expect_eq "still serving after garbage" 200 "$(api GET "$BASE/pods/login-0")"

# --- RBAC: --rbac FILE enforces the rules for the token's --user -----------------------------
# A second server with the agent's Role from container/kubernetes/rbac.yaml,
# a third with the rollout's documented access: what each may do passes,
# the rest gets the real server's 403, worded by its authorizer.
RBAC_FAKE_PID=
rbac_fake() { # ARGS...: a server on the same pods and token; sets RAPI
        [ -z "$RBAC_FAKE_PID" ] || { kill "$RBAC_FAKE_PID"; wait "$RBAC_FAKE_PID" 2>/dev/null || true; }
        # emptied before the job starts, as start_agent does: the job's own
        # redirection comes later, and until then the wait below would find
        # the port of the server just stopped
        : >"$WORK/rfake.out"
        "$FAKE" --pods "$WORK/pods.json" --token-file "$WORK/token" --tls-cert "$WORK/pki/server.crt" \
                --tls-key "$WORK/pki/server.key" --port 0 --control-port 0 "$@" \
                >"$WORK/rfake.out" 2>"$WORK/rfake.err" &
        RBAC_FAKE_PID=$!
        wait_until "$HANG" grep -q '^control on ' "$WORK/rfake.out" ||
                fail "waited ${HANG} s for the fake with $* to start: $(cat "$WORK/rfake.err")"
        RAPI=$(sed -n 's|^listening on ||p' "$WORK/rfake.out")
}
rapi() { API=$RAPI api "$@"; }
forbidden() { # LABEL WANT-MESSAGE: the last answer was the real server's 403
        expect_eq "$1" "403 Failure Forbidden $2" \
                "$(head -c 3 "$WORK/status") $(body '[.status, .reason, .message] | join(" ")')"
}
rcall() { rapi "$@" >"$WORK/status"; }
AGENT_USER='User "system:serviceaccount:slurm:aicr-enroot-agent"'
rbac_fake --rbac "$TOP_SRCDIR/container/kubernetes/rbac.yaml"
expect_eq "agent: get its pod" 200 "$(rapi GET "$BASE/pods/worker-0")"
expect_eq "agent: watch its pod" 200 \
        "$(rapi GET "$BASE/pods?watch=1&fieldSelector=metadata.name%3Dworker-0&timeoutSeconds=1")"
expect_eq "agent: patch pods/status" 200 "$(API=$RAPI smp worker-0 "$(agent_patch True Current)")"
expect_eq "agent: create a core Event" 201 "$(rapi POST "$BASE/events" -H 'Content-Type: application/json' \
        -d '{"metadata": {"generateName": "worker-0."}, "involvedObject": {"kind": "Pod", "namespace": "slurm", "name": "worker-0"}, "reason": "R", "type": "Normal"}')"
expect_eq "agent: discovery" 200 "$(rapi GET /api/v1)"
rcall DELETE "$BASE/pods/worker-0"
forbidden "agent: delete a pod" "pods \"worker-0\" is forbidden: $AGENT_USER cannot delete resource \"pods\" in API group \"\" in the namespace \"slurm\""
expect_eq "... details" '{"name":"worker-0","kind":"pods"} 403' "$(body '(.details | tojson) + " " + (.code | tostring)')"
expect_eq "... and the pod is still there" 200 "$(rapi GET "$BASE/pods/worker-0")"
rcall GET "$BASE/pods"
forbidden "agent: list pods" "pods is forbidden: $AGENT_USER cannot list resource \"pods\" in API group \"\" in the namespace \"slurm\""
rcall PUT "$BASE/pods/worker-0/status" -H 'Content-Type: application/json' -d '{}'
forbidden "agent: update pods/status" "pods \"worker-0\" is forbidden: $AGENT_USER cannot update resource \"pods/status\" in API group \"\" in the namespace \"slurm\""
rcall GET /api/v1/namespaces/kube-system/pods/worker-0
forbidden "agent: another namespace" "pods \"worker-0\" is forbidden: $AGENT_USER cannot get resource \"pods\" in API group \"\" in the namespace \"kube-system\""
rcall POST /apis/events.k8s.io/v1/namespaces/slurm/events -H 'Content-Type: application/json' -d '{}'
forbidden "agent: events.k8s.io (its Role grants core events)" "events.events.k8s.io is forbidden: $AGENT_USER cannot create resource \"events\" in API group \"events.k8s.io\" in the namespace \"slurm\""
rcall GET /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/p
forbidden "agent: a cluster-scoped resource" "validatingadmissionpolicies.admissionregistration.k8s.io \"p\" is forbidden: $AGENT_USER cannot get resource \"validatingadmissionpolicies\" in API group \"admissionregistration.k8s.io\" at the cluster scope"
rcall GET /metrics
forbidden "agent: a non-resource path" "forbidden: $AGENT_USER cannot get path \"/metrics\""
# the rollout's documented access (tests/integration/rollout-rbac.yaml)
rbac_fake --rbac "$TOP_SRCDIR/tests/integration/rollout-rbac.yaml" \
        --user system:serviceaccount:slurm:aicr-enroot-rollout
expect_eq "rollout: list pods" 200 "$(rapi GET "$BASE/pods")"
expect_eq "rollout: get a policy (allowed, not there)" 404 \
        "$(rapi GET /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/p)"
rcall PATCH "$STATUS_PATH" -H 'Content-Type: application/strategic-merge-patch+json' -d '{}'
forbidden "rollout: patch pods/status" "pods \"worker-0\" is forbidden: User \"system:serviceaccount:slurm:aicr-enroot-rollout\" cannot patch resource \"pods/status\" in API group \"\" in the namespace \"slurm\""
expect_eq "rollout: delete a pod" 200 "$(rapi DELETE "$BASE/pods/login-0")"
# the enroot ConfigMap: get on that one name only; absent, the real 404 Status
rcall GET "$BASE/configmaps/slinky-slurm-enroot-config"
expect_eq "rollout: get the enroot ConfigMap (allowed, not there)" \
        '404 {"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","message":"configmaps \"slinky-slurm-enroot-config\" not found","code":404}' \
        "$(head -c 3 "$WORK/status") $(jq -c '{kind, apiVersion, status, reason, message, code}' "$WORK/body")"
rcall GET "$BASE/configmaps/other"
forbidden "rollout: get another ConfigMap" "configmaps \"other\" is forbidden: User \"system:serviceaccount:slurm:aicr-enroot-rollout\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"slurm\""
rcall GET "$BASE/configmaps"
forbidden "rollout: list ConfigMaps" "configmaps is forbidden: User \"system:serviceaccount:slurm:aicr-enroot-rollout\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"slurm\""
expect_eq "rollout: create a core Event (the login notice)" 201 "$(rapi POST "$BASE/events" -H 'Content-Type: application/json' \
        -d '{"metadata": {"name": "login-0.1"}, "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": "slurm", "name": "login-0"}, "reason": "EnrootConfigRollout", "type": "Normal"}')"
rcall GET "$BASE/events"
forbidden "rollout: list events" "events is forbidden: User \"system:serviceaccount:slurm:aicr-enroot-rollout\" cannot list resource \"events\" in API group \"\" in the namespace \"slurm\""
# a binding to a Role that does not exist grants nothing, and says so
sed '/^  kind: Role$/{n;s/name: aicr-enroot-rollout$/name: aicr-enroot-rollout-typo/}' \
        "$TOP_SRCDIR/tests/integration/rollout-rbac.yaml" >"$WORK/typo.yaml"
rbac_fake --rbac "$WORK/typo.yaml" --user system:serviceaccount:slurm:aicr-enroot-rollout
rcall GET "$BASE/pods"
expect_eq "a binding to a missing Role: the authorizer's reason" \
        'pods is forbidden: User "system:serviceaccount:slurm:aicr-enroot-rollout" cannot list resource "pods" in API group "" in the namespace "slurm": RBAC: role.rbac.authorization.k8s.io "aicr-enroot-rollout-typo" not found' \
        "$(body .message)"
# files outside the YAML subset are refused with the line, not misread
printf 'rules:\n\t- verbs: [get]\n' >"$WORK/bad.yaml"
rc=0
"$FAKE" --pods "$WORK/pods.json" --token-file "$WORK/token" --tls-cert "$WORK/pki/server.crt" \
        --tls-key "$WORK/pki/server.key" --rbac "$WORK/bad.yaml" >/dev/null 2>"$WORK/bad.err" || rc=$?
expect_eq "a tab in the indentation: exit 2 with the line" "2 fake-apiserver: --rbac $WORK/bad.yaml: line 2: a tab in the indentation" \
        "$rc $(cat "$WORK/bad.err")"
kill "$RBAC_FAKE_PID" && wait "$RBAC_FAKE_PID" 2>/dev/null || true
# --max-connections (the fleet benchmark's) takes 1 to 65536, nothing else
for bad in 0 65537 ten ""; do
        rc=0
        "$FAKE" --pods "$WORK/pods.json" --token-file "$WORK/token" --tls-cert "$WORK/pki/server.crt" \
                --tls-key "$WORK/pki/server.key" --max-connections "$bad" >/dev/null 2>"$WORK/bad.err" || rc=$?
        expect_eq "--max-connections \"$bad\": exit 2 naming it" \
                "2 fake-apiserver: --max-connections \"$bad\": a number from 1 to 65536" "$rc $(cat "$WORK/bad.err")"
done

# --- stop ------------------------------------------------------------------------------------
# SIGTERM with a watch open and a slow request parked: exit 0, promptly
watch_start "$WORK/w6" "watch=1&fieldSelector=metadata.name%3Dworker-0&timeoutSeconds=60"
w6=$watch_pid
ctl POST /faults -d '{"match": {"method": "GET", "watch": false}, "delay_ms": 60000}' >/dev/null
curl -sS -m 90 --cacert "$WORK/pki/ca.crt" -H "Authorization: Bearer $TOKEN" -o /dev/null \
        "$API$BASE/pods/worker-0" 2>/dev/null &
parked=$!
wait_until "$HANG" eval '[ "$(state suspended)" = 2 ]' && pass || fail "waited ${HANG} s for the watch and the slow request to be parked: $(ctl GET /state)"
kill -0 "$fake_pid" 2>/dev/null && pass || fail "the fake API server died: $(cat "$WORK/fake.err")"
# Promptly: before the parked requests would end by themselves (the watch's
# timeoutSeconds and the delay are 60 s, the clients' limits 90 s), which
# the bound of the wait, ${HANG} s, stays well under.
exited() { [ ! -e "/proc/$1" ] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
kill -TERM "$fake_pid"
wait_until "$HANG" exited "$fake_pid" && pass ||
        { fail "waited ${HANG} s for the fake API server to exit after SIGTERM with requests parked"; kill -KILL "$fake_pid"; }
rc=0
wait "$fake_pid" || rc=$?
fake_pid=
expect_eq "SIGTERM: exit status" 0 "$rc"
wait_until "$HANG" eval '! kill -0 $w6 2>/dev/null' && pass || fail "the watch outlived the server (waited ${HANG} s)"
wait "$w6" "$parked" 2>/dev/null || true
[ ! -s "$WORK/fake.err" ] && pass || fail "the fake API server complained: $(head -c 600 "$WORK/fake.err")"

finish
