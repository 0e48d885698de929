#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Files under attack, through the running daemon: symlink loops, a FIFO and a
# device where a file should be, a 1 GiB (sparse) file, permission denied, and
# the ConfigMap directory deleted and made again. For each: the file's state
# and a detail that says what is wrong in /status, a log line, the event loop
# still turning (/healthz answers at once, a SIGHUP evaluation completes: no
# read ever blocks), and the agent back to current once the file is repaired.
# test-daemon.sh covers the FIFO and the missing file on the running side and
# a ..data pointing outside the volume; the module-level cases are in
# tests/unit/test-volume.c and test-running.c.
. "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip no-curl "curl is not installed (scripts/setup-deps.sh installs it)"
command -v jq >/dev/null || skip no-jq "jq is not installed (scripts/setup-deps.sh installs it)"
WRITER="$TOP_SRCDIR/tests/tools/atomic-writer.sh"

cm=$WORK/cm
root=$WORK/root
run=$root/etc/enroot/enroot.conf
mkdir -p "$cm" "$root/etc/enroot/environ.d" "$WORK/src"
printf 'ENROOT_MOUNT_HOME=yes\nENROOT_REMAP_ROOT=yes\n' >"$WORK/src/enroot.conf"
printf 'NCCL_DEBUG=WARN\n' >"$WORK/src/99-aicr-defaults.env"
cp "$WORK/src/enroot.conf" "$run"
cp "$WORK/src/99-aicr-defaults.env" "$root/etc/enroot/environ.d/"
publish() {
        bash "$WRITER" "$cm" "$@" enroot.conf="$WORK/src/enroot.conf" \
                99-aicr-defaults.env="$WORK/src/99-aicr-defaults.env" >/dev/null
}
publish

trap 'stop_agent; rm -rf "$WORK"' EXIT
# start LOG ARGS...: the daemon, polling a lost directory every second
start() {
        start_agent "$1" --poll-interval 1 --resync-interval 3600 "${@:2}"
}
status() { curl -sf --max-time 5 "http://127.0.0.1:$PORT/status"; }
evaluations() {
        curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics" |
                awk '/^aicr_enroot_agent_evaluations_total\{trigger="signal"\}/ { print $2 }'
}
evaluations_above() { [ "$(evaluations)" -gt "$1" ]; }
pod_is() { [ "$(status | jq -r .pod)" = "$1" ]; }
desired_unobservable() { [ "$(status | jq -r .observable.desired)" = false ]; }
# file_is N STATE: /status says file N is in STATE
file_is() { [ "$(status | jq -r ".files[$1].state")" = "$2" ]; }
# begin: a case starts, before it changes any file (the agent may see the
# change at once): its log lines are those after the log's size now, so a
# line an earlier case logged never answers for a later one. The agent logs a
# file's state when it changes (state or detail), so each case starts from
# files in another state, most from current ones.
# logged_since OFFSET PATTERN: a line after byte OFFSET matches PATTERN (grep -E).
case_offset=
begin() { case_offset=$(stat -c %s "$AGENT_LOG"); }
logged_since() { tail -c +$(($1 + 1)) "$AGENT_LOG" | grep -Eq -- "$2"; }

# expect CASE FILE STATE DETAIL-PATTERN LOG-PATTERN: after a SIGHUP, file FILE
# (0 enroot.conf, 1 the env file) is in STATE with a detail matching
# DETAIL-PATTERN (grep -E), the log says LOG-PATTERN in a line written since
# the case's begin, and the agent still serves at once.
expect() {
        local what=$1 n=$2 state=$3 detail=$4 logpat=$5 before t0 ms offset=$case_offset
        case_offset=
        [ -n "$offset" ] || { fail "$what: the test did not call begin before the case"; offset=0; }
        before=$(evaluations)
        t0=$(date +%s%N)
        kill -HUP "$AGENT_PID"
        # the evaluation completes: no read blocked the loop
        if wait_for 5 evaluations_above "$before"; then
                pass
        else
                fail "$what: the SIGHUP evaluation did not complete within 5 s"
        fi
        ms=$((($(date +%s%N) - t0) / 1000000))
        if wait_for 5 file_is "$n" "$state"; then pass; else
                fail "$what: state $(status | jq -r ".files[$n].state"), expected $state"
        fi
        got=$(status | jq -r ".files[$n].detail")
        if grep -Eq -- "$detail" <<<"$got"; then pass; else
                fail "$what: detail \"$got\" does not match /$detail/"
        fi
        if wait_for 2 logged_since "$offset" "$logpat"; then pass; else
                fail "$what: no log line matching /$logpat/ since the case began: $(tail -c +$((offset + 1)) "$AGENT_LOG" | tail -3)"
        fi
        if [ "$(curl -s --max-time 1 "http://127.0.0.1:$PORT/healthz")" = ok ]; then pass; else
                fail "$what: /healthz did not answer within 1 s"
        fi
        kill -0 "$AGENT_PID" 2>/dev/null && pass || fail "$what: the agent died"
        printf '%s: evaluated in %d ms\n' "$what" "$ms" >&2
}
# repaired CASE: after the repair (and a SIGHUP), both files are current again
repaired() {
        kill -HUP "$AGENT_PID"
        if wait_for 5 pod_is current; then
                pass
        else
                fail "$1: not current again after the repair: $(status | jq -c '.files')"
        fi
}

start "$WORK/agent.log" --desired-dir "$cm" --running-root "$root" || { finish; exit 1; }
rss_before=$(awk '$1 == "Rss:" { print $2 }' "/proc/$AGENT_PID/smaps_rollup")

# --- symlink loops ------------------------------------------------------------
begin
mv "$run" "$WORK/saved.conf"
ln -s enroot.conf "$run"
expect "running file is a link to itself" 0 unreadable 'link loop' 'enroot.conf: unreadable .*link loop'
rm "$run"
cp "$WORK/saved.conf" "$run"
repaired "running link to itself"
begin
rm "$run"
ln -s loop-b "$run" && ln -s enroot.conf "$root/etc/enroot/loop-b"
expect "running file in a two-link loop" 0 unreadable 'link loop' 'enroot.conf: unreadable .*link loop'
rm "$run" "$root/etc/enroot/loop-b"
mv "$WORK/saved.conf" "$run"
repaired "running link loops"

version=$(readlink "$cm/..data")
begin
ln -s ..data "$cm/..data_tmp" && mv -T "$cm/..data_tmp" "$cm/..data"
expect "..data is a link to itself" 0 unreadable 'link loop' 'Cannot read the ConfigMap directory'
[ "$(status | jq -r '.observable.desired')" = false ] && pass || fail "..data loop: desired still observable"
ln -s "$version" "$cm/..data_tmp" && mv -T "$cm/..data_tmp" "$cm/..data"
repaired "..data loop"

# --- a FIFO and a device in the ConfigMap's version directory ------------------
key=$cm/$version/enroot.conf
begin
rm "$key"
mkfifo "$key"
expect "ConfigMap key is a FIFO" 0 unreadable 'not a regular file' 'enroot.conf: unreadable \(ConfigMap key'
rm "$key"
cp "$WORK/src/enroot.conf" "$key"
repaired "ConfigMap key FIFO"
begin
rm "$key"
if mknod "$key" c 1 5 2>/dev/null; then # /dev/zero's numbers: endless if read
        expect "ConfigMap key is a device" 0 unreadable 'not a regular file' 'enroot.conf: unreadable \(ConfigMap key'
        rm "$key"
        cp "$WORK/src/enroot.conf" "$key"
        begin
        mknod "$run.dev" c 1 5
        mv "$run" "$WORK/saved.conf"
        mv "$run.dev" "$run"
        expect "running file is a device" 0 unreadable 'not a regular file' 'enroot.conf: unreadable \(/etc/enroot/enroot.conf'
        rm "$run"
        mv "$WORK/saved.conf" "$run"
else
        skip_part no-mknod "mknod is not permitted here: the device cases did not run"
fi
rm -f "$key"
cp "$WORK/src/enroot.conf" "$key"
repaired "FIFO and device"

# --- a FIFO with a writer waiting where the running file should be --------------
# A reader's open(2) would release the writer's: the agent must not open it.
begin
mv "$run" "$WORK/saved.conf"
mkfifo "$run"
(exec 3>"$run" && : >"$WORK/fifo-opened") &
writer=$!
expect "running file is a FIFO with a writer waiting" 0 unreadable 'not a regular file' \
        'enroot.conf: unreadable \(/etc/enroot/enroot.conf'
sleep 0.2
[ ! -e "$WORK/fifo-opened" ] && pass || fail "the agent opened the running FIFO: its writer's open returned"
# Release the writer (a writer that is done would leave this open blocked: it
# holds the FIFO open until it has made its file).
if [ ! -e "$WORK/fifo-opened" ]; then
        exec 4<"$run"
        exec 4<&-
fi
wait "$writer" || true
rm "$run"
mv "$WORK/saved.conf" "$run"
repaired "running FIFO with a writer"

# --- a 1 GiB file (sparse): refused unread, at once ---------------------------
begin
truncate -s 1G "$key.big" && mv "$key.big" "$key"
expect "ConfigMap key of 1 GiB" 0 unreadable 'larger than 1 MiB' 'enroot.conf: unreadable .*larger than 1 MiB'
cp "$WORK/src/enroot.conf" "$key"
begin
mv "$run" "$WORK/saved.conf"
truncate -s 1G "$run"
expect "running file of 1 GiB" 0 unreadable 'larger than 1 MiB' 'enroot.conf: unreadable \(/etc/enroot.*larger than 1 MiB'
rm "$run"
mv "$WORK/saved.conf" "$run"
repaired "1 GiB files"
rss_after=$(awk '$1 == "Rss:" { print $2 }' "/proc/$AGENT_PID/smaps_rollup")
# a sanitizer build's shadow memory makes Rss meaningless
if grep -q __asan_init "$AGENT"; then
        skip_part sanitizer-memory-bound "sanitizer build (shadow memory): the memory bound is not checked"
else
        [ $((rss_after - rss_before)) -lt 4096 ] && pass ||
                fail "resident memory grew from $rss_before to $rss_after KiB (a large file was read?)"
fi

# --- the ConfigMap directory deleted, then made again --------------------------
begin
back_offset=$case_offset
case_offset=
rm -rf "$cm"
if wait_for 5 desired_unobservable; then
        pass
else
        fail "directory deleted: the desired side is still observable: $(status | jq -c .)"
fi
[ "$(status | jq -r '.files[0].detail')" = "ConfigMap key \"enroot.conf\" in $cm does not exist" ] &&
        pass || fail "directory deleted: detail $(status | jq -r '.files[0].detail')"
[ "$(curl -s --max-time 1 "http://127.0.0.1:$PORT/healthz")" = ok ] && pass || fail "/healthz, directory deleted"
expect_status 1 "$AGENT" --check --listen "127.0.0.1:$PORT"
grep -q 'desired side' "$WORK/out" && pass || fail "--check, directory deleted: $(cat "$WORK/out")"
mkdir "$cm"
publish
# the watcher looks for the path every --poll-interval (1 s here)
if wait_for 10 pod_is current; then
        pass
else
        fail "directory made again: not current: $(status | jq -c .)"
fi
wait_for 2 logged_since "$back_offset" "is back" && pass ||
        fail "no log line for the directory coming back: $(tail -3 "$AGENT_LOG")"
# and it is watched again: an update is seen without a signal
printf 'ENROOT_MOUNT_HOME=no\n' >"$WORK/src/enroot.conf"
publish
if wait_for 5 file_is 0 drifted; then pass; else fail "no update seen after the directory came back"; fi
printf 'ENROOT_MOUNT_HOME=yes\nENROOT_REMAP_ROOT=yes\n' >"$WORK/src/enroot.conf"
publish
stop_agent

# --- kernel files where a running file should be: never read ------------------
# Running root "/": a link to /proc/self/environ is the agent's own
# environment, a secret among it; a file of sysfs is kernel state.
mkdir -p "$WORK/kernel/environ.d"
ln -s /proc/self/environ "$WORK/kernel/enroot.conf"
cp "$WORK/src/99-aicr-defaults.env" "$WORK/kernel/environ.d/"
AGENT_WRAPPER=(env AICR_TEST_SECRET_TOKEN=s3cr3t-value)
start "$WORK/kernel.log" --desired-dir "$cm" --file "enroot.conf=$WORK/kernel/enroot.conf" \
        --file "99-aicr-defaults.env=$WORK/kernel/environ.d/99-aicr-defaults.env" || { finish; exit 1; }
AGENT_WRAPPER=()
case_offset=0 # the case began with this agent and its new log
expect "running file is a link to /proc/self/environ" 0 unreadable \
        'is on procfs or sysfs \(kernel state, not a file\); refusing to read it' \
        'enroot.conf: unreadable .*refusing to read it'
curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics" >"$WORK/kernel.metrics"
status >"$WORK/kernel.status"
if grep -q 'AICR_TEST_SECRET\|s3cr3t' "$WORK/kernel.status" "$WORK/kernel.metrics" "$WORK/kernel.log"; then
        fail "the agent's environment leaked: $(grep -h 'AICR_TEST_SECRET\|s3cr3t' "$WORK/kernel.status" "$WORK/kernel.metrics" "$WORK/kernel.log" | head -3)"
else
        pass
fi
[ "$(status | jq -r '.files[0].sha256.running')" = null ] && pass ||
        fail "a hash of /proc/self/environ was published: $(status | jq -c '.files[0].sha256')"
if [ -e /sys/kernel/uevent_seqnum ]; then
        rm "$WORK/kernel/enroot.conf"
        cp "$WORK/src/enroot.conf" "$WORK/kernel/enroot.conf"
        repaired "running file of procfs"
        begin
        ln -sfn /sys/kernel/uevent_seqnum "$WORK/kernel/enroot.conf"
        expect "running file is a link into sysfs" 0 unreadable 'is on procfs or sysfs' \
                'enroot.conf: unreadable .*refusing to read it'
else
        skip_part no-sysfs "no /sys/kernel/uevent_seqnum: a link into sysfs is not tried"
fi
stop_agent

# --- permission denied ---------------------------------------------------------
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
        chmod 755 "$WORK"
        AGENT_WRAPPER=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
        : >"$WORK/nobody.log"
        chown 65534 "$WORK/nobody.log"
        start "$WORK/nobody.log" --desired-dir "$cm" --running-root "$root" || { finish; exit 1; }
        AGENT_WRAPPER=()
        begin
        chmod 600 "$run"
        expect "running file unreadable (mode 0600, another owner)" 0 unreadable \
                'Permission denied|permission' 'enroot.conf: unreadable \(/etc/enroot/enroot.conf'
        chmod 644 "$run"
        repaired "running permission"
        # a new version whose keys the agent's uid cannot read (defaultMode 0600)
        printf 'NCCL_DEBUG=WARN\n# now 0600\n' >"$WORK/src/99-aicr-defaults.env"
        publish --mode 0600
        if wait_for 5 file_is 1 unreadable; then pass; else
                fail "ConfigMap keys of mode 0600: state $(status | jq -r '.files[1].state')"
        fi
        grep -Eq 'Permission denied|permission' <<<"$(status | jq -r '.files[1].detail')" && pass ||
                fail "ConfigMap keys of mode 0600: detail $(status | jq -r '.files[1].detail')"
        [ "$(curl -s --max-time 1 "http://127.0.0.1:$PORT/healthz")" = ok ] && pass ||
                fail "/healthz, permission denied"
        stop_agent
else
        skip_part no-setpriv-as-root "not root or no setpriv: the permission cases did not run"
fi

finish
