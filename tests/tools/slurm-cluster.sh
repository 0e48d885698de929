#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A real multi-node Slurm cluster on one machine, from Debian's packages
# (slurmctld, slurmd, slurm-client, munge), for tests. Everything lives under
# DIR: munged with its own key and socket, slurm.conf, the controller's state,
# spool directories, logs and pid files. Must run as root (SlurmUser=root).
#
# Usage:
#   slurm-cluster.sh start DIR N [SLURM-CONF-LINE...]
#       N nodes named ${SLURM_CLUSTER_PREFIX:-slinky-}0..N-1, each its own
#       `slurmd -N NAME` on its own localhost port. Extra arguments are added
#       to slurm.conf (e.g. SlurmdTimeout=5). Returns once every node is idle,
#       prints the elapsed time on stderr and the client's environment
#       (SLURM_CONF=DIR/slurm.conf) on stdout, also kept in DIR/env.
#   slurm-cluster.sh stop DIR
#       Kills every process of the cluster (daemons, job steps and their
#       tasks) and munged; fails when one survives.
#   slurm-cluster.sh replace-node DIR NAME
#       Mimics a Slinky worker pod replacement: runs the slurmd container's
#       preStop command (node DOWN, reason 'slurm-operator: Pod is
#       terminating'), kills that node's slurmd and job steps, and starts a new
#       slurmd with a fresh boot time (a time namespace), which Slurm sees as a
#       reboot. Returns once the new slurmd has registered.
#   slurm-cluster.sh wait-idle DIR [SECONDS]
#       Waits (default 30 s) until every node is idle.
#   slurm-cluster.sh env DIR
#       Prints the client's environment again.
#
# Exits 77 (skip) with the reason on stderr where this machine cannot run a
# cluster (not root, packages missing, no time namespaces for replace-node).
set -euo pipefail
export LC_ALL=C
# Debian installs the daemons in /usr/sbin.
PATH=$PATH:/usr/sbin:/sbin

prog=slurm-cluster
prefix=${SLURM_CLUSTER_PREFIX:-slinky-}
prestop_reason='slurm-operator: Pod is terminating'

say() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() {
        say "$*"
        exit 1
}
skip() {
        say "SKIP: $*"
        exit 77
}
usage() {
        sed -n '4,30s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
        exit 2
}
now_ms() { date +%s%3N; }
trace() { [ -z "${SLURM_CLUSTER_TRACE:-}" ] || say "$(($(now_ms) - t0)) ms: $*"; }

need_root_and_tools() {
        local c
        [ "$(id -u)" = 0 ] || skip "needs root: slurmd and slurmctld run as SlurmUser=root"
        for c in munged slurmctld slurmd scontrol sinfo squeue; do
                command -v "$c" >/dev/null ||
                        skip "'$c' is missing: install slurmctld slurmd slurm-client munge (scripts/setup-deps.sh)"
        done
}

# absdir DIR: DIR as an absolute path (it must exist).
absdir() { (cd "$1" && pwd -P); }

# Local TCP ports in use on this machine (any state), one a line. awk, not
# a shell loop: a busy machine has tens of thousands of sockets in TIME_WAIT.
used_ports() {
        cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '
                $2 ~ /:[0-9A-Fa-f]+$/ {
                        h = toupper(substr($2, index($2, ":") + 1)); v = 0
                        for (i = 1; i <= length(h); i++)
                                v = v * 16 + index("0123456789ABCDEF", substr(h, i, 1)) - 1
                        print v
                }' | sort -un
}

# free_port_block COUNT: the first of COUNT consecutive free ports, below the
# kernel's ephemeral range so that no outgoing connection takes one.
free_port_block() {
        local count=$1 base p ok lo hi
        local -A used=()
        read -r lo hi </proc/sys/net/ipv4/ip_local_port_range || { lo=32768 hi=60999; }
        ((lo > 10000 + count + 1000)) || die "the ephemeral port range ($lo-$hi) leaves no room below it"
        while read -r p; do used[$p]=1; done < <(used_ports)
        for _ in $(seq 1 50); do
                base=$((10000 + (RANDOM * 32768 + RANDOM) % (lo - 10000 - count)))
                ok=1
                for ((p = base; p < base + count; p++)); do
                        if [ -n "${used[$p]:-}" ]; then
                                ok=0
                                break
                        fi
                done
                if [ "$ok" = 1 ]; then
                        echo "$base"
                        return 0
                fi
        done
        die "no block of $count free TCP ports found"
}

# pids_holding GLOB: processes with an open file whose path matches GLOB,
# e.g. every slurmd and slurmstepd of a node holds that node's log file.
pids_holding() {
        # find fails on processes that exit meanwhile
        { find /proc/[0-9]*/fd -maxdepth 1 -lname "$1" 2>/dev/null || true; } | cut -d/ -f3 | sort -un
}

# with_descendants PID...: those processes and all their descendants (a job's
# tasks hold none of the cluster's files).
with_descendants() {
        local todo=("$@") all=() p stat stat_line pid ppid
        local -A seen=() children=()
        for stat in /proc/[0-9]*/stat; do
                # "pid (comm) state ppid ...": comm may contain spaces and parentheses
                read -r stat_line 2>/dev/null <"$stat" || continue
                pid=${stat_line%% *}
                # after "(comm) ": state, then ppid
                read -r _ ppid _ <<<"${stat_line##*) }"
                children[$ppid]+=" $pid"
        done
        while ((${#todo[@]})); do
                p=${todo[0]}
                todo=("${todo[@]:1}")
                [ -n "${seen[$p]:-}" ] && continue
                seen[$p]=1
                all+=("$p")
                # shellcheck disable=SC2206
                todo+=(${children[$p]:-})
        done
        ((${#all[@]})) && printf '%s\n' "${all[@]}"
        return 0
}

# terminate LABEL GRACE PID...: SIGTERM, then SIGKILL whatever is left after
# GRACE seconds (0: SIGKILL at once). Fails when a process survives SIGKILL.
terminate() {
        local label=$1 grace=$2 p i alive=()
        shift 2
        (($#)) || return 0
        if [ "$grace" != 0 ]; then
                kill -TERM "$@" 2>/dev/null || true
                for i in $(seq 1 $((grace * 20))); do
                        alive=()
                        for p in "$@"; do
                                kill -0 "$p" 2>/dev/null && alive+=("$p")
                        done
                        ((${#alive[@]})) || return 0
                        sleep 0.05
                done
        fi
        kill -KILL "$@" 2>/dev/null || true
        for i in $(seq 1 250); do
                alive=()
                for p in "$@"; do
                        # a zombie is dead; its parent (init) reaps it
                        [ -e "/proc/$p" ] && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" != Z ] &&
                                alive+=("$p")
                done
                ((${#alive[@]})) || return 0
                sleep 0.02
        done
        say "$label: processes survived SIGKILL: ${alive[*]}"
        return 1
}

load_cluster() {
        DIR=$(absdir "$1") || die "'$1' is no directory"
        [ -f "$DIR/slurm.conf" ] || die "no cluster in '$DIR' (no slurm.conf)"
        export SLURM_CONF=$DIR/slurm.conf
        # Times in scontrol's output as seconds since the epoch.
        export SLURM_TIME_FORMAT=%s
}

node_names() { grep -o '^NodeName=[^ ]*' "$DIR/slurm.conf" | cut -d= -f2; }

# node_field NAME FIELD: one Key=Value of `scontrol show node -o NAME`.
node_field() {
        scontrol show node -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}

# all_idle: whether every node answers and is idle.
all_idle() {
        local out
        out=$(timeout 5 sinfo --all --Node --noheader --format='%N %T' 2>/dev/null) || return 1
        [ -n "$out" ] && ! awk '$2 != "idle" { bad = 1 } END { exit !bad }' <<<"$out"
}

cmd_wait_idle() {
        local timeout=${2:-30} deadline
        load_cluster "$1"
        [[ "$timeout" =~ ^[0-9]+$ ]] || die "SECONDS must be a number, not '$timeout'"
        deadline=$(($(now_ms) + timeout * 1000))
        until all_idle; do
                if (($(now_ms) > deadline)); then
                        say "nodes not idle after ${timeout}s:"
                        sinfo --all --Node --format='%N %T %E' >&2 || true
                        return 1
                fi
                sleep 0.02
        done
}

start_slurmd() {
        local name=$1
        shift
        # The cwd is the log directory so nothing holds the caller's directory.
        (cd "$DIR/log" && "$@" slurmd -f "$DIR/slurm.conf" -N "$name") || {
                say "slurmd -N $name did not start: $(tail -3 "$DIR/log/slurmd-$name.log" 2>/dev/null)"
                return 1
        }
}

cmd_start() {
        local dir=$1 n=$2 t0 base i sock
        shift 2
        need_root_and_tools
        [[ "$n" =~ ^[1-9][0-9]{0,2}$ ]] || die "N must be a number from 1 to 999, not '$n'"
        mkdir -p "$dir"
        DIR=$(absdir "$dir")
        if [ -f "$DIR/slurm.conf" ] && [ -n "$(pids_holding "$DIR/log/*")" ]; then
                die "a cluster is already running in '$DIR': stop it first"
        fi
        export SLURM_CONF=$DIR/slurm.conf
        export SLURM_TIME_FORMAT=%s
        sock=$DIR/munge/munge.socket
        ((${#sock} < 100)) || die "'$DIR' is too long for a unix socket path ($sock)"
        t0=$(now_ms)
        rm -rf "$DIR/munge"
        # Leave nothing running when the start fails.
        trap 'status=$?; if [ "$status" != 0 ]; then cmd_stop "$DIR"; fi; exit "$status"' EXIT
        (umask 077 && mkdir "$DIR/munge" && head -c 1024 /dev/urandom >"$DIR/munge/munge.key")

        # --force: munged insists that every directory above its socket is
        # searchable by all, which a private test directory is not.
        munged --force --key-file="$DIR/munge/munge.key" --socket="$sock" \
                --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log" \
                --seed-file="$DIR/munge/munged.seed" ||
                die "munged did not start: $(tail -3 "$DIR/munge/munged.log" 2>/dev/null)"

        trace "munged started"
        local attempt status
        for attempt in 1 2 3; do
                status=0
                start_daemons "$n" "$@" || status=$?
                [ "$status" = 2 ] || break
                # Another program took a port between our check and the bind.
                say "a port was taken meanwhile (attempt $attempt): trying other ports"
                stop_slurm_daemons
        done
        [ "$status" = 0 ] || die "the cluster did not come up (logs in $DIR/log)"
        say "$n nodes idle $(($(now_ms) - t0)) ms after start"
        echo "SLURM_CONF=$DIR/slurm.conf" >"$DIR/env"
        cat "$DIR/env"
}

write_conf() {
        local n=$1 base=$2 i line
        shift 2
        {
                echo "# Written by slurm-cluster.sh: a test cluster on one machine."
                echo "ClusterName=aicrtest"
                echo "SlurmctldHost=localhost(127.0.0.1)"
                echo "SlurmctldPort=$base"
                echo "SlurmUser=root"
                echo "SlurmdUser=root"
                echo "AuthType=auth/munge"
                echo "CredType=cred/munge"
                echo "AuthInfo=socket=$DIR/munge/munge.socket"
                echo "StateSaveLocation=$DIR/state"
                echo "SlurmdSpoolDir=$DIR/spool/%n"
                echo "SlurmctldPidFile=$DIR/run/slurmctld.pid"
                echo "SlurmdPidFile=$DIR/run/slurmd-%n.pid"
                echo "SlurmctldLogFile=$DIR/log/slurmctld.log"
                echo "SlurmdLogFile=$DIR/log/slurmd-%n.log"
                # No cgroups: linuxproc tracks a job by its process tree.
                echo "ProctrackType=proctrack/linuxproc"
                echo "TaskPlugin=task/none"
                echo "JobAcctGatherType=jobacct_gather/none"
                echo "AccountingStorageType=accounting_storage/none"
                echo "JobCompType=jobcomp/none"
                echo "SwitchType=switch/none"
                echo "MpiDefault=none"
                echo "SelectType=select/cons_tres"
                echo "SelectTypeParameters=CR_Core"
                echo "SchedulerType=sched/backfill"
                # An admin's DOWN survives a restart of slurmd (as in Slinky).
                echo "ReturnToService=1"
                echo "MinJobAge=10"
                for ((i = 0; i < n; i++)); do
                        echo "NodeName=$prefix$i NodeHostname=localhost NodeAddr=127.0.0.1" \
                                "Port=$((base + 1 + i)) CPUs=${SLURM_CLUSTER_CPUS:-1} RealMemory=100 State=UNKNOWN"
                done
                echo "PartitionName=all Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
                for line in "$@"; do echo "$line"; done
        } >"$DIR/slurm.conf"
}

# died_on_port_clash: whether a daemon of the cluster exited because its port was taken.
died_on_port_clash() { grep -qs 'Address already in use' "$DIR"/log/*.log; }

# daemon_alive PIDFILE
daemon_alive() {
        local pid
        pid=$(cat "$1" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# start_daemons N CONF-LINE...: slurmctld, then N slurmd, until every node is
# idle. Returns 0, 1 on failure, 2 when a port was taken (try other ports).
start_daemons() {
        local n=$1 base i deadline
        shift
        rm -rf "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/run"
        mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/run"
        base=$(free_port_block $((n + 1)))
        write_conf "$n" "$base" "$@"

        (cd "$DIR/log" && slurmctld -f "$DIR/slurm.conf") || {
                say "slurmctld did not start: $(tail -3 "$DIR/log/slurmctld.log" 2>/dev/null)"
                return 1
        }
        trace "slurmctld started"
        deadline=$(($(now_ms) + 20000))
        until timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'; do
                if ! daemon_alive "$DIR/run/slurmctld.pid"; then
                        died_on_port_clash && return 2
                        say "slurmctld exited: $(tail -3 "$DIR/log/slurmctld.log" 2>/dev/null)"
                        return 1
                fi
                if (($(now_ms) > deadline)); then
                        say "slurmctld does not answer"
                        return 1
                fi
                sleep 0.01
        done
        trace "slurmctld answers"

        # In parallel: each slurmd takes about 0.15 s to load its plugins.
        local starters=() failed=0
        for ((i = 0; i < n; i++)); do
                start_slurmd "$prefix$i" &
                starters+=($!)
        done
        for i in "${starters[@]}"; do
                wait "$i" || failed=1
        done
        trace "slurmd started"
        deadline=$(($(now_ms) + 30000))
        until all_idle; do
                for ((i = 0; i < n; i++)); do
                        daemon_alive "$DIR/run/slurmd-$prefix$i.pid" || failed=1
                done
                if [ "$failed" = 1 ]; then
                        died_on_port_clash && return 2
                        say "a slurmd exited: $(grep -h 'fatal' "$DIR"/log/slurmd-*.log | head -3)"
                        return 1
                fi
                if (($(now_ms) > deadline)); then
                        say "nodes not idle after 30 s:"
                        sinfo --all --Node --format='%N %T %E' >&2 || true
                        return 1
                fi
                sleep 0.02
        done
}

# Every slurmctld, slurmd and slurmstepd holds its log file open; the jobs'
# tasks are their descendants.
stop_slurm_daemons() {
        local pids munge_pid
        munge_pid=$(cat "$DIR/munge/munged.pid" 2>/dev/null || true)
        # shellcheck disable=SC2046 # one pid a word
        mapfile -t pids < <(with_descendants $(pids_holding "$DIR/log/*") | grep -vx "${munge_pid:-none}")
        # No grace: a test cluster has nothing to save, and slurmstepd waits
        # for its tasks on SIGTERM.
        terminate "slurm daemons" 0 "${pids[@]}"
}

cmd_stop() {
        local pids
        DIR=$(absdir "$1" 2>/dev/null) || return 0
        [ -d "$DIR/munge" ] || return 0
        # A daemon may fork (a slurmstepd, a task) between the scan and the
        # kill: scan again until nothing of the cluster is left, a few rounds.
        local round
        for round in 1 2 3 4 5; do
                stop_slurm_daemons || return 1
                mapfile -t pids < <(pids_holding "$DIR/log/*")
                ((${#pids[@]} == 0)) && break
        done
        mapfile -t pids < <(pids_holding "$DIR/munge/*")
        terminate munged 0 "${pids[@]}" || return 1
        for round in 1 2 3 4 5; do
                mapfile -t pids < <(pids_holding "$DIR/*")
                ((${#pids[@]} == 0)) && break
                # shellcheck disable=SC2046 # one pid a word
                terminate "leftovers" 0 $(with_descendants "${pids[@]}") || return 1
        done
        ((${#pids[@]} == 0)) || die "processes still hold files in '$DIR': ${pids[*]}"
}

cmd_replace_node() {
        local name=$2 old_start new_start up pids i
        need_root_and_tools
        load_cluster "$1"
        node_names | grep -qxF -- "$name" || die "no node '$name' in $DIR/slurm.conf"
        unshare --time --boottime 0 true 2>/dev/null ||
                skip "cannot make a time namespace (unshare --time): no fresh boot time for '$name'"
        old_start=$(node_field "$name" SlurmdStartTime)

        # The slurmd container's preStop hook (Slinky); a failure does not
        # stop kubelet from killing the pod.
        scontrol update nodename="$name" state=down reason="$prestop_reason" ||
                say "preStop for $name failed (continuing, as kubelet does)"
        # shellcheck disable=SC2046 # one pid a word
        mapfile -t pids < <(with_descendants $(pids_holding "$DIR/log/slurmd-$name.log"))
        # As kubelet does, with a short grace period: SIGTERM, then SIGKILL.
        terminate "node $name" 2 "${pids[@]}" || return 1

        # SlurmdStartTime has a resolution of one second.
        while [ "$(date +%s)" = "${old_start:-0}" ]; do sleep 0.05; done
        # A boot time offset that makes the new slurmd's uptime about 1 s.
        up=$(cut -d. -f1 /proc/uptime)
        start_slurmd "$name" unshare --time --boottime "$((1 - up))"
        for i in $(seq 1 750); do
                new_start=$(node_field "$name" SlurmdStartTime)
                [ -n "$new_start" ] && [ "$new_start" != "$old_start" ] && return 0
                sleep 0.02
        done
        die "the new slurmd of $name did not register (logs in $DIR/log)"
}

cmd_env() {
        load_cluster "$1"
        cat "$DIR/env"
}

[ $# -ge 2 ] || usage
case $1 in
start) [ $# -ge 3 ] || usage; cmd_start "${@:2}" ;;
stop) [ $# -eq 2 ] || usage; cmd_stop "$2" ;;
replace-node) [ $# -eq 3 ] || usage; cmd_replace_node "$2" "$3" ;;
wait-idle) [ $# -le 3 ] || usage; cmd_wait_idle "${@:2}" ;;
env) [ $# -eq 2 ] || usage; cmd_env "$2" ;;
*) usage ;;
esac
