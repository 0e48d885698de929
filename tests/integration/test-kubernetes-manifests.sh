#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# container/kubernetes/ validated offline, as CI can: tests/kubernetes/
# validate-manifests.js (kubernetes-models schemas, strict about unknown
# fields; Pod Security "restricted" for the agent container where its mode
# allows; requests equal to limits; the admission policy's CEL on sample
# requests; the NetworkPolicy's ports; every alert's runbook a heading of docs/OPERATIONS.md; the promtool
# tests fed series shaped as kube-state-metrics and the real agent export
# them; the files agree with each other, with the Containerfile and with the
# metrics the real binary exports; the generic sidecar example (a plain
# Deployment, examples/generic-deployment.yaml) with the same agent checks;
# the rollout Job's RBAC against
# rollout-rbac.yaml, and its arguments accepted by the real rollout), then
# `promtool check rules` and
# `promtool test rules` on the PrometheusRule's groups. Broken copies of the
# manifests must be rejected, so a check that lets everything through fails.
#
# The npm packages are installed by scripts/setup-node-deps.sh into .cache/node
# of the source tree (git-ignored) when it is writable, else into a temporary
# directory; AICR_NODE_DEPS overrides.
. "$(dirname "$0")/lib.sh"
started=$SECONDS

manifests=$TOP_SRCDIR/container/kubernetes
validator=$TOP_SRCDIR/tests/kubernetes/validate-manifests.js
for c in node npm curl flock jq; do
        command -v "$c" >/dev/null || skip "no-$c" "$c is missing (scripts/setup-deps.sh installs it)"
done
tool=${PROMTOOL:-$(command -v promtool || true)}
[ -n "$tool" ] || skip no-promtool "promtool is not installed (scripts/setup-deps.sh installs prometheus)"

deps=${AICR_NODE_DEPS:-}
if [ -z "$deps" ]; then
        if mkdir -p "$TOP_SRCDIR/.cache/node" 2>/dev/null && [ -w "$TOP_SRCDIR/.cache/node" ]; then
                deps=$TOP_SRCDIR/.cache/node
        else
                deps=$WORK/node # a read-only source tree (make distcheck)
        fi
fi
mkdir -p "$deps"
if ! flock "$deps/.lock" bash "$TOP_SRCDIR/scripts/setup-node-deps.sh" "$deps" >"$WORK/npm.log" 2>&1; then
        if grep -qE 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|network' "$WORK/npm.log"; then
                skip no-npm-registry "the npm registry cannot be reached: $(grep -m1 -E 'ENOTFOUND|EAI_AGAIN|ECONN|ETIMEDOUT|ENETUNREACH|network' "$WORK/npm.log")"
        fi
        cat "$WORK/npm.log" >&2
        fail "scripts/setup-node-deps.sh failed"
        finish
fi

# The image's entry point, which the exec probes must name.
entry=$(sed -n 's/^ENTRYPOINT[[:space:]]*\["\([^"]*\)".*/\1/p' "$TOP_SRCDIR/container/Containerfile" | tail -n 1)
[ -n "$entry" ] || { fail "container/Containerfile has no ENTRYPOINT"; finish; }

# What the real binary exports, for the alert rules' metric and label names.
cm=$WORK/cm
root=$WORK/root
mkdir -p "$cm" "$root/etc/enroot/environ.d"
bash "$TOP_SRCDIR/tests/tools/atomic-writer.sh" "$cm" \
        enroot.conf="$TOP_SRCDIR/examples/configmap/enroot.conf" \
        99-aicr-defaults.env="$TOP_SRCDIR/examples/configmap/99-aicr-defaults.env" >/dev/null
cp "$TOP_SRCDIR/examples/running/enroot.conf" "$root/etc/enroot/"
cp "$TOP_SRCDIR/examples/running/99-aicr-defaults.env" "$root/etc/enroot/environ.d/"
"$AGENT" --desired-dir "$cm" --running-root "$root" --listen 127.0.0.1:0 >"$WORK/agent.log" 2>&1 &
agent_pid=$!
trap 'kill "$agent_pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
port=
for _ in $(seq 1 400); do
        port=$(sed -n 's/.*Serving .* on 127\.0\.0\.1:\([0-9]*\)\..*/\1/p' "$WORK/agent.log")
        [ -n "$port" ] && break
        kill -0 "$agent_pid" 2>/dev/null || break
        sleep 0.05
done
[ -n "$port" ] || { cat "$WORK/agent.log" >&2; fail "the agent did not start"; finish; }
for _ in $(seq 1 200); do
        "$AGENT" --check --listen "127.0.0.1:$port" >/dev/null 2>&1 && break
        sleep 0.05
done
curl -sf "http://127.0.0.1:$port/metrics" >"$WORK/metrics.txt" && pass || fail "no /metrics from the agent"
kill "$agent_pid"
wait "$agent_pid" 2>/dev/null || true

# validate DIR: the validator on DIR, its output in $WORK/validate.out.
validate() {
        node "$validator" --deps "$deps" --dir "$1" --entrypoint "$entry" \
                --metrics "$WORK/metrics.txt" --docs "${2:-$TOP_SRCDIR/docs/OPERATIONS.md}" \
                --rule-tests "${3:-$TOP_SRCDIR/tests/kubernetes/prometheusrule.test.yaml}" \
                --out "$WORK/rules" >"$WORK/validate.out" 2>&1
}

# --- the manifests as shipped --------------------------------------------------------
rc=0
validate "$manifests" || rc=$?
while IFS= read -r line; do
        case $line in
        "ok - "*) pass ;;
        "not ok - "*) fail "${line#not ok - }" ;;
        *) fail "validate-manifests.js: $line" ;;
        esac
done <"$WORK/validate.out"
[ "$rc" -eq 0 ] && pass || fail "validate-manifests.js exited $rc"
printf '%s: %d manifest checks\n' "$TEST_NAME" "$(grep -c '^ok - ' "$WORK/validate.out" || true)"

if out=$("$tool" check rules "$WORK/rules/prometheusrule.rules.yaml" 2>&1); then
        pass
else
        fail "promtool check rules: $out"
fi
cp "$TOP_SRCDIR/tests/kubernetes/prometheusrule.test.yaml" "$WORK/rules/"
if out=$(cd "$WORK/rules" && "$tool" test rules prometheusrule.test.yaml 2>&1); then
        pass
else
        fail "promtool test rules: $out"
fi

# --- the real binary accepts the command lines the variants give it --------------
# As in a pod: the downward API's variables and the API server's address.
probe_netns=()
unshare -n true 2>/dev/null && probe_netns=(unshare -n)
if "$AGENT" --help 2>&1 | grep -q -- '--kube '; then
        while IFS= read -r cmd; do
                what=$(jq -r .what <<<"$cmd")
                mapfile -t args < <(jq -r '.args[]' <<<"$cmd")
                case $(jq -r .kind <<<"$cmd") in
                daemon)
                        # --check-config: only the options, nothing is opened
                        env POD_NAME=slinky-0 POD_NAMESPACE=slurm POD_UID=0f0f0f0f-0000-4000-8000-000000000000 \
                                KUBERNETES_SERVICE_HOST=10.96.0.1 KUBERNETES_SERVICE_PORT=443 \
                                "$AGENT" "${args[@]}" --check-config >"$WORK/out" 2>&1 && pass ||
                                fail "$what are refused: $(cat "$WORK/out")"
                        ;;
                probe)
                        # nothing listens: not ready (1), never a usage error (2).
                        # In a network namespace of its own where the machine
                        # allows one: another test's agent may hold the port.
                        rc=0
                        "${probe_netns[@]}" "$AGENT" "${args[@]}" >"$WORK/out" 2>&1 || rc=$?
                        [ "$rc" -eq 1 ] && pass || fail "$what exits $rc here, expected 1 (not ready): $(cat "$WORK/out")"
                        ;;
                rollout)
                        # accepted (never 2, a usage error); with no API server
                        # to reach it stops there (3), before any Slurm command
                        rc=0
                        env POD_NAME=aicr-enroot-rollout-0 POD_NAMESPACE=slurm \
                                "$AGENT" "${args[@]}" --kube-api http://127.0.0.1:9 >"$WORK/out" 2>&1 || rc=$?
                        [ "$rc" -eq 3 ] && grep -q 'Is the API server reachable' "$WORK/out" && pass ||
                                fail "$what exit $rc here, expected 3 (no API server): $(cat "$WORK/out")"
                        ;;
                esac
        done < <(jq -c '.[]' "$WORK/rules/commands.json")
        [ -s "$WORK/rules/commands.json" ] && pass || fail "no command lines from the variants"
else
        skip_part no-kube-option "this agent has no --kube option: the variants' command lines were not run"
fi

# --- broken copies are rejected --------------------------------------------------------
# reject WHAT EXPECTED-LINE FILE SED-SCRIPT: a copy of the manifests with FILE
# edited by SED-SCRIPT must fail with a line containing EXPECTED-LINE.
reject() {
        local what=$1 want=$2 file=$3 script=$4 bad=$WORK/bad
        rm -rf "$bad"
        cp -r "$manifests" "$bad"
        sed -i "$script" "$bad/$file"
        if cmp -s "$manifests/$file" "$bad/$file"; then
                fail "reject $what: the edit changed nothing"
                return
        fi
        if validate "$bad"; then
                fail "a copy with $what passes validation"
        elif grep -q "^not ok - .*$want" "$WORK/validate.out"; then
                pass
        else
                fail "a copy with $what fails, but not with '$want': $(grep '^not ok' "$WORK/validate.out" | head -3)"
        fi
}
reject "a misspelt field" "has no field the schema does not know" \
        agent/sidecar/nodeset.yaml '0,/serviceAccountName:/s/serviceAccountName:/serviceAccount_Name:/'
reject "a wrongly typed field" "passes the Pod schema" \
        agent/sidecar/nodeset.yaml '0,/runAsUser: 65532/s/runAsUser: 65532/runAsUser: nobody/'
reject "privilege escalation" 'meets Pod Security "restricted"' \
        agent/sidecar/nodeset.yaml '0,/allowPrivilegeEscalation: false/s/allowPrivilegeEscalation: false/allowPrivilegeEscalation: true/'
reject "a capability too many" "the only departures from" \
        agent/target-process/nodeset.yaml '0,/add: \[SYS_PTRACE\]/s/add: \[SYS_PTRACE\]/add: [SYS_PTRACE, SYS_ADMIN]/'
reject "a verb too many" "nothing else" \
        rbac.yaml 's/verbs: \[get, watch\]/verbs: [get, watch, list]/'
reject "a YAML 1.1 boolean" "reads the same as YAML 1.1" \
        agent/sidecar/nodeset.yaml '0,/readOnly: true/s/readOnly: true/readOnly: yes/'
reject "a metric the agent does not export" "is a metric the agent exports" \
        prometheusrule.yaml 's/aicr_enroot_config_drift_start_timestamp_seconds/aicr_enroot_config_drift_started/'
reject "a state the agent does not report" "is a series the agent exports" \
        prometheusrule.yaml 's/state="invalid"/state="broken"/'
reject "requests below limits (a Guaranteed pod turns Burstable)" "requests and limits are set and equal" \
        agent/sidecar/nodeset.yaml '0,/cpu: 50m/s/cpu: 50m/cpu: 10m/'
reject "a runbook that is no heading of the guide" "is a heading of docs/OPERATIONS.md" \
        prometheusrule.yaml 's/#rbac-errors/#rbac-error/'
reject "no label AICR's Prometheus selects" "which AICR's Prometheus selects" \
        podmonitor.yaml '/^    release: kube-prometheus-stack/d'
reject "an admission policy that lets the agent patch any pod" "the policies deny the agent patching another pod" \
        validatingadmissionpolicy.yaml 's/ == \[request.name\]/ != []/'
reject "an admission policy that lets anyone change the condition" "the policies deny another user changing the condition" \
        validatingadmissionpolicy.yaml 's/"variables.after == variables.before"/"true"/'
reject "an admission policy for another condition type" "names the agent's condition type" \
        validatingadmissionpolicy.yaml "s/'EnrootConfigCurrent'/'EnrootConfigFresh'/"
reject "a binding that only warns" "enforces the policy (validationActions: Deny)" \
        validatingadmissionpolicy.yaml '$s/validationActions: \[Deny\]/validationActions: [Warn]/'
reject "a NetworkPolicy that opens the agent's port to everyone" "admits the namespace monitoring only" \
        networkpolicy.yaml 's/endPort: 9099/endPort: 9100/'
reject "a NetworkPolicy that closes UDP (srun, slurmd)" "every other port stays open to anyone" \
        networkpolicy.yaml '/protocol: UDP/,+2d'
reject "a NetworkPolicy that selects other pods" "selects the Slinky worker and login pods" \
        networkpolicy.yaml 's/- slinky-slurm-login-slinky/- slinky-slurm-controller/'
reject "a patch that replaces a bundle's volume" "is the agent's own" \
        agent/sidecar/nodeset.yaml 's/- name: aicr-enroot-agent-token/- name: enroot-config/'
reject "a port the PodMonitor does not scrape" "scrapes the agent's named port" \
        podmonitor.yaml 's/port: agent-metrics/port: metrics/'
reject "a rollout Role without delete" "the Role's other rules are those of tests/integration/rollout-rbac.yaml" \
        rollout/rbac.yaml 's/verbs: \[list, get, delete\]/verbs: [list, get]/'
reject "a rollout Role that reads every ConfigMap" "the Role's other rules are those of tests/integration/rollout-rbac.yaml" \
        rollout/rbac.yaml '/resourceNames: \[slinky-slurm-enroot-config\]/d'
reject "a rollout Role without create on events (the login notice)" "the Role's other rules are those of tests/integration/rollout-rbac.yaml" \
        rollout/rbac.yaml '/resources: \[events\]/,+1d'
reject "a rollout Role that may also delete events" "the Role's other rules are those of tests/integration/rollout-rbac.yaml" \
        rollout/rbac.yaml '/resources: \[events\]/{n;s/verbs: \[create\]/verbs: [create, delete]/}'
reject "a rollout Role that execs into every pod" "the Role allows kubectl exec into slurm-controller-0 only" \
        rollout/rbac.yaml '/resourceNames: \[slurm-controller-0\]/d'
reject "a rollout ClusterRole with a verb too many" "the ClusterRole's rules are those of" \
        rollout/rbac.yaml 's/^    verbs: \[get\]$/    verbs: [get, list]/'
reject "a rollout Job that relays to another pod" "the Role allows kubectl exec into slurm-controller-1 only" \
        rollout/job.yaml 's/ slurm-controller-0 / slurm-controller-1 /'
reject "a rollout Job that may escalate" 'rollout/job.yaml meets Pod Security "restricted"' \
        rollout/job.yaml 's/allowPrivilegeEscalation: false/allowPrivilegeEscalation: true/'
# the generic sidecar example
reject "a generic example whose workload mounts the file elsewhere" "nginx mounts nginx.conf with subPath at /etc/nginx/nginx.conf" \
        examples/generic-deployment.yaml 's|mountPath: /etc/nginx/nginx.conf|mountPath: /etc/nginx/conf.d/default.conf|'
reject "a generic example whose agent reads another path" "nginx.conf is mounted read-only with subPath at --running-root/etc/nginx/nginx.conf" \
        examples/generic-deployment.yaml 's|mountPath: /run/aicr-enroot/running/etc/nginx/nginx.conf|mountPath: /run/aicr-enroot/running/nginx.conf|'
reject "a generic example comparing a key the ConfigMap lacks" "every --file key is a key of the ConfigMap" \
        examples/generic-deployment.yaml 's|--file=nginx.conf=|--file=default.conf=|'
reject "a misspelt field in the generic example" "Deployment/web has no field the schema does not know" \
        examples/generic-deployment.yaml 's/^      automountServiceAccountToken: false/      automountServiceAccountTokens: false/'
reject "a generic example that may escalate" 'Deployment: the agent container meets Pod Security "restricted"' \
        examples/generic-deployment.yaml 's/allowPrivilegeEscalation: false/allowPrivilegeEscalation: true/'
reject "a generic example with a verb too many" "the Role grants what rbac.yaml's does and nothing else" \
        examples/generic-deployment.yaml 's/verbs: \[get, watch\]/verbs: [get, watch, list]/'

printf '%s: %ss\n' "$TEST_NAME" "$((SECONDS - started))"
finish
