#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Slow clients from several addresses: 40 connections from 5 addresses (8
# each, HTTPD_MAX_CONNECTIONS_PER_IP) send a request line and then one header
# byte a second for 12 s, past HTTPD_IDLE_TIMEOUT_SEC (10 s), while a probe
# asks /healthz every 100 ms from 127.0.0.1, where the exec readiness probe
# (--check) connects from. The probe must always be answered within a second
# (kubelet's default probe timeout).
#
# libmicrohttpd restarts its idle timeout at every byte, so slow clients can
# hold connections for as long as they trickle; agent/httpd.c keeps
# HTTPD_RESERVED_LOCAL_CONNECTIONS slots that only 127.0.0.1 and ::1 may use,
# so the probe always finds one. Afterwards the agent answers everyone again,
# at the latest once the idle timeout has closed what the slow clients left
# (libmicrohttpd notices their close only then).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-abuse-lib.sh"

abuse --probe-source 127.0.0.1 slowloris 40 12 5
probe_ok "$WORK/abuse" 1000 "slow clients from 5 addresses"
line=$(grep '^scenario=' "$WORK/abuse")
[ "$(kv still_open "$line")" -le 28 ] && pass || fail "more than 28 slow clients held a slot: $line"
healthz_from_elsewhere() { [ "$(curl -s --max-time 1 --interface 127.0.0.3 "http://127.0.0.1:$PORT/healthz")" = ok ]; }
wait_for 13 healthz_from_elsewhere && pass ||
        fail "other addresses not served again within the idle timeout after slow clients"
alive "after slow clients from 5 addresses"

finish
