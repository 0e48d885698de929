#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Scrape throughput and latency: wrk on the agent's /metrics, and on
# prometheus-node-exporter serving the same exposition as a textfile with only
# the textfile collector (and without its own go_*/process_* metrics), in the
# same run, with the same wrk settings (one thread, BENCH_CONNECTIONS
# connections, default 4: the agent accepts 8 per client address;
# BENCH_SECONDS each, default 10, 3 with BENCH_QUICK=1). Twice:
#   keep-alive  wrk as it comes, like Prometheus: both keep the connection
#               for the next scrape (the agent for /metrics only, until 3 s
#               pass without a request, HTTPD_REQUEST_DEADLINE_SEC)
#   close       "Connection: close" for both: one TCP connection per scrape
# Usage: scrape.sh (through run.sh or make bench)
. "$(dirname "$0")/lib.sh"
need wrk wrk
need prometheus-node-exporter prometheus-node-exporter
need curl curl

secs=${BENCH_SECONDS:-$(count 10 3)}
conns=${BENCH_CONNECTIONS:-4}
make_payload "$WORK/src"
make_volume "$WORK" "$WORK/src"
# a drifted pod: the exposition carries per-key series, as it would when it matters
printf 'ENROOT_MOUNT_HOME=no\nENROOT_REMAP_ROOT=yes\nENROOT_TRANSFER_TIMEOUT=600\n' >"$WORK/src/enroot.conf"
printf 'NCCL_DEBUG=INFO\nNCCL_DEBUG_SUBSYS=INIT,NET\n' >"$WORK/src/99-aicr-defaults.env"
bash "$WRITER" "$WORK/cm" enroot.conf="$WORK/src/enroot.conf" \
        99-aicr-defaults.env="$WORK/src/99-aicr-defaults.env" >/dev/null

start_agent "$WORK/agent.log" --desired-dir "$WORK/cm" --running-root "$WORK/root" \
        --resync-interval 3600
mkdir "$WORK/textfile"
curl -sf "http://127.0.0.1:$PORT/metrics" >"$WORK/textfile/agent.prom"
start_node_exporter "$WORK/textfile"
a_bytes=$(curl -sf "http://127.0.0.1:$PORT/metrics" | wc -c)
n_bytes=$(curl -sf "http://127.0.0.1:$NE_PORT/metrics" | wc -c)
result "scrape body agent" "$a_bytes" bytes
result "scrape body node_exporter" "$n_bytes" bytes "the same series plus node_textfile_*, node_scrape_*"

# to_ms "2.12ms" -> 2.12
to_ms() {
        awk -v v="$1" 'BEGIN {
                if (v ~ /us$/) printf "%.3f", v / 1000;
                else if (v ~ /ms$/) printf "%.3f", v + 0;
                else if (v ~ /s$/) printf "%.3f", v * 1000;
                else print "nan" }'
}

# bench NAME URL [wrk args]: sets RPS, P99, ERR
bench() {
        local name=$1 url=$2 out
        shift 2
        out=$WORK/wrk-$name.txt
        wrk -t1 -c"$conns" -d"${secs}s" --latency "$@" "$url" >"$out" 2>&1
        cp "$out" "$BENCH_OUT/scrape-wrk-$name.txt"
        RPS=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
        P99=$(to_ms "$(awk '$1 == "99%" { print $2 }' "$out")")
        ERR=$(awk '/Socket errors|Non-2xx/ { print }' "$out" | tr '\n' ' ')
}

for mode in keep-alive close; do
        args=()
        [ "$mode" = close ] && args=(-H "Connection: close")
        bench "agent-$mode" "http://127.0.0.1:$PORT/metrics" "${args[@]}"
        a_rps=$RPS a_p99=$P99 a_err=$ERR
        bench "node_exporter-$mode" "http://127.0.0.1:$NE_PORT/metrics" "${args[@]}"
        n_rps=$RPS n_p99=$P99 n_err=$ERR
        result "scrape $mode agent" "$a_rps" req/s "p99 $a_p99 ms ${a_err}"
        result "scrape $mode node_exporter" "$n_rps" req/s "p99 $n_p99 ms ${n_err}"
        result "scrape $mode agent/node_exporter req/s" "$(ratio "$a_rps" "$n_rps")" x
        result "scrape $mode agent/node_exporter p99" "$(ratio "$a_p99" "$n_p99")" x
        if [ "$mode" = keep-alive ]; then
                if le "$(awk -v a="$n_rps" 'BEGIN { print 5 * a }')" "$a_rps"; then
                        target "scrape >= 5x node_exporter req/s" MET "$(ratio "$a_rps" "$n_rps")x"
                else
                        target "scrape >= 5x node_exporter req/s" MISSED "$(ratio "$a_rps" "$n_rps")x"
                fi
                if le "$a_p99" "$n_p99"; then
                        target "scrape p99 below node_exporter" MET "$a_p99 vs $n_p99 ms"
                else
                        target "scrape p99 below node_exporter" MISSED "$a_p99 vs $n_p99 ms"
                fi
        fi
done
