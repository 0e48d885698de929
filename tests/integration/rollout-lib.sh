# SPDX-License-Identifier: Apache-2.0
# Shared by the rollout tests (test-rollout*.sh, test-docs.sh): sourced after
# lib.sh, never run. Slinky-shaped pods for the fake API server, and a small
# controller loop that stands in for Slinky's: when a worker pod is deleted
# it runs the slurmd preStop hook and restarts that node's slurmd
# (slurm-cluster.sh replace-node), then creates the replacement pod (same
# name, new UID) Ready and reporting EnrootConfigCurrent=True, as the agent
# in it would; a deleted login pod comes back under a new name.
# The caller sets NS, CLUSTER (slurm-cluster.sh), slurm (its directory), CTL
# (the fake's control port) and keeps the pods it started from in
# $WORK/pods.json.
# A replacement the controller cannot make (replace-node fails, or leaves the
# node other than DOWN with the preStop reason) is not faked: the controller
# records it in $WORK/controller.failed, creates no pod for it, and stops;
# stop_controller turns each record into a failed check. replace-node needs
# time namespaces: a test asks replace_node_unavailable first and skips.
# The agent's condition carries the times the agent writes (lastProbeTime:
# now), and seed_policies gives the fake the admission policies the rollout
# checks before it believes a condition.

WSEL=app.kubernetes.io/instance=slinky-slurm-worker-slinky
LSEL=app.kubernetes.io/instance=slinky-slurm-login-slinky
# pod_json NAME UID ROLE CONDITION-STATUS [HOSTNAME [HOSTNETWORK-NODE]]
# (Unknown comes with the reason WorkloadUnverifiable: the agent restarted
# after an update and cannot see what slurmd runs.)
# Worker pods are shaped as Slinky's NodeSet controller makes them
# (StatefulSet mode): spec.hostname, and the labels it sets, among them
# nodeset.slinky.slurm.net/pod-hostname, the Slurm node name: spec.hostname,
# or under hostNetwork the Kubernetes node's name (spec.nodeName), while
# spec.hostname stays the pod's name (slurm-operator GetSlurmNodeName).
pod_json() {
        local reason=ConfigCurrent label=${WSEL#*=}
        [ "$4" = False ] && reason=ConfigDrifted
        [ "$4" = Unknown ] && reason=WorkloadUnverifiable
        [ "$3" = login ] && label=${LSEL#*=}
        jq -nc --arg name "$1" --arg uid "$2" --arg lbl "$label" --arg status "$4" \
                --arg reason "$reason" --arg host "${5:-}" --arg hostnet "${6:-}" --arg ns "$NS" \
                --arg role "$3" --arg now "$(date -u +%Y-%m-%dT%H:%M:%SZ)" '
                {metadata: {name: $name, namespace: $ns, uid: $uid,
                            labels: ({"app.kubernetes.io/instance": $lbl} +
                                     if $role != "worker" then {} else
                                     {"nodeset.slinky.slurm.net/pod-name": $name,
                                      "nodeset.slinky.slurm.net/scaling-mode": "StatefulSet",
                                      "nodeset.slinky.slurm.net/pod-hostname":
                                        (if $hostnet != "" then $hostnet
                                         elif $host != "" then $host else $name end)} end)},
                 spec: ((if $host == "" then {} else {hostname: $host} end) +
                        (if $hostnet == "" then {} else {hostNetwork: true, nodeName: $hostnet} end)),
                 status: {conditions: [{type: "Ready", status: "True"},
                                       {type: "EnrootConfigCurrent", status: $status,
                                        reason: $reason, message: "test",
                                        lastTransitionTime: $now, lastProbeTime: $now}]}}'
}
# seed_policies [CREATED]: the two admission policies of
# container/kubernetes/validatingadmissionpolicy.yaml and their bindings (the
# fields the rollout reads), created at CREATED (RFC 3339; default an hour
# ago, before every condition the pods carry).
seed_policies() {
        local created=${1:-$(date -u -d '1 hour ago' +%Y-%m-%dT%H:%M:%SZ)} name
        for name in aicr-enroot-agent-own-pod-status aicr-enroot-agent-condition-writers; do
                jq -nc --arg n "$name" --arg t "$created" '
                        {apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicy",
                         metadata: {name: $n, creationTimestamp: $t},
                         spec: {failurePolicy: "Fail",
                                variables: [{name: "conditionType", expression: "\u0027EnrootConfigCurrent\u0027"}],
                                validations: [{expression: "true"}]}}' |
                        curl -sf -X POST "$CTL/validatingadmissionpolicies" -H 'Content-Type: application/json' \
                                --data-binary @- >/dev/null || return 1
                jq -nc --arg n "$name" --arg t "$created" '
                        {apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicyBinding",
                         metadata: {name: $n, creationTimestamp: $t},
                         spec: {policyName: $n, validationActions: ["Deny"]}}' |
                        curl -sf -X POST "$CTL/validatingadmissionpolicybindings" -H 'Content-Type: application/json' \
                                --data-binary @- >/dev/null || return 1
        done
}
# worker_json N UID STATUS: worker pod slurm-worker-slinky-N, Slurm node
# slinky-N; with HOSTNET set for it (HOSTNET="3"), a hostNetwork pod whose
# spec.hostname is its pod name and only the label names slinky-N.
worker_json() {
        case " ${HOSTNET:-} " in
        *" $1 "*) pod_json "slurm-worker-slinky-$1" "$2" worker "$3" "slurm-worker-slinky-$1" "slinky-$1" ;;
        *) pod_json "slurm-worker-slinky-$1" "$2" worker "$3" "slinky-$1" ;;
        esac
}
# replace_node_unavailable: prints why slurm-cluster.sh replace-node cannot
# run here (it gives the new slurmd a fresh boot time in a time namespace),
# or nothing, and then fails.
replace_node_unavailable() {
        unshare --time --boottime 0 true 2>/dev/null && return 1
        echo "cannot make a time namespace (unshare --time): the stand-in for Slinky cannot replace a node"
}
# replaced_down NODE: the node as the preStop hook leaves it: DOWN, with
# Slinky's reason.
replaced_down() {
        local line
        line=$(scontrol --oneliner show node "$1") || return 1
        case "$line" in *" State="*DOWN*) ;; *) return 1 ;; esac
        case "$line" in *" Reason=slurm-operator: Pod is terminating ["*) ;; *) return 1 ;; esac
}
# The controller: recreates deleted pods; NEVER_READY names a worker whose
# replacement never becomes Ready. Each node it replaced is a line of
# $WORK/controller.replaced.
controller() {
        local n name uid i=0 rc
        while sleep 0.1; do
                ctl GET /pods >"$WORK/pods.now" 2>/dev/null || continue
                for n in 0 1 2 3; do
                        name=slurm-worker-slinky-$n
                        grep -q "\"slinky-$n\"" "$WORK/pods.json" || continue
                        jq -e --arg n "$name" '.items[] | select(.metadata.name == $n)' \
                                "$WORK/pods.now" >/dev/null && continue
                        rc=0
                        bash "$CLUSTER" replace-node "$slurm" "slinky-$n" >>"$WORK/controller.log" 2>&1 || rc=$?
                        if [ "$rc" != 0 ]; then
                                echo "replace-node slinky-$n exited $rc: $(tail -2 "$WORK/controller.log" | tr '\n' ' ')" >>"$WORK/controller.failed"
                                return 1
                        fi
                        if ! replaced_down "slinky-$n"; then
                                echo "slinky-$n is not DOWN with the preStop reason after its replacement: $(scontrol --oneliner show node "slinky-$n" 2>&1 | grep -o 'State=[^ ]*\|Reason=.*' | tr '\n' ' ')" >>"$WORK/controller.failed"
                                return 1
                        fi
                        echo "slinky-$n" >>"$WORK/controller.replaced"
                        i=$((i + 1))
                        uid=$(printf '10000000-0000-0000-0000-%012d' "$i")
                        if [ "$name" = "${NEVER_READY:-}" ]; then
                                worker_json "$n" "$uid" False |
                                        jq -c '.status.conditions[0].status = "False"'
                        else
                                worker_json "$n" "$uid" True
                        fi | curl -sf -X POST "$CTL/pods" -H 'Content-Type: application/json' \
                                --data-binary @- >/dev/null
                done
                if ! jq -e '.items[] | select(.metadata.labels["app.kubernetes.io/instance"] == "slinky-slurm-login-slinky")' \
                        "$WORK/pods.now" >/dev/null; then
                        i=$((i + 1))
                        pod_json "slurm-login-slinky-r$i" "$(printf '20000000-0000-0000-0000-%012d' "$i")" login True |
                                curl -sf -X POST "$CTL/pods" -H 'Content-Type: application/json' \
                                        --data-binary @- >/dev/null
                fi
        done
}
start_controller() {
        stop_controller
        : >"$WORK/controller.replaced"
        : >"$WORK/controller.failed"
        controller &
        controller_pid=$!
}

controller_pid=
# stop_controller: each replacement the controller could not make fails the test.
stop_controller() {
        local line
        [ -n "$controller_pid" ] || return 0
        kill "$controller_pid" 2>/dev/null || true
        wait "$controller_pid" 2>/dev/null || true
        controller_pid=
        while IFS= read -r line; do
                fail "the stand-in controller: $line"
        done <"$WORK/controller.failed"
        : >"$WORK/controller.failed"
}
# replaced: the nodes the controller replaced since it started, sorted, on one line.
replaced() { sort "$WORK/controller.replaced" | tr '\n' ' '; }

# --- what every rollout test starts with ----------------------------------------
section() { echo "== $* (at ${SECONDS}s)" >&2; }

# rollout_cluster_start [SLURM-CONF-LINE...]: the tools the rollout tests
# need (jq, openssl, the fake API server), a four-node Slurm cluster in
# $slurm (the lines added to its slurm.conf) with its environment
# exported (skips when this machine cannot run one), and a service account
# for namespace $NS in $WORK/sa (kube_pki). On exit the controller, the
# background job $bg when set, the fake and the cluster are stopped.
rollout_cluster_start() {
        local rc=0
        command -v jq >/dev/null || skip no-jq "jq is not installed (scripts/setup-deps.sh installs it)"
        command -v openssl >/dev/null || skip no-openssl "openssl is not installed (scripts/setup-deps.sh installs it)"
        FAKE=${FAKE_APISERVER:-$(dirname "$AGENT")/tests/tools/fake-apiserver}
        CLUSTER="$TOP_SRCDIR/tests/tools/slurm-cluster.sh"
        [ -x "$FAKE" ] || { echo "FAIL: $FAKE is not built" >&2; exit 1; }
        export PATH=$PATH:/usr/sbin:/sbin
        NS=slurm
        slurm=$WORK/slurm
        trap rollout_cleanup EXIT
        bash "$CLUSTER" start "$slurm" 4 "$@" >"$WORK/cluster.env" 2>"$WORK/cluster.err" || rc=$?
        [ "$rc" = 77 ] && skip no-slurm-cluster "$(sed -n 's/^slurm-cluster: SKIP: //p' "$WORK/cluster.err")"
        [ "$rc" = 0 ] || { cat "$WORK/cluster.err" >&2; echo "FAIL: the Slurm cluster did not start" >&2; exit 1; }
        set -a
        . "$WORK/cluster.env"
        set +a
        kube_pki "$WORK/sa" "$NS" rollout-token
}
rollout_cleanup() {
        stop_controller
        [ -z "${bg:-}" ] || { kill "$bg" 2>/dev/null; wait "$bg" 2>/dev/null; } || true
        stop_fake
        bash "$CLUSTER" stop "$slurm" >/dev/null 2>&1 || true
        rm -rf "$WORK"
}

# configmap_json [RELEASE [ENV]]: the enroot ConfigMap as AICR's manifest
# names it (slinky-slurm-enroot-config), owned by the Helm release RELEASE
# (annotation meta.helm.sh/release-name; default slinky-slurm-pre, "-" for
# none), with ENV as its 99-aicr-defaults.env.
configmap_json() {
        jq -nc --arg ns "$NS" --arg rel "${1:-slinky-slurm-pre}" --arg env "${2:-NCCL_DEBUG=WARN
}" '
                [{metadata: ({name: "slinky-slurm-enroot-config", namespace: $ns,
                              labels: {"app.kubernetes.io/managed-by": "Helm"}} +
                             if $rel == "-" then {} else
                             {annotations: {"meta.helm.sh/release-name": $rel,
                                            "meta.helm.sh/release-namespace": $ns}} end),
                  data: {"enroot.conf": "ENROOT_MOUNT_HOME=no\n", "99-aicr-defaults.env": $env}}]'
}

# start_pods "0:False 1:True ..." LOGIN-STATUS: worker pods slurm-worker-slinky-N
# (Slurm node slinky-N) with that condition, one login pod; and the admission
# policies, bound an hour ago (seed_policies), unless NO_POLICIES is set.
# With ARRIVALS set, the fake records every request's arrival in that file.
# The fake serves the ConfigMaps of the file CONFIGMAPS, by default
# configmap_json's.
start_pods() {
        local spec w
        stop_fake
        [ -n "${CONFIGMAPS:-}" ] || configmap_json >"$WORK/configmaps.json"
        {
                echo '{"items": ['
                for spec in $1; do
                        w=${spec%%:*}
                        worker_json "$w" "00000000-0000-0000-0000-00000000000$w" "${spec#*:}"
                        echo ,
                done
                pod_json slurm-login-slinky-a 00000000-0000-0000-0000-0000000000aa login "$2"
                echo ']}'
        } >"$WORK/pods.json"
        start_fake "$WORK/pods.json" --namespace "$NS" --rbac "$ROLLOUT_RBAC" --user "$ROLLOUT_USER" \
                --configmaps "${CONFIGMAPS:-$WORK/configmaps.json}" ${ARRIVALS:+--arrivals "$ARRIVALS"}
        [ -n "${NO_POLICIES:-}" ] || seed_policies || fail "cannot seed the admission policies"
}

# rollout ACTION ARGS...: runs the rollout against the fake, stdout in
# $WORK/out, stderr in $WORK/err, sets RC. POD_TIMEOUT (seconds, default 60)
# bounds the wait for a replacement; SLURM_BIN, when set, is put first on
# the rollout's PATH (wrappers around Slurm's commands). LOGIN_GRACE
# (seconds, default 0) is --login-grace, so that a case that replaces a login
# pod does not wait the default 300 s; set it empty for the default
# (test-rollout-notify.sh tests the notice and its grace).
LOGIN_GRACE=${LOGIN_GRACE-0}
rollout() {
        RC=0
        PATH="${SLURM_BIN:+$SLURM_BIN:}$PATH" "$AGENT" rollout "$@" --kube-api "$API" \
                --serviceaccount-dir "$WORK/sa" --namespace "$NS" --poll-interval 100 \
                ${LOGIN_GRACE:+--login-grace "$LOGIN_GRACE"} \
                --pod-timeout "${POD_TIMEOUT:-60}" --jobs-timeout 30 >"$WORK/out" 2>"$WORK/err" || RC=$?
}
expect_rc() { # WANT LABEL
        if [ "$RC" = "$1" ]; then pass; else
                fail "$2: exit $RC, expected $1"$'\n'"$(cat "$WORK/out" "$WORK/err")"
        fi
}
expect_said() { # FILE LABEL FIXED-STRING: the rollout said it
        if grep -qF -- "$3" "$WORK/$1"; then pass; else
                fail "$2: no '$3' in:"$'\n'"$(cat "$WORK/out" "$WORK/err")"
        fi
}

# Slurm's view of the nodes, and the pods the rollout deleted.
node_field() { scontrol --oneliner show node "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
node_state() { node_field "$1" State; }
node_reason() { scontrol --oneliner show node "$1" | sed -n 's/.* Reason=\(.*\) \[.*/\1/p'; }
node_is() { [ "$(node_state "$1")" = "$2" ]; }
all_idle() { [ "$(sinfo --noheader -N -o '%T' | sort -u | tr '\n' ' ')" = "idle " ]; }
deletes() { ctl GET /requests | jq -r '.[] | select(.method == "DELETE") | .path | sub(".*/"; "")' | tr '\n' ' '; }
# Every node back in service, no reasons, for the next case.
reset_nodes() {
        local n
        for n in slinky-0 slinky-1 slinky-2 slinky-3; do
                node_is "$n" IDLE || scontrol update nodename=$n state=resume >/dev/null 2>&1 || true
        done
        bash "$CLUSTER" wait-idle "$slurm" 30 >/dev/null 2>&1 || { fail "nodes did not come back idle"; sinfo -N >&2; }
}
