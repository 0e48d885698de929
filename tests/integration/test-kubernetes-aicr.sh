#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The agent layered onto real AICR bundles through the post-renderer, as
# docs/OPERATIONS.md ("Deploy with an AICR bundle") deploys it:
# tests/kubernetes/aicr-layering.js builds the slurm chart 1.2.0's NodeSet and
# LoginSet from AICR's slinky-slurm values (tests/data/upstream/), with and
# without shared storage and resources, runs
# container/kubernetes/agent/post-render.sh on them as Helm does, and checks
# that every mount has its volume, that nothing of the bundle is lost, the
# agent's container, token volume and ports, and the pods' QoS class. A
# post-renderer that replaces the bundle's lists, drops the agent or makes a
# Guaranteed pod Burstable fails it.
#
# tests/data/upstream/ must be a verbatim copy of the shared upstream fixtures:
# compared with them when ../shared/fixtures/upstream is beside the source tree.
#
# Needs kubectl 1.27 or later (kustomize v5), or kustomize v5, as the
# post-renderer does; without it the test is skipped, loudly.
. "$(dirname "$0")/lib.sh"
started=$SECONDS

upstream=$TOP_SRCDIR/tests/data/upstream
shared=$TOP_SRCDIR/../shared/fixtures/upstream
if [ -d "$shared" ]; then
        for f in aicr/slinky-slurm-values.yaml aicr/slinky-slurm-values-storage-enabled.yaml \
                slinky-slurm-1.2.0/values.yaml slinky-slurm-1.2.0/Chart.yaml; do
                cmp -s "$upstream/$f" "$shared/$f" && pass || fail "tests/data/upstream/$f differs from the shared fixture $f"
        done
else
        skip_part no-shared-fixtures "no ../shared/fixtures/upstream beside the source tree: tests/data/upstream/ not compared with it"
fi

for c in node npm flock; do
        command -v "$c" >/dev/null || skip "no-$c" "$c is missing (scripts/setup-deps.sh installs it)"
done
if command -v kubectl >/dev/null; then
        kz_version=$(kubectl version --client 2>/dev/null | sed -n 's/^Kustomize Version: v\([0-9]*\).*/\1/p')
elif command -v kustomize >/dev/null; then
        kz_version=$(kustomize version 2>/dev/null | sed -n 's/^v\{0,1\}\([0-9]*\)\..*/\1/p')
fi
if [ -z "${kz_version:-}" ] || [ "$kz_version" -lt 5 ]; then
        [ "$failures" -eq 0 ] || { finish || exit 1; }
        found=${kz_version:+kustomize v$kz_version}
        skip no-kustomize-5 "the post-renderer needs kubectl 1.27+ or kustomize v5 (found: ${found:-none}); the agent's layering onto AICR bundles is not checked"
fi

deps=${AICR_NODE_DEPS:-}
if [ -z "$deps" ]; then
        if mkdir -p "$TOP_SRCDIR/.cache/node" 2>/dev/null && [ -w "$TOP_SRCDIR/.cache/node" ]; then
                deps=$TOP_SRCDIR/.cache/node
        else
                deps=$WORK/node # a read-only source tree (make distcheck)
        fi
fi
mkdir -p "$deps"
if ! flock "$deps/.lock" bash "$TOP_SRCDIR/scripts/setup-node-deps.sh" "$deps" >"$WORK/npm.log" 2>&1; then
        if grep -qE 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|network' "$WORK/npm.log"; then
                skip no-npm-registry "the npm registry cannot be reached: $(grep -m1 -E 'ENOTFOUND|EAI_AGAIN|ECONN|ETIMEDOUT|ENETUNREACH|network' "$WORK/npm.log")"
        fi
        cat "$WORK/npm.log" >&2
        fail "scripts/setup-node-deps.sh failed"
        finish
fi

rc=0
node "$TOP_SRCDIR/tests/kubernetes/aicr-layering.js" --deps "$deps" --upstream "$upstream" \
        --agent "$TOP_SRCDIR/container/kubernetes/agent" --docs "$TOP_SRCDIR/docs/OPERATIONS.md" --work "$WORK" >"$WORK/layering.out" 2>&1 || rc=$?
while IFS= read -r line; do
        case $line in
        "ok - "*) pass ;;
        "not ok - "*) fail "${line#not ok - }" ;;
        *) fail "aicr-layering.js: $line" ;;
        esac
done <"$WORK/layering.out"
[ "$rc" -eq 0 ] && pass || fail "aicr-layering.js exited $rc"
printf '%s: %d layering checks, %ss\n' "$TEST_NAME" "$(grep -c '^ok - ' "$WORK/layering.out" || true)" "$((SECONDS - started))"
finish
