#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Helm post-renderer that adds aicr-enroot-agent to every NodeSet and LoginSet
# of the slurm chart's output. Helm writes the rendered manifests to standard
# input and installs what this prints. The work is `kubectl kustomize` (or
# `kustomize build`, kustomize v5) of the variant's kustomization.yaml:
# strategic merge patches that append the agent's container and token volume
# to the lists the chart rendered, so nothing of the bundle is replaced.
#
# Usage: post-render.sh [sidecar|plain-container|target-process]
#   sidecar          the default: a native sidecar reading its own subPath
#                    mounts (Kubernetes 1.29 and later)
#   plain-container  the same as a regular container (older clusters)
#   target-process   reads the files of slurmd/sshd itself (root, CAP_SYS_PTRACE)
# Helm 3:  helm upgrade ... --post-renderer container/kubernetes/agent/post-render.sh
#                          [--post-renderer-args target-process]
# Helm 4:  helm plugin install container/kubernetes/agent, then
#          helm upgrade ... --post-renderer aicr-enroot-agent (plugin.yaml)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
variant=${1:-sidecar}
case $variant in
sidecar | plain-container | target-process) ;;
*)
        echo "post-render.sh: unknown variant '$variant': use sidecar, plain-container or target-process" >&2
        exit 2
        ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# kustomize reads only files under the kustomization's directory
cp "$here/slinky-podspec-schema.json" "$here/$variant/kustomization.yaml" \
        "$here/$variant/nodeset.yaml" "$here/$variant/loginset.yaml" "$tmp/"
cat >"$tmp/helm-output.yaml"

if command -v kubectl >/dev/null 2>&1; then
        kubectl kustomize "$tmp" >"$tmp/out.yaml"
elif command -v kustomize >/dev/null 2>&1; then
        kustomize build "$tmp" >"$tmp/out.yaml"
else
        echo "post-render.sh: neither kubectl nor kustomize is installed" >&2
        exit 1
fi

# A patch whose target matches nothing is no error to kustomize: refuse to
# hand Helm a NodeSet or LoginSet without the agent.
if grep -Eq '^kind: (NodeSet|LoginSet)[[:space:]]*$' "$tmp/helm-output.yaml" &&
        ! grep -q 'name: aicr-enroot-agent$' "$tmp/out.yaml"; then
        echo "post-render.sh: the output has no aicr-enroot-agent container: is kustomize v5 installed?" >&2
        exit 1
fi
cat "$tmp/out.yaml"
