#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Any subPath file, not only enroot's: the real daemon with raw files (judged
# by their bytes) beside enroot's, through every state a raw file can be in,
# its format in /metrics (checked by promtool), /status, --check and the
# command line's lint and diff; a Secret-shaped projected directory with the
# condition reduced to counts (--condition-detail counts) against the fake
# API server; the limits on files and sizes.
. "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip no-curl "curl is not installed (scripts/setup-deps.sh installs it)"
command -v jq >/dev/null || skip no-jq "jq is not installed (scripts/setup-deps.sh installs it)"
command -v openssl >/dev/null || skip no-openssl "openssl is not installed (scripts/setup-deps.sh installs it)"
FAKE=${FAKE_APISERVER:-$(dirname "$AGENT")/tests/tools/fake-apiserver}
[ -x "$FAKE" ] || { echo "FAIL: $FAKE is not built" >&2; exit 1; }
: "${TOP_SRCDIR:?run through make check}"

cm=$WORK/cm
root=$WORK/root
mkdir -p "$cm" "$root/etc/enroot" "$root/etc/nginx" "$root/etc/app/a:b" "$WORK/src"
trap 'stop_agent; stop_fake; rm -rf "$WORK"' EXIT

status() { curl -sf "http://127.0.0.1:$PORT/status"; }
file_status() { status | jq -r --arg k "$1" ".files[] | select(.key == \$k) | .$2"; }
file_status_is() { [ "$(file_status "$1" "$2")" = "$3" ]; }
# file_detail_has KEY TEXT: the file's detail in /status holds TEXT
file_detail_has() { file_status "$1" detail | grep -q -- "$2"; }
expect_file_status() { # KEY FIELD WANT
        if wait_for "$HANG" file_status_is "$1" "$2" "$3"; then pass; else
                fail "waited ${HANG} s for /status $1 $2 to be $3: it is '$(file_status "$1" "$2")'"
        fi
}
promtool_clean() { # LABEL
        curl -sf "http://127.0.0.1:$PORT/metrics" >"$WORK/metrics"
        if "${PROMTOOL:-promtool}" check metrics <"$WORK/metrics" >"$WORK/promtool" 2>&1 &&
                [ ! -s "$WORK/promtool" ]; then pass; else
                fail "$1: promtool check metrics: $(cat "$WORK/promtool")"
        fi
}
command -v "${PROMTOOL:-promtool}" >/dev/null ||
        fail "promtool is not installed (scripts/setup-deps.sh installs prometheus)"

# publish_files KEY=TEXT...: the whole payload, through kubelet's atomic writer
publish_files() {
        local args=() kv
        for kv in "$@"; do
                printf '%b' "${kv#*=}" >"$WORK/src/${kv%%=*}"
                args+=("${kv%%=*}=$WORK/src/${kv%%=*}")
        done
        bash "$TOP_SRCDIR/tests/tools/atomic-writer.sh" "$cm" "${args[@]}" >/dev/null
}
NGINX='worker_processes 1;\nevents { worker_connections 64; }\n'
PROPS='a=1\n'
CONF='ENROOT_MOUNT_HOME=yes\n'
publish_files nginx.conf="$NGINX" app.properties="$PROPS" enroot.conf="$CONF"
printf '%b' "$NGINX" >"$root/etc/nginx/nginx.conf"
printf '%b' "$PROPS" >"$root/etc/app/a:b/app.properties"
printf '%b' "$CONF" >"$root/etc/enroot/enroot.conf"

# --- the options: formats, ':' in a path, the limits --------------------------
expect_status 0 "$AGENT" --check-config --desired-dir "$cm" --file 'x=/a:b/c:raw' --file 'y.env=/y:enroot-conf'
expect_status 2 "$AGENT" --check-config --desired-dir "$cm" --file 'x=/etc/x:rwa'
grep -q -- '--file: "rwa" is not a format (enroot-conf, enroot-env or raw)' "$WORK/err" && pass ||
        fail "a mistyped format is not refused: $(cat "$WORK/err")"
args=()
for i in $(seq 1 33); do args+=(--file "k$i=/f$i:raw"); done
expect_status 2 "$AGENT" --check-config --desired-dir "$cm" "${args[@]}"
grep -q -- '--file: more than 32 files' "$WORK/err" && pass || fail "33 files: $(cat "$WORK/err")"
"$AGENT" --help >"$WORK/help"
grep -q -- '--file KEY=PATH\[:FORMAT\]' "$WORK/help" && grep -q -- '--condition-detail names|counts' "$WORK/help" &&
        pass || fail "--help lacks the new options"

# --- a mix of raw and enroot files in one agent: all current -----------------
# nginx.conf is raw by default (any key but enroot.conf and *.env), the
# properties file is raw by choice and lives under a path with a ':'.
start_agent "$WORK/agent.log" --desired-dir "$cm" --running-root "$root" \
        --file nginx.conf=/etc/nginx/nginx.conf --file 'app.properties=/etc/app/a:b/app.properties:raw' \
        --file enroot.conf=/etc/enroot/enroot.conf || { finish; exit 1; }
expect_metric 'aicr_enroot_config_current ' 1
expect_metric 'aicr_enroot_config_file_format{file="nginx.conf",format="raw"}' 1
expect_metric 'aicr_enroot_config_file_format{file="app.properties",format="raw"}' 1
expect_metric 'aicr_enroot_config_file_format{file="enroot.conf",format="enroot-conf"}' 1
expect_metric 'aicr_enroot_config_state{file="nginx.conf",state="current"}' 1
expect_file_status nginx.conf format raw
expect_file_status enroot.conf format enroot-conf
expect_file_status nginx.conf lint.desired null
[ "$(file_status enroot.conf lint.desired.errors)" = 0 ] && pass || fail "enroot.conf lost its lint: $(status)"
# raw files are not linted: no lint series for them, the enroot file keeps its
[ "$(metric 'aicr_enroot_config_lint_findings{file="nginx.conf"')" = "" ] && pass ||
        fail "a raw file has lint series"
[ -n "$(metric 'aicr_enroot_config_lint_findings{file="enroot.conf",side="desired",severity="error"}')" ] &&
        pass || fail "enroot.conf lost its lint series"
[ "$(file_status nginx.conf 'content_id.desired')" = "$(file_status nginx.conf 'content_id.running')" ] &&
        [ "$(file_status nginx.conf 'content_id.desired' | wc -c)" = 17 ] && pass ||
        fail "raw content ids: $(status)"
promtool_clean "all current"

# --- drifted: one byte; an enroot file's cosmetic change stays cosmetic ------
NGINX2='worker_processes 1; \nevents { worker_connections 64; }\n'
publish_files nginx.conf="$NGINX2" app.properties="$PROPS" enroot.conf="# reviewed\\n$CONF"
expect_metric 'aicr_enroot_config_state{file="nginx.conf",state="drifted"}' 1
expect_metric 'aicr_enroot_config_drift{file="nginx.conf"}' 1
expect_metric 'aicr_enroot_config_state{file="enroot.conf",state="cosmetic"}' 1
expect_metric 'aicr_enroot_config_drifted_keys{file="nginx.conf"}' 0
expect_metric 'aicr_enroot_config_current ' 0
[ -z "$(metric 'aicr_enroot_config_key_drift{file="nginx.conf"')" ] && pass || fail "a raw file has key series"
[ "$(file_status nginx.conf 'changes | length')" = 0 ] && [ "$(file_status nginx.conf detail)" = null ] &&
        pass || fail "a raw drift has key detail: $(status)"
[ "$(file_status nginx.conf 'content_id.desired')" != "$(file_status nginx.conf 'content_id.running')" ] &&
        pass || fail "drifted raw content ids are equal"
expect_status 0 "$AGENT" --check --listen "127.0.0.1:$PORT"
grep -q 'nginx.conf drifted (raw: the bytes differ)' "$WORK/out" && pass || fail "--check: $(cat "$WORK/out")"
wait_for "$HANG" grep -q 'nginx.conf: drifted, since' "$WORK/agent.log" && pass ||
        fail "no drift log line for the raw file: $(tail -5 "$WORK/agent.log")"
promtool_clean "drifted"

# --- missing: the running file, then the ConfigMap key -----------------------
publish_files nginx.conf="$NGINX" app.properties="$PROPS" enroot.conf="$CONF"
expect_metric 'aicr_enroot_config_current ' 1
rm "$root/etc/app/a:b/app.properties"
kill -HUP "$AGENT_PID"
expect_metric 'aicr_enroot_config_state{file="app.properties",state="missing"}' 1
file_status app.properties detail | grep -q '/etc/app/a:b/app.properties does not exist' && pass ||
        fail "missing running detail: $(file_status app.properties detail)"
printf '%b' "$PROPS" >"$root/etc/app/a:b/app.properties"
publish_files nginx.conf="$NGINX" enroot.conf="$CONF"
expect_metric 'aicr_enroot_config_state{file="app.properties",state="missing"}' 1
file_status app.properties detail | grep -q 'ConfigMap key "app.properties" in .* does not exist' && pass ||
        fail "missing key detail: $(file_status app.properties detail)"

# --- unreadable: not a regular file, and past the size limit ------------------
publish_files nginx.conf="$NGINX" app.properties="$PROPS" enroot.conf="$CONF"
expect_metric 'aicr_enroot_config_current ' 1
rm "$root/etc/nginx/nginx.conf"
mkfifo "$root/etc/nginx/nginx.conf"
kill -HUP "$AGENT_PID"
expect_metric 'aicr_enroot_config_state{file="nginx.conf",state="unreadable"}' 1
file_status nginx.conf detail | grep -q 'not a regular file' && pass ||
        fail "FIFO detail: $(file_status nginx.conf detail)"
rm "$root/etc/nginx/nginx.conf"
head -c $((1024 * 1024 + 1)) /dev/zero >"$root/etc/nginx/nginx.conf"
kill -HUP "$AGENT_PID"
wait_for "$HANG" file_detail_has nginx.conf "larger than 1 MiB" && pass ||
        fail "over 1 MiB: $(file_status nginx.conf detail)"
expect_metric 'aicr_enroot_config_state{file="nginx.conf",state="unreadable"}' 1
# exactly the limit is read, and compared
head -c $((1024 * 1024)) /dev/zero >"$root/etc/nginx/nginx.conf"
head -c $((1024 * 1024)) /dev/zero >"$WORK/src/big"
bash "$TOP_SRCDIR/tests/tools/atomic-writer.sh" "$cm" nginx.conf="$WORK/src/big" \
        app.properties="$WORK/src/app.properties" enroot.conf="$WORK/src/enroot.conf" >/dev/null
expect_metric 'aicr_enroot_config_state{file="nginx.conf",state="current"}' 1
# a ConfigMap key past the limit is unreadable too
head -c $((1024 * 1024 + 1)) /dev/zero >"$WORK/src/big"
bash "$TOP_SRCDIR/tests/tools/atomic-writer.sh" "$cm" nginx.conf="$WORK/src/big" \
        app.properties="$WORK/src/app.properties" enroot.conf="$WORK/src/enroot.conf" >/dev/null
expect_metric 'aicr_enroot_config_state{file="nginx.conf",state="unreadable"}' 1
promtool_clean "unreadable"
stop_agent

# --- superseded with equal content: a bind mount stands for the subPath -------
if unshare -m --propagation private true 2>/dev/null; then
        publish_files nginx.conf="$NGINX" enroot.conf="$CONF"
        printf '%b' "$NGINX" >"$root/etc/nginx/nginx.conf"
        cat >"$WORK/subpath.sh" <<'SCRIPT'
set -eu
# kubelet bind-mounts the file inside the current version directory
version=$(readlink "$CM/..data")
mount --bind "$CM/$version/nginx.conf" "$ROOT/etc/nginx/nginx.conf"
"$AGENT" --listen 127.0.0.1:0 --log-level debug --desired-dir "$CM" --running-root "$ROOT" \
        --file nginx.conf=/etc/nginx/nginx.conf >"$LOG" 2>&1 &
echo $! >"$PIDFILE"
wait
SCRIPT
        CM=$cm ROOT=$root AGENT=$AGENT LOG=$WORK/subpath.log PIDFILE=$WORK/subpath.pid \
                unshare -m --propagation private bash "$WORK/subpath.sh" &
        ns_pid=$!
        wait_for "$HANG" test -s "$WORK/subpath.pid" || fail "waited ${HANG} s for the subPath agent's pid"
        AGENT_PID=$(cat "$WORK/subpath.pid")
        AGENT_LOG=$WORK/subpath.log
        wait_for "$HANG" grep -q 'Serving' "$WORK/subpath.log" || fail "waited ${HANG} s for the subPath agent to serve"
        PORT=$(sed -n 's/.*Serving .* on 127\.0\.0\.1:\([0-9]*\)\..*/\1/p' "$WORK/subpath.log")
        expect_metric 'aicr_enroot_config_state{file="nginx.conf",state="current"}' 1
        expect_metric 'aicr_enroot_config_superseded_mount{file="nginx.conf"}' 0
        # A -> B: the mount keeps the old version: drifted and superseded
        publish_files nginx.conf="$NGINX2" enroot.conf="$CONF"
        expect_metric 'aicr_enroot_config_superseded_mount{file="nginx.conf"}' 1
        expect_metric 'aicr_enroot_config_state{file="nginx.conf",state="drifted"}' 1
        # B -> A: equal bytes again, still from a superseded version: current,
        # and the superseded mount is still reported
        publish_files nginx.conf="$NGINX" enroot.conf="$CONF"
        expect_metric 'aicr_enroot_config_state{file="nginx.conf",state="current"}' 1
        expect_metric 'aicr_enroot_config_superseded_mount{file="nginx.conf"}' 1
        [ "$(file_status nginx.conf superseded)" = true ] && [ "$(file_status nginx.conf mount_version)" != null ] &&
                pass || fail "A-B-A raw: $(status)"
        promtool_clean "superseded"
        kill -TERM "$AGENT_PID"
        AGENT_PID=
        rc=0
        wait "$ns_pid" || rc=$?
        [ "$rc" = 0 ] && pass || { tail -20 "$WORK/subpath.log" >&2; fail "the agent exited $rc after SIGTERM"; }
else
        skip_part no-mount-namespace-subpath "mount namespaces are not permitted here: the superseded raw case did not run"
fi

# --- a Secret-shaped projected directory, the condition in counts only --------
# A projected Secret volume is written by the same atomic writer as a
# ConfigMap's (..data, version directories); kubelet's default mode for a
# Secret's keys is 0644 too, and 0400 is common: the agent, root here, reads it.
NS=slurm
UID0=0b8c0a52-6f0e-4c47-9a57-5d1f7e3c9a10
TYPE=AppSecretCurrent
secret=$WORK/secret
sa=$WORK/sa
mkdir -p "$secret" "$root/etc/tls"
kube_pki "$sa" "$NS" token-1
cat >"$WORK/pods.json" <<EOF
{"items": [{"metadata": {"name": "web-0", "namespace": "$NS", "uid": "$UID0",
                         "resourceVersion": "100"},
            "status": {"conditions": [
              {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"}]}}]}
EOF
start_fake "$WORK/pods.json" --rbac "$AGENT_RBAC"
printf 'CERT-ONE\n' >"$WORK/src/tls.crt"
printf 'KEY-ONE\n' >"$WORK/src/tls.key"
bash "$TOP_SRCDIR/tests/tools/atomic-writer.sh" "$secret" --mode 0400 tls.crt="$WORK/src/tls.crt" \
        tls.key="$WORK/src/tls.key" >/dev/null
[ "$(stat -c %a "$secret/..data/tls.key")" = 400 ] && pass || fail "the Secret's mode is not 0400"
cp "$WORK/src/tls.crt" "$WORK/src/tls.key" "$root/etc/tls/"
pod_condition() { ctl GET /pods/web-0 | jq -c --arg t "$TYPE" '.status.conditions[] | select(.type == $t)'; }
condition_message_is() { [ "$(pod_condition | jq -r .message)" = "$1" ]; }
expect_condition_message() {
        if wait_for "$HANG" condition_message_is "$1"; then pass; else
                fail "waited ${HANG} s for the condition message '$1': it is '$(pod_condition | jq -r .message)'"
        fi
}
start_agent "$WORK/secret.log" --desired-dir "$secret" --running-root "$root" \
        --file tls.crt=/etc/tls/tls.crt --file tls.key=/etc/tls/tls.key \
        --kube on --kube-api "$API" --serviceaccount-dir "$sa" --pod-name web-0 --pod-uid "$UID0" \
        --condition-type "$TYPE" --condition-detail counts || { finish; exit 1; }
expect_condition_message '2 files: 2 current.'
[ "$(pod_condition | jq -r '.status + "/" + .reason')" = True/ConfigCurrent ] && pass ||
        fail "condition: $(pod_condition)"
expect_metric 'aicr_enroot_config_file_format{file="tls.key",format="raw"}' 1
# the key rotates in the Secret, the pod still runs the old one
printf 'KEY-TWO\n' >"$WORK/src/tls.key"
bash "$TOP_SRCDIR/tests/tools/atomic-writer.sh" "$secret" --mode 0400 tls.crt="$WORK/src/tls.crt" \
        tls.key="$WORK/src/tls.key" >/dev/null
expect_metric 'aicr_enroot_config_state{file="tls.key",state="drifted"}' 1
expect_condition_message "2 files: 1 current, 1 drifted. Replace the pod to run the ConfigMap's configuration."
[ "$(pod_condition | jq -r '.status + "/" + .reason')" = False/ConfigDrifted ] && pass ||
        fail "condition: $(pod_condition)"
# neither the condition nor its Events name a key
ctl GET /pods/web-0 | grep -q 'tls\.' && fail "the pod names a Secret key: $(pod_condition)" || pass
wait_for "$HANG" eval 'ctl GET /events | grep -q ConfigDrifted' || fail "no Event for the drift"
ctl GET /events >"$WORK/events"
grep -q '2 files: 1 current, 1 drifted' "$WORK/events" && pass || fail "Events: $(cat "$WORK/events")"
grep -q 'tls\.' "$WORK/events" && fail "an Event names a Secret key" || pass
# the values never show anywhere the agent publishes
curl -sf "http://127.0.0.1:$PORT/metrics" "http://127.0.0.1:$PORT/status" | grep -q 'KEY-\|CERT-' &&
        fail "a Secret value is published" || pass
grep -q 'KEY-\|CERT-' "$WORK/secret.log" && fail "a Secret value is logged" || pass
stop_agent
stop_fake

# --- lint and diff: the format judged, raw refused by lint -------------------
printf 'a\n' >"$WORK/a.txt"
printf 'a \n' >"$WORK/b.txt"
expect_status 2 "$AGENT" lint --type raw "$WORK/a.txt"
grep -q -- '--type raw: lint has rules only for enroot.conf and environ.d .env files' "$WORK/err" && pass ||
        fail "lint --type raw: $(cat "$WORK/err")"
[ ! -s "$WORK/out" ] && pass || fail "lint --type raw printed findings: $(cat "$WORK/out")"
expect_status 2 "$AGENT" lint "$WORK/a.txt"
grep -q 'nothing to lint' "$WORK/err" && pass || fail "lint of an unknown name: $(cat "$WORK/err")"
expect_status 0 "$AGENT" lint --format json --type enroot-env "$WORK/a.txt"
[ "$(jq -r '.files[0].format' "$WORK/out")" = enroot-env ] && pass || fail "lint json format: $(cat "$WORK/out")"
expect_status 1 "$AGENT" diff --type raw "$WORK/a.txt" "$WORK/b.txt"
grep -q "a.txt -> .*b.txt: drift (raw: 2 and 3 bytes, compared by SHA-256)" "$WORK/out" && pass ||
        fail "diff --type raw: $(cat "$WORK/out")"
expect_status 0 "$AGENT" diff --type raw --format json "$WORK/a.txt" "$WORK/a.txt"
[ "$(jq -r '.format + " " + .verdict + " " + (.desired_sha256 // "none")' "$WORK/out")" = "raw same none" ] &&
        pass || fail "diff --type raw json: $(cat "$WORK/out")"
expect_status 0 "$AGENT" diff --format json --type env "$WORK/a.txt" "$WORK/a.txt"
[ "$(jq -r .format "$WORK/out")" = enroot-env ] && pass || fail "diff json format: $(cat "$WORK/out")"
expect_status 2 "$AGENT" diff "$WORK/a.txt" "$WORK/b.txt"
grep -q -- '--type raw to compare the bytes' "$WORK/err" && pass || fail "diff hint: $(cat "$WORK/err")"

finish
