#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `aicr-enroot-agent rollout` against a real Slurm cluster (four slurmd on
# this machine, tests/tools/slurm-cluster.sh) and the fake API server over
# TLS, with a small controller loop standing in for Slinky's (rollout-lib.sh).
# Covers: nothing stale; some stale and the rest never touched; a node
# drained beforehand for another reason (plan stops, nothing changes;
# --exclude); a running job (apply waits); a replacement that never becomes
# Ready (timeout, status, abort restores only the rollout's nodes); an
# interrupted apply continued by a second one; the rolling strategy; a
# hostNetwork worker, whose Slurm node only Slinky's pod-hostname label names;
# conditions it cannot attribute to the pods' own agents (no admission
# policies, a binding that does not deny, policies it may not read, a
# condition older than the binding): reported unverified, never acted on,
# unless --trust-unprotected-conditions.
. "$(dirname "$0")/lib.sh"

: "${TOP_SRCDIR:?run through make check}"
. "$(dirname "$0")/rollout-lib.sh"
rollout_cluster_start

# --- the pods and the controller (rollout-lib.sh) ------------------------------
# Almost every case replaces pods, which the stand-in controller does with
# replace-node: without it the rollout would "pass" with no node replaced.
if why=$(replace_node_unavailable); then skip no-time-namespace "$why"; fi
# expect_replaced LABEL "NODE ... ": the controller replaced exactly these
# nodes (each left DOWN by the preStop hook, then a new slurmd) since it started.
expect_replaced() {
        [ "$(replaced)" = "$2" ] && pass || fail "$1: nodes replaced: '$(replaced)', expected '$2'"
}


# why POD: the pod's verdict and why, from a --format json report in $WORK/out
why() { jq -r --arg n "$1" '.pods[] | select(.name == $n) | "\(.verdict) \(.action): \(.why)"' "$WORK/out"; }

# --- nothing stale ------------------------------------------------------------------
section "options"
expect_status 2 "$AGENT" rollout --strategy fast
grep -q -- '--strategy: "fast" is not window or rolling' "$WORK/err" && pass || fail "strategy error: $(cat "$WORK/err")"
expect_status 2 "$AGENT" rollout --rollout-id yesterday
grep -q -- '--rollout-id: "yesterday" is not a rollout id' "$WORK/err" && pass || fail "id error: $(cat "$WORK/err")"
expect_status 2 "$AGENT" rollout undo
grep -q '"undo" is not plan, apply, status or abort' "$WORK/err" && pass || fail "action error: $(cat "$WORK/err")"
expect_status 2 "$AGENT" rollout plan --kube-api http://10.0.0.1:8001
grep -q 'neither https:// nor http:// to this machine' "$WORK/err" && pass || fail "remote http: $(cat "$WORK/err")"
expect_status 0 "$AGENT" rollout --help
grep -q 'Usage: aicr-enroot-agent rollout' "$WORK/out" && pass || fail "--help"

section "nothing stale"
start_pods "0:True 1:True 2:True 3:True" True
rollout plan
expect_rc 0 "plan, nothing stale"
grep -q 'nothing to do' "$WORK/out" && pass || fail "plan says: $(cat "$WORK/out")"
rollout apply
expect_rc 0 "apply, nothing stale"
[ -z "$(deletes)" ] && pass || fail "pods deleted with nothing stale: $(deletes)"
wait_for 10 all_idle && pass || fail "nodes touched: $(sinfo -N)"

# --- conditions the rollout cannot attribute to the pods' own agents -----------------
section "no admission policies: every condition unverified, nothing changed"
NO_POLICIES=1 start_pods "0:True 1:False 2:False 3:True" True
rollout plan --format json
expect_rc 1 "plan without the admission policies"
[ "$(jq -r '[.pods[].verdict] | unique | join(" ")' "$WORK/out")" = unverified ] && pass ||
        fail "verdicts without the policies: $(jq -c '[.pods[] | [.name, .verdict, .action]]' "$WORK/out")"
case "$(why slurm-worker-slinky-1)" in
"unverified skip (unverified): unverified: ValidatingAdmissionPolicy aicr-enroot-agent-own-pod-status does not exist; the condition says ConfigDrifted") pass ;;
*) fail "why slinky-1 is unverified: $(why slurm-worker-slinky-1)" ;;
esac
jq -e '.conditions_protected == false' "$WORK/out" >/dev/null && pass || fail "conditions_protected: $(jq .conditions_protected "$WORK/out")"
grep -q 'unverified: no condition is believed: .*Apply container/kubernetes/validatingadmissionpolicy.yaml' "$WORK/err" &&
        pass || fail "no hint at the policy: $(cat "$WORK/err")"
[ "$(ctl GET /requests | jq -r '[.[] | select(.path | startswith("/apis/admissionregistration")) | .path] | first')" = \
        /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/aicr-enroot-agent-own-pod-status ] &&
        pass || fail "the policy was not asked for: $(ctl GET /requests | jq -c '[.[].path]')"
rollout apply
expect_rc 1 "apply without the admission policies"
grep -q 'unverified: nothing was changed' "$WORK/out" && pass || fail "apply says: $(cat "$WORK/out")"
[ -z "$(deletes)" ] && pass || fail "pods deleted without the policies: $(deletes)"
all_idle && pass || fail "nodes drained without the policies: $(sinfo -N -o '%N %T %E')"
# the opt-out: the conditions are believed as they are
start_controller
rollout apply --trust-unprotected-conditions
expect_rc 0 "apply --trust-unprotected-conditions"
[ "$(deletes)" = "slurm-worker-slinky-1 slurm-worker-slinky-2 " ] && pass || fail "deleted with the opt-out: '$(deletes)'"
expect_replaced "apply with the opt-out" "slinky-1 slinky-2 "
grep -q -- '--trust-unprotected-conditions: every pod.s condition is believed' "$WORK/out" && pass ||
        fail "the opt-out is not said: $(head -3 "$WORK/out")"
wait_for 10 all_idle && pass || fail "not back in service: $(sinfo -N -o '%N %T %E')"
stop_controller
reset_nodes

section "a binding that does not deny; policies the rollout may not read"
start_pods "0:True 1:False 2:True 3:True" True
ctl DELETE /validatingadmissionpolicybindings/aicr-enroot-agent-condition-writers >/dev/null
ctl POST /validatingadmissionpolicybindings \
        '{"metadata": {"name": "aicr-enroot-agent-condition-writers"}, "spec": {"policyName": "aicr-enroot-agent-condition-writers", "validationActions": ["Warn", "Audit"]}}' >/dev/null
rollout apply --format json
expect_rc 1 "apply with a binding that only warns"
case "$(why slurm-worker-slinky-1)" in
*"ValidatingAdmissionPolicyBinding aicr-enroot-agent-condition-writers does not deny"*) pass ;;
*) fail "a warning binding: $(why slurm-worker-slinky-1)" ;;
esac
[ -z "$(deletes)" ] && pass || fail "pods deleted under a warning binding: $(deletes)"
start_pods "0:True 1:False 2:True 3:True" True
ctl POST /faults '{"match": {"path_prefix": "/apis/admissionregistration.k8s.io/"}, "status": 403, "count": 100,
        "message": "validatingadmissionpolicies.admissionregistration.k8s.io \"aicr-enroot-agent-own-pod-status\" is forbidden"}' >/dev/null
rollout plan --format json
expect_rc 1 "plan without get on the policies"
case "$(why slurm-worker-slinky-1)" in
*"GET /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/aicr-enroot-agent-own-pod-status: 403 Forbidden (the rollout needs get on validatingadmissionpolicies and validatingadmissionpolicybindings"*) pass ;;
*) fail "a 403 on the policy: $(why slurm-worker-slinky-1)" ;;
esac
ctl DELETE /faults >/dev/null

section "a condition written before the binding: unverified, the rest goes on"
start_pods "0:True 1:False 2:False 3:True" True
# slinky-1's agent last wrote before the policies were bound (an hour ago)
ctl POST /pods/slurm-worker-slinky-1/rewrite-conditions "$(ctl GET /pods/slurm-worker-slinky-1 |
        jq -c '.status.conditions | map(if .type == "EnrootConfigCurrent" then .lastProbeTime = "2020-01-01T00:00:00Z" else . end)')" >/dev/null
rollout plan --format json
expect_rc 1 "plan with an old condition"
case "$(why slurm-worker-slinky-1)" in
"unverified skip (unverified): unverified: the condition was written at 2020-01-01T00:00:00Z, not after the admission policies were bound ("*"); it says ConfigDrifted") pass ;;
*) fail "an old condition: $(why slurm-worker-slinky-1)" ;;
esac
[ "$(why slurm-worker-slinky-2)" = "stale replace: ConfigDrifted" ] && pass || fail "a fresh condition: $(why slurm-worker-slinky-2)"
jq -e '.conditions_protected == true' "$WORK/out" >/dev/null && pass || fail "conditions_protected: $(jq .conditions_protected "$WORK/out")"
start_controller
rollout apply
expect_rc 3 "apply with an old condition"
grep -q 'incomplete: the unverified pods above were left alone' "$WORK/out" && pass || fail "apply says: $(tail -3 "$WORK/out")"
[ "$(deletes)" = "slurm-worker-slinky-2 " ] && pass || fail "deleted with an old condition: '$(deletes)'"
expect_replaced "apply with an old condition" "slinky-2 "
[ "$(node_state slinky-1)" = IDLE ] && pass || fail "slinky-1 touched: $(node_state slinky-1) $(node_reason slinky-1)"
wait_for 10 all_idle && pass || fail "not back in service: $(sinfo -N -o '%N %T %E')"
stop_controller
reset_nodes

# --- an agent that cannot see what slurmd runs: the pod is replaced ------------------
section "an agent that cannot see what slurmd runs"
start_pods "0:True 1:Unknown 2:True 3:True" True
rollout plan --format json
expect_rc 1 "plan with an unverifiable pod"
[ "$(jq -r '.pods[] | select(.name == "slurm-worker-slinky-1") | "\(.verdict) \(.why) \(.action)"' "$WORK/out")" = \
        "stale WorkloadUnverifiable replace" ] && pass || fail "unverifiable pod: $(jq -c '.pods' "$WORK/out")"
[ "$(jq -r '[.pods[] | select(.action == "replace") | .name] | join(" ")' "$WORK/out")" = slurm-worker-slinky-1 ] &&
        pass || fail "only the unverifiable pod is replaced: $(jq -c '.pods' "$WORK/out")"

# --- a node drained beforehand for another reason: stop, change nothing ---------------
section "a node drained beforehand for another reason: stop, change nothing"
start_pods "0:True 1:False 2:True 3:False" True
scontrol update nodename=slinky-3 state=drain reason="disk check by ops"
rollout plan
expect_rc 1 "plan with a foreign drain"
grep -q 'blocked: node slinky-3 .*disk check by ops' "$WORK/out" && pass || fail "no blocker line: $(cat "$WORK/out")"
rollout apply --format json
expect_rc 1 "apply with a foreign drain"
jq -e '.result | startswith("blocked")' "$WORK/out" >/dev/null && pass || fail "json result: $(cat "$WORK/out")"
[ -z "$(deletes)" ] && pass || fail "deleted pods while blocked: $(deletes)"
[ "$(node_state slinky-1)" = IDLE ] && pass || fail "slinky-1 touched while blocked: $(node_state slinky-1)"
[ "$(node_reason slinky-3)" = "disk check by ops" ] && pass || fail "slinky-3 reason changed: $(node_reason slinky-3)"

# --exclude leaves it alone and goes on with the rest.
start_controller
rollout apply --exclude slinky-3
expect_rc 0 "apply --exclude"
[ "$(deletes)" = "slurm-worker-slinky-1 " ] && pass || fail "deletes with --exclude: '$(deletes)'"
expect_replaced "apply --exclude" "slinky-1 "
[ "$(node_reason slinky-3)" = "disk check by ops" ] && pass || fail "slinky-3 reason: $(node_reason slinky-3)"
wait_for 10 node_is slinky-1 IDLE && pass || fail "slinky-1 not resumed: $(node_state slinky-1)"
stop_controller
scontrol update nodename=slinky-3 state=resume
reset_nodes

# --- some stale, a running job, window: the job ends first; current pods untouched ---
section "some stale, a running job, window: the job ends first; current pods untouched"
start_pods "0:True 1:False 2:False 3:True" False
start_controller
job=$(sbatch --parsable -w slinky-1 -N1 -o /dev/null --wrap 'sleep 3' 2>/dev/null) || job=
wait_for 5 sh -c "squeue -h -j '$job' -t RUNNING | grep -q ." || fail "the test job did not start"
start=$(date +%s)
log_lines=$(wc -l <"$slurm/log/slurmctld.log")
rollout apply --format json
expect_rc 0 "apply with a running job"
[ "$(deletes)" = "slurm-worker-slinky-1 slurm-worker-slinky-2 slurm-login-slinky-a " ] && pass ||
        fail "deleted: '$(deletes)'"
expect_replaced "apply with a running job" "slinky-1 slinky-2 "
first_delete=$(ctl GET /requests | jq '[.[] | select(.method == "DELETE") | .time] | min | floor')
[ "$first_delete" -ge $((start + 2)) ] && pass || fail "a pod was deleted while the job ran ($first_delete vs $start)"
jq -e '[.steps[] | select(.step == "wait-jobs" and .result == "done")] | length == 1' "$WORK/out" >/dev/null &&
        pass || fail "no wait-jobs step: $(jq -c .steps "$WORK/out")"
wait_for 10 all_idle && pass || fail "not every node is back in service: $(sinfo -N -o '%N %T %E')"
# slurmctld logs every reason it sets: none for the current pods' nodes.
tail -n +$((log_lines + 1)) "$slurm/log/slurmctld.log" >"$WORK/ctld.log"
grep -q 'reason set to' "$WORK/ctld.log" && pass || fail "slurmctld logged no reason at all (log format?)"
grep -E 'slinky-[03].*reason set to|reason set to.*slinky-[03]' "$WORK/ctld.log" &&
        fail "a current pod's node got a reason" || pass
[ "$(jq -r .result "$WORK/out")" != null ] && pass || fail "no result"
stop_controller
reset_nodes

# --- a replacement that never becomes Ready: timeout, status, abort -------------------
section "a replacement that never becomes Ready: timeout, status, abort"
start_pods "0:True 1:False 2:False 3:True" True
NEVER_READY=slurm-worker-slinky-1 start_controller
scontrol update nodename=slinky-3 state=drain reason="disk check by ops"
rollout apply --pod-timeout 3 --exclude slinky-3
expect_rc 3 "apply with a replacement that never gets Ready"
grep -q 'Timed out waiting for the replacement of pod slurm-worker-slinky-1: still waiting for the new pod to be Ready\.' "$WORK/out" && pass ||
        fail "timeout message: $(cat "$WORK/out")"
grep -q 'rollout status' "$WORK/out" && pass || fail "no hint at status/abort: $(cat "$WORK/out")"
case " $(replaced)" in *" slinky-1 "*) pass ;; *) fail "the never-Ready pod's node was not replaced: '$(replaced)'" ;; esac
rollout status --exclude slinky-3
expect_rc 1 "status after a timeout"
grep -q 'in progress' "$WORK/out" && pass || fail "status: $(cat "$WORK/out")"
rollout abort --exclude slinky-3
expect_rc 0 "abort"
wait_for 10 node_is slinky-2 IDLE && pass || fail "abort did not resume slinky-2: $(node_state slinky-2)"
case "$(node_state slinky-1)" in IDLE) fail "abort resumed the replaced slinky-1" ;; *) pass ;; esac
[ "$(node_reason slinky-3)" = "disk check by ops" ] && pass || fail "abort touched slinky-3: $(node_reason slinky-3)"
stop_controller
scontrol update nodename=slinky-3 state=resume
reset_nodes

# --- interrupted, then continued by a second apply --------------------------------------
section "interrupted, then continued by a second apply"
start_pods "0:False 1:False 2:False 3:True" True
start_controller
# A short Lease: the killed run holds it until it expires, then the plain
# apply below takes it over.
"$AGENT" rollout apply --kube-api "$API" --serviceaccount-dir "$WORK/sa" --namespace "$NS" \
        --poll-interval 100 --lease-duration 2 >"$WORK/first.out" 2>&1 &
first=$!
wait_for 30 grep -q 'pod slurm-worker-slinky-0 replaced' "$WORK/first.out" || fail "first replacement not seen"
kill -KILL "$first" 2>/dev/null || true
wait "$first" 2>/dev/null || true
sleep 3.2
rollout status
expect_rc 1 "status after an interruption"
grep -q '(in progress)' "$WORK/out" && pass || fail "status does not find the rollout: $(cat "$WORK/out")"
id=$(sed -n 's/^[0-9:]* rollout \([0-9TZ]*\) (in progress).*/\1/p' "$WORK/out")
rollout apply
expect_rc 0 "the second apply"
[ -n "$id" ] && grep -q "^[0-9:]* rollout $id (in progress)" "$WORK/out" && pass ||
        fail "the second apply did not continue '$id': $(head -1 "$WORK/out")"
[ "$(ctl GET /requests | jq '[.[] | select(.method == "DELETE" and (.path | endswith("slinky-0")))] | length')" = 1 ] &&
        pass || fail "slinky-0's pod deleted twice"
expect_replaced "an interrupted apply and the second" "slinky-0 slinky-1 slinky-2 "
wait_for 10 all_idle && pass || fail "not back in service: $(sinfo -N -o '%N %T %E')"
stop_controller
reset_nodes

# --- all stale: every worker, then the login pod, then every node back -------------
# Worker 3 runs with hostNetwork: its Slurm node is named by Slinky's label
# only (spec.hostname is the pod's name, which Slurm does not know).
section "all stale, one worker on hostNetwork"
HOSTNET=3
start_pods "0:False 1:False 2:False 3:False" False
rollout plan --format json
expect_rc 1 "plan, all stale"
[ "$(jq -r '.pods[] | select(.name == "slurm-worker-slinky-3") | .node + " " + .action' "$WORK/out")" = "slinky-3 replace" ] &&
        pass || fail "the hostNetwork worker's node: $(jq -c '.pods' "$WORK/out")"
start_controller
rollout apply --format json
expect_rc 0 "apply, all stale"
[ "$(deletes)" = "slurm-worker-slinky-0 slurm-worker-slinky-1 slurm-worker-slinky-2 slurm-worker-slinky-3 slurm-login-slinky-a " ] &&
        pass || fail "all stale, deleted: '$(deletes)'"
expect_replaced "apply, all stale" "slinky-0 slinky-1 slinky-2 slinky-3 "
jq -e '[.pods[] | select(.verdict != "current")] | length == 0' "$WORK/out" >/dev/null && pass ||
        fail "not every pod current after apply: $(jq -c '[.pods[] | [.name, .verdict]]' "$WORK/out")"
# the login pod goes only after every worker is back
[ "$(ctl GET /requests | jq -r '[.[] | select(.method == "DELETE")] | last | .path | sub(".*/"; "")')" = slurm-login-slinky-a ] &&
        pass || fail "the login pod was not replaced last"
wait_for 10 all_idle && pass || fail "not back in service: $(sinfo -N -o '%N %T %E')"
stop_controller
HOSTNET=
reset_nodes

# --- rolling: one node at a time, the rest in service -----------------------------------
section "rolling: one node at a time, the rest in service"
start_pods "0:False 1:False 2:True 3:True" True
start_controller
rollout apply --strategy rolling
expect_rc 0 "rolling apply"
# slinky-0 is back before slinky-1 is drained.
log=$(grep -n 'slinky-[01]' "$WORK/out" | grep -E 'resume: node|replace: worker' | tr '\n' ' ')
case "$log" in
*"resume: node slinky-0"*"replace: worker pod slurm-worker-slinky-1"*) pass ;;
*) fail "rolling order: $log" ;;
esac
expect_replaced "rolling apply" "slinky-0 slinky-1 "
wait_for 10 all_idle && pass || fail "not back in service: $(sinfo -N -o '%N %T %E')"
stop_controller

finish
