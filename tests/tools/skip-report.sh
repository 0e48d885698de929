#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Collects the skips of one CI cell from its test logs and checks them
# against the allow-list:
#
#   tests/tools/skip-report.sh --cell CELL [--allow FILE] DIR...
#
# DIR holds test logs as automake writes them: NAME.log beside NAME.trs (its
# ":test-result:" line), in any subdirectory. Every skip prints one line,
#   SKIP: TEST/ID: REASON
# (tests/integration/lib.sh's skip and skip_part, tests/unit/unit-skip.h),
# and each such line is one skip. Also counted as skips, never allowed:
#   - a line that starts "SKIP:" without a TEST/ID;
#   - a test that exited 77 (SKIP) and printed no SKIP line;
#   - a cmocka test skipped ("[  SKIPPED ] name") in a program that exited
#     0 (PASS), or without a SKIP line of its own.
# FILE (default tests/skips.allowed beside this script) has lines
#   CELL-GLOB ID-GLOB JUSTIFICATION
# (shell globs; # starts a comment): a skip is allowed when a line matches
# its cell and TEST/ID. A line without a justification is an error.
#
# Prints every skip, allowed or not, then
#   skip-report: cell CELL: N skips, A allowed, D not allowed
# Exits 0 when D is 0, 1 when it is not or when no DIR holds a test log,
# 2 on a usage or allow-list error.
set -euo pipefail
export LC_ALL=C

prog=skip-report
cell=
allow=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/tests/skips.allowed
dirs=()
while (($#)); do
        case $1 in
        --cell)
                cell=${2-}
                shift 2 || { echo "$prog: --cell needs a value" >&2; exit 2; }
                ;;
        --allow)
                allow=${2-}
                shift 2 || { echo "$prog: --allow needs a value" >&2; exit 2; }
                ;;
        -h | --help)
                sed -n '4,27s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
                exit 0
                ;;
        -*)
                echo "$prog: unknown option '$1'" >&2
                exit 2
                ;;
        *)
                dirs+=("$1")
                shift
                ;;
        esac
done
[[ -n $cell && ${#dirs[@]} -gt 0 ]] || { echo "$prog: usage: skip-report.sh --cell CELL [--allow FILE] DIR..." >&2; exit 2; }
[[ -r $allow ]] || { echo "$prog: cannot read the allow-list '$allow'" >&2; exit 2; }

# The allow-list: globs and where each came from.
allow_cells=() allow_ids=() allow_where=()
n=0
while IFS= read -r line || [[ -n $line ]]; do
        n=$((n + 1))
        line=${line%%#*}
        read -r c i why <<<"$line" || true
        [[ -n ${c:-} ]] || continue
        if [[ -z ${why:-} ]]; then
                echo "$prog: $allow:$n: '$c ${i:-}' has no justification (CELL-GLOB ID-GLOB WHY)" >&2
                exit 2
        fi
        allow_cells+=("$c") allow_ids+=("$i") allow_where+=("$allow:$n")
done <"$allow"

total=0 allowed=0 denied=0
# report ID-OR-EMPTY TEXT: one skip; an empty ID is never allowed.
report() {
        local id=$1 text=$2 k
        total=$((total + 1))
        if [[ -n $id ]]; then
                for k in "${!allow_cells[@]}"; do
                        # shellcheck disable=SC2053 # the list's entries are globs
                        if [[ $cell == ${allow_cells[k]} && $id == ${allow_ids[k]} ]]; then
                                allowed=$((allowed + 1))
                                printf '%s: cell %s: allowed (%s): %s\n' "$prog" "$cell" "${allow_where[k]}" "$text"
                                return
                        fi
                done
        fi
        denied=$((denied + 1))
        printf '%s: cell %s: NOT ALLOWED: %s\n' "$prog" "$cell" "$text"
}

id_re='^SKIP: ([a-z0-9][a-z0-9._-]*/[a-z0-9][a-z0-9.-]*): (.*[^[:space:]].*)$'
logs=0
for dir in "${dirs[@]}"; do
        [[ -d $dir ]] || continue
        while IFS= read -r trs; do
                log=${trs%.trs}.log
                logs=$((logs + 1))
                result=$(sed -n 's/^:test-result: *//p' "$trs" | head -n 1)
                lines=0
                if [[ -f $log ]]; then
                        while IFS= read -r line; do
                                if [[ $line =~ $id_re ]]; then
                                        report "${BASH_REMATCH[1]}" "SKIP: ${BASH_REMATCH[1]}: ${BASH_REMATCH[2]}"
                                else
                                        report "" "$log: a skip without TEST/ID: $line"
                                fi
                                lines=$((lines + 1))
                        done < <(grep -a '^SKIP:' "$log" || true)
                        cmocka=$(sed -n 's/^\[  SKIPPED \] \([A-Za-z_][A-Za-z0-9_]*\)$/\1/p' "$log" | sort -u | wc -l)
                else
                        cmocka=0
                fi
                if [[ $result == SKIP && $lines == 0 ]]; then
                        report "" "$log: exited 77 (SKIP) and printed no SKIP line"
                fi
                if ((cmocka > 0)) && [[ $result == PASS ]]; then
                        report "" "$log: cmocka skipped $cmocka test(s), but the program exited 0 (PASS), not 77 (SKIP)"
                elif ((cmocka > lines)); then
                        report "" "$log: cmocka skipped $cmocka test(s), but only $lines SKIP line(s) say why"
                fi
        done < <(find "$dir" -name '*.trs' -type f | sort)
done

if ((logs == 0)); then
        echo "$prog: cell $cell: no test logs (*.trs) under ${dirs[*]}" >&2
        exit 1
fi
printf '%s: cell %s: %d skips, %d allowed, %d not allowed\n' "$prog" "$cell" "$total" "$allowed" "$denied"
((denied == 0))
