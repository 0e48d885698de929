#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The server at its connection limits: bursts of 64 connections at once from
# 8 addresses (8 each, HTTPD_MAX_CONNECTIONS_PER_IP), 200 rounds. Addresses
# other than 127.0.0.1 and ::1 may hold HTTPD_MAX_CONNECTIONS minus
# HTTPD_RESERVED_LOCAL_CONNECTIONS (28) at once; the rest of a burst is
# refused at once. Every connection of every burst must end, answered or
# refused, none left hanging, and the agent must accept again afterwards:
# /healthz and --check answer.
#
# This guards two things in agent/httpd.c: libmicrohttpd takes its listening
# socket out of its epoll set at its connection limit and puts it back only
# at the start of a later MHD_run(), so when every connection closes within
# the run that reached the limit, the agent runs it once more (before, it
# never accepted again, about one burst in ten); and the slots kept for the
# readiness probe.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-abuse-lib.sh"

abuse --deadline 3 concurrent 64 8 200
line=$(grep '^scenario=' "$WORK/abuse")
[ "$(kv rounds "$line")" = 200 ] && [ "$(kv unfinished "$line")" = 0 ] &&
        [ "$(kv connect_failed "$line")" = 0 ] && pass ||
        fail "a connection of a burst was left hanging: $line"
[ "$(kv ok "$line")" -ge 28 ] &&
        [ $(($(kv ok "$line") + $(kv closed "$line") + $(kv reset "$line"))) = 64 ] && pass ||
        fail "fewer than 28 served, or some neither served nor refused: $line"
alive "after the connection limit was reached"
expect_status 0 "$AGENT" --check --listen "127.0.0.1:$PORT"

finish
