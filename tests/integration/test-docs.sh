#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Every shell command the README and docs/OPERATIONS.md show is either run
# here, as written, or marked as needing something this machine cannot give.
#
# 1. Markers. Each fenced block in README.md and docs/OPERATIONS.md whose
#    language is sh, bash, shell, zsh or console must have, on the line
#    right before its fence, one of:
#      <!-- doc-test: run NAME -->           run by case_NAME below
#      <!-- doc-test: real-cluster: WHY -->  needs a real cluster (or registry)
#      <!-- doc-test: not-run: WHY -->       neither: a build, the whole suite
#    An HTML comment renders as nothing on GitHub. A block without one, a
#    block without a language (output goes in ```text), a malformed or
#    orphan marker, a run NAME with no case here and a case with no block
#    each fail, naming file:line.
# 2. Cases. The run blocks are run with bash, as written, against: the fake
#    API server (tests/tools/fake-apiserver, TLS) serving namespace slurm
#    with Slinky-shaped worker and login pods carrying the agent's condition,
#    the enroot ConfigMap, and the admission policies OPERATIONS.md's deploy
#    step applies before the agents (which the rollout checks);
#    real kubectl pointed at it by a kubeconfig in $KUBECONFIG (the test CA,
#    the fake's bearer token, namespace slurm); the agent binary on PATH as
#    aicr-enroot-agent; a real four-node Slurm cluster
#    (tests/tools/slurm-cluster.sh) with the small controller of
#    rollout-lib.sh standing in for Slinky's; and `kubectl proxy` exactly as
#    the README starts it, so the rollout sends no token of its own. The
#    daemon's command lines run in a pod-like sandbox (own mount, PID and,
#    where `ip` is there, network namespace) and are probed with the
#    readiness command exactly as container/kubernetes/agent/*/{nodeset,loginset}.yaml
#    write it; the /status jq filter of the real-cluster port-forward block
#    is checked on their answer.
#
# `test-docs.sh CASE...` runs only those cases (the markers are always checked).
. "$(dirname "$0")/lib.sh"

: "${TOP_SRCDIR:?run through make check}"
DOCS=(README.md docs/OPERATIONS.md)
CASES=(names condition find wait lint-cluster drain replace rollout-proxy rollout-ops daemon)
section() { echo "== $* (at ${SECONDS}s)" >&2; }

# --- 1. the blocks and their markers -------------------------------------------------
mkdir -p "$WORK/blocks"
# One line per block in $WORK/blocks/index: FILE:LINE KIND ARG (kind run,
# real-cluster, not-run; ARG the name or the reason), the block's text (its
# fence's indentation removed) in $WORK/blocks/N.sh; problems in
# $WORK/blocks/problems, one a line.
extract_blocks() {
        local f n=0
        : >"$WORK/blocks/index"
        : >"$WORK/blocks/problems"
        for f in "${DOCS[@]}"; do
                awk -v file="$f" -v dir="$WORK/blocks" -v n0="$n" '
                function problem(line, text) { gsub(/\n/, "\\n", text); printf "%s:%d: %s\n", file, line, text >> (dir "/problems") }
                function shell_lang(l) { return l == "sh" || l == "bash" || l == "shell" || l == "zsh" || l == "console" }
                BEGIN { n = n0; in_fence = 0; marker_line = 0 }
                {
                        line = $0
                        if (in_fence) {
                                if (match(line, /^ *(```+|~~~+) *$/) && index(line, fence) > 0) {
                                        in_fence = 0
                                        if (out != "") close(out)
                                        next
                                }
                                if (out != "") {
                                        t = line
                                        for (i = 0; i < indent && substr(t, 1, 1) == " "; i++) t = substr(t, 2)
                                        print t > out
                                }
                                next
                        }
                        if (match(line, /^ *(```+|~~~+)/)) {
                                indent = match(line, /[^ ]/) - 1
                                rest = substr(line, indent + 1)
                                match(rest, /^(```+|~~~+)/)
                                fence = substr(rest, 1, RLENGTH)
                                lang = substr(rest, RLENGTH + 1)
                                sub(/^ */, "", lang); sub(/[ {].*$/, "", lang)
                                in_fence = 1
                                out = ""
                                if (lang == "") {
                                        problem(NR, "a fenced block without a language: name it (```text for output, ```sh for commands, and mark the commands)")
                                } else if (shell_lang(lang)) {
                                        if (marker_line == NR - 1) {
                                                n++
                                                out = dir "/" n ".sh"
                                                printf "" > out
                                                printf "%s:%d\t%s\t%s\n", file, NR, marker_kind, marker_arg >> (dir "/index")
                                        } else {
                                                problem(NR, "this ```" lang " block has no doc-test marker. Put one on the line right before its fence (it renders as nothing on GitHub):\n" \
                                                        "    <!-- doc-test: run NAME -->           the test runs it: add case_NAME to tests/integration/test-docs.sh\n" \
                                                        "    <!-- doc-test: real-cluster: WHY -->  it needs a real cluster; say what for\n" \
                                                        "    <!-- doc-test: not-run: WHY -->       neither (a build, the whole suite); say what runs it instead")
                                        }
                                }
                                marker_line = 0
                                next
                        }
                        if (marker_line == NR - 1 && marker_line > 0)
                                problem(marker_line, "a doc-test marker must be on the line right before the fence of a shell block")
                        marker_line = 0
                        if (line ~ /^ *<!-- *doc-test/) {
                                if (match(line, /^ *<!-- doc-test: run [a-z0-9][a-z0-9-]* -->$/)) {
                                        marker_kind = "run"; marker_arg = line
                                        sub(/^ *<!-- doc-test: run /, "", marker_arg); sub(/ -->$/, "", marker_arg)
                                        marker_line = NR
                                } else if (match(line, /^ *<!-- doc-test: (real-cluster|not-run): [^ ].* -->$/)) {
                                        marker_kind = line; sub(/^ *<!-- doc-test: /, "", marker_kind); sub(/:.*/, "", marker_kind)
                                        marker_arg = line; sub(/^ *<!-- doc-test: [a-z-]*: /, "", marker_arg); sub(/ -->$/, "", marker_arg)
                                        marker_line = NR
                                } else
                                        problem(NR, "malformed doc-test marker: write <!-- doc-test: run NAME -->, <!-- doc-test: real-cluster: WHY --> or <!-- doc-test: not-run: WHY -->")
                        }
                }
                END {
                        if (marker_line > 0) problem(marker_line, "a doc-test marker must be on the line right before the fence of a shell block")
                        if (in_fence) problem(NR, "the file ends inside a fenced block")
                        print n > (dir "/count")
                }' "$TOP_SRCDIR/$f"
                n=$(cat "$WORK/blocks/count")
        done
}

# block NAME: the file holding run block NAME's text
block() { echo "$WORK/blocks/by-name/$1.sh"; }

section "markers"
extract_blocks
mkdir -p "$WORK/blocks/by-name"
i=0
while IFS=$'\t' read -r where kind arg; do
        i=$((i + 1))
        [ "$kind" = run ] || continue
        if [ -e "$(block "$arg")" ]; then
                fail "$where: a second block named '$arg' (names must be unique)"
                continue
        fi
        cp "$WORK/blocks/$i.sh" "$(block "$arg")"
        echo "$where" >"$WORK/blocks/by-name/$arg.where"
        if [[ " ${CASES[*]} " == *" $arg "* ]]; then
                pass
        else
                fail "$where: 'doc-test: run $arg', but tests/integration/test-docs.sh has no case '$arg'"
        fi
done <"$WORK/blocks/index"
while IFS= read -r p; do fail "$(printf '%b' "$p")"; done <"$WORK/blocks/problems"
for c in "${CASES[@]}"; do
        [ -e "$(block "$c")" ] && pass || fail "case '$c' has no block marked <!-- doc-test: run $c --> in ${DOCS[*]}"
done
printf 'doc-test: %s blocks: %s run, %s real-cluster, %s not-run\n' "$(wc -l <"$WORK/blocks/index")" \
        "$(grep -c $'\trun\t' "$WORK/blocks/index" || true)" \
        "$(grep -c $'\treal-cluster\t' "$WORK/blocks/index" || true)" \
        "$(grep -c $'\tnot-run\t' "$WORK/blocks/index" || true)" >&2
if [ "$failures" -gt 0 ]; then
        finish
        exit 1
fi

# --- 2. the world the blocks run in ---------------------------------------------------
selected=("${CASES[@]}")
[ $# -gt 0 ] && selected=("$@")
for c in "${selected[@]}"; do
        [[ " ${CASES[*]} " == *" $c "* ]] || { echo "test-docs: no case '$c' (cases: ${CASES[*]})" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || skip not-root "the cases need root (a Slurm cluster, mount and PID namespaces); the markers are checked"
command -v kubectl >/dev/null || skip no-kubectl "kubectl is not installed (scripts/setup-deps.sh installs kubernetes-client)"
echo "doc-test: $(command -v kubectl): $(kubectl version --client 2>/dev/null | head -1)" >&2
command -v jq >/dev/null || skip no-jq "jq is not installed (scripts/setup-deps.sh installs it)"
command -v openssl >/dev/null || skip no-openssl "openssl is not installed (scripts/setup-deps.sh installs it)"
FAKE=${FAKE_APISERVER:-$(dirname "$AGENT")/tests/tools/fake-apiserver}
CLUSTER="$TOP_SRCDIR/tests/tools/slurm-cluster.sh"
[ -x "$FAKE" ] || { echo "FAIL: $FAKE is not built" >&2; exit 1; }
export PATH=$WORK/bin:$PATH:/usr/sbin:/sbin
NS=slurm
slurm=$WORK/slurm
proxy_pid=
cleanup() {
        stop_controller
        [ -z "$proxy_pid" ] || kill "$proxy_pid" 2>/dev/null || true
        stop_fake
        [ ! -d "$slurm" ] || bash "$CLUSTER" stop "$slurm" >/dev/null 2>&1 || true
        rm -rf "$WORK"
}
trap cleanup EXIT
. "$(dirname "$0")/rollout-lib.sh"
unset POD_NAME POD_NAMESPACE KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT

# the agent as the README calls it
mkdir -p "$WORK/bin" "$WORK/home" "$WORK/cwd"
ln -s "$AGENT" "$WORK/bin/aicr-enroot-agent"
export HOME=$WORK/home # kubectl's discovery cache

# The pods (rollout-lib.sh): workers 0-3, 1 and 2 drifted, 2 on hostNetwork
# (only Slinky's label names its Slurm node), and one login pod; with a phase
# and condition times, as a real cluster's pods have them.
HOSTNET=2
make_pods() {
        {
                worker_json 0 00000000-0000-0000-0000-000000000000 True
                worker_json 1 00000000-0000-0000-0000-000000000001 False
                worker_json 2 00000000-0000-0000-0000-000000000002 False
                worker_json 3 00000000-0000-0000-0000-000000000003 True
                pod_json slurm-login-slinky-7d9c5 00000000-0000-0000-0000-0000000000aa login True
        } | jq -s '{kind: "PodList", apiVersion: "v1", items: [.[] |
                .status.phase = "Running" |
                .status.conditions |= map(.lastTransitionTime = "2026-12-01T10:00:00Z") |
                if .status.conditions[1].status == "False" then
                        .status.conditions[1].message = "enroot.conf drifted: ENROOT_MOUNT_HOME changed"
                else . end]}' >"$WORK/pods.json"
}
# reset_pods: back to pods.json through the control port (the fake, and a
# kubectl proxy in front of it, keep running): every pod deleted, then added.
reset_pods() {
        local name
        stop_controller
        for name in $(ctl GET /pods | jq -r '.items[].metadata.name'); do
                ctl DELETE "/pods/$name" >/dev/null
        done
        jq -c '.items[]' "$WORK/pods.json" | while IFS= read -r pod; do
                ctl POST /pods "$pod" >/dev/null
        done
        ctl POST /reset-requests >/dev/null
}
make_pods
# the deployed enroot ConfigMap (tests/data/configmap/configmap.json), with a
# value enroot reads otherwise than it looks, owned as AICR's generated
# release slinky-slurm-pre owns it (the rollout checks that)
jq '{kind: "ConfigMapList", apiVersion: "v1",
     items: [.data["enroot.conf"] = "ENROOT_MOUNT_HOME=off\nENROOT_REMAP_ROOT=yes\n"
             | .metadata.annotations["meta.helm.sh/release-name"] = "slinky-slurm-pre"]}' \
        "$TEST_DATA_DIR/configmap/configmap.json" >"$WORK/configmaps.json"
kube_pki "$WORK/sa" "$NS" docs-test-token
start_fake "$WORK/pods.json" --namespace "$NS" --configmaps "$WORK/configmaps.json"
# The admission policies, as OPERATIONS.md's deploy step 3 applies them before
# the agents start (a real-cluster block: the fake takes them through its
# control port); the rollout believes the pods' conditions only under them.
seed_policies || { echo "FAIL: cannot give the fake API server the admission policies" >&2; exit 1; }
export KUBECONFIG=$WORK/kubeconfig
cat >"$KUBECONFIG" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: $API
    certificate-authority: $WORK/pki/ca.crt
users:
- name: operator
  user:
    token: $(cat "$WORK/server-token")
contexts:
- name: test
  context:
    cluster: test
    user: operator
    namespace: $NS
current-context: test
EOF

needs_slurm=0
for c in "${selected[@]}"; do
        case $c in drain | replace | rollout-*) needs_slurm=1 ;; esac
done
if [ "$needs_slurm" = 1 ]; then
        rc=0
        bash "$CLUSTER" start "$slurm" 4 >"$WORK/cluster.env" 2>"$WORK/cluster.err" || rc=$?
        [ "$rc" = 77 ] && skip no-slurm-cluster "$(sed -n 's/^slurm-cluster: SKIP: //p' "$WORK/cluster.err")"
        [ "$rc" = 0 ] || { cat "$WORK/cluster.err" >&2; echo "FAIL: the Slurm cluster did not start" >&2; exit 1; }
        set -a
        . "$WORK/cluster.env"
        set +a
fi

# run_doc NAME [PRELUDE...]: runs block NAME with bash in $WORK/cwd, after
# the PRELUDE blocks (their output dropped: they set the variables NAME
# uses), stopping at the first command that fails (-e, pipefail); stdout
# in $WORK/NAME.out, stderr in $WORK/NAME.err, the exit status in DOC_RC.
run_doc() {
        local name=$1 p prelude=""
        shift
        for p in "$@"; do prelude+=". '$(block "$p")' >/dev/null 2>&1; "; done
        DOC_RC=0
        (cd "$WORK/cwd" && bash -e -o pipefail -c "$prelude. '$(block "$name")'") \
                >"$WORK/$name.out" 2>"$WORK/$name.err" || DOC_RC=$?
}
# run_doc_lines NAME: the same, but each line of the block on its own, in one
# shell, recording every line's exit status in $WORK/NAME.rc ("LINE RC");
# after a line that starts a job in the background, on_background runs (the
# operator types the next line when the job is up). One-line commands only.
run_doc_lines() {
        local name=$1 line i=0
        {
                while IFS= read -r line; do
                        i=$((i + 1))
                        printf '%s\n' "$line"
                        [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
                        printf 'echo "%d $?" >>"%s"\n' "$i" "$WORK/$name.rc"
                        [[ "$line" =~ \&[[:space:]]*(#.*)?$ ]] && printf 'echo "$!" >"%s"; on_background\n' "$WORK/$name.bgpid"
                done <"$(block "$name")"
        } >"$WORK/$name.instrumented"
        : >"$WORK/$name.rc"
        DOC_RC=0
        (cd "$WORK/cwd" && export -f on_background && bash -o pipefail "$WORK/$name.instrumented") \
                >"$WORK/$name.out" 2>"$WORK/$name.err" || DOC_RC=$?
}
line_rc() { sed -n "s/^$2 //p" "$WORK/$1.rc"; } # NAME LINE-NUMBER
line_of() { grep -n -- "$2" "$(block "$1")" | head -1 | cut -d: -f1; } # NAME TEXT
where() { cat "$WORK/blocks/by-name/$1.where"; }
expect_doc_rc() { # WANT NAME
        if [ "$DOC_RC" = "$1" ]; then pass; else
                fail "$(where "$2"): block '$2' exited $DOC_RC, expected $1"$'\n'"$(head -c 3000 "$WORK/$2.out" "$WORK/$2.err")"
        fi
}
expect_out() { # NAME DESCRIPTION GREP-ARGS...: the block's stdout matches
        local name=$1 what=$2
        shift 2
        if grep -q "$@" "$WORK/$name.out"; then pass; else
                fail "$(where "$name"): $what: not in the output:"$'\n'"$(head -c 3000 "$WORK/$name.out" "$WORK/$name.err")"
        fi
}

# --- 3. the cases -------------------------------------------------------------
case_names() {
        local got
        run_doc names
        expect_doc_rc 0 names
        got=$(bash -c ". '$(block names)'; printf '%s|%s|%s|%s' \"\$NS\" \"\$WORKERS\" \"\$LOGINS\" \"\$PODS\"")
        [ "$got" = "slurm|$WSEL|$LSEL|app.kubernetes.io/instance in (slinky-slurm-worker-slinky,slinky-slurm-login-slinky)" ] &&
                pass || fail "$(where names): the names are '$got'"
        # PODS selects exactly the worker and login pods, through the real kubectl
        got=$(bash -c ". '$(block names)'; kubectl get pods -n \"\$NS\" -l \"\$PODS\" -o name" | sort | tr '\n' ' ')
        [ "$got" = "pod/slurm-login-slinky-7d9c5 pod/slurm-worker-slinky-0 pod/slurm-worker-slinky-1 pod/slurm-worker-slinky-2 pod/slurm-worker-slinky-3 " ] &&
                pass || fail "$(where names): \$PODS selects '$got'"
}

case_condition() {
        run_doc condition
        expect_doc_rc 0 condition
        expect_out condition "the header" -x 'POD *ENROOT *WHY'
        # the stale pods, and only them, say False
        [ "$(awk '$2 == "False" { print $1 }' "$WORK/condition.out" | tr '\n' ' ')" = "slurm-worker-slinky-1 slurm-worker-slinky-2 " ] &&
                pass || fail "$(where condition): the stale pods listed: $(cat "$WORK/condition.out")"
        expect_out condition "a stale pod's reason" -x 'slurm-worker-slinky-1 *False *ConfigDrifted'
        expect_out condition "a current pod" -x 'slurm-worker-slinky-0 *True *ConfigCurrent'
        grep -q slurm-login "$WORK/condition.out" && fail "$(where condition): a login pod among the workers" || pass
}

case_find() {
        run_doc find names
        expect_doc_rc 0 find
        expect_out find "the header" -x 'POD *SLURM-NODE *ENROOT-CURRENT *REASON *SINCE'
        expect_out find "a drifted worker, its Slurm node and since when" \
                -x 'slurm-worker-slinky-1 *slinky-1 *False *ConfigDrifted *2026-12-01T10:00:00Z'
        # on hostNetwork, spec.hostname is the pod's name: the label names the node
        expect_out find "the hostNetwork worker's Slurm node" -x 'slurm-worker-slinky-2 *slinky-2 *False .*'
        expect_out find "a current worker" -x 'slurm-worker-slinky-3 *slinky-3 *True *ConfigCurrent .*'
        expect_out find "the login pod (no Slurm node)" -x 'slurm-login-slinky-7d9c5 *<none> *True *ConfigCurrent .*'
        # the jq pipeline: the drifted pods' names, one a line, nothing else
        [ "$(grep -x 'slurm-[a-z0-9-]*' "$WORK/find.out" | tr '\n' ' ')" = "slurm-worker-slinky-1 slurm-worker-slinky-2 " ] &&
                pass || fail "$(where find): the jq pipeline's names: $(cat "$WORK/find.out")"
        expect_out find "one pod's condition message" -x 'enroot.conf drifted: ENROOT_MOUNT_HOME changed'
}

case_wait() {
        local pid i
        reset_pods
        run_doc wait names find &
        pid=$!
        # kubectl lists, then watches: the pod is drifted, so it must wait
        wait_for 20 sh -c "curl -sf '$CTL/requests' | jq -e 'any(.[]; .watch and (.query | test(\"slurm-worker-slinky-1\")))'" ||
                fail "$(where wait): kubectl never watched the pod"
        sleep 0.5
        if kill -0 "$pid" 2>/dev/null; then pass; else
                wait "$pid" || true
                fail "$(where wait): kubectl wait returned while the pod was drifted: $(cat "$WORK/wait.out" "$WORK/wait.err")"
                return
        fi
        # the replacement's agent reports current (as the fake's operator rewrite would)
        ctl POST /pods/slurm-worker-slinky-1/rewrite-conditions \
                '[{"type":"Ready","status":"True"},{"type":"EnrootConfigCurrent","status":"True","reason":"ConfigCurrent","message":"current"}]' >/dev/null
        for i in $(seq 1 100); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
                kill "$pid" 2>/dev/null || true
                fail "$(where wait): kubectl wait did not see the condition become True"
        fi
        wait "$pid" || true
        DOC_RC=$(grep -c 'condition met' "$WORK/wait.out" || true)
        [ "$DOC_RC" = 1 ] && pass || fail "$(where wait): $(cat "$WORK/wait.out" "$WORK/wait.err")"
        expect_out wait "kubectl's answer" -x 'pod/slurm-worker-slinky-1 condition met'
        reset_pods
}

case_lint_cluster() {
        run_doc lint-cluster names
        expect_doc_rc 0 lint-cluster
        [ "$(cat "$WORK/lint-cluster.out")" = "slinky-slurm-enroot-config/enroot.conf:1: warning[boolean-value]: ENROOT_MOUNT_HOME is set to a value that reads as off but means yes to enroot: only n, no, N, NO, No, f, false, F, False and FALSE turn it off" ] &&
                pass || fail "$(where lint-cluster): lint says: $(cat "$WORK/lint-cluster.out" "$WORK/lint-cluster.err")"
}

case_drain() {
        reset_pods
        # what the block computes, printed after it
        printf '\necho "DRIFTED=$DRIFTED"\n' >>"$(block drain)"
        run_doc drain names
        expect_doc_rc 0 drain
        expect_out drain "the drifted workers' Slurm nodes" -x 'DRIFTED=slinky-1,slinky-2'
        for n in slinky-1 slinky-2; do
                case "$(node_field $n State)" in
                *DRAIN*) pass ;;
                *) fail "$(where drain): $n not drained: $(node_field $n State)" ;;
                esac
                [ "$(node_reason $n)" = "Enroot configuration rollout" ] && pass || fail "$(where drain): $n's reason: $(node_reason $n)"
        done
        [ "$(node_field slinky-0 State) $(node_field slinky-3 State)" = "IDLE IDLE" ] && pass ||
                fail "$(where drain): current pods' nodes touched: $(sinfo -N -o '%N %T %E')"
        reset_nodes
}

case_replace() {
        if why=$(replace_node_unavailable); then skip_part no-time-namespace "replace: $why"; return; fi
        reset_pods
        start_controller
        run_doc replace names
        stop_controller
        expect_doc_rc 0 replace
        expect_out replace "kubectl delete" -x 'pod "slurm-worker-slinky-1" deleted'
        [ "$(grep -cx 'pod/slurm-worker-slinky-1 condition met' "$WORK/replace.out")" = 2 ] && pass ||
                fail "$(where replace): the two waits: $(cat "$WORK/replace.out" "$WORK/replace.err")"
        expect_out replace "the node left DOWN by the preStop hook" 'Reason=slurm-operator: Pod is terminating'
        [ "$(ctl GET /pods/slurm-worker-slinky-1 | jq -r .metadata.uid)" != 00000000-0000-0000-0000-000000000001 ] &&
                pass || fail "$(where replace): the pod was not replaced"
        reset_nodes
        reset_pods
}

# The README's `kubectl proxy --port 8001 &`: the agent speaks plain http to
# it, with no token; the proxy adds the kubeconfig's.
on_background() {
        local i
        for i in $(seq 1 100); do
                curl -s -o /dev/null http://127.0.0.1:8001/api && return 0
                sleep 0.1
        done
        echo "doc-test: nothing answers on 127.0.0.1:8001" >&2
}
port_in_use() { curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$1/"; }
expect_line_rc() { # NAME TEXT WANT
        local n rc
        n=$(line_of "$1" "$2")
        rc=$(line_rc "$1" "$n")
        [ "$rc" = "$3" ] && pass || fail "$(where "$1") (line $n of the block, '$2'): exit ${rc:-none}, expected $3"$'\n'"$(head -c 4000 "$WORK/$1.out" "$WORK/$1.err")"
}
unauthorized() { ctl GET /requests | jq '[.[] | select(.status == 401)] | length'; }

case_rollout_proxy() {
        if why=$(replace_node_unavailable); then skip_part no-time-namespace "rollout-proxy: $why"; return; fi
        if port_in_use 8001; then
                fail "$(where rollout-proxy): port 8001, which the README's kubectl proxy takes, is in use on this machine"
                return
        fi
        # the docs install the policies the rollout checks, before the agents
        grep -q '^   kubectl apply -f container/kubernetes/validatingadmissionpolicy.yaml' "$TOP_SRCDIR/docs/OPERATIONS.md" &&
                pass || fail "docs/OPERATIONS.md no longer applies validatingadmissionpolicy.yaml, which rollout needs"
        reset_pods
        start_controller
        run_doc_lines rollout-proxy
        stop_controller
        proxy_pid=$(cat "$WORK/rollout-proxy.bgpid" 2>/dev/null || true)
        expect_line_rc rollout-proxy "rollout plan" 1
        expect_line_rc rollout-proxy "rollout apply" 0
        expect_out rollout-proxy "plan names the stale worker" 'worker slurm-worker-slinky-2 *slinky-2 *stale *replace'
        expect_out rollout-proxy "plan changes nothing" 'planned: run `rollout apply` to do it'
        expect_out rollout-proxy "apply's result" 'done: every pod is current and every node this rollout drained is back in service'
        [ "$(ctl GET /requests | jq '[.[] | select(.path | startswith("/apis/admissionregistration.k8s.io/v1/")) | select(.status == 200)] | length >= 4')" = true ] &&
                pass || fail "$(where rollout-proxy): the rollout did not read the admission policies through the proxy"
        [ "$(deletes)" = "slurm-worker-slinky-1 slurm-worker-slinky-2 " ] && pass ||
                fail "$(where rollout-proxy): pods deleted: '$(deletes)'"
        # every request reached the fake with the proxy's token
        [ "$(unauthorized)" = 0 ] && pass || fail "$(where rollout-proxy): 401 answers through the proxy"
        wait_for 10 all_idle && pass || fail "$(where rollout-proxy): not back in service: $(sinfo -N -o '%N %T %E')"
        reset_nodes
}

case_rollout_ops() {
        if why=$(replace_node_unavailable); then skip_part no-time-namespace "rollout-ops: $why"; return; fi
        # through the proxy the README started (the case before)
        if [ -z "$proxy_pid" ] || ! kill -0 "$proxy_pid" 2>/dev/null; then
                fail "$(where rollout-ops): no kubectl proxy from the README's block is running (run rollout-proxy first)"
                return
        fi
        reset_pods
        start_controller
        run_doc_lines rollout-ops
        stop_controller
        expect_line_rc rollout-ops "rollout plan" 1
        expect_line_rc rollout-ops "rollout apply" 0
        expect_line_rc rollout-ops "rollout status" 0
        expect_line_rc rollout-ops "rollout abort" 0
        expect_out rollout-ops "plan names the stale worker" 'worker slurm-worker-slinky-1 *slinky-1 *stale *replace'
        expect_out rollout-ops "apply's result" 'done: every pod is current'
        expect_out rollout-ops "status after it" 'nothing to do: every pod is current'
        expect_out rollout-ops "abort with nothing held" 'nothing to abort'
        [ "$(deletes)" = "slurm-worker-slinky-1 slurm-worker-slinky-2 " ] && pass ||
                fail "$(where rollout-ops): pods deleted: '$(deletes)'"
        [ "$(unauthorized)" = 0 ] && pass || fail "$(where rollout-ops): 401 answers through the proxy"
        reset_nodes
        kill "$proxy_pid" 2>/dev/null || true
        proxy_pid=
}

# The daemon's two command lines, each in a pod-like sandbox: its own mount
# namespace (the ConfigMap's projection at /run/aicr-enroot/configmap,
# written by kubelet's atomic writer; a private /etc with the running
# enroot files), PID namespace (a process named slurmd for
# --target-process) and, where `ip` can bring its loopback up, network
# namespace (the default :9100 is the pod's own). Each is probed with the
# readinessProbe command of container/kubernetes/agent/*/{nodeset,loginset}.yaml,
# its /usr/bin/aicr-enroot-agent being the one on PATH.
case_daemon() {
        local probe line n=0 netns=--net net filter
        probe=$(sed -n 's/^ *command: \[\/usr\/bin\/aicr-enroot-agent, \(--check.*\)\]$/\1/p' \
                "$TOP_SRCDIR"/container/kubernetes/agent/*/nodeset.yaml \
                "$TOP_SRCDIR"/container/kubernetes/agent/*/loginset.yaml | sort -u)
        if [ "$(wc -l <<<"$probe")" != 1 ] || [ -z "$probe" ]; then
                fail "container/kubernetes/agent/*/{nodeset,loginset}.yaml: expected one readinessProbe command, written [/usr/bin/aicr-enroot-agent, --check, ...], in every file; found: '$probe'"
                return
        fi
        if ! unshare --mount --pid --fork --mount-proc true 2>"$WORK/unshare.err"; then
                skip_part daemon-namespaces "case daemon: cannot make a mount and PID namespace here ($(cat "$WORK/unshare.err"))"
                return
        fi
        probe="aicr-enroot-agent ${probe//, / }"
        if ! command -v ip >/dev/null || ! unshare --net ip link set lo up 2>/dev/null; then
                netns=
                port_in_use 9100 && { fail "$(where daemon): no network namespace here and :9100 is in use"; return; }
        fi
        mkdir -p "$WORK/src"
        printf 'ENROOT_MOUNT_HOME=no\nENROOT_REMAP_ROOT=yes\n' >"$WORK/src/enroot.conf"
        printf 'NCCL_DEBUG=INFO\n' >"$WORK/src/99-aicr-defaults.env"
        cp -a /etc "$WORK/pod-etc"
        mkdir -p "$WORK/pod-etc/enroot/environ.d"
        printf 'ENROOT_MOUNT_HOME=yes\nENROOT_REMAP_ROOT=yes\n' >"$WORK/pod-etc/enroot/enroot.conf"
        printf 'NCCL_DEBUG=WARN\n' >"$WORK/pod-etc/enroot/environ.d/99-aicr-defaults.env"
        cp "$(command -v sleep)" "$WORK/bin/slurmd"
        while IFS= read -r line; do
                [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
                n=$((n + 1))
                cat >"$WORK/pod-$n.sh" <<EOF
set -u
${netns:+ip link set lo up}
mount --bind "$WORK/pod-etc" /etc
mount -t tmpfs tmpfs /run
mkdir -p /run/aicr-enroot/configmap
bash "$TOP_SRCDIR/tests/tools/atomic-writer.sh" /run/aicr-enroot/configmap \
        enroot.conf="$WORK/src/enroot.conf" 99-aicr-defaults.env="$WORK/src/99-aicr-defaults.env" >/dev/null
slurmd 600 &
bash -c $(printf '%q' "$line") &
agent=\$!
ok=0
for i in \$(seq 1 100); do
        if $probe >"$WORK/probe-$n.out" 2>&1; then ok=1; break; fi
        sleep 0.1
done
echo "probe: \$ok"
echo "agent comm: \$(cat /proc/\$agent/comm)"
curl -s 127.0.0.1:9100/status >"$WORK/status-$n.json"
kill -TERM \$agent
wait \$agent
echo "agent exit: \$?"
EOF
                unshare --mount --pid --fork --mount-proc $netns --kill-child \
                        bash "$WORK/pod-$n.sh" >"$WORK/daemon-$n.out" 2>&1 || true
                net="the host network"
                [ -z "$netns" ] || net="its own network"
                echo "doc-test: '$line' in a sandbox with $net: $(grep '^agent comm' "$WORK/daemon-$n.out"); probe: $(cat "$WORK/probe-$n.out")" >&2
                if grep -qx 'probe: 1' "$WORK/daemon-$n.out"; then pass; else
                        fail "$(where daemon): '$line': the probe '$probe' never passed: $(cat "$WORK/probe-$n.out" "$WORK/daemon-$n.out")"
                fi
                grep -qx 'agent exit: 0' "$WORK/daemon-$n.out" && pass ||
                        fail "$(where daemon): '$line' did not exit 0 on SIGTERM: $(cat "$WORK/daemon-$n.out")"
                # both sides seen: the running files drifted from the ConfigMap
                [ "$(jq -r '.pod' "$WORK/status-$n.json" 2>/dev/null)" = drifted ] && pass ||
                        fail "$(where daemon): '$line': /status: $(head -c 2000 "$WORK/status-$n.json")"
        done <"$(block daemon)"
        [ "$n" = 2 ] && pass || fail "$(where daemon): expected the two command lines, ran $n"
        # the filter docs/OPERATIONS.md applies to /status (its port-forward
        # block needs a cluster): every field it names is in the answer
        filter=$(sed -n "s|.*curl -s localhost:9100/status \| jq '\(.*\)'\$|\1|p" "$TOP_SRCDIR/docs/OPERATIONS.md")
        if [ -z "$filter" ]; then
                fail "docs/OPERATIONS.md: no \`curl -s localhost:9100/status | jq '...'\` line found"
        elif jq -e "[$filter] | length == 2 and all(.[]; .key != null and .state != null and .changes != null)" \
                "$WORK/status-1.json" >/dev/null; then
                pass
        else
                fail "docs/OPERATIONS.md: jq '$filter' on the agent's /status: $(jq -c "$filter" "$WORK/status-1.json" 2>&1 | head -c 600)"
        fi
}

# A case's own checks say what went wrong; a command that fails on the way
# does not end the test (set -e is off inside a condition).
for c in "${selected[@]}"; do
        section "$c ($(where "$c"))"
        "case_${c//-/_}" || fail "$(where "$c"): case $c ended with status $?"
done
# A case this machine cannot run is not a pass: exit 77 (its SKIP line is above).
finish || exit 1
[ "$parts_skipped" = 0 ] || exit 77
