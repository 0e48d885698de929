#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The container image's root filesystem, without a container engine: the
# packages of container/runtime-packages.txt unpacked by
# container/assemble-rootfs.sh (what the Containerfile does), the agent copied
# to the Containerfile's ENTRYPOINT, then run with chroot as the Containerfile's
# USER, in its own mount and PID namespaces, on a read-only root with /proc, a
# minimal /dev, a ConfigMap directory and the running files mounted as a
# container runtime would: --version, --help, lint, the daemon answering
# `--check` from inside and, with the fake API server, writing its pod
# condition over TLS with projected service-account files. A library the list
# lacks fails here.
#
# Downloads are cached in .cache/debs of the source tree (git-ignored) when it
# is writable, else in a temporary directory; AICR_DEB_CACHE overrides.
. "$(dirname "$0")/lib.sh"
started=$SECONDS

containerfile=$TOP_SRCDIR/container/Containerfile
assemble=$TOP_SRCDIR/container/assemble-rootfs.sh
packages=$TOP_SRCDIR/container/runtime-packages.txt

# --- the Containerfile and the package list agree with this test ------------
# The image's user and entry point come from the Containerfile itself.
user=$(sed -n 's/^USER[[:space:]]\{1,\}\([0-9]\{1,\}:[0-9]\{1,\}\)[[:space:]]*$/\1/p' "$containerfile" | tail -n 1)
entry=$(sed -n 's/^ENTRYPOINT[[:space:]]*\["\([^"]*\)".*/\1/p' "$containerfile" | tail -n 1)
[ -n "$user" ] && pass || fail "the Containerfile's last stage has no numeric USER UID:GID"
[ "${user%%:*}" != 0 ] && pass || fail "the Containerfile runs the agent as root"
[ -n "$entry" ] && pass || fail "the Containerfile has no ENTRYPOINT [\"/path\"]"
grep -q 'assemble-rootfs\.sh --without-base' "$containerfile" && pass ||
        fail "the Containerfile does not build its libraries with assemble-rootfs.sh --without-base"
grep -q 'COPY container/runtime-packages.txt' "$containerfile" && pass ||
        fail "the Containerfile does not copy container/runtime-packages.txt"
grep -q "COPY --from=build .*/aicr-enroot-agent /rootfs$entry\$" "$containerfile" && pass ||
        fail "the Containerfile does not install the agent at its ENTRYPOINT $entry"
# The front end at the entry point finds the daemon's program through
# ../libexec/aicr-enroot-agent from its own directory (agent/cli/front.c).
daemon_path=$(dirname "$entry")/../libexec/aicr-enroot-agent/aicr-enroot-agentd
daemon_path=$(realpath -m "$daemon_path")
grep -q "COPY --from=build .*/aicr-enroot-agentd /rootfs$daemon_path\$" "$containerfile" && pass ||
        fail "the Containerfile does not install aicr-enroot-agentd at $daemon_path, where $entry looks for it"
full=$(dirname "$AGENT")/aicr-enroot-agentd

# Every library the binary links directly comes from a package the list names
# (a dependency of a dependency may go away with an update). A sanitizer build
# links its runtime's libraries too; the image never ships one.
listed=$(sed 's/#.*//' "$packages" | awk 'NF { print $1 }')
if grep -q __asan_init "$AGENT"; then
        skip_part sanitizer-libraries "sanitizer build: the libraries it links are not checked against the list"
elif command -v readelf >/dev/null && command -v dpkg >/dev/null && command -v ldd >/dev/null; then
        ldd "$full" >"$WORK/ldd" 2>&1 || true
        while read -r soname; do
                # the file the loader picks, and the package that installed it
                # (dpkg knows /lib/... or /usr/lib/..., whichever the package ships)
                file=$(awk -v s="$soname" '$1 == s && $2 == "=>" { print $3 }' "$WORK/ldd")
                pkg=
                for f in "$file" "${file#/usr}" "/usr$file"; do
                        [ -n "$file" ] || break
                        pkg=$(dpkg -S "$f" 2>/dev/null | sed -n '1s/[:,].*//p' || true)
                        [ -n "$pkg" ] && break
                done
                if [ -z "$pkg" ]; then
                        fail "no installed package has $soname, which the agent links"
                elif grep -qxF "$pkg" <<<"$listed"; then
                        pass
                else
                        fail "the agent links $soname from $pkg, which container/runtime-packages.txt does not name"
                fi
        done < <(readelf -d "$AGENT" "$full" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' | sort -u)
else
        skip_part no-readelf "readelf, dpkg or ldd is missing: the libraries it links are not checked against the list"
fi
((failures == 0)) || finish

# --- what running it needs ---------------------------------------------------
[ "$(id -u)" -eq 0 ] || { finish || exit 1; skip not-root "not root: chroot and mount namespaces need root"; }
for c in unshare nsenter chroot mount apt-get apt-cache dpkg-deb flock curl; do
        command -v "$c" >/dev/null || { finish || exit 1; skip "no-$c" "$c is missing (scripts/setup-deps.sh)"; }
done
unshare --mount --pid --fork true 2>/dev/null ||
        { finish || exit 1; skip no-namespaces "cannot create mount and PID namespaces here"; }
if ! grep -q 'Candidate: [0-9]' <<<"$(apt-cache policy libc6 2>/dev/null)"; then
        finish || exit 1
        skip no-apt-lists "apt has no package lists (run apt-get update)"
fi

cache=${AICR_DEB_CACHE:-}
if [ -z "$cache" ]; then
        if mkdir -p "$TOP_SRCDIR/.cache/debs" 2>/dev/null && [ -w "$TOP_SRCDIR/.cache/debs" ]; then
                cache=$TOP_SRCDIR/.cache/debs
        else
                cache=$WORK/debs # a read-only source tree (make distcheck)
        fi
fi
mkdir -p "$cache"

# --- assemble ------------------------------------------------------------------
root=$WORK/root
t0=$SECONDS
# One assembly at a time per cache: parallel builds share it.
if ! flock "$cache/.lock" bash "$assemble" --cache "$cache" "$root" >"$WORK/assemble.log" 2>&1; then
        if grep -qiE 'Failed to fetch|Temporary failure resolving|Could not (connect|resolve)|Network is unreachable' \
                "$WORK/assemble.log"; then
                finish || exit 1
                skip no-debian-archive "the Debian archive cannot be reached: $(grep -m1 -iE 'fetch|resolv|connect|unreachable' "$WORK/assemble.log")"
        fi
        cat "$WORK/assemble.log" >&2
        fail "assemble-rootfs.sh failed"
        finish
fi
pass
assemble_secs=$((SECONDS - t0))
tail -n 1 "$WORK/assemble.log"
install -D -m 0755 "$AGENT" "$root$entry"
install -D -m 0755 "$full" "$root$daemon_path"

# Mount points a container runtime would create, and the volumes' contents.
mkdir -p "$root/proc" "$root/dev" "$root/run/aicr-enroot/configmap" "$root/run/aicr-enroot/running"
cm=$WORK/cm
running=$WORK/running
mkdir -p "$cm" "$running/etc/enroot/environ.d"
bash "$TOP_SRCDIR/tests/tools/atomic-writer.sh" "$cm" \
        enroot.conf="$TOP_SRCDIR/examples/configmap/enroot.conf" \
        99-aicr-defaults.env="$TOP_SRCDIR/examples/configmap/99-aicr-defaults.env" >/dev/null
cp "$TOP_SRCDIR/examples/running/enroot.conf" "$running/etc/enroot/"
cp "$TOP_SRCDIR/examples/running/99-aicr-defaults.env" "$running/etc/enroot/environ.d/"
chmod -R a+rX "$cm" "$running"

# The API server, when the agent has a Kubernetes client and the fake is built:
# its CA, token and namespace as the projected volume gives them.
FAKE=${FAKE_APISERVER:-}
FAKE_PID=
kube=no
if [ -n "$FAKE" ] && [ -x "$FAKE" ] && command -v openssl >/dev/null && command -v jq >/dev/null &&
        "$AGENT" --help 2>&1 | grep -q -- '--kube '; then
        kube=yes
fi
sa=$WORK/sa
sa_in_image=/var/run/secrets/kubernetes.io/serviceaccount
mkdir -p "$sa" "$root$sa_in_image"
if [ "$kube" = yes ]; then
        bash "$TOP_SRCDIR/tests/tools/make-test-ca.sh" "$WORK/pki" >/dev/null
        cp "$WORK/pki/ca.crt" "$sa/ca.crt"
        printf slurm >"$sa/namespace"
        printf token-1 >"$sa/token"
        printf token-1 >"$WORK/server-token"
        chmod -R a+rX "$sa"
        cat >"$WORK/pods.json" <<'EOF'
{"items": [{"metadata": {"name": "slinky-0", "namespace": "slurm",
                         "uid": "0f0f0f0f-0000-4000-8000-000000000000", "resourceVersion": "1"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}]}
EOF
        "$FAKE" --pods "$WORK/pods.json" --token-file "$WORK/server-token" \
                --tls-cert "$WORK/pki/server.crt" --tls-key "$WORK/pki/server.key" \
                --port 0 --control-port 0 --rbac "$AGENT_RBAC" >"$WORK/fake.out" 2>"$WORK/fake.err" &
        FAKE_PID=$!
        for _ in $(seq 1 200); do
                grep -q '^control on' "$WORK/fake.out" && break
                sleep 0.05
        done
        API=$(sed -n 's/^listening on //p' "$WORK/fake.out")
        CTL=$(sed -n 's/^control on //p' "$WORK/fake.out")
        [ -n "$CTL" ] || { cat "$WORK/fake.err" >&2; fail "the fake API server did not start"; kube=no; }
else
        skip_part no-pod-condition "no Kubernetes client or no fake API server: the pod condition is not tried in the image"
fi

# The namespaces: the root bind-mounted read-only (readOnlyRootFilesystem),
# /proc of the new PID namespace, /dev with the usual nodes, the volumes
# read-only. A process sleeping in them holds them; commands enter them.
cat >"$WORK/namespace.sh" <<'EOF'
set -euo pipefail
root=$1 cm=$2 running=$3 ready=$4 sa=$5 sa_in_image=$6
mount --bind "$root" "$root"
mount -o remount,bind,ro "$root"
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
mount -t tmpfs -o nosuid,noexec,mode=0755,size=64k tmpfs "$root/dev"
for n in null zero full random urandom; do
        touch "$root/dev/$n"
        mount --bind "/dev/$n" "$root/dev/$n"
done
mount --bind "$cm" "$root/run/aicr-enroot/configmap"
mount -o remount,bind,ro "$root/run/aicr-enroot/configmap"
mount --bind "$running" "$root/run/aicr-enroot/running"
mount -o remount,bind,ro "$root/run/aicr-enroot/running"
mount --bind "$sa" "$root$sa_in_image"
mount -o remount,bind,ro "$root$sa_in_image"
: >"$ready"
exec sleep 3600
EOF
unshare --mount --pid --fork --kill-child bash "$WORK/namespace.sh" "$root" "$cm" "$running" "$WORK/ready" \
        "$sa" "$sa_in_image" \
        2>"$WORK/namespace.err" &
UNSHARE_PID=$!
AGENT_PID=
cleanup() {
        if [ -n "$AGENT_PID" ]; then
                kill -KILL "$AGENT_PID" 2>/dev/null || true
        fi
        if [ -n "$FAKE_PID" ]; then
                kill "$FAKE_PID" 2>/dev/null || true
        fi
        kill -KILL "$UNSHARE_PID" 2>/dev/null || true
        wait 2>/dev/null || true
        rm -rf "$WORK"
}
trap cleanup EXIT
for _ in $(seq 1 200); do
        [ -e "$WORK/ready" ] && break
        kill -0 "$UNSHARE_PID" 2>/dev/null || break
        sleep 0.05
done
[ -e "$WORK/ready" ] || { cat "$WORK/namespace.err" >&2; fail "the namespaces could not be set up"; finish; }
holder=$(cat "/proc/$UNSHARE_PID/task/$UNSHARE_PID/children")
holder=${holder%% *}

# in_image ARGS...: the agent as the image runs it.
in_image() {
        nsenter --target "$holder" --mount --pid \
                chroot --userspec="$user" "$root" "$entry" "$@"
}

t0=$SECONDS
# --- one-shot commands -----------------------------------------------------------
expect_status 0 in_image --version
grep -q '^aicr-enroot-agent [0-9]' "$WORK/out" && pass || fail "--version in the image printed: $(cat "$WORK/out")"
expect_status 0 in_image --help
grep -q -- '--desired-dir' "$WORK/out" && pass || fail "--help in the image lacks --desired-dir"
expect_status 0 in_image lint /run/aicr-enroot/running/etc/enroot/enroot.conf \
        /run/aicr-enroot/configmap/enroot.conf
expect_status 1 in_image lint --type conf - <"$TEST_DATA_DIR/lint/crlf.conf"
grep -q 'error\[carriage-return\]' "$WORK/out" && pass || fail "lint in the image printed: $(cat "$WORK/out")"
expect_status 1 in_image diff /run/aicr-enroot/configmap/enroot.conf /run/aicr-enroot/running/etc/enroot/enroot.conf
grep -q 'ENROOT_MOUNT_HOME: changed' "$WORK/out" && pass || fail "diff in the image printed: $(cat "$WORK/out")"
expect_status 0 in_image --desired-dir /run/aicr-enroot/configmap --running-root /run/aicr-enroot/running \
        --check-config
# No rollout program in the image: rollout needs the Slurm commands, which
# the image does not have (container/Containerfile); the front door says so.
expect_status 2 in_image rollout plan
grep -q 'Cannot find aicr-enroot-rollout, the program that runs rollout' "$WORK/err" && pass ||
        fail "rollout in the image: $(cat "$WORK/out" "$WORK/err")"

# --- the daemon, as the pod runs it --------------------------------------------
kube_args=()
if [ "$kube" = yes ]; then
        kube_args=(--kube on --kube-api "$API" --pod-name slinky-0 --pod-uid 0f0f0f0f-0000-4000-8000-000000000000)
fi
nsenter --target "$holder" --mount --pid \
        chroot --userspec="$user" "$root" "$entry" \
        --desired-dir /run/aicr-enroot/configmap --running-root /run/aicr-enroot/running \
        --listen 127.0.0.1:0 --resync-interval 1 "${kube_args[@]}" >"$WORK/daemon.log" 2>&1 &
NSENTER_PID=$!
PORT=
for _ in $(seq 1 400); do
        PORT=$(sed -n 's/.*Serving .* on 127\.0\.0\.1:\([0-9]*\)\..*/\1/p' "$WORK/daemon.log")
        [ -n "$PORT" ] && break
        kill -0 "$NSENTER_PID" 2>/dev/null || break
        sleep 0.05
done
AGENT_PID=$(cat "/proc/$NSENTER_PID/task/$NSENTER_PID/children" 2>/dev/null || true)
AGENT_PID=${AGENT_PID%% *}
if [ -z "$PORT" ]; then
        cat "$WORK/daemon.log" >&2
        fail "the daemon did not start in the image"
        finish
fi
pass

# wait_check ARGS...: `--check ARGS` inside the image, until it succeeds (5 s).
wait_check() {
        local _
        for _ in $(seq 1 100); do
                in_image --check --listen "127.0.0.1:$PORT" "$@" >"$WORK/out" 2>"$WORK/err" && return 0
                sleep 0.05
        done
        return 1
}
metric() { curl -sf "http://127.0.0.1:$PORT/metrics" | grep -v '^#' | grep -F -- "$1" | awk '{ print $NF }'; }

wait_check && pass || fail "--check in the image never answered ready: $(cat "$WORK/out" "$WORK/err")"
grep -q '^ready' "$WORK/out" && pass || fail "--check printed: $(cat "$WORK/out")"
expect_status 1 in_image --check --listen "127.0.0.1:$PORT" --require-current
[ "$(metric 'aicr_enroot_config_current ')" = 0 ] && pass || fail "the example's drift is not reported"
[ "$(metric 'aicr_enroot_agent_watch_mode{mode="inotify"}')" = 1 ] && pass ||
        fail "inotify does not work in the image: $(grep -i watch "$WORK/daemon.log")"
# /proc is there: the process metrics are real
start=$(metric 'process_start_time_seconds')
awk -v s="${start:-0}" 'BEGIN { exit !(s > 1000000000) }' && pass || fail "process_start_time_seconds is '$start'"
# resyncs keep running as the image's user on a read-only root
before=$(metric 'aicr_enroot_agent_evaluations_total{trigger="resync"}')
sleep 2.5
after=$(metric 'aicr_enroot_agent_evaluations_total{trigger="resync"}')
[ "${after:-0}" -gt "${before:-0}" ] && pass || fail "no resync in 2.5 s ($before -> $after)"

# the pod condition, written through libcurl and OpenSSL from the image
condition() {
        curl -sf "$CTL/pods/slinky-0" |
                jq -r '.status.conditions[] | select(.type == "EnrootConfigCurrent") | "\(.status)/\(.reason)"'
}
wait_condition() {
        local _
        for _ in $(seq 1 200); do
                [ "$(condition 2>/dev/null || true)" = "$1" ] && return 0
                sleep 0.05
        done
        return 1
}
if [ "$kube" = yes ]; then
        wait_condition False/ConfigDrifted && pass ||
                fail "the agent in the image did not write its condition: '$(condition || true)'; $(tail -n 3 "$WORK/daemon.log")"
fi

# kubelet updates the ConfigMap to what the pod runs: current, seen through inotify
bash "$TOP_SRCDIR/tests/tools/atomic-writer.sh" "$cm" \
        enroot.conf="$running/etc/enroot/enroot.conf" \
        99-aicr-defaults.env="$running/etc/enroot/environ.d/99-aicr-defaults.env" >/dev/null
chmod -R a+rX "$cm"
wait_check --require-current && pass ||
        fail "the agent in the image did not see the ConfigMap update: $(cat "$WORK/out")"
[ "$(metric 'aicr_enroot_config_current ')" = 1 ] && pass || fail "current is not reported after the update"
if [ "$kube" = yes ]; then
        wait_condition True/ConfigCurrent && pass || fail "the condition did not follow the update: '$(condition || true)'"
fi

# what it costs, as kubelet would account it
rss_kib=$(awk '/^VmRSS:/ { print $2 }' "/proc/$AGENT_PID/status" 2>/dev/null || echo '?')

# SIGTERM: a clean stop, exit 0
if [ -n "$AGENT_PID" ]; then
        kill -TERM "$AGENT_PID"
        rc=0
        wait "$NSENTER_PID" || rc=$?
        AGENT_PID=
        [ "$rc" -eq 0 ] && pass || fail "the agent exited $rc on SIGTERM: $(tail -n 3 "$WORK/daemon.log")"
else
        fail "could not find the agent's process"
fi
grep -qiE 'permission denied|read-only file system' "$WORK/daemon.log" &&
        fail "the agent hit a permission or read-only error: $(grep -iE 'permission|read-only' "$WORK/daemon.log")" || pass

printf '%s: root file system of %s packages, %s; assembled in %ss, runs in %ss, %ss in all; daemon RSS %s KiB\n' \
        "$TEST_NAME" "$(find "$root/var/lib/dpkg/status.d" -type f | wc -l)" "$(du -sh "$root" | cut -f1)" \
        "$assemble_secs" "$((SECONDS - t0))" "$((SECONDS - started))" "$rss_kib"
finish
