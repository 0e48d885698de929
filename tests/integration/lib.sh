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

# expect_same_settings FILE WANT GOT: the differential tests' comparison of a
# reference's KEY=VALUE lines with model-dump's: the same keys, and the same
# value wherever the model knows it (it prints KEY=<dynamic> otherwise).
expect_same_settings() {
        local file=$1 want=$2 got=$3 line ok=1
        if [ "$(sed 's/=.*//' <<<"$want")" != "$(sed 's/=.*//' <<<"$got")" ]; then
                ok=0
        else
                while IFS= read -r line; do
                        [ -n "$line" ] || continue
                        case $line in *=\<dynamic\>) continue ;; esac
                        grep -qxF -- "$line" <<<"$want" || ok=0
                done <<<"$got"
        fi
        if [ "$ok" = 1 ]; then
                pass
        else
                fail "$(basename "$file"):"$'\n'"--- file:"$'\n'"$(cat -A "$file")"$'\n'"--- reference:"$'\n'"$want"$'\n'"--- model:"$'\n'"$got"
        fi
}
