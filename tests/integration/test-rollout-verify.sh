#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `aicr-enroot-agent rollout` and the enroot ConfigMap, against a real Slurm
# cluster (tests/tools/slurm-cluster.sh) and the fake API server under the
# rollout's documented RBAC (rollout-lib.sh).
# The ConfigMap check: plan and apply replace no pod, drain no node and write
# no Lease while slinky-slurm-enroot-config is missing, has no Helm release
# annotation, belongs to another release than slinky-slurm-pre (or
# --configmap-release), or may not be read; they go on when it is the
# release's.
# --verify-image: after the nodes are back, `srun --container-image=IMAGE env`
# on each replaced node. This cluster's srun is Slurm's own without the pyxis
# plugin: it refuses --container-image, and the rollout says so and skips.
# The verified and the mismatch paths need a job that runs in a container,
# which needs pyxis and enroot, absent here: they use a stand-in srun
# (--srun) that checks it was asked for the node and the image and prints an
# environment the test writes, as `env` in such a job would.
. "$(dirname "$0")/lib.sh"

: "${TOP_SRCDIR:?run through make check}"
. "$(dirname "$0")/rollout-lib.sh"
rollout_cluster_start

if why=$(replace_node_unavailable); then skip no-time-namespace "$why"; fi

CM=/api/v1/namespaces/$NS/configmaps/slinky-slurm-enroot-config
IMAGE=nvcr.io/nvidia/pytorch:24.01-py3
# The desired environ.d file: a quoted value (enroot strips the quotes), a
# secret-like value never to be printed, and a ${NAME} value that depends on
# enroot's environment (not compared).
DESIRED_ENV='NCCL_DEBUG=WARN
AICR_TOKEN="canary-desired-7f3a"
AICR_PATH=${HOME}/cache
'
configmap_gets() { ctl GET /requests | jq -r --arg p "$CM" '[.[] | select(.method == "GET" and .path == $p)] | length'; }
lease_writes() { ctl GET /requests | jq -r '[.[] | select(.path | contains("/leases")) | select(.method != "GET")] | length'; }
# expect_untouched LABEL: no pod deleted, no node drained, no Lease written
expect_untouched() {
        [ -z "$(deletes)" ] && pass || fail "$1: pods deleted: $(deletes)"
        all_idle && pass || fail "$1: nodes touched: $(sinfo -N -o '%N %T %E')"
        [ "$(lease_writes)" = 0 ] && pass || fail "$1: the Lease was written"
}

section "options"
expect_status 0 "$AGENT" rollout --help
for opt in "--configmap NAME" "--configmap-release NAME" "--verify-image IMAGE" "--srun PATH" \
        "default slinky-slurm-enroot-config" "default slinky-slurm-pre" "--verify-image found keys that differ"; do
        tr -s ' \n' ' ' <"$WORK/out" | grep -qF -- "$opt" && pass || fail "--help does not say '$opt'"
done
expect_status 2 "$AGENT" rollout plan --verify-image -x
grep -qF -- '--verify-image: "-x" is not an image.' "$WORK/err" && pass || fail "--verify-image -x: $(cat "$WORK/err")"
expect_status 2 "$AGENT" rollout plan --configmap a/b
grep -qF -- '--configmap: "a/b" is not an object name.' "$WORK/err" && pass || fail "--configmap a/b: $(cat "$WORK/err")"

# --- the ConfigMap check --------------------------------------------------------
section "the ConfigMap is missing"
echo '[]' >"$WORK/none.json"
CONFIGMAPS=$WORK/none.json start_pods "0:False 1:True 2:True 3:True" True
rollout plan
expect_rc 1 "plan without the ConfigMap"
expect_said out "plan without the ConfigMap" "refused: the ConfigMap $NS/slinky-slurm-enroot-config does not exist (GET: 404 NotFound)"
[ "$(configmap_gets)" = 1 ] && pass || fail "plan did not GET $CM: $(ctl GET /requests | jq -c '[.[].path]')"
rollout apply
expect_rc 1 "apply without the ConfigMap"
expect_said out "apply without the ConfigMap" "refused: no pod is replaced while the ConfigMap check fails; nothing was changed"
expect_untouched "apply without the ConfigMap"

section "an interrupted rollout, continued without the ConfigMap"
# slinky-0 drained by rollout 20261206T000000Z, which stopped there
REASON="aicr-enroot-rollout 20261206T000000Z: enroot configuration update"
scontrol update nodename=slinky-0 state=drain reason="$REASON"
CONFIGMAPS=$WORK/none.json start_pods "0:False 1:True 2:True 3:True" True
rollout apply
expect_rc 1 "apply continuing, without the ConfigMap"
expect_said out "apply continuing" "rollout 20261206T000000Z (in progress)"
expect_said out "apply continuing" "refused: the ConfigMap $NS/slinky-slurm-enroot-config does not exist"
[ -z "$(deletes)" ] && pass || fail "apply continuing: pods deleted: $(deletes)"
[ "$(node_reason slinky-0)" = "$REASON" ] && pass || fail "apply continuing: slinky-0's reason: $(node_reason slinky-0)"
[ "$(lease_writes)" = 0 ] && pass || fail "apply continuing: the Lease was written"
reset_nodes

section "the ConfigMap has no Helm release annotation"
configmap_json - >"$WORK/cm.json"
CONFIGMAPS=$WORK/cm.json start_pods "0:False 1:True 2:True 3:True" True
rollout plan --format json
expect_rc 1 "plan, no annotation"
[ "$(jq -r '.configmap.result' "$WORK/out")" = no-release ] && pass || fail "report: $(jq -c .configmap "$WORK/out")"
rollout apply
expect_rc 1 "apply, no annotation"
expect_said out "apply, no annotation" "refused: the ConfigMap $NS/slinky-slurm-enroot-config has no annotation meta.helm.sh/release-name: it is not the Helm release slinky-slurm-pre's"
expect_untouched "apply, no annotation"

section "the ConfigMap belongs to another release"
configmap_json slinky-slurm >"$WORK/cm.json"
CONFIGMAPS=$WORK/cm.json start_pods "0:False 1:True 2:True 3:True" True
rollout plan
expect_rc 1 "plan, other release"
expect_said out "plan, other release" "the ConfigMap $NS/slinky-slurm-enroot-config belongs to the Helm release \"slinky-slurm\" (annotation meta.helm.sh/release-name), not slinky-slurm-pre"
rollout apply
expect_rc 1 "apply, other release"
expect_said out "apply, other release" "belongs to the Helm release \"slinky-slurm\""
expect_untouched "apply, other release"
# the release named: the check passes
rollout plan --configmap-release slinky-slurm
expect_rc 1 "plan --configmap-release slinky-slurm"
expect_said out "plan --configmap-release" "configmap $NS/slinky-slurm-enroot-config: present, owned by release slinky-slurm"
expect_said out "plan --configmap-release" "planned: run \`rollout apply\` to do it"

section "the ConfigMap may not be read (403)"
# RBAC that grants get on another ConfigMap only: the real authorizer's 403
sed 's/resourceNames: \[slinky-slurm-enroot-config\]/resourceNames: [another-configmap]/' "$ROLLOUT_RBAC" >"$WORK/rbac-other.yaml"
grep -q 'resourceNames: \[another-configmap\]' "$WORK/rbac-other.yaml" || fail "the RBAC copy kept its ConfigMap"
ROLLOUT_RBAC=$WORK/rbac-other.yaml start_pods "0:False 1:True 2:True 3:True" True
rollout plan
expect_rc 3 "plan, ConfigMap forbidden"
expect_said out "plan, ConfigMap forbidden" "failed: could not read the ConfigMap"
expect_said err "plan, ConfigMap forbidden" "$CM: 403 Forbidden: configmaps \"slinky-slurm-enroot-config\" is forbidden: User \"$ROLLOUT_USER\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"$NS\". The rollout needs list, get and delete on pods, get, create and update on the Lease aicr-enroot-rollout, and get on the ConfigMap slinky-slurm-enroot-config, in namespace $NS"
rollout apply
expect_rc 3 "apply, ConfigMap forbidden"
expect_untouched "apply, ConfigMap forbidden"

section "the ConfigMap is the release's"
start_pods "0:False 1:True 2:True 3:True" True
rollout plan --verify-image "$IMAGE"
expect_rc 1 "plan, the release's ConfigMap"
expect_said out "plan, the release's" "configmap $NS/slinky-slurm-enroot-config: present, owned by release slinky-slurm-pre"
expect_said out "plan, the release's" "verify: once the nodes are back, \`srun -w NODE -N1 -n1 --container-image=$IMAGE env\` on each replaced worker node"
# --- --verify-image with this cluster's srun: no pyxis ---------------------------
section "--verify-image where srun has no pyxis"
start_controller
rollout apply --verify-image "$IMAGE"
expect_rc 0 "apply --verify-image without pyxis"
stop_controller
[ "$(deletes)" = "slurm-worker-slinky-0 " ] && pass || fail "deleted: '$(deletes)'"
[ "$(configmap_gets)" = 2 ] && pass || fail "plan and apply did not GET $CM once each: $(configmap_gets)"
expect_said out "verify, no pyxis" "unrecognized option '--container-image"
expect_said out "verify, no pyxis" "verify: node slinky-0: skipped: srun does not take --container-image: the pyxis plugin is not installed"
wait_for 10 all_idle && pass || fail "not back in service: $(sinfo -N -o '%N %T %E')"

# --- --verify-image with the stand-in srun --------------------------------------
# srun-standin: srun as pyxis extends it, for this test only (see the top).
cat >"$WORK/srun-standin" <<'EOS'
#!/bin/bash
echo "$*" >>"$STANDIN_DIR/srun.args"
node= image= prev=
for a in "$@"; do
        [ "$prev" = -w ] && node=$a
        case "$a" in --container-image=*) image=${a#--container-image=} ;; esac
        prev=$a
done
[ "${!#}" = env ] || { echo "srun-standin: the command is not env" >&2; exit 2; }
[ -n "$node" ] && [ "$image" = "$STANDIN_IMAGE" ] || { echo "srun-standin: no -w NODE or --container-image=$STANDIN_IMAGE: $*" >&2; exit 2; }
cat "$STANDIN_DIR/job-$node.env"
EOS
chmod +x "$WORK/srun-standin"
export STANDIN_DIR=$WORK STANDIN_IMAGE=$IMAGE
lease_record() { jq -c '[.lease.record.steps[] | select(.step == "verify")]' "$WORK/out"; }

section "--verify-image: the job sees the ConfigMap's values"
reset_nodes
configmap_json slinky-slurm-pre "$DESIRED_ENV" >"$WORK/cm.json"
CONFIGMAPS=$WORK/cm.json start_pods "0:True 1:False 2:True 3:True" True
printf 'PATH=/usr/bin\nNCCL_DEBUG=WARN\nAICR_TOKEN=canary-desired-7f3a\nAICR_PATH=/root/cache\n' >"$WORK/job-slinky-1.env"
: >"$WORK/srun.args"
start_controller
rollout apply --verify-image "$IMAGE" --srun "$WORK/srun-standin" --format json
expect_rc 0 "apply --verify-image, verified"
stop_controller
[ "$(jq -c '[.verify.nodes[] | [.node, .result, .not_compared]]' "$WORK/out")" = '[["slinky-1","verified",["AICR_PATH"]]]' ] &&
        pass || fail "verify report: $(jq -c .verify "$WORK/out")"
[ "$(lease_record)" = '[{"step":"verify","node":"slinky-1","result":"verified"}]' ] && pass ||
        fail "the Lease's record: $(jq -c .lease.record "$WORK/out")"
grep -qx -- "-w slinky-1 -N1 -n1 --time=10 --job-name=aicr-enroot-verify --container-image=$IMAGE env" "$WORK/srun.args" &&
        pass || fail "srun was run as: $(cat "$WORK/srun.args")"
expect_said err "verified" "verify: node slinky-1: verified: 2 key(s) as in 99-aicr-defaults.env; not compared (\${NAME}): AICR_PATH"

section "--verify-image: the job sees other values"
reset_nodes
CONFIGMAPS=$WORK/cm.json start_pods "0:True 1:True 2:False 3:True" True
printf 'NCCL_DEBUG=canary-job-91c2\nMULTI=a\nb\n' >"$WORK/job-slinky-2.env"
start_controller
rollout apply --verify-image "$IMAGE" --srun "$WORK/srun-standin"
expect_rc 3 "apply --verify-image, mismatch"
stop_controller
expect_said out "mismatch" "verify failed: node slinky-2: differ: NCCL_DEBUG; missing: AICR_TOKEN"
expect_said out "mismatch" "verify failed: the replaced pods are current, but a job on the nodes named above does not see the ConfigMap's environment"
if grep -q 'canary-' "$WORK/out" "$WORK/err"; then fail "a value was printed: $(grep canary- "$WORK/out" "$WORK/err")"; else pass; fi
[ "$(deletes)" = "slurm-worker-slinky-2 " ] && pass || fail "deleted: '$(deletes)'"

finish
