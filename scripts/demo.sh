#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The README's first command: installs what is missing, builds, and shows the
# agent's main job on the shipped example. An operator changed the enroot
# ConfigMap (examples/configmap/); a pod still runs the files it started with
# (examples/running/), because subPath mounts never refresh.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"

bash scripts/setup-deps.sh
if [[ ! -x configure || configure.ac -nt configure || Makefile.am -nt configure ]]; then
        autoreconf -fi
fi
mkdir -p build
cd build
[[ -f Makefile ]] || ../configure --quiet
make -j"$(nproc)" --quiet aicr-enroot-agent
agent=$PWD/aicr-enroot-agent
cd "$top/examples"

step() {
        printf '\n\033[1m$ %s\033[0m\n' "$*"
        "$@" || printf '(exit status %d)\n' "$?"
}

echo
echo "== 1. Is the new ConfigMap sound? (lint every data key)"
step "$agent" lint --configmap configmap/slinky-slurm-enroot-config.json

echo
echo "== 2. What does the pod run that the ConfigMap no longer says? (diff)"
step "$agent" diff configmap/enroot.conf running/enroot.conf
step "$agent" diff configmap/99-aicr-defaults.env running/99-aicr-defaults.env

echo
echo "== 3. The same, with the values (they may be secrets: opt in)"
step "$agent" diff --show-values configmap/enroot.conf running/enroot.conf
