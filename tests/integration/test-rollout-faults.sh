#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `aicr-enroot-agent rollout` when the API server misbehaves, against a real
# Slurm cluster (tests/tools/slurm-cluster.sh) and the fake API server with
# rollout-lib.sh's controller, as test-rollout.sh runs it: 401, 403 and a
# proxy's 503 page on the pod list, a dropped connection, 500 on the DELETE
# (stops with the node held; a second apply finishes), a DELETE whose UID
# precondition fails because the pod was replaced meanwhile (the replacement
# is waited for, never deleted), graceful deletion (the pod stays visible
# while it terminates: deleted once, waited for), a DELETE answered after the
# rollout's timeout (the pod goes after the rollout stopped; the id it prints
# continues it). For each: the exit status and the message, what was deleted
# (exactly), the nodes' states, and that a later apply recovers.
# test-rollout-slurm-faults.sh does the same for the Slurm commands.
. "$(dirname "$0")/lib.sh"

: "${TOP_SRCDIR:?run through make check}"
. "$(dirname "$0")/rollout-lib.sh"
rollout_cluster_start
ARRIVALS=$WORK/arrivals # every request's arrival, for the retry timing checks
POD_TIMEOUT=20         # a regression that deletes fails in seconds

pod_uid() { ctl GET "/pods/$1" | jq -r .metadata.uid; }
OLD1=00000000-0000-0000-0000-000000000001
LIST=/api/v1/namespaces/$NS/pods
W1=$LIST/slurm-worker-slinky-1

# --- the pod list refused or unanswered: plan fails, says why, asks once -----------
section "401, 403, a proxy's 503 page, a dropped connection on the pod list"
start_pods "0:True 1:False 2:True 3:True" True
for code in 401 403 503 drop; do
        ctl POST /reset-requests >/dev/null
        case $code in
        503) ctl POST /faults "$(jq -nc --arg p "$LIST" '{match: {method: "GET", path: $p}, status: 503,
                content_type: "text/html", body: "<html><body><h1>503 Service Unavailable</h1>\nNo server is available to handle this request.\n</body></html>"}')" >/dev/null ;;
        drop) ctl POST /faults '{"match": {"method": "GET", "path": "'$LIST'"}, "drop_connection": true, "count": 3}' >/dev/null ;;
        *) ctl POST /faults '{"match": {"method": "GET", "path": "'$LIST'"}, "status": '$code'}' >/dev/null ;;
        esac
        rollout plan
        expect_rc 3 "plan with $code on the list"
        expect_said out "$code: result" "failed: could not read the cluster"
        case $code in
        401) expect_said err 401 "$LIST?labelSelector=app.kubernetes.io%2Finstance%3Dslinky-slurm-worker-slinky: 401 Unauthorized: Unauthorized. The API server does not accept the credentials: the token in --serviceaccount-dir, or kubectl proxy's own login" ;;
        403) expect_said err 403 ": 403 Forbidden: pods is forbidden: User \"$ROLLOUT_USER\" cannot list resource \"pods\" in API group \"\" in the namespace \"$NS\". The rollout needs list, get and delete on pods, get, create and update on the Lease aicr-enroot-rollout, and get on the ConfigMap slinky-slurm-enroot-config, in namespace $NS" ;;
        503) expect_said err 503 ": 503 error: not a Kubernetes Status: <html><body><h1>503 Service Unavailable</h1> No server is available to handle this request. </body></html>" ;;
        drop) expect_said err drop ": no answer: " && expect_said err drop "Is the API server reachable from here?" ;;
        esac
        # one try: a command-line program reports, the operator decides
        n=$(ctl GET /requests | jq --arg p "$LIST" '[.[] | select(.path == $p)] | length')
        case $code in drop) [ "$n" -le 2 ] ;; *) [ "$n" = 1 ] ;; esac && pass || fail "$code: $n list requests"
        ctl DELETE /faults >/dev/null
done
[ -z "$(deletes)" ] && pass || fail "deleted: $(deletes)"
all_idle && pass || fail "nodes touched by a failed plan: $(sinfo -N -o '%N %T %E')"

# --- 500 on the DELETE: stop with the node held; the next apply finishes -----------
section "500 on the DELETE"
start_pods "0:True 1:False 2:True 3:True" True
start_controller
ctl POST /faults '{"match": {"method": "DELETE"}, "status": 500}' >/dev/null
rollout apply
expect_rc 3 "apply with 500 on the DELETE"
expect_said err "500" "DELETE $API$W1: 500 InternalError: Internal error occurred: injected fault"
expect_said out "500" "Stopped. The Lease aicr-enroot-rollout keeps this rollout's record: \`rollout status\` shows it, \`rollout apply\` continues it"
[ "$(deletes)" = "slurm-worker-slinky-1 " ] && pass || fail "DELETEs after a 500: '$(deletes)'"
[ "$(pod_uid slurm-worker-slinky-1)" = $OLD1 ] && pass || fail "the pod changed after a 500: $(pod_uid slurm-worker-slinky-1)"
case "$(node_reason slinky-1)" in "aicr-enroot-rollout "*) pass ;; *) fail "slinky-1 not held after a 500: $(node_reason slinky-1)" ;; esac
rollout apply
expect_rc 0 "the apply after a 500"
expect_said out "apply after a 500" "(in progress)"
[ "$(pod_uid slurm-worker-slinky-1)" != $OLD1 ] && pass || fail "not replaced by the second apply"
wait_for 10 all_idle && pass || fail "not back in service: $(sinfo -N -o '%N %T %E')"
stop_controller
reset_nodes

# --- the UID precondition fails: replaced meanwhile; never deleted in its place -----
# The DELETE is held 8 s; meanwhile the pod is replaced (slurmd restarted, a
# new pod of the same name, current), as Slinky would after someone else
# deleted it: the DELETE's precondition then fails with 409.
section "409: the pod was replaced before the DELETE"
start_pods "0:True 1:False 2:True 3:True" True
: >"$WORK/arrivals"
ctl POST /faults '{"match": {"method": "DELETE"}, "delay_ms": 8000}' >/dev/null
RC=0
"$AGENT" rollout apply --kube-api "$API" --serviceaccount-dir "$WORK/sa" --namespace "$NS" \
        --poll-interval 100 --pod-timeout 25 >"$WORK/out" 2>"$WORK/err" &
bg=$!
wait_for 30 grep -q " DELETE $W1 " "$WORK/arrivals" || fail "no DELETE arrived: $(cat "$WORK/out" "$WORK/err")"
bash "$CLUSTER" replace-node "$slurm" slinky-1 >/dev/null 2>&1 || fail "replace-node slinky-1"
NEW1=30000000-0000-0000-0000-000000000001
worker_json 1 $NEW1 True | curl -sf -X POST "$CTL/pods" -H 'Content-Type: application/json' --data-binary @- >/dev/null
wait "$bg" || RC=$?
bg=
expect_rc 0 "apply when the pod was replaced meanwhile"
expect_said out "409" "pod slurm-worker-slinky-1 was replaced meanwhile (the UID precondition failed: Operation cannot be fulfilled on Pod \"slurm-worker-slinky-1\": Precondition failed: UID in precondition: $OLD1, UID in object meta: $NEW1): waiting for the new pod"
[ "$(ctl GET /requests | jq -c '[.[] | select(.method == "DELETE") | [.status, .body.preconditions.uid]]')" = "[[409,\"$OLD1\"]]" ] &&
        pass || fail "DELETEs when replaced meanwhile: $(ctl GET /requests | jq -c '[.[] | select(.method == "DELETE") | [.path, .status, .body]]')"
[ "$(pod_uid slurm-worker-slinky-1)" = $NEW1 ] && pass || fail "the replacement was deleted: $(pod_uid slurm-worker-slinky-1)"
wait_for 10 all_idle && pass || fail "not back in service: $(sinfo -N -o '%N %T %E')"
reset_nodes

# --- graceful deletion: visible while terminating, deleted once, waited for --------
section "graceful deletion"
start_pods "0:True 1:False 2:True 3:True" False
start_controller
ctl POST /faults '{"match": {"method": "DELETE"}, "grace_seconds": 3, "count": 2}' >/dev/null
rollout apply
expect_rc 0 "apply with graceful deletion"
[ "$(deletes)" = "slurm-worker-slinky-1 slurm-login-slinky-a " ] && pass || fail "graceful: deleted '$(deletes)'"
# the worker's old pod was seen terminating (same UID) for the grace period
# before its replacement: the rollout waited, and did not delete it again
ctl GET /requests | jq -e --arg p "$W1" '([.[] | select(.method == "DELETE" and .path == $p) | .time] | first) as $d |
        [.[] | select(.method == "GET" and .path == $p and .time > $d and .time < $d + 2.5)] | length >= 3' >/dev/null &&
        pass || fail "the terminating pod was not waited on: $(ctl GET /requests | jq -c '[.[] | select(.path | endswith("slinky-1")) | [.method, .status, .time]]')"
[ "$(pod_uid slurm-worker-slinky-1)" != $OLD1 ] && pass || fail "graceful: not replaced"
wait_for 10 all_idle && pass || fail "not back in service: $(sinfo -N -o '%N %T %E')"
stop_controller
reset_nodes

# --- no answer to the DELETE: the rollout stops at its timeout; the next continues ---
# The fake answers after 31 s, past the rollout's 30 s: the pod is deleted
# all the same (as a real server may have done), and the next apply finds the
# rollout in progress and the pod replaced.
section "no answer to the DELETE"
start_pods "0:True 1:False 2:True 3:True" True
start_controller
ctl POST /faults '{"match": {"method": "DELETE"}, "delay_ms": 31000}' >/dev/null
rollout apply
expect_rc 3 "apply without an answer to the DELETE"
expect_said err "no answer" "DELETE $API$W1: no answer: "
expect_said err "no answer" "Is the API server reachable from here?"
expect_said out "no answer" "failed"
# The pod went after the rollout stopped: its node carries the preStop hook's
# reason, no node the rollout's; the Lease still finds the rollout, and the
# message sends the operator to the plain commands.
id=$(sed -n 's/^[0-9:]* rollout \([0-9TZ]*\) (window).*/\1/p' "$WORK/out")
expect_said out "no answer" "\`rollout apply\` continues it"
expect_said out "no answer" "reasons starting with \"aicr-enroot-rollout $id\", or the preStop hook's."
new_pod() { uid=$(curl -sf "$CTL/pods/slurm-worker-slinky-1" | jq -r .metadata.uid) && [ "$uid" != $OLD1 ]; }
wait_for 20 new_pod || fail "the late DELETE did not replace the pod"
rollout apply
expect_rc 0 "the apply after no answer"
# the Lease records the rollout: it is found in progress, though no node
# carries its reason
expect_said out "apply after no answer" "rollout $id (in progress) (window)"
expect_said out "apply after no answer" "resume: node slinky-1"
[ "$(deletes)" = "slurm-worker-slinky-1 " ] && pass || fail "DELETEs after no answer: '$(deletes)'"
wait_for 10 all_idle && pass || fail "not back in service: $(sinfo -N -o '%N %T %E')"
stop_controller

finish
