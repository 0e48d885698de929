#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The rollout's Lease (coordination.k8s.io/v1 aicr-enroot-rollout in the
# Slurm namespace): its record and its lock, against the real Slurm cluster
# of tests/tools/slurm-cluster.sh and the fake API server under the
# rollout's documented RBAC (rollout-rbac.yaml).
# Covers: the fake's Leases as strict as the real server's (409 on a second
# create and on a stale update, 404, a new resourceVersion on every write,
# RBAC by name); an apply SIGKILLed right after a pod DELETE, continued by a
# plain apply (no --rollout-id) that waits for the recorded pod's
# replacement and never deletes twice; the same after Slinky's preStop hook
# has overwritten the rollout's only reason (status and apply find it from
# the Lease); two concurrent applies (the second exits 1, nothing changed);
# a dead holder's Lease refused until it expires, then taken over and the
# rollout continued; `--format json` reports the Lease's record.
. "$(dirname "$0")/lib.sh"

: "${TOP_SRCDIR:?run through make check}"
. "$(dirname "$0")/rollout-lib.sh"
rollout_cluster_start
if why=$(replace_node_unavailable); then skip no-time-namespace "$why"; fi

LEASES=/apis/coordination.k8s.io/v1/namespaces/$NS/leases
# api METHOD PATH [BODY]: the API as the rollout's account; prints the body,
# then the HTTP code on a line of its own.
api() {
        curl -s --cacert "$WORK/sa/ca.crt" -H "Authorization: Bearer $(cat "$WORK/sa/token")" \
                -X "$1" "$API$2" ${3:+-H 'Content-Type: application/json' --data-binary "$3"} \
                -w '\n%{http_code}\n'
}
code() { tail -1; }
lease_json() { # HOLDER RV
        jq -nc --arg h "$1" --arg rv "$2" --arg ns "$NS" '
                {apiVersion: "coordination.k8s.io/v1", kind: "Lease",
                 metadata: ({name: "aicr-enroot-rollout", namespace: $ns} +
                            if $rv == "" then {} else {resourceVersion: $rv} end),
                 spec: {holderIdentity: $h, leaseDurationSeconds: 5}}'
}
# record: the rollout's record in the stored Lease (control port).
record() {
        ctl GET /leases | jq -c '.[] | select(.metadata.name == "aicr-enroot-rollout") |
                .metadata.annotations["aicr-enroot-agent/rollout"] | fromjson'
}
holder() { ctl GET /leases | jq -r '.[0].spec.holderIdentity // "none"'; }
deletes_of() { ctl GET /requests | jq --arg p "$1" '[.[] | select(.method == "DELETE" and (.path | endswith("/" + $p)))] | length'; }
rollout_id_of() { sed -n 's/^[0-9:]* rollout \([0-9TZ]*\) .*/\1/p' "$1" | head -1; }
bg_apply() { # OUT ARGS...: an apply in the background, $bg its pid
        local out=$1
        shift
        "$AGENT" rollout apply --kube-api "$API" --serviceaccount-dir "$WORK/sa" --namespace "$NS" \
                --poll-interval 100 --jobs-timeout 60 "$@" >"$out" 2>&1 &
        bg=$!
}
arrived() { grep -q " $1 $2 " "$ARRIVALS"; } # METHOD PATH: the fake saw it

# --- the fake's Leases -------------------------------------------------------------
section "the fake's Leases, as strict as the real server"
start_pods "0:True 1:True 2:True 3:True" True
[ "$(api GET "$LEASES/aicr-enroot-rollout" | code)" = 404 ] && pass || fail "GET of a missing Lease is not 404"
out=$(api POST "$LEASES" "$(lease_json a "")")
[ "$(code <<<"$out")" = 201 ] && pass || fail "create: $out"
rv1=$(head -n -1 <<<"$out" | jq -r .metadata.resourceVersion)
out=$(api POST "$LEASES" "$(lease_json b "")")
[ "$(code <<<"$out")" = 409 ] && [ "$(head -n -1 <<<"$out" | jq -r .reason)" = AlreadyExists ] && pass ||
        fail "a second create: $out"
out=$(api PUT "$LEASES/aicr-enroot-rollout" "$(lease_json b "$rv1")")
[ "$(code <<<"$out")" = 200 ] && pass || fail "update from the current resourceVersion: $out"
rv2=$(head -n -1 <<<"$out" | jq -r .metadata.resourceVersion)
[ "$rv2" -gt "$rv1" ] && pass || fail "the update kept resourceVersion $rv1 ($rv2)"
out=$(api PUT "$LEASES/aicr-enroot-rollout" "$(lease_json c "$rv1")")
[ "$(code <<<"$out")" = 409 ] && [ "$(head -n -1 <<<"$out" | jq -r .reason)" = Conflict ] && pass ||
        fail "an update from a stale resourceVersion: $out"
[ "$(holder)" = b ] && pass || fail "the stale update changed the holder: $(holder)"
[ "$(api PUT "$LEASES/aicr-enroot-rollout" "$(lease_json c "")" | code)" = 422 ] && pass ||
        fail "an update without resourceVersion is not 422"
[ "$(api GET "$LEASES/other" | code)" = 403 ] && pass || fail "the Role allows get of another Lease"
[ "$(api DELETE "$LEASES/aicr-enroot-rollout" | code)" = 403 ] && pass || fail "the Role allows delete of the Lease"
[ "$(api GET "/apis/coordination.k8s.io/v1/namespaces/default/leases/aicr-enroot-rollout" | code)" = 403 ] &&
        pass || fail "the Role reaches another namespace"

# A Lease another live process holds: apply and abort change nothing.
out=$(api GET "$LEASES/aicr-enroot-rollout")
rv=$(head -n -1 <<<"$out" | jq -r .metadata.resourceVersion)
held=$(jq -nc --arg rv "$rv" --arg ns "$NS" --arg now "$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)" '
        {apiVersion: "coordination.k8s.io/v1", kind: "Lease",
         metadata: {name: "aicr-enroot-rollout", namespace: $ns, resourceVersion: $rv,
                    annotations: {"aicr-enroot-agent/rollout":
                      ({id: "20260101T000000Z", state: "running", steps: []} | tojson)}},
         spec: {holderIdentity: "elsewhere_1_1", leaseDurationSeconds: 600,
                acquireTime: $now, renewTime: $now}}')
[ "$(api PUT "$LEASES/aicr-enroot-rollout" "$held" | code)" = 200 ] && pass || fail "cannot plant a held Lease"
ctl POST /reset-requests >/dev/null
rollout apply
expect_rc 1 "apply while another holds the Lease"
expect_said out "apply while another holds the Lease" "is held by elsewhere_1_1"
[ "$(ctl GET /requests | jq '[.[] | select(.method != "GET")] | length')" = 0 ] && pass ||
        fail "apply wrote while another held the Lease: $(ctl GET /requests | jq -c '[.[] | select(.method != "GET") | .method + " " + .path]')"
rollout abort
expect_rc 1 "abort while another holds the Lease"
[ "$(holder)" = elsewhere_1_1 ] && pass || fail "the Lease changed hands: $(holder)"
all_idle && pass || fail "nodes changed: $(sinfo -N -o '%N %T %E')"

# --- SIGKILL right after a pod DELETE, replacement late ----------------------------------
# The controller is off while the first apply runs: it is killed the moment
# the fake has the DELETE, the pod gone and no replacement yet. The plain
# apply after it must find the deleted pod in the Lease and wait for its
# replacement before it resumes the node; nothing is deleted twice.
section "SIGKILL right after a pod DELETE, continued by a plain apply"
ARRIVALS=$WORK/arrivals start_pods "0:False 1:True 2:True 3:True" True
ARRIVALS=$WORK/arrivals
bg_apply "$WORK/first.out" --lease-duration 2
wait_for 30 arrived DELETE "/api/v1/namespaces/$NS/pods/slurm-worker-slinky-0" && pass ||
        fail "the first apply sent no DELETE: $(cat "$WORK/first.out")"
kill -KILL "$bg" 2>/dev/null || true
wait "$bg" 2>/dev/null || true
bg=
id=$(rollout_id_of "$WORK/first.out")
[ "$(record | jq -r --arg id "$id" 'select(.id == $id and .state == "running") |
        [.steps[] | select(.step == "delete" and .pod == "slurm-worker-slinky-0" and
                           .uid == "00000000-0000-0000-0000-000000000000")] | length')" = 1 ] &&
        pass || fail "the Lease does not record the delete before it was sent: $(record)"
sleep 3.2 # the killed run's Lease expires (whole seconds)
rollout status --format json
expect_rc 1 "status after the kill"
[ "$(jq -r .rollout_id "$WORK/out")" = "$id" ] && [ "$(jq -r .in_progress "$WORK/out")" = true ] && pass ||
        fail "status does not find rollout '$id': $(jq -c '{rollout_id, in_progress}' "$WORK/out")"
[ "$(jq -r '.lease.record.steps | map(.step) | join(",")' "$WORK/out")" = drain,delete ] &&
        [ "$(jq -r .lease.owner "$WORK/out")" = expired ] && pass ||
        fail "status --format json: lease $(jq -c .lease "$WORK/out")"
bg_apply "$WORK/second.out"
second=$bg
sleep 3
kill -0 "$second" 2>/dev/null && pass || fail "the continuing apply ended without the replacement: $(cat "$WORK/second.out")"
grep -qF "continue: pod slurm-worker-slinky-0 (uid 00000000-0000-0000-0000-000000000000) was deleted by this rollout; waiting for its replacement" "$WORK/second.out" &&
        pass || fail "the continuing apply did not wait for the recorded pod: $(cat "$WORK/second.out")"
node_is slinky-0 IDLE && fail "slinky-0 resumed before its replacement" || pass
start_controller
rc=0
wait "$second" || rc=$?
bg=
[ "$rc" = 0 ] && pass || fail "the continuing apply exited $rc: $(cat "$WORK/second.out")"
grep -q "^[0-9:]* rollout $id (in progress)" "$WORK/second.out" && pass ||
        fail "the plain apply did not continue '$id': $(head -2 "$WORK/second.out")"
[ "$(deletes_of slurm-worker-slinky-0)" = 1 ] && pass || fail "slurm-worker-slinky-0 deleted $(deletes_of slurm-worker-slinky-0) times"
expect_replaced() { [ "$(replaced)" = "$2" ] && pass || fail "$1: nodes replaced: '$(replaced)', expected '$2'"; }
expect_replaced "after the kill" "slinky-0 "
wait_for 10 all_idle && pass || fail "not back in service: $(sinfo -N -o '%N %T %E')"
[ "$(holder)" = none ] && [ "$(record | jq -r .state)" = "done" ] && pass ||
        fail "the Lease is not released as done: $(holder) $(record)"
[ "$(record | jq -r '[.steps[] | .step] | join(",")')" = drain,delete,ready,resume ] && pass ||
        fail "the record's steps: $(record | jq -c .steps)"
stop_controller
reset_nodes

# --- the preStop hook overwrote the only reason: the Lease finds the rollout -------------
section "the preStop hook overwrote the rollout's only reason"
ARRIVALS=$WORK/arrivals start_pods "0:True 1:False 2:True 3:True" True
start_controller
bg_apply "$WORK/first.out" --lease-duration 2
wait_for 30 arrived DELETE "/api/v1/namespaces/$NS/pods/slurm-worker-slinky-1" || fail "no DELETE: $(cat "$WORK/first.out")"
kill -KILL "$bg" 2>/dev/null || true
wait "$bg" 2>/dev/null || true
bg=
id=$(rollout_id_of "$WORK/first.out")
wait_for 30 grep -qx slinky-1 "$WORK/controller.replaced" || fail "the controller did not replace slinky-1"
[ "$(node_reason slinky-1)" = "slurm-operator: Pod is terminating" ] &&
        ! sinfo -h -N -o '%E' | grep -q 'aicr-enroot-rollout' && pass ||
        fail "a node still carries the rollout's reason: $(sinfo -N -o '%N %T %E')"
sleep 3.2
rollout status
expect_rc 1 "status, the reason overwritten"
grep -q "^[0-9:]* rollout $id (in progress)" "$WORK/out" && pass || fail "status does not find '$id': $(cat "$WORK/out")"
grep -q "not this rollout's" "$WORK/out" && fail "status calls slinky-1 foreign: $(cat "$WORK/out")" || pass
rollout apply
expect_rc 0 "the plain apply, the reason overwritten"
[ "$(deletes_of slurm-worker-slinky-1)" = 1 ] && pass || fail "slurm-worker-slinky-1 deleted $(deletes_of slurm-worker-slinky-1) times"
wait_for 10 all_idle && pass || fail "not back in service: $(sinfo -N -o '%N %T %E')"
stop_controller
reset_nodes

# --- two applies at once --------------------------------------------------------------
# A job holds slinky-2: the first apply drains it and waits, renewing its
# Lease; the second, meanwhile, must exit 1 and change nothing.
section "two concurrent applies"
ARRIVALS=$WORK/arrivals start_pods "0:True 1:True 2:False 3:True" True
start_controller
job=$(sbatch --parsable -w slinky-2 -N1 -o /dev/null --wrap 'sleep 11' 2>/dev/null) || job=
[ -n "$job" ] && wait_for 10 bash -c "squeue -h -j $job -o %T | grep -q RUNNING" || fail "the job did not start"
# A short Lease, waited out: only the first apply's renewals keep it.
bg_apply "$WORK/first.out" --lease-duration 3
first=$bg
wait_for 20 bash -c "scontrol --oneliner show node slinky-2 | grep -q 'Reason=aicr-enroot-rollout'" ||
        fail "the first apply did not drain slinky-2: $(cat "$WORK/first.out")"
sleep 3.5
before=$(sinfo -h -N -o '%N %T %E')
rollout apply
expect_rc 1 "the second apply"
expect_said out "the second apply" "busy: the Lease $NS/aicr-enroot-rollout is held by"
[ "$(sinfo -h -N -o '%N %T %E')" = "$before" ] && pass || fail "the second apply changed Slurm: $(sinfo -N -o '%N %T %E')"
[ "$(deletes_of slurm-worker-slinky-2)" = 0 ] && pass || fail "a pod was deleted while the job ran"
rc=0
wait "$first" || rc=$?
bg=
[ "$rc" = 0 ] && pass || fail "the first apply exited $rc: $(cat "$WORK/first.out")"
[ "$(deletes_of slurm-worker-slinky-2)" = 1 ] && pass || fail "slurm-worker-slinky-2 deleted $(deletes_of slurm-worker-slinky-2) times"
wait_for 10 all_idle && pass || fail "not back in service: $(sinfo -N -o '%N %T %E')"
stop_controller
reset_nodes

# --- a dead holder: refused until its Lease expires, then taken over ------------------------
section "an expired Lease is taken over and the rollout continued"
ARRIVALS=$WORK/arrivals start_pods "0:False 1:True 2:True 3:True" True
start_controller
job=$(sbatch --parsable -w slinky-0 -N1 -o /dev/null --wrap 'sleep 60' 2>/dev/null) || job=
[ -n "$job" ] && wait_for 10 bash -c "squeue -h -j $job -o %T | grep -q RUNNING" || fail "the job did not start"
bg_apply "$WORK/first.out" --lease-duration 3
wait_for 20 bash -c "scontrol --oneliner show node slinky-0 | grep -q 'Reason=aicr-enroot-rollout'" ||
        fail "the first apply did not drain slinky-0: $(cat "$WORK/first.out")"
kill -KILL "$bg" 2>/dev/null || true
wait "$bg" 2>/dev/null || true
bg=
id=$(rollout_id_of "$WORK/first.out")
dead=$(holder)
rollout apply
expect_rc 1 "apply before the dead holder's Lease expires"
expect_said out "apply before expiry" "is held by $dead"
sleep 4.2
scancel "$job"
rollout apply
expect_rc 0 "apply after expiry"
expect_said out "apply after expiry" "lease: taking over from $dead"
grep -q "^[0-9:]* rollout $id (in progress)" "$WORK/out" && pass || fail "the takeover did not continue '$id': $(head -2 "$WORK/out")"
[ "$(record | jq -r '[.steps[] | select(.step == "drain")] | length')" = 1 ] && pass ||
        fail "the takeover started over: $(record | jq -c .steps)"
[ "$(deletes_of slurm-worker-slinky-0)" = 1 ] && pass || fail "slurm-worker-slinky-0 deleted $(deletes_of slurm-worker-slinky-0) times"
wait_for 10 all_idle && pass || fail "not back in service: $(sinfo -N -o '%N %T %E')"
stop_controller

finish
