/* SPDX-License-Identifier: Apache-2.0 */
#include "diff.h"
#include "string-table.h"

static const char *const diff_change_table[_CHANGE_MAX] = {
        [CHANGE_ADDED] = "added",
        [CHANGE_REMOVED] = "removed",
        [CHANGE_CHANGED] = "changed",
};

static const char *const diff_verdict_table[_DIFF_VERDICT_MAX] = {
        [DIFF_SAME] = "same",
        [DIFF_COSMETIC] = "cosmetic",
        [DIFF_DRIFT] = "drift",
};

DEFINE_STRING_TABLE_TO_STRING(diff_change, DiffChange);
DEFINE_STRING_TABLE_TO_STRING(diff_verdict, DiffVerdict);

Diff *diff_free(Diff *d) {
        if (!d)
                return NULL;
        free(d->keys);
        free(d);
        return NULL;
}

/* Why two definitions of one key differ, or why they do not matter. */
static void judge_changed(KeyDiff *k) {
        const Setting *a = k->desired, *b = k->running;

        if (!streq(a->canon, b->canon)) {
                k->effective = true;
                if (a->dynamic || b->dynamic)
                        k->why = "live shell or ${NAME}, compared as text";
                else if (a->unset != b->unset)
                        k->why = a->unset ? "turned off" : "turned on";
                else if (a->empty || b->empty)
                        k->why = a->empty ? "emptied" : "was empty";
                else
                        k->why = "value differs";
                return;
        }

        k->effective = false;
        if (a->n_lines != b->n_lines)
                k->why = "a duplicate definition that has no effect";
        else if (!a->dynamic && !b->dynamic && streq(a->value, b->value))
                k->why = "same value after quoting, spacing or comments";
        else if (a->unset)
                k->why = "both false: enroot unsets the key either way";
        else if (a->empty)
                k->why = "both empty";
        else if (startswith(a->canon, "!yes"))
                k->why = "both mean yes to enroot";
        else
                k->why = "same text";
}

/* A key on one side only. In enroot.conf an empty value is the same as no line. */
static void judge_one_sided(KeyDiff *k, const Setting *s) {
        if (s->empty) {
                k->effective = false;
                k->why = "empty value, the same as not set";
        } else {
                k->effective = true;
                k->why = k->change == CHANGE_ADDED ? "missing from the running file"
                                                   : "no longer in the ConfigMap";
        }
}

/* True when a setting's text differs although the values compare equal. */
static bool text_differs(const Document *da, const Setting *a, const Document *db,
                         const Setting *b) {
        const Line *la = &da->lines[a->line - 1], *lb = &db->lines[b->line - 1];

        if (a->n_lines != b->n_lines)
                return true;
        return !streq_ptr(la->raw, lb->raw);
}

int diff_documents(const Document *desired, const Document *running, Diff **ret) {
        _cleanup_(diff_freep) Diff *d = NULL;
        size_t i = 0, j = 0;

        if (desired->type != running->type)
                return -EINVAL;

        d = calloc(1, sizeof(Diff));
        if (!d)
                return -ENOMEM;
        if (desired->n_settings + running->n_settings > 0) {
                d->keys = calloc(desired->n_settings + running->n_settings, sizeof(KeyDiff));
                if (!d->keys)
                        return -ENOMEM;
        }

        /* Both setting lists are sorted by key: merge them. */
        while (i < desired->n_settings || j < running->n_settings) {
                const Setting *a = i < desired->n_settings ? &desired->settings[i] : NULL;
                const Setting *b = j < running->n_settings ? &running->settings[j] : NULL;
                KeyDiff *k = &d->keys[d->n_keys];
                int c = !a ? 1 : !b ? -1 : strcmp(a->key, b->key);

                if (c < 0) {
                        *k = (KeyDiff){.key = a->key, .change = CHANGE_ADDED, .desired = a};
                        judge_one_sided(k, a);
                        i++;
                } else if (c > 0) {
                        *k = (KeyDiff){.key = b->key, .change = CHANGE_REMOVED, .running = b};
                        judge_one_sided(k, b);
                        j++;
                } else {
                        i++;
                        j++;
                        if (streq(a->canon, b->canon) && !text_differs(desired, a, running, b))
                                continue;
                        *k = (KeyDiff){.key = a->key,
                                       .change = CHANGE_CHANGED,
                                       .desired = a,
                                       .running = b};
                        judge_changed(k);
                }

                if (k->effective) {
                        d->n_effective++;
                        d->n_changes[k->change]++;
                }
                d->n_keys++;
        }

        d->refusal_differs = document_is_refused(desired) != document_is_refused(running);

        if (desired->size == running->size && streq(desired->sha256, running->sha256))
                d->verdict = DIFF_SAME;
        else if (d->n_effective > 0 || d->refusal_differs)
                d->verdict = DIFF_DRIFT;
        else
                d->verdict = DIFF_COSMETIC;

        *ret = TAKE_PTR(d);
        return 0;
}
