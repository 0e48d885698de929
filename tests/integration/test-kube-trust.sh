#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Whom the token goes to, and who can read it back:
#  - with ca.crt, the pod's CA alone vouches for the API server: a server
#    whose certificate another CA signed is refused even when that CA is in
#    libcurl's built-in CA directory (/etc/ssl/certs on Debian), here bind
#    mounted over it in a private mount namespace; the daemon and `rollout`
#    both, and neither sends a request;
#  - the daemon holding the token is not dumpable: its /proc/PID files are
#    root's, so another process of its own uid cannot read its memory,
#    environment or descriptors, and it leaves no core file.
. "$(dirname "$0")/lib.sh"

kube_test_tools
command -v setpriv >/dev/null || skip no-setpriv "setpriv is not installed (util-linux)"
[ "$(id -u)" -eq 0 ] || skip not-root "needs root: bind mounts over /etc/ssl/certs in a private mount namespace"
if ! unshare -m --propagation private true 2>"$WORK/unshare-err"; then
        skip no-mount-namespace "cannot create a private mount namespace ($(cat "$WORK/unshare-err"))"
fi

NS=slurm
UID0=0b8c0a52-6f0e-4c47-9a57-5d1f7e3c9a10
kube_test_dirs

# The server's CA ($WORK/pki, which signs the fake's certificate) and another
# one, the pod's.
kube_pki "$sa" "$NS" token-1
CA_NAME="aicr-enroot-agent test pod CA" bash "$TOP_SRCDIR/tests/tools/make-test-ca.sh" "$WORK/pod-ca" >/dev/null
cp "$WORK/pod-ca/ca.crt" "$sa/ca.crt"
# A CA directory as libcurl's default CA path, holding the server's CA.
mkdir -p "$WORK/capath"
cp "$WORK/pki/ca.crt" "$WORK/capath/server-ca.pem"
openssl rehash "$WORK/capath" 2>/dev/null || c_rehash "$WORK/capath" >/dev/null
ls "$WORK/capath"/*.0 >/dev/null 2>&1 || { echo "FAIL: no hashed CA in $WORK/capath" >&2; exit 1; }

cat >"$WORK/pods.json" <<EOF
{"items": [{"metadata": {"name": "worker-0", "namespace": "$NS", "uid": "$UID0",
                         "resourceVersion": "100",
                         "labels": {"app.kubernetes.io/instance": "slinky-slurm-worker-slinky"}},
            "status": {"conditions": [
              {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"}]}}]}
EOF
start_fake "$WORK/pods.json" --namespace "$NS" --rbac "$AGENT_RBAC"
port=${API##*:}
requests() { ctl GET /requests | jq 'length'; }

# CMD with $WORK/capath mounted over /etc/ssl/certs: "${in_capath[@]}" CMD...
# (a command, not a function: start_agent's PID must be the agent's own).
in_capath=(unshare -m --propagation private -- sh -c 'mount --bind "$0" /etc/ssl/certs && exec "$@"'
        "$WORK/capath")

# --- rollout, in-cluster credentials -----------------------------------------
ctl POST /reset-requests >/dev/null
expect_status 3 "${in_capath[@]}" env KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$port" \
        "$AGENT" rollout plan --serviceaccount-dir "$sa"
grep -qi 'certificate\|SSL' "$WORK/err" && pass || fail "rollout: no word of the certificate: $(cat "$WORK/err")"
n=$(requests)
[ "$n" -eq 0 ] && pass || fail "rollout sent $n requests to a server the pod's CA did not sign"

# The same with the server's CA as ca.crt reaches the server: the refusal
# above is the CA's doing, not the set-up's.
cp "$WORK/pki/ca.crt" "$sa/ca.crt"
ctl POST /reset-requests >/dev/null
out=0
"${in_capath[@]}" env KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$port" \
        "$AGENT" rollout plan --serviceaccount-dir "$sa" >"$WORK/out" 2>"$WORK/err" || out=$?
n=$(requests)
[ "$n" -gt 0 ] && ! grep -qi 'certificate' "$WORK/err" && pass ||
        fail "rollout with the server's CA: exit $out, $n requests: $(cat "$WORK/err")"
cp "$WORK/pod-ca/ca.crt" "$sa/ca.crt"

# --- the daemon ----------------------------------------------------------------
publish 'ENROOT_MOUNT_HOME=yes\n' 'NCCL_DEBUG=WARN\n'
cp "$WORK/src/enroot.conf" "$root/etc/enroot/enroot.conf"
cp "$WORK/src/99-aicr-defaults.env" "$root/etc/enroot/environ.d/99-aicr-defaults.env"
chmod -R a+rX "$WORK"
ctl POST /reset-requests >/dev/null
AGENT_WRAPPER=("${in_capath[@]}" setpriv --reuid=65532 --regid=65532 --clear-groups --inh-caps=-all)
start_agent "$WORK/agent.log" --desired-dir "$cm" --running-root "$root" --kube on \
        --kube-api "$API" --serviceaccount-dir "$sa" --pod-name worker-0 --pod-uid "$UID0"
AGENT_WRAPPER=()
if wait_for 10 grep -qi 'certificate\|SSL' "$WORK/agent.log"; then pass; else
        fail "the daemon logs no word of the certificate: $(tail -5 "$WORK/agent.log")"
fi
n=$(requests)
[ "$n" -eq 0 ] && pass || fail "the daemon sent $n requests to a server the pod's CA did not sign"

# Not dumpable: /proc/PID is root's, and the agent's own uid cannot read it.
owner=$(stat -c %u "/proc/$AGENT_PID/environ")
[ "$owner" -eq 0 ] && pass || fail "/proc/$AGENT_PID/environ belongs to uid $owner: the agent is dumpable"
if setpriv --reuid=65532 --regid=65532 --clear-groups --inh-caps=-all \
        cat "/proc/$AGENT_PID/environ" >/dev/null 2>&1; then
        fail "a process of the agent's uid reads the agent's /proc/PID/environ"
else pass; fi
# ...and it still reads its own /proc/self: it serves its metrics.
fds=$(metric 'process_open_fds ')
[ "${fds:-0}" -gt 0 ] && pass || fail "process_open_fds is '$fds': the agent cannot read its /proc/self/fd"
stop_agent

finish
