#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The daemon under hostile HTTP clients (tests/tools/http-abuse), while a probe
# from another address asks /healthz every 100 ms: 1,000 connections at once
# from one address, oversized requests, garbage bytes, and slow clients that
# trickle a header byte a second past the request deadline. The agent keeps
# answering the probe within a bound, ends every hostile connection, keeps its
# resident and anonymous memory bounded (/proc/PID/smaps_rollup before and
# after), and still serves the right metrics. The limits themselves are
# unit-tested in tests/unit/test-httpd.c; attacks from many addresses at once
# are test-http-slowloris.sh and test-http-limit-recovery.sh.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-abuse-lib.sh"

rss0=$(mem Rss) anon0=$(mem Anonymous)

# --- 1,000 connections at once from one address --------------------------------
abuse --deadline 20 concurrent 1000
line=$(grep '^scenario=' "$WORK/abuse")
[ "$(kv unfinished "$line")" = 0 ] && pass || fail "connections left hanging: $line"
# HTTPD_MAX_CONNECTIONS_PER_IP (8) at a time are served, the rest closed at once
[ "$(kv ok "$line")" -ge 8 ] && pass || fail "fewer than 8 of the 1,000 were served: $line"
# the listen backlog (HTTPD_LISTEN_BACKLOG, SOMAXCONN) holds the whole burst:
# a probe's SYN is never dropped (with a backlog of 64 it was, and resent
# after 1 s, the kernel's initial RTO)
probe_ok "$WORK/abuse" 1000 "1,000 connections"
alive "after 1,000 connections"

# --- oversized requests: refused within the per-connection memory ---------------
abuse oversized
line=$(grep '^scenario=' "$WORK/abuse")
[ "$line" = "scenario=oversized header_64k=431 url_64k=414 headers_4000=431 header_4m=431" ] &&
        pass || fail "oversized requests: $line"
probe_ok "$WORK/abuse" 1000 "oversized requests"

# --- slow clients and garbage, at the same time, from two addresses --------------
# slowloris: 20 connections from 127.0.0.1 for 12 s, one byte a second: past the
# 3 s request deadline (HTTPD_REQUEST_DEADLINE_SEC), which ends them. garbage: 40 connections of junk from 127.0.0.2 (fewer than
# the listen backlog: the SYN-burst case is the 1,000 connections above).
"$ABUSE" --port "$PORT" --deadline 15 --probe-source 127.0.0.253 --source 127.0.0.2 garbage 40 \
        >"$WORK/garbage" 2>"$WORK/garbage-err" &
ABUSE_PIDS+=($!)
abuse slowloris 20 12
wait "${ABUSE_PIDS[0]}" || fail "http-abuse garbage: $(cat "$WORK/garbage-err")"
cat "$WORK/garbage" >&2
line=$(grep '^scenario=' "$WORK/abuse")
# at most HTTPD_MAX_CONNECTIONS_PER_IP held from one address, each ended at
# the request deadline
[ "$(kv still_open "$line")" -le 8 ] && pass || fail "one address holds more than 8 connections: $line"
[ "$(kv closed_by_server "$line")" -ge 8 ] && [ "$(kv closed_max_ms "$line")" -le 4000 ] && pass ||
        fail "slow clients not closed at the 3 s request deadline: $line"
probe_ok "$WORK/abuse" 1000 "slow clients from one address"
line=$(grep '^scenario=' "$WORK/garbage")
[ "$(kv unfinished "$line")" = 0 ] && pass || fail "garbage connections left open: $line"
probe_ok "$WORK/garbage" 1000 "garbage"
alive "after slow clients and garbage"

# --- still the same agent, serving the same truth, in bounded memory ------------
# (asked from a third address: a client that left in the middle of its headers
# keeps its slot until the request deadline, so 127.0.0.1's 8 slots may still
# be held for up to 3 s)
curl -s --max-time 5 --interface 127.0.0.3 "http://127.0.0.1:$PORT/metrics" >"$WORK/metrics" || true
grep -qx 'aicr_enroot_config_current 1' "$WORK/metrics" && pass ||
        fail "/metrics after the abuse does not say current: $(grep -E '^aicr_enroot_config_(current|state.*} 1)' "$WORK/metrics" || head -c 300 "$WORK/metrics")"
rss1=$(mem Rss) anon1=$(mem Anonymous)
printf 'memory: Rss %s -> %s KiB, Anonymous %s -> %s KiB\n' "$rss0" "$rss1" "$anon0" "$anon1" >&2
# the 8 to 16 connections open at once here take 16 KiB pools
# (HTTPD_CONNECTION_MEMORY_BYTES): at most 256 KiB; a
# sanitizer build's shadow memory makes Rss meaningless
if grep -q __asan_init "$AGENT"; then
        skip_part sanitizer-memory-bound "sanitizer build (shadow memory): the memory bound is not checked"
else
        [ $((anon1 - anon0)) -le 1024 ] && pass ||
                fail "anonymous memory grew by $((anon1 - anon0)) KiB under abuse"
        [ $((rss1 - rss0)) -le 2048 ] && pass || fail "resident memory grew by $((rss1 - rss0)) KiB"
fi
grep -q 'libmicrohttpd' "$WORK/agent.log" && fail "client trouble logged above debug: $(grep libmicrohttpd "$WORK/agent.log" | head -3)" || pass

finish
