# SPDX-License-Identifier: Apache-2.0
# Shared by the integration tests: sourced, never run.
# make check exports AGENT, MODEL_DUMP, TOP_SRCDIR, TEST_DATA_DIR, PROMTOOL.
set -euo pipefail
export LC_ALL=C

: "${AGENT:?run through make check}"
: "${TEST_DATA_DIR:?run through make check}"

TEST_NAME=$(basename "$0" .sh)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/${TEST_NAME}.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

failures=0
checks=0

pass() { checks=$((checks + 1)); }
fail() {
        checks=$((checks + 1))
        failures=$((failures + 1))
        printf 'FAIL: %s\n' "$*" >&2
}
skip() {
        printf 'SKIP: %s\n' "$*" >&2
        exit 77
}
finish() {
        printf '%s: %d checks, %d failed\n' "$TEST_NAME" "$checks" "$failures"
        [ "$failures" -eq 0 ]
}

# expect_status WANT CMD...: runs CMD, stdout to $WORK/out, stderr to $WORK/err.
expect_status() {
        local want=$1 got=0
        shift
        "$@" >"$WORK/out" 2>"$WORK/err" || got=$?
        if [ "$got" -eq "$want" ]; then
                pass
        else
                fail "$* exited $got, expected $want; stderr: $(head -c 600 "$WORK/err")"
        fi
}

# expect_file_eq EXPECTED ACTUAL LABEL
expect_file_eq() {
        if cmp -s "$1" "$2"; then
                pass
        else
                fail "$3 differs from $(basename "$1"):"$'\n'"$(diff -u "$1" "$2" | head -40)"
        fi
}
