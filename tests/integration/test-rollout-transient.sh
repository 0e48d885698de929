#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `aicr-enroot-agent rollout` and Slurm's transient node states, against a
# real Slurm cluster (tests/tools/slurm-cluster.sh) and the fake API server
# (rollout-lib.sh). Right after a RESUME, slurmctld marks the node
# NOT_RESPONDING until the node answers a ping (`idle*`); a node whose last
# jobs' epilogs still run is COMPLETING. Neither is a reason to stop:
# - plan says which nodes are only settling (text and --format json);
# - an apply started within a second of a RESUME waits for the nodes to
#   settle and replaces what it should;
# - a node DOWN for a reason still blocks at once, also while another node
#   settles, and a node that does not settle blocks after --settle-timeout;
# - an apply on a stale node that is COMPLETING proceeds;
# - the Lease is renewed while a batch waits for its nodes to settle: a
#   second apply meanwhile, after longer than --lease-duration, is refused
#   at once, without waiting for the nodes itself.
# To make "a few seconds" reproducible, a resumed node's slurmd is stopped
# (SIGSTOP) for a few seconds around the RESUME, as a busy node answers late:
# slurmctld's own ping then finds it, once it is continued, well within
# MessageTimeout (10 s). The epilog holds a node COMPLETING for 4 s while
# $WORK/epilog.hold exists.
. "$(dirname "$0")/lib.sh"

: "${TOP_SRCDIR:?run through make check}"
. "$(dirname "$0")/rollout-lib.sh"
cat >"$WORK/epilog.sh" <<EOF
#!/bin/sh
[ -e "$WORK/epilog.hold" ] && sleep 4
exit 0
EOF
chmod 755 "$WORK/epilog.sh"
rollout_cluster_start "Epilog=$WORK/epilog.sh"
# Every apply that proceeds replaces a pod, which the stand-in controller
# does with replace-node.
if why=$(replace_node_unavailable); then skip no-time-namespace "$why"; fi

now_ms() { date +%s%3N; }
# resume_late SECONDS NODE...: each node DOWN, then RESUMEd while its slurmd
# is stopped; the slurmds go on after SECONDS (background job $bg). Fails the
# test when a node is not IDLE+NOT_RESPONDING right after its RESUME.
resume_late() {
        local secs=$1 n pids=()
        shift
        for n in "$@"; do
                scontrol update nodename="$n" state=down reason="test: about to resume"
                pids+=("$(cat "$slurm/run/slurmd-$n.pid")")
        done
        kill -STOP "${pids[@]}"
        for n in "$@"; do
                scontrol update nodename="$n" state=resume
        done
        (
                sleep "$secs"
                kill -CONT "${pids[@]}"
        ) &
        bg=$!
        for n in "$@"; do
                node_is "$n" IDLE+NOT_RESPONDING && pass ||
                        fail "precondition: $n is $(node_state "$n") right after its RESUME, not IDLE+NOT_RESPONDING"
        done
}
# settled: the stopped slurmds are going again, every node is idle, and
# slurmctld's ping round has ended: one still running when the next case
# resumes a node can count that node as answering at once (seen on 22.05,
# "now responding" within 100 ms of a RESUME up to half a second after the
# last one), and the case would see no NOT_RESPONDING at all.
settled() {
        [ -z "${bg:-}" ] || wait "$bg" || true
        bg=
        bash "$CLUSTER" wait-idle "$slurm" 30 >/dev/null 2>&1 || fail "nodes did not come back idle: $(sinfo -N -o '%N %T %E')"
        sleep 2
}
# took LABEL MIN-MS MAX-MS: the last rollout's run time ($t0 to now) lay between.
took() {
        local ms=$(($(now_ms) - t0))
        ((ms >= $2 && ms <= $3)) && pass || fail "$1: took $ms ms, expected $2 to $3"
}

section "plan: a node right after its RESUME is settling, not blocked"
start_pods "0:True 1:False 2:True 3:True" True
resume_late 3 slinky-1 slinky-3
rollout plan --format json
expect_rc 1 "plan right after a RESUME (work to do)"
[ "$(jq -r '.result' "$WORK/out")" = "planned: run \`rollout apply\` to do it" ] && pass ||
        fail "plan right after a RESUME: $(jq -r .result "$WORK/out")"$'\n'"$(cat "$WORK/err")"
[ "$(jq -r '[.nodes[] | select(.claim == "settling") | .name] | join(" ")' "$WORK/out")" = "slinky-1 slinky-3" ] &&
        pass || fail "settling nodes in the json report: $(jq -c '[.nodes[] | [.name, .state, .claim]]' "$WORK/out")"
[ "$(jq -r '[.steps[] | select(.step == "preflight") | "\(.target) \(.result) \(.detail)"] | join(", ")' "$WORK/out")" = \
        "slinky-1 settling IDLE+NOT_RESPONDING, slinky-3 settling IDLE+NOT_RESPONDING" ] && pass ||
        fail "preflight steps: $(jq -c '.steps' "$WORK/out")"
jq -e '.settle_timeout_sec == 120' "$WORK/out" >/dev/null && pass || fail "settle_timeout_sec: $(jq .settle_timeout_sec "$WORK/out")"
expect_said err "plan, settling" "settling: node slinky-1 is IDLE+NOT_RESPONDING, with no reason: Slurm ends that by itself"
expect_said err "plan, settling" "apply reads it again for up to 120 s (--settle-timeout)"
settled

section "apply within a second of a RESUME: waits for the nodes to settle, then replaces"
start_pods "0:True 1:False 2:True 3:True" True
start_controller
resume_late 3 slinky-1 slinky-3
t0=$(now_ms)
rollout apply
expect_rc 0 "apply right after a RESUME"
expect_said out "apply, settling" "settling: 2 node(s) out of service only for a moment (node slinky-1 is IDLE+NOT_RESPONDING, with no reason): reading them again for up to 120 s (--settle-timeout)."
expect_said out "apply, settled" "  settled after "
[ "$(deletes)" = "slurm-worker-slinky-1 " ] && pass || fail "deleted after a RESUME: '$(deletes)'"
expect_replaced() { [ "$(replaced)" = "$2" ] && pass || fail "$1: nodes replaced: '$(replaced)', expected '$2'"; }
expect_replaced "apply after a RESUME" "slinky-1 "
stop_controller
settled

section "a DOWN node blocks at once, also while another node settles"
start_pods "0:True 1:False 2:True 3:True" True
scontrol update nodename=slinky-2 state=down reason="hardware check"
t0=$(now_ms)
rollout apply
expect_rc 1 "apply with a DOWN node"
took "apply with a DOWN node" 0 10000
expect_said out "apply, DOWN" "blocked: node slinky-2 is out of service for a reason that is not this rollout's: DOWN, reason \"hardware check\""
grep -q '^[0-9:]* settling' "$WORK/out" && fail "a DOWN node was waited for: $(cat "$WORK/out")" || pass
[ -z "$(deletes)" ] && pass || fail "deleted with a DOWN node: '$(deletes)'"
node_is slinky-1 IDLE && pass || fail "slinky-1 was touched: $(node_state slinky-1)"
# slinky-3 settles only after 8 s: the DOWN node blocks without waiting for it
resume_late 8 slinky-3
t0=$(now_ms)
rollout apply
expect_rc 1 "apply with a DOWN node and a settling one"
took "apply with a DOWN node and a settling one" 0 6000
expect_said out "apply, DOWN and settling" "blocked: node slinky-2 is out of service for a reason that is not this rollout's"
expect_said out "apply, DOWN and settling" "settling: node slinky-3 is IDLE+NOT_RESPONDING, with no reason"
[ -z "$(deletes)" ] && pass || fail "deleted with a DOWN node: '$(deletes)'"
scontrol update nodename=slinky-2 state=resume
settled

section "a node that does not settle within --settle-timeout blocks"
start_pods "0:True 1:False 2:True 3:True" True
resume_late 8 slinky-3
t0=$(now_ms)
rollout apply --settle-timeout 2
expect_rc 1 "apply, a node that does not settle"
took "apply, a node that does not settle" 2000 6000
expect_said out "apply, not settled" "blocked: node slinky-3 is still IDLE+NOT_RESPONDING after 2 s (--settle-timeout), with no reason: it did not settle."
[ -z "$(deletes)" ] && pass || fail "deleted with an unsettled node: '$(deletes)'"
node_is slinky-1 IDLE && pass || fail "slinky-1 was touched: $(node_state slinky-1)"
settled

section "a stale node that is COMPLETING: the apply proceeds"
start_pods "0:True 1:False 2:True 3:True" True
start_controller
touch "$WORK/epilog.hold"
srun -w slinky-1 -N1 true || fail "srun on slinky-1 failed"
case "$(node_state slinky-1)" in
*COMPLETING*) pass ;;
*) fail "precondition: slinky-1 is $(node_state slinky-1) after its job, not COMPLETING" ;;
esac
rm -f "$WORK/epilog.hold"
rollout apply
expect_rc 0 "apply on a COMPLETING node"
[ "$(deletes)" = "slurm-worker-slinky-1 " ] && pass || fail "deleted with a COMPLETING node: '$(deletes)'"
expect_replaced "apply on a COMPLETING node" "slinky-1 "
stop_controller
settled

section "a batch waiting for its node to settle keeps renewing the Lease"
# rolling: slinky-1 first, then slinky-3, which is resumed late while the
# first batch runs: the second batch holds the Lease (3 s) while it waits
# for slinky-3 to settle, longer than the Lease lasts unrenewed.
start_pods "0:True 1:False 2:True 3:False" True
start_controller
"$AGENT" rollout apply --kube-api "$API" --serviceaccount-dir "$WORK/sa" --namespace "$NS" \
        --poll-interval 100 --jobs-timeout 30 --pod-timeout 60 --strategy rolling \
        --lease-duration 3 >"$WORK/first.out" 2>&1 &
first=$!
wait_for 30 bash -c "scontrol --oneliner show node slinky-1 | grep -q 'Reason=aicr-enroot-rollout'" ||
        fail "the apply did not drain slinky-1: $(cat "$WORK/first.out")"
# (late enough for the first batch's replacement, 10 to 20 s, and the
# checks below)
resume_late 40 slinky-3
wait_for 30 grep -qF "settling: 1 node(s) out of service only for a moment (node slinky-3" "$WORK/first.out" && pass ||
        fail "the second batch did not wait for slinky-3 to settle: $(cat "$WORK/first.out")"
sleep 4
node_is slinky-3 IDLE+NOT_RESPONDING && pass || fail "precondition: slinky-3 settled early: $(node_state slinky-3)"
before=$(sinfo -h -N -o '%N %T %E')
t0=$(now_ms)
rollout apply
expect_rc 1 "a second apply while the first waits for slinky-3"
took "a second apply while the first waits for slinky-3" 0 6000
expect_said out "a second apply while the first settles" "busy: the Lease $NS/aicr-enroot-rollout is held by"
[ "$(sinfo -h -N -o '%N %T %E')" = "$before" ] && pass || fail "the second apply changed Slurm: $(sinfo -N -o '%N %T %E')"
rc=0
wait "$first" || rc=$?
[ "$rc" = 0 ] && pass || fail "the first apply exited $rc: $(cat "$WORK/first.out")"
expect_replaced "the rolling apply that waited for slinky-3" "slinky-1 slinky-3 "
stop_controller
settled

finish
