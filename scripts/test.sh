#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Runs the test suite as CI does, one cell after another, each in its own
# out-of-tree build under build-ci/:
#
#   gcc        gcc, warnings as errors, `make check`
#   distcheck  `make distcheck` (the tarball builds and passes its tests)
#   asan       clang with AddressSanitizer and UndefinedBehaviorSanitizer, `make check`
#   valgrind   the unit tests under valgrind (memory errors and leaks fail)
#   cppcheck   static analysis of agent/ and include/
#   format     clang-format --dry-run --Werror on every .c and .h
#   fuzz       libFuzzer targets, FUZZ_SECONDS (default 20) each on their corpus
#   cross      the arm64 build, its unit tests under qemu-user (scripts/cross-build.sh)
#
# Usage: scripts/test.sh [CELL...]   (default: all cells, in that order)
# First installs what is missing of scripts/setup-deps.sh's packages (all of
# them: scripts/demo.sh installed only the build's and the demo's). Every cell
# runs even when an earlier one fails; the exit status is 1 when any failed.
# A cell that runs tests (gcc distcheck asan valgrind cross) then lists their
# skips (tests/tools/skip-report.sh) and fails on one that tests/skips.allowed
# does not allow for it; the summary counts them per cell.

# The cells are called as "cell_$name", which shellcheck cannot follow.
# shellcheck disable=SC2317
set -euo pipefail

all_cells=(gcc distcheck asan valgrind cppcheck format fuzz cross)

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
jobs=$(nproc)
fuzz_seconds=${FUZZ_SECONDS:-20}

usage() {
        sed -n '4,23s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

# need COMMAND...: fails with a hint when a tool of scripts/setup-deps.sh is missing.
need() {
        local c
        for c in "$@"; do
                if ! command -v "$c" >/dev/null; then
                        echo "test.sh: '$c' is missing: run scripts/setup-deps.sh first" >&2
                        return 1
                fi
        done
}

# autoreconf only when configure is missing or older than its sources: other
# builds may be using this source tree at the same time.
bootstrap() {
        if [[ ! -x configure || configure.ac -nt configure || Makefile.am -nt configure ]]; then
                need autoreconf
                echo "+ autoreconf -fi"
                autoreconf -fi
        fi
}

# configure_in DIR CONFIGURE-ARGS...: enters build-ci/DIR, configured with those
# arguments (configure runs again only when they changed; make reruns it when
# configure itself changed).
configure_in() {
        local dir=$top/build-ci/$1
        shift
        bootstrap
        mkdir -p "$dir"
        cd "$dir"
        if [[ -x config.status && -f Makefile && "$(./config.status --config)" == "$*" ]]; then
                echo "+ build-ci/${dir##*/} is configured with $*"
                return 0
        fi
        echo "+ configure $*"
        if ! "$top/configure" "$@" >configure.out 2>&1; then
                cat configure.out
                return 1
        fi
}

# Prints the logs of the tests that failed (automake's test-suite.log holds them).
print_test_logs() {
        local log
        while IFS= read -r log; do
                echo "======== $log"
                cat "$log"
        done < <(find . -name test-suite.log -not -path './aicr-enroot-agent-*')
}

# check_skips CELL DIR...: the skips in the test logs under DIR, each allowed
# for CELL by tests/skips.allowed or the cell fails; their counts go to
# $skip_counts/CELL for the summary.
check_skips() {
        local cell=$1 out rc=0
        shift
        echo "+ tests/tools/skip-report.sh --cell $cell $*"
        out=$(bash "$top/tests/tools/skip-report.sh" --cell "$cell" --allow "$top/tests/skips.allowed" "$@") || rc=$?
        [[ -z $out ]] || printf '%s\n' "$out"
        sed -n 's/^skip-report: cell [^:]*: \([0-9]*\) skips, \([0-9]*\) allowed, \([0-9]*\) not allowed$/\1 \2 \3/p' \
                <<<"$out" >"$skip_counts/$cell"
        if ((rc != 0)); then
                echo "test.sh: cell $cell: a skip above is not allowed: run what it needs, or, when CI's machine can never run it, add it to tests/skips.allowed with the reason"
        fi
        return "$rc"
}

# note_failures CELL DIR...: for the summary at the end of the output (where
# a reader of the last lines looks first), each failed or errored test under
# DIR (automake's .trs files) with its first failure lines and its last lines.
note_failures() {
        local cell=$1 trs log
        shift
        while IFS= read -r trs; do
                grep -Eq '^:test-result: (FAIL|ERROR|XPASS)' "$trs" || continue
                log=${trs%.trs}.log
                {
                        echo "--- $cell: ${log#"$top"/} ($(sed -n 's/^:test-result: //p' "$trs" | sort -u | tr '\n' ' '))"
                        if [[ -f $log ]]; then
                                grep -E -m 8 '^(FAIL|ERROR|not ok|Bail out)|[[:space:]]FAILED|AddressSanitizer|runtime error:' "$log" | cut -c1-300 || true
                                echo "    last lines:"
                                tail -n 6 "$log" | cut -c1-300 | sed 's/^/    /'
                        fi
                } >>"$skip_counts/failures"
        done < <(find "$@" -name '*.trs' 2>/dev/null | sort)
}

# make_check CELL: make check, then the cell's skips (also after a failure).
make_check() {
        local rc=0
        make -j"$jobs" check || rc=$?
        if ((rc != 0)); then
                print_test_logs
                note_failures "$1" "$PWD/tests"
        fi
        check_skips "$1" tests || rc=1
        return "$rc"
}

gcc_flags=(CC=gcc --enable-werror)

cell_gcc() {
        need gcc make
        configure_in gcc "${gcc_flags[@]}"
        make -j"$jobs"
        make_check gcc
}

cell_distcheck() {
        local logs=$top/build-ci/distcheck-logs rc=0
        need gcc make xz
        configure_in gcc "${gcc_flags[@]}"
        rm -rf "$logs"
        # KEEP_TEST_LOGS: make check in the tarball's build copies its test
        # logs there (Makefile.am's check-local); distcheck removes that build.
        if ! make -j"$jobs" distcheck DISTCHECK_CONFIGURE_FLAGS=--enable-werror KEEP_TEST_LOGS="$logs"; then
                # distcheck builds in aicr-enroot-agent-VERSION/_build/sub
                find . -path './aicr-enroot-agent-*' -name test-suite.log -exec cat {} +
                note_failures distcheck "$PWD"/aicr-enroot-agent-* "$logs"
                rc=1
        fi
        check_skips distcheck "$logs" || rc=1
        return "$rc"
}

cell_asan() {
        need clang make
        configure_in asan CC=clang --enable-werror --enable-sanitizers
        make -j"$jobs"
        ASAN_OPTIONS=detect_leaks=1 \
                UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
                make_check asan
}

# Each test's output in build-ci/valgrind-logs/tests/unit/NAME.log, its result
# in NAME.trs as automake writes it, for check_skips.
cell_valgrind() {
        local t rc result log logs=$top/build-ci/valgrind-logs failed=0
        need gcc make valgrind
        # The unit tests of a plain gcc build: valgrind and sanitizers do not mix.
        configure_in gcc "${gcc_flags[@]}"
        make -j"$jobs" check TESTS= # builds every check program, runs none
        rm -rf "$logs"
        mkdir -p "$logs/tests/unit"
        for t in tests/unit/test-*; do
                [[ -x $t && ! -d $t && $t != *.* ]] || continue
                echo "+ valgrind $t"
                log=$logs/$t.log
                rc=0
                valgrind --quiet --leak-check=full \
                        --errors-for-leak-kinds=definite,indirect,possible \
                        --error-exitcode=1 "$t" >"$log" 2>&1 || rc=$?
                case $rc in
                0) result=PASS ;;
                77)
                        result=SKIP
                        echo "  skipped (exit 77)"
                        ;;
                *)
                        result=FAIL
                        cat "$log"
                        echo "  FAILED: $t (exit $rc)"
                        failed=1
                        ;;
                esac
                printf ':test-result: %s\n' "$result" >"${log%.log}.trs"
        done
        ((failed == 0)) || note_failures valgrind "$logs"
        check_skips valgrind "$logs" || failed=1
        return "$failed"
}

# cppcheck 2.10 does not know __attribute__((cleanup)): every _cleanup_ local
# would be reported as a leak, so leaks are left to the asan and valgrind cells.
cell_cppcheck() {
        need cppcheck
        cppcheck --quiet -j"$jobs" --enable=warning,performance,portability --error-exitcode=1 \
                --inline-suppr $(printf -- "-I include/%s " basic model io cli daemon rollout) --suppress=missingIncludeSystem \
                --suppress=memleak --suppress=resourceLeak agent/ include/
}

cell_format() {
        local files
        need clang-format
        # Test data and fuzz seeds are inputs, not code.
        mapfile -t files < <(find agent include tests \( -path tests/data -o -path tests/fuzz/corpus \) \
                -prune -o -name '*.[ch]' -print | sort)
        echo "+ clang-format --dry-run --Werror (${#files[@]} files)"
        clang-format --dry-run --Werror "${files[@]}"
}

cell_fuzz() {
        need clang make
        configure_in fuzz CC=clang --enable-fuzzing --enable-sanitizers
        make -j"$jobs" tests/fuzz/fuzz-conf tests/fuzz/fuzz-env tests/fuzz/fuzz-configmap
        make fuzz FUZZ_SECONDS="$fuzz_seconds"
}

# GB200 nodes are arm64: the cross build, and the unit tests under qemu-user.
cell_cross() {
        local rc=0
        bash "$top/scripts/cross-build.sh" arm64 || rc=$?
        ((rc == 0)) || note_failures cross "$top/build-cross/arm64/tests"
        check_skips cross "$top/build-cross/arm64/tests" || rc=1
        return "$rc"
}

cells=()
for arg in "$@"; do
        case $arg in
        -h | --help)
                usage
                exit 0
                ;;
        all) cells+=("${all_cells[@]}") ;;
        *)
                if [[ " ${all_cells[*]} " != *" $arg "* ]]; then
                        echo "test.sh: unknown cell '$arg' (cells: ${all_cells[*]})" >&2
                        exit 2
                fi
                cells+=("$arg")
                ;;
        esac
done
((${#cells[@]} > 0)) || cells=("${all_cells[@]}")

# Quick when everything is installed; apt-get (through sudo) otherwise.
if ! bash "$top/scripts/setup-deps.sh" </dev/null; then
        echo "test.sh: scripts/setup-deps.sh failed: the cells need its packages" >&2
        exit 1
fi

summary=()
failed=0
total_start=$SECONDS
# check_skips leaves "TOTAL ALLOWED NOT-ALLOWED" of each cell here, and
# note_failures the failed tests (failures).
skip_counts=$(mktemp -d)
trap 'rm -rf "$skip_counts"' EXIT
skips_total=0 skips_allowed=0 skips_denied=0
for cell in "${cells[@]}"; do
        echo
        echo "==================== cell: $cell ===================="
        start=$SECONDS
        # A subshell outside any condition, so that `set -e` stays in force inside it.
        set +e
        (
                set -e
                cd "$top"
                "cell_$cell"
        )
        rc=$?
        set -e
        took=$((SECONDS - start))
        if ((rc == 0)); then
                status=passed
        else
                status="FAILED (exit $rc)"
                failed=1
        fi
        echo "-------------------- cell: $cell $status in ${took}s --------------------"
        skips=
        if [[ -f $skip_counts/$cell ]]; then
                n='' a='' d=''
                read -r n a d <"$skip_counts/$cell" || true
                if [[ -n ${d:-} ]]; then
                        skips="skips: $n ($a allowed, $d not allowed)"
                        skips_total=$((skips_total + n)) skips_allowed=$((skips_allowed + a))
                        skips_denied=$((skips_denied + d))
                else
                        skips="skips: not counted (no test logs)"
                fi
        fi
        summary+=("$(printf '%-10s %-18s %5ss  %s' "$cell" "$status" "$took" "$skips")")
done

echo
if [[ -s $skip_counts/failures ]]; then
        echo "==================== failed tests ===================="
        cat "$skip_counts/failures"
        echo
fi
echo "==================== summary ===================="
printf '%s\n' "${summary[@]}"
echo "skips: $skips_total ($skips_allowed allowed, $skips_denied not allowed)"
echo "total: $((SECONDS - total_start))s"
exit "$failed"
