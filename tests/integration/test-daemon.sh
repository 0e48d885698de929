#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The daemon end to end: the real binary against a kubelet-style atomic
# writer, real inotify, real sockets, a bind mount standing for a subPath
# mount, and a target process in its own mount namespace.
. "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip no-curl "curl is not installed (scripts/setup-deps.sh installs it)"
command -v jq >/dev/null || skip no-jq "jq is not installed (scripts/setup-deps.sh installs it)"
SECRET=s3cr3t-value-never-shown

cm=$WORK/cm
root=$WORK/root
mkdir -p "$cm" "$root/etc/enroot/environ.d" "$WORK/src"

trap 'stop_agent; rm -rf "$WORK"' EXIT

status() { curl -sf "http://127.0.0.1:$PORT/status"; }
# How long a wait for something the agent must do may last: it only ends a
# hung test (a failure naming what was awaited); no check depends on it.
HANG=30
# signal_barrier: SIGHUP, then wait until the agent has evaluated it. The
# agent reads its inotify queue before a signal that came later (the queue's
# source runs first in a turn of its loop), so afterwards every change made
# before the call has been read.
signal_barrier() {
        local n
        n=$(metric 'aicr_enroot_agent_evaluations_total{trigger="signal"}')
        kill -HUP "$AGENT_PID"
        wait_for "$HANG" metric_is 'aicr_enroot_agent_evaluations_total{trigger="signal"}' $((n + 1)) ||
                fail "waited ${HANG} s for the evaluation of a SIGHUP"
}
# exited PID: gone, or a zombie waiting for this shell's wait
exited() { [ ! -e "/proc/$1" ] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }

# --- the running files equal the ConfigMap: current -------------------------
publish 'ENROOT_MOUNT_HOME=yes\nENROOT_REMAP_ROOT=yes\n' 'NCCL_DEBUG=WARN\n'
cp "$WORK/src/enroot.conf" "$root/etc/enroot/enroot.conf"
cp "$WORK/src/99-aicr-defaults.env" "$root/etc/enroot/environ.d/99-aicr-defaults.env"

expect_status 0 "$AGENT" --check-config --desired-dir "$cm" --running-root "$root"
expect_status 2 "$AGENT" --check-config --running-root "$root"
grep -q -- '--desired-dir is required' "$WORK/err" && pass || fail "--check-config without --desired-dir"
expect_status 2 "$AGENT" --resync-interval 0 --desired-dir "$cm"
grep -q -- '--resync-interval: "0"' "$WORK/err" && pass || fail "option error does not name the option"

start_agent "$WORK/agent.log" --desired-dir "$cm" --running-root "$root" || { finish; exit 1; }
expect_metric 'aicr_enroot_config_current ' 1
expect_metric 'aicr_enroot_agent_watch_mode{mode="inotify"}' 1
expect_status 0 "$AGENT" --check --listen "127.0.0.1:$PORT"
grep -q '^ready: pod current' "$WORK/out" && pass || fail "--check line: $(cat "$WORK/out")"
expect_status 0 "$AGENT" --check --require-current --listen "127.0.0.1:$PORT"

if [ -n "${PROMTOOL:-}" ] || command -v promtool >/dev/null; then
        curl -sf "http://127.0.0.1:$PORT/metrics" >"$WORK/metrics"
        if "${PROMTOOL:-promtool}" check metrics <"$WORK/metrics" >"$WORK/promtool" 2>&1; then pass; else
                fail "promtool check metrics: $(cat "$WORK/promtool")"
        fi
        [ ! -s "$WORK/promtool" ] && pass || fail "promtool lint findings: $(cat "$WORK/promtool")"
else
        fail "promtool is not installed (scripts/setup-deps.sh installs prometheus)"
fi
curl -sI "http://127.0.0.1:$PORT/metrics" | grep -qi '^content-type: text/plain; version=0.0.4; charset=utf-8' &&
        pass || fail "metrics content type"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/nope")" = 404 ] && pass || fail "404"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/metrics")" = 405 ] && pass ||
        fail "405"
[ "$(curl -s "http://127.0.0.1:$PORT/healthz")" = ok ] && pass || fail "/healthz"

# --- the ConfigMap changes: drift within milliseconds of the flip ------------
publish "ENROOT_MOUNT_HOME=no\nENROOT_REMAP_ROOT=yes\nhttps_proxy=http://u:$SECRET@p\n" 'NCCL_DEBUG=WARN\n'
expect_metric 'aicr_enroot_config_drift{file="enroot.conf"}' 1
expect_metric 'aicr_enroot_config_current ' 0
expect_metric 'aicr_enroot_config_key_drift{file="enroot.conf",key="ENROOT_MOUNT_HOME",change="changed"}' 1
expect_metric 'aicr_enroot_config_key_drift{file="enroot.conf",key="https_proxy",change="added"}' 1
expect_metric 'aicr_enroot_config_drift{file="99-aicr-defaults.env"}' 0
[ "$(status | jq -r '.pod')" = drifted ] && pass || fail "/status pod"
[ "$(status | jq -r '.files[0].changes | map(.key) | join(",")')" = "ENROOT_MOUNT_HOME,https_proxy" ] &&
        pass || fail "/status changes: $(status)"
expect_status 0 "$AGENT" --check --listen "127.0.0.1:$PORT"
grep -q 'drifted' "$WORK/out" && pass || fail "--check does not say drifted"
expect_status 1 "$AGENT" --check --require-current --listen "127.0.0.1:$PORT"
wait_for "$HANG" grep -q 'enroot.conf: drifted; 1 added: https_proxy; 1 changed: ENROOT_MOUNT_HOME, since' \
        "$WORK/agent.log" && pass || fail "no drift log line: $(tail -5 "$WORK/agent.log")"

# --- environ.d: key added, key removed ---------------------------------------
publish "ENROOT_MOUNT_HOME=no\nENROOT_REMAP_ROOT=yes\nhttps_proxy=http://u:$SECRET@p\n" \
        'NCCL_DEBUG=INFO\nNCCL_DEBUG_SUBSYS=INIT\n'
expect_metric 'aicr_enroot_config_key_drift{file="99-aicr-defaults.env",key="NCCL_DEBUG_SUBSYS",change="added"}' 1
publish "ENROOT_REMAP_ROOT=yes\n" ''
expect_metric 'aicr_enroot_config_key_drift{file="99-aicr-defaults.env",key="NCCL_DEBUG",change="removed"}' 1
expect_metric 'aicr_enroot_config_key_drift{file="enroot.conf",key="ENROOT_MOUNT_HOME",change="removed"}' 1

# --- back to the running content, but cosmetic: current again ----------------
publish '# managed by AICR\nENROOT_REMAP_ROOT y\nENROOT_MOUNT_HOME = "yes"\n' 'NCCL_DEBUG="WARN"\n'
expect_metric 'aicr_enroot_config_current ' 1
expect_metric 'aicr_enroot_config_state{file="enroot.conf",state="cosmetic"}' 1

# --- a no-op sync changes nothing and logs nothing ---------------------------
lines=$(wc -l <"$WORK/agent.log")
before=$(grep -c ': current\|: cosmetic\|: drifted' "$WORK/agent.log")
evaluations=$(metric 'aicr_enroot_agent_evaluations_total{trigger="inotify"}')
publish '# managed by AICR\nENROOT_REMAP_ROOT y\nENROOT_MOUNT_HOME = "yes"\n' 'NCCL_DEBUG="WARN"\n'
# Whatever the sync made the agent read, it has read it after the first
# barrier; a call it scheduled for that is due within the watcher's settle
# cap (0.1 s) of the reading, so after 0.2 s more (a lower bound: a slow
# machine only waits longer) the second barrier comes after it.
signal_barrier
sleep 0.2
signal_barrier
[ "$(grep -c ': current\|: cosmetic\|: drifted' "$WORK/agent.log")" = "$before" ] && pass ||
        fail "a no-op sync logged a state change: $(tail -n +"$lines" "$WORK/agent.log")"
[ "$(metric 'aicr_enroot_agent_evaluations_total{trigger="inotify"}')" = "$evaluations" ] && pass ||
        fail "a no-op sync was evaluated: $(tail -n +"$lines" "$WORK/agent.log")"

# --- rapid successive updates: the last one wins -----------------------------
for i in $(seq 1 20); do
        publish "ENROOT_MOUNT_HOME=yes\nENROOT_REMAP_ROOT=yes\nENROOT_MAX_PROCESSORS=$i\n" 'NCCL_DEBUG=WARN\n'
done
expect_metric 'aicr_enroot_config_key_drift{file="enroot.conf",key="ENROOT_MAX_PROCESSORS",change="added"}' 1
want=$(readlink "$cm/..data")
wait_for "$HANG" sh -c "curl -sf http://127.0.0.1:$PORT/metrics | grep -q 'side=\"desired\",version=\"$want\"'" &&
        pass || fail "after 20 updates the desired version is not the last one"

# --- bad input on either side: a clear state, the agent keeps serving ---------
mv "$root/etc/enroot/enroot.conf" "$WORK/enroot.conf.saved"
mkfifo "$root/etc/enroot/enroot.conf"
kill -HUP "$AGENT_PID"
expect_metric 'aicr_enroot_config_state{file="enroot.conf",state="unreadable"}' 1
[ "$(status | jq -r '.files[0].detail')" = "/etc/enroot/enroot.conf cannot be read: it is not a regular file (a FIFO, socket or device)" ] &&
        pass || fail "FIFO detail: $(status | jq -r '.files[0].detail')"
rm "$root/etc/enroot/enroot.conf"
kill -HUP "$AGENT_PID"
expect_metric 'aicr_enroot_config_state{file="enroot.conf",state="missing"}' 1
mv "$WORK/enroot.conf.saved" "$root/etc/enroot/enroot.conf"
ln -sfn /etc "$cm/..data_tmp" && mv -T "$cm/..data_tmp" "$cm/..data"
expect_metric 'aicr_enroot_config_state{file="enroot.conf",state="unreadable"}' 1
[ "$(curl -s "http://127.0.0.1:$PORT/healthz")" = ok ] && pass || fail "/healthz with a broken volume"
expect_status 1 "$AGENT" --check --listen "127.0.0.1:$PORT"
grep -q 'desired side' "$WORK/out" && pass || fail "--check with a broken volume: $(cat "$WORK/out")"
grep -q 'points outside the volume' "$WORK/agent.log" && pass ||
        fail "no log line for ..data outside the volume: $(tail -3 "$WORK/agent.log")"
publish "ENROOT_MOUNT_HOME=yes\nENROOT_REMAP_ROOT=yes\nENROOT_MAX_PROCESSORS=20\n" 'NCCL_DEBUG=WARN\n'
expect_metric 'aicr_enroot_config_state{file="enroot.conf",state="drifted"}' 1

# --- the reader follows kubelet's flips -------------------------------------
# The reader thread watches for the flip and begins the read at once; a look
# the flip brings takes it (include/io/running-worker.h; the unit test
# test-running-worker checks which reads may serve which looks). Here: the
# daemon's default wiring. How many looks took such a read depends on which
# thread ran first, so it is printed, not checked.
grep -q "The reader follows kubelet's flips in \"$cm\": it reads on each\." "$WORK/agent.log" &&
        pass || fail "the reader does not follow kubelet's flips: $(grep -i 'flips' "$WORK/agent.log")"
n=$(grep -c "The running files were read from [0-9]* us, on kubelet's flip\." "$WORK/agent.log" || true)
echo "looks that took the reader's early read: $n; looks for inotify events: $(grep -c 'Look (inotify) starts' "$WORK/agent.log" || true)" >&2

# --- SIGHUP evaluates now; values never reach logs or metrics -----------------
before=$(metric 'aicr_enroot_agent_evaluations_total{trigger="signal"}')
kill -HUP "$AGENT_PID"
expect_metric 'aicr_enroot_agent_evaluations_total{trigger="signal"}' $((before + 1))
if grep -q "$SECRET" "$WORK/agent.log" || curl -sf "http://127.0.0.1:$PORT/metrics" | grep -q "$SECRET" ||
        status | grep -q "$SECRET"; then
        fail "a configuration value leaked into logs, metrics or /status"
else
        pass
fi

# --- the port is taken: a clear message naming it and node_exporter ----------
expect_status 1 "$AGENT" --desired-dir "$cm" --running-root "$root" --listen "127.0.0.1:$PORT"
grep -q "port $PORT is already in use" "$WORK/err" && pass || fail "port-in-use message: $(cat "$WORK/err")"
# on 9100, the default, the message names node_exporter, its usual owner
if "$AGENT" --desired-dir "$cm" --running-root "$root" --listen 127.0.0.1:9100 >"$WORK/a9100" 2>&1 &
        a9100=$!
        wait_for "$HANG" grep -q Serving "$WORK/a9100"; then
        expect_status 1 "$AGENT" --desired-dir "$cm" --running-root "$root" --listen 127.0.0.1:9100
        grep -q "port 9100 is already in use (node_exporter owns 9100 on many nodes)" "$WORK/err" &&
                pass || fail "9100 message: $(cat "$WORK/err")"
fi
kill "$a9100" 2>/dev/null || true
wait_for "$HANG" exited "$a9100" || { fail "waited ${HANG} s for the agent on 9100 to exit after SIGTERM"; kill -KILL "$a9100"; }
wait "$a9100" 2>/dev/null || true

# --- SIGTERM: exit 0, within kubelet's grace period --------------------------
kill -TERM "$AGENT_PID"
# 30 s: Kubernetes' default terminationGracePeriodSeconds, after which
# kubelet sends SIGKILL
if wait_for 30 exited "$AGENT_PID"; then pass; else
        fail "waited 30 s for the agent to exit after SIGTERM"
        kill -KILL "$AGENT_PID" 2>/dev/null || true
fi
rc=0
wait "$AGENT_PID" || rc=$?
AGENT_PID=
[ "$rc" = 0 ] && pass || fail "SIGTERM exit status $rc"
expect_status 1 "$AGENT" --check --listen "127.0.0.1:$PORT"
grep -q 'cannot connect' "$WORK/out" && pass || fail "--check without a daemon: $(cat "$WORK/out")"

# --- systemd: READY=1 after the first evaluation, STATUS=, watchdog, STOPPING=1 ---
if [ -n "${NOTIFY_LISTEN:-}" ]; then
        sock=$WORK/notify.sock
        # it ends at STOPPING=1; the time only ends a hung test
        "$NOTIFY_LISTEN" "$sock" $((2 * HANG)) >"$WORK/notify.out" &
        listener=$!
        wait_for "$HANG" grep -q listening "$WORK/notify.out" ||
                fail "waited ${HANG} s for tests/tools/notify-listen to listen"
        NOTIFY_SOCKET=$sock WATCHDOG_USEC=200000 start_agent "$WORK/notify.log" --desired-dir "$cm" \
                --running-root "$root" || { finish; exit 1; }
        watchdog_pings() { [ "$(grep -c '^WATCHDOG=1' "$WORK/notify.out")" -ge 3 ]; }
        wait_for "$HANG" watchdog_pings || fail "waited ${HANG} s for 3 watchdog pings"
        stop_agent
        wait "$listener" || true
        grep -q '^READY=1' "$WORK/notify.out" && pass || fail "no READY=1: $(cat "$WORK/notify.out")"
        grep -Eq '^STATUS=pod drifted: enroot.conf drifted, 99-aicr-defaults.env current' \
                "$WORK/notify.out" && pass || fail "STATUS=: $(grep STATUS "$WORK/notify.out")"
        [ "$(grep -c '^WATCHDOG=1' "$WORK/notify.out")" -ge 3 ] && pass ||
                fail "fewer than 3 watchdog pings: $(cat "$WORK/notify.out")"
        grep -q '^STOPPING=1' "$WORK/notify.out" && pass || fail "no STOPPING=1"
        [ "$(grep -n '^READY=1' "$WORK/notify.out" | cut -d: -f1)" -gt \
          "$(grep -n '^STATUS=' "$WORK/notify.out" | head -1 | cut -d: -f1)" ] && pass ||
                fail "READY=1 came before the first evaluation's STATUS="
fi

# --- logs to the journal carry syslog levels ---------------------------------
: >"$WORK/journal.err"
JOURNAL_STREAM=$(stat -c '%d:%i' "$WORK/journal.err") \
        "$AGENT" --resync-interval 0 --desired-dir "$cm" 2>>"$WORK/journal.err" || true
grep -q '^<3>--resync-interval' "$WORK/journal.err" && pass ||
        fail "no <3> prefix for the journal: $(cat "$WORK/journal.err")"

# --- the polling fallback ----------------------------------------------------
start_agent "$WORK/poll.log" --desired-dir "$cm" --running-root "$root" --watch poll --poll-interval 1 ||
        { finish; exit 1; }
expect_metric 'aicr_enroot_agent_watch_mode{mode="poll"}' 1
publish 'ENROOT_MOUNT_HOME=no\n' 'NCCL_DEBUG=WARN\n'
expect_metric 'aicr_enroot_config_key_drift{file="enroot.conf",key="ENROOT_MOUNT_HOME",change="changed"}' 1
[ "$(metric 'aicr_enroot_agent_evaluations_total{trigger="poll"}')" -ge 1 ] && pass || fail "no poll evaluation"
stop_agent

# --- a bind-mounted file stands for a subPath mount ---------------------------
if unshare -m --propagation private true 2>/dev/null; then
        publish 'ENROOT_MOUNT_HOME=yes\n' 'NCCL_DEBUG=WARN\n'
        cat >"$WORK/subpath.sh" <<'SCRIPT'
set -eu
# kubelet bind-mounts the file inside the current version directory
version=$(readlink "$CM/..data")
mount --bind "$CM/$version/enroot.conf" "$ROOT/etc/enroot/enroot.conf"
"$AGENT" --listen 127.0.0.1:0 --log-level debug --desired-dir "$CM" --running-root "$ROOT" \
        --file enroot.conf=/etc/enroot/enroot.conf >"$LOG" 2>&1 &
echo $! >"$PIDFILE"
wait
SCRIPT
        CM=$cm ROOT=$root AGENT=$AGENT LOG=$WORK/subpath.log PIDFILE=$WORK/subpath.pid \
                unshare -m --propagation private bash "$WORK/subpath.sh" &
        ns_pid=$!
        wait_for "$HANG" test -s "$WORK/subpath.pid" || fail "waited ${HANG} s for the subPath agent's pid"
        AGENT_PID=$(cat "$WORK/subpath.pid")
        AGENT_LOG=$WORK/subpath.log
        wait_for "$HANG" grep -q 'Serving' "$WORK/subpath.log" || fail "waited ${HANG} s for the subPath agent to serve"
        PORT=$(sed -n 's/.*Serving .* on 127\.0\.0\.1:\([0-9]*\)\..*/\1/p' "$WORK/subpath.log")
        expect_metric 'aicr_enroot_config_current ' 1
        expect_metric 'aicr_enroot_config_superseded_mount{file="enroot.conf"}' 0
        # A -> B: the mount keeps the old version, now deleted: drift and superseded
        publish 'ENROOT_MOUNT_HOME=no\n' 'NCCL_DEBUG=WARN\n'
        expect_metric 'aicr_enroot_config_superseded_mount{file="enroot.conf"}' 1
        expect_metric 'aicr_enroot_config_drift{file="enroot.conf"}' 1
        # B -> A: equal content again, still from a superseded version: not drift
        publish 'ENROOT_MOUNT_HOME=yes\n' 'NCCL_DEBUG=WARN\n'
        expect_metric 'aicr_enroot_config_drift{file="enroot.conf"}' 0
        expect_metric 'aicr_enroot_config_superseded_mount{file="enroot.conf"}' 1
        [ "$(status | jq -r '.files[0].state')" = current ] && pass || fail "A-B-A state: $(status)"
        [ "$(status | jq -r '.files[0].mount_version')" != null ] && pass || fail "no mount version"
        # The agent is the wrapper's child: its exit status comes through the wrapper.
        kill -TERM "$AGENT_PID"
        AGENT_PID=
        rc=0
        wait "$ns_pid" || rc=$?
        [ "$rc" = 0 ] && pass || { tail -20 "$WORK/subpath.log" >&2; fail "the agent exited $rc after SIGTERM"; }
else
        skip_part no-mount-namespace-subpath "mount namespaces are not permitted here: the subPath bind-mount case did not run"
fi

# --- a target process in a shared PID namespace ------------------------------
if unshare -m --propagation private true 2>/dev/null; then
        # A name of its own, not "slurmd": the real slurmd of another test
        # (test-rollout.sh, or a second run on the same machine) would be
        # taken for the target.
        target=tgt-$$
        target=${target:0:15}
        cp "$(command -v sleep)" "$WORK/$target"
        mkdir -p "$WORK/target/enroot/environ.d"
        cp "$WORK/src/enroot.conf" "$WORK/target/enroot/enroot.conf"
        cp "$WORK/src/99-aicr-defaults.env" "$WORK/target/enroot/environ.d/99-aicr-defaults.env"
        # the process sees $WORK/target at /etc/enroot, in its own mount namespace
        start_target() {
                unshare -m --propagation private sh -c \
                        "mount --bind '$WORK/target/enroot' /etc/enroot 2>/dev/null ||
                         { mkdir -p /etc/enroot && mount --bind '$WORK/target/enroot' /etc/enroot; }
                         exec '$WORK/$target' 1000" &
                TARGET_PID=$!
        }
        start_target
        start_agent "$WORK/target.log" --desired-dir "$cm" --target-process "$target" || { finish; exit 1; }
        expect_metric 'aicr_enroot_config_current ' 1
        publish 'ENROOT_MOUNT_HOME=no\n' 'NCCL_DEBUG=WARN\n'
        expect_metric 'aicr_enroot_config_drift{file="enroot.conf"}' 1
        # the workload restarts with the new files: the agent follows it
        kill "$TARGET_PID"
        wait "$TARGET_PID" 2>/dev/null || true
        cp "$WORK/src/enroot.conf" "$WORK/target/enroot/enroot.conf"
        wait_for "$HANG" grep -q 'no process named' "$WORK/target.log" && pass ||
                fail "absent process not reported: $(tail -3 "$WORK/target.log")"
        expect_status 1 "$AGENT" --check --listen "127.0.0.1:$PORT"
        grep -q '^not ready' "$WORK/out" && pass || fail "--check with the target gone: $(cat "$WORK/out")"
        start_target
        expect_metric 'aicr_enroot_config_current ' 1
        [ "$(metric 'aicr_enroot_agent_evaluations_total{trigger="process"}')" -ge 1 ] && pass ||
                fail "no process-triggered evaluation"
        stop_agent
        kill "$TARGET_PID" 2>/dev/null || true
        wait "$TARGET_PID" 2>/dev/null || true
else
        skip_part no-mount-namespace-target "mount namespaces are not permitted here: the target-process case did not run"
fi

finish
