#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Installs the npm packages the offline manifest checks need
# (tests/kubernetes/package.json, at the exact versions of its
# package-lock.json) into DIR/node_modules, with `npm ci --ignore-scripts`:
# nothing from a package runs at install time. Does nothing, quickly, when DIR
# already holds that lock file's packages.
#
# Usage: scripts/setup-node-deps.sh [DIR]
#   DIR defaults to .cache/node in the source tree (git-ignored).
# Needs node (18 or later) and npm (scripts/setup-deps.sh installs them) and
# the npm registry. Exits 0 when the packages are in place, 1 when not (npm ci
# is tried three times, 10 and 20 s apart).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src=$top/tests/kubernetes
dir=${1:-$top/.cache/node}

for c in node npm; do
        if ! command -v "$c" >/dev/null; then
                echo "setup-node-deps: '$c' is missing: run scripts/setup-deps.sh first" >&2
                exit 1
        fi
done
major=$(node -p 'process.versions.node.split(".")[0]')
if ((major < 18)); then
        echo "setup-node-deps: node $(node --version) is too old: 18 or later is needed" >&2
        exit 1
fi

mkdir -p "$dir"
if [[ -f $dir/node_modules/.package-lock.json ]] && cmp -s "$src/package-lock.json" "$dir/package-lock.json"; then
        exit 0
fi
cp "$src/package.json" "$src/package-lock.json" "$dir/"
# A registry that answers 5xx or drops a connection for a moment: npm's own
# retries (fetch-retries, 2) cover a request, these the whole install. A
# registry that cannot be reached at all fails the same way three times.
for try in 1 2 3; do
        echo "setup-node-deps: npm ci in $dir (try $try of 3)"
        if (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error </dev/null); then
                exit 0
        fi
        ((try == 3)) || sleep $((try * 10))
done
echo "setup-node-deps: npm ci failed three times" >&2
exit 1
