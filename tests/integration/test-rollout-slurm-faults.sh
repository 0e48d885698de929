#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `aicr-enroot-agent rollout` when Slurm's commands misbehave, against a real
# Slurm cluster (tests/tools/slurm-cluster.sh) and the fake API server, through
# wrappers on the rollout's PATH in front of the real scontrol, sinfo and
# squeue: scontrol show node failing (nothing to decide on), scontrol update
# failing for the drain (no pod deleted, the node untouched), squeue hanging
# past the command timeout (killed, nothing deleted, the node held; abort
# returns it). For each: the exit status, the message naming the command and
# Slurm's error, what was deleted, the nodes' states.
. "$(dirname "$0")/lib.sh"

: "${TOP_SRCDIR:?run through make check}"
. "$(dirname "$0")/rollout-lib.sh"
rollout_cluster_start
ARRIVALS=$WORK/arrivals
POD_TIMEOUT=20     # a regression that deletes fails in seconds
SLURM_BIN=$WORK/bin # the wrappers below, on the rollout's PATH only

# --- Slurm commands that fail or hang -------------------------------------------
# $WORK/bin holds scontrol, sinfo and squeue in front of the real ones, on the
# rollout's PATH only. slurm_fault NAME fail|hang [WORDS]: NAME's next runs
# whose arguments contain WORDS fail (exit 1, Slurm's message) or hang (the
# pid of the sleep is appended to $WORK/hung); slurm_fault NAME: none.
mkdir -p "$WORK/bin" "$WORK/slurm-faults"
for cmd in scontrol sinfo squeue; do
        real=$(command -v "$cmd")
        cat >"$WORK/bin/$cmd" <<EOF
#!/bin/bash
if [ -f '$WORK/slurm-faults/$cmd' ]; then
        read -r what words <'$WORK/slurm-faults/$cmd'
        case " \$* " in
        *"\$words"*)
                case \$what in
                fail) echo "$cmd: error: Unable to contact slurm controller (connect failure)" >&2; exit 1 ;;
                hang) echo \$\$ >>'$WORK/hung'; exec sleep 600 ;;
                esac ;;
        esac
fi
exec '$real' "\$@"
EOF
        chmod +x "$WORK/bin/$cmd"
done
slurm_fault() {
        if [ $# -ge 2 ]; then echo "$2 ${3:-}" >"$WORK/slurm-faults/$1"; else rm -f "$WORK/slurm-faults/$1"; fi
}

pod_uid() { ctl GET "/pods/$1" | jq -r .metadata.uid; }
OLD1=00000000-0000-0000-0000-000000000001
LIST=/api/v1/namespaces/$NS/pods
W1=$LIST/slurm-worker-slinky-1

section "setup"
start_pods "0:True 1:False 2:True 3:True" True

# --- Slurm's node list fails: nothing to decide on ---------------------------------
section "scontrol show node fails"
slurm_fault scontrol fail show
slurm_fault sinfo fail
rollout apply
expect_rc 3 "apply when scontrol show node fails"
expect_said err "scontrol show node" "Cannot read the Slurm nodes: '"
expect_said err "scontrol show node" "exited with status 1"
expect_said err "scontrol show node" "Unable to contact slurm controller (connect failure)"
expect_said out "scontrol show node" "failed: could not read the cluster"
[ -z "$(deletes)" ] && pass || fail "deleted without the nodes: $(deletes)"
slurm_fault scontrol
slurm_fault sinfo

# --- the drain fails: no pod is deleted --------------------------------------------
section "scontrol update (the drain) fails"
slurm_fault scontrol fail update
rollout apply
expect_rc 3 "apply when the drain fails"
expect_said err "drain" "Cannot drain the nodes: 'scontrol update NodeName=slinky-1 State=DRAIN 'Reason=aicr-enroot-rollout "
expect_said err "drain" "exited with status 1: scontrol: error: Unable to contact slurm controller (connect failure)"
[ -z "$(deletes)" ] && pass || fail "deleted although the drain failed: $(deletes)"
node_is slinky-1 IDLE && pass || fail "slinky-1 after a failed drain: $(node_state slinky-1) $(node_reason slinky-1)"
slurm_fault scontrol

# --- squeue hangs: the command is killed at its timeout; nothing deleted; abort -----
section "squeue hangs"
: >"$WORK/hung"
slurm_fault squeue hang
start=$SECONDS
rollout apply
expect_rc 3 "apply when squeue hangs"
expect_said err "squeue hangs" "Cannot read the jobs: 'squeue "
expect_said err "squeue hangs" "timed out after 30.0 s"
expect_said out "squeue hangs" "rollout abort"
[ $((SECONDS - start)) -lt 45 ] && pass || fail "a hung squeue held the rollout $((SECONDS - start)) s"
[ -s "$WORK/hung" ] && pass || fail "squeue never ran"
alive=
for p in $(cat "$WORK/hung"); do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
[ -z "$alive" ] && pass || { fail "the hung squeue survives:$alive"; kill $alive 2>/dev/null || true; }
[ -z "$(deletes)" ] && pass || fail "deleted while the jobs were unknown: $(deletes)"
case "$(node_reason slinky-1)" in "aicr-enroot-rollout "*) pass ;; *) fail "slinky-1 not held: $(node_state slinky-1) $(node_reason slinky-1)" ;; esac
slurm_fault squeue
rollout abort
expect_rc 0 "abort after the hang"
wait_for 10 node_is slinky-1 IDLE && pass || fail "abort did not resume slinky-1: $(node_state slinky-1) $(node_reason slinky-1)"
[ -z "$(deletes)" ] && pass || fail "abort deleted: $(deletes)"
reset_nodes

finish
