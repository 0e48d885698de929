#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The server at its connection limits: bursts of 320 connections at once from
# 40 addresses (8 each, HTTPD_MAX_CONNECTIONS_PER_IP), 200 rounds. Addresses
# other than 127.0.0.1 and ::1 may hold HTTPD_MAX_CONNECTIONS minus
# HTTPD_RESERVED_LOCAL_CONNECTIONS (252) at once; the rest of a burst is
# refused at once. At the same time, bursts of 8 from 127.0.0.1 fill the
# reserved slots, so libmicrohttpd's own limit (HTTPD_MAX_CONNECTIONS in all)
# is reached too. Every connection of every burst must end, answered or
# refused, none left hanging, and the agent must accept again afterwards:
# /healthz and --check answer.
#
# This guards two things in agent/io/httpd.c: libmicrohttpd takes its listening
# socket out of its epoll set at its connection limit and puts it back only
# at the start of a later MHD_run(), so when every connection closes within
# the run that reached the limit, the agent runs it once more (before, it
# never accepted again, about one burst in ten); and the slots kept for the
# readiness probe.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-abuse-lib.sh"

"$ABUSE" --port "$PORT" --deadline 3 --probe-source 127.0.0.253 --source 127.0.0.1 \
        concurrent 8 1 1500 >"$WORK/local" 2>"$WORK/local-err" &
ABUSE_PIDS+=($!)
abuse --deadline 3 concurrent 320 40 200
wait "${ABUSE_PIDS[0]}" || fail "http-abuse from 127.0.0.1: $(cat "$WORK/local-err")"
cat "$WORK/local" >&2
line=$(grep '^scenario=' "$WORK/local")
[ "$(kv unfinished "$line")" = 0 ] && [ "$(kv connect_failed "$line")" = 0 ] && pass ||
        fail "a connection from 127.0.0.1 was left hanging: $line"
line=$(grep '^scenario=' "$WORK/abuse")
[ "$(kv rounds "$line")" = 200 ] && [ "$(kv unfinished "$line")" = 0 ] &&
        [ "$(kv connect_failed "$line")" = 0 ] && pass ||
        fail "a connection of a burst was left hanging: $line"
[ "$(kv ok "$line")" -ge 252 ] &&
        [ $(($(kv ok "$line") + $(kv closed "$line") + $(kv reset "$line"))) = 320 ] && pass ||
        fail "fewer than 252 served, or some neither served nor refused: $line"
alive "after the connection limit was reached"
expect_status 0 "$AGENT" --check --listen "127.0.0.1:$PORT"

finish
