#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Fleet: BENCH_FLEET real agent processes (default 1,000; 50 with
# BENCH_QUICK=1) on this machine against one tests/tools/fake-apiserver over
# TLS, each with its own pod, ConfigMap volume (kubelet's atomic writer) and
# running files, all with the options of the latency benchmark (--kube on, the
# default resync interval). The fake holds every agent's watch. Phases:
#   start     every agent started at once: requests per agent, the API
#             server's peak request rate (per second), the time until every
#             pod's condition is True/ConfigCurrent;
#   change    one ConfigMap change written to every volume at a random moment
#             over BENCH_FLEET_SPREAD seconds (default 75; 10 with
#             BENCH_QUICK=1), as kubelets do (each syncs a pod's volumes every
#             60-90 s): PATCHes per pod (target: exactly 1), peak and mean
#             rate, the time until every condition is False/ConfigDrifted;
#   wipe      an operator-style rewrite of every pod's conditions (the whole
#             list replaced without the agent's, as Slinky's operator writes
#             from its cache): repairs per pod (target: 1) and the time until
#             every condition is back;
#   steady    BENCH_FLEET_STEADY seconds (default 600; 30 with BENCH_QUICK=1)
#             with nothing changing: writes (target: 0), watch reconnects;
# and the CPU time of every phase for the agents together and for the fake,
# the agents' unique memory (USS) and the fake's RSS. Conditions are read
# from the fake's control port every BENCH_FLEET_POLL seconds (default 0.5):
# the times are that fine; a phase not done after BENCH_FLEET_TIMEOUT seconds
# (default 600) fails the run. docs/BENCHMARKS.md extrapolates to 10,000 pods.
# Needs root or enough per-user inotify instances (one per agent): when
# fs.inotify.max_user_instances is too low it is raised for the run and put
# back after, or, where it cannot be written, the benchmark is skipped.
# Not covered: subPath bind mounts (each agent reads plain running files; a
# node has few pods, so 1,000 mount namespaces' mount tables would measure
# this machine, not a pod), kubelet's own writes to the pods, and the real
# API server's costs (etcd, admission, its watch cache): the fake's CPU is a
# lower bound of the server's work, not a model of it.
# Usage: fleet.sh (through run.sh or make bench: make bench BENCH_ARGS=fleet)
. "$(dirname "$0")/lib.sh"
need jq jq
need openssl openssl
have_fake_apiserver || {
        say "SKIP: tests/tools/fake-apiserver is not built (make bench builds it)" >&2
        exit 77
}

n=${BENCH_FLEET:-$(count 1000 50)}
spread=${BENCH_FLEET_SPREAD:-$(count 75 10)}
steady=${BENCH_FLEET_STEADY:-$(count 600 30)}
poll=${BENCH_FLEET_POLL:-0.5}
limit=${BENCH_FLEET_TIMEOUT:-600}
TYPE=EnrootConfigCurrent
[[ $n =~ ^[1-9][0-9]*$ ]] || { say "BENCH_FLEET must be a positive number, not \"$n\"" >&2; exit 1; }

# --- the machine's limits: inotify instances (one per agent), descriptors ---
inotify_max=/proc/sys/fs/inotify/max_user_instances
inotify_old=
fleet_cleanup() {
        bench_cleanup
        [ -z "$inotify_old" ] || echo "$inotify_old" >"$inotify_max" 2>/dev/null || true
}
trap fleet_cleanup EXIT
want=$((n + 128))
if [ "$(cat "$inotify_max")" -lt "$want" ]; then
        old=$(cat "$inotify_max")
        if echo "$want" >"$inotify_max" 2>/dev/null; then
                inotify_old=$old
                say "fs.inotify.max_user_instances raised from $old to $want for the run"
        else
                say "SKIP: fs.inotify.max_user_instances is $old, $n agents need $want, and it cannot be raised here" >&2
                exit 77
        fi
fi
# the fake: a watch and a write connection per agent; each agent a few files
fds=$((4 * n + 1024))
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt "$fds" ]; then
        say "SKIP: the open-file limit (ulimit -Hn $(ulimit -Hn)) is below the $fds the fake needs" >&2
        exit 77
fi
ulimit -n "$fds"

# --- the pods, the volumes, the fake ---
pod_uid() { printf '5d1c7a2e-0b6f-4f3e-9c1a-%012d' "$1"; }
kube=$WORK/kube
mkdir -p "$kube"
# Pods as a Slinky worker pod looks to the agent: slurmd with the subPath
# mounts, the agent a native sidecar, Ready.
awk -v n="$n" -v ns="$KUBE_NS" 'BEGIN {
        printf "{\"items\": ["
        for (i = 0; i < n; i++) {
                printf "%s{\"metadata\": {\"name\": \"worker-%d\", \"namespace\": \"%s\", ", i ? "," : "", i, ns
                printf "\"uid\": \"5d1c7a2e-0b6f-4f3e-9c1a-%012d\", \"resourceVersion\": \"%d\", ", i, 100 + i
                printf "\"labels\": {\"app.kubernetes.io/component\": \"worker\"}}, "
                printf "\"spec\": {\"hostname\": \"gpu-%d\", \"containers\": [{\"name\": \"slurmd\", \"volumeMounts\": [", i
                printf "{\"name\": \"enroot-config\", \"mountPath\": \"/etc/enroot/enroot.conf\", \"subPath\": \"enroot.conf\"}, "
                printf "{\"name\": \"enroot-config\", \"mountPath\": \"/etc/enroot/environ.d/99-aicr-defaults.env\", \"subPath\": \"99-aicr-defaults.env\"}]}], "
                printf "\"initContainers\": [{\"name\": \"aicr-enroot-agent\", \"restartPolicy\": \"Always\"}]}, "
                printf "\"status\": {\"phase\": \"Running\", \"conditions\": [{\"type\": \"Ready\", \"status\": \"True\"}]}}"
        }
        print "]}"
}' >"$kube/pods.json"
start_fake_apiserver "$kube" --max-connections $((3 * n + 64))
say "$n agents against $API (the fake: pid $FAKE_PID)"

make_payload "$WORK/src"
make_volume "$WORK/template" "$WORK/src"
for ((i = 0; i < n; i++)); do
        cp -a "$WORK/template" "$WORK/a$i"
done
mkdir -p "$WORK/next"
printf 'ENROOT_MOUNT_HOME=no\nENROOT_REMAP_ROOT=yes\n' >"$WORK/next/enroot.conf"
cp "$WORK/src/99-aicr-defaults.env" "$WORK/next/99-aicr-defaults.env"

# --- helpers ---
AGENT_PIDS=()
agents_cpu_ns() {
        local p
        for p in "${AGENT_PIDS[@]}"; do
                cat /proc/"$p"/task/*/schedstat 2>/dev/null
        done | awk '{ s += $1 } END { printf "%.0f\n", s }'
}
alive() {
        local p k=0
        for p in "${AGENT_PIDS[@]}"; do
                [ -d "/proc/$p" ] && k=$((k + 1))
        done
        echo "$k"
}
now() { echo "$EPOCHREALTIME"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
# wrong STATUS/REASON: "POD STATUS/REASON" of every pod whose condition is
# not STATUS/REASON (none: "-")
wrong() {
        curl -sf "$CTL/pods" | jq -r --arg t "$TYPE" --arg want "$1" \
                '.items[] | (.status.conditions // [] | map(select(.type == $t)) | .[0]) as $c
                 | select($c == null or "\($c.status)/\($c.reason)" != $want)
                 | "\(.metadata.name) \(if $c then "\($c.status)/\($c.reason)" else "-" end)"'
}
# await STATUS/REASON START WHAT: waits until every pod's condition is
# STATUS/REASON; prints the seconds since START, or, after BENCH_FLEET_TIMEOUT
# seconds (default 600), fails naming
# the pods still wrong and the last lines of a dead agent's log
await() {
        local left t p
        while :; do
                left=$(wrong "$1") || left="the fake's control port did not answer"
                t=$(now)
                [ -n "$left" ] || break
                if awk -v a="$2" -v b="$t" -v l="$limit" 'BEGIN { exit !(b - a > l) }'; then
                        say "$3: after $limit s $(wc -l <<<"$left") of $n conditions are not $1 ($(alive) agents alive), e.g.:" >&2
                        head -5 <<<"$left" >&2
                        for ((p = 0; p < n; p++)); do
                                [ -d "/proc/${AGENT_PIDS[p]}" ] && continue
                                say "agent $p (worker-$p) has exited; its log ends:" >&2
                                tail -5 "$WORK/a$p/log" >&2
                                break
                        done
                        exit 1
                fi
                sleep "$poll"
        done
        secs "$2" "$t"
}
lines() { wc -l <"$kube/arrivals"; }
# window FROM TO: the arrivals lines FROM+1..TO
window() { sed -n "$(($1 + 1)),$2p" "$kube/arrivals"; }
# per_pod FROM TO METHOD: "min max mean off" of METHOD requests per pod
# (off: pods with other than exactly one)
per_pod() {
        window "$1" "$2" | awk -v n="$n" -v m="$3" '$2 == m && match($3, /\/pods\/worker-[0-9]+/) {
                c[substr($3, RSTART + 13, RLENGTH - 13)]++ }
        END {
                min = -1; max = 0; s = 0; off = 0
                for (i = 0; i < n; i++) {
                        k = c[i] + 0; s += k
                        if (min < 0 || k < min) min = k
                        if (k > max) max = k
                        if (k != 1) off++
                }
                printf "%d %d %.2f %d\n", min, max, s / n, off
        }'
}
# rates FROM TO: "peak mean count seconds" requests per second (peak: the
# busiest whole second; mean: over the first to the last request, or the
# count when they all came within a second)
rates() {
        window "$1" "$2" | awk '{ t = $1 / 1e6; b[int(t)]++; if (!first || t < first) first = t; if (t > last) last = t; n++ }
        END {
                peak = 0
                for (k in b) if (b[k] > peak) peak = b[k]
                d = last - first
                printf "%d %.1f %d %.1f\n", peak, (d > 1 ? n / d : n), n, d
        }'
}
# phase_end: 2 s for a late request to show, then the phase's end: L (the
# arrivals' line count), A (the agents' CPU, ns) and F (the fake's)
phase_end() {
        sleep 2
        L=$(lines)
        A=$(agents_cpu_ns)
        F=$(cpu_ns "$FAKE_PID")
}
# one_each TARGET MIN MAX OFF: the verdict on exactly one request per pod
one_each() {
        if [ "$2" = 1 ] && [ "$3" = 1 ]; then
                target "$1" MET "$n pods, each exactly 1"
        else
                target "$1" MISSED "min $2, max $3, $4 pods other than 1"
        fi
}
ms_per_pod() { awk -v ns="$1" -v n="$n" 'BEGIN { printf "%.2f", ns / 1e6 / n }'; }
ms_of() { awk -v ns="$1" 'BEGIN { printf "%.0f", ns / 1e6 }'; }

# --- start: every agent at once ---
L0=$(lines)
f0=$(cpu_ns "$FAKE_PID")
t0=$(now)
for ((i = 0; i < n; i++)); do
        "$AGENT" --desired-dir "$WORK/a$i/cm" --running-root "$WORK/a$i/root" \
                --listen 127.0.0.1:0 --kube on --kube-api "$API" --serviceaccount-dir "$kube/sa" \
                --pod-name "worker-$i" --pod-namespace "$KUBE_NS" --pod-uid "$(pod_uid "$i")" \
                >"$WORK/a$i/log" 2>&1 &
        AGENT_PIDS+=($!)
        BENCH_PIDS+=($!)
done
launched=$(secs "$t0" "$(now)")
t_start=$(await True/ConfigCurrent "$t0" start)
phase_end
L1=$L a1=$A f1=$F
read -r r_peak r_mean r_count r_secs <<<"$(rates "$L0" "$L1")"
result "fleet agents" "$n" "" "$(alive) alive after start; launched in $launched s"
result "fleet start: all conditions True" "$t_start" s "from the first launch; the launches took $launched s"
result "fleet start: requests per agent" "$(awk -v c="$r_count" -v n="$n" 'BEGIN { printf "%.2f", c / n }')" "" \
        "$r_count in $r_secs s: $(window "$L0" "$L1" | awk '{ k[$2]++ } END { for (m in k) printf "%s %d ", m, k[m] }')"
result "fleet start: API peak rate" "$r_peak" req/s "mean $r_mean req/s"
result "fleet start: agents' CPU" "$(ms_per_pod "$a1")" ms/agent "$(ms_of "$a1") ms in all; the fake $(ms_of $((f1 - f0))) ms"

# --- change: one ConfigMap change reaching every volume over the spread ---
mapfile -t order < <(awk -v n="$n" -v s="$spread" -v seed="$RANDOM" 'BEGIN {
        srand(seed)
        for (i = 0; i < n; i++) printf "%.3f %d\n", rand() * s, i
}' | sort -n)
f1=$(cpu_ns "$FAKE_PID")
t1=$(now)
for entry in "${order[@]}"; do
        read -r at i <<<"$entry"
        # microseconds: the moment to write volume i, less now
        wait_us=$(( ${t1/./} + 10#${at/./} * 1000 - ${EPOCHREALTIME/./} ))
        ((wait_us <= 0)) || sleep "$((wait_us / 1000000)).$(printf '%06d' $((wait_us % 1000000)))"
        bash "$WRITER" "$WORK/a$i/cm" enroot.conf="$WORK/next/enroot.conf" \
                99-aicr-defaults.env="$WORK/next/99-aicr-defaults.env" >/dev/null
done
t_written=$(now)
t_change=$(await False/ConfigDrifted "$t1" change)
phase_end
L2=$L a2=$A f2=$F
read -r p_min p_max p_mean p_off <<<"$(per_pod "$L1" "$L2" PATCH)"
read -r r_peak r_mean r_count r_secs <<<"$(rates "$L1" "$L2")"
result "fleet change: spread" "$(secs "$t1" "$t_written")" s "the last volume written; $spread s asked"
result "fleet change: all conditions False" "$t_change" s \
        "from the first write; $(secs "$t_written" "$(awk -v a="$t1" -v b="$t_change" 'BEGIN { printf "%.6f", a + b }')") s after the last"
result "fleet change: PATCHes per pod" "$p_mean" "" "min $p_min, max $p_max; $p_off pods other than 1"
result "fleet change: API peak rate" "$r_peak" req/s "mean $r_mean req/s, $r_count requests in $r_secs s"
result "fleet change: agents' CPU" "$(ms_per_pod $((a2 - a1)))" ms/agent "the fake $(ms_of $((f2 - f1))) ms"
one_each "fleet: one PATCH per transition" "$p_min" "$p_max" "$p_off"

# --- wipe: the operator rewrites every pod's conditions without the agent's ---
{
        for ((i = 0; i < n; i++)); do
                printf 'url = "%s/pods/worker-%d/rewrite-conditions"\n' "$CTL" "$i"
                printf 'header = "Content-Type: application/json"\n'
                printf 'data = "[{\\"type\\": \\"Ready\\", \\"status\\": \\"True\\"}]"\n'
                printf 'output = "/dev/null"\n'
                [ "$i" -eq $((n - 1)) ] || printf 'next\n'
        done
} >"$WORK/wipe.curl"
t2=$(now)
curl -sf -K "$WORK/wipe.curl" || { say "the wipe failed" >&2; exit 1; }
t_wiped=$(now)
t_repair=$(await False/ConfigDrifted "$t2" wipe)
phase_end
L3=$L a3=$A f3=$F
read -r w_min w_max w_mean w_off <<<"$(per_pod "$L2" "$L3" PATCH)"
result "fleet wipe: all conditions back" "$t_repair" s "from the first rewrite; the rewrites took $(secs "$t2" "$t_wiped") s"
result "fleet wipe: repairs per pod" "$w_mean" "" "min $w_min, max $w_max; $w_off pods other than 1"
result "fleet wipe: agents' CPU" "$(ms_per_pod $((a3 - a2)))" ms/agent "the fake $(ms_of $((f3 - f2))) ms"
one_each "fleet: one repair per wiped pod" "$w_min" "$w_max" "$w_off"

# --- steady: nothing changes ---
say "steady state for $steady s"
sleep "$steady"
L4=$(lines)
a4=$(agents_cpu_ns)
f4=$(cpu_ns "$FAKE_PID")
writes=$(window "$L3" "$L4" | awk '$2 != "GET" { k++ } END { print k + 0 }')
watches=$(window "$L3" "$L4" | awk '$2 == "GET" && $3 ~ /[?&]watch=/ { k++ } END { print k + 0 }')
gets=$(window "$L3" "$L4" | awk '$2 == "GET" && $3 !~ /[?&]watch=/ { k++ } END { print k + 0 }')
result "fleet steady: writes" "$writes" "" "in $steady s"
result "fleet steady: watch reconnects" "$watches" "" \
        "$(awk -v w="$watches" -v n="$n" -v s="$steady" 'BEGIN { printf "%.2f per agent-hour", w / n * 3600 / s }'); other GETs $gets"
result "fleet steady: agents' CPU" "$(awk -v ns=$((a4 - a3)) -v n="$n" -v s="$steady" 'BEGIN { printf "%.2f", ns / 1e3 / n / s }')" \
        "us/agent/s" "$(ms_of $((a4 - a3))) ms in all in $steady s (resyncs, watch reconnects); the fake $(ms_of $((f4 - f3))) ms"
if [ "$writes" = 0 ]; then
        target "fleet: no writes at steady state" MET "$n agents, $steady s"
else
        target "fleet: no writes at steady state" MISSED "$writes writes in $steady s"
fi

# --- memory and the whole run ---
uss_total=0
for p in "${AGENT_PIDS[@]}"; do
        [ -r "/proc/$p/smaps_rollup" ] && uss_total=$((uss_total + $(uss "$p")))
done
result "fleet agents' USS" "$((uss_total / n))" KiB/agent "$((uss_total / 1024)) MiB for $n; the fake's RSS $(smaps "$FAKE_PID" Rss) KiB"
result "fleet agents alive at the end" "$(alive)" "" "of $n"
result "fleet CPU in all" "$(ms_of "$a4")" ms "the agents; the fake $(ms_of $((f4 - f0))) ms"
cp "$kube/arrivals" "$BENCH_OUT/fleet-arrivals.txt"
