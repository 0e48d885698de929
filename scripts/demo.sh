#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The README's first command: installs what is missing for building and for
# this demo (scripts/setup-deps.sh --demo: not the test suite's tools), builds,
# and shows the agent at work on a built-in demo. A pod started with the shipped enroot
# ConfigMap; an operator then changes the ConfigMap. kubelet updates the
# whole-directory projection (the same atomic writer sequence is replayed
# here), but the pod's subPath files never refresh: the agent says which keys
# drifted, in /metrics and /status, within milliseconds.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"

bash scripts/setup-deps.sh --demo
if [[ ! -x configure || configure.ac -nt configure || Makefile.am -nt configure ]]; then
        autoreconf -fi
fi
mkdir -p build
cd build
[[ -f Makefile ]] || ../configure --quiet
make -j"$(nproc)" --quiet
agent=$PWD/aicr-enroot-agent
examples=$top/examples
writer=$top/tests/tools/atomic-writer.sh

work=$(mktemp -d "${TMPDIR:-/tmp}/aicr-enroot-demo.XXXXXX")
agent_pid=
cleanup() {
        [[ -z $agent_pid ]] || kill "$agent_pid" 2>/dev/null || true
        rm -rf "$work"
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
step() {
        printf '\033[1m$ %s\033[0m\n' "$*"
        "$@" || printf '(exit status %d)\n' "$?"
}
drift_metrics() {
        curl -s "http://127.0.0.1:$port/metrics" |
                grep -E '^aicr_enroot_config_(current|drift|key_drift)[ {]' || true
}

say "1. The operator's new ConfigMap: is it sound for enroot? (lint every key)"
step "$agent" lint --configmap "$examples/configmap/slinky-slurm-enroot-config.json"

say "2. A pod starts: kubelet projects the shipped ConfigMap, the pod copies its files"
mkdir -p "$work/configmap" "$work/pod/etc/enroot/environ.d"
bash "$writer" "$work/configmap" enroot.conf="$examples/running/enroot.conf" \
        99-aicr-defaults.env="$examples/running/99-aicr-defaults.env" >/dev/null
cp "$examples/running/enroot.conf" "$work/pod/etc/enroot/enroot.conf"
cp "$examples/running/99-aicr-defaults.env" "$work/pod/etc/enroot/environ.d/"
ls -la "$work/configmap"

say "3. The agent watches the projection and the pod's files"
# a port the kernel chooses, read back from the agent's log (created here:
# tee may not have started when the loop below first reads it)
: >"$work/agent.log"
"$agent" --desired-dir "$work/configmap" --running-root "$work/pod" \
        --listen 127.0.0.1:0 2> >(tee "$work/agent.log" >&2) &
agent_pid=$!
port=
for _ in $(seq 1 100); do
        port=$(sed -n 's/.*Serving .* on 127\.0\.0\.1:\([0-9]*\)\..*/\1/p' "$work/agent.log")
        [[ -n $port ]] && "$agent" --check --listen "127.0.0.1:$port" >/dev/null 2>&1 && break
        sleep 0.1
done
[[ -n $port ]] || { echo "demo: the agent did not start" >&2; exit 1; }
step "$agent" --check --listen "127.0.0.1:$port"
drift_metrics

say "4. The operator applies the new ConfigMap; kubelet flips ..data"
bash "$writer" "$work/configmap" enroot.conf="$examples/configmap/enroot.conf" \
        99-aicr-defaults.env="$examples/configmap/99-aicr-defaults.env" >/dev/null
sleep 0.2
drift_metrics
step "$agent" --check --require-current --listen "127.0.0.1:$port"

say "5. What /status tells a controller (keys, never values)"
curl -s "http://127.0.0.1:$port/status" | jq '{pod, files: [.files[] | {key, state, superseded, changes}]}'

say "6. The same comparison offline, with values (opt in: they may be secrets)"
step "$agent" diff --show-values "$examples/configmap/enroot.conf" "$examples/running/enroot.conf"
step "$agent" diff "$examples/configmap/99-aicr-defaults.env" "$examples/running/99-aicr-defaults.env"
echo
echo "The pod must be replaced to run the new configuration: the agent says which pods, and why."
