/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keeps the agent's condition on its own pod true (docs/DESIGN.md §4, §6).
 *
 * It reads the pod once, then watches it (a field-selected watch that
 * resumes from the last resourceVersion and reads the pod again after 410
 * Gone), and writes the condition with a UID-conditioned strategic merge
 * patch only when the pod says something else: steady state costs no
 * writes. When another writer drops or changes the condition, the next
 * watch event re-asserts it at once (with a backoff if a writer keeps
 * undoing it). Writes are rate-limited (PODSYNC_PATCH_*). Each transition
 * of the status becomes an Event on the pod, rate-limited.
 *
 * Failures, by answer: 401 re-reads the token and retries once; 403 logs the
 * missing RBAC rule once and retries slowly; 404, a DELETED event or another
 * UID under the pod's name mean the pod is gone, and nothing is written
 * again; 409 and 422 are logged and that condition is not retried until it
 * changes; 429 waits for Retry-After (a new condition waits with it); 5xx
 * and transport failures back off exponentially with jitter. Logs as an
 * event-callback module: once per change of trouble, not once per retry.
 */
#pragma once

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "kube.h"
#include "state.h"

/* Retry delays: transport failures and 5xx back off from the base to the cap;
 * 403 (a missing RBAC rule is fixed by a human) retries at the slow pace. */
#define PODSYNC_BACKOFF_BASE_USEC    (1u * 1000000u)
#define PODSYNC_BACKOFF_CAP_USEC     (120u * 1000000u)
#define PODSYNC_SLOW_RETRY_USEC      (300u * 1000000u)
#define PODSYNC_REQUEST_TIMEOUT_USEC (10u * 1000000u)
/* A watch asks the server to end it after a random time in this range (as
 * client-go does), so a fleet's watches do not all reconnect at once. */
#define PODSYNC_WATCH_MIN_SECONDS    300u
#define PODSYNC_WATCH_MAX_SECONDS    600u
/* Condition writes: at most PODSYNC_PATCH_BURST at once, then one per
 * interval; a write that waits sends what the agent says when its turn comes.
 * Far above the pace of any real update (kubelet updates a volume about once
 * a minute; the latency benchmark makes 33 a second), it bounds what a storm
 * of updates (a writer flipping ..data without pause) costs the API server:
 * at most 50 writes a second instead of one per round trip. */
#define PODSYNC_PATCH_BURST          10u
#define PODSYNC_PATCH_INTERVAL_USEC  (20u * 1000u)
/* Events: at most PODSYNC_EVENT_BURST at once, then one per interval; a
 * transition that waits is merged with the ones after it. */
#define PODSYNC_EVENT_BURST          3u
#define PODSYNC_EVENT_INTERVAL_USEC  (30u * 1000000u)
/* A writer that removes the condition again within this long of the agent's
 * write counts as a fight; after PODSYNC_FIGHT_FREE fights in a row, the
 * agent backs off between re-assertions. */
#define PODSYNC_FIGHT_WINDOW_USEC    (10u * 1000000u)
#define PODSYNC_FIGHT_FREE           3u

typedef struct PodSyncConfig {
        const char *pod_name;
        const char *pod_namespace;
        const char *pod_uid;        /* NULL: taken from the first read of the pod */
        const char *condition_type; /* validated by the caller */
        bool counts_only;           /* --condition-detail counts (condition.h) */
        const char *component;      /* the Events' source.component */
        /* Called with each new state of the pod (the first read, then every
         * watch event that is not older), before the condition is compared
         * and written: a callback that calls podsync_update() has its
         * condition sent with this turn's. pod is borrowed for the call. */
        void (*on_pod)(const json_t *pod, void *userdata);
        void *userdata;
} PodSyncConfig;

typedef struct PodSync PodSync;

/* Takes ownership of client (freed with the PodSync, also on failure).
 * Reads the pod on the loop's next turn. Returns 0 with *ret new, or -errno. */
int podsync_new(sd_event *e, KubeClient *client, const PodSyncConfig *cfg, PodSync **ret);
PodSync *podsync_free(PodSync *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(PodSync *, podsync_free);

/* The agent's view changed (or not: then nothing happens). r is borrowed
 * for the call only. The condition it asks for counts at once (podsync_status()
 * is no longer synced); the PATCH, and the Event, are built and sent on the
 * loop's next turn. Returns 0 or -ENOMEM. */
int podsync_update(PodSync *s, const Report *r);

/* SIGHUP: every waiting retry runs now, and a condition the server refused
 * is tried again (after the operator fixed RBAC, say). */
void podsync_retry_now(PodSync *s);

typedef struct PodSyncStatus {
        bool synced;  /* the pod says what the agent says */
        bool stopped; /* the pod is gone: no more writes */
        const KubeStats *requests;
} PodSyncStatus;

void podsync_status(const PodSync *s, PodSyncStatus *ret);
