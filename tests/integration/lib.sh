# SPDX-License-Identifier: Apache-2.0
# Shared by the integration tests: sourced, never run.
# make check exports AGENT, MODEL_DUMP, TOP_SRCDIR, TEST_DATA_DIR, PROMTOOL.
set -euo pipefail
export LC_ALL=C

: "${AGENT:?run through make check}"
: "${TEST_DATA_DIR:?run through make check}"

TEST_NAME=$(basename "$0" .sh)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/${TEST_NAME}.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

failures=0
checks=0
parts_skipped=0
# How long a wait for something the agent or a fake must do may last. It
# only ends a hung test, as a failure naming what was awaited: no check
# depends on it, so valgrind, a sanitizer or a loaded machine only make a
# test take longer. What must happen fast is measured by `make bench`.
HANG=30

pass() { checks=$((checks + 1)); }
fail() {
        checks=$((checks + 1))
        failures=$((failures + 1))
        printf 'FAIL: %s\n' "$*" >&2
}
# A skip is never silent: one line "SKIP: TEST/ID: REASON", the form
# tests/tools/skip-report.sh reads from the logs. ID names the check that did
# not run, the same wherever it runs (scripts/test.sh fails a CI cell on an ID
# not in tests/skips.allowed); REASON says why, and what would let it run.
skip_line() {
        if [ $# -ne 2 ] || [[ ! $1 =~ ^[a-z0-9][a-z0-9.-]*$ ]] || [ -z "$2" ]; then
                printf 'FAIL: a skip needs an ID ([a-z0-9.-]) and a reason, got: %s\n' "$*" >&2
                exit 1
        fi
        printf 'SKIP: %s/%s: %s\n' "$TEST_NAME" "$1" "$2" >&2
}
# skip ID REASON: the rest of the test cannot run here; exit 77 (automake's SKIP)
skip() {
        skip_line "$@"
        exit 77
}
# skip_part ID REASON: one part of the test cannot run here; the test goes on
skip_part() {
        skip_line "$@"
        parts_skipped=$((parts_skipped + 1))
}
finish() {
        printf '%s: %d checks, %d failed, %d parts skipped\n' "$TEST_NAME" "$checks" "$failures" "$parts_skipped"
        [ "$failures" -eq 0 ]
}

# expect_status WANT CMD...: runs CMD, stdout to $WORK/out, stderr to $WORK/err.
expect_status() {
        local want=$1 got=0
        shift
        "$@" >"$WORK/out" 2>"$WORK/err" || got=$?
        if [ "$got" -eq "$want" ]; then
                pass
        else
                fail "$* exited $got, expected $want; stderr: $(head -c 600 "$WORK/err")"
        fi
}

# expect_file_eq EXPECTED ACTUAL LABEL
expect_file_eq() {
        if cmp -s "$1" "$2"; then
                pass
        else
                fail "$3 differs from $(basename "$1"):"$'\n'"$(diff -u "$1" "$2" | head -40)"
        fi
}

# expect_same_settings FILE WANT GOT: the differential tests' comparison of a
# reference's KEY=VALUE lines with model-dump's: the same keys, and the same
# value wherever the model knows it (it prints KEY=<dynamic> otherwise).
expect_same_settings() {
        local file=$1 want=$2 got=$3 line ok=1
        if [ "$(sed 's/=.*//' <<<"$want")" != "$(sed 's/=.*//' <<<"$got")" ]; then
                ok=0
        else
                while IFS= read -r line; do
                        [ -n "$line" ] || continue
                        case $line in *=\<dynamic\>) continue ;; esac
                        grep -qxF -- "$line" <<<"$want" || ok=0
                done <<<"$got"
        fi
        if [ "$ok" = 1 ]; then
                pass
        else
                fail "$(basename "$file"):"$'\n'"--- file:"$'\n'"$(cat -A "$file")"$'\n'"--- reference:"$'\n'"$want"$'\n'"--- model:"$'\n'"$got"
        fi
}

# --- the daemon ----------------------------------------------------------------
# A test that starts the agent sets: trap 'stop_agent; rm -rf "$WORK"' EXIT

# publish FILE-CONTENT ENV-CONTENT: one kubelet update of the ConfigMap in
# $cm (contents as printf %b takes them), through $WORK/src.
publish() {
        mkdir -p "$WORK/src"
        printf '%b' "$1" >"$WORK/src/enroot.conf"
        printf '%b' "$2" >"$WORK/src/99-aicr-defaults.env"
        bash "$TOP_SRCDIR/tests/tools/atomic-writer.sh" "$cm" enroot.conf="$WORK/src/enroot.conf" \
                99-aicr-defaults.env="$WORK/src/99-aicr-defaults.env" >/dev/null
}

AGENT_PID=
# A command the daemon runs under, e.g. AGENT_WRAPPER=(setpriv --reuid=65534 ...).
AGENT_WRAPPER=()
# start_agent LOG ARGS...: starts the daemon on a kernel-chosen port, sets PORT
start_agent() {
        local log=$1
        shift
        AGENT_LOG=$log
        # Emptied here, not only by the redirection below: that one happens in
        # the background job, maybe after the first look, which would read a
        # previous agent's port from a reused log.
        : >"$log"
        "${AGENT_WRAPPER[@]}" "$AGENT" --listen 127.0.0.1:0 --log-level debug "$@" >"$log" 2>&1 &
        AGENT_PID=$!
        local deadline=$((SECONDS + HANG))
        PORT=
        while [ "$SECONDS" -lt "$deadline" ]; do
                PORT=$(sed -n 's/.*Serving .* on 127\.0\.0\.1:\([0-9]*\)\..*/\1/p' "$log")
                [ -n "$PORT" ] && break
                kill -0 "$AGENT_PID" 2>/dev/null || break
                sleep 0.05
        done
        [ -n "$PORT" ] || {
                cat "$log" >&2
                if kill -0 "$AGENT_PID" 2>/dev/null; then
                        fail "waited ${HANG} s for the agent to serve: $*"
                else
                        fail "the agent did not start: $*"
                fi
                return 1
        }
        wait_for "$HANG" "$AGENT" --check --listen "127.0.0.1:$PORT" ||
                { cat "$log" >&2; fail "waited ${HANG} s for the agent to be ready (--check): $*"; return 1; }
}
# stop_agent: SIGTERM, and the agent must exit 0: a sanitizer report (leaks at
# exit included) or a crash makes it exit otherwise, and fails the test.
stop_agent() {
        local rc=0
        [ -n "$AGENT_PID" ] || return 0
        kill -TERM "$AGENT_PID" 2>/dev/null || true
        wait "$AGENT_PID" 2>/dev/null || rc=$?
        AGENT_PID=
        if [ "$rc" -ne 0 ]; then
                tail -20 "$AGENT_LOG" >&2
                fail "the agent exited $rc after SIGTERM (log: $AGENT_LOG)"
        fi
}
# wait_for SECONDS CMD...: until CMD succeeds
wait_for() {
        local limit=$1 i
        shift
        for i in $(seq 1 $((limit * 50))); do
                "$@" >/dev/null 2>&1 && return 0
                sleep 0.02
        done
        return 1
}
metric() { curl -sf "http://127.0.0.1:$PORT/metrics" | grep -v '^#' | grep -F -- "$1" | head -1 | awk '{print $NF}'; }
metric_is() { [ "$(metric "$1")" = "$2" ]; }
expect_metric() {
        if wait_for "$HANG" metric_is "$1" "$2"; then pass; else
                fail "waited ${HANG} s for $1 to be $2: it is '$(metric "$1")'"
        fi
}

# --- the fake API server (tests/tools/fake-apiserver, in $FAKE) ---------------
# kube_test_tools: what a test against the fake API server needs: skips
# without openssl, curl or jq; sets FAKE (the built fake, or
# $FAKE_APISERVER) and fails when it is not built.
kube_test_tools() {
        local c
        for c in openssl curl jq; do
                command -v "$c" >/dev/null || skip "no-$c" "$c is not installed (scripts/setup-deps.sh installs it)"
        done
        FAKE=${FAKE_APISERVER:-$(dirname "$AGENT")/tests/tools/fake-apiserver}
        [ -x "$FAKE" ] || { echo "FAIL: $FAKE is not built" >&2; exit 1; }
        : "${TOP_SRCDIR:?run through make check}"
}
# kube_test_dirs: sets and makes the directories of a test of the pod
# condition: $cm (the ConfigMap volume), $root (the root the running files are
# read under) and $sa (the serviceaccount directory, for kube_pki); on exit the
# agent and the fake are stopped and $WORK is removed.
kube_test_dirs() {
        cm=$WORK/cm root=$WORK/root sa=$WORK/sa
        mkdir -p "$cm" "$root/etc/enroot/environ.d" "$sa"
        trap 'stop_agent; stop_fake; rm -rf "$WORK"' EXIT
}
# one_pod FILE NAMESPACE UID: the fake's --pods FILE with one pod, worker-0,
# Ready and nothing else.
one_pod() {
        cat >"$1" <<EOF
{"items": [{"metadata": {"name": "worker-0", "namespace": "$2", "uid": "$3", "resourceVersion": "100"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}]}
EOF
}
fake_pid=
# kube_pki SA_DIR NAMESPACE TOKEN: a throwaway CA in $WORK/pki, the projected
# serviceaccount directory the agent reads (ca.crt, namespace, token) and the
# server's side of the token, $WORK/server-token.
kube_pki() {
        bash "$TOP_SRCDIR/tests/tools/make-test-ca.sh" "$WORK/pki" >/dev/null ||
                { echo "FAIL: tests/tools/make-test-ca.sh failed" >&2; exit 1; }
        mkdir -p "$1"
        cp "$WORK/pki/ca.crt" "$1/ca.crt"
        echo "$2" >"$1/namespace"
        printf '%s' "$3" >"$1/token"
        printf '%s' "$3" >"$WORK/server-token"
}
# The fake's certificate and key, as a path without .crt/.key: kube_pki's
# unless a test sets another (make-test-ca.sh makes them).
FAKE_TLS=
# The RBAC a test has the fake enforce (--rbac FILE, --user NAME): what the
# deployment grants the agent, and the access docs/OPERATIONS.md asks for the
# rollout. AGENT_RBAC and ROLLOUT_RBAC name other files (a broken copy).
AGENT_RBAC=${AGENT_RBAC:-${TOP_SRCDIR:-}/container/kubernetes/rbac.yaml}
ROLLOUT_RBAC=${ROLLOUT_RBAC:-${TOP_SRCDIR:-}/tests/integration/rollout-rbac.yaml}
ROLLOUT_USER=system:serviceaccount:slurm:aicr-enroot-rollout
# start_fake PODS_FILE [ARG...]: the fake over TLS with kube_pki's certificate
# (or $FAKE_TLS's) and token; sets fake_pid, API (https://127.0.0.1:PORT) and
# CTL (its control port).
start_fake() {
        local pods=$1 tls=${FAKE_TLS:-$WORK/pki/server}
        shift
        : >"$WORK/fake.out" # before the job starts: see start_agent
        : >"$WORK/fake.err"
        "$FAKE" --pods "$pods" --token-file "$WORK/server-token" \
                --tls-cert "$tls.crt" --tls-key "$tls.key" \
                --port 0 --control-port 0 "$@" >"$WORK/fake.out" 2>"$WORK/fake.err" &
        fake_pid=$!
        wait_for "$HANG" grep -q '^control on' "$WORK/fake.out" ||
                { cat "$WORK/fake.err" >&2; echo "FAIL: waited ${HANG} s for the fake API server to start" >&2; exit 1; }
        API=$(sed -n 's/^listening on //p' "$WORK/fake.out")
        CTL=$(sed -n 's/^control on //p' "$WORK/fake.out")
}
stop_fake() {
        [ -n "$fake_pid" ] || return 0
        kill "$fake_pid" 2>/dev/null || true
        wait "$fake_pid" 2>/dev/null || true
        fake_pid=
}
# ctl METHOD PATH [BODY]: the fake's control port
ctl() { curl -sf -X "$1" "$CTL$2" ${3:+-H 'Content-Type: application/json' --data-binary "$3"}; }
