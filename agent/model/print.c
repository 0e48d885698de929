/* SPDX-License-Identifier: Apache-2.0 */
#include "print.h"
#include "string-table.h"

static const char *const print_format_table[_PRINT_FORMAT_MAX] = {
        [PRINT_TEXT] = "text",
        [PRINT_JSON] = "json",
};

DEFINE_STRING_TABLE_FROM_STRING(print_format, PrintFormat, _PRINT_FORMAT_INVALID);

int print_lint_text(StrBuf *out, const char *file, const Lint *l) {
        for (size_t i = 0; i < l->n_findings; i++) {
                const Finding *f = &l->findings[i];
                int r;

                if (f->line > 0)
                        r = strbuf_printf(out, "%s:%u: %s[%s]: %s\n", file, f->line,
                                          severity_to_string(f->severity), f->id, f->message);
                else
                        r = strbuf_printf(out, "%s: %s[%s]: %s\n", file,
                                          severity_to_string(f->severity), f->id, f->message);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A JSON string from file text, which need not be UTF-8: invalid bytes become
 * U+FFFD rather than failing the whole report. */
static json_t *jstr(const char *s) {
        json_t *j = json_string(s);
        StrBuf b = STRBUF_INIT(4 * strlen(s) + 1);

        if (j)
                return j;
        for (const char *p = s; *p; p++)
                if (strbuf_append(&b, (unsigned char) *p < 0x80 ? p : "\xef\xbf\xbd",
                                  (unsigned char) *p < 0x80 ? 1 : 3) < 0) {
                        strbuf_done(&b);
                        return NULL;
                }
        j = json_string(strbuf_str(&b));
        strbuf_done(&b);
        return j;
}

/* json_object_set_new() that turns any failure into "the whole object failed". */
static bool set(json_t *o, const char *k, json_t *v) {
        return v && json_object_set_new(o, k, v) == 0;
}

json_t *print_lint_json(const char *file, const char *type, const Lint *l) {
        json_t *o = json_object(), *a = json_array();
        bool ok = o && a;

        for (size_t i = 0; ok && i < l->n_findings; i++) {
                const Finding *f = &l->findings[i];
                json_t *x = json_object();

                ok = x && set(x, "line", json_integer(f->line)) &&
                     set(x, "severity", json_string(severity_to_string(f->severity))) &&
                     set(x, "id", json_string(f->id)) &&
                     set(x, "key", f->key ? jstr(f->key) : json_null()) &&
                     set(x, "message", jstr(f->message)) && json_array_append_new(a, x) == 0;
                if (!ok)
                        json_decref(x);
        }
        ok = ok && set(o, "file", jstr(file)) &&
             set(o, "type", type ? json_string(type) : json_null()) &&
             set(o, "errors", json_integer((json_int_t) l->n_errors)) &&
             set(o, "warnings", json_integer((json_int_t) l->n_warnings)) &&
             set(o, "findings", json_incref(a));
        json_decref(a);
        if (!ok) {
                json_decref(o);
                return NULL;
        }
        return o;
}

static int put_value(StrBuf *out, const Setting *s) {
        /* Values are quoted with control characters escaped, so a CR or a
         * terminal escape in a file cannot garble the report. */
        int r = strbuf_putc(out, '"');
        for (const char *p = s->value; r >= 0 && *p; p++) {
                unsigned char c = (unsigned char) *p;
                if (c == '"' || c == '\\')
                        r = strbuf_printf(out, "\\%c", c);
                else if (c < 0x20 || c == 0x7f)
                        r = strbuf_printf(out, "\\x%02x", c);
                else
                        r = strbuf_putc(out, (char) c);
        }
        if (r >= 0)
                r = strbuf_putc(out, '"');
        return r;
}

int print_diff_text(StrBuf *out, const char *desired_name, const char *running_name, const Diff *d,
                    bool show_values) {
        int r;

        if (d->verdict == DIFF_DRIFT)
                r = strbuf_printf(out, "%s -> %s: drift (%zu added, %zu removed, %zu changed%s)\n",
                                  desired_name, running_name, d->n_changes[CHANGE_ADDED],
                                  d->n_changes[CHANGE_REMOVED], d->n_changes[CHANGE_CHANGED],
                                  d->refusal_differs ? "; enroot refuses one of the files" : "");
        else
                r = strbuf_printf(out, "%s -> %s: %s\n", desired_name, running_name,
                                  diff_verdict_to_string(d->verdict));
        if (r < 0)
                return r;

        for (size_t i = 0; i < d->n_keys; i++) {
                const KeyDiff *k = &d->keys[i];

                r = strbuf_printf(out, "  %s: %s%s (%s)", k->key, diff_change_to_string(k->change),
                                  k->effective ? "" : ", cosmetic", k->why);
                if (r >= 0 && show_values && k->desired) {
                        r = strbuf_printf(out, " desired line %u ", k->desired->line);
                        if (r >= 0)
                                r = put_value(out, k->desired);
                }
                if (r >= 0 && show_values && k->running) {
                        r = strbuf_printf(out, "%s running line %u ", k->desired ? "," : "",
                                          k->running->line);
                        if (r >= 0)
                                r = put_value(out, k->running);
                }
                if (r >= 0)
                        r = strbuf_putc(out, '\n');
                if (r < 0)
                        return r;
        }
        return 0;
}

static json_t *side_json(const Setting *s, bool show_values) {
        json_t *o;

        if (!s)
                return json_null();
        o = json_object();
        if (!o)
                return NULL;
        if (!set(o, "line", json_integer(s->line)) ||
            !set(o, "dynamic", json_boolean(s->dynamic)) ||
            (show_values && !set(o, "value", jstr(s->value)))) {
                json_decref(o);
                return NULL;
        }
        return o;
}

json_t *print_diff_json(const char *desired_name, const char *running_name, const Diff *d,
                        bool show_values) {
        json_t *o = json_object(), *a = json_array();
        bool ok = o && a;

        for (size_t i = 0; ok && i < d->n_keys; i++) {
                const KeyDiff *k = &d->keys[i];
                json_t *x = json_object();

                ok = x && set(x, "key", jstr(k->key)) &&
                     set(x, "change", json_string(diff_change_to_string(k->change))) &&
                     set(x, "effective", json_boolean(k->effective)) &&
                     set(x, "why", json_string(k->why)) &&
                     set(x, "desired", side_json(k->desired, show_values)) &&
                     set(x, "running", side_json(k->running, show_values)) &&
                     json_array_append_new(a, x) == 0;
                if (!ok)
                        json_decref(x);
        }
        ok = ok && set(o, "desired", jstr(desired_name)) && set(o, "running", jstr(running_name)) &&
             set(o, "verdict", json_string(diff_verdict_to_string(d->verdict))) &&
             set(o, "refusal_differs", json_boolean(d->refusal_differs)) &&
             set(o, "added", json_integer((json_int_t) d->n_changes[CHANGE_ADDED])) &&
             set(o, "removed", json_integer((json_int_t) d->n_changes[CHANGE_REMOVED])) &&
             set(o, "changed", json_integer((json_int_t) d->n_changes[CHANGE_CHANGED])) &&
             set(o, "keys", json_incref(a));
        json_decref(a);
        if (!ok) {
                json_decref(o);
                return NULL;
        }
        return o;
}

int print_json(json_t *o, FILE *f) {
        int r = 0;

        if (!o)
                return -ENOMEM;
        if (json_dumpf(o, f, JSON_INDENT(2)) < 0 || fputc('\n', f) == EOF)
                r = -EIO;
        json_decref(o);
        return r;
}
