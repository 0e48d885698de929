#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# agent/model/slurm.c, agent/rollout/slurm-client.c and
# tests/tools/slurm-cluster.sh against a real Slurm: four slurmd on this machine, read through slurm-probe in both output formats;
# drain with a reason, a running and a pending job, a pod replacement
# (preStop DOWN, fresh boot time), resume, and nothing left running after stop.
# Needs root and Debian's slurmctld, slurmd, slurm-client and munge; skips
# (77) where the harness says the machine cannot run a cluster.
. "$(dirname "$0")/lib.sh"

: "${SLURM_PROBE:?run through make check}"
harness=$TOP_SRCDIR/tests/tools/slurm-cluster.sh
cluster=$WORK/cluster
prestop='slurm-operator: Pod is terminating'
ours='aicr-enroot-rollout r-test: enroot configuration changed'

stop_cluster() { bash "$harness" stop "$cluster" >/dev/null 2>&1 || true; }
trap 'stop_cluster; rm -rf "$WORK"' EXIT

status=0
env_out=$(bash "$harness" start "$cluster" 4 2>"$WORK/start.err") || status=$?
[ "$status" = 77 ] && skip no-slurm-cluster "$(sed -n 's/^slurm-cluster: SKIP: //p' "$WORK/start.err")"
if [ "$status" != 0 ]; then
        fail "the cluster did not start: $(cat "$WORK/start.err")"
        finish
        exit 1
fi
printf '%s\n' "$(grep 'idle .* ms after start' "$WORK/start.err")" >&2
export "$env_out" # SLURM_CONF=...
[ "$SLURM_CONF" = "$cluster/slurm.conf" ] && pass || fail "start printed '$env_out'"

probe() { "$SLURM_PROBE" "$@"; }
# field FORMAT NAME KEY: one key of one node as slurm-probe prints it
field() { probe --format "$1" nodes | jq -r --arg n "$2" "select(.name == \$n) | .$3"; }
# expect_field NAME KEY VALUE: in both formats
expect_field() {
        local f got
        for f in json text; do
                got=$(field "$f" "$1" "$2")
                if [ "$got" = "$3" ]; then pass; else
                        fail "$1 .$2 is '$got' in $f, expected '$3'"
                fi
        done
}
wait_until() {
        local limit=$1
        shift
        wait_for "$limit" "$@"
}
job_line() { probe jobs "${@:2}" | jq -c --argjson id "$1" 'select(.job_id == $id)'; }
job_is() { [ "$(job_line "$1" | jq -r .state)" = "$2" ]; }

# --- reading ---------------------------------------------------------------------
expect_status 0 probe format
version=$(jq -r .version "$WORK/out")
[ "$(jq -r .format "$WORK/out")" = text ] && pass ||
        fail "Slurm $version is read as $(jq -r .format "$WORK/out"), expected text (the field lists that hold from 22.05 to 26.05)"
expect_status 0 probe nodes
[ "$(jq -r .name "$WORK/out" | tr '\n' ' ')" = "slinky-0 slinky-1 slinky-2 slinky-3 " ] && pass ||
        fail "nodes: $(cat "$WORK/out")"
[ "$(jq -r 'select(.state != "IDLE" or .unavailable or .reason != "") | .name' "$WORK/out")" = "" ] &&
        pass || fail "not every node is idle and available: $(cat "$WORK/out")"
boot_before=$(field json slinky-3 boot_time)
[ "$boot_before" -gt 1000000000 ] && pass || fail "slinky-3 has no boot time: '$boot_before'"
# The default (text) and JSON read the same.
diff <(probe --format json nodes | jq -c '{name, state, reason, boot_time}') \
        <(probe nodes | jq -c '{name, state, reason, boot_time}') >"$WORK/diff" &&
        pass || fail "json and text disagree: $(cat "$WORK/diff")"

# --- drain with a reason ---------------------------------------------------------------
before=$(date +%s)
expect_status 0 probe drain "$ours" slinky-1
[ "$(jq -r .command "$WORK/out")" = "scontrol update NodeName=slinky-1 State=DRAIN 'Reason=$ours'" ] &&
        pass || fail "drain ran $(cat "$WORK/out")"
expect_field slinky-1 state IDLE+DRAIN
expect_field slinky-1 drained true
expect_field slinky-1 reason "$ours"
expect_field slinky-1 reason_user root
reason_time=$(field json slinky-1 reason_time)
((reason_time >= before - 5 && reason_time <= $(date +%s) + 5)) && pass ||
        fail "reason time $reason_time, drained at $before"
expect_field slinky-0 state IDLE
expect_field slinky-0 reason ""

# Never ALL, never a hostlist: refused before scontrol runs.
expect_status 1 probe drain "$ours" ALL
grep -q 'refusing node name "ALL"' "$WORK/err" && pass || fail "ALL: $(cat "$WORK/err")"
expect_status 1 probe drain "$ours" 'slinky-[0-3]'
expect_field slinky-0 state IDLE
expect_field slinky-2 reason ""

# --- jobs ------------------------------------------------------------------------------
running=$(sbatch --parsable -w slinky-2 -o /dev/null -J running --wrap 'sleep 300')
pending=$(sbatch --parsable -w slinky-1 -o /dev/null -J pending --wrap 'sleep 1') # slinky-1 is drained
if wait_until 30 job_is "$running" RUNNING slinky-2; then pass; else
        fail "job $running never ran on slinky-2: $(probe jobs)"
fi
line=$(job_line "$running" slinky-2)
[ "$(jq -r '[.active, .pending, .nodes] | @tsv' <<<"$line")" = "$(printf 'true\tfalse\tslinky-2')" ] &&
        pass || fail "running job: $line"
[ -z "$(job_line "$running" slinky-0 slinky-3)" ] && pass || fail "job $running listed on other nodes"
line=$(job_line "$pending")
[ "$(jq -r '[.state, .active, .pending, .nodes] | @tsv' <<<"$line")" = "$(printf 'PENDING\tfalse\ttrue\t')" ] &&
        pass || fail "pending job: $line"
# A pending job holds no node: not among the jobs on slinky-1.
[ -z "$(job_line "$pending" slinky-1)" ] && pass || fail "pending job listed on slinky-1"
diff <(probe --format json jobs | jq -c '{job_id, state, nodes}' | sort) \
        <(probe jobs | jq -c '{job_id, state, nodes}' | sort) >"$WORK/diff" &&
        pass || fail "jobs: json and text disagree: $(cat "$WORK/diff")"
expect_field slinky-2 state ALLOCATED

# Draining while the job runs, drained once it is gone.
expect_status 0 probe drain "$ours" slinky-2
expect_field slinky-2 state ALLOCATED+DRAIN
expect_field slinky-2 draining true
scancel "$running"
if wait_until 30 eval '[ -z "$(probe jobs slinky-2 | jq -r "select(.active)")" ]'; then pass; else
        fail "job $running still active after scancel: $(probe jobs slinky-2)"
fi
if wait_until 30 eval '[ "$(field json slinky-2 drained)" = true ]'; then pass; else
        fail "slinky-2 not drained after its job ended: $(probe nodes)"
fi

# --- a pod replacement --------------------------------------------------------------------
status=0
bash "$harness" replace-node "$cluster" slinky-3 2>"$WORK/replace.err" || status=$?
if [ "$status" = 77 ]; then
        skip_part no-pod-replacement "the pod replacement could not be tested: $(sed -n 's/^slurm-cluster: SKIP: //p' "$WORK/replace.err")"
elif [ "$status" != 0 ]; then
        fail "replace-node failed: $(cat "$WORK/replace.err")"
else
        expect_field slinky-3 state DOWN
        expect_field slinky-3 unavailable true
        expect_field slinky-3 reason "$prestop"
        expect_field slinky-3 reason_user root
        boot_after=$(field json slinky-3 boot_time)
        ((boot_after > boot_before)) && pass ||
                fail "slinky-3 boot time $boot_after, before the replacement $boot_before"
        # The other nodes kept their own state and reason.
        expect_field slinky-1 reason "$ours"
        expect_field slinky-0 state IDLE
fi

# --- resume ---------------------------------------------------------------------------
expect_status 0 probe resume slinky-1 slinky-2 slinky-3
[ "$(jq -r .command "$WORK/out")" = "scontrol update NodeName=slinky-1,slinky-2,slinky-3 State=RESUME" ] &&
        pass || fail "resume ran $(cat "$WORK/out")"
if bash "$harness" wait-idle "$cluster" 30 2>"$WORK/idle.err"; then pass; else
        fail "not idle after resume: $(cat "$WORK/idle.err")"
fi
expect_status 0 probe nodes
[ "$(jq -r 'select(.state != "IDLE" or .reason != "") | .name' "$WORK/out")" = "" ] && pass ||
        fail "after resume: $(cat "$WORK/out")"
# scontrol refuses to resume a node that is neither drained nor down: the
# message names the command, its status and scontrol's first line.
expect_status 1 probe resume slinky-0
grep -qx "slurm-probe: 'scontrol update NodeName=slinky-0 State=RESUME' exited with status 1: slurm_update error: Invalid node state specified" \
        "$WORK/err" && pass || fail "resume of an idle node: $(cat "$WORK/err")"
# down, as the preStop hook does it, through the module
expect_status 0 probe down "$prestop" slinky-0
expect_field slinky-0 state DOWN
expect_field slinky-0 reason "$prestop"

# --- stop ------------------------------------------------------------------------------
pids=$(cat "$cluster"/run/*.pid "$cluster/munge/munged.pid" 2>/dev/null | tr '\n' ' ')
if bash "$harness" stop "$cluster" 2>"$WORK/stop.err"; then pass; else
        fail "stop failed: $(cat "$WORK/stop.err")"
fi
alive=
for p in $pids; do
        [ -e "/proc/$p" ] && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" != Z ] && alive+=" $p"
done
[ -z "$alive" ] && pass || fail "daemons still running after stop:$alive"
holders=$({ find /proc/[0-9]*/fd -maxdepth 1 -lname "$cluster/*" 2>/dev/null || true; } | cut -d/ -f3 | sort -u | tr '\n' ' ')
[ -z "$holders" ] && pass || fail "processes still hold files of the cluster: $holders"
# Slurm's clients retry a dead controller for about 10 s: the timeout ends it.
expect_status 1 probe --timeout-ms 2000 nodes
grep -q "timed out after 2.0 s\|Slurm reported an error" "$WORK/err" && pass ||
        fail "reading a stopped cluster: $(cat "$WORK/err")"

finish || exit 1
# a part this machine cannot run is not a pass: exit 77 (its SKIP line is above)
[ "$parts_skipped" = 0 ] || exit 77
