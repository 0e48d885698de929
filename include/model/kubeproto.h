/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the agent reads from the Kubernetes API server. A pod
 * (its UID, resourceVersion and conditions), one line of a watch stream, a
 * Status object, a Retry-After header, and the backoff schedule between
 * retries. Everything here is outside input: bounded, validated, and every
 * error says what was wrong without quoting more than a short prefix.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One API response or one watch event, in bytes. etcd refuses objects over
 * 1.5 MiB, and a watch event is one object plus a few bytes of framing. */
#define KUBE_MAX_OBJECT_BYTES     (4u * 1024u * 1024u)
/* A Status message or any other server text quoted in a log line. */
#define KUBE_MAX_QUOTE_BYTES      256u
/* A UID or resourceVersion longer than this is not one. */
#define KUBE_MAX_ID_BYTES         128u
/* Retry-After is honoured up to this; a larger value is taken as this. */
#define KUBE_MAX_RETRY_AFTER_USEC (10u * 60u * 1000000u)

/* Distinct (verb, code) pairs counted; later pairs count as code "other". */
#define KUBE_MAX_STAT_SERIES      64u

typedef enum KubeVerb {
        KUBE_VERB_GET,
        KUBE_VERB_WATCH,
        KUBE_VERB_PATCH,
        KUBE_VERB_CREATE,
        KUBE_VERB_LIST,
        KUBE_VERB_DELETE,
        _KUBE_VERB_MAX,
} KubeVerb;

const char *kube_verb_to_string(KubeVerb v);

/* Counts of finished requests, by verb and HTTP code (0: transport failure,
 * -1: the "other" bucket once KUBE_MAX_STAT_SERIES pairs exist). */
typedef struct KubeStatSeries {
        KubeVerb verb;
        long code;
        uint64_t count;
} KubeStatSeries;

typedef struct KubeStats {
        KubeStatSeries series[KUBE_MAX_STAT_SERIES + 1];
        size_t n_series;
        uint64_t last_success_usec; /* CLOCK_REALTIME of the last 2xx answer, 0 if none */
} KubeStats;

typedef struct KubePod {
        char *uid;              /* metadata.uid */
        char *resource_version; /* metadata.resourceVersion, NULL when absent */
        json_t *conditions;     /* status.conditions: an array (empty when absent), owned */
        json_t *object;         /* the whole Pod, a reference: only until it was looked at */
} KubePod;

/* Reads the fields the agent needs from a Pod object. Returns 0, -EBADMSG
 * (not an object, no metadata.uid, conditions not an array; *ret_error says
 * which, when ret_error is not NULL), -ENOMEM. */
int kube_pod_from_json(json_t *pod, KubePod *ret, const char **ret_error);
/* Same from response bytes. */
int kube_pod_parse(const char *data, size_t len, KubePod *ret, const char **ret_error);
void kube_pod_done(KubePod *p);

typedef enum KubeEventType {
        KUBE_EVENT_ADDED,
        KUBE_EVENT_MODIFIED,
        KUBE_EVENT_DELETED,
        KUBE_EVENT_BOOKMARK,
        KUBE_EVENT_ERROR,
        _KUBE_EVENT_TYPE_MAX,
        _KUBE_EVENT_TYPE_INVALID = -1,
} KubeEventType;

typedef struct KubeWatchEvent {
        KubeEventType type;
        json_t *object; /* owned: a Pod, or a Status for ERROR */
} KubeWatchEvent;

/* Parses one line of a watch stream ({"type": T, "object": {...}}).
 * Returns 0, -EBADMSG (with *ret_error as above), -ENOMEM. */
int kube_watch_event_parse(const char *line, size_t len, KubeWatchEvent *ret,
                           const char **ret_error);
void kube_watch_event_done(KubeWatchEvent *e);
const char *kube_event_type_to_string(KubeEventType t);

typedef struct KubeStatus {
        long code;                          /* Status.code, 0 when absent */
        char reason[64];                    /* Status.reason ("Conflict"), "" when absent */
        char message[KUBE_MAX_QUOTE_BYTES]; /* Status.message, cleaned for a log line */
} KubeStatus;

/* Reads a Status object (an error response body, or a watch ERROR event's
 * object). Anything else, including no body at all, gives an empty Status:
 * the HTTP code is then all there is to go on; kube_status_parse() of a body
 * that is not JSON (a proxy's HTML error page) gives one whose message is
 * "not a Kubernetes Status: " and the body's start on one line, cleaned as
 * any message. Never fails. */
void kube_status_from_json(const json_t *o, KubeStatus *ret);
void kube_status_parse(const char *data, size_t len, KubeStatus *ret);

/* True when a 409 says the UID precondition failed: the pod of that name is
 * not the one the agent runs in any more. */
bool kube_status_is_uid_conflict(const KubeStatus *s);

/* Copies at most size-1 bytes of s into buf for a log line: control bytes
 * and invalid UTF-8 become '?', a cut string ends in "...". */
void kube_quote(const char *s, size_t len, char *buf, size_t size);

/* Parses a Retry-After value in delay-seconds (what the API server sends).
 * Returns 0 with *ret_usec (capped at KUBE_MAX_RETRY_AFTER_USEC), or -EINVAL
 * (an HTTP date or garbage: the caller backs off as for any error). */
int kube_parse_retry_after(const char *value, uint64_t *ret_usec);

/* The delay before retry number attempt (0 for the first retry): base
 * doubling per attempt up to cap, then "equal jitter": half of it fixed and
 * half drawn from random, so a fleet that failed together does not retry
 * together. */
uint64_t kube_backoff_usec(unsigned attempt, uint64_t base_usec, uint64_t cap_usec,
                           uint64_t random);

/* Percent-encodes s for a URL path segment or query value into buf.
 * Returns 0, or -ENOBUFS when it does not fit. */
int kube_url_escape(const char *s, char *buf, size_t size);
