# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Shared by the HTTP abuse tests (test-http-abuse.sh, test-http-slowloris.sh,
# test-http-limit-recovery.sh): sourced after lib.sh, never run. Starts the
# daemon on a current pod and gives the helpers those tests use; the hostile
# clients are tests/tools/http-abuse (HTTP_ABUSE).
command -v curl >/dev/null || skip no-curl "curl is not installed (scripts/setup-deps.sh installs it)"
ABUSE=${HTTP_ABUSE:-$(dirname "$AGENT")/tests/tools/http-abuse}
[ -x "$ABUSE" ] || skip no-http-abuse "http-abuse is not built ($ABUSE): add it to check_PROGRAMS"

cm=$WORK/cm
root=$WORK/root
mkdir -p "$cm" "$root/etc/enroot/environ.d" "$WORK/src"
printf 'ENROOT_MOUNT_HOME=yes\nENROOT_REMAP_ROOT=yes\n' >"$WORK/src/enroot.conf"
printf 'NCCL_DEBUG=WARN\n' >"$WORK/src/99-aicr-defaults.env"
cp "$WORK/src/enroot.conf" "$root/etc/enroot/enroot.conf"
cp "$WORK/src/99-aicr-defaults.env" "$root/etc/enroot/environ.d/"
bash "$TOP_SRCDIR/tests/tools/atomic-writer.sh" "$cm" enroot.conf="$WORK/src/enroot.conf" \
        99-aicr-defaults.env="$WORK/src/99-aicr-defaults.env" >/dev/null

AGENT_PID=
ABUSE_PIDS=()
abuse_cleanup() {
        local p
        for p in "${ABUSE_PIDS[@]}" $AGENT_PID; do
                kill "$p" 2>/dev/null || true
                wait "$p" 2>/dev/null || true
        done
        rm -rf "$WORK"
}
trap abuse_cleanup EXIT

"$AGENT" --listen 127.0.0.1:0 --resync-interval 3600 --desired-dir "$cm" --running-root "$root" \
        >"$WORK/agent.log" 2>&1 &
AGENT_PID=$!
PORT=
for _ in $(seq 1 400); do
        PORT=$(sed -n 's/.*Serving .* on 127\.0\.0\.1:\([0-9]*\)\..*/\1/p' "$WORK/agent.log")
        [ -n "$PORT" ] && break
        kill -0 "$AGENT_PID" 2>/dev/null || break
        sleep 0.05
done
[ -n "$PORT" ] || { cat "$WORK/agent.log" >&2; fail "the agent did not start"; finish; exit 1; }
for _ in $(seq 1 400); do
        "$AGENT" --check --listen "127.0.0.1:$PORT" >/dev/null 2>&1 && break
        sleep 0.05
done

# mem FIELD: Rss or Anonymous of the agent, KiB
mem() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$AGENT_PID/smaps_rollup"; }
# kv KEY LINE: the value of KEY=VALUE in LINE
kv() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" <<<" $2"; }
# abuse ARGS...: runs http-abuse against the agent, output in $WORK/abuse;
# skips the whole test when this machine cannot run it (exit 77)
abuse() {
        local rc=0
        "$ABUSE" --port "$PORT" "$@" >"$WORK/abuse" 2>"$WORK/abuse-err" || rc=$?
        if [ "$rc" = 77 ]; then
                [ "$failures" -eq 0 ] || finish
                skip http-abuse-cannot-run "http-abuse cannot run here: $(cat "$WORK/abuse-err")"
        fi
        [ "$rc" = 0 ] || fail "http-abuse $* exited $rc: $(cat "$WORK/abuse-err")"
        printf 'http-abuse %s:\n%s\n' "$*" "$(cat "$WORK/abuse")" >&2
}
# probe_ok FILE MAX_MS WHAT: the probe in http-abuse output FILE always
# answered, each time within MAX_MS
probe_ok() {
        local line max
        line=$(grep '^probe ' "$1")
        max=$(kv max_ms "$line")
        if [ "$(kv failed "$line")" = 0 ] && [ "$(kv n "$line")" -gt 0 ] &&
                awk -v m="$max" -v b="$2" 'BEGIN { exit !(m < b) }'; then
                pass
        else
                fail "$3: /healthz from another address: $line (bound ${2} ms)"
        fi
}
# alive WHAT: the agent runs and answers /healthz within a second, asked from
# an address no abuse scenario uses
alive() {
        if kill -0 "$AGENT_PID" 2>/dev/null &&
                [ "$(curl -s --max-time 1 --interface 127.0.0.3 "http://127.0.0.1:$PORT/healthz")" = ok ]; then
                pass
        else
                fail "$1: the agent no longer answers /healthz within 1 s"
        fi
}
