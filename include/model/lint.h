/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lint rules over a parsed Document. Each finding names the
 * line, a stable rule id, and says what enroot does and what to do instead.
 * Messages never contain values (they may be secrets), only keys.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "document.h"

/* A finding quotes at most this much of a key, and its message is cut at
 * LINT_MAX_MESSAGE_BYTES ("..." marks the cut): a 1 MiB key is not a 1 MiB line. */
#define LINT_MAX_KEY_BYTES       256u
#define LINT_MAX_NAMED_KEY_BYTES 64u /* longer words are never named in a message */
#define LINT_MAX_MESSAGE_BYTES   1024u

/* Extra job-scoped keys an option may add beyond the built-in list. */
#define LINT_MAX_EXTRA_JOB_KEYS  256u

typedef enum Severity {
        SEVERITY_ERROR,
        SEVERITY_WARNING,
        _SEVERITY_MAX,
} Severity;

typedef struct Finding {
        unsigned line; /* 1-based; 0 for the whole file */
        Severity severity;
        const char *id; /* static rule id, e.g. "unknown-key" */
        char *key;      /* the key concerned, or NULL */
        char *message;
} Finding;

typedef struct Lint {
        Finding *findings; /* ordered by line, then rule */
        size_t n_findings;
        size_t n_errors;
        size_t n_warnings;
} Lint;

typedef struct LintOptions {
        /* NULL-terminated extra keys that belong to a job, not a cluster default. */
        const char *const *job_scoped_extra;
} LintOptions;

/* Built-in job-scoped keys (docs/DESIGN.md §5), NULL-terminated. */
extern const char *const lint_job_scoped_keys[];

/* Lints a parsed document. opts may be NULL. Returns 0 with *ret new, or -ENOMEM. */
int lint_document(const Document *d, const LintOptions *opts, Lint **ret);

/* A file that could not be parsed at all (over the size cap): one finding. */
int lint_oversized(Lint **ret);

Lint *lint_free(Lint *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(Lint *, lint_free);

const char *severity_to_string(Severity s);
