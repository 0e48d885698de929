#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Slow clients from several addresses: 40 connections from 5 addresses (8
# each, HTTPD_MAX_CONNECTIONS_PER_IP) send a request line and then one header
# byte a second for 12 s, each reopened when the server closes it (as an
# attacker would), while a probe asks /healthz every 100 ms from 127.0.0.254:
# an address with no reserved slot, like kubelet's httpGet liveness probe,
# which comes from the node's address. At the same time `--check` asks from
# 127.0.0.1 every half second, as the exec readiness probe does.
#
# libmicrohttpd restarts its idle timeout at every byte, so on their own slow
# clients could hold their connections for as long as they trickle.
# agent/io/httpd.c shuts down every connection without a complete request
# HTTPD_REQUEST_DEADLINE_SEC (3 s) after it opened. Bounds asserted:
# - every slow connection is closed by the server at its deadline: from 3 s
#   (never before) to 4 s after it connected (the deadline, the timer's
#   100 ms accuracy, and a loaded machine's margin);
# - the probe from 127.0.0.254 is always answered within 4 s (the deadline
#   plus 1 s): a probe's request arrives whole at once, so it is served as
#   soon as it has a slot, and a slot held without a complete request is
#   freed within the deadline. With 40 slow connections among
#   HTTPD_MAX_CONNECTIONS (256) it finds one at once (before the deadline,
#   with 32 slots, 121 of 121 such probes were refused);
# - `--check` from 127.0.0.1 (HTTPD_RESERVED_LOCAL_CONNECTIONS) answers ready
#   within 1 s each time (kubelet's default probe timeout);
# - afterwards other addresses are served at once.
# Then 320 slow connections from 40 addresses, more than there are slots (see
# below).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-abuse-lib.sh"

DEADLINE_MS=3000
check_loop() {
        local n=0 bad=0 start took
        while [ ! -e "$WORK/abuse-done" ]; do
                start=$(date +%s%N)
                if ! timeout 2 "$AGENT" --check --listen "127.0.0.1:$PORT" >/dev/null 2>&1; then
                        bad=$((bad + 1))
                else
                        took=$((($(date +%s%N) - start) / 1000000))
                        [ "$took" -lt 1000 ] || bad=$((bad + 1))
                fi
                n=$((n + 1))
                sleep 0.5
        done
        echo "check n=$n bad=$bad" >"$WORK/check-loop"
}
check_loop &
ABUSE_PIDS+=($!)

abuse --reconnect slowloris 40 12 5
touch "$WORK/abuse-done"
wait "${ABUSE_PIDS[0]}"
line=$(grep '^scenario=' "$WORK/abuse")

# the slow connections: all closed by the server, each at its deadline
[ "$(kv closed_by_server "$line")" -ge 80 ] && [ "$(kv reopened "$line")" -ge 40 ] && pass ||
        fail "the slow connections were not closed and reopened in waves: $line"
min=$(kv closed_min_ms "$line") max=$(kv closed_max_ms "$line")
if [ "$min" -ge $((DEADLINE_MS - 100)) ] && [ "$max" -le $((DEADLINE_MS + 1000)) ]; then
        pass
else
        fail "slow connections closed after ${min} to ${max} ms, not at the ${DEADLINE_MS} ms deadline: $line"
fi
[ "$(kv still_open "$line")" -le 40 ] && pass || fail "more than 40 slow clients held a slot: $line"

# the probe from an address without a reserved slot
probe_ok "$WORK/abuse" $((DEADLINE_MS + 1000)) "slow clients from 5 addresses, probe from 127.0.0.254"
# the exec readiness probe from 127.0.0.1
cl=$(cat "$WORK/check-loop")
[ "$(kv n "$cl")" -ge 10 ] && [ "$(kv bad "$cl")" = 0 ] && pass ||
        fail "--check from 127.0.0.1 failed or took 1 s or more during the slow clients: $cl"

# --- every non-reserved slot: 320 slow connections from 40 addresses -----------
# 40 x HTTPD_MAX_CONNECTIONS_PER_IP is more than the 252 non-reserved slots.
# A newcomer then takes the slot of the connection that has waited longest
# for its request (HTTPD_MAX_EVICTING at a time): the probe from 127.0.0.254
# is answered, except when it arrives in the same instant as a burst of the
# attackers' reconnections; never three times in a row (kubelet's default
# failureThreshold restarts the container after three).
abuse --reconnect slowloris 320 8 40
line=$(grep '^probe ' "$WORK/abuse")
if [ "$(kv max_run_failed "$line")" -lt 3 ] && [ "$(kv ok "$line")" -ge $(($(kv n "$line") * 9 / 10)) ] &&
        awk -v m="$(kv max_ms "$line")" -v b=$((DEADLINE_MS + 1000)) 'BEGIN { exit !(m < b) }'; then
        pass
else
        fail "slow clients from 40 addresses starve the probe from 127.0.0.254: $line"
fi

healthz_from_elsewhere() { [ "$(curl -s --max-time 1 --interface 127.0.0.3 "http://127.0.0.1:$PORT/healthz")" = ok ]; }
wait_for 2 healthz_from_elsewhere && pass || fail "other addresses not served at once after slow clients"
alive "after slow clients from 5 addresses"
grep -q 'HTTP:\|libmicrohttpd' "$WORK/agent.log" &&
        fail "dropped slow clients logged above debug: $(grep 'HTTP:\|libmicrohttpd' "$WORK/agent.log" | head -3)" || pass

finish
