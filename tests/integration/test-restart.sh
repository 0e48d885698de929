#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The default deployment across restarts (docs/DESIGN.md §3, include/model/workload.h): the
# agent as container/kubernetes/agent/sidecar/nodeset.yaml runs it, reading its
# own subPath mounts, must never report a pod current that it cannot vouch
# for. Each agent process runs in its own private mount namespace laid out as
# its container is: /run/aicr-enroot/configmap the whole-directory mount,
# /run/aicr-enroot/running/etc/enroot/... real bind mounts of the files that
# the ConfigMap's version directory held when "the container started" (what
# kubelet's subPath does), the service account at its default path; the args
# are the manifest's, read from it (only --listen is the test's, a free port).
# The ConfigMap is updated by the kubelet-style atomic writer, and slurmd's
# container status (ID, start time) by the fake API server, as kubelet would.
#
# Checked: an agent restart after an update is Unknown/WorkloadUnverifiable
# (it was True before the fix), never current; the record on the condition
# carries what slurmd runs across agent restarts; a slurmd restart after an
# update is current (it was a false ConfigDrifted); a lost record or a slurmd
# that is not running is Unknown; and what metrics, /status and --check then
# say.
. "$(dirname "$0")/lib.sh"

kube_test_tools
if ! unshare -m --propagation private true 2>"$WORK/unshare-err"; then
        skip no-mount-namespace "cannot create a private mount namespace ($(cat "$WORK/unshare-err")): the restart checks need real bind mounts"
fi

NS=slurm
POD=slurm-worker-gpu-0
UID0=7d0f3c1e-2b4a-4e59-9c55-0a1b2c3d4e5f
TYPE=EnrootConfigCurrent
manifest=$TOP_SRCDIR/container/kubernetes/agent/sidecar/nodeset.yaml
cm=$WORK/cm
mkdir -p "$WORK/cm"
sa=$WORK/sa
trap 'stop_agent; stop_fake; rm -rf "$WORK"' EXIT

# The agent's args as the manifest gives them, but --listen.
mapfile -t manifest_args < <(sed -n '/^          args:/,/^          env:/s/^ *- \(--[^ ]*\)$/\1/p' "$manifest")
args=()
for a in "${manifest_args[@]}"; do
        case $a in --listen=*) ;; *) args+=("$a") ;; esac
done
[ "${#args[@]}" -ge 3 ] && pass || fail "could not read the agent's args from $manifest: ${manifest_args[*]}"
printf '%s\n' "${args[@]}" | grep -qx -- '--running-root=/run/aicr-enroot/running' && pass ||
        fail "the manifest's agent does not read its own subPath mounts under /run/aicr-enroot/running: ${args[*]}"

kube_pki "$sa" "$NS" token-1
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }
# slurmd's container status, as kubelet writes it: ID, start time, state
slurmd_status() { # ID STATE-JSON
        printf '{"containerStatuses": [{"name": "slurmd", "containerID": "containerd://%s", "ready": true, "restartCount": %s, "state": %s}]}' \
                "$1" "${3:-0}" "$2"
}
running_since() { printf '{"running": {"startedAt": "%s"}}' "$1"; }

# The worker pod as Slinky 1.2 and the sidecar variant make it: slurmd with the
# bundle's subPath mounts, the agent as a native sidecar.
cat >"$WORK/pods.json" <<EOF
{"items": [{"metadata": {"name": "$POD", "namespace": "$NS", "uid": "$UID0", "resourceVersion": "10",
                         "labels": {"app.kubernetes.io/instance": "slinky-slurm-worker-slinky",
                                    "nodeset.slinky.slurm.net/pod-hostname": "gpu-0"}},
            "spec": {"hostname": "gpu-0",
              "containers": [{"name": "slurmd", "volumeMounts": [
                {"name": "enroot-config", "mountPath": "/etc/enroot/enroot.conf", "subPath": "enroot.conf"},
                {"name": "enroot-config", "mountPath": "/etc/enroot/environ.d/99-aicr-defaults.env",
                 "subPath": "99-aicr-defaults.env"}]}],
              "initContainers": [{"name": "aicr-enroot-agent", "restartPolicy": "Always", "volumeMounts": [
                {"name": "enroot-config", "mountPath": "/run/aicr-enroot/configmap"},
                {"name": "enroot-config", "mountPath": "/run/aicr-enroot/running/etc/enroot/enroot.conf",
                 "subPath": "enroot.conf"},
                {"name": "enroot-config",
                 "mountPath": "/run/aicr-enroot/running/etc/enroot/environ.d/99-aicr-defaults.env",
                 "subPath": "99-aicr-defaults.env"}]}]},
            "status": {"phase": "Running", "conditions": [
              {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"}]}}]}
EOF

# The agent container's mount namespace: /run is its own, as in a container.
cat >"$WORK/container.sh" <<'EOF'
# container.sh CM SA ENROOT-CONF-SOURCE ENV-SOURCE AGENT ARGS...
set -e
cm=$1 sa=$2 conf=$3 env=$4
shift 4
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p /run/aicr-enroot/configmap /run/aicr-enroot/running/etc/enroot/environ.d \
        /run/secrets/kubernetes.io/serviceaccount
mount --bind "$cm" /run/aicr-enroot/configmap
# subPath: the file of the version directory current now, bind-mounted
touch /run/aicr-enroot/running/etc/enroot/enroot.conf \
        /run/aicr-enroot/running/etc/enroot/environ.d/99-aicr-defaults.env
mount --bind "$conf" /run/aicr-enroot/running/etc/enroot/enroot.conf
mount --bind "$env" /run/aicr-enroot/running/etc/enroot/environ.d/99-aicr-defaults.env
mount --bind "$sa" /run/secrets/kubernetes.io/serviceaccount
exec "$@"
EOF
[ "$(readlink -f /var/run)" = /run ] || skip var-run-not-run "/var/run is not /run here: the service account's default path cannot be laid out"

# start_container: one start of the agent's container, its subPath mounts
# resolved now, with the downward API's variables and the in-cluster API.
start_container() {
        local host=${API#https://}
        AGENT_WRAPPER=(env POD_NAME="$POD" POD_NAMESPACE="$NS" POD_UID="$UID0"
                KUBERNETES_SERVICE_HOST="${host%:*}" KUBERNETES_SERVICE_PORT="${host##*:}"
                unshare -m --propagation private -- sh "$WORK/container.sh" "$cm" "$sa"
                "$(readlink -f "$cm/enroot.conf")" "$(readlink -f "$cm/99-aicr-defaults.env")")
        start_agent "$WORK/agent-$1.log" "${args[@]}"
}
version() { readlink "$cm/..data"; }

pod_condition() { ctl GET "/pods/$POD" | jq -c --arg t "$TYPE" '.status.conditions[] | select(.type == $t)'; }
condition_field() { pod_condition | jq -r ".$1"; }
condition_is() { [ "$(condition_field status)/$(condition_field reason)" = "$1" ]; }
expect_condition() { # STATUS/REASON LABEL
        if wait_for 10 condition_is "$1"; then pass; else
                fail "$2: condition is '$(condition_field status)/$(condition_field reason)' ($(condition_field message)), expected $1"
        fi
}
expect_message() { # SUBSTRING LABEL
        case "$(condition_field message)" in
        *"$1"*) pass ;;
        *) fail "$2: the condition's message lacks '$1': $(condition_field message)" ;;
        esac
}
status_json() { curl -sf "http://127.0.0.1:$PORT/status"; }
expect_status_field() { # JQ WANT LABEL
        local got
        got=$(status_json | jq -r "$1")
        [ "$got" = "$2" ] && pass || fail "$3: /status $1 is '$got', expected '$2'"
}
state_is() { # FILE STATE: that state's series is 1
        metric_is "aicr_enroot_config_state{file=\"$1\",state=\"$2\"}" 1
}
expect_state() { # FILE STATE LABEL
        wait_for 10 state_is "$1" "$2" && pass ||
                fail "$3: $1 is not $2: $(curl -sf "http://127.0.0.1:$PORT/metrics" | grep "config_state{file=\"$1\"" | grep ' 1$')"
}
publish 'ENROOT_MOUNT_HOME=yes\n' 'NCCL_DEBUG=WARN\n'
V1=$(version)
start_fake "$WORK/pods.json" --rbac "$AGENT_RBAC"
ctl POST "/pods/$POD/container-statuses" "$(slurmd_status c1 "$(running_since "$(now)")")" >/dev/null ||
        fail "cannot set slurmd's status"

# --- 1. the pod starts: slurmd and the agent run V1 ---------------------------
start_container 1 || { finish; exit 1; }
expect_condition True/ConfigCurrent "pod start"
expect_message "[workload: slurmd containerd://c1 runs $V1]" "pod start"
expect_metric 'aicr_enroot_config_current ' 1
expect_status_field '.workload.containers[0].known_from' start-time "pod start"
expect_status_field '.workload.containers[0].version' "$V1" "pod start"

# --- 2. the ConfigMap changes: slurmd keeps V1, the agent sees the drift ------
sleep 1.1 # a later second than slurmd's start: kubelet's times have whole seconds
publish 'ENROOT_MOUNT_HOME=no\n' 'NCCL_DEBUG=WARN\n'
V2=$(version)
expect_condition False/ConfigDrifted "update"
expect_message "[workload: slurmd containerd://c1 runs $V1]" "update"

# --- 3. the agent alone restarts: its subPath mounts now hold V2 -------------
# Before: the agent compared its new mounts (V2) with the ConfigMap (V2) and
# said True while slurmd ran V1.
stop_agent
start_container 2 || { finish; exit 1; }
expect_condition Unknown/WorkloadUnverifiable "agent restart after the update"
expect_message "container slurmd runs ConfigMap version $V1, which the agent cannot read" "agent restart"
expect_message "[workload: slurmd containerd://c1 runs $V1]" "agent restart"
expect_metric 'aicr_enroot_config_current ' 0
expect_state enroot.conf unverifiable "agent restart"
expect_state 99-aicr-defaults.env unverifiable "agent restart"
expect_status_field '.workload.containers[0].known_from' record "agent restart"
expect_status_field '.files[0].superseded' false "agent restart"
grep -q "Workload container slurmd (containerd://c1, started .*) runs ConfigMap version $V1 (known from: record)" \
        "$WORK/agent-2.log" && pass || fail "agent restart: the log does not say what slurmd runs: $(grep -i workload "$WORK/agent-2.log")"
# Ready (the readiness probe): unverifiable is not a broken agent
expect_status 0 "$AGENT" --check --listen "127.0.0.1:$PORT"
expect_status 1 "$AGENT" --check --require-current --listen "127.0.0.1:$PORT"
grep -q 'unverifiable' "$WORK/out" "$WORK/err" && pass || fail "--check --require-current does not say unverifiable: $(cat "$WORK/out" "$WORK/err")"
# (rollout plan replaces such a pod: test-rollout.sh, with a real Slurm)

# --- 4. and again: the record carries over ------------------------------------
stop_agent
start_container 3 || { finish; exit 1; }
expect_condition Unknown/WorkloadUnverifiable "second agent restart"
expect_message "[workload: slurmd containerd://c1 runs $V1]" "second agent restart"

# --- 5. slurmd restarts (after the update): it runs V2, so does the agent -----
ctl POST "/pods/$POD/container-statuses" "$(slurmd_status c2 "$(running_since "$(now)")" 1)" >/dev/null ||
        fail "cannot restart slurmd"
expect_condition True/ConfigCurrent "slurmd restart"
expect_message "[workload: slurmd containerd://c2 runs $V2]" "slurmd restart"
expect_metric 'aicr_enroot_config_current ' 1

# --- 6. the agent restarts with nothing changed: still current ----------------
stop_agent
start_container 4 || { finish; exit 1; }
expect_condition True/ConfigCurrent "agent restart, no update"
expect_status_field '.workload.containers[0].known_from' record "agent restart, no update"

# --- 7. an update, then slurmd restarts: slurmd runs the ConfigMap's version --
# Before: the agent compared its own V2 mount with V3 and said ConfigDrifted
# about a slurmd that runs V3.
sleep 1.1
publish 'ENROOT_MOUNT_HOME=yes\nENROOT_REMAP_ROOT=yes\n' 'NCCL_DEBUG=WARN\n'
V3=$(version)
expect_condition False/ConfigDrifted "update with the agent running"
sleep 1.1
ctl POST "/pods/$POD/container-statuses" "$(slurmd_status c3 "$(running_since "$(now)")" 2)" >/dev/null ||
        fail "cannot restart slurmd"
expect_condition True/ConfigCurrent "slurmd restart after the update"
expect_message "[workload: slurmd containerd://c3 runs $V3]" "slurmd restart after the update"
case "$(condition_field message)" in
*superseded*) fail "slurmd runs the ConfigMap's version, yet the message names a superseded mount: $(condition_field message)" ;;
*) pass ;;
esac
expect_status_field '.files[0].state' current "slurmd restart after the update"

# --- 8. slurmd not running: nothing to vouch for ------------------------------
ctl POST "/pods/$POD/container-statuses" "$(slurmd_status c3 '{"waiting": {"reason": "CrashLoopBackOff"}}' 3)" >/dev/null
expect_condition Unknown/WorkloadUnverifiable "slurmd not running"
expect_message "container slurmd is not running" "slurmd not running"
sleep 1.1
ctl POST "/pods/$POD/container-statuses" "$(slurmd_status c4 "$(running_since "$(now)")" 3)" >/dev/null
expect_condition True/ConfigCurrent "slurmd running again"

# --- 9. the record lost while the agent is down, and an update meanwhile -------
stop_agent
ctl POST "/pods/$POD/rewrite-conditions" \
        '[{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"}]' >/dev/null
sleep 1.1
publish 'ENROOT_MOUNT_HOME=no\nENROOT_REMAP_ROOT=yes\n' 'NCCL_DEBUG=WARN\n'
start_container 5 || { finish; exit 1; }
expect_condition Unknown/WorkloadUnverifiable "agent restart without a record"
expect_message "no record says which version it runs" "agent restart without a record"
expect_status_field '.workload.containers[0].version' null "agent restart without a record"
# a forged or cut record is no evidence either
stop_agent
ctl POST "/pods/$POD/rewrite-conditions" \
        "[{\"type\": \"$TYPE\", \"status\": \"True\", \"reason\": \"ConfigCurrent\", \"message\": \"enroot.conf current. [workload: slurmd containerd://c4 runs ../../etc]\"}]" >/dev/null
start_container 6 || { finish; exit 1; }
expect_condition Unknown/WorkloadUnverifiable "agent restart with a bad record"

stop_agent
finish
