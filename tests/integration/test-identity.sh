#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Which identity of a file the daemon publishes (docs/OPERATIONS.md, "Which
# file identity is published"): the ConfigMap version where it is known, and
# a content id keyed by a random key of the process. Never a plain hash: with
# one unknown low-entropy value (a proxy password) in an otherwise known file,
# the SHA-256 of the file would let anyone who reads /metrics or /status, or
# Prometheus' storage, test guesses of the value offline.
. "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip no-curl "curl is not installed (scripts/setup-deps.sh installs it)"
command -v jq >/dev/null || skip no-jq "jq is not installed (scripts/setup-deps.sh installs it)"
command -v sha256sum >/dev/null || skip no-sha256sum "sha256sum is not installed (coreutils)"
SECRET=hunter2

cm=$WORK/cm
root=$WORK/root
mkdir -p "$cm" "$root/etc/enroot/environ.d"

trap 'stop_agent; rm -rf "$WORK"' EXIT

# scrape NAME: /metrics and /status of the agent on $PORT, into $WORK/NAME.*
scrape() {
        curl -sf "http://127.0.0.1:$PORT/metrics" >"$WORK/$1.metrics"
        curl -sf "http://127.0.0.1:$PORT/status" >"$WORK/$1.status"
}
# info NAME FILE SIDE LABEL: a label of aicr_enroot_config_info in a scrape
info() {
        grep "^aicr_enroot_config_info{file=\"$2\",side=\"$3\"" "$WORK/$1.metrics" |
                sed -n "s/.*[{,]$4=\"\\([^\"]*\\)\".*/\\1/p"
}
# field NAME FILE JQ-PATH: a field of one file in a /status scrape
field() { jq -r --arg k "$2" ".files[] | select(.key == \$k) | $3" "$WORK/$1.status"; }

# --- a known file that holds one secret; the running files are copies --------
publish "ENROOT_REMAP_ROOT=yes\nhttps_proxy=http://proxyuser:$SECRET@proxy:3128\n" \
        "HF_TOKEN=$SECRET\n"
cp "$WORK/src/enroot.conf" "$root/etc/enroot/enroot.conf"
cp "$WORK/src/99-aicr-defaults.env" "$root/etc/enroot/environ.d/99-aicr-defaults.env"
V1=$(readlink "$cm/..data")

start_agent "$WORK/a.log" --desired-dir "$cm" --running-root "$root" || { finish; exit 1; }
expect_metric 'aicr_enroot_config_current ' 1
scrape a
stop_agent
start_agent "$WORK/b.log" --desired-dir "$cm" --running-root "$root" || { finish; exit 1; }
expect_metric 'aicr_enroot_config_current ' 1
scrape b
stop_agent

# --- (1) no hash an outsider could recompute from a guess ----------------------
for f in enroot.conf 99-aicr-defaults.env; do
        sum=$(sha256sum "$WORK/src/$f" | cut -d' ' -f1)
        for s in a b; do
                for what in metrics status; do
                        # the whole digest, or a prefix of it as a truncation would publish
                        if grep -qi -e "$sum" -e "${sum:0:16}" "$WORK/$s.$what"; then
                                fail "/$what of agent $s holds the SHA-256 of $f: $(grep -i "${sum:0:16}" "$WORK/$s.$what" | head -3)"
                        else
                                pass
                        fi
                done
        done
done
for s in a b; do
        for what in metrics status; do
                if grep -qiE '[0-9a-f]{64}' "$WORK/$s.$what"; then
                        fail "/$what of agent $s holds a 64-hex-digit string: $(grep -oiE '[0-9a-f]{64}' "$WORK/$s.$what" | head -3)"
                else
                        pass
                fi
                grep -q "$SECRET" "$WORK/$s.$what" && fail "/$what of agent $s holds the secret" || pass
        done
done
# no field or label keeps the old name
grep -q 'sha256' "$WORK/a.metrics" && fail "/metrics still has a sha256 label" || pass
jq -e '[.files[] | has("sha256")] | any' "$WORK/a.status" >/dev/null &&
        fail "/status still has a sha256 field" || pass

# --- (2) the content id: equal within one process, keyed per process ---------
for f in enroot.conf 99-aicr-defaults.env; do
        a_desired=$(info a "$f" desired content_id)
        a_running=$(info a "$f" running content_id)
        b_desired=$(info b "$f" desired content_id)
        [[ $a_desired =~ ^[0-9a-f]{16}$ ]] && pass || fail "$f: content_id is '$a_desired'"
        # equal bytes on both sides: the same id in one process
        [ "$a_desired" = "$a_running" ] && pass ||
                fail "$f: desired $a_desired and running $a_running differ for equal bytes"
        # /status says the same as the metric
        [ "$(field a "$f" .content_id.desired)" = "$a_desired" ] &&
                [ "$(field a "$f" .content_id.running)" = "$a_running" ] && pass ||
                fail "$f: /status content_id $(field a "$f" .content_id) is not the metric's $a_desired"
        # another process over the very same bytes: another id
        [ -n "$b_desired" ] && [ "$a_desired" != "$b_desired" ] && pass ||
                fail "$f: two agent processes published the same content id '$a_desired'"
done
# different bytes: different ids, in one process
[ "$(info a enroot.conf desired content_id)" != "$(info a 99-aicr-defaults.env desired content_id)" ] &&
        pass || fail "two different files share a content id"

# --- (3) the version, where it is known ----------------------------------------
for f in enroot.conf 99-aicr-defaults.env; do
        [ "$(info a "$f" desired version)" = "$V1" ] && pass ||
                fail "$f: desired version label is '$(info a "$f" desired version)', want $V1"
        [ "$(field a "$f" .version.desired)" = "$V1" ] && pass ||
                fail "$f: /status version.desired is $(field a "$f" .version.desired), want $V1"
        # a copied file comes from no version directory: no version is claimed
        [ -z "$(info a "$f" running version)" ] && pass ||
                fail "$f: running version label '$(info a "$f" running version)' for a plain file"
        [ "$(field a "$f" .version.running)" = null ] && pass ||
                fail "$f: /status version.running is $(field a "$f" .version.running) for a plain file"
done

# The running file bind-mounted from a version directory, as kubelet mounts
# a subPath: its version is the mount's.
if unshare -m --propagation private true 2>/dev/null; then
        cat >"$WORK/subpath.sh" <<'SCRIPT'
set -eu
mount --bind "$CM/$(readlink "$CM/..data")/enroot.conf" "$ROOT/etc/enroot/enroot.conf"
"$AGENT" --listen 127.0.0.1:0 --log-level debug --desired-dir "$CM" --running-root "$ROOT" \
        --file enroot.conf=/etc/enroot/enroot.conf >"$LOG" 2>&1 &
echo $! >"$PIDFILE"
wait
SCRIPT
        CM=$cm ROOT=$root AGENT=$AGENT LOG=$WORK/subpath.log PIDFILE=$WORK/subpath.pid \
                unshare -m --propagation private bash "$WORK/subpath.sh" &
        ns_pid=$!
        wait_for 5 test -s "$WORK/subpath.pid"
        AGENT_PID=$(cat "$WORK/subpath.pid")
        AGENT_LOG=$WORK/subpath.log
        wait_for 5 grep -q 'Serving' "$WORK/subpath.log"
        PORT=$(sed -n 's/.*Serving .* on 127\.0\.0\.1:\([0-9]*\)\..*/\1/p' "$WORK/subpath.log")
        expect_metric 'aicr_enroot_config_current ' 1
        scrape m1
        [ "$(info m1 enroot.conf running version)" = "$V1" ] && pass ||
                fail "running version label is '$(info m1 enroot.conf running version)', want $V1"
        [ "$(field m1 enroot.conf .version.running)" = "$V1" ] && pass ||
                fail "/status version.running is $(field m1 enroot.conf .version.running), want $V1"
        # A new version: the ConfigMap's moves on, the mount keeps its own.
        publish "ENROOT_REMAP_ROOT=no\nhttps_proxy=http://proxyuser:$SECRET@proxy:3128\n" \
                "HF_TOKEN=$SECRET\n"
        V2=$(readlink "$cm/..data")
        expect_metric 'aicr_enroot_config_drift{file="enroot.conf"}' 1
        scrape m2
        [ "$(info m2 enroot.conf desired version)" = "$V2" ] &&
                [ "$(info m2 enroot.conf running version)" = "$V1" ] && pass ||
                fail "after the update: desired $(info m2 enroot.conf desired version) (want $V2), running $(info m2 enroot.conf running version) (want $V1)"
        # the running bytes did not change, so neither did their id
        [ "$(info m2 enroot.conf running content_id)" = "$(info m1 enroot.conf running content_id)" ] &&
                [ "$(info m2 enroot.conf desired content_id)" != "$(info m2 enroot.conf running content_id)" ] &&
                pass || fail "content ids after the update: $(grep config_info "$WORK/m2.metrics")"
        if grep -qiE '[0-9a-f]{64}' "$WORK/m2.metrics" "$WORK/m2.status"; then
                fail "a 64-hex-digit string after the update"
        else
                pass
        fi
        kill -TERM "$AGENT_PID"
        AGENT_PID=
        rc=0
        wait "$ns_pid" || rc=$?
        [ "$rc" = 0 ] && pass || { tail -20 "$WORK/subpath.log" >&2; fail "the agent exited $rc after SIGTERM"; }
else
        skip_part no-mount-namespace "mount namespaces are not permitted here: the running version of a bind mount is not checked"
fi

finish
