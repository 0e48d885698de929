#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A short fault soak, and the watch failures it found. The agent runs under
# valgrind (errors and definite or indirect leaks fail), or as built when the
# build is sanitized (ASan and UBSan are in the binary; valgrind cannot run
# it), against the fake API server over TLS.
# 1. A watch that broke after running a while is reopened within the
#    backoff's first step, however many broke before it. A watch refused
#    with an HTTP status: 410 Gone reads the pod again (a
#    newer resourceVersion is the only way on), 403 logs the RBAC rule the
#    watch needs; the error's Status object is never taken for a watch event.
#    A PATCH refused with 409 refuses the condition it carried, not a newer
#    one made while it was in flight.
# 2. tests/bench/soak.sh with 300 kubelet-style updates (tests/bench/flip-bench)
#    flipping the condition at every update while faults are injected at
#    random: the condition at the API server ends equal to /status, the
#    agent exits 0 on SIGTERM with nothing reported. The seed is printed
#    first; SOAK_SEED=N replays it (the same faults, the same number of
#    faulted requests).
. "$(dirname "$0")/lib.sh"

kube_test_tools
FLIP=${FLIP_BENCH:-$(dirname "$AGENT")/tests/bench/flip-bench}
[ -x "$FLIP" ] || { echo "FAIL: $FLIP is not built" >&2; exit 1; }

sanitized=no
for b in "$AGENT" "$(dirname "$AGENT")/aicr-enroot-agentd"; do
        [ -f "$b" ] && grep -qa __asan_init "$b" && sanitized=yes
done
runner=()
if [ "$sanitized" = no ]; then
        command -v valgrind >/dev/null ||
                skip no-valgrind "valgrind is not installed and the build is not sanitized (--enable-sanitizers): nothing would catch a leak"
        # shellcheck disable=SC2054 # valgrind's own syntax: definite,indirect
        runner=(valgrind --quiet --trace-children=yes --error-exitcode=99 --leak-check=full
                --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect
                --log-file="$WORK/valgrind.%p.log")
fi

NS=slurm
UID0=3f6a1c2e-8d4b-4e7a-9b1c-2d5e8f0a7b64
kube_test_dirs

kube_pki "$sa" "$NS" token-1
one_pod "$WORK/pods.json" "$NS" "$UID0"
start_fake "$WORK/pods.json" --rbac "$AGENT_RBAC" --arrivals "$WORK/arrivals"
requests() { ctl GET /requests | jq -r ".[] | select(${1:-true}) | \"\(.method) \(.path) \(.status)\""; }

publish 'ENROOT_MOUNT_HOME=yes\n' 'NCCL_DEBUG=WARN\n'
cp "$WORK/src/enroot.conf" "$root/etc/enroot/enroot.conf"
cp "$WORK/src/99-aicr-defaults.env" "$root/etc/enroot/environ.d/99-aicr-defaults.env"

# start_agent from lib.sh, with the runner in front
# shellcheck disable=SC2034 # AGENT_LOG and AGENT_PID: for lib.sh's stop_agent
AGENT_LOG=$WORK/agent.log
"${runner[@]}" "$AGENT" --listen 127.0.0.1:0 --log-level debug --desired-dir "$cm" --running-root "$root" \
        --kube on --kube-api "$API" --serviceaccount-dir "$sa" --pod-name worker-0 --pod-uid "$UID0" \
        >"$AGENT_LOG" 2>&1 &
AGENT_PID=$!
# valgrind starts slowly: twice the usual bound
wait_for $((2 * HANG)) grep -q 'Serving .* on 127\.0\.0\.1:' "$AGENT_LOG" ||
        { cat "$AGENT_LOG" >&2; fail "waited $((2 * HANG)) s for the agent to serve"; finish; exit 1; }
PORT=$(sed -n 's/.*Serving .* on 127\.0\.0\.1:\([0-9]*\)\..*/\1/p' "$AGENT_LOG")
condition() { ctl GET /pods/worker-0 | jq -r '.status.conditions[] | select(.type == "EnrootConfigCurrent") | "\(.status)/\(.reason)"'; }
wait_for "$HANG" sh -c "[ \"\$(curl -sf '$CTL/pods/worker-0' | jq -r '.status.conditions[] | select(.type == \"EnrootConfigCurrent\") | .status')\" = True ]" &&
        pass || fail "waited ${HANG} s for the condition at start: $(condition)"
watch_open() { curl -sf "$CTL/state" | jq -e '.watches == 1' >/dev/null; }
wait_for "$HANG" watch_open && pass || fail "waited ${HANG} s for the agent's watch"

# --- a watch answered 410 Gone reads the pod again --------------------------------
ctl POST /reset-requests >/dev/null
ctl POST /faults '{"match": {"watch": true}, "status": 410, "count": 1}' >/dev/null
ctl POST /close-watches >/dev/null
wait_for "$HANG" sh -c "curl -sf '$CTL/requests' | jq -e 'map(select(.method == \"GET\" and (.watch | not) and (.path | endswith(\"/pods/worker-0\")))) | length >= 1' >/dev/null" &&
        pass || fail "waited ${HANG} s for the pod to be read again after 410 Gone on a watch: $(requests)"
wait_for "$HANG" watch_open && pass || fail "waited ${HANG} s for a watch after 410"
[ "$(ctl GET /requests | jq '[.[] | select(.status == 410)] | length')" = 1 ] && pass || fail "410 retried: $(requests)"

# --- a watch that broke after running a while is reopened at once -----------------
# Each break of a watch that had lasted was counted as the next failure of a
# series: the fourth such break waited 4 to 8 s, the sixth 16 to 32 s. The
# delay is the agent's own choice, which it logs ("retrying in X s"): each
# must be the backoff's first step (0.5 to 1 s), however long this machine
# takes to carry it out.
broke='watching the pod failed: .*; retrying in [0-9.]* s\.'
breaks() { grep -c -- "$broke" "$AGENT_LOG" || true; }
for n in 1 2 3 4; do
        sleep 1.5 # a lower bound: the watch has lasted more than the backoff's base (1 s)
        seen=$(breaks)
        ctl POST /break-watches >/dev/null
        wait_for "$HANG" eval '[ "$(breaks)" -gt "$seen" ]' ||
                { fail "waited ${HANG} s for the agent to log the ${n}th break of its watch"; break; }
        delay=$(grep -- "$broke" "$AGENT_LOG" | tail -n 1 | sed 's/.*retrying in \([0-9.]*\) s\..*/\1/')
        awk -v d="$delay" 'BEGIN { exit !(d <= 1.0) }' ||
                { fail "the watch broken a ${n}th time is retried in ${delay} s, not within the backoff's first step (1 s)"; break; }
        wait_for "$HANG" watch_open || { fail "waited ${HANG} s for the watch broken a ${n}th time to reopen"; break; }
done
[ "$n" = 4 ] && pass

# --- a 409 refuses the condition sent, not a newer one made meanwhile --------------
# The PATCH for A is held for 5 s and then refused; B, made while it was
# held, was never sent and must go out (it used to be taken as refused too).
# In this order: A's PATCH arrives (the fake's arrivals file), B is published
# and evaluated, and only then is A's PATCH answered.
mark=$(wc -l <"$WORK/arrivals")
ctl POST /faults '{"match": {"method": "PATCH"}, "status": 409, "delay_ms": 5000, "count": 1}' >/dev/null
publish 'ENROOT_MOUNT_HOME=no\n' 'NCCL_DEBUG=WARN\n'
held() { tail -n +$((mark + 1)) "$WORK/arrivals" | grep -Eq '^[0-9]+ PATCH [^ ]* status:409,delay:5000 '; }
wait_for "$HANG" held && pass || fail "waited ${HANG} s for the PATCH for A to be held"
ctl POST /reset-requests >/dev/null
publish 'ENROOT_MOUNT_HOME=no\nENROOT_REMAP_ROOT=no\n' 'NCCL_DEBUG=WARN\n'
wait_for "$HANG" metric_is 'aicr_enroot_config_key_drift{file="enroot.conf",key="ENROOT_REMAP_ROOT",change="added"}' 1 ||
        fail "waited ${HANG} s for B to be evaluated"
[ "$(requests '.method == "PATCH"')" = "" ] && pass ||
        fail "B was evaluated only after the PATCH for A was answered (the case was not tested): $(requests)"
wait_for "$HANG" sh -c "curl -sf '$CTL/pods/worker-0' | jq -e '.status.conditions[] | select(.type == \"EnrootConfigCurrent\") | .status == \"False\" and (.message | test(\"added: ENROOT_REMAP_ROOT\"))' >/dev/null" &&
        pass || fail "the condition made during a refused PATCH was not sent: $(condition); $(requests '.method == "PATCH"')"
curl -sf "http://127.0.0.1:$PORT/status" | jq -e '.kube.condition_synced == true' >/dev/null && pass || fail "not synced after the 409"

# --- a watch answered 403 names the RBAC rule it needs ----------------------------
ctl POST /faults '{"match": {"watch": true}, "status": 403, "count": 1}' >/dev/null
ctl POST /close-watches >/dev/null
wait_for "$HANG" grep -q 'watching the pod: 403 Forbidden: the agent.s service account needs RBAC "watch on pods" in namespace slurm' "$AGENT_LOG" &&
        pass || fail "waited ${HANG} s for the 403 on a watch: $(grep -i 'watch' "$AGENT_LOG" | tail -3)"
grep -q 'watch event is not usable' "$AGENT_LOG" && fail "an error answer was read as a watch event: $(grep 'not usable' "$AGENT_LOG" | head -2)" || pass
curl -sf -m "$HANG" "http://127.0.0.1:$PORT/metrics" >/dev/null && pass || fail "/metrics not served (waited ${HANG} s)"
stop_agent
for v in "$WORK"/valgrind.*.log; do
        [ -e "$v" ] || continue
        grep -q '^==[0-9]*==' "$v" && fail "valgrind: $(grep '^==[0-9]*==' "$v" | head -30)" || pass
done
stop_fake

# --- the soak ---------------------------------------------------------------------
seed=${SOAK_SEED:-$(($(date +%s%N) % 32768))}
printf '%s: soak seed %s (replay: SOAK_SEED=%s make check TESTS=tests/integration/test-soak.sh)\n' \
        "$TEST_NAME" "$seed" "$seed"
# 50 ms between updates, a fault after every 1 to 30 (about 20, each waited
# for until the agent has recovered: about a minute under valgrind)
if SOAK_SEED=$seed SOAK_UPDATES=${SOAK_UPDATES:-300} SOAK_PAUSE_MS=50 SOAK_FAULT_GAP=15 SOAK_VALGRIND=auto \
        FLIP_BENCH=$FLIP FAKE_APISERVER=$FAKE \
        BENCH_OUT=$WORK/soak-out bash "$TOP_SRCDIR/tests/bench/soak.sh" >"$WORK/soak.out" 2>&1; then
        pass
else
        fail "the soak with seed $seed failed:"$'\n'"$(tail -40 "$WORK/soak.out")"
fi
cat "$WORK/soak.out"
grep -q '^soak updates  *302 ' "$WORK/soak.out" && pass || fail "not 302 updates"
grep -q 'target soak: converged, exit 0, no leak or error  *MET' "$WORK/soak.out" && pass || fail "soak target"
landed=$(awk '/^soak requests faulted/ { print $4 }' "$WORK/soak.out")
[ "${landed:-0}" -ge 3 ] && pass || fail "only ${landed:-0} requests got a fault (seed $seed)"

finish
