#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Footprint, side by side with prometheus-node-exporter (textfile collector
# only, serving the agent's own exposition) in the same run:
#   - resident (Rss), proportional (Pss), unique (USS: Private_Clean +
#     Private_Dirty) and anonymous memory from
#     /proc/PID/smaps_rollup: idle; after BENCH_UPDATE_COUNT updates (default
#     10,000; 500 quick) -- ConfigMap updates for the agent, each waited for
#     in /metrics, and textfile rewrites each followed by a scrape for
#     node_exporter, which only reads the file when scraped; after a warm-up
#     of 1,000 scrapes; after BENCH_SCRAPES more (default 1,000,000; 20,000
#     quick), one connection per scrape from 4 threads (tests/bench/flip-bench)
#   - the same for BENCH_SHARED (default 10; 4 quick) idle agents, each with
#     its own volume and running files, as on a node where every pod runs one
#     from the same image: the pages of the program and its libraries are
#     shared between them, so USS is what one more pod costs the node (and
#     Pss its fair share); beside as many node_exporters
#   - CPU time and context switches (wake-ups) of every thread over an idle
#     window of BENCH_IDLE_SECONDS (default 20; 5 quick) that ends before the
#     agent's first resync (--resync-interval 60, the default)
#   - what each library the agent links costs at start: a program that does
#     nothing, linked with that library alone, against the same program
#     linked with nothing (static) and with libc only
# Usage: footprint.sh (through run.sh or make bench)
. "$(dirname "$0")/lib.sh"
need prometheus-node-exporter prometheus-node-exporter
need hyperfine hyperfine
need curl curl
need jq jq
: "${FLIP_BENCH:?flip-bench is not built: make bench builds it}"
CC=${CC:-cc}

updates=${BENCH_UPDATE_COUNT:-$(count 10000 500)}
scrapes=${BENCH_SCRAPES:-$(count 1000000 20000)}
idle=${BENCH_IDLE_SECONDS:-$(count 20 5)}
make_payload "$WORK/src"
make_volume "$WORK" "$WORK/src"

read_only_view "$WORK/cm" "$WORK/cm-view" # as in a pod, when this may mount
start_agent "$WORK/agent.log" --desired-dir "$VOLUME_VIEW" --running-root "$WORK/root"
mkdir "$WORK/textfile"
curl -sf "http://127.0.0.1:$PORT/metrics" >"$WORK/textfile/agent.prom"
start_node_exporter "$WORK/textfile"
started=$SECONDS

# mem STAGE: Rss, Pss, USS and Anonymous of both
mem() {
        local a_rss a_anon n_rss n_anon a_pss a_uss n_pss n_uss
        a_rss=$(smaps "$AGENT_PID" Rss) a_anon=$(smaps "$AGENT_PID" Anonymous)
        n_rss=$(smaps "$NE_PID" Rss) n_anon=$(smaps "$NE_PID" Anonymous)
        a_pss=$(smaps "$AGENT_PID" Pss) a_uss=$(uss "$AGENT_PID")
        n_pss=$(smaps "$NE_PID" Pss) n_uss=$(uss "$NE_PID")
        result "memory $1 agent Rss" "$a_rss" KiB "Pss $a_pss KiB, USS $a_uss KiB, Anonymous $a_anon KiB"
        result "memory $1 node_exporter Rss" "$n_rss" KiB "Pss $n_pss KiB, USS $n_uss KiB, Anonymous $n_anon KiB"
        result "memory $1 agent/node_exporter Rss" "$(ratio "$a_rss" "$n_rss")" x
        result "memory $1 agent/node_exporter USS" "$(ratio "$a_uss" "$n_uss")" x
        result "memory $1 agent/node_exporter Anonymous" "$(ratio "$a_anon" "$n_anon")" x
        eval "A_RSS_$2=$a_rss A_ANON_$2=$a_anon N_RSS_$2=$n_rss N_ANON_$2=$n_anon"
}

# --- idle -----------------------------------------------------------------
sleep 1
mem idle IDLE
a_cpu0=$(cpu_ns "$AGENT_PID") a_sw0=$(switches "$AGENT_PID")
n_cpu0=$(cpu_ns "$NE_PID") n_sw0=$(switches "$NE_PID")
sleep "$idle"
a_cpu=$(($(cpu_ns "$AGENT_PID") - a_cpu0)) a_sw=$(($(switches "$AGENT_PID") - a_sw0))
n_cpu=$(($(cpu_ns "$NE_PID") - n_cpu0)) n_sw=$(($(switches "$NE_PID") - n_sw0))
[ $((SECONDS - started)) -lt 60 ] ||
        say "note: the idle window reached the agent's first resync (the machine is slow)"
result "idle ${idle}s agent CPU" "$(awk -v n="$a_cpu" 'BEGIN { printf "%.3f", n / 1e6 }')" ms \
        "$(threads "$AGENT_PID") thread(s)"
result "idle ${idle}s node_exporter CPU" "$(awk -v n="$n_cpu" 'BEGIN { printf "%.3f", n / 1e6 }')" ms \
        "$(threads "$NE_PID") thread(s)"
result "idle ${idle}s agent wake-ups" "$a_sw" "switches"
result "idle ${idle}s node_exporter wake-ups" "$n_sw" "switches"
if [ "$a_sw" -eq 0 ]; then
        target "no wake-ups between resyncs" MET "0 context switches in ${idle}s"
else
        target "no wake-ups between resyncs" MISSED "$a_sw context switches in ${idle}s"
fi

# --- updates ----------------------------------------------------------------
say "$updates updates each"
"$FLIP_BENCH" updates --dir "$WORK/cm" --count "$updates" --port "$PORT" \
        --key enroot.conf="$WORK/src/enroot.conf" \
        --key 99-aicr-defaults.env="$WORK/src/99-aicr-defaults.env" \
        --vary 99-aicr-defaults.env
"$FLIP_BENCH" textfile --file "$WORK/textfile/agent.prom" --count "$updates" --port "$NE_PORT"
mem "after ${updates} updates" UPD

# --- scrapes ------------------------------------------------------------------
"$FLIP_BENCH" scrape --port "$PORT" --count 1000 >/dev/null
"$FLIP_BENCH" scrape --port "$NE_PORT" --count 1000 >/dev/null
mem "after warm-up (1000 scrapes)" WARM
say "$scrapes scrapes each"
"$FLIP_BENCH" scrape --port "$PORT" --count "$scrapes"
"$FLIP_BENCH" scrape --port "$NE_PORT" --count "$scrapes"
mem "after ${scrapes} scrapes" SCR

a_growth=$((A_ANON_SCR - A_ANON_WARM))
n_growth=$((N_ANON_SCR - N_ANON_WARM))
result "growth after warm-up agent Anonymous" "$a_growth" KiB "Rss $((A_RSS_SCR - A_RSS_WARM)) KiB"
result "growth after warm-up node_exporter Anonymous" "$n_growth" KiB "Rss $((N_RSS_SCR - N_RSS_WARM)) KiB"
# a page or two of allocator slack is not growth
if [ "$a_growth" -le 8 ]; then
        target "no growth after warm-up" MET "${a_growth} KiB anonymous after $scrapes scrapes"
else
        target "no growth after warm-up" MISSED "${a_growth} KiB anonymous after $scrapes scrapes"
fi
worst_rss=$A_RSS_IDLE worst_anon=$A_ANON_IDLE
for s in UPD WARM SCR; do
        eval "r=\$A_RSS_$s a=\$A_ANON_$s nr=\$N_RSS_$s na=\$N_ANON_$s"
        # shellcheck disable=SC2154
        if [ "$r" -ge "$nr" ] || [ "$a" -ge "$na" ]; then worst_rss=x; fi
done
if [ "$worst_rss" != x ]; then
        target "memory below node_exporter (Rss, Anonymous)" MET "at every stage"
else
        target "memory below node_exporter (Rss, Anonymous)" MISSED "at some stage (see above)"
fi
: "$worst_anon"

# --- many on one image -------------------------------------------------------
# each agent with its own volume and running files, as in its own pod; the
# node_exporters share the textfile directory (they only read it)
shared=${BENCH_SHARED:-$(count 10 4)}
first_agent=$AGENT_PID first_ne=$NE_PID
agents=() exporters=()
for i in $(seq 1 "$shared"); do
        make_volume "$WORK/pod$i" "$WORK/src"
        start_agent "$WORK/agent$i.log" --desired-dir "$WORK/pod$i/cm" --running-root "$WORK/pod$i/root"
        agents+=("$AGENT_PID")
        start_node_exporter "$WORK/textfile"
        exporters+=("$NE_PID")
done
sleep 1
# per_process NAME PID...: the mean Rss, Pss and USS of those processes
per_process() {
        local name=$1 pid rss=0 pss=0 u=0
        shift
        for pid in "$@"; do
                rss=$((rss + $(smaps "$pid" Rss))) pss=$((pss + $(smaps "$pid" Pss)))
                u=$((u + $(uss "$pid")))
        done
        result "$shared on one image: $name per process USS" "$((u / $#))" KiB \
                "Pss $((pss / $#)) KiB, Rss $((rss / $#)) KiB (means)"
        SHARED_USS=$((u / $#))
}
per_process agent "${agents[@]}"
a_uss=$SHARED_USS
per_process node_exporter "${exporters[@]}"
result "$shared on one image: agent/node_exporter USS" "$(ratio "$a_uss" "$SHARED_USS")" x
for pid in "${agents[@]}" "${exporters[@]}"; do stop_pid "$pid"; done
stop_pid "$first_agent"
stop_pid "$first_ne"

# --- what each library costs at start ---------------------------------------
printf 'int main(void) { return 0; }\n' >"$WORK/nothing.c"
"$CC" -O2 -o "$WORK/nothing-dynamic" "$WORK/nothing.c"
if ! "$CC" -O2 -static -o "$WORK/nothing-static" "$WORK/nothing.c" 2>/dev/null; then
        say "note: no static libc here; the floor is the dynamic one"
        cp "$WORK/nothing-dynamic" "$WORK/nothing-static"
fi
# the libraries of the daemon (aicr-enroot-agentd); the front end that
# answers --check links libc alone
full=${AGENT_FULL:-$(dirname "$AGENT")/aicr-enroot-agentd}
[ -x "$full" ] || full=$AGENT
mapfile -t libs < <(readelf -d "$full" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -v '^libc\.so')
all=()
for lib in "${libs[@]}"; do
        "$CC" -O2 -o "$WORK/with-$lib" "$WORK/nothing.c" -Wl,--no-as-needed "-l:$lib"
        all+=("-l:$lib")
done
"$CC" -O2 -o "$WORK/with-all" "$WORK/nothing.c" -Wl,--no-as-needed "${all[@]}"

runs=$(count 300 50)
# startup PROGRAM [ARG...]: sets WALL_MS (mean), RSS_KIB (peak, median of 9),
# OBJS (shared objects loaded), RELOCS (relocations the loader made)
startup() {
        hyperfine -N --warmup 20 --runs "$runs" --export-json "$WORK/h.json" "$*" >/dev/null 2>&1
        WALL_MS=$(jq '.results[0].mean * 1000' "$WORK/h.json")
        RSS_KIB=$(for _ in 1 2 3 4 5 6 7 8 9; do
                /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1
        done | sort -n | sed -n 5p)
        OBJS=$(ldd "$1" 2>/dev/null | grep -c '=>' || true)
        RELOCS=$(LD_DEBUG=statistics "$@" 2>&1 >/dev/null |
                awk '/final number of relocations:/ { f = $NF } END { print f }')
}
startup "$WORK/nothing-static"
s_ms=$WALL_MS s_rss=$RSS_KIB
result "start nothing (static)" "$(printf %.3f "$s_ms")" ms "peak RSS $s_rss KiB"
startup "$WORK/nothing-dynamic"
d_ms=$WALL_MS d_rss=$RSS_KIB
result "start nothing (libc)" "$(printf %.3f "$d_ms")" ms "peak RSS $d_rss KiB, ${RELOCS:-?} relocations"
for lib in "${libs[@]}"; do
        startup "$WORK/with-$lib"
        result "start + $lib" "+$(awk -v a="$WALL_MS" -v b="$d_ms" 'BEGIN { printf "%.3f", a - b }')" ms \
                "+$((RSS_KIB - d_rss)) KiB peak RSS, $OBJS objects, ${RELOCS:-?} relocations"
done
startup "$WORK/with-all"
result "start + every library the agent links" \
        "+$(awk -v a="$WALL_MS" -v b="$d_ms" 'BEGIN { printf "%.3f", a - b }')" ms \
        "+$((RSS_KIB - d_rss)) KiB peak RSS, $OBJS objects, ${RELOCS:-?} relocations"
all_ms=$WALL_MS all_rss=$RSS_KIB
startup "$AGENT" --version
result "start aicr-enroot-agent --version" "$(printf %.3f "$WALL_MS")" ms \
        "peak RSS $RSS_KIB KiB (the front end, then the daemon's program)"
# --check runs in the front end with libc alone (agent/cli/front.c); lint and
# diff need libjansson (JSON) and libcrypto (SHA-256); only the daemon needs
# the rest
result "not loading the daemon's libraries saves --check" \
        "$(awk -v a="$all_ms" -v b="$d_ms" 'BEGIN { printf "%.3f", a - b }')" ms \
        "and $((all_rss - d_rss)) KiB peak RSS per probe"
