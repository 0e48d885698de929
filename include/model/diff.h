/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Desired (the ConfigMap now) against running (what the
 * container reads), compared as enroot sees them.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "document.h"

typedef enum DiffChange {
        CHANGE_ADDED,   /* in desired only: the running file lacks the key */
        CHANGE_REMOVED, /* in running only: the ConfigMap no longer has it */
        CHANGE_CHANGED, /* in both, with different values */
        _CHANGE_MAX,
} DiffChange;

typedef enum DiffVerdict {
        DIFF_SAME,     /* byte for byte */
        DIFF_COSMETIC, /* bytes differ, enroot ends up with the same settings */
        DIFF_DRIFT,    /* enroot ends up with different settings (or cannot be shown not to) */
        _DIFF_VERDICT_MAX,
} DiffVerdict;

typedef struct KeyDiff {
        const char *key; /* borrowed from a Document */
        DiffChange change;
        bool effective; /* false: the text differs, enroot's value does not */
        const char
                *why; /* static: why cosmetic or why drift ("value differs", "live shell", ...) */
        const Setting *desired; /* borrowed, NULL for CHANGE_REMOVED */
        const Setting *running; /* borrowed, NULL for CHANGE_ADDED */
} KeyDiff;

typedef struct Diff {
        DiffVerdict verdict;
        KeyDiff *keys; /* sorted by key */
        size_t n_keys;
        size_t n_effective;            /* keys that are drift */
        size_t n_changes[_CHANGE_MAX]; /* effective keys per change kind */
        bool refusal_differs;          /* enroot refuses one file and not the other */
} Diff;

/* Compares two documents of the same type; both must outlive the Diff.
 * Returns 0 with *ret new, -EINVAL when the types differ, -ENOMEM. */
int diff_documents(const Document *desired, const Document *running, Diff **ret);
Diff *diff_free(Diff *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(Diff *, diff_free);

const char *diff_change_to_string(DiffChange c);
const char *diff_verdict_to_string(DiffVerdict v);
