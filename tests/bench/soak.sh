#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Fault soak: SOAK_UPDATES ConfigMap updates (default 10,000; 1,000 with
# BENCH_QUICK=1) while tests/tools/fake-apiserver injects faults at random,
# the agent under valgrind, or as built when the build is sanitized
# (--enable-sanitizers: AddressSanitizer, LeakSanitizer and UBSan in the binary).
# Every update is made by kubelet's atomic writer in C (tests/bench/flip-bench
# updates --alternate) and waited for in /metrics: odd updates drift a key,
# even ones restore the running files, so the pod condition's status flips at
# every update. Between batches of 1 to 2*SOAK_FAULT_GAP updates (default
# 20), one fault, drawn from a seeded RNG (SOAK_SEED, printed; default from
# the clock), once the agent has recovered from the last one (waited for,
# never skipped; see wait_recovered):
#   500        the next 1 to 3 PATCHes (or any requests) answer 500
#   429        the next PATCH answers 429 with Retry-After: 1
#   409        the next PATCH answers 409 Conflict (the agent waits for the
#              next change of the condition, by design)
#   drop       the next 1 to 2 PATCHes (or any requests) lose their connection
#   slow       the next PATCH (or any request) is answered after 0.2 to 1.5 s
#   close      every watch stream ends (an API server restart)
#   watch-410  the next watch answers 410 Gone, and the watch is closed
#   expire     the watch is closed (its next try answers 500), the pod is
#              rewritten by an operator without the condition and the
#              history compacted: the agent's resume gets the in-stream 410
# The same seed gives the same batches and the same faults in the same
# order, whatever the timing, and so the same number of requests to fault
# (each fault's count, none for close); checked: those that got one plus
# those left at the end make that number. Where each lands (which request,
# which update) depends on timing. After the last update the last fault is
# waited for like the others, the faults are cleared and two
# more updates are made (the condition flips twice), so a condition refused
# by an injected 409 is sent again. Then, within 150 s (the agent's longest backoff
# is 120 s): the pod's condition at the fake (status and reason) equals what
# the agent's /status says (current or drifted files), /status says it is
# synced, and the drifted keys are in the condition's message. Then SIGTERM:
# the agent exits 0, valgrind (or the sanitizers) reported nothing.
# Prints the counts: updates, faults injected per kind and those that hit,
# PATCHes, API requests; exits 1 when a check failed.
# Environment: SOAK_UPDATES, SOAK_SEED, SOAK_FAULT_GAP, SOAK_PAUSE_MS (after
# each update, default 0: back to back), SOAK_VALGRIND (auto:
# valgrind unless the binary is sanitized; no: run it as built, no memory
# checks in a plain build; yes: valgrind).
. "$(dirname "$0")/lib.sh"
need jq jq
need curl curl
: "${FLIP_BENCH:?flip-bench is not built: make bench builds it}"
have_fake_apiserver || { say "SKIP: tests/tools/fake-apiserver is not built or openssl is missing" >&2; exit 77; }

n=${SOAK_UPDATES:-$(count 10000 1000)}
seed=${SOAK_SEED:-$(($(date +%s%N) % 32768))}
gap=${SOAK_FAULT_GAP:-20}
pause_ms=${SOAK_PAUSE_MS:-0}
mode=${SOAK_VALGRIND:-auto}
sanitized=no
# aicr-enroot-agent may be a launcher that execs aicr-enroot-agentd beside it
for b in "$AGENT" "$(dirname "$AGENT")/aicr-enroot-agentd"; do
        [ -f "$b" ] && grep -qa __asan_init "$b" && sanitized=yes
done
if [ "$mode" = auto ]; then
        if [ "$sanitized" = yes ]; then mode=no; else mode=yes; fi
fi
runner=()
if [ "$mode" = yes ]; then
        need valgrind valgrind
        [ "$sanitized" = no ] || { say "valgrind cannot run a sanitized build: SOAK_VALGRIND=no" >&2; exit 2; }
        # --trace-children: through the launcher's exec into the daemon
        # shellcheck disable=SC2054 # valgrind's own syntax: definite,indirect
        runner=(valgrind --quiet --trace-children=yes --error-exitcode=99 --leak-check=full
                --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect
                --log-file="$WORK/valgrind.%p.log")
        checker=valgrind
elif [ "$sanitized" = yes ]; then
        checker="ASan+UBSan build"
else
        checker="none (a plain build without valgrind)"
fi
say "seed $seed (SOAK_SEED=$seed replays it): $n updates, a fault every 1 to $((2 * gap)) updates, memory checks: $checker"

trap 'say "FAIL: line $LINENO: $BASH_COMMAND exited $?" >&2' ERR
failures=0
check() { # LABEL CMD...: CMD must succeed
        local label=$1
        shift
        if "$@"; then return 0; fi
        failures=$((failures + 1))
        say "FAIL: $label" >&2
}

make_payload "$WORK/src"
make_volume "$WORK" "$WORK/src"
start_fake_apiserver "$WORK/kube"

ctl() { curl -sf -X "$1" "$CTL$2" ${3:+-H 'Content-Type: application/json' --data-binary "$3"}; }
fault() { ctl POST /faults "$1" >/dev/null; }

# The agent, as flip-bench's latency mode and start_agent find it.
"${runner[@]}" "$AGENT" --listen 127.0.0.1:0 --desired-dir "$WORK/cm" --running-root "$WORK/root" \
        "${KUBE_ARGS[@]}" >"$WORK/agent.log" 2>&1 &
AGENT_PID=$!
BENCH_PIDS+=("$AGENT_PID")
PORT=
for _ in $(seq 1 1200); do
        PORT=$(sed -n 's/.*Serving .* on 127\.0\.0\.1:\([0-9]*\)\..*/\1/p' "$WORK/agent.log")
        [ -n "$PORT" ] && break
        kill -0 "$AGENT_PID" 2>/dev/null || break
        sleep 0.05
done
[ -n "$PORT" ] || { cat "$WORK/agent.log" >&2; say "the agent did not start" >&2; exit 1; }
ready=no
for _ in $(seq 1 600); do
        curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && { ready=yes; break; }
        sleep 0.05
done
[ "$ready" = yes ] || { tail -20 "$WORK/agent.log" >&2; say "the agent serves but was not ready within 30 s" >&2; exit 1; }

if [ "$mode" = yes ]; then
        check "the agent does not run under valgrind" grep -q vgpreload_memcheck "/proc/$AGENT_PID/maps"
fi

updates() { # FIRST COUNT
        # The soak measures no latency: an update only has to arrive.
        FLIP_BENCH_SEEN_TIMEOUT_S=60 "$FLIP_BENCH" updates --dir "$WORK/cm" --first "$1" --count "$2" --alternate \
                --pause-ms "$pause_ms" \
                --port "$PORT" --key enroot.conf="$WORK/src/enroot.conf" \
                --key 99-aicr-defaults.env="$WORK/src/99-aicr-defaults.env" \
                --vary 99-aicr-defaults.env >>"$WORK/updates.out"
}

declare -A injected=()
kinds=(500 429 409 drop slow close watch-410 expire)
for k in "${kinds[@]}"; do injected[$k]=0; done
to_land=0    # the requests the injected faults will fault: their counts
recover_ms=0 # waited in all for the agent to recover
# wait_recovered: until no fault waits for its request, the watch is open
# again, and the condition is synced (a PATCH went through since the last
# fault: the agent is out of its backoff, which a success resets) or the last
# PATCH was refused with 409 (the agent then waits for the next change, by
# design). Up to 150 s (the agent's longest backoff is 120 s). A fault still
# waiting after 5 s while the condition is synced waits for a PATCH that only
# a change makes: the next batch lands it.
wait_recovered() {
        local t0 i state last_patch synced
        t0=$(date +%s%N)
        for i in $(seq 1 1500); do
                state=$(ctl GET /state | jq -c '[.faults, .watches]')
                last_patch=$(awk '$2 == "PATCH" { f = $4 } END { print f }' "$WORK/kube/arrivals")
                synced=$(curl -sf "http://127.0.0.1:$PORT/status" | jq -r '.kube.condition_synced')
                if [[ $state == '['*',1]' ]] && [[ $synced == true || $last_patch == status:409 ]]; then
                        if [[ $state == '[0,1]' ]] || { ((i > 50)) && [[ $synced == true ]]; }; then
                                recover_ms=$((recover_ms + ($(date +%s%N) - t0) / 1000000))
                                return 0
                        fi
                fi
                sleep 0.1
        done
        say "FAIL: the agent did not recover from a fault within 150 s: $(ctl GET /state | jq -c .); last request: $(tail -n 1 "$WORK/kube/arrivals" | cut -c1-200)" >&2
        exit 1
}
inject() {
        local kind match count=1
        # One fault at a time, each from a recovered agent (an agent in
        # backoff makes few requests: faults queued meanwhile would all land
        # on its retries and only hold it in an ever longer backoff). Waited
        # for, never skipped: the number of faults is the seed's alone.
        wait_recovered
        kind=${kinds[RANDOM % ${#kinds[@]}]}
        if [ $((RANDOM % 2)) = 0 ]; then match='{"method": "PATCH"}'; else match='{}'; fi
        case $kind in
        500)
                count=$((1 + RANDOM % 3))
                fault '{"match": '"$match"', "status": 500, "count": '$count'}'
                ;;
        429) fault '{"match": {"method": "PATCH"}, "status": 429, "retry_after": 1, "count": 1}' ;;
        409) fault '{"match": {"method": "PATCH"}, "status": 409, "count": 1}' ;;
        drop)
                count=$((1 + RANDOM % 2))
                fault '{"match": '"$match"', "drop_connection": true, "count": '$count'}'
                ;;
        slow) fault '{"match": '"$match"', "delay_ms": '$((200 + RANDOM % 1301))', "count": 1}' ;;
        close)
                count=0 # no request is faulted: the streams end
                ctl POST /close-watches >/dev/null
                ;;
        watch-410)
                fault '{"match": {"watch": true}, "status": 410, "count": 1}'
                ctl POST /close-watches >/dev/null
                ;;
        expire)
                fault '{"match": {"watch": true}, "status": 500, "count": 1}'
                ctl POST /close-watches >/dev/null
                ctl POST "/pods/$KUBE_POD/rewrite-conditions" '[{"type": "Ready", "status": "True"}]' >/dev/null
                ctl POST /compact >/dev/null
                ;;
        esac
        injected[$kind]=$((injected[$kind] + 1))
        to_land=$((to_land + count))
}

# Seeded only now: nothing before the loop (free_port) draws from it.
RANDOM=$seed
start=$(date +%s)
i=1
while [ "$i" -le "$n" ]; do
        batch=$((1 + RANDOM % (2 * gap)))
        [ $((i + batch - 1)) -le "$n" ] || batch=$((n - i + 1))
        updates "$i" "$batch" || { tail -5 "$WORK/agent.log" >&2; say "FAIL: updates from $i" >&2; exit 1; }
        i=$((i + batch))
        [ "$i" -gt "$n" ] || inject
done
# the last fault lands, like every other
wait_recovered
took=$(($(date +%s) - start))

# The faults stop; two more updates, so the last condition is a new one.
ctl GET /faults | jq -c '.faults[] | [.match, .status, .delay_ms, .drop_connection, .count]' >"$WORK/pending"
left=$(ctl GET /faults | jq '[.faults[].count] | add // 0')
ctl DELETE /faults >/dev/null
updates $((n + 1)) 2

# status/reason the agent's /status stands for (the soak makes only current
# and drifted files), and the condition at the fake
want_condition() {
        curl -sf "http://127.0.0.1:$PORT/status" | jq -r '
                if .kube.condition_synced != true or .kube.stopped != false then "unsynced"
                elif any(.files[]; .state == "drifted") then "False/ConfigDrifted"
                elif all(.files[]; .state == "current") then "True/ConfigCurrent"
                else "unexpected: " + ([.files[].state] | join(",")) end'
}
have_condition() {
        ctl GET "/pods/$KUBE_POD" | jq -r '.status.conditions[] | select(.type == "EnrootConfigCurrent") | "\(.status)/\(.reason)"'
}
converged() { [ "$(want_condition)" = "$(have_condition)" ]; }
settle_start=$(date +%s)
for _ in $(seq 1 1500); do
        converged && break
        sleep 0.1
done
settled=$(($(date +%s) - settle_start))
want=$(want_condition)
have=$(have_condition)
check "the condition at the API server is \"$have\", the agent's /status says \"$want\"" converged
message=$(ctl GET "/pods/$KUBE_POD" | jq -r '.status.conditions[] | select(.type == "EnrootConfigCurrent") | .message')
for key in $(curl -sf "http://127.0.0.1:$PORT/status" | jq -r '.files[].changes[]?.key // empty'); do
        check "the condition's message does not name drifted key $key: $message" grep -qF -- "$key" <<<"$message"
done
kube_requests=$(curl -sf "http://127.0.0.1:$PORT/status" | jq -c '[.kube.requests[] | "\(.verb)/\(.code)=\(.count)"] | join(" ")')

# SIGTERM: exit 0 and nothing reported
kill -TERM "$AGENT_PID"
rc=0
wait "$AGENT_PID" || rc=$?
check "the agent exited $rc after SIGTERM (99: valgrind found errors; see below)" test "$rc" = 0
# "==PID==" lines are reports; "--PID--" ones valgrind's own notes (such as
# openat2(2), syscall 437, being unknown to valgrind 3.19: the agent falls back)
for v in "$WORK"/valgrind.*.log; do
        grep -q '^==[0-9]*==' "$v" 2>/dev/null || continue
        check "valgrind reported:" false
        grep '^==[0-9]*==' "$v" | head -60 >&2
done
if grep -qE 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:' "$WORK/agent.log"; then
        check "a sanitizer reported:" false
        grep -A30 -E 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:' "$WORK/agent.log" | head -60 >&2
fi
if [ "$rc" != 0 ]; then tail -30 "$WORK/agent.log" >&2; fi

arr=$WORK/kube/arrivals
hits() { awk -v re="$1" '$4 ~ re { n++ } END { print n + 0 }' "$arr"; }
result "soak seed" "$seed" ""
result "soak updates" "$((n + 2))" "" "$n with faults, then 2 without; $took s for the $n"
for k in "${kinds[@]}"; do result "soak faults injected $k" "${injected[$k]}" ""; done
result "soak faults injected" "$(($(printf '%s+' "${injected[@]}")0))" "" "after each batch but the last; the seed's alone"
result "soak recovery waits" "$((recover_ms / 1000))" s "before the faults, for the agent to recover from the last one"
result "soak faults left at the end" "$(wc -l <"$WORK/pending")" "" "$(tr '\n' ' ' <"$WORK/pending")"
result "soak converged after the faults" "$settled" s "the agent's backoff, capped at 120 s"
result "soak requests faulted" "$(hits '^[a-z]')" "" \
        "500: $(hits 'status:500') 429: $(hits 'status:429') 409: $(hits 'status:409') 410: $(hits 'status:410') drop: $(hits 'drop') slow: $(hits 'delay')"
result "soak requests to fault" "$to_land" "" "the injected faults' counts: the seed's alone ($left left at the end)"
check "$(hits '^[a-z]') requests got a fault and $left were left, the injected faults were for $to_land" \
        test "$(($(hits '^[a-z]') + left))" = "$to_land"
result "soak PATCHes" "$(awk '$2 == "PATCH"' "$arr" | wc -l)" ""
result "soak API requests" "$(wc -l <"$arr")" "" \
        "watches $(awk '$2 == "GET" && $3 ~ /watch=/' "$arr" | wc -l), Events $(awk '$2 == "POST"' "$arr" | wc -l)"
result "soak final condition" "$have" "" "/status: $want"
say "the agent's own count: $kube_requests"
cp "$arr" "$BENCH_OUT/soak-arrivals.txt"
cp "$WORK/agent.log" "$BENCH_OUT/soak-agent.log"
if [ "$failures" = 0 ]; then
        target "soak: converged, exit 0, no leak or error" MET "seed $seed, $checker"
else
        target "soak: converged, exit 0, no leak or error" MISSED "$failures failed, seed $seed"
        exit 1
fi
