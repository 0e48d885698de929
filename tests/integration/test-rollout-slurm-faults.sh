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
command -v jq >/dev/null || skip no-jq "jq is not installed (scripts/setup-deps.sh installs it)"
command -v openssl >/dev/null || skip no-openssl "openssl is not installed (scripts/setup-deps.sh installs it)"
FAKE=${FAKE_APISERVER:-$(dirname "$AGENT")/tests/tools/fake-apiserver}
CLUSTER="$TOP_SRCDIR/tests/tools/slurm-cluster.sh"
[ -x "$FAKE" ] || { echo "FAIL: $FAKE is not built" >&2; exit 1; }
export PATH=$PATH:/usr/sbin:/sbin

section() { echo "== $* (at ${SECONDS}s)" >&2; }
NS=slurm
slurm=$WORK/slurm
cleanup() {
        stop_controller
        [ -z "${bg:-}" ] || { kill "$bg" 2>/dev/null; wait "$bg" 2>/dev/null; } || true
        stop_fake
        bash "$CLUSTER" stop "$slurm" >/dev/null 2>&1 || true
        rm -rf "$WORK"
}
trap cleanup EXIT

rc=0
bash "$CLUSTER" start "$slurm" 4 >"$WORK/cluster.env" 2>"$WORK/cluster.err" || rc=$?
[ "$rc" = 77 ] && skip no-slurm-cluster "$(sed -n 's/^slurm-cluster: SKIP: //p' "$WORK/cluster.err")"
[ "$rc" = 0 ] || { cat "$WORK/cluster.err" >&2; echo "FAIL: the Slurm cluster did not start" >&2; exit 1; }
set -a
. "$WORK/cluster.env"
set +a

kube_pki "$WORK/sa" "$NS" rollout-token
. "$(dirname "$0")/rollout-lib.sh"

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

# start_pods "0:False 1:True ..." LOGIN-STATUS: as test-rollout.sh's, with
# every request's arrival in $WORK/arrivals.
start_pods() {
        local spec w
        stop_fake
        {
                echo '{"items": ['
                for spec in $1; do
                        w=${spec%%:*}
                        worker_json "$w" "00000000-0000-0000-0000-00000000000$w" "${spec#*:}"
                        echo ,
                done
                pod_json slurm-login-slinky-a 00000000-0000-0000-0000-0000000000aa login "$2"
                echo ']}'
        } >"$WORK/pods.json"
        start_fake "$WORK/pods.json" --namespace "$NS" --rbac "$ROLLOUT_RBAC" --user "$ROLLOUT_USER" \
                --arrivals "$WORK/arrivals"
        seed_policies || fail "cannot seed the admission policies"
}
rollout() { # ACTION ARGS...: stdout in $WORK/out, stderr in $WORK/err, sets RC
        RC=0
        PATH="$WORK/bin:$PATH" "$AGENT" rollout "$@" --kube-api "$API" --serviceaccount-dir "$WORK/sa" \
                --namespace "$NS" --poll-interval 100 --pod-timeout 20 --jobs-timeout 30 >"$WORK/out" 2>"$WORK/err" || RC=$?
}
expect_rc() { # WANT LABEL
        if [ "$RC" = "$1" ]; then pass; else
                fail "$2: exit $RC, expected $1"$'\n'"$(cat "$WORK/out" "$WORK/err")"
        fi
}
expect_said() { # FILE LABEL FIXED-STRING: the rollout said it
        if grep -qF -- "$3" "$WORK/$1"; then pass; else
                fail "$2: no '$3' in:"$'\n'"$(cat "$WORK/out" "$WORK/err")"
        fi
}
node_field() { scontrol --oneliner show node "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
node_state() { node_field "$1" State; }
node_reason() { scontrol --oneliner show node "$1" | sed -n 's/.* Reason=\(.*\) \[.*/\1/p'; }
node_is() { [ "$(node_state "$1")" = "$2" ]; }
all_idle() { [ "$(sinfo --noheader -N -o '%T' | sort -u | tr '\n' ' ')" = "idle " ]; }
deletes() { ctl GET /requests | jq -r '.[] | select(.method == "DELETE") | .path | sub(".*/"; "")' | tr '\n' ' '; }
pod_uid() { ctl GET "/pods/$1" | jq -r .metadata.uid; }
OLD1=00000000-0000-0000-0000-000000000001
reset_nodes() {
        local n
        for n in slinky-0 slinky-1 slinky-2 slinky-3; do
                node_is "$n" IDLE || scontrol update nodename=$n state=resume >/dev/null 2>&1 || true
        done
        bash "$CLUSTER" wait-idle "$slurm" 30 >/dev/null 2>&1 || { fail "nodes did not come back idle"; sinfo -N >&2; }
}
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
