#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The environ.d model against real awk and sed: a pipeline written from
# docs/DESIGN.md §5 (${NAME} substitution, leading blanks stripped, comments, empty
# and malformed lines and ENROOT_ lines dropped, one pair of surrounding
# quotes stripped, later lines win) runs on a corpus, and the variables it
# leaves must equal what model-dump says. Values the model marks dynamic are
# compared by key only.
. "$(dirname "$0")/lib.sh"
: "${MODEL_DUMP:?run through make check}"
command -v awk >/dev/null || skip no-awk "awk is not installed"
command -v sed >/dev/null || skip no-sed "sed is not installed"

reference() {
        # 1. ${NAME} becomes the variable's value (an empty environment here).
        env -i awk '{
                rest = $0; out = ""
                while (match(rest, /\$\{[A-Za-z_][A-Za-z0-9_]*\}/)) {
                        name = substr(rest, RSTART + 2, RLENGTH - 3)
                        out = out substr(rest, 1, RSTART - 1) ENVIRON[name]
                        rest = substr(rest, RSTART + RLENGTH)
                }
                print out rest
        }' "$1" |
        # 2. the line rules, in order
        sed -e 's/^[[:space:]]*//' \
            -e '/^#/d' -e '/^$/d' \
            -e '/^[[:alpha:]_][[:alnum:]_]*=/!d' \
            -e '/^ENROOT_/d' \
            -e "s/^\([[:alpha:]_][[:alnum:]_]*\)=[\"']\(.*\)[\"'][[:space:]]*\$/\1=\2/" |
        # 3. later definitions replace earlier ones
        awk '{
                i = index($0, "="); k = substr($0, 1, i - 1)
                if (!(k in v)) order[++n] = k
                v[k] = substr($0, i + 1)
        } END { for (j = 1; j <= n; j++) print order[j] "=" v[order[j]] }' |
        sed -e 's/\\/\\\\/g' | LC_ALL=C sort -t= -k1,1 -s
}

mkdir -p "$WORK/gen"
RANDOM=20261203
keys=(NCCL_DEBUG NCCL_DEBUG_SUBSYS _X a1 1A ENROOT_MOUNT_HOME "export NCCL_DEBUG" "#NCCL_DEBUG"
      "NCCL_DEBUG " "NCCL-DEBUG" "")
vals=(WARN INFO "" '"WARN"' "'WARN'" '"WARN'"'" '"' "'" '"a" "b"' '""x""' '"x" # c' 'x # c'
      '$HOME/x' '${HOME}/x' '${HOME:-/h}' 'a=b' '"x"  ' "'x' " ' lead' 'tail ' 'a\b' '\"x\"'
      '${A}${B}' '$' '${' '${}' 'x#y')
pads=("" " " $'\t' "  ")
for n in $(seq 1 300); do
        f="$WORK/gen/$n.env"
        : >"$f"
        for _ in $(seq 1 $((RANDOM % 6 + 1))); do
                printf '%s%s=%s\n' "${pads[RANDOM % 4]}" "${keys[RANDOM % ${#keys[@]}]}" \
                        "${vals[RANDOM % ${#vals[@]}]}" >>"$f"
        done
        [ $((RANDOM % 8)) -ne 0 ] || truncate -s -1 "$f"
done

for f in "$TEST_DATA_DIR"/differential/env/*.env "$WORK"/gen/*.env; do
        want=$(reference "$f")
        got=$("$MODEL_DUMP" env "$f" | LC_ALL=C sort -t= -k1,1 -s) ||
                { fail "model-dump failed on $f"; continue; }
        # a key built from ${NAME} is only known as text: nothing to compare
        if grep -q '^[^=]*\${' <<<"$got"; then
                continue
        fi
        expect_same_settings "$f" "$want" "$got"
done

finish
