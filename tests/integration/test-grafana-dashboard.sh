#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Grafana dashboard of container/kubernetes/grafana/, offline:
# - its JSON model (tests/kubernetes/grafana-dashboard.jq says what is
#   checked: ids, data source variable, targets, template variables);
# - its ConfigMap: kube-prometheus-stack's sidecar label, and the dashboard
#   JSON byte for byte;
# - every query of every panel and template variable evaluated by `promtool
#   test rules` against the series of real agents: four agents run against the
#   fake API server, as the pods worker-0 (current), worker-1 (drifted in two
#   keys), worker-2 (drifted in one, --watch poll) and login-0 (a running file
#   missing, so unknown; the API server refuses its condition with 403). Their
#   /metrics, scraped with curl, become promtool's input series with the
#   labels podmonitor.yaml gives a scrape (job, namespace, pod, container,
#   endpoint, instance, node, slurm_role): a gauge keeps its scraped value, a
#   counter grows by its scraped value every minute. No kube-state-metrics
#   runs here: its restart counters are typed below, with the labels its
#   documentation (docs/metrics/workload/pod-metrics.md) gives them. The
#   expected results are tests/kubernetes/grafana-dashboard.expect.json;
#   a query without one, or expecting nothing, fails.
# Broken copies must be rejected, so a check that lets everything through
# fails.
. "$(dirname "$0")/lib.sh"

for c in curl jq openssl kubectl; do
        command -v "$c" >/dev/null || skip "no-$c" "$c is missing (scripts/setup-deps.sh installs it)"
done
tool=${PROMTOOL:-$(command -v promtool || true)}
[ -n "$tool" ] || skip no-promtool "promtool is not installed (scripts/setup-deps.sh installs prometheus)"
FAKE=${FAKE_APISERVER:-$(dirname "$AGENT")/tests/tools/fake-apiserver}
[ -x "$FAKE" ] || { echo "FAIL: $FAKE is not built" >&2; exit 1; }
: "${TOP_SRCDIR:?run through make check}"

grafana=$TOP_SRCDIR/container/kubernetes/grafana
dashboard=$grafana/aicr-enroot-agent-dashboard.json
configmap=$grafana/dashboard-configmap.yaml
expect=$TOP_SRCDIR/tests/kubernetes/grafana-dashboard.expect.json
model_checks=$TOP_SRCDIR/tests/kubernetes/grafana-dashboard.jq
NS=slurm
declare -A agent_pid=() agent_port=()
stop_agents() {
        local p
        for p in "${!agent_pid[@]}"; do
                # shellcheck disable=SC2034 # stop_agent (lib.sh) reads AGENT_LOG
                AGENT_PID=${agent_pid[$p]} AGENT_LOG=$WORK/agent-$p.log
                stop_agent
                unset "agent_pid[$p]"
        done
}
trap 'stop_agents; stop_fake; rm -rf "$WORK"' EXIT

# --- the ConfigMap -------------------------------------------------------------
# configmap_problems FILE DASHBOARD: one line per problem of the ConfigMap FILE
# (parsed by kubectl, offline) wrapping DASHBOARD.
configmap_problems() {
        local obj
        obj=$(kubectl label --local -f "$1" aicr-parse-check=1 -o json 2>&1) ||
                { echo "kubectl cannot read $(basename "$1"): $obj"; return; }
        jq -r '(if .kind == "ConfigMap" and .apiVersion == "v1" then empty else "not a v1 ConfigMap" end),
                (if .metadata.labels.grafana_dashboard == "1" then empty
                 else "no label grafana_dashboard: \"1\" (the sidecar of kube-prometheus-stack loads those)" end),
                (if (.data | keys) == ["aicr-enroot-agent-dashboard.json"] then empty
                 else "its data is not the one key aicr-enroot-agent-dashboard.json: \(.data | keys)" end)' <<<"$obj"
        jq -j '.data["aicr-enroot-agent-dashboard.json"] // ""' <<<"$obj" >"$WORK/configmap.json"
        cmp -s "$WORK/configmap.json" "$2" ||
                echo "its aicr-enroot-agent-dashboard.json differs from $(basename "$2"): $(diff "$2" "$WORK/configmap.json" | head -4)"
}
out=$(configmap_problems "$configmap" "$dashboard")
[ -z "$out" ] && pass || fail "dashboard-configmap.yaml: $out"

# --- the agents ------------------------------------------------------------------------
cm=$WORK/cm
mkdir -p "$cm"
sa=$WORK/sa
kube_pki "$sa" "$NS" token-1
declare -A pod_uid=([worker-0]=4d2c6c1e-0000-4000-8000-000000000000 [worker-1]=4d2c6c1e-0000-4000-8000-000000000001
        [worker-2]=4d2c6c1e-0000-4000-8000-000000000002 [login-0]=4d2c6c1e-0000-4000-8000-000000000003)
declare -A pod_node=([worker-0]=n0 [worker-1]=n1 [worker-2]=n2 [login-0]=l0)
declare -A pod_role=([worker-0]=worker [worker-1]=worker [worker-2]=worker [login-0]=login)
pods=(worker-0 worker-1 worker-2 login-0)
jq -n --arg ns "$NS" --argjson uids "$(for p in "${pods[@]}"; do echo "{\"$p\": \"${pod_uid[$p]}\"}"; done | jq -s add)" \
        '{items: [$uids | to_entries[] | {metadata: {name: .key, namespace: $ns, uid: .value, resourceVersion: "100"},
                                           status: {conditions: []}}]}' >"$WORK/pods.json"
start_fake "$WORK/pods.json" --rbac "$AGENT_RBAC"
# login-0's condition is refused, as when its RoleBinding is missing
ctl POST /faults '{"match": {"method": "PATCH", "path": "/api/v1/namespaces/'$NS'/pods/login-0/status"}, "status": 403, "count": 1000}' >/dev/null ||
        fail "the fake refuses the fault"

# The ConfigMap, and what each pod runs.
publish 'ENROOT_MOUNT_HOME=yes\nENROOT_TRANSFER_TIMEOUT=600\n' 'NCCL_DEBUG=WARN\n'
running() { # POD ENROOT.CONF [ENV]: the pod's running files; no ENV, no such file
        mkdir -p "$WORK/root-$1/etc/enroot/environ.d"
        printf '%b' "$2" >"$WORK/root-$1/etc/enroot/enroot.conf"
        [ -z "${3:-}" ] || printf '%b' "$3" >"$WORK/root-$1/etc/enroot/environ.d/99-aicr-defaults.env"
}
running worker-0 'ENROOT_MOUNT_HOME=yes\nENROOT_TRANSFER_TIMEOUT=600\n' 'NCCL_DEBUG=WARN\n'
running worker-1 'ENROOT_MOUNT_HOME=no\nENROOT_TRANSFER_TIMEOUT=300\n' 'NCCL_DEBUG=WARN\n'
running worker-2 'ENROOT_MOUNT_HOME=no\nENROOT_TRANSFER_TIMEOUT=600\n' 'NCCL_DEBUG=WARN\n'
running login-0 'ENROOT_MOUNT_HOME=yes\nENROOT_TRANSFER_TIMEOUT=600\n'
declare -A pod_args=([worker-2]='--watch poll')
for p in "${pods[@]}"; do
        # shellcheck disable=SC2086 # pod_args holds words
        start_agent "$WORK/agent-$p.log" --desired-dir "$cm" --running-root "$WORK/root-$p" --kube on \
                --kube-api "$API" --serviceaccount-dir "$sa" --pod-name "$p" --pod-uid "${pod_uid[$p]}" \
                ${pod_args[$p]:-} || { finish; exit 1; }
        agent_pid[$p]=$AGENT_PID agent_port[$p]=$PORT
done
AGENT_PID=

# until_metric POD SERIES VALUE: the agent of POD exports SERIES with VALUE
until_metric() {
        PORT=${agent_port[$1]}
        expect_metric "$2" "$3"
}
for p in worker-0 worker-1 worker-2; do until_metric "$p" 'aicr_enroot_agent_condition_synced ' 1; done
until_metric login-0 'aicr_enroot_agent_kube_requests_total{verb="patch",code="403"}' 1
until_metric worker-0 'aicr_enroot_config_current ' 1
until_metric worker-1 'aicr_enroot_config_drifted_keys{file="enroot.conf"}' 2
until_metric worker-2 'aicr_enroot_config_drifted_keys{file="enroot.conf"}' 1
until_metric worker-2 'aicr_enroot_agent_watch_mode{mode="poll"}' 1
until_metric login-0 'aicr_enroot_config_state{file="99-aicr-defaults.env",state="missing"}' 1

# --- the scrapes, as promtool's input series ---------------------------------------------
# series POD: the scrape of POD's agent, with the labels of a scrape through
# podmonitor.yaml, one JSON object per series.
series() {
        local target
        target="job=\"aicr-enroot-agent\",namespace=\"$NS\",pod=\"$1\",container=\"aicr-enroot-agent\",endpoint=\"agent-metrics\""
        target+=",instance=\"10.0.0.$2:9100\",node=\"${pod_node[$1]}\",slurm_role=\"${pod_role[$1]}\""
        jq -R -s -c --arg target "$target" '
                split("\n") as $lines
                | ([$lines[] | capture("^# TYPE (?<n>[^ ]+) (?<t>[^ ]+)$") | {(.n): .t}] | add) as $types
                | $lines[] | select(length > 0 and (startswith("#") | not))
                | (capture("^(?<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(?<labels>.*)\\})? (?<value>[^ ]+)$")
                   // error("not a sample line: \(.)"))
                | {series: "\(.name){\(if .labels then .labels + "," else "" end)\($target)}",
                   values: (if $types[.name] == "counter" then "\(.value)+\(.value)x60" else "\(.value)x60" end)}' \
                "$WORK/metrics-$1.txt"
}
i=0
: >"$WORK/series.jsonl"
for p in "${pods[@]}"; do
        i=$((i + 1))
        curl -sf "http://127.0.0.1:${agent_port[$p]}/metrics" >"$WORK/metrics-$p.txt" && pass || fail "no /metrics from $p"
        series "$p" "$i" >>"$WORK/series.jsonl" || fail "the scrape of $p does not convert: $(head -c 300 "$WORK/metrics-$p.txt")"
done
# kube-state-metrics' restart counters, as kube-prometheus-stack scrapes them
# (honorLabels: the pod's own namespace and pod): worker-0's agent is a plain
# container that restarts twice a minute, login-0's a native sidecar (an init
# container) that restarts once a minute, worker-1's sidecar never restarts
# and its slurmd container restarts (not the agent: not shown).
ksm() { # METRIC POD CONTAINER VALUES
        printf '{"series": "%s{job=\\"kube-state-metrics\\",instance=\\"10.0.1.1:8080\\",endpoint=\\"http\\",service=\\"kube-prometheus-stack-kube-state-metrics\\",namespace=\\"%s\\",pod=\\"%s\\",container=\\"%s\\",uid=\\"%s\\"}", "values": "%s"}\n' \
                "$1" "$NS" "$2" "$3" "${pod_uid[$2]}" "$4"
}
{
        ksm kube_pod_container_status_restarts_total worker-0 aicr-enroot-agent '0+2x60'
        ksm kube_pod_init_container_status_restarts_total login-0 aicr-enroot-agent '0+1x60'
        ksm kube_pod_init_container_status_restarts_total worker-1 aicr-enroot-agent '0x60'
        ksm kube_pod_container_status_restarts_total worker-1 slurmd '0+1x60'
} >>"$WORK/series.jsonl"
jq -s . "$WORK/series.jsonl" >"$WORK/series.json" && pass || fail "the input series are not JSON"

# The numbers the expectations take from the scrapes, each also checked
# against /status, which the agent renders apart from /metrics.
echo '{}' >"$WORK/scraped.json"
for p in worker-1 worker-2; do
        s=$(grep -F 'aicr_enroot_config_drift_start_timestamp_seconds{file="enroot.conf"}' "$WORK/metrics-$p.txt" | awk '{ print $2 }')
        status=$(curl -sf "http://127.0.0.1:${agent_port[$p]}/status" |
                jq -r '.files[] | select(.key == "enroot.conf") | .drift_since | fromdateiso8601')
        [ -n "$s" ] && [ "${s%.*}" = "$status" ] && pass ||
                fail "$p: the drift start in /metrics ($s) is not the one of /status ($status)"
        jq --arg k "drift_since_ms $p enroot.conf" --arg s "${s:-0}" '.[$k] = ($s | tonumber) * 1000' \
                "$WORK/scraped.json" >"$WORK/scraped.new" && mv "$WORK/scraped.new" "$WORK/scraped.json"
done
stop_agents
stop_fake

# --- the dashboard's checks and queries -------------------------------------------------
# dashboard_check DASHBOARD [EXPECT]: the JSON model's problems and the
# queries' coverage in $WORK/problems, promtool's verdict in $WORK/promtool
# (empty when every query gave its expected result); returns 1 when either
# has something.
dashboard_check() {
        local rc=0
        : >"$WORK/problems"
        : >"$WORK/promtool"
        if ! jq -f "$model_checks" --slurpfile expect "${2:-$expect}" --slurpfile series "$WORK/series.json" \
                --slurpfile scraped "$WORK/scraped.json" "$1" >"$WORK/checked.json" 2>"$WORK/problems"; then
                return 1
        fi
        jq -r '.problems[]' "$WORK/checked.json" >"$WORK/problems"
        jq '.test' "$WORK/checked.json" >"$WORK/dashboard.test.yaml"
        (cd "$WORK" && "$tool" test rules dashboard.test.yaml) >"$WORK/promtool.out" 2>&1 || cp "$WORK/promtool.out" "$WORK/promtool"
        [ ! -s "$WORK/problems" ] && [ ! -s "$WORK/promtool" ] || rc=1
        return "$rc"
}
if dashboard_check "$dashboard"; then
        pass
else
        while IFS= read -r line; do fail "aicr-enroot-agent-dashboard.json: $line"; done <"$WORK/problems"
        [ ! -s "$WORK/promtool" ] || fail "promtool test rules on the dashboard's queries: $(cat "$WORK/promtool")"
fi
n=$(jq '.test.tests[0].promql_expr_test | length' "$WORK/checked.json" 2>/dev/null || echo 0)
[ "$n" -ge 17 ] && pass || fail "only $n of the dashboard's queries were evaluated"
printf '%s: %s queries evaluated\n' "$TEST_NAME" "$n"

# --- broken copies are rejected --------------------------------------------------------
# reject WHAT EXPECTED-LINE JQ-FILTER [promtool]: the dashboard edited by
# JQ-FILTER must fail with a line containing EXPECTED-LINE, from the checks
# (or from promtool).
reject() {
        local what=$1 want=$2 filter=$3 where=${4:-problems}
        jq "$filter" "$dashboard" >"$WORK/bad.json"
        if jq -e --slurpfile a "$dashboard" '. == $a[0]' "$WORK/bad.json" >/dev/null; then
                fail "reject $what: the edit changed nothing"
        elif dashboard_check "$WORK/bad.json"; then
                fail "a dashboard with $what passes"
        elif grep -qF -- "$want" "$WORK/$where"; then
                pass
        else
                fail "a dashboard with $what fails, but not with '$want': $(head -c 400 "$WORK/problems" "$WORK/promtool")"
        fi
}
reject "a metric the agent does not export" "aicr_enroot_config_drifted_key_count" \
        '.panels[1].targets[1].expr |= sub("aicr_enroot_config_drifted_keys"; "aicr_enroot_config_drifted_key_count")' promtool
reject "a label the agent does not export" "aicr_enroot_agent_watch_mode" \
        '.panels[7].targets[0].expr |= sub("mode\\)"; "watch_mode)")' promtool
reject "the restart series of the plain container only" "kube_pod_container_status_restarts_total" \
        '.panels[6].targets[0].expr |= sub("increase\\(kube_pod_init_container_status_restarts_total[^]]*\\]\\) or "; "")' promtool
reject "the restart series of the native sidecar only" "kube_pod_init_container_status_restarts_total" \
        '.panels[6].targets[0].expr |= sub(" or increase\\(kube_pod_container_status_restarts_total[^]]*\\]\\)"; "")' promtool
reject "restarts of every container of the pod" "kube_pod_container_status_restarts_total" \
        '.panels[6].targets[0].expr |= gsub("container=\"aicr-enroot-agent\", "; "")' promtool
reject "a hard-coded data source" "its datasource is not the \${datasource} variable" \
        '.panels[0].datasource = {"type": "prometheus", "uid": "prometheus"}'
reject "a hard-coded data source in a target" "a data source uid is written in the dashboard" \
        '.panels[2].targets[0].datasource = {"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}'
reject "two panels with one id" "panel ids are not unique numbers" '.panels[1].id = .panels[0].id'
reject "a panel without targets" "no targets" 'del(.panels[4].targets)'
reject "a target without expr" "no expr" 'del(.panels[3].targets[0].expr)'
reject "a query without an expected result" "has no expected result" \
        '.panels[0].targets += [{"refId": "Z", "expr": "count(aicr_enroot_config_current)", "datasource": {"type": "prometheus", "uid": "${datasource}"}}]'
reject "a panel the expectations do not know" "which the dashboard does not have" '.panels[7].title = "Watching"'
reject "a variable the dashboard does not define" '$node is no variable of the dashboard' \
        '.panels[7].targets[0].expr |= sub("pod=~\"\\$pod\""; "node=~\"$node\"")'
reject "no pod variable" "no template variable pod" '.templating.list |= map(select(.name != "pod"))'
reject "no uid" "the dashboard has no uid" 'del(.uid)'
reject "no schemaVersion" "no schemaVersion" 'del(.schemaVersion)'
# An expectation of nothing cannot tell a renamed metric from a right one.
jq '.["Watch mode"].A = []' "$expect" >"$WORK/bad-expect.json"
if dashboard_check "$dashboard" "$WORK/bad-expect.json"; then fail "an expectation of no sample passes"; else
        grep -qF 'expects no sample' "$WORK/problems" && pass || fail "an expectation of no sample fails otherwise: $(head -3 "$WORK/problems")"
fi
# A wrong expected value fails in promtool.
jq '.["Condition sync"].B[0].value = 2' "$expect" >"$WORK/bad-expect.json"
if dashboard_check "$dashboard" "$WORK/bad-expect.json"; then fail "a wrong expected value passes"; else
        grep -qF 'aicr_enroot_agent_condition_synced' "$WORK/promtool" && pass ||
                fail "a wrong expected value fails otherwise: $(head -3 "$WORK/problems" "$WORK/promtool")"
fi
# The ConfigMap: another label, or a dashboard that is not the JSON file.
sed 's/grafana_dashboard: "1"/grafana_dashboard: "true"/' "$configmap" >"$WORK/bad-configmap.yaml"
case $(configmap_problems "$WORK/bad-configmap.yaml" "$dashboard") in
*"no label grafana_dashboard"*) pass ;;
*) fail "a ConfigMap without the sidecar's label passes" ;;
esac
sed 's/"refresh": "1m"/"refresh": "5m"/' "$configmap" >"$WORK/bad-configmap.yaml"
case $(configmap_problems "$WORK/bad-configmap.yaml" "$dashboard") in
*"differs from aicr-enroot-agent-dashboard.json"*) pass ;;
*) fail "a ConfigMap with another dashboard passes" ;;
esac

finish
