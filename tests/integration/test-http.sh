#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What the daemon serves, from outside the process: the committed metrics
# samples under the real promtool, and `aicr-enroot-agent --check` as kubelet
# runs it (exit status, one line, its cost). The server itself is tested over
# real sockets by tests/unit/test-httpd (every endpoint, hostile and slow
# clients, limits); the running daemon end to end by test-daemon.sh.
. "$(dirname "$0")/lib.sh"

# --- promtool on every committed exposition sample ---------------------------
tool=${PROMTOOL:-$(command -v promtool || true)}
[ -n "$tool" ] || skip no-promtool "promtool is not installed (scripts/setup-deps.sh installs prometheus)"
for f in "$TEST_DATA_DIR"/metrics/*.prom; do
        if out=$("$tool" check metrics <"$f" 2>&1) && [ -z "$out" ]; then
                pass
        else
                fail "promtool check metrics $(basename "$f"): $out"
        fi
done

# --- --check ------------------------------------------------------------------
if ! "$AGENT" --help 2>&1 | grep -q -- '--check'; then
        finish || exit 1
        skip no-check-option "aicr-enroot-agent has no --check option yet: the probe was not run"
fi

# Port 1 (tcpmux) is closed everywhere this runs: nothing answers.
expect_status 1 "$AGENT" --check --listen 127.0.0.1:1
if [ "$(cat "$WORK/out")" = "not ready: cannot connect to 127.0.0.1:1: Connection refused" ]; then
        pass
else
        fail "--check against a closed port printed: $(cat "$WORK/out") $(cat "$WORK/err")"
fi
[ "$(wc -l <"$WORK/out")" -eq 1 ] && pass || fail "--check printed more than one line"

# A wildcard listen address is asked on loopback.
expect_status 1 "$AGENT" --check --listen :1 --require-current
grep -qx 'not ready: cannot connect to 127.0.0.1:1: Connection refused' "$WORK/out" && pass ||
        fail "--check --listen :1 printed: $(cat "$WORK/out")"

# Its memory, as kubelet pays it every period in every pod. (Its time is
# measured by `make bench`, tests/bench/check.sh, against a running agent:
# a bound here would measure the machine the tests run on.)
if [ -x /usr/bin/time ]; then
        /usr/bin/time -f '%e %M' -o "$WORK/time" "$AGENT" --check --listen 127.0.0.1:1 \
                >/dev/null 2>&1 || true
        # the last line: time(1) writes "Command exited with non-zero status 1" first
        read -r secs kib < <(tail -n 1 "$WORK/time")
        printf 'test-http: --check took %s s, max RSS %s KiB\n' "$secs" "$kib"
        # sanitizer builds map shadow memory: only a plain build's RSS means anything
        if grep -q __asan_init "$AGENT"; then
                skip_part sanitizer-memory-bound "sanitizer build (shadow memory): the --check memory bound is not checked"
        else
                [ "$kib" -lt 20480 ] && pass || fail "--check used $kib KiB"
        fi
else
        skip_part no-time "no /usr/bin/time (scripts/setup-deps.sh installs time): the cost of --check is not measured"
fi

finish
