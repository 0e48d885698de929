# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Shared by the benchmark scripts under tests/bench/: sourced, never run.
# run.sh exports AGENT (the binary), FLIP_BENCH (tests/bench/flip-bench),
# TOP_SRCDIR, BENCH_QUICK (1: short counts for development) and BENCH_OUT
# (a directory for raw figures and the summary).
set -euo pipefail
export LC_ALL=C

: "${AGENT:?run through tests/bench/run.sh or make bench}"
: "${TOP_SRCDIR:?run through tests/bench/run.sh or make bench}"
BENCH_QUICK=${BENCH_QUICK:-0}
BENCH_NAME=$(basename "$0" .sh)
BENCH_OUT=${BENCH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/bench.XXXXXX")}
mkdir -p "$BENCH_OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-${BENCH_NAME}.XXXXXX")
SUMMARY=$BENCH_OUT/summary.txt
WRITER=$TOP_SRCDIR/tests/tools/atomic-writer.sh

# Every process a benchmark starts is recorded here and ended on exit, and
# every mount it makes is undone before its files are removed.
BENCH_PIDS=()
BENCH_MOUNTS=()
bench_cleanup() {
        local p
        for p in "${BENCH_PIDS[@]}"; do
                kill "$p" 2>/dev/null || true
        done
        for p in "${BENCH_PIDS[@]}"; do
                wait "$p" 2>/dev/null || true
        done
        for p in "${BENCH_MOUNTS[@]}"; do
                umount "$p" 2>/dev/null || umount -l "$p" 2>/dev/null || true
        done
        rm -rf "$WORK"
}
trap bench_cleanup EXIT

# count FULL QUICK: FULL, or QUICK with BENCH_QUICK=1
count() { if [ "$BENCH_QUICK" = 1 ]; then echo "$2"; else echo "$1"; fi; }

say() { printf '%s: %s\n' "$BENCH_NAME" "$*"; }

# need TOOL PACKAGE: exits 77 (this benchmark is skipped) when TOOL is missing
need() {
        command -v "$1" >/dev/null && return 0
        say "SKIP: $1 is not installed (Debian package $2; scripts/setup-deps.sh installs it)" >&2
        exit 77
}

# result NAME VALUE UNIT [NOTE]: one figure, printed and kept for the summary
result() {
        printf '%-44s %14s %-8s %s\n' "$1" "$2" "$3" "${4:-}"
        printf '%s\t%s\t%s\t%s\t%s\n' "$BENCH_NAME" "$1" "$2" "$3" "${4:-}" >>"$SUMMARY.tsv"
}

# target NAME MET|MISSED DETAIL: the verdict on one of the benchmark targets
target() {
        printf '  target %-40s %-6s %s\n' "$1" "$2" "$3"
        printf '%s\t%s\t%s\t%s\n' "$BENCH_NAME" "$1" "$2" "$3" >>"$SUMMARY.targets"
}

# ratio A B: A/B with two decimals ("n/a" when B is 0)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.2f", a / b }'; }

# le A B: A <= B (numbers, possibly fractional)
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

# kv KEY LINE: the value of KEY=VALUE in LINE
kv() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" <<<" $2"; }

# smaps PID FIELD: a field of /proc/PID/smaps_rollup, in KiB
smaps() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/smaps_rollup"; }

# uss PID: the unique set size in KiB, the pages PID alone maps
# (Private_Clean + Private_Dirty of smaps_rollup): what the node gets back when
# PID exits. Pss adds to it PID's share of the pages it shares.
uss() {
        awk '$1 == "Private_Clean:" || $1 == "Private_Dirty:" { s += $2 } END { print s + 0 }' \
                "/proc/$1/smaps_rollup"
}

# cpu_ns PID: CPU time of every thread of PID, in ns (schedstat: run time)
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'; }

# switches PID: context switches of every thread (voluntary + involuntary):
# each one is a wake-up or a preemption
switches() {
        cat /proc/"$1"/task/*/status 2>/dev/null |
                awk '/^(voluntary|nonvoluntary)_ctxt_switches:/ { s += $2 } END { print s + 0 }'
}

# threads PID
threads() { awk '/^Threads:/ { print $2 }' "/proc/$1/status"; }

# make_volume DIR SRC: DIR/cm projected from SRC/{enroot.conf,99-aicr-defaults.env}
# by the atomic writer, DIR/root/etc/enroot holding the same files (current).
make_volume() {
        local dir=$1 src=$2
        mkdir -p "$dir/cm" "$dir/root/etc/enroot/environ.d"
        cp "$src/enroot.conf" "$dir/root/etc/enroot/enroot.conf"
        cp "$src/99-aicr-defaults.env" "$dir/root/etc/enroot/environ.d/99-aicr-defaults.env"
        bash "$WRITER" "$dir/cm" enroot.conf="$src/enroot.conf" \
                99-aicr-defaults.env="$src/99-aicr-defaults.env" >/dev/null
}

# read_only_view DIR VIEW: VIEW becomes a read-only bind mount of DIR, as a
# pod sees its ConfigMap volume (kubelet mounts configMap volumes read-only,
# so reading a file never updates its access time); sets VOLUME_VIEW to it.
# Without the privilege to mount, or with BENCH_VOLUME=rw, VOLUME_VIEW is DIR.
VOLUME_VIEW=
read_only_view() {
        local dir=$1 view=$2
        VOLUME_VIEW=$dir
        [ "${BENCH_VOLUME:-ro}" != rw ] || return 0
        mkdir -p "$view"
        mount --bind "$dir" "$view" 2>/dev/null || return 0
        BENCH_MOUNTS+=("$view")
        if mount -o remount,bind,ro "$view" 2>/dev/null; then
                VOLUME_VIEW=$view
        else
                umount "$view" 2>/dev/null || true
        fi
}

# The payload the benchmarks publish: the shipped defaults (docs/DESIGN.md §1).
make_payload() {
        mkdir -p "$1"
        printf 'ENROOT_MOUNT_HOME=yes\nENROOT_REMAP_ROOT=yes\n' >"$1/enroot.conf"
        printf 'NCCL_DEBUG=WARN\n' >"$1/99-aicr-defaults.env"
}

AGENT_PID=
PORT=
# start_agent LOG ARGS...: the daemon on a kernel-chosen loopback port; sets
# AGENT_PID and PORT, waits until it is ready.
start_agent() {
        local log=$1
        shift
        # Emptied here, not only by the redirection below: that one happens in
        # the background job, maybe after the first look, which would read a
        # previous agent's port from a reused log.
        : >"$log"
        "$AGENT" --listen 127.0.0.1:0 "$@" >"$log" 2>&1 &
        AGENT_PID=$!
        BENCH_PIDS+=("$AGENT_PID")
        PORT=
        for _ in $(seq 1 200); do
                PORT=$(sed -n 's/.*Serving .* on 127\.0\.0\.1:\([0-9]*\)\..*/\1/p' "$log")
                [ -n "$PORT" ] && break
                kill -0 "$AGENT_PID" 2>/dev/null || break
                sleep 0.05
        done
        [ -n "$PORT" ] || { cat "$log" >&2; say "the agent did not start" >&2; exit 1; }
        for _ in $(seq 1 200); do
                "$AGENT" --check --listen "127.0.0.1:$PORT" >/dev/null 2>&1 && return 0
                sleep 0.05
        done
        cat "$log" >&2
        say "the agent never became ready" >&2
        exit 1
}

NE_PID=
NE_PORT=
# start_node_exporter TEXTFILE_DIR: prometheus-node-exporter with the
# textfile collector only, on a free loopback port; sets NE_PID and NE_PORT.
start_node_exporter() {
        local dir=$1
        NE_PORT=$(free_port)
        prometheus-node-exporter --web.listen-address="127.0.0.1:$NE_PORT" \
                --collector.disable-defaults --collector.textfile \
                --collector.textfile.directory="$dir" --web.disable-exporter-metrics \
                >"$WORK/node-exporter.log" 2>&1 &
        NE_PID=$!
        BENCH_PIDS+=("$NE_PID")
        for _ in $(seq 1 200); do
                curl -sf "http://127.0.0.1:$NE_PORT/metrics" >/dev/null 2>&1 && return 0
                kill -0 "$NE_PID" 2>/dev/null || break
                sleep 0.05
        done
        cat "$WORK/node-exporter.log" >&2
        say "prometheus-node-exporter did not start" >&2
        exit 1
}

# free_port: a loopback port nothing listens on (asked of the kernel)
free_port() {
        local p
        for _ in $(seq 1 50); do
                p=$((20000 + RANDOM % 30000))
                if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
                        echo "$p"
                        return 0
                fi
        done
        return 1
}

stop_pid() {
        kill "$1" 2>/dev/null || true
        wait "$1" 2>/dev/null || true
}

# shellcheck disable=SC2034 # set here, used by the benchmarks that source this
FAKE_PID=
API=
CTL=
KUBE_ARGS=()
KUBE_NS=bench
KUBE_POD=worker-0
KUBE_UID=5d1c7a2e-0b6f-4f3e-9c1a-7e2b9d4c8a01
# have_fake_apiserver: tests/tools/fake-apiserver is built and openssl (for
# its throwaway CA) is installed
have_fake_apiserver() {
        [ -n "${FAKE_APISERVER:-}" ] && [ -x "$FAKE_APISERVER" ] && command -v openssl >/dev/null
}
# start_fake_apiserver DIR [ARG...]: the fake API server over TLS with a
# throwaway CA and one pod (or the pods of DIR/pods.json, when the caller
# wrote it), its request arrivals in DIR/arrivals (see
# tests/tools/fake-apiserver.c); sets FAKE_PID, API (https://127.0.0.1:PORT),
# CTL (its control port) and KUBE_ARGS (the agent's --kube on options: the
# serviceaccount directory DIR/sa, the pod's name and UID).
start_fake_apiserver() {
        local dir=$1
        shift
        mkdir -p "$dir/sa"
        bash "$TOP_SRCDIR/tests/tools/make-test-ca.sh" "$dir/pki" >/dev/null ||
                { say "make-test-ca.sh failed" >&2; exit 1; }
        cp "$dir/pki/ca.crt" "$dir/sa/ca.crt"
        echo "$KUBE_NS" >"$dir/sa/namespace"
        printf 'bench-token' >"$dir/sa/token"
        printf 'bench-token' >"$dir/server-token"
        : >"$dir/fake.out" # before the job starts: see start_agent
        : >"$dir/fake.err"
        [ -f "$dir/pods.json" ] || cat >"$dir/pods.json" <<EOP
{"items": [{"metadata": {"name": "$KUBE_POD", "namespace": "$KUBE_NS", "uid": "$KUBE_UID",
                         "resourceVersion": "100"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}]}
EOP
        "$FAKE_APISERVER" --pods "$dir/pods.json" --token-file "$dir/server-token" \
                --tls-cert "$dir/pki/server.crt" --tls-key "$dir/pki/server.key" \
                --port 0 --control-port 0 --arrivals "$dir/arrivals" "$@" \
                >"$dir/fake.out" 2>"$dir/fake.err" &
        FAKE_PID=$!
        BENCH_PIDS+=("$FAKE_PID")
        for _ in $(seq 1 200); do
                grep -q '^control on' "$dir/fake.out" 2>/dev/null && break
                kill -0 "$FAKE_PID" 2>/dev/null || break
                sleep 0.05
        done
        grep -q '^control on' "$dir/fake.out" ||
                { cat "$dir/fake.err" >&2; say "the fake API server did not start" >&2; exit 1; }
        API=$(sed -n 's/^listening on //p' "$dir/fake.out")
        # shellcheck disable=SC2034 # for the benchmarks that source this
        CTL=$(sed -n 's/^control on //p' "$dir/fake.out")
        # shellcheck disable=SC2034
        KUBE_ARGS=(--kube on --kube-api "$API" --serviceaccount-dir "$dir/sa"
                --pod-name "$KUBE_POD" --pod-namespace "$KUBE_NS" --pod-uid "$KUBE_UID")
}
