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

# The cells are called as "cell_$name", which shellcheck cannot follow.
# shellcheck disable=SC2317
set -euo pipefail

all_cells=(gcc distcheck asan valgrind cppcheck format fuzz cross)

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
jobs=$(nproc)
fuzz_seconds=${FUZZ_SECONDS:-20}

usage() {
        sed -n '4,20s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
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

make_check() {
        if ! make -j"$jobs" check; then
                print_test_logs
                return 1
        fi
}

gcc_flags=(CC=gcc --enable-werror)

cell_gcc() {
        need gcc make
        configure_in gcc "${gcc_flags[@]}"
        make -j"$jobs"
        make_check
}

cell_distcheck() {
        need gcc make xz
        configure_in gcc "${gcc_flags[@]}"
        if ! make -j"$jobs" distcheck DISTCHECK_CONFIGURE_FLAGS=--enable-werror; then
                # distcheck builds in aicr-enroot-agent-VERSION/_build/sub
                find . -path './aicr-enroot-agent-*' -name test-suite.log -exec cat {} +
                return 1
        fi
}

cell_asan() {
        need clang make
        configure_in asan CC=clang --enable-werror --enable-sanitizers
        make -j"$jobs"
        ASAN_OPTIONS=detect_leaks=1 \
                UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
                make_check
}

cell_valgrind() {
        local t rc failed=0
        need gcc make valgrind
        # The unit tests of a plain gcc build: valgrind and sanitizers do not mix.
        configure_in gcc "${gcc_flags[@]}"
        make -j"$jobs" check TESTS= # builds every check program, runs none
        for t in tests/unit/test-*; do
                [[ -x $t && ! -d $t && $t != *.* ]] || continue
                echo "+ valgrind $t"
                rc=0
                valgrind --quiet --leak-check=full \
                        --errors-for-leak-kinds=definite,indirect,possible \
                        --error-exitcode=1 "$t" >"$t.valgrind.log" 2>&1 || rc=$?
                case $rc in
                0) ;;
                77) echo "  skipped (exit 77)" ;;
                *)
                        cat "$t.valgrind.log"
                        echo "  FAILED: $t (exit $rc)"
                        failed=1
                        ;;
                esac
        done
        return "$failed"
}

# cppcheck 2.10 does not know __attribute__((cleanup)): every _cleanup_ local
# would be reported as a leak, so leaks are left to the asan and valgrind cells.
cell_cppcheck() {
        need cppcheck
        cppcheck --quiet -j"$jobs" --enable=warning,performance,portability --error-exitcode=1 \
                --inline-suppr -I include --suppress=missingIncludeSystem \
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
        bash "$top/scripts/cross-build.sh" arm64
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
        summary+=("$(printf '%-10s %-18s %5ss' "$cell" "$status" "$took")")
done

echo
echo "==================== summary ===================="
printf '%s\n' "${summary[@]}"
echo "total: $((SECONDS - total_start))s"
exit "$failed"
