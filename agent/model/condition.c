/* SPDX-License-Identifier: Apache-2.0 */
#include <time.h>

#include "condition.h"
#include "strbuf.h"
#include "string-table.h"

/* Keys named per change kind in a message; the rest are counted. */
#define CONDITION_MAX_KEYS_NAMED 8u

static const char *const condition_status_table[_CONDITION_STATUS_MAX] = {
        [CONDITION_TRUE] = "True",
        [CONDITION_FALSE] = "False",
        [CONDITION_UNKNOWN] = "Unknown",
};

DEFINE_STRING_TABLE_TO_STRING(condition_status, ConditionStatus);

void condition_format_time(uint64_t usec, char buf[static 32]) {
        time_t t = (time_t) (usec / 1000000u);
        struct tm tm;

        if (!gmtime_r(&t, &tm) || strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                (void) snprintf(buf, 32, "1970-01-01T00:00:00Z");
}

void condition_done(Condition *c) {
        free(c->type);
        free(c->message);
        *c = (Condition){};
}

/* "changed: A, B; added: C" for a drifted file, at most CONDITION_MAX_KEYS_NAMED each. */
static int put_changes(StrBuf *b, const FileReport *f) {
        const char *sep = " (";
        int r = 0;

        for (DiffChange c = 0; c < _CHANGE_MAX && r >= 0; c++) {
                size_t n = 0;

                for (size_t i = 0; i < f->n_changes && r >= 0; i++) {
                        const KeyChange *k = &f->changes[i];
                        if (!k->effective || k->change != c)
                                continue;
                        if (n == 0)
                                r = strbuf_printf(b, "%s%s: ", sep, diff_change_to_string(c));
                        if (r >= 0 && n < CONDITION_MAX_KEYS_NAMED)
                                r = strbuf_printf(b, "%s%s", n ? ", " : "", k->key);
                        n++;
                }
                if (r >= 0 && n > CONDITION_MAX_KEYS_NAMED)
                        r = strbuf_printf(b, " and %zu more", n - CONDITION_MAX_KEYS_NAMED);
                if (n > 0)
                        sep = "; ";
        }
        if (r >= 0 && f->n_changes_dropped > 0)
                r = strbuf_printf(b, "%s%zu more keys", sep, f->n_changes_dropped);
        if (r >= 0 && !streq(sep, " ("))
                r = strbuf_putc(b, ')');
        return r;
}

static int put_file(StrBuf *b, const FileReport *f) {
        /* The format is named where the key's name does not imply it:
         * enroot.conf and *.env judged as enroot reads them say nothing
         * more, as they always did. */
        bool named = f->format != file_format_for_key(f->key) || f->format == FILE_FORMAT_RAW;
        int r = strbuf_printf(b, "%s%s%s%s %s", f->key, named ? " (" : "",
                              named ? file_format_to_string(f->format) : "", named ? ")" : "",
                              file_state_to_string(f->state));

        if (r >= 0 && f->state == FILE_DRIFTED)
                r = put_changes(b, f);
        if (r >= 0 && f->detail)
                r = strbuf_printf(b, ": %s", f->detail);
        if (r >= 0 && f->superseded)
                r = strbuf_printf(b, ", mounted from superseded ConfigMap version%s%s",
                                  f->mount_version ? " " : "", strempty(f->mount_version));
        return r;
}

/* "3 files: 2 current, 1 drifted; 1 superseded mount": no names at all. */
static int put_counts(StrBuf *b, const Report *r) {
        size_t n[_FILE_STATE_MAX] = {}, superseded = 0;
        const char *sep = ": ";
        int k;

        for (size_t i = 0; i < r->n_files; i++) {
                if (r->files[i].state >= 0 && r->files[i].state < _FILE_STATE_MAX)
                        n[r->files[i].state]++;
                superseded += r->files[i].superseded;
        }
        k = strbuf_printf(b, "%zu file%s", r->n_files, r->n_files == 1 ? "" : "s");
        for (FileState s = 0; s < _FILE_STATE_MAX && k >= 0; s++) {
                if (n[s] == 0)
                        continue;
                k = strbuf_printf(b, "%s%zu %s", sep, n[s], file_state_to_string(s));
                sep = ", ";
        }
        if (k >= 0 && superseded > 0)
                k = strbuf_printf(b, "; %zu mounted from a superseded ConfigMap version",
                                  superseded);
        return k;
}

static int build_message(const Report *r, ConditionStatus status, bool counts_only, char **ret) {
        StrBuf b = STRBUF_INIT(CONDITION_MAX_MESSAGE_BYTES);
        _cleanup_free_ char *record = NULL;
        const char *tail = status == CONDITION_FALSE
                                   ? ". Replace the pod to run the ConfigMap's configuration."
                                   : ".";
        size_t room;

        /* The record of what the workload runs comes last and whole, or not
         * at all: the next agent process reads it back (workload.h). */
        if (r && r->workload_checked && workload_record_format(r->workload, &record) < 0)
                return -ENOMEM;
        if (record && strlen(record) > CONDITION_MAX_RECORD_BYTES)
                record = (free(record), NULL);
        room = CONDITION_MAX_MESSAGE_BYTES - strlen(tail) - 32 - (record ? strlen(record) : 0);

        if (!r || !r->evaluated)
                (void) strbuf_puts(&b, "The agent has not compared the files yet");
        else if (counts_only)
                (void) put_counts(&b, r);
        for (size_t i = 0; r && r->evaluated && !counts_only && i < r->n_files; i++) {
                StrBuf one = STRBUF_INIT(CONDITION_MAX_MESSAGE_BYTES);

                /* A file that does not fit is counted, never cut in the middle. */
                if (put_file(&one, &r->files[i]) < 0 || b.len + 2 + one.len > room) {
                        strbuf_done(&one);
                        (void) strbuf_printf(&b, "; and %zu more file(s)", r->n_files - i);
                        break;
                }
                (void) strbuf_printf(&b, "%s%s", i ? "; " : "", strbuf_str(&one));
                strbuf_done(&one);
        }
        (void) strbuf_puts(&b, tail);
        if (record)
                (void) strbuf_puts(&b, record);
        *ret = strbuf_steal(&b);
        return *ret ? 0 : -ENOMEM;
}

int condition_from_report(const Report *r, const char *type, Condition *ret) {
        return condition_from_report_detail(r, type, false, ret);
}

int condition_from_report_detail(const Report *r, const char *type, bool counts_only,
                                 Condition *ret) {
        _cleanup_(condition_done) Condition c = {};
        bool superseded = false, cosmetic = false;
        int k;

        c.type = strdup(type);
        if (!c.type)
                return -ENOMEM;

        c.status = CONDITION_TRUE;
        c.reason = "ConfigCurrent";
        if (!r || !r->evaluated) {
                c.status = CONDITION_UNKNOWN;
                c.reason = "NotYetEvaluated";
        } else if (!r->observable[SIDE_DESIRED]) {
                c.status = CONDITION_UNKNOWN;
                c.reason = "ConfigMapUnreadable";
        } else if (!r->observable[SIDE_RUNNING]) {
                c.status = CONDITION_UNKNOWN;
                c.reason = "RunningFilesUnobservable";
        } else
                for (size_t i = 0; i < r->n_files; i++) {
                        const FileReport *f = &r->files[i];

                        superseded |= f->superseded;
                        switch (f->state) {
                        case FILE_DRIFTED:
                                c.status = CONDITION_FALSE;
                                c.reason = "ConfigDrifted";
                                break;
                        case FILE_COSMETIC:
                                cosmetic = true;
                                break;
                        case FILE_CURRENT:
                                break;
                        default:
                                /* Drift wins over doubt: a drifted file is reason enough. */
                                if (c.status == CONDITION_TRUE) {
                                        c.status = CONDITION_UNKNOWN;
                                        c.reason = f->state == FILE_INVALID   ? "ConfigMapInvalid"
                                                   : f->state == FILE_MISSING ? "FileMissing"
                                                   : f->state == FILE_UNREADABLE ? "FileUnreadable"
                                                   : f->state == FILE_UNVERIFIABLE
                                                           ? "WorkloadUnverifiable"
                                                           : "EvaluationIncomplete";
                                }
                        }
                }
        if (c.status == CONDITION_TRUE && superseded)
                c.reason = "SupersededMountUnchanged";
        else if (c.status == CONDITION_TRUE && cosmetic)
                c.reason = "CosmeticDifferencesOnly";

        k = build_message(r, c.status, counts_only, &c.message);
        if (k < 0)
                return k;
        *ret = c;
        c = (Condition){};
        return 0;
}

const json_t *condition_find(const json_t *conditions, const char *type) {
        size_t i;
        json_t *x;

        if (!json_is_array(conditions))
                return NULL;
        json_array_foreach(conditions, i, x) {
                const char *t = json_string_value(json_object_get(x, "type"));
                if (t && streq(t, type))
                        return x;
        }
        return NULL;
}

static bool string_field_is(const json_t *o, const char *field, const char *want) {
        const char *v = json_string_value(json_object_get(o, field));
        return v && streq(v, want);
}

bool condition_matches(const json_t *conditions, const Condition *c) {
        const json_t *x = condition_find(conditions, c->type);

        return x && string_field_is(x, "status", condition_status_to_string(c->status)) &&
               string_field_is(x, "reason", c->reason) && string_field_is(x, "message", c->message);
}

json_t *condition_patch(const Condition *c, const char *uid, const json_t *conditions,
                        uint64_t now_usec) {
        const json_t *old = condition_find(conditions, c->type);
        const char *old_time = json_string_value(json_object_get(old, "lastTransitionTime"));
        char now[32];

        condition_format_time(now_usec, now);
        /* lastTransitionTime moves only when the status does. */
        if (!old_time || !string_field_is(old, "status", condition_status_to_string(c->status)))
                old_time = now;

        return json_pack("{s:{s:s}, s:{s:[{s:s, s:s, s:s, s:s, s:s, s:s}]}}", "metadata", "uid",
                         uid, "status", "conditions", "type", c->type, "status",
                         condition_status_to_string(c->status), "reason", c->reason, "message",
                         c->message, "lastTransitionTime", old_time, "lastProbeTime", now);
}

json_t *condition_event(const Condition *c, const char *pod_name, const char *pod_namespace,
                        const char *pod_uid, const char *component, uint64_t now_usec) {
        char now[32], name[320];

        condition_format_time(now_usec, now);
        (void) snprintf(name, sizeof name, "%.253s.%llx", pod_name, (unsigned long long) now_usec);
        return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s, s:s}, s:s, s:s, "
                         "s:s, s:s, s:s, s:i, s:{s:s}}",
                         "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace",
                         pod_namespace, "involvedObject", "apiVersion", "v1", "kind", "Pod", "name",
                         pod_name, "namespace", pod_namespace, "uid", pod_uid, "reason", c->reason,
                         "message", c->message, "type",
                         c->status == CONDITION_TRUE ? "Normal" : "Warning", "firstTimestamp", now,
                         "lastTimestamp", now, "count", 1, "source", "component", component);
}
