/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rollout's durable record and lock, without I/O: a
 * coordination.k8s.io/v1 Lease in the Slurm namespace (docs/DESIGN.md §4).
 * spec.holderIdentity names the process that runs the rollout, renewTime and
 * leaseDurationSeconds say until when it holds it; the annotation
 * ROLLOUT_LEASE_ANNOTATION holds the record, one JSON object:
 *
 *   {"id": "20261202T180512Z", "state": "running" | "done" | "aborted",
 *    "steps": [{"step": "drain", "node": N},
 *              {"step": "delete", "pod": P, "uid": U, "node": N, "role": R,
 *               "ready_before": K},
 *              {"step": "ready", "pod": P, "uid": U},
 *              {"step": "resume", "node": N},
 *              {"step": "verify", "node": N, "result": R},
 *              {"step": "notify", "time": T, "grace_seconds": G, "pods": [P, ...]}, ...]}
 *
 * A "notify" step is written before the login pods' users are told (T, a
 * MicroTime) that pods P go G seconds later: a run that continues the
 * rollout tells nobody twice and waits only what is left of G.
 * Each step is added before it is taken (write-ahead): a "delete" without
 * its "ready" is a pod this rollout deleted whose replacement was not yet
 * seen Ready, whatever the Slurm reasons say since (Slinky's preStop hook
 * overwrites them). A "verify" step records what --verify-image found on a
 * replaced node once the nodes are back ("verified", "mismatch", "skipped",
 * "failed"); it changes nothing a later run does. Never logs.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

#define ROLLOUT_LEASE_NAME        "aicr-enroot-rollout"
#define ROLLOUT_LEASE_ANNOTATION  "aicr-enroot-agent/rollout"
/* The default leaseDurationSeconds; the holder renews at a third of it. */
#define ROLLOUT_LEASE_DEFAULT_SEC 30
#define ROLLOUT_LEASE_MAX_SEC     3600
/* The record is kept well under the API server's 256 KiB for all of an
 * object's annotations together; a step past either limit is refused. */
#define ROLLOUT_LEASE_MAX_STEPS   1024u
#define ROLLOUT_LEASE_MAX_BYTES   (192u * 1024u)
#define ROLLOUT_LEASE_MAX_HOLDER  253u
/* The longest login grace (--login-grace) a record may hold: a day. */
#define ROLLOUT_NOTICE_MAX_SEC    86400

typedef enum LeaseOwner {
        LEASE_FREE,    /* no holder: released, or never held */
        LEASE_OURS,    /* held by the identity asked about */
        LEASE_HELD,    /* held by another, renewed within its duration */
        LEASE_EXPIRED, /* held by another that stopped renewing it */
        _LEASE_OWNER_MAX,
} LeaseOwner;

const char *lease_owner_to_string(LeaseOwner o);

/* A Lease as read. */
typedef struct RolloutLease {
        char *holder;           /* spec.holderIdentity; NULL: none */
        int64_t duration_sec;   /* spec.leaseDurationSeconds; 0: none */
        int64_t renew_usec;     /* spec.renewTime (else acquireTime), microseconds since the
                                 * epoch; 0: neither */
        char *renew_time;       /* spec.renewTime as written, or NULL */
        char *acquire_time;     /* spec.acquireTime as written, or NULL */
        char *resource_version; /* metadata.resourceVersion */
        json_t *record;         /* the record; NULL when the annotation is absent */
} RolloutLease;

void rollout_lease_done(RolloutLease *l);

/* Reads a Lease object. The record is checked: an annotation that is not a
 * record (not JSON, no id, a step without its fields, over the limits)
 * fails with -EBADMSG and *ret_error (static) saying what. Returns 0,
 * -EBADMSG, -ENOMEM. */
int rollout_lease_parse(const json_t *lease, RolloutLease *ret, const char **ret_error);

/* Whose the Lease is for identity me at now_usec (CLOCK_REALTIME): expired
 * only after renewTime + leaseDurationSeconds, to the microsecond. */
LeaseOwner rollout_lease_owner(const RolloutLease *l, const char *me, int64_t now_usec);

/* "2026-12-02T18:05:12.000000Z", a Kubernetes MicroTime. */
#define ROLLOUT_MICROTIME_BYTES 28u
void rollout_microtime_format(uint64_t realtime_usec, char buf[static ROLLOUT_MICROTIME_BYTES]);

/* The Lease object to create (resource_version NULL) or to replace (PUT,
 * with the resourceVersion read, so a writer in between gets 409): held by
 * holder (NULL: released), renewed at now_usec, acquired at acquire_time
 * (NULL: now). Returns a new reference, or NULL when out of memory. */
json_t *rollout_lease_object(const char *namespace, const char *holder, int64_t duration_sec,
                             const char *acquire_time, uint64_t now_usec,
                             const char *resource_version, const json_t *record);

/* A new record for rollout id, "running", no steps. NULL when out of memory. */
json_t *rollout_record_new(const char *id);
/* The record's id and state, or NULL. Borrowed. */
const char *rollout_record_id(const json_t *record);
const char *rollout_record_state(const json_t *record);
/* True when the record is of a rollout not finished (state "running"). */
bool rollout_record_running(const json_t *record);
/* Appends a step (steals step). Returns 0, -E2BIG past the limits (the record
 * is unchanged), -ENOMEM. */
int rollout_record_add(json_t *record, json_t *step);
/* Sets the state. Returns 0, -ENOMEM. */
int rollout_record_set_state(json_t *record, const char *state);
/* True when the record has a step named step whose field key is value, and
 * (when uid is not NULL) whose uid is uid. */
bool rollout_record_has(const json_t *record, const char *step, const char *key, const char *value,
                        const char *uid);
/* The login notice the record holds ("notify" steps): false when none. Else
 * *ret_time_usec (may be NULL) is when the first was given and
 * *ret_deadline_usec (may be NULL) the latest time + grace_seconds among
 * them: when the users were told their login pods go. */
bool rollout_record_notice(const json_t *record, int64_t *ret_time_usec,
                           int64_t *ret_deadline_usec);
/* True when a "notify" step of the record names pod. */
bool rollout_record_noticed(const json_t *record, const char *pod);
/* The "delete" steps with no "ready" after them for the same uid: pods this
 * rollout deleted whose replacement it has not seen. Returns a new array of
 * borrowed-then-copied step objects (a new reference), or NULL when out of
 * memory. */
json_t *rollout_record_pending(const json_t *record);
