/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One file's state from what was read on both sides.
 * The manager gathers the inputs (volume, running view) and keeps the
 * previous report so that "since" timestamps survive unchanged states.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "document.h"
#include "state.h"
#include "strbuf.h"

/* How long a read of the running view may take before the files it has
 * not read are reported unreadable (running-worker.h): with -ETIMEDOUT for
 * the one it waits for, -EINPROGRESS for the others. Reading a few small
 * files takes well under a millisecond; a file system that takes seconds is
 * hung, or is not where a configuration file belongs. */
#define RUNNING_READ_DEADLINE_SEC 5

/* One side of one file as parsed at the last evaluation, kept by the owner
 * between evaluations: a side whose bytes are the same as last time is not
 * parsed, hashed and linted again. Most evaluations change one side of one
 * file (a ConfigMap update) or nothing (a resync); the parse is most of an
 * evaluation's own CPU. Documents larger than EVAL_CACHE_MAX_BYTES are not
 * kept, so the cache never holds more than a few copies of a small file.
 * Zero-initialise; release with eval_cache_done(). */
#define EVAL_CACHE_MAX_BYTES      (64u * 1024u)

typedef struct EvalCache {
        char *data; /* the bytes parsed, len of them; NULL: empty */
        size_t len;
        DocType type;
        Document *doc;
        size_t lint[_SEVERITY_MAX];
        unsigned hits, misses; /* tests, debugging */
} EvalCache;

void eval_cache_done(EvalCache *c);

typedef struct EvalSide {
        int error;        /* 0 when read; else -errno (-ENOENT: absent) */
        const char *data; /* borrowed, len bytes */
        size_t len;
        const char
                *what; /* how to name this side in messages, e.g. "ConfigMap key \"enroot.conf\"" */
        const char *version; /* the ConfigMap version directory the bytes came from, or NULL */
} EvalSide;

typedef struct EvalInput {
        const char *key;          /* ConfigMap key */
        const char *running_path; /* path in the workload container */
        FileFormat format;        /* raw: the bytes are compared, nothing is parsed */
        DocType type;             /* the document type of an enroot format */
        EvalSide side[_SIDE_MAX];
        const char *desired_version; /* the ..data target now, or NULL */
        /* what the running side's mount says, when known */
        bool nlink_known;
        unsigned long nlink;
        const char *mount_version; /* version id in the running mount's root, or NULL */
        bool mount_deleted;        /* the mount root ends in //deleted */
        /* Set when the running side cannot be looked at at all (no target
         * process, no permission): the file is unknown, and this says why. */
        const char *running_unobservable;
        /* Set when the running side was read from the agent's own subPath
         * mount and that may not be what the workload runs (workload.h): the
         * file is unverifiable, and this says why. */
        const char *unverifiable;
        /* The key of the content ids in the report (document.h); NULL: none
         * (FileReport.content_id stays ""). Borrowed. */
        const ContentKey *content_key;
        /* Optional, one per side: see EvalCache. NULL: parse every time. */
        EvalCache *cache[_SIDE_MAX];
} EvalInput;

/* Evaluates one file. prev is this file's previous report (NULL the first
 * time): its since-timestamps carry over when the state is unchanged.
 * On success *ret is filled (owned by the caller: file_report_done()).
 * Returns 0, -ENOMEM, or -EIO when libcrypto cannot compute a content id. */
int evaluate_file(const EvalInput *in, const FileReport *prev, uint64_t now_usec, FileReport *ret);

/* The DocType an enroot format parses as (enroot-env: DOC_ENV, else DOC_CONF). */
DocType evaluate_doc_type(FileFormat format);

/* Writes a one-line description of a state change, never values, e.g.
 * "enroot.conf: drifted (1 changed: ENROOT_MOUNT_HOME; 1 added: ENROOT_X)".
 * Returns 0 or -ENOMEM/-ENOBUFS. */
int evaluate_describe(const FileReport *f, StrBuf *out);
