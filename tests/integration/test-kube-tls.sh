#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The API server's certificate is checked, by the daemon and by `rollout`:
#  - a server whose certificate another CA signed (the peer check,
#    CURLOPT_SSL_VERIFYPEER), and
#  - a server whose certificate the pod's CA signed for another host name
#    (the host check, CURLOPT_SSL_VERIFYHOST)
# are refused before a byte of HTTP: the fake's arrivals file and request
# log stay empty, so no request and no token reached them. The daemon, started
# as a pod starts it (--kube=on, POD_* and KUBERNETES_SERVICE_* from the
# environment, the service account files as kubelet projects them), logs the
# API server's URL, the TLS error and a word on ca.crt, counts the failures
# under code="error" on /metrics and reports the condition as not synced;
# rollout says the same and exits 3. The same agent and the same rollout
# against the same fake with the right certificate reach it: the refusals are
# the checks' doing, not the set-up's.
. "$(dirname "$0")/lib.sh"

kube_test_tools

NS=slurm
UID0=0b8c0a52-6f0e-4c47-9a57-5d1f7e3c9a10
kube_test_dirs

# $WORK/pki: the pod's CA and the right certificate (IP:127.0.0.1); the same
# CA's certificate for another host; another CA's certificate for 127.0.0.1.
kube_pki "$WORK/sa-files" "$NS" token-1
bash "$TOP_SRCDIR/tests/tools/make-test-ca.sh" "$WORK/pki" other-host "DNS:apiserver.invalid" >/dev/null ||
        { echo "FAIL: make-test-ca.sh other-host failed" >&2; exit 1; }
CA_NAME="aicr-enroot-agent test other CA" bash "$TOP_SRCDIR/tests/tools/make-test-ca.sh" "$WORK/other-ca" >/dev/null ||
        { echo "FAIL: make-test-ca.sh other-ca failed" >&2; exit 1; }
# The service account directory as kubelet projects it: ..data links.
bash "$TOP_SRCDIR/tests/tools/atomic-writer.sh" "$sa" token="$WORK/sa-files/token" \
        ca.crt="$WORK/sa-files/ca.crt" namespace="$WORK/sa-files/namespace" >/dev/null

cat >"$WORK/pods.json" <<EOF
{"items": [{"metadata": {"name": "worker-0", "namespace": "$NS", "uid": "$UID0",
                         "resourceVersion": "100",
                         "labels": {"app.kubernetes.io/instance": "slinky-slurm-worker-slinky"}},
            "status": {"conditions": [
              {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"}]}}]}
EOF
publish 'ENROOT_MOUNT_HOME=yes\n' 'NCCL_DEBUG=WARN\n'
cp "$WORK/src/enroot.conf" "$root/etc/enroot/enroot.conf"
cp "$WORK/src/99-aicr-defaults.env" "$root/etc/enroot/environ.d/99-aicr-defaults.env"

arrivals() { wc -l <"$WORK/arrivals"; }
logged() { ctl GET /requests | jq 'length'; }
# in_pod: the environment a pod gives the agent's container (the downward
# API's POD_*, kubelet's KUBERNETES_SERVICE_*), as a command that execs CMD:
# "${in_pod[@]}" CMD... (start_agent's PID must be the agent's own).
set_in_pod() {
        in_pod=(env POD_NAME=worker-0 POD_NAMESPACE="$NS" POD_UID="$UID0"
                KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="${API##*:}")
}
errors_counted() { [ "$(metric 'aicr_enroot_agent_kube_requests_total{verb="get",code="error"}')" -ge 2 ]; }

# refused LABEL CERT ERROR: the fake presents CERT(.crt/.key); the daemon and
# rollout must refuse it with curl's ERROR (a fixed string), send nothing,
# and say so.
refused() {
        local label=$1 error=$3 url n
        FAKE_TLS=$2 start_fake "$WORK/pods.json" --namespace "$NS" --arrivals "$WORK/arrivals"
        url=$API
        set_in_pod

        # rollout, in-cluster credentials
        expect_status 3 "${in_pod[@]}" "$AGENT" rollout plan --serviceaccount-dir "$sa"
        grep -F "$url/" "$WORK/err" | grep -F "$error" | grep -qF "ca.crt" && pass ||
                fail "$label: rollout does not name $url, \"$error\" and ca.crt: $(cat "$WORK/err")"

        # the daemon, as a pod runs it
        AGENT_WRAPPER=("${in_pod[@]}")
        start_agent "$WORK/agent.log" --desired-dir "$cm" --running-root "$root" --kube=on \
                --serviceaccount-dir "$sa"
        AGENT_WRAPPER=()
        # a second failure: the retry after the back-off also ends at TLS
        if wait_for 10 errors_counted; then pass; else
                fail "$label: the daemon's failures are not counted: $(curl -sf "http://127.0.0.1:$PORT/metrics" | grep kube_requests)"
        fi
        curl -sf "http://127.0.0.1:$PORT/metrics" | grep '^aicr_enroot_agent_kube_requests_total' |
                grep -v 'code="error"' >"$WORK/other-codes" || true
        [ ! -s "$WORK/other-codes" ] && pass || fail "$label: answers counted: $(cat "$WORK/other-codes")"
        expect_metric 'aicr_enroot_agent_condition_synced ' 0
        grep -F "$url" "$WORK/agent.log" | grep -F "$error" | grep -qF "ca.crt" && pass ||
                fail "$label: the daemon logs no line with $url, \"$error\" and ca.crt: $(grep -i 'kube' "$WORK/agent.log" | tail -5)"
        stop_agent

        n=$(arrivals)
        [ "$n" -eq 0 ] && pass || fail "$label: $n requests reached the fake: $(cat "$WORK/arrivals")"
        n=$(logged)
        [ "$n" -eq 0 ] && pass || fail "$label: the fake logged $n requests"
        stop_fake
}

# Another CA signed the server's certificate (the peer check).
refused "another CA" "$WORK/other-ca/server" "SSL certificate problem: unable to get local issuer certificate"
# The pod's CA signed it, for another host (the host check).
refused "another host" "$WORK/pki/other-host" \
        "SSL: no alternative certificate subject name matches target host name '127.0.0.1'"

# --- the right certificate: the same agent and rollout get through ------------
start_fake "$WORK/pods.json" --namespace "$NS" --arrivals "$WORK/arrivals"
set_in_pod
out=0
"${in_pod[@]}" "$AGENT" rollout plan --serviceaccount-dir "$sa" >"$WORK/out" 2>"$WORK/err" || out=$?
n=$(arrivals)
[ "$n" -gt 0 ] && ! grep -q 'SSL' "$WORK/err" && pass ||
        fail "rollout with the right certificate: exit $out, $n requests: $(cat "$WORK/err")"
AGENT_WRAPPER=("${in_pod[@]}")
start_agent "$WORK/agent.log" --desired-dir "$cm" --running-root "$root" --kube=on \
        --serviceaccount-dir "$sa"
AGENT_WRAPPER=()
expect_metric 'aicr_enroot_agent_condition_synced ' 1
expect_metric 'aicr_enroot_agent_kube_requests_total{verb="patch",code="200"}' 1
! grep -q 'SSL' "$WORK/agent.log" && pass || fail "the daemon logs SSL errors: $(grep SSL "$WORK/agent.log")"
stop_agent

finish
