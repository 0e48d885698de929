/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Prometheus text exposition format 0.0.4 of the agent's
 * state, rendered from the manager's Report, the agent's counters and the
 * process statistics (a plain ProcessStats, which the caller reads:
 * process-stats.h). The /status JSON document is status-json.h's.
 *
 * Rendering borrows everything it is given and never sees a configuration
 * value: only ConfigMap keys, setting names, version ids, keyed content ids
 * (never a plain hash of a file), states and counts (the Report holds nothing
 * else).
 *
 * Label values and JSON strings that come from file contents (setting names)
 * are made safe first (metrics_safe_string()): invalid UTF-8 becomes U+FFFD,
 * anything longer than METRICS_MAX_LABEL_BYTES is cut, and a value changed
 * either way gets "...#" and 16 hex digits of a hash of the original
 * appended, so two different names never collapse into one series.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "kubeproto.h"
#include "state.h"
#include "strbuf.h"

/* Cap on one rendering (metrics or status). The worst case the rest of the
 * program allows (OPTIONS_MAX_FILES files, REPORT_MAX_KEY_CHANGES series each,
 * label values at METRICS_MAX_LABEL_BYTES) renders to well under 1 MiB. */
#define METRICS_MAX_BYTES       (4u * 1024u * 1024u)

/* Longest label value (and status string) taken from file contents, in bytes. */
#define METRICS_MAX_LABEL_BYTES 256u

/* The Content-Type of metrics_render()'s output. */
#define METRICS_CONTENT_TYPE    "text/plain; version=0.0.4; charset=utf-8"

/* What made the manager evaluate (aicr_enroot_agent_evaluations_total{trigger}). */
typedef enum EvalTrigger {
        TRIGGER_STARTUP,  /* the first evaluation */
        TRIGGER_INOTIFY,  /* an inotify event on the desired directory */
        TRIGGER_POLL,     /* the polling fallback saw a change */
        TRIGGER_RESYNC,   /* the periodic full re-verification */
        TRIGGER_SIGNAL,   /* SIGHUP */
        TRIGGER_PROCESS,  /* the target process appeared, restarted or vanished */
        TRIGGER_OVERFLOW, /* IN_Q_OVERFLOW: events were lost, look again */
        TRIGGER_POD,      /* the workload containers changed (a restart, a new ID) */
        _TRIGGER_MAX,
        _TRIGGER_INVALID = -1,
} EvalTrigger;

const char *eval_trigger_to_string(EvalTrigger t);
EvalTrigger eval_trigger_from_string(const char *s);

/* The usual process_* metrics, as client libraries and node_exporter name them. */
typedef struct ProcessStats {
        uint64_t cpu_usec;          /* user + system CPU time */
        uint64_t resident_bytes;    /* RSS */
        uint64_t virtual_bytes;     /* VSZ */
        uint64_t virtual_max_bytes; /* RLIMIT_AS (UINT64_MAX when unlimited) */
        uint64_t open_fds;          /* open descriptors, not counting the one used to count them */
        uint64_t max_fds;           /* RLIMIT_NOFILE soft limit */
        uint64_t start_time_usec;   /* CLOCK_REALTIME when the process started */
} ProcessStats;

/* The agent's own counters, owned by the manager and copied per request. */
typedef struct MetricsCounters {
        uint64_t evaluations[_TRIGGER_MAX];
        const char *watch_mode; /* borrowed: "inotify" or "poll"; NULL while no watch runs */
        const char *version;    /* borrowed, e.g. PACKAGE_VERSION; NULL renders "unknown" */
        bool has_process;       /* process is filled (the statistics were read) */
        ProcessStats process;
        /* The pod condition; kube NULL when it is not kept (--kube off). */
        const KubeStats *kube;  /* borrowed */
        bool condition_synced;  /* the pod says what the agent says */
        bool condition_stopped; /* the pod is gone: no more writes */
} MetricsCounters;

/* The watch modes aicr_enroot_agent_watch_mode{mode} always lists (0 or 1). */
extern const char *const metrics_watch_modes[]; /* NULL-terminated */

/* Appends the whole exposition to out: HELP and TYPE for every family, then
 * its samples. r may be NULL (nothing evaluated yet: rendered like an empty,
 * unevaluated Report). c may be NULL (no agent or process metrics).
 * On failure out may hold a partial rendering: discard it.
 * Returns 0, -ENOBUFS (out's cap crossed), -ENOMEM. */
int metrics_render(StrBuf *out, const Report *r, const MetricsCounters *c);

/* The Report's part of the exposition (every aicr_enroot_config_* family and
 * aicr_enroot_agent_last_evaluation_timestamp_seconds), rendered once per
 * Report instead of once per scrape: it is most of the text and most of the
 * formatting cost, and it changes only when the manager publishes a new
 * Report. The owner keeps one per server; METRICS_CACHE_INIT, then
 * metrics_cache_done(). */
typedef struct MetricsCache {
        StrBuf text;             /* the Report's part, as metrics_render() writes it */
        uintptr_t report_id;     /* the Report it was rendered from (compared, never read) */
        uint64_t evaluated_usec; /* that Report's evaluated_usec */
        uint64_t generation;     /* the caller's generation when it was rendered */
        bool valid;
} MetricsCache;

#define METRICS_CACHE_INIT ((MetricsCache){.text = STRBUF_INIT(METRICS_MAX_BYTES)})

/* Frees the cached text; the cache can be reused. */
void metrics_cache_done(MetricsCache *cache);

/* Appends exactly what metrics_render(out, r, c) appends, taking the Report's
 * part from cache when it was rendered from the same Report: the same address,
 * evaluated_usec and generation. A Report must not change while it is
 * published; a new one may reuse a freed one's address, so generation must
 * change whenever a new Report may have been published since the last call
 * (the agent passes its evaluation count: the manager counts every evaluation
 * before it publishes its Report). Otherwise renders it and keeps it.
 * r and c may be NULL as for metrics_render(). On failure the cache is
 * emptied and out may hold a partial rendering: discard it.
 * Returns 0, -ENOBUFS, -ENOMEM. */
int metrics_render_cached(StrBuf *out, MetricsCache *cache, const Report *r, uint64_t generation,
                          const MetricsCounters *c);

/* Replaces out's contents with s made valid UTF-8 and at most max_bytes long
 * (plus the "...#HASH" tag when anything was changed); out's data is non-NULL
 * even for "". Returns 0, -ENOBUFS (out's cap crossed), -ENOMEM. */
int metrics_safe_string(StrBuf *out, const char *s, size_t max_bytes);

/* A KubeStats series' code as a label value: "200", "error" (no answer) or
 * "other" (past KUBE_MAX_STAT_SERIES). Returns buf or a static string. */
const char *metrics_kube_code(long code, char buf[static 24]);
