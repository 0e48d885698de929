/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which ConfigMap version the workload containers run, when the agent reads
 * its own subPath mounts instead of theirs (docs/DESIGN.md §3). The agent's
 * own mounts show the workload's files only while both resolved the same
 * version, so the agent vouches for them only when it knows, per container
 * instance (containerID), which version that container runs:
 *
 *   remembered  this agent process worked it out earlier for the same
 *               containerID;
 *   record      the agent's condition on the pod, written by an earlier agent
 *               process, says so for the same containerID ("[workload: slurmd
 *               containerd://ID runs ..VERSION]" at the end of the message);
 *   start time  the container started at or after the second in which kubelet
 *               flipped ..data to the version the ConfigMap directory shows now.
 *
 * Per file: when every workload container runs the version of the agent's own
 * mount, what the agent reads is what they read; when they all run the
 * version the ConfigMap shows now, they run exactly the ConfigMap; else the
 * file is "unverifiable" (condition Unknown), never current.
 *
 * Nothing here logs; every string that comes from the pod is bounded and
 * checked before it is kept.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* Containers of one pod taken into account; a pod with more matching ones is
 * reported as a problem rather than half checked. */
#define WORKLOAD_MAX_CONTAINERS  8u
/* A container name is a DNS label. */
#define WORKLOAD_MAX_NAME_LENGTH 63u
/* "containerd://" and 64 hex digits, with room for other runtimes. */
#define WORKLOAD_MAX_ID_LENGTH   128u
/* The record's opening and closing text in a condition message. */
#define WORKLOAD_RECORD_PREFIX   " [workload: "
#define WORKLOAD_RECORD_SUFFIX   "]"

typedef enum WorkloadSource {
        WORKLOAD_SOURCE_NONE,       /* not known */
        WORKLOAD_SOURCE_REMEMBERED, /* this agent process worked it out before */
        WORKLOAD_SOURCE_RECORD,     /* an earlier agent process's condition says so */
        WORKLOAD_SOURCE_START_TIME, /* started after kubelet wrote the current version */
        _WORKLOAD_SOURCE_MAX,
} WorkloadSource;

typedef struct WorkloadContainer {
        char *name;
        bool running;          /* state.running is set */
        char *container_id;    /* status containerID; NULL when not running */
        uint64_t started_usec; /* state.running.startedAt (whole seconds); 0 when not running */
        char *version;         /* the ConfigMap version its subPath mounts hold, NULL unknown */
        WorkloadSource source; /* how version became known */
} WorkloadContainer;

typedef struct Workload {
        WorkloadContainer *containers;
        size_t n_containers;
        /* Set when the pod does not let the agent name its workload (no
         * container mounts the files, too many do, a named one is absent):
         * one sentence, and no container is listed. */
        char *problem;
} Workload;

typedef struct WorkloadConfig {
        const char *agent_container; /* the agent's own container: never the workload */
        const char *const *names;    /* --workload-container, NULL-terminated; NULL: auto */
        const char *const *paths;    /* the running files' paths, for auto */
        size_t n_paths;
} WorkloadConfig;

Workload *workload_free(Workload *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(Workload *, workload_free);
/* A deep copy (NULL for NULL). Returns 0, -ENOMEM. */
int workload_copy(const Workload *w, Workload **ret);

/* The workload containers of a Pod object and their states. Auto mode takes
 * every container (regular, or a restartable init container) but the agent's
 * whose volumeMounts put a subPath at one of the running paths; named mode
 * takes the named ones, in that order. A pod that does not fit sets
 * (*ret)->problem; bad types anywhere are treated as absent fields.
 * Returns 0 with *ret new, -ENOMEM. */
int workload_from_pod(const json_t *pod, const WorkloadConfig *cfg, Workload **ret);

/* One container the record names. */
typedef struct WorkloadRecordEntry {
        char *name, *container_id, *version;
} WorkloadRecordEntry;

typedef struct WorkloadRecord {
        WorkloadRecordEntry *entries;
        size_t n_entries;
} WorkloadRecord;

void workload_record_done(WorkloadRecord *r);

/* Reads the record at the end of a condition message. Anything that is not a
 * well-formed record (absent, cut, a field out of bounds) yields no entries:
 * the record is evidence only when it is exactly what an agent writes.
 * Returns 0, -ENOMEM. */
int workload_record_parse(const char *message, WorkloadRecord *ret);

/* Fills in the versions of w's running containers: first from old (the same
 * containerID, remembered), then from the record, then from the start time
 * against the current version and the time kubelet made it current
 * (desired_since_usec, CLOCK_REALTIME; 0 or desired_version NULL: unknown).
 * A version once known for a containerID never changes. Returns 0, -ENOMEM. */
int workload_resolve(Workload *w, const Workload *old, const WorkloadRecord *record,
                     const char *desired_version, uint64_t desired_since_usec);

/* True when a and b list the same containers with the same IDs, start times
 * and versions (an evaluation would come out the same). */
bool workload_equal(const Workload *a, const Workload *b);

/* The record of w's known versions, WORKLOAD_RECORD_PREFIX included, or an
 * empty string when none is known. Returns 0 with *ret new, -ENOMEM. */
int workload_record_format(const Workload *w, char **ret);

typedef enum WorkloadVerdict {
        WORKLOAD_RUNS_MOUNT,   /* every workload container runs the agent's mount's version */
        WORKLOAD_RUNS_DESIRED, /* every one runs the version the ConfigMap shows now */
        WORKLOAD_UNVERIFIABLE, /* the agent cannot see what at least one of them runs */
        _WORKLOAD_VERDICT_MAX,
} WorkloadVerdict;

/* What the agent's own mount of a file (from mount_version) says about the
 * workload's. w NULL: the pod was not read yet. On WORKLOAD_UNVERIFIABLE,
 * *ret_detail is one sentence saying why (owned by the caller).
 * Returns the verdict, or -ENOMEM. */
int workload_check(const Workload *w, const char *mount_version, const char *desired_version,
                   char **ret_detail);

const char *workload_source_to_string(WorkloadSource s);

/* "2026-12-04T19:45:12Z" (a fraction of a second is accepted and dropped) to
 * CLOCK_REALTIME microseconds. Returns 0, -EINVAL. */
int workload_parse_time(const char *s, uint64_t *ret_usec);
