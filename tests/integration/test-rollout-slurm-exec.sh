#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `aicr-enroot-agent rollout --slurm-exec PREFIX` against a real Slurm cluster
# (tests/tools/slurm-cluster.sh) and the fake API server, with Slurm's
# commands NOT on the rollout's PATH and no SLURM_CONF in its environment:
# only the relay reaches the cluster, as `kubectl exec` reaches the
# controller pod from a workstation. The relay stands in for kubectl: it
# takes kubectl-like words up to `--` (one of them holding a blank, quoted in
# PREFIX), logs the argv it was given, and runs the rest in the cluster's
# environment alone (env -i), which also sets variables that would change what
# sinfo and squeue select and print. Checked: an apply through it replaces the
# drifted worker and brings every node back; every Slurm command went through
# the relay; the drain's reason, with its blanks, reached Slurm as one
# argument; without the prefix the same run cannot reach Slurm; a prefix
# whose program does not exist, a relay that joins its arguments into one
# shell line (as ssh does), and a PREFIX a shell would expand each fail
# clearly with nothing changed; --help documents the option; --verify-image's
# srun goes through the relay as well.
. "$(dirname "$0")/lib.sh"

: "${TOP_SRCDIR:?run through make check}"
. "$(dirname "$0")/rollout-lib.sh"
rollout_cluster_start
POD_TIMEOUT=20
# replace-node: without it the rollout would "pass" with no node replaced.
if why=$(replace_node_unavailable); then skip no-time-namespace "$why"; fi
expect_replaced() { # LABEL "NODE ... "
        [ "$(replaced)" = "$2" ] && pass || fail "$1: nodes replaced: '$(replaced)', expected '$2'"
}

# --- the relays ------------------------------------------------------------------
# $WORK/relay-bin is the rollout's whole PATH: no scontrol, sinfo or squeue.
RELAY_BIN=$WORK/relay-bin
RELAY_LOG=$WORK/relay.log
mkdir -p "$RELAY_BIN"
# kube-relay exec -n slurm 'slurm controller' -c slurmctld -- COMMAND...: the
# words before -- must arrive as the prefix gives them. Each call's argv is
# logged, one argument a line, then a line "--end--". After a drain, the
# node's reason as Slurm holds it is appended to $WORK/drained.
cat >"$RELAY_BIN/kube-relay" <<EOF
#!/bin/bash
want=(exec -n slurm 'slurm controller' -c slurmctld --)
for w in "\${want[@]}"; do
        [ "\$1" = "\$w" ] || { echo "kube-relay: expected '\$w', got '\$1'" >&2; exit 2; }
        shift
done
{ printf '%s\n' "\$@"; echo --end--; } >>'$RELAY_LOG'
/usr/bin/env -i PATH=/usr/bin:/bin SLURM_CONF='$SLURM_CONF' SINFO_PARTITION=nosuch \
        SQUEUE_USERS=nobody SQUEUE_FORMAT=%i SLURM_TIME_FORMAT=standard "\$@"
rc=\$?
case " \$* " in
*" State=DRAIN "*)
        for a in "\$@"; do
                case \$a in NodeName=*) n=\${a#NodeName=} ;; esac
        done
        SLURM_CONF='$SLURM_CONF' /usr/bin/scontrol --oneliner show node "\$n" |
                /usr/bin/sed -n 's/.* Reason=\(.*\) \[.*/\1/p' >>'$WORK/drained' ;;
esac
exit \$rc
EOF
# join-relay COMMAND...: what ssh does: the words joined with blanks, run by a shell.
cat >"$RELAY_BIN/join-relay" <<EOF
#!/bin/bash
echo "\$*" >>'$WORK/joined.log'
exec /usr/bin/env -i PATH=/usr/bin:/bin SLURM_CONF='$SLURM_CONF' /bin/sh -c "\$*"
EOF
chmod +x "$RELAY_BIN/kube-relay" "$RELAY_BIN/join-relay"
PREFIX="kube-relay exec -n slurm 'slurm controller' -c slurmctld --"

# relayed ACTION ARGS...: as rollout() of rollout-lib.sh, with PATH only
# $RELAY_BIN and no SLURM_CONF.
relayed() {
        RC=0
        env -u SLURM_CONF PATH="$RELAY_BIN" "$AGENT" rollout "$@" --kube-api "$API" \
                --serviceaccount-dir "$WORK/sa" --namespace "$NS" --poll-interval 100 \
                --pod-timeout "$POD_TIMEOUT" --jobs-timeout 30 >"$WORK/out" 2>"$WORK/err" || RC=$?
}
# Each logged call's argv, as one line of words joined by '|', in $WORK/calls
# (a file: grep -q on a pipe would end the writer early under pipefail).
calls() {
        awk '/^--end--$/ { print line; line = ""; next } { line = line (line == "" ? "" : "|") $0 }' \
                "$RELAY_LOG" >"$WORK/calls"
}

section "setup"
start_pods "0:True 1:False 2:True 3:True" True

section "--help documents --slurm-exec"
"$AGENT" rollout --help >"$WORK/out" 2>&1
grep -q -- '--slurm-exec PREFIX' "$WORK/out" && pass || fail "--help says nothing of --slurm-exec"
grep -q 'kubectl exec does, ssh does not' "$WORK/out" && pass || fail "--help says nothing of the relay"

section "without a prefix, this PATH cannot reach Slurm"
relayed plan
expect_rc 3 "plan without --slurm-exec"
expect_said err "plan without --slurm-exec" "could not run: No such file or directory"
[ ! -s "$RELAY_LOG" ] && pass || fail "the relay ran without --slurm-exec"

section "apply through the relay"
start_controller
relayed apply --slurm-exec "$PREFIX"
expect_rc 0 "apply --slurm-exec"
[ "$(deletes)" = "slurm-worker-slinky-1 " ] && pass || fail "deleted through the relay: '$(deletes)'"
expect_replaced "apply --slurm-exec" "slinky-1 "
wait_for 10 all_idle && pass || fail "not back in service: $(sinfo -N -o '%N %T %E')"
stop_controller
# the relay check came first, then only Slurm commands behind env(1)
calls
[ "$(head -1 "$WORK/calls")" = "env|-i|AICR_ENROOT_RELAY_CHECK=1  AICR_ENROOT_RELAY_CHECK2='2 \"3\"'|env" ] && pass ||
        fail "first relayed call: $(head -1 "$WORK/calls")"
bad=$(tail -n +2 "$WORK/calls" | grep -v '^env|-u|SINFO_ALL|.*|-u|SQUEUE_USERS|.*|SLURM_TIME_FORMAT=%s|\(scontrol\|sinfo\|squeue\)|' || true)
[ -z "$bad" ] && pass || fail "relayed calls not shaped PREFIX env -u ... SLURM_TIME_FORMAT=%s COMMAND: $bad"
grep -q '|scontrol|update|NodeName=slinky-1|State=DRAIN|Reason=aicr-enroot-rollout ' "$WORK/calls" && pass ||
        fail "no drain through the relay: $(grep update "$WORK/calls")"
grep -q '|scontrol|update|NodeName=slinky-1|State=RESUME$' "$WORK/calls" && pass ||
        fail "no resume through the relay: $(grep update "$WORK/calls")"
# the reason, blanks and all, is what Slurm recorded
reason=$(sed -n 's/.*|State=DRAIN|Reason=\(.*\)$/\1/p' "$WORK/calls" | head -1)
case $reason in *" "*) pass ;; *) fail "the rollout's reason has no blank to test with: '$reason'" ;; esac
[ -n "$reason" ] && [ "$(head -1 "$WORK/drained" 2>/dev/null)" = "$reason" ] && pass ||
        fail "Slurm recorded '$(head -1 "$WORK/drained" 2>/dev/null)', the rollout sent '$reason'"
reset_nodes

# --verify-image runs srun through the relay too: the cluster's own srun,
# which has no pyxis plugin, refuses --container-image, and the rollout skips.
section "--verify-image through the relay"
start_pods "0:True 1:True 2:False 3:True" True
: >"$RELAY_LOG"
start_controller
relayed apply --slurm-exec "$PREFIX" --verify-image nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04
expect_rc 0 "apply --slurm-exec --verify-image"
stop_controller
calls
grep -qx 'env|-u|SINFO_ALL|.*|SLURM_TIME_FORMAT=%s|srun|-w|slinky-2|-N1|-n1|--time=10|--job-name=aicr-enroot-verify|--container-image=nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04|env' "$WORK/calls" &&
        pass || fail "no srun through the relay: $(grep srun "$WORK/calls" || cat "$WORK/calls")"
expect_said out "verify through the relay" "verify: node slinky-2: skipped: srun does not take --container-image: the pyxis plugin is not installed"
reset_nodes

section "a prefix whose program does not exist"
start_pods "0:True 1:False 2:True 3:True" True
relayed apply --slurm-exec "no-such-relay exec -n slurm slurm-controller-0 --"
expect_rc 3 "apply with a missing relay"
expect_said err "missing relay" "could not run \"no-such-relay\", the first word of --slurm-exec: No such file or directory"
expect_said err "missing relay" "'no-such-relay exec -n slurm slurm-controller-0 -- env -i "
[ -z "$(deletes)" ] && pass || fail "deleted with a missing relay: $(deletes)"
all_idle && pass || fail "nodes touched with a missing relay: $(sinfo -N -o '%N %T %E')"

section "a relay that joins its arguments (ssh)"
relayed apply --slurm-exec join-relay
expect_rc 3 "apply through a joining relay"
expect_said err "joining relay" "did not pass its arguments on as they are: --slurm-exec needs a relay that does"
[ "$(wc -l <"$WORK/joined.log")" = 1 ] && pass || fail "the joining relay ran more than the check: $(cat "$WORK/joined.log")"
[ -z "$(deletes)" ] && pass || fail "deleted through a joining relay: $(deletes)"
all_idle && pass || fail "nodes touched through a joining relay: $(sinfo -N -o '%N %T %E')"

section "a PREFIX a shell would expand"
relayed apply --slurm-exec 'kube-relay exec -n $NS --'
expect_rc 2 "--slurm-exec with a \$"
expect_said err "--slurm-exec with a \$" "--slurm-exec: \"kube-relay exec -n \$NS --\": \$ or \` outside single quotes"
relayed apply --slurm-exec "kube-relay 'exec"
expect_rc 2 "--slurm-exec with an open quote"
expect_said err "--slurm-exec with an open quote" "unterminated single quote"
[ -z "$(deletes)" ] && pass || fail "deleted with a bad --slurm-exec: $(deletes)"

finish
