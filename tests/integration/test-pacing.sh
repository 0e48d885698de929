#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# A storm of ConfigMap updates, against the real agent with its pod condition
# kept (the fake API server over TLS, real inotify): a writer makes a
# kubelet-style update every 200 µs for 2 s and waits for nobody (tests/bench/
# flip-bench storm; kubelet updates a volume about once a minute), with a
# 90 KiB environment file, so that a look per update would take more than
# one CPU. What a user sees:
#  - each look at both sides is followed by at least as long without one (at
#    most 100 ms; manager.c), checked from the agent's debug log, which gives
#    each look's start and end on CLOCK_MONOTONIC: so looks take at most
#    half the time. The agent's CPU share over the storm is printed, not
#    checked (it depends on the machine: `make bench` is for figures);
#  - the API server gets at most PODSYNC_PATCH_BURST (10) PATCHes at once,
#    then one per 20 ms at most (include/io/podsync.h), not one per update;
#  - /metrics answers during the storm;
#  - after it, /metrics and the condition name the storm's last update.
# The updates a writer waits for (one as soon as the last is seen) are looked
# at at once: that is the latency benchmark's back-to-back figure
# (tests/bench/latency.sh) and test-watcher's test_flip_after_flip.
. "$(dirname "$0")/lib.sh"

kube_test_tools
FLIP=${FLIP_BENCH:-$(dirname "$AGENT")/tests/bench/flip-bench}
[ -x "$FLIP" ] || { echo "FAIL: $FLIP is not built" >&2; exit 1; }

NS=slurm
UID0=6e0f3b9a-2c41-4d8e-a7f5-1b9c0d2e3f45
TYPE=EnrootConfigCurrent
kube_test_dirs

kube_pki "$sa" "$NS" token-1
one_pod "$WORK/pods.json" "$NS" "$UID0"
# A large environment file (3,000 variables, about 90 KiB): each look costs
# more than the writer's update.
publish 'ENROOT_MOUNT_HOME=yes\n' "$(awk 'BEGIN { for (i = 1; i <= 3000; i++) printf "AICR_SETTING_%04d=value-%04d-%012d\n", i, i, i }')\n"
cp "$WORK/src/enroot.conf" "$root/etc/enroot/enroot.conf"
cp "$WORK/src/99-aicr-defaults.env" "$root/etc/enroot/environ.d/99-aicr-defaults.env"
start_fake "$WORK/pods.json" --rbac "$AGENT_RBAC" --arrivals "$WORK/arrivals"

ctl_condition() { ctl GET /pods/worker-0 | jq -c --arg t "$TYPE" '.status.conditions[] | select(.type == $t)'; }
condition_names() { ctl_condition | jq -r .message | grep -q -- "$1"; }
patches() { grep -c '^[0-9]* PATCH ' "$WORK/arrivals"; }
# CPU of the process, every thread, in clock ticks (utime + stime)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

start_agent "$WORK/agent.log" --desired-dir "$cm" --running-root "$root" --kube on --kube-api "$API" \
        --serviceaccount-dir "$sa" --pod-name worker-0 --pod-namespace "$NS" --pod-uid "$UID0" ||
        { finish; exit 1; }
wait_for "$HANG" sh -c "curl -sf '$CTL/pods/worker-0' | jq -e '.status.conditions[] | select(.type == \"$TYPE\" and .status == \"True\")' >/dev/null" &&
        pass || fail "waited ${HANG} s for the condition to be True at start: $(ctl_condition)"

# --- the storm ------------------------------------------------------------------
p0=$(patches)
c0=$(cpu_ticks "$AGENT_PID")
t0=$EPOCHREALTIME
"$FLIP" storm --dir "$cm" --count 10000 --gap-us 200 \
        --key enroot.conf="$WORK/src/enroot.conf" \
        --key 99-aicr-defaults.env="$WORK/src/99-aicr-defaults.env" \
        --vary 99-aicr-defaults.env >"$WORK/storm.out" 2>&1 &
storm=$!
served=0 asked=0
while kill -0 "$storm" 2>/dev/null; do
        asked=$((asked + 1))
        curl -sf -m 1 "http://127.0.0.1:$PORT/metrics" >/dev/null && served=$((served + 1))
        sleep 0.1
done
wait "$storm" || { cat "$WORK/storm.out" >&2; fail "flip-bench storm failed"; finish; exit 1; }
c1=$(cpu_ticks "$AGENT_PID")
t1=$EPOCHREALTIME
cat "$WORK/storm.out"
last=$(sed -n 's/.* last=\(BENCH_[0-9]*\).*/\1/p' "$WORK/storm.out")
wall_ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
cpu_ms=$(((c1 - c0) * 1000 / $(getconf CLK_TCK)))
looks=$(grep -c 'Look (.*) starts at' "$WORK/agent.log")
echo "storm: ${wall_ms} ms, the agent's CPU ${cpu_ms} ms ($((cpu_ms * 100 / wall_ms))% of one CPU), $looks looks in all, /metrics answered $served of $asked"
# The pace from the log: a look that ends at E after D us is followed by
# the next look's start at E + min(D, 100 ms) at the earliest.
pace=$(awk '
        /Look done at [0-9]+ us, after [0-9]+ us\./ {
                for (i = 1; i <= NF; i++) {
                        if ($i == "at") end = $(i + 1) + 0
                        if ($i == "after") took = $(i + 1) + 0
                }
                done = 1
                next
        }
        /Look \(.*\) starts at [0-9]+ us\./ {
                for (i = 1; i <= NF; i++) if ($i == "at") start = $(i + 1) + 0
                n++
                if (done) {
                        pause = took < 100000 ? took : 100000
                        paced++
                        if (start < end + pause) {
                                bad++
                                if (!first) first = sprintf("a look started %d us after the last one ended, which took %d us", start - end, took)
                        }
                }
                done = 0
        }
        END { printf "%d %d %d %s\n", n, paced, bad, first }' "$WORK/agent.log")
read -r n_looks n_paced n_bad first_bad <<<"$pace"
echo "looks: $n_looks, $n_paced after another, $n_bad too soon"
[ "$n_paced" -ge 10 ] && pass || fail "only $n_paced looks followed another: the log has no pace to check ($pace)"
[ "$n_bad" -eq 0 ] && pass || fail "$n_bad of $n_paced looks started before the pause ended: $first_bad"
[ "$asked" -gt 0 ] && [ "$served" -eq "$asked" ] && pass ||
        fail "/metrics answered $served of $asked GETs (1 s each) during the storm"

# --- after it ---------------------------------------------------------------------
expect_metric "key=\"$last\"" 1
wait_for "$HANG" condition_names "$last" && pass ||
        fail "waited ${HANG} s for the condition to name $last: $(ctl_condition)"
storm_patches=$(($(patches) - p0))
# 10 at once, then one per 20 ms over the storm and the wait after it
elapsed_ms=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
bound=$((10 + elapsed_ms / 20 + 1))
echo "PATCHes: $storm_patches for 10000 updates in ${elapsed_ms} ms (bound $bound)"
[ "$storm_patches" -le "$bound" ] && pass ||
        fail "$storm_patches PATCHes for a storm of ${elapsed_ms} ms: more than 10 at once and one per 20 ms ($bound)"

stop_agent
finish
