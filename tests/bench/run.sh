#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Runs the benchmarks and prints every figure beside its peer's, measured in
# the same run, then a summary of the targets (docs/BENCHMARKS.md explains the
# method and keeps the last results).
#
# Usage: run.sh [--quick] [BENCH...]
#   BENCH    latency, scrape, footprint, check, scale, soak (default: all, in
#            that order), and fleet (1,000 agents against one fake API
#            server; only when named: it takes about 15 minutes and raises
#            fs.inotify.max_user_instances for the run)
#   --quick  short counts for development (200 updates instead of 1,000,
#            20,000 scrapes instead of 1,000,000, ...); the figures are then
#            rougher and the footprint's growth check less telling
# Environment: AGENT (default ./aicr-enroot-agent), FLIP_BENCH (default
# tests/bench/flip-bench beside AGENT), FAKE_APISERVER (default
# tests/tools/fake-apiserver beside AGENT), BENCH_OUT (where raw figures and
# summary.txt go; default a new temporary directory, printed), and the
# per-benchmark counts named in each script's header (BENCH_UPDATES, BENCH_B2B,
# BENCH_SECONDS, BENCH_CONNECTIONS, BENCH_UPDATE_COUNT, BENCH_SCRAPES,
# BENCH_IDLE_SECONDS, SOAK_UPDATES, SOAK_SEED, SOAK_VALGRIND, BENCH_FLEET,
# BENCH_FLEET_SPREAD, BENCH_FLEET_STEADY, BENCH_FLEET_POLL, BENCH_FLEET_TIMEOUT),
# and BENCH_VOLUME=rw to let latency and footprint read the volume where it is
# written rather than through a read-only bind mount. `make bench`
# builds the helpers and runs this with the built binary;
# `make bench BENCH_ARGS=--quick` passes options.
# Exits 0 when every benchmark ran (missed targets are reported, not
# failures), 1 when one failed to run.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
TOP_SRCDIR=${TOP_SRCDIR:-$(cd "$here/../.." && pwd)}
AGENT=${AGENT:-$PWD/aicr-enroot-agent}
FLIP_BENCH=${FLIP_BENCH:-$(dirname "$AGENT")/tests/bench/flip-bench}
BENCH_QUICK=${BENCH_QUICK:-0}
all=(latency scrape footprint check scale soak)
chosen=()
for a in "$@"; do
        case $a in
        --quick) BENCH_QUICK=1 ;;
        -h | --help)
                sed -n '4,29s/^# \{0,1\}//p' "$0"
                exit 0
                ;;
        *)
                [ -f "$here/$a.sh" ] || { echo "run.sh: unknown benchmark \"$a\" (${all[*]})" >&2; exit 2; }
                chosen+=("$a")
                ;;
        esac
done
[ ${#chosen[@]} -gt 0 ] || chosen=("${all[@]}")
[ -x "$AGENT" ] || { echo "run.sh: no agent at \"$AGENT\": set AGENT or run make bench" >&2; exit 2; }
[ -x "$FLIP_BENCH" ] || FLIP_BENCH=
FAKE_APISERVER=${FAKE_APISERVER:-$(dirname "$AGENT")/tests/tools/fake-apiserver}
[ -x "$FAKE_APISERVER" ] || FAKE_APISERVER=
BENCH_OUT=${BENCH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/aicr-bench.XXXXXX")}
mkdir -p "$BENCH_OUT"
: >"$BENCH_OUT/summary.txt.tsv"
: >"$BENCH_OUT/summary.txt.targets"
export AGENT FLIP_BENCH FAKE_APISERVER TOP_SRCDIR BENCH_QUICK BENCH_OUT

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
{
        echo "machine: $(nproc) CPUs, ${cpu:-unknown CPU}, Linux $(uname -r), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
        echo "agent: $("$AGENT" --version 2>&1 | head -1), $AGENT"
        echo "mode: $([ "$BENCH_QUICK" = 1 ] && echo quick || echo full), load average $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$BENCH_OUT/machine.txt"

failed=()
skipped=()
for b in "${chosen[@]}"; do
        echo
        echo "=== $b"
        rc=0
        bash "$here/$b.sh" || rc=$?
        case $rc in
        0) ;;
        77) skipped+=("$b") ;;
        *) failed+=("$b") ;;
        esac
done

{
        echo
        echo "=== targets"
        if [ -s "$BENCH_OUT/summary.txt.targets" ]; then
                awk -F'\t' '{ printf "%-10s %-46s %-7s %s\n", $1, $2, $3, $4 }' "$BENCH_OUT/summary.txt.targets"
        fi
        [ ${#skipped[@]} -eq 0 ] || echo "skipped (a tool is missing): ${skipped[*]}"
        [ ${#failed[@]} -eq 0 ] || echo "FAILED to run: ${failed[*]}"
        echo "figures: $BENCH_OUT/summary.txt.tsv"
} | tee "$BENCH_OUT/summary.txt"
[ ${#failed[@]} -eq 0 ]
