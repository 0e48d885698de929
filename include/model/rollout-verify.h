/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the rollout checks of the enroot ConfigMap and of a job's environment,
 * without I/O (docs/OPERATIONS.md, "Roll out a change").
 *
 * The ConfigMap: AICR's Helm release slinky-slurm-pre owns it, and the pods
 * of slinky-slurm mount it; a pod recreated while it is missing, or owned by
 * another release that may prune it, cannot start. Helm records the owner in
 * the annotation ROLLOUT_HELM_RELEASE_ANNOTATION.
 *
 * A job's environment: what `env` prints in a container started by pyxis on
 * a replaced node, against the ConfigMap's ROLLOUT_ENV_KEY as enroot reads
 * it (document.h, docs/DESIGN.md §5). Values are compared by their SHA-256
 * and never kept, returned or printed: the results name keys only. Never
 * logs.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

#define ROLLOUT_DEFAULT_CONFIGMAP       "slinky-slurm-enroot-config"
#define ROLLOUT_DEFAULT_RELEASE         "slinky-slurm-pre"
#define ROLLOUT_HELM_RELEASE_ANNOTATION "meta.helm.sh/release-name"
/* The environ.d file of the ConfigMap whose values a job must see. */
#define ROLLOUT_ENV_KEY                 "99-aicr-defaults.env"
/* What `env` may print; larger output is refused by the caller's cap. */
#define ROLLOUT_VERIFY_MAX_ENV_BYTES    (1024u * 1024u)

/* The release that owns the ConfigMap cm (a parsed object): 0 when its
 * annotation ROLLOUT_HELM_RELEASE_ANNOTATION is release; -ENOENT when it has
 * none (or it is not a string); -EPERM when it names another, *ret_found
 * (borrowed from cm) that name. */
int rollout_configmap_owner(const json_t *cm, const char *release, const char **ret_found);

/* The keys of one comparison, each list sorted as the file's settings are. */
typedef struct RolloutEnvCheck {
        char **differ; /* the job sees another value */
        size_t n_differ;
        char **missing; /* the job does not have the key */
        size_t n_missing;
        char **dynamic; /* the value depends on enroot's environment (${NAME}): not compared */
        size_t n_dynamic;
        size_t n_same;
} RolloutEnvCheck;

void rollout_env_check_done(RolloutEnvCheck *c);

/* Compares the effective settings of desired (an environ.d file, len bytes)
 * with the job's environment as `env` printed it (NAME=VALUE lines; a line
 * that does not start NAME= continues the value before it, as a value with a
 * newline prints). Returns 0 with *ret filled (rollout_env_check_done()),
 * -EFBIG (an input over its cap), -EIO (libcrypto failed), -ENOMEM. */
int rollout_env_verify(const char *desired, size_t desired_len, const char *job_env, size_t job_len,
                       RolloutEnvCheck *ret);
