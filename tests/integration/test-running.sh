#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The running view (docs/DESIGN.md §3) against real processes, the real /proc and real
# bind mounts, through tests/tools/running-probe: a process found by name and
# its files read through /proc/PID/root, a restart followed, the pidfd waking
# on exit, the sentences for an absent or unreadable process, and kubelet's
# subPath mount superseded by an atomic-writer update (//deleted, st_nlink 0).
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"

PROBE=${RUNNING_PROBE:-$(dirname "$AGENT")/tests/tools/running-probe}
[ -x "$PROBE" ] || skip no-running-probe "running-probe is not built ($PROBE): add it to check_PROGRAMS"

# Every process started here is killed on exit, whatever happens.
started=()
cleanup() {
        local p
        for p in "${started[@]}"; do
                kill -9 "$p" 2>/dev/null || true
        done
        wait 2>/dev/null || true
        rm -rf "$WORK"
}
trap cleanup EXIT

# The workload process: a copy of sleep, so the kernel names it (comm) after
# the file, as it does for the real slurmd.
# A name of our own (at most 15 bytes, the kernel's comm): other tests run at
# the same time under make -j, and one of them may start a "slurmd".
NAME="slurmd$$"
NAME=${NAME:0:15}
mkdir -p "$WORK/bin" "$WORK/root/etc/enroot"
cp "$(command -v sleep)" "$WORK/bin/$NAME"
chmod 755 "$WORK" "$WORK/bin" "$WORK/root" "$WORK/root/etc" "$WORK/root/etc/enroot"
printf 'ENROOT_MOUNT_HOME=yes\n' >"$WORK/root/etc/enroot/enroot.conf"
chmod 644 "$WORK/root/etc/enroot/enroot.conf"
CONF="$WORK/root/etc/enroot/enroot.conf"

# wait_comm PID NAME: until the process runs under NAME (after its exec).
wait_comm() {
        for _ in $(seq 100); do
                [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] && return 0
                kill -0 "$1" 2>/dev/null || return 1
                sleep 0.05
        done
        return 1
}

# start CMD...: runs CMD in the background, records its PID in $pid.
start() {
        "$@" &
        pid=$!
        started+=("$pid")
        wait_comm "$pid" "$NAME" || { fail "process $* did not start as $NAME"; return 1; }
}

stop() {
        kill -9 "$1" 2>/dev/null || true
        wait "$1" 2>/dev/null || true
}

# probe ARGS...: the view in $WORK/view.
probe() {
        "$PROBE" "$@" >"$WORK/view" 2>"$WORK/probe-err" ||
                fail "running-probe $* failed: $(cat "$WORK/probe-err")"
}

# want KEY VALUE: the last probe printed KEY=VALUE.
want() {
        local got
        got=$(awk -v k="$1=" 'index($0, k) == 1 { print substr($0, length(k) + 1); exit }' \
                "$WORK/view")
        if [ "$got" = "$2" ]; then
                pass
        else
                fail "$1: got \"$got\", expected \"$2\""
        fi
}

# want_suffix KEY SUFFIX: the value of KEY ends with SUFFIX.
want_suffix() {
        local got
        got=$(awk -v k="$1=" 'index($0, k) == 1 { print substr($0, length(k) + 1); exit }' \
                "$WORK/view")
        if [ "${got%"$2"}" != "$got" ]; then
                pass
        else
                fail "$1: got \"$got\", expected it to end with \"$2\""
        fi
}

# --- found by name, read through /proc/PID/root ----------------------------
start "$WORK/bin/$NAME" 1000
a=$pid
probe --target "$NAME" "$CONF"
want view.observable 1
want view.pid "$a"
want view.pidfd 1
want view.resolve openat2
want file[0].error 0
want file[0].content 'ENROOT_MOUNT_HOME=yes\n'

# --- a restart is followed --------------------------------------------------
stop "$a"
start "$WORK/bin/$NAME" 1000
b=$pid
probe --target "$NAME" --last-pid "$a" "$CONF"
want view.observable 1
want view.pid "$b"

# --- the pidfd wakes the caller when the process exits ----------------------
"$PROBE" --target "$NAME" --wait-exit 10 "$CONF" >"$WORK/wait" 2>&1 &
waiter=$!
started+=("$waiter")
for _ in $(seq 100); do
        grep -q '^view.waiting=1' "$WORK/wait" && break
        sleep 0.05
done
t0=$(date +%s%N)
stop "$b"
wait "$waiter" || true
t1=$(date +%s%N)
if grep -q '^view.exited=1' "$WORK/wait"; then
        pass
else
        fail "pidfd did not report the exit: $(cat "$WORK/wait")"
fi
printf 'pidfd wake-up after kill: %d ms\n' $(((t1 - t0) / 1000000)) >&2

# --- absent: a sentence that says what to check -----------------------------
probe --target "$NAME" --last-pid "$b" "$CONF"
want view.observable 0
want view.error ESRCH
want view.pid 0
want view.detail "no process named \"$NAME\" in this PID namespace: is shareProcessNamespace: true set on the pod?"
want file[0].error ESRCH

# --- permissions: another uid needs CAP_SYS_PTRACE, the same uid does not ----
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
        asnobody=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
        start "$WORK/bin/$NAME" 1000
        c=$pid
        probe_as_nobody() {
                "${asnobody[@]}" "$PROBE" "$@" >"$WORK/view" 2>"$WORK/probe-err" ||
                        fail "running-probe as nobody failed: $(cat "$WORK/probe-err")"
        }
        probe_as_nobody --target "$NAME" "$CONF"
        want view.observable 0
        want view.error EACCES
        want view.pid "$c"
        want view.detail "cannot open /proc/$c/root: Permission denied: the agent needs the same uid as the process or CAP_SYS_PTRACE"
        stop "$c"

        start "${asnobody[@]}" "$WORK/bin/$NAME" 1000
        d=$pid
        # a process of another uid than the one named is not the target
        probe_as_nobody --target "$NAME" "$CONF"
        want view.observable 0
        want view.error ESRCH
        want view.detail "no process named \"$NAME\" runs as uid 0 in the agent's user namespace (1 of that name ignored: the log says why)"
        want view.warning "Ignoring a process of the target's name: PID $d: it runs as uid 65534 (real, effective, saved, filesystem: 65534 65534 65534 65534), not 0. Only a process in the agent's user namespace with uid 0 is read as \"$NAME\"."
        probe_as_nobody --target "$NAME" --target-uid 65534 "$CONF"
        want view.observable 1
        want view.pid "$d"
        want file[0].content 'ENROOT_MOUNT_HOME=yes\n'
        stop "$d"
else
        skip_part no-setpriv-as-root "not root or no setpriv: the uid checks did not run"
fi

# --- kubelet's subPath mount, superseded by an atomic-writer update ----------
# Needs a private mount namespace: root, and a runtime that allows it.
if ! unshare -m --propagation private true 2>"$WORK/unshare-err"; then
        [ "$failures" -eq 0 ] || finish
        skip no-mount-namespace "cannot create a private mount namespace ($(cat "$WORK/unshare-err")): bind-mount checks not run"
fi

V1=..2026_12_02_14_00_00.123456789
V2=..2026_12_02_14_05_00.987654321
VOL="$WORK/vol"
# kubelet's atomic writer: version directory, ..data flipped by rename(2),
# top-level links, then the old version removed.
kubelet_write() { # VERSION CONTENT [OLD]
        mkdir -p "$VOL/$1"
        printf '%s' "$2" >"$VOL/$1/enroot.conf"
        ln -sfn "$1" "$VOL/..data_tmp"
        mv -T "$VOL/..data_tmp" "$VOL/..data"
        ln -sfn ..data/enroot.conf "$VOL/enroot.conf"
        [ -z "${3:-}" ] || rm -r "${VOL:?}/$3"
}
kubelet_write "$V1" $'A=1\n'

# The workload: a container whose own mount namespace bind-mounts the subPath
# (what kubelet and the runtime do), read by us from outside: a sidecar.
# shellcheck disable=SC2016
in_container='mount --bind "$0" "$1" && exec "$2" 1000'
start unshare -m --propagation private -- sh -c "$in_container" \
        "$(readlink -f "$VOL/enroot.conf")" "$CONF" "$WORK/bin/$NAME"
e=$pid
probe --target "$NAME" "$CONF"
want view.observable 1
want view.pid "$e"
want file[0].content 'A=1\n'
want file[0].nlink 1
want file[0].mount_point 1
want file[0].mount_version "$V1"
want file[0].mount_deleted 0
# the root is relative to the filesystem's own root (/tmp may be a tmpfs)
want_suffix file[0].mount_root "/vol/$V1/enroot.conf"

# the mount is the container's, not ours
probe "$CONF"
want file[0].content 'ENROOT_MOUNT_HOME=yes\n'
want file[0].mount_point 0

kubelet_write "$V2" $'A=2\n' "$V1"
probe --target "$NAME" --last-pid "$e" "$CONF"
want view.pid "$e"
want file[0].content 'A=1\n'
want file[0].nlink 0
want file[0].mount_version "$V1"
want file[0].mount_deleted 1
want_suffix file[0].mount_root "/vol/$V1/enroot.conf//deleted"

# restarting the container re-resolves the subPath (Kubernetes >= 1.19)
stop "$e"
start unshare -m --propagation private -- sh -c "$in_container" \
        "$(readlink -f "$VOL/enroot.conf")" "$CONF" "$WORK/bin/$NAME"
f=$pid
probe --target "$NAME" --last-pid "$e" "$CONF"
want view.pid "$f"
want file[0].content 'A=2\n'
want file[0].nlink 1
want file[0].mount_version "$V2"
want file[0].mount_deleted 0
stop "$f"

# --- the agent inside the workload container: default mode ------------------
# shellcheck disable=SC2016
unshare -m --propagation private -- sh -c '
        mount --bind "$0" "$1" || exit 1
        "$2" --root "$3" /etc/enroot/enroot.conf >"$4/before" || exit 1
        rm -r "$5"
        "$2" --root "$3" /etc/enroot/enroot.conf >"$4/after"
' "$VOL/$V2/enroot.conf" "$CONF" "$PROBE" "$WORK/root" "$WORK" "$VOL/$V2" ||
        fail "default mode in a private mount namespace failed"
cp "$WORK/before" "$WORK/view"
want file[0].content 'A=2\n'
want file[0].mount_point 1
want file[0].mount_version "$V2"
want file[0].mount_deleted 0
cp "$WORK/after" "$WORK/view"
want file[0].content 'A=2\n'
want file[0].nlink 0
want file[0].mount_version "$V2"
want file[0].mount_deleted 1

finish
