#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A running file on a file system that never answers: a FUSE mount
# (tests/tools/fuse-hang) over the workload's enroot.conf, as a subPath bind
# mount sits over it, in the agent's own mount namespace. The daemon runs as
# a user runs it (--desired-dir, --running-root, the default files); the
# checks are what the user sees:
#  - /healthz, /metrics and --check keep answering at once while the read
#    waits (before the fix the whole process blocked in the read); a scrape
#    that comes as the read starts waits for what it finds at most
#    HTTPD_HOLD_MAX_USEC (50 ms), then gets what is known;
#  - after 5 s the file is "unreadable" with "no answer from the file system
#    within 5 s", the other file says it was not read, and the log names the
#    path;
#  - one read at a time: more SIGHUPs, resyncs and a ConfigMap update add no
#    request on the hung mount and no thread, while the desired side is still
#    followed;
#  - when the FUSE server dies (the kernel aborts its connection) the stale
#    read is dropped and the file is read again; once the mount is gone the
#    pod is current again;
#  - SIGTERM while a read waits: the agent exits 0 (a FUSE request still
#    queued in the kernel gives way to the exit); when the server had taken
#    the request, the kernel lets no process go before the connection is
#    aborted, so the agent exits 0 right after its server dies.
# Needs root (mount namespaces, nsenter) and /dev/fuse: skipped, saying why,
# where they are missing.
. "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip no-curl "curl is not installed (scripts/setup-deps.sh installs it)"
command -v jq >/dev/null || skip no-jq "jq is not installed (scripts/setup-deps.sh installs it)"
command -v nsenter >/dev/null || skip no-nsenter "nsenter is not installed (util-linux)"
: "${FUSE_HANG:?run through make check}"
[ -c /dev/fuse ] || skip no-dev-fuse "/dev/fuse is not here: no FUSE file system can be mounted"
unshare -m --propagation private true 2>/dev/null ||
        skip no-mount-namespace "mount namespaces are not permitted here (needs root)"

cm=$WORK/cm
root=$WORK/root
run=$root/etc/enroot/enroot.conf
mkdir -p "$cm" "$root/etc/enroot/environ.d"
publish 'ENROOT_MOUNT_HOME=yes\n' 'NCCL_DEBUG=WARN\n'
cp "$WORK/src/enroot.conf" "$run"
cp "$WORK/src/99-aicr-defaults.env" "$root/etc/enroot/environ.d/"

fuse_pid=
kill_fuse() {
        [ -n "$fuse_pid" ] || return 0
        kill -KILL "$fuse_pid" 2>/dev/null || true
        wait "$fuse_pid" 2>/dev/null || true
        fuse_pid=
}
trap 'kill_fuse; stop_agent; rm -rf "$WORK"' EXIT

status() { curl -sf --max-time 2 "http://127.0.0.1:$PORT/status"; }
pod_is() { [ "$(status | jq -r .pod)" = "$1" ]; }
file_is() { [ "$(status | jq -r ".files[$1].state")" = "$2" ]; }
desired_version() { status | jq -r .desired_version; }
requests() { sed -n 's/^requests //p' "$WORK/fuse.state" 2>/dev/null; }
threads() { awk '$1 == "Threads:" { print $2 }' "/proc/$AGENT_PID/status"; }
# gone PID: the process and all its threads have exited (a zombie waiting to
# be reaped counts; a leader whose other thread still waits in the kernel
# does not)
gone() {
        local s
        s=$(cat "/proc/$1/status" 2>/dev/null) || return 0
        grep -q '^State:.*Z' <<<"$s" && grep -q '^Threads:[[:space:]]*1$' <<<"$s"
}

# hang [--take]: the FUSE server mounts over the running enroot.conf in the
# agent's mount namespace
hang() {
        rm -f "$WORK/fuse.state"
        nsenter -t "$AGENT_PID" -m -- "$FUSE_HANG" "$@" "$run" "$WORK/fuse.state" 2>"$WORK/fuse.err" &
        fuse_pid=$!
        if ! wait_for 5 test -s "$WORK/fuse.state"; then
                rc=0
                wait "$fuse_pid" || rc=$?
                fuse_pid=
                if [ "$rc" = 77 ]; then
                        stop_agent
                        skip no-fuse-mount "cannot mount a FUSE file system here: $(cat "$WORK/fuse.err")"
                fi
                fail "fuse-hang did not mount (exit $rc): $(cat "$WORK/fuse.err")"
                finish
                exit 1
        fi
}
unhang() {
        kill_fuse
        nsenter -t "$AGENT_PID" -m -- umount -l "$run"
}

# answers_meanwhile SECONDS: /healthz answers "ok" and /metrics its
# families within 1 s, each every 0.25 s for SECONDS; prints the slowest
# answer of each in ms
answers_meanwhile() {
        local end=$(($(date +%s) + $1)) worst_h=0 worst_m=0 t0 ms body
        while [ "$(date +%s)" -lt "$end" ]; do
                t0=$(date +%s%N)
                body=$(curl -s --max-time 1 "http://127.0.0.1:$PORT/healthz" || true)
                ms=$((($(date +%s%N) - t0) / 1000000))
                [ "$body" = ok ] || {
                        echo "/healthz: no answer within 1 s"
                        return 1
                }
                [ "$ms" -le "$worst_h" ] || worst_h=$ms
                t0=$(date +%s%N)
                body=$(curl -s --max-time 1 "http://127.0.0.1:$PORT/metrics" || true)
                ms=$((($(date +%s%N) - t0) / 1000000))
                grep -q '^aicr_enroot_config_current ' <<<"$body" || {
                        echo "/metrics: no answer within 1 s"
                        return 1
                }
                [ "$ms" -le "$worst_m" ] || worst_m=$ms
                sleep 0.25
        done
        echo "/healthz $worst_h ms, /metrics $worst_m ms"
}

AGENT_WRAPPER=(unshare -m --propagation private)
start_agent "$WORK/agent.log" --desired-dir "$cm" --running-root "$root" || {
        finish
        exit 1
}
wait_for 5 pod_is current && pass || fail "not current at start: $(status)"

# --- a server that takes each request and never answers ---------------------
hang --take
kill -HUP "$AGENT_PID"
if worst=$(answers_meanwhile 7); then
        pass
        echo "while the read waits, slowest answers: $worst" >&2
else
        # every later look would wait out its own timeout: stop here
        fail "while a running file's read waited: $worst"
        finish
        exit 1
fi
if wait_for 5 file_is 0 unreadable; then pass; else
        fail "hung enroot.conf: state $(status | jq -c '.files[0]')"
fi
detail=$(status | jq -r '.files[0].detail')
grep -q 'no answer from the file system within 5 s' <<<"$detail" && pass ||
        fail "hung enroot.conf: detail \"$detail\""
[ "$(status | jq -r '.files[1].state')" = unreadable ] && pass ||
        fail "the other file: $(status | jq -c '.files[1]')"
detail=$(status | jq -r '.files[1].detail')
grep -q 'not read: the read of another running file waits' <<<"$detail" && pass ||
        fail "the other file: detail \"$detail\""
grep -q 'No answer from the file system within 5 s while reading /etc/enroot/enroot.conf' \
        "$AGENT_LOG" && pass || fail "no log line names the hung path: $(tail -5 "$AGENT_LOG")"
[ "$(status | jq -r .pod)" = unknown ] && pass || fail "pod state while hung: $(status | jq -r .pod)"
metrics=$(curl -sf --max-time 2 "http://127.0.0.1:$PORT/metrics" || true)
grep -q '^aicr_enroot_config_state{file="enroot.conf",state="unreadable"} 1$' <<<"$metrics" &&
        pass || fail "/metrics does not say enroot.conf is unreadable"
if [ -n "${PROMTOOL:-}" ]; then
        promtool_out=$("$PROMTOOL" check metrics <<<"$metrics" 2>&1) && pass ||
                fail "promtool check metrics: $promtool_out"
fi
t0=$(date +%s%N)
rc=0
"$AGENT" --check --listen "127.0.0.1:$PORT" >"$WORK/check.out" 2>&1 || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -lt 2000 ] && pass || fail "--check took $ms ms while the read waited"
# The default readiness asks for a known ConfigMap and a live agent, not a
# current pod (docs/OPERATIONS.md): it answers, naming what it cannot read.
grep -q 'unknown' "$WORK/check.out" && grep -q 'unreadable' "$WORK/check.out" && pass ||
        fail "--check while hung: exit $rc, $(cat "$WORK/check.out")"

# one read at a time: nothing more reaches the hung mount, no thread is added
taken=$(requests)
[ "$taken" = 1 ] && pass || fail "requests taken by the hung mount: $taken, expected 1"
n_threads=$(threads)
before=$(desired_version)
for _ in 1 2 3 4 5; do
        kill -HUP "$AGENT_PID"
        sleep 0.2
done
# a new ConfigMap version (its other file changes on both sides, as a pod
# replacement would bring)
publish 'ENROOT_MOUNT_HOME=yes\n' 'NCCL_DEBUG=INFO\n'
cp "$WORK/src/99-aicr-defaults.env" "$root/etc/enroot/environ.d/"
# the desired side is still followed
if wait_for 5 sh -c '[ "$(curl -sf --max-time 2 http://127.0.0.1:'"$PORT"'/status | jq -r .desired_version)" != "'"$before"'" ]'; then
        pass
else
        fail "the ConfigMap update was not seen while the running read waited"
fi
sleep 1
[ "$(requests)" = 1 ] && pass || fail "reads piled up on the hung mount: $(requests) requests"
[ "$(threads)" = "$n_threads" ] && pass || fail "threads: $(threads), were $n_threads"
file_is 0 unreadable && pass || fail "enroot.conf not unreadable after more looks"

# the server dies: the stale read is dropped and the file read again
kill_fuse
if wait_for 10 grep -q 'The file system answered after' "$AGENT_LOG"; then pass; else
        fail "no log line says the file system answered: $(tail -5 "$AGENT_LOG")"
fi
if wait_for 5 sh -c "curl -sf --max-time 2 http://127.0.0.1:$PORT/status | jq -r '.files[0].detail' | grep -q 'not connected'"; then
        pass
else
        fail "after the server died: $(status | jq -c '.files[0]')"
fi
file_is 1 current && pass || fail "the other file after the server died: $(status | jq -c '.files[1]')"
unhang
kill -HUP "$AGENT_PID"
wait_for 5 pod_is current && pass || fail "not current once the mount is gone: $(status | jq -c .files)"

# --- SIGTERM while the read waits ----------------------------------------------
# A request still queued in the kernel (the server stopped reading) gives
# way: the agent exits 0 at once.
hang
kill -HUP "$AGENT_PID"
wait_for 10 file_is 0 unreadable && pass || fail "queued request: not unreadable: $(status | jq -c '.files[0]')"
kill -TERM "$AGENT_PID"
rc=0
if wait_for 5 gone "$AGENT_PID"; then
        wait "$AGENT_PID" || rc=$?
        [ "$rc" = 0 ] && pass || fail "the agent exited $rc after SIGTERM while a read waited"
else
        fail "the agent did not exit within 5 s of SIGTERM while a read waited"
fi
AGENT_PID=
kill_fuse

# A request the server took: the kernel holds the reader until the
# connection is aborted; the agent exits 0 as soon as it is.
start_agent "$WORK/agent2.log" --desired-dir "$cm" --running-root "$root" || {
        finish
        exit 1
}
wait_for 5 pod_is current && pass || fail "second agent: not current at start"
hang --take
kill -HUP "$AGENT_PID"
wait_for 10 file_is 0 unreadable && pass || fail "taken request: not unreadable"
kill -TERM "$AGENT_PID"
wait_for 5 grep -q 'stopping' "$AGENT_LOG" && pass || fail "no 'stopping' after SIGTERM"
kill_fuse
rc=0
if wait_for 5 gone "$AGENT_PID"; then
        wait "$AGENT_PID" || rc=$?
        [ "$rc" = 0 ] && pass || fail "the agent exited $rc once the hung mount was aborted"
else
        fail "the agent did not exit within 5 s of its FUSE server's death"
fi
AGENT_PID=

finish
