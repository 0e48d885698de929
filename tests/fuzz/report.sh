#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Runs every libFuzzer target for a while on a copy of its corpus and prints,
# per target: executions, executions per second, libFuzzer's coverage
# (cov: edges, ft: features), the corpus size, and, for the parser's own
# source files, the coverage edges reached and the functions entered (from
# -print_coverage=1). A file's totals include functions no input can reach
# (socket I/O in check.c, patch building in condition.c), so the functions
# entered say more than the percentage.
#
# Usage: tests/fuzz/report.sh [SECONDS]   (default 60), in a build directory
# configured with CC=clang --enable-fuzzing [--enable-sanitizers]; the
# targets are built first. FUZZ_REPORT_OUT=DIR keeps each target's output.
# New inputs are not written back to tests/fuzz/corpus/: `make fuzz` and this
# report fuzz a temporary copy.
set -euo pipefail

seconds=${1:-60}
top=$(cd "$(dirname "$0")/../.." && pwd)
[ -f Makefile ] && grep -q '^fuzz_targets = ' Makefile ||
        { echo "report.sh: run it in a build directory (CC=clang --enable-fuzzing)" >&2; exit 2; }
mapfile -t targets < <(make -s -f Makefile -f - print-fuzz-targets <<<'print-fuzz-targets: ; @printf "%s\n" $(fuzz_targets)')
make -s -j"$(nproc)" "${targets[@]}" >/dev/null

# the sources each target is there to cover
declare -A sources=(
        [conf]="agent/model/shell.c agent/model/document.c agent/model/lint.c"
        [env]="agent/model/document.c agent/model/lint.c"
        [configmap]="agent/model/configmap.c"
        [mountinfo]="agent/model/mountinfo.c"
        [http]="agent/io/httpd-listen.c agent/io/check.c"
        [kube]="agent/model/kubeproto.c agent/model/condition.c"
        [slurm]="agent/model/slurm.c agent/model/hostlist.c"
)

out=${FUZZ_REPORT_OUT:-$(mktemp -d)}
mkdir -p "$out"
echo "fuzzing each target for ${seconds} s on $(nproc) CPU(s), $(uname -r)"
printf '%-16s %12s %9s %7s %8s %13s  %s\n' target executions exec/s cov ft corpus "the parser's sources"
failed=
for t in "${targets[@]}"; do
        name=$(basename "$t")
        short=${name#fuzz-}
        work=$(mktemp -d)
        cp -r "$top/tests/fuzz/corpus/$short/." "$work/" 2>/dev/null || true
        seeds=$(find "$work" -type f | wc -l)
        rc=0
        "./$t" -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 -print_coverage=1 \
                -artifact_prefix="$out/$name-" "$work" >"$out/$name.log" 2>&1 || rc=$?
        [ "$rc" -eq 0 ] || failed="$failed $name"
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$name.log")
        rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/$name.log")
        last=$(grep -E '^#[0-9]+.*cov: ' "$out/$name.log" | tail -n 1)
        cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
        ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
        corp=$(find "$work" -type f | wc -l)
        edges=
        for src in ${sources[$short]:-}; do
                # "COVERED_FUNC: hits: H edges: A/B NAME FILE:LINE"
                # edges reached of all the file's edges, and functions entered
                e=$(grep -E '^(UN)?COVERED_FUNC: ' "$out/$name.log" | grep -F "/$src:" |
                        sed -n 's/^\([A-Z_]*\): .* edges: \([0-9]*\)\/\([0-9]*\) .*/\1 \2 \3/p' |
                        awk '{ a += $2; b += $3; n++; if ($1 == "COVERED_FUNC") f++ }
                             END { if (b) printf "%d/%d edges (%.0f%%), %d/%d functions", a, b, 100 * a / b, f, n }')
                edges="$edges; ${src#agent/} ${e:-none}"
        done
        printf '%-16s %12s %9s %7s %8s %6s->%-6s %s\n' "$name" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
                "${ft:-?}" "$seeds" "$corp" "${edges#; }"
        rm -rf "$work"
done
echo "outputs: $out"
if [ -n "$failed" ]; then
        echo "FAILED:$failed (crash inputs: $out/fuzz-*-crash-*)" >&2
        exit 1
fi
