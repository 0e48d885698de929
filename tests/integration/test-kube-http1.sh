#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The agent speaks HTTP/1.1 to the API server, on purpose, even to a server
# that offers HTTP/2 (README, "Pod condition"): against
# tests/tools/h2-apiserver.js, which offers h2 first in ALPN as kube-apiserver
# does (curl --http2 gets HTTP/2 from it: the offer is real), every request of
# the daemon (the pod's GET, its watch, the condition's PATCH) and of `rollout`
# arrives as HTTP/1.1, the PATCH on another TCP connection than the open
# watch, and the condition is written.
. "$(dirname "$0")/lib.sh"

command -v node >/dev/null || skip no-node "node is not installed (scripts/setup-deps.sh installs nodejs)"
command -v openssl >/dev/null || skip no-openssl "openssl is not installed (scripts/setup-deps.sh installs it)"
command -v curl >/dev/null || skip no-curl "curl is not installed (scripts/setup-deps.sh installs it)"
command -v jq >/dev/null || skip no-jq "jq is not installed (scripts/setup-deps.sh installs it)"
: "${TOP_SRCDIR:?run through make check}"
curl -V | grep -q '^Features:.* HTTP2' ||
        skip no-curl-http2 "this curl has no HTTP/2 (nghttp2): it cannot show that the server offers h2"

NS=slurm
UID0=0b8c0a52-6f0e-4c47-9a57-5d1f7e3c9a10
TYPE=EnrootConfigCurrent
cm=$WORK/cm
root=$WORK/root
sa=$WORK/sa
mkdir -p "$cm" "$root/etc/enroot/environ.d"
h2_pid=
stop_h2() {
        [ -n "$h2_pid" ] || return 0
        kill "$h2_pid" 2>/dev/null || true
        wait "$h2_pid" 2>/dev/null || true
        h2_pid=
}
trap 'stop_agent; stop_h2; rm -rf "$WORK"' EXIT

kube_pki "$sa" "$NS" token-1
cat >"$WORK/pod.json" <<EOF
{"kind": "Pod", "apiVersion": "v1",
 "metadata": {"name": "worker-0", "namespace": "$NS", "uid": "$UID0", "resourceVersion": "100",
              "labels": {"app.kubernetes.io/instance": "slinky-slurm-worker-slinky"}},
 "status": {"conditions": [
   {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"}]}}
EOF
publish 'ENROOT_MOUNT_HOME=yes\n' 'NCCL_DEBUG=WARN\n'
cp "$WORK/src/enroot.conf" "$root/etc/enroot/enroot.conf"
cp "$WORK/src/99-aicr-defaults.env" "$root/etc/enroot/environ.d/99-aicr-defaults.env"

: >"$WORK/h2.out"
node "$TOP_SRCDIR/tests/tools/h2-apiserver.js" --pod "$WORK/pod.json" \
        --token-file "$WORK/server-token" --tls-cert "$WORK/pki/server.crt" \
        --tls-key "$WORK/pki/server.key" --log "$WORK/requests" >"$WORK/h2.out" 2>"$WORK/h2.err" &
h2_pid=$!
wait_for 10 grep -q '^listening on' "$WORK/h2.out" ||
        { cat "$WORK/h2.err" >&2; echo "FAIL: h2-apiserver.js did not start" >&2; exit 1; }
API=$(sed -n 's/^listening on //p' "$WORK/h2.out")

# requests [JQ-FILTER]: the logged requests, one JSON object a line
requests() { jq -c "select(${1:-true})" "$WORK/requests"; }
count() { requests "$1" | wc -l; }
# not_http1 LABEL: fails for every request not HTTP/1.1 on an http/1.1 connection
all_http1() {
        local n bad
        n=$(count true)
        bad=$(requests '.version != "1.1" or .alpn != "http/1.1"')
        [ "$n" -gt 0 ] && [ -z "$bad" ] && pass ||
                fail "$1: not every request is HTTP/1.1 ($n requests): ${bad:-none logged}"
}

# --- the server offers HTTP/2: curl, asked for it, gets it ----------------------
curl -sf --http2 --cacert "$WORK/pki/ca.crt" -H 'Authorization: Bearer token-1' \
        "$API/api/v1/namespaces/$NS/pods/worker-0" >/dev/null ||
        fail "curl --http2 cannot read the pod: $(cat "$WORK/h2.err")"
[ "$(requests | jq -r '"\(.version) \(.alpn)"')" = "2.0 h2" ] && pass ||
        fail "curl --http2 did not get HTTP/2: $(requests)"
: >"$WORK/requests"

# --- the daemon, as a pod runs it ------------------------------------------------
in_pod=(env POD_NAME=worker-0 POD_NAMESPACE="$NS" POD_UID="$UID0"
        KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="${API##*:}")
AGENT_WRAPPER=("${in_pod[@]}")
start_agent "$WORK/agent.log" --desired-dir "$cm" --running-root "$root" --kube=on \
        --serviceaccount-dir "$sa"
AGENT_WRAPPER=()
expect_metric 'aicr_enroot_agent_condition_synced ' 1
patched() { [ "$(count '.method == "PATCH"')" -ge 1 ] && [ "$(count '.query | test("watch=1")')" -ge 1 ]; }
wait_for 10 patched && pass || fail "no PATCH and watch: $(requests)"
[ "$(count ".method == \"GET\" and .path == \"/api/v1/namespaces/$NS/pods/worker-0\"")" -ge 1 ] && pass ||
        fail "no GET of the pod: $(requests)"
all_http1 "the daemon"
# The watch stays open on its connection: the PATCH cannot share it.
watch_conns=$(requests '.query | test("watch=1")' | jq -r .conn | sort -u)
patch_conns=$(requests '.method == "PATCH"' | jq -r .conn | sort -u)
[ -z "$(comm -12 <(echo "$watch_conns") <(echo "$patch_conns"))" ] && pass ||
        fail "a PATCH shares a connection with the watch: $(requests)"
stop_agent

# --- rollout ------------------------------------------------------------------------
: >"$WORK/requests"
out=0
"${in_pod[@]}" "$AGENT" rollout plan --serviceaccount-dir "$sa" >"$WORK/out" 2>"$WORK/err" || out=$?
[ "$(count '.path | endswith("/pods")')" -ge 1 ] && pass ||
        fail "rollout listed no pods (exit $out): $(requests) $(cat "$WORK/err")"
all_http1 "rollout"

finish
