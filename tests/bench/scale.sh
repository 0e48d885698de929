#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Scale: `lint` and `diff` on files of 10 to 100,000 keys, for both file
# models, timed with hyperfine (output to /dev/null). Time per key, after
# taking off the time of the same command on a one-key file (process start),
# must stay flat: growth is linear. Files are read up to 1 MiB (a ConfigMap's
# limit): an environ.d line "Knnnnnn=v" is 10 bytes, so 100,000 keys fit; an
# enroot.conf line must name a key enroot's loader takes, ^ENROOT_[[:upper:]_]+$
# (no digits: the number is written in letters, "ENROOT_AAAAAB=1", 16 bytes;
# each is an unknown-key warning for lint), so the cap binds at 65,536 keys:
# the largest conf file is cut to fit, and one of 100,000 keys shows the
# too-large error path.
# diff: the running file has every tenth value changed.
# Usage: scale.sh (through run.sh or make bench)
. "$(dirname "$0")/lib.sh"
need hyperfine hyperfine
need jq jq

cap=$((1024 * 1024))
sizes=(10 100 1000 10000 100000)
[ "$BENCH_QUICK" = 1 ] && sizes=(10 1000 10000 100000)

# gen TYPE N FILE [CHANGED]: N keys; CHANGED: every tenth value differs
gen() {
        awk -v t="$1" -v n="$2" -v c="${4:-0}" 'BEGIN {
                A = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                for (i = 0; i < n; i++) {
                        v = (c && i % 10 == 0) ? 2 : 1
                        if (t == "env") {
                                printf "K%06d=%d\n", i, v
                                continue
                        }
                        # i in base 26, six letters
                        k = ""
                        x = i
                        for (j = 0; j < 6; j++) {
                                k = substr(A, x % 26 + 1, 1) k
                                x = int(x / 26)
                        }
                        printf "ENROOT_%s=%d\n", k, v
                }
        }' >"$3"
}

# time_ms CMD...: mean wall time in ms
time_ms() {
        local runs=20
        [ "$(stat -c %s "${@: -1}")" -gt 100000 ] && runs=5
        hyperfine -N -i --warmup 2 --runs "$runs" --export-json "$WORK/h.json" "$*" \
                >/dev/null 2>&1
        jq '.results[0].mean * 1000' "$WORK/h.json"
}

for type in env conf; do
        ext=$type
        gen "$type" 1 "$WORK/one.$ext"
        gen "$type" 1 "$WORK/one-run.$ext" 1
        base_lint=$(time_ms "$AGENT" lint "$WORK/one.$ext")
        base_diff=$(time_ms "$AGENT" diff "$WORK/one.$ext" "$WORK/one-run.$ext")
        result "scale $type start (1 key): lint" "$(printf %.3f "$base_lint")" ms \
                "diff $(printf %.3f "$base_diff") ms"
        prev=
        slopes=()
        for n in "${sizes[@]}"; do
                keys=$n
                gen "$type" "$n" "$WORK/d.$ext"
                size=$(stat -c %s "$WORK/d.$ext")
                if [ "$size" -gt "$cap" ]; then
                        # the error path: refused unread
                        t=$(time_ms "$AGENT" lint "$WORK/d.$ext")
                        "$AGENT" lint "$WORK/d.$ext" 2>&1 | head -1 | cut -c1-100 >"$WORK/msg" || true
                        result "scale $type $n keys ($size bytes): lint" "$(printf %.3f "$t")" ms \
                                "over the 1 MiB cap: $(cat "$WORK/msg")"
                        # the most keys that fit under the cap
                        per=$((size / n))
                        keys=$((cap / per))
                        gen "$type" "$keys" "$WORK/d.$ext"
                        size=$(stat -c %s "$WORK/d.$ext")
                fi
                gen "$type" "$keys" "$WORK/r.$ext" 1
                tl=$(time_ms "$AGENT" lint "$WORK/d.$ext")
                td=$(time_ms "$AGENT" diff "$WORK/d.$ext" "$WORK/r.$ext")
                note="lint"
                if [ -n "$prev" ]; then
                        read -r pk pl pd <<<"$prev"
                        sl=$(awk -v a="$tl" -v b="$pl" -v n="$keys" -v m="$pk" 'BEGIN { printf "%.3f", (a - b) * 1000 / (n - m) }')
                        sd=$(awk -v a="$td" -v b="$pd" -v n="$keys" -v m="$pk" 'BEGIN { printf "%.3f", (a - b) * 1000 / (n - m) }')
                        note="lint; +$sl us per key since $pk keys"
                        [ "$pk" -lt 1000 ] || slopes+=("$pk-$keys $sl $sd")
                else
                        sd=
                fi
                result "scale $type $keys keys ($size bytes)" "$(printf %.3f "$tl")" ms \
                        "$note | diff $(printf %.3f "$td") ms${sd:+, +$sd us per key}"
                prev="$keys $tl $td"
        done
        read -r r1 l1 d1 <<<"${slopes[0]}"
        read -r r2 l2 d2 <<<"${slopes[${#slopes[@]} - 1]}"
        gl=$(ratio "$l2" "$l1")
        gd=$(ratio "$d2" "$d1")
        result "scale $type slope $r2 over slope $r1 keys" "$gl" x "lint; diff ${gd}x"
        if le "$gl" 2 && le "$gd" 2; then
                target "scale $type linear (slope within 2x)" MET "lint ${gl}x, diff ${gd}x ($r1 vs $r2 keys)"
        else
                target "scale $type linear (slope within 2x)" MISSED "lint ${gl}x, diff ${gd}x ($r1 vs $r2 keys)"
        fi
done
