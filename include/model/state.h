/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the agent knows about this pod, as one value.
 * The manager owns the Report and replaces it after each evaluation; the
 * HTTP layer renders it (metrics, status JSON) and never changes it.
 * Nothing here holds a configuration value: only keys, version ids, keyed
 * content ids and states.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diff.h"
#include "file-format.h"
#include "lint.h"
#include "workload.h"

/* At most this many per-key change records are kept per file; the rest are
 * counted in FileReport.n_changes_dropped (and in a metric). */
#define REPORT_MAX_KEY_CHANGES 64u

typedef enum FileState {
        FILE_CURRENT,    /* byte for byte the ConfigMap's */
        FILE_COSMETIC,   /* bytes differ, enroot's settings do not */
        FILE_DRIFTED,    /* enroot's settings differ from the ConfigMap's */
        FILE_MISSING,    /* the ConfigMap lacks the key, or the running file does not exist */
        FILE_UNREADABLE, /* a side exists but cannot be read (permission, type, size) */
        FILE_INVALID, /* the ConfigMap's version has lint errors: enroot would refuse or misread it */
        FILE_UNVERIFIABLE, /* the agent's own mount may not be the workload's (workload.h) */
        FILE_UNKNOWN,      /* not evaluated yet */
        _FILE_STATE_MAX,
        _FILE_STATE_INVALID = -1,
} FileState;

typedef enum PodState {
        POD_CURRENT, /* every file current or cosmetic */
        POD_DRIFTED, /* some file drifted */
        POD_UNKNOWN, /* some file missing, unreadable, invalid or not evaluated, none drifted */
        _POD_STATE_MAX,
} PodState;

typedef enum Side {
        SIDE_DESIRED, /* the ConfigMap, through the whole-directory projection */
        SIDE_RUNNING, /* what the workload container reads */
        _SIDE_MAX,
} Side;

typedef struct KeyChange {
        char *key;
        DiffChange change;
        bool effective;
} KeyChange;

typedef struct FileReport {
        char *key;          /* ConfigMap key, e.g. "enroot.conf" */
        char *running_path; /* as configured, e.g. "/etc/enroot/enroot.conf" */
        FileFormat format;  /* what judged it; a raw file is only current or drifted
                             * once both sides are read, and has no key changes or lint */
        FileState state;
        char *detail;         /* one sentence for missing, unreadable, invalid; else NULL */
        bool superseded;      /* the running mount comes from a version kubelet has replaced */
        char *mount_version;  /* version id in the running mount's root, or NULL */
        bool read[_SIDE_MAX]; /* that side was read */
        /* The ConfigMap version directory each side's bytes came from (the
         * desired side's ..data target; the running side's mount root), NULL
         * when not read or not known. */
        char *version[_SIDE_MAX];
        /* document_content_id() of each side: "" when not read or no key. */
        char content_id[_SIDE_MAX][CONTENT_ID_HEX + 1];
        size_t lint[_SIDE_MAX][_SEVERITY_MAX];
        KeyChange *changes; /* sorted by key, at most REPORT_MAX_KEY_CHANGES */
        size_t n_changes;
        size_t n_changes_dropped;
        size_t n_drifted_keys;     /* effective changes, dropped ones included */
        uint64_t state_since_usec; /* CLOCK_REALTIME when the state last changed */
        uint64_t drift_since_usec; /* when it became drifted; 0 when not drifted */
} FileReport;

typedef struct Report {
        char *desired_version; /* the ..data target now, NULL when none or unknown */
        PodState pod;
        FileReport *files;
        size_t n_files;
        bool evaluated;             /* a full evaluation has completed */
        bool observable[_SIDE_MAX]; /* the side could be looked at (directory, process) */
        uint64_t evaluated_usec;    /* CLOCK_REALTIME of the last evaluation */
        /* The workload containers and the versions they run, when the agent
         * reads its own subPath mounts and keeps a pod condition; else NULL.
         * workload_checked says the files were checked against it. */
        Workload *workload;
        bool workload_checked;
} Report;

Report *report_free(Report *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(Report *, report_free);
void file_report_done(FileReport *f);

/* The pod's state from its files' states. */
PodState report_pod_state(const Report *r);

const char *file_state_to_string(FileState s);
const char *pod_state_to_string(PodState s);
const char *side_to_string(Side s);
