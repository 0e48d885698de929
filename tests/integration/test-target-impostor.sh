#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# --target-process against impostors, through the daemon as
# container/kubernetes/agent/target-process/ runs it: in a login pod any user
# can start a process named like the target inside `unshare -Urm`, root in a
# user namespace of its own, with an enroot.conf of their own bind-mounted
# where the real one is; started before the real target, it has the lower
# PID. Another runs under another uid. The agent must read the real target's
# files, say in one warning which PIDs it ignored and why (once, not at every
# resync), and report nothing when only impostors are left.
# The real target's enroot.conf is bind-mounted, as a subPath is, from a
# directory whose name holds a newline and an escape sequence (the kernel
# writes them into mountinfo as \012 and a raw ESC): no control byte from
# it reaches the log, /status or /metrics, and its version is unknown.
. "$(dirname "$0")/lib.sh"

for c in curl jq setpriv unshare; do
        command -v "$c" >/dev/null || skip "no-$c" "$c is not installed (scripts/setup-deps.sh installs it)"
done
: "${TOP_SRCDIR:?run through make check}"
[ "$(id -u)" = 0 ] || skip not-root "starting processes of other uids and in other namespaces needs root"
unshare -m --propagation private true 2>"$WORK/unshare-err" ||
        skip no-mount-namespace "cannot create a private mount namespace ($(cat "$WORK/unshare-err"))"
unshare -Urm true 2>"$WORK/unshare-err" ||
        skip no-user-namespace "cannot create a user namespace ($(cat "$WORK/unshare-err"))"

started=()
cleanup() {
        local p
        stop_agent
        for p in "${started[@]}"; do
                kill -9 "$p" 2>/dev/null || true
        done
        wait 2>/dev/null || true
        rm -rf "$WORK"
}
trap cleanup EXIT
chmod 755 "$WORK"

# A name of our own (15 bytes at most): other tests may run an "sshd".
NAME="sshd$$"
NAME=${NAME:0:15}
mkdir -p "$WORK/bin" "$WORK/run/environ.d" "$WORK/evil/environ.d" "$WORK/src"
cp "$(command -v sleep)" "$WORK/bin/$NAME"
chmod 755 "$WORK/bin" "$WORK/bin/$NAME"
RUN=$WORK/run
cm=$WORK/cm
mkdir -p "$cm"
publish 'ENROOT_MOUNT_HOME=yes\n' 'NCCL_DEBUG=WARN\n'
cp "$WORK/src/enroot.conf" "$RUN/enroot.conf"
cp "$WORK/src/99-aicr-defaults.env" "$RUN/environ.d/99-aicr-defaults.env"
# what the impostors' files say: a drift the agent must not report
printf 'ENROOT_MOUNT_HOME=no\nENROOT_REMAP_ROOT=no\n' >"$WORK/evil/enroot.conf"
printf 'NCCL_DEBUG=INFO\n' >"$WORK/evil/environ.d/99-aicr-defaults.env"
chmod -R a+rX "$WORK/run" "$WORK/evil"

# A subPath-like source whose version directory kubelet would never name so.
BAD=$'..2026_12_02_14_00_00.1\nINJECTED aicr_enroot_config_current 1 \033[2J'
mkdir -p "$WORK/vol/$BAD"
cp "$WORK/src/enroot.conf" "$WORK/vol/$BAD/enroot.conf"

wait_comm() { # PID: until it runs as $NAME
        for _ in $(seq 100); do
                [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$NAME" ] && return 0
                kill -0 "$1" 2>/dev/null || return 1
                sleep 0.05
        done
        return 1
}
# start CMD...: in the background; $pid is the process that becomes $NAME
start() {
        "$@" &
        pid=$!
        started+=("$pid")
        wait_comm "$pid" || { fail "$* did not start as $NAME"; return 1; }
}

# The impostors first: lower PIDs.
# 1. root in a user namespace of its own, its own files where the real ones are
start unshare -Urm sh -c 'mount --bind "$1" "$2" && exec "$3" 1000' sh \
        "$WORK/evil" "$RUN" "$WORK/bin/$NAME"
in_userns=$pid
# 2. another uid, in the agent's user namespace
start setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$WORK/bin/$NAME" 1000
other_uid=$pid
# The real target: root, its enroot.conf a bind mount as kubelet's subPath makes it.
start_target() {
        start unshare -m --propagation private sh -c 'mount --bind "$1" "$2" && exec "$3" 1000' sh \
                "$WORK/vol/$BAD/enroot.conf" "$RUN/enroot.conf" "$WORK/bin/$NAME"
        target=$pid
}
start_target
[ "$in_userns" -lt "$target" ] && [ "$other_uid" -lt "$target" ] && pass ||
        fail "the impostors ($in_userns, $other_uid) did not get lower PIDs than the target ($target)"

status() { curl -sf "http://127.0.0.1:$PORT/status"; }
metrics() { curl -sf "http://127.0.0.1:$PORT/metrics"; }
pod_is() { [ "$(status | jq -r .pod)" = "$1" ]; }
warnings() { grep -c "Ignoring a process of the target's name" "$AGENT_LOG" || true; }

start_agent "$WORK/agent.log" --desired-dir "$cm" --target-process "$NAME" \
        --file "enroot.conf=$RUN/enroot.conf" \
        --file "99-aicr-defaults.env=$RUN/environ.d/99-aicr-defaults.env" \
        --resync-interval 1 || { finish; exit 1; }

# --- the real target's files, not the impostors' --------------------------------
if wait_for 5 pod_is current; then pass; else
        fail "pod is $(status | jq -r .pod), expected current (the impostor's files read?): $(status | jq -c .files)"
fi
[ "$(metrics | awk '/^aicr_enroot_config_current / { print $2 }')" = 1 ] && pass ||
        fail "aicr_enroot_config_current is not 1"
grep -q "Ignoring a process of the target's name: PID $in_userns: it is in another user namespace" \
        "$AGENT_LOG" && pass || fail "the impostor in a user namespace is not named: $(grep -i ignor "$AGENT_LOG")"
grep -q "PID $other_uid: it runs as uid 65534" "$AGENT_LOG" && pass ||
        fail "the impostor of another uid is not named: $(grep -i ignor "$AGENT_LOG")"
grep -q "Only a process in the agent's user namespace with uid 0 is read as \"$NAME\"" "$AGENT_LOG" &&
        pass || fail "the warning does not say what is read"

# --- said once, not at every resync ------------------------------------------------
sleep 2.5
[ "$(warnings)" = 1 ] && pass || fail "the warning was logged $(warnings) times in 2.5 s of resyncs"

# --- only impostors left: nothing read, no new warning ------------------------------
kill -9 "$target"
wait "$target" 2>/dev/null || true
if wait_for 5 grep -q "no process named \"$NAME\" runs as uid 0 in the agent's user namespace (2 of that name ignored" "$AGENT_LOG"; then
        pass
else
        fail "no sentence for a target with only impostors left: $(tail -3 "$AGENT_LOG")"
fi
[ "$(status | jq -r '.observable.running')" = false ] && pass ||
        fail "running side observable with only impostors left: $(status | jq -c .)"
[ "$(status | jq -r '.files[0].state')" = unknown ] && pass ||
        fail "enroot.conf is $(status | jq -r '.files[0].state') with only impostors left"
sleep 1.5
[ "$(warnings)" = 1 ] && pass || fail "the warning was repeated ($(warnings) times) while nothing changed"

# --- the target comes back -----------------------------------------------------------
start_target
if wait_for 5 pod_is current; then pass; else
        fail "not current after the target came back: $(status | jq -c .files)"
fi

# --- no control byte from the mount table --------------------------------------------
[ "$(status | jq -r '.files[0].mount_version')" = null ] && pass ||
        fail "a version was taken from \"$BAD\": $(status | jq -c '.files[0]')"
grep -q "is mounted from \".*/vol/..2026_12_02_14_00_00.1?INJECTED aicr_enroot_config_current 1 ?\[2J/enroot.conf\", whose directory is not a kubelet version" "$AGENT_LOG" &&
        pass || fail "no note about the version directory: $(grep -a 'mounted from' "$AGENT_LOG")"
status >"$WORK/status.json"
metrics >"$WORK/metrics.txt"
for f in "$AGENT_LOG" "$WORK/status.json" "$WORK/metrics.txt"; do
        if LC_ALL=C grep -aq $'[\x01-\x09\x0b-\x1f\x7f]' "$f"; then
                fail "$(basename "$f") holds a control byte: $(LC_ALL=C grep -an $'[\x01-\x09\x0b-\x1f\x7f]' "$f" | cat -A | head -3)"
        else
                pass
        fi
        if grep -aq '^INJECTED' "$f"; then
                fail "$(basename "$f") holds a line made by the directory name: $(grep -a '^INJECTED' "$f" | head -2)"
        else
                pass
        fi
done
stop_agent

finish
