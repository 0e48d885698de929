/* SPDX-License-Identifier: Apache-2.0 */
#include <inttypes.h>
#include <stdio.h>

#include "metrics.h"
#include "string-table.h"
#include "utf8.h"

static const char *const eval_trigger_table[_TRIGGER_MAX] = {
        [TRIGGER_STARTUP] = "startup",   [TRIGGER_INOTIFY] = "inotify",
        [TRIGGER_POLL] = "poll",         [TRIGGER_RESYNC] = "resync",
        [TRIGGER_SIGNAL] = "signal",     [TRIGGER_PROCESS] = "process",
        [TRIGGER_OVERFLOW] = "overflow", [TRIGGER_POD] = "pod",
};

const char *const metrics_watch_modes[] = {"inotify", "poll", NULL};

DEFINE_STRING_TABLE_LOOKUP(eval_trigger, EvalTrigger, _TRIGGER_INVALID);

/* ---------------------------------------------------------------------------
 * Safe strings: valid UTF-8, bounded, distinct inputs stay distinct. */

/* FNV-1a, 64 bits: only to tell altered strings apart, not for security. */
static uint64_t fnv1a64(const char *s) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        for (; *s; s++) {
                h ^= (unsigned char) *s;
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

int metrics_safe_string(StrBuf *out, const char *s, size_t max_bytes) {
        const unsigned char *p = (const unsigned char *) s;
        size_t left = strlen(s);
        bool altered = false;
        int r;

        strbuf_reset(out);
        while (left > 0) {
                size_t n = utf8_char_len(p, left);
                const char *put = (const char *) p;
                size_t put_len = n;

                if (n == 0) {
                        put = "\xEF\xBF\xBD"; /* U+FFFD REPLACEMENT CHARACTER */
                        put_len = 3;
                        n = 1;
                        altered = true;
                }
                if (out->len + put_len > max_bytes) {
                        altered = true;
                        break;
                }
                r = strbuf_append(out, put, put_len);
                if (r < 0)
                        return r;
                p += n;
                left -= n;
        }
        if (altered)
                return strbuf_printf(out, "...#%016" PRIx64, fnv1a64(s));
        return strbuf_append(out, "", 0); /* data is non-NULL even for "" */
}

/* ---------------------------------------------------------------------------
 * Text exposition format 0.0.4. */

typedef struct Label {
        const char *name;
        const char *value;
} Label;

typedef struct Renderer {
        StrBuf *out;
        StrBuf scratch; /* metrics_safe_string() result */
} Renderer;

/* Appends each string in turn; stops at the first error. The renderer
 * builds every line from pieces: a printf() per sample was most of the cost
 * of a scrape that follows a change. */
static int put_strings(StrBuf *b, const char *const *parts, size_t n) {
        int r = 0;

        for (size_t i = 0; i < n && r >= 0; i++)
                r = strbuf_puts(b, parts[i]);
        return r;
}

static int put_family(Renderer *w, const char *name, const char *type, const char *help) {
        /* help texts are ours: no backslash or newline to escape */
        return put_strings(w->out,
                           (const char *const[]){"# HELP ", name, " ", help, "\n# TYPE ", name, " ",
                                                 type, "\n"},
                           9);
}

/* Whether s can go out as it is: printable ASCII with nothing to escape,
 * at most max_bytes long (what metrics_safe_string() and put_escaped() would leave
 * unchanged). */
static bool is_plain_label_value(const char *s, size_t max_bytes) {
        size_t n = 0;

        for (; *s; s++, n++)
                if (n >= max_bytes || (unsigned char) *s < 0x20 || (unsigned char) *s >= 0x7f ||
                    *s == '\\' || *s == '"')
                        return false;
        return true;
}

static int put_escaped(StrBuf *b, const char *s) {
        int r = 0;

        /* the format escapes exactly these three in label values */
        for (; *s && r >= 0; s++)
                switch (*s) {
                case '\\':
                        r = strbuf_puts(b, "\\\\");
                        break;
                case '"':
                        r = strbuf_puts(b, "\\\"");
                        break;
                case '\n':
                        r = strbuf_puts(b, "\\n");
                        break;
                default:
                        r = strbuf_putc(b, *s);
                }
        return r;
}

static int put_sample(Renderer *w, const char *name, const Label *labels, size_t n_labels,
                      const char *value) {
        int r;

        r = strbuf_puts(w->out, name);
        for (size_t i = 0; i < n_labels && r >= 0; i++) {
                const char *v = labels[i].value ? labels[i].value : "";

                r = put_strings(w->out,
                                (const char *const[]){i == 0 ? "{" : ",", labels[i].name, "=\""},
                                3);
                if (r >= 0 && is_plain_label_value(v, METRICS_MAX_LABEL_BYTES))
                        r = strbuf_puts(w->out, v);
                else {
                        if (r >= 0)
                                r = metrics_safe_string(&w->scratch, v, METRICS_MAX_LABEL_BYTES);
                        if (r >= 0)
                                r = put_escaped(w->out, strbuf_str(&w->scratch));
                }
                if (r >= 0)
                        r = strbuf_putc(w->out, '"');
        }
        if (r >= 0 && n_labels > 0)
                r = strbuf_putc(w->out, '}');
        if (r >= 0)
                r = put_strings(w->out, (const char *const[]){" ", value, "\n"}, 3);
        return r;
}

typedef struct Number {
        char s[32];
} Number;

static Number u64(uint64_t v) {
        char digits[21];
        size_t i = sizeof digits;
        Number n;

        do
                digits[--i] = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        memcpy(n.s, digits + i, sizeof digits - i);
        n.s[sizeof digits - i] = '\0';
        return n;
}

/* Microseconds as decimal seconds without a float round trip: "12", "12.5". */
static Number seconds(uint64_t usec) {
        Number n;
        size_t l;

        if (usec % 1000000u == 0)
                return u64(usec / 1000000u);
        (void) snprintf(n.s, sizeof n.s, "%" PRIu64 ".%06" PRIu64, usec / 1000000u,
                        usec % 1000000u);
        l = strlen(n.s);
        while (n.s[l - 1] == '0')
                n.s[--l] = '\0';
        return n;
}

static const char *file_key(const FileReport *f) {
        return f->key ? f->key : "";
}

static size_t effective_listed(const FileReport *f) {
        size_t n = 0;

        for (size_t i = 0; i < f->n_changes; i++)
                if (f->changes[i].effective)
                        n++;
        return n;
}

static int render_config(Renderer *w, const Report *r) {
        static const Report empty = {.pod = POD_UNKNOWN};
        int k;

        if (!r)
                r = &empty;

        k = put_family(w, "aicr_enroot_config_current", "gauge",
                       "1 when every compared file is current or differs only cosmetically "
                       "from the ConfigMap, else 0.");
        if (k >= 0)
                k = put_sample(w, "aicr_enroot_config_current", NULL, 0,
                               report_pod_state(r) == POD_CURRENT ? "1" : "0");

        if (k >= 0)
                k = put_family(w, "aicr_enroot_config_state", "gauge",
                               "1 for the file's state: current, cosmetic, drifted, missing, "
                               "unreadable, invalid, unverifiable or unknown.");
        for (size_t i = 0; i < r->n_files && k >= 0; i++)
                for (FileState s = 0; s < _FILE_STATE_MAX && k >= 0; s++) {
                        Label l[] = {{"file", file_key(&r->files[i])},
                                     {"state", file_state_to_string(s)}};
                        k = put_sample(w, "aicr_enroot_config_state", l, ELEMENTSOF(l),
                                       r->files[i].state == s ? "1" : "0");
                }

        if (k >= 0)
                k = put_family(w, "aicr_enroot_config_drift", "gauge",
                               "1 when enroot's effective settings in the running file differ "
                               "from the ConfigMap's.");
        for (size_t i = 0; i < r->n_files && k >= 0; i++) {
                Label l[] = {{"file", file_key(&r->files[i])}};
                k = put_sample(w, "aicr_enroot_config_drift", l, ELEMENTSOF(l),
                               r->files[i].state == FILE_DRIFTED ? "1" : "0");
        }

        if (k >= 0)
                k = put_family(w, "aicr_enroot_config_superseded_mount", "gauge",
                               "1 when the running file is mounted from a ConfigMap version "
                               "kubelet has since replaced (subPath mounts never refresh).");
        for (size_t i = 0; i < r->n_files && k >= 0; i++) {
                Label l[] = {{"file", file_key(&r->files[i])}};
                k = put_sample(w, "aicr_enroot_config_superseded_mount", l, ELEMENTSOF(l),
                               r->files[i].superseded ? "1" : "0");
        }

        if (k >= 0)
                k = put_family(w, "aicr_enroot_config_drifted_keys", "gauge",
                               "Number of keys whose effective value differs between the "
                               "ConfigMap and the running file.");
        for (size_t i = 0; i < r->n_files && k >= 0; i++) {
                Label l[] = {{"file", file_key(&r->files[i])}};
                k = put_sample(w, "aicr_enroot_config_drifted_keys", l, ELEMENTSOF(l),
                               u64(r->files[i].n_drifted_keys).s);
        }

        if (k >= 0)
                k = put_family(w, "aicr_enroot_config_key_drift", "gauge",
                               "1 for each key whose effective value differs; change is added "
                               "(only in the ConfigMap), removed (only in the running file) or "
                               "changed.");
        for (size_t i = 0; i < r->n_files && k >= 0; i++)
                for (size_t j = 0; j < r->files[i].n_changes && k >= 0; j++) {
                        const KeyChange *c = &r->files[i].changes[j];
                        Label l[] = {{"file", file_key(&r->files[i])},
                                     {"key", c->key},
                                     {"change", diff_change_to_string(c->change)}};

                        if (!c->effective)
                                continue;
                        k = put_sample(w, "aicr_enroot_config_key_drift", l, ELEMENTSOF(l), "1");
                }

        if (k >= 0)
                k = put_family(w, "aicr_enroot_config_key_drift_omitted", "gauge",
                               "Drifted keys left out of aicr_enroot_config_key_drift to bound "
                               "the number of series.");
        for (size_t i = 0; i < r->n_files && k >= 0; i++) {
                const FileReport *f = &r->files[i];
                size_t listed = effective_listed(f);
                Label l[] = {{"file", file_key(f)}};

                k = put_sample(w, "aicr_enroot_config_key_drift_omitted", l, ELEMENTSOF(l),
                               u64(f->n_drifted_keys > listed ? f->n_drifted_keys - listed : 0).s);
        }

        if (k >= 0)
                k = put_family(w, "aicr_enroot_config_info", "gauge",
                               "Each side that was read: side is desired (the ConfigMap) or "
                               "running (what the container reads); version is the ConfigMap "
                               "version directory its bytes came from, where known; content_id "
                               "is a keyed hash of the bytes, comparable only within one agent "
                               "process (it changes when the agent restarts); always 1.");
        for (size_t i = 0; i < r->n_files && k >= 0; i++)
                for (Side s = 0; s < _SIDE_MAX && k >= 0; s++) {
                        const FileReport *f = &r->files[i];
                        Label l[4] = {{"file", file_key(f)}, {"side", side_to_string(s)}};
                        size_t n = 2;

                        if (!f->read[s] || f->content_id[s][0] == '\0')
                                continue;
                        /* no version label where the version is unknown */
                        if (f->version[s])
                                l[n++] = (Label){"version", f->version[s]};
                        l[n++] = (Label){"content_id", f->content_id[s]};
                        k = put_sample(w, "aicr_enroot_config_info", l, n, "1");
                }

        if (k >= 0)
                k = put_family(w, "aicr_enroot_config_file_format", "gauge",
                               "The format that judges each file: enroot-conf or enroot-env (as "
                               "enroot reads it), or raw (its bytes only: current or drifted, no "
                               "keys, no lint); always 1.");
        for (size_t i = 0; i < r->n_files && k >= 0; i++) {
                const FileReport *f = &r->files[i];
                Label l[] = {{"file", file_key(f)},
                             {"format", file_format_to_string(f->format) ?: "unknown"}};

                k = put_sample(w, "aicr_enroot_config_file_format", l, ELEMENTSOF(l), "1");
        }

        if (k >= 0)
                k = put_family(w, "aicr_enroot_config_lint_findings", "gauge",
                               "Lint findings in each side that was read, by severity.");
        for (size_t i = 0; i < r->n_files && k >= 0; i++)
                for (Side s = 0; s < _SIDE_MAX && k >= 0; s++)
                        for (Severity v = 0; v < _SEVERITY_MAX && k >= 0; v++) {
                                const FileReport *f = &r->files[i];
                                Label l[] = {{"file", file_key(f)},
                                             {"side", side_to_string(s)},
                                             {"severity", severity_to_string(v)}};

                                if (!f->read[s] || !file_format_is_enroot(f->format))
                                        continue;
                                k = put_sample(w, "aicr_enroot_config_lint_findings", l,
                                               ELEMENTSOF(l), u64(f->lint[s][v]).s);
                        }

        if (k >= 0)
                k = put_family(w, "aicr_enroot_config_drift_start_timestamp_seconds", "gauge",
                               "When the file became drifted, in seconds since the Unix epoch; "
                               "only for drifted files.");
        for (size_t i = 0; i < r->n_files && k >= 0; i++) {
                const FileReport *f = &r->files[i];
                Label l[] = {{"file", file_key(f)}};

                if (f->state != FILE_DRIFTED || f->drift_since_usec == 0)
                        continue;
                k = put_sample(w, "aicr_enroot_config_drift_start_timestamp_seconds", l,
                               ELEMENTSOF(l), seconds(f->drift_since_usec).s);
        }

        if (k >= 0)
                k = put_family(w, "aicr_enroot_agent_last_evaluation_timestamp_seconds", "gauge",
                               "When the last full evaluation completed, in seconds since the "
                               "Unix epoch.");
        if (k >= 0 && r->evaluated && r->evaluated_usec > 0)
                k = put_sample(w, "aicr_enroot_agent_last_evaluation_timestamp_seconds", NULL, 0,
                               seconds(r->evaluated_usec).s);
        return k;
}

const char *metrics_kube_code(long code, char buf[static 24]) {
        if (code == 0)
                return "error";
        if (code < 0)
                return "other";
        (void) snprintf(buf, 24, "%ld", code);
        return buf;
}

static int render_kube(Renderer *w, const MetricsCounters *c) {
        const KubeStats *s = c->kube;
        int k;

        k = put_family(w, "aicr_enroot_agent_kube_requests_total", "counter",
                       "Finished requests to the Kubernetes API server, by verb and HTTP code "
                       "(\"error\": no answer).");
        for (size_t i = 0; i < s->n_series && k >= 0; i++) {
                char code[24];
                Label l[] = {{"verb", kube_verb_to_string(s->series[i].verb)},
                             {"code", metrics_kube_code(s->series[i].code, code)}};

                if (s->series[i].count > 0)
                        k = put_sample(w, "aicr_enroot_agent_kube_requests_total", l, ELEMENTSOF(l),
                                       u64(s->series[i].count).s);
        }
        if (k >= 0)
                k = put_family(w, "aicr_enroot_agent_condition_synced", "gauge",
                               "1 when the pod's condition says what the agent says.");
        if (k >= 0)
                k = put_sample(w, "aicr_enroot_agent_condition_synced", NULL, 0,
                               c->condition_synced ? "1" : "0");
        if (k >= 0)
                k = put_family(w, "aicr_enroot_agent_kube_last_success_timestamp_seconds", "gauge",
                               "When the Kubernetes API server last answered with success, in "
                               "seconds since the Unix epoch.");
        if (k >= 0 && s->last_success_usec > 0)
                k = put_sample(w, "aicr_enroot_agent_kube_last_success_timestamp_seconds", NULL, 0,
                               seconds(s->last_success_usec).s);
        return k;
}

static int render_agent(Renderer *w, const MetricsCounters *c) {
        bool listed = false;
        int k;

        k = put_family(w, "aicr_enroot_agent_evaluations_total", "counter",
                       "Looks at both sides asked for, by what asked; several asked for while one "
                       "is under way or paced are served by one.");
        for (EvalTrigger t = 0; t < _TRIGGER_MAX && k >= 0; t++) {
                Label l[] = {{"trigger", eval_trigger_to_string(t)}};
                k = put_sample(w, "aicr_enroot_agent_evaluations_total", l, ELEMENTSOF(l),
                               u64(c->evaluations[t]).s);
        }

        if (k >= 0)
                k = put_family(w, "aicr_enroot_agent_watch_mode", "gauge",
                               "1 for the active way of watching the ConfigMap directory: "
                               "inotify, or poll when inotify is unavailable.");
        for (size_t i = 0; metrics_watch_modes[i] && k >= 0; i++) {
                bool on = streq_ptr(c->watch_mode, metrics_watch_modes[i]);
                Label l[] = {{"mode", metrics_watch_modes[i]}};

                listed = listed || on;
                k = put_sample(w, "aicr_enroot_agent_watch_mode", l, ELEMENTSOF(l), on ? "1" : "0");
        }
        if (k >= 0 && c->watch_mode && !listed) {
                Label l[] = {{"mode", c->watch_mode}};
                k = put_sample(w, "aicr_enroot_agent_watch_mode", l, ELEMENTSOF(l), "1");
        }

        if (k >= 0 && c->kube)
                k = render_kube(w, c);

        if (k >= 0)
                k = put_family(w, "aicr_enroot_agent_build_info", "gauge",
                               "The agent's version; always 1.");
        if (k >= 0) {
                Label l[] = {{"version", c->version ? c->version : "unknown"}};
                k = put_sample(w, "aicr_enroot_agent_build_info", l, ELEMENTSOF(l), "1");
        }
        return k;
}

static int render_process(Renderer *w, const ProcessStats *p) {
        /* names, types and help texts as Prometheus client libraries export them */
        const struct {
                const char *name, *type, *help;
                Number value;
        } m[] = {
                {"process_cpu_seconds_total", "counter",
                 "Total user and system CPU time spent in seconds.", seconds(p->cpu_usec)},
                {"process_max_fds", "gauge", "Maximum number of open file descriptors.",
                 u64(p->max_fds)},
                {"process_open_fds", "gauge", "Number of open file descriptors.", u64(p->open_fds)},
                {"process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
                 u64(p->resident_bytes)},
                {"process_start_time_seconds", "gauge",
                 "Start time of the process since unix epoch in seconds.",
                 seconds(p->start_time_usec)},
                {"process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
                 u64(p->virtual_bytes)},
                {"process_virtual_memory_max_bytes", "gauge",
                 "Maximum amount of virtual memory available in bytes.", u64(p->virtual_max_bytes)},
        };
        int k = 0;

        for (size_t i = 0; i < ELEMENTSOF(m) && k >= 0; i++) {
                k = put_family(w, m[i].name, m[i].type, m[i].help);
                if (k >= 0)
                        k = put_sample(w, m[i].name, NULL, 0, m[i].value.s);
        }
        return k;
}

/* What changes per scrape: the agent's counters and the process statistics. */
static int render_counters(Renderer *w, const MetricsCounters *c) {
        int k = 0;

        if (c)
                k = render_agent(w, c);
        if (k >= 0 && c && c->has_process)
                k = render_process(w, &c->process);
        return k;
}

int metrics_render(StrBuf *out, const Report *r, const MetricsCounters *c) {
        Renderer w = {.out = out, .scratch = STRBUF_INIT(METRICS_MAX_LABEL_BYTES + 64)};
        int k;

        k = render_config(&w, r);
        if (k >= 0)
                k = render_counters(&w, c);
        strbuf_done(&w.scratch);
        return k;
}

void metrics_cache_done(MetricsCache *cache) {
        strbuf_done(&cache->text);
        cache->valid = false;
}

int metrics_render_cached(StrBuf *out, MetricsCache *cache, const Report *r, uint64_t generation,
                          const MetricsCounters *c) {
        Renderer w = {.out = out, .scratch = STRBUF_INIT(METRICS_MAX_LABEL_BYTES + 64)};
        uint64_t evaluated_usec = r ? r->evaluated_usec : 0;
        int k = 0;

        if (!cache->valid || cache->report_id != (uintptr_t) r ||
            cache->evaluated_usec != evaluated_usec || cache->generation != generation) {
                Renderer cw = {.out = &cache->text, .scratch = w.scratch};

                cache->valid = false;
                strbuf_reset(&cache->text);
                k = render_config(&cw, r);
                w.scratch = cw.scratch;
                if (k >= 0)
                        /* data is non-NULL even for an empty rendering */
                        k = strbuf_append(&cache->text, "", 0);
                if (k >= 0)
                        *cache = (MetricsCache){.text = cache->text,
                                                .report_id = (uintptr_t) r,
                                                .evaluated_usec = evaluated_usec,
                                                .generation = generation,
                                                .valid = true};
        }
        if (k >= 0)
                k = strbuf_append(out, cache->text.data, cache->text.len);
        if (k >= 0)
                k = render_counters(&w, c);
        strbuf_done(&w.scratch);
        return k;
}
