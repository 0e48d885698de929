/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod condition the agent keeps on its own pod
 * (docs/DESIGN.md §4 and §6): what it should say, whether the pod already says it,
 * and the strategic merge patch and Event that make it so. Only keys and
 * states ever reach a message, never configuration values.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "condition-type.h"
#include "state.h"
#include "workload.h"

/* A condition message is one bounded sentence; keys past the bound are counted. */
#define CONDITION_MAX_MESSAGE_BYTES 1024u
/* The workload record at its end takes at most this much of it; a longer one
 * (many containers) is left out, and a restarted agent cannot use it. */
#define CONDITION_MAX_RECORD_BYTES  480u

typedef enum ConditionStatus {
        CONDITION_TRUE,
        CONDITION_FALSE,
        CONDITION_UNKNOWN,
        _CONDITION_STATUS_MAX,
} ConditionStatus;

typedef struct Condition {
        char *type;
        ConditionStatus status;
        const char *reason; /* static, one CamelCase word */
        char *message;
} Condition;

/* The condition a report calls for: True when every file is current or
 * cosmetic (a superseded mount with equal content stays True and is named),
 * False when any file drifted, Unknown when the agent cannot tell.
 * r may be NULL (nothing evaluated yet: Unknown). Returns 0 or -ENOMEM. */
int condition_from_report(const Report *r, const char *type, Condition *ret);
/* The same; with counts_only (--condition-detail counts) the message names
 * no ConfigMap key, setting or path, only how many files are in each state
 * and how many mounts are superseded (a Secret's key names can say what it
 * holds, and a pod's conditions and Events are read far more widely). */
int condition_from_report_detail(const Report *r, const char *type, bool counts_only,
                                 Condition *ret);
void condition_done(Condition *c);

/* The pod's condition of c's type in a JSON array of conditions
 * (pod.status.conditions), or NULL (borrowed). */
const json_t *condition_find(const json_t *conditions, const char *type);

/* True when the pod already says exactly what c says (type, status, reason,
 * message): then nothing is written. */
bool condition_matches(const json_t *conditions, const Condition *c);

/* The strategic merge patch for PATCH pods/NAME/status: conditions merge by
 * type, so kubelet's and Slinky's stay untouched. metadata.uid makes the
 * write conditional on the pod being the one the agent runs in (a replacement
 * pod with the same name gets 409, not a stale condition).
 * lastTransitionTime is kept from the pod's current condition when the
 * status did not change, else it is now. Returns a new reference or NULL. */
json_t *condition_patch(const Condition *c, const char *uid, const json_t *conditions,
                        uint64_t now_usec);

/* A core/v1 Event on the pod for a transition to c (Normal when True,
 * Warning otherwise), named NAME.<hex now> as kubectl-made events are.
 * Returns a new reference or NULL. */
json_t *condition_event(const Condition *c, const char *pod_name, const char *pod_namespace,
                        const char *pod_uid, const char *component, uint64_t now_usec);

const char *condition_status_to_string(ConditionStatus s);

/* RFC 3339 UTC with seconds, as Kubernetes writes times: "2026-12-02T14:00:00Z". */
void condition_format_time(uint64_t usec, char buf[static 32]);
