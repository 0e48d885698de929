/* SPDX-License-Identifier: Apache-2.0 */
#include <jansson.h>
#include <time.h>

#include "status-json.h"

static const char *file_key(const FileReport *f) {
        return f->key ? f->key : "";
}

typedef struct JsonOut {
        StrBuf *out;
        int error;
} JsonOut;

static int json_put(const char *buffer, size_t size, void *userdata) {
        JsonOut *o = userdata;
        int r = strbuf_append(o->out, buffer, size);

        if (r < 0) {
                o->error = r;
                return -1;
        }
        return 0;
}

/* Sets o[key] = v, stealing v; -ENOMEM when v is NULL (a failed constructor). */
static int set(json_t *o, const char *key, json_t *v) {
        if (!v)
                return -ENOMEM;
        return json_object_set_new(o, key, v) < 0 ? -ENOMEM : 0;
}

static json_t *safe_json_string(StrBuf *scratch, const char *s, size_t max_bytes) {
        if (!s)
                return json_null();
        if (metrics_safe_string(scratch, s, max_bytes) < 0)
                return NULL;
        return json_string(strbuf_str(scratch));
}

static json_t *time_json(uint64_t usec) {
        struct tm tm;
        time_t t;
        char buf[64];

        if (usec == 0)
                return json_null();
        t = (time_t) (usec / 1000000u);
        if (!gmtime_r(&t, &tm) || strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                return json_null();
        return json_string(buf);
}

static json_t *file_json(const FileReport *f, StrBuf *scratch) {
        _cleanup_(json_decrefp) json_t *o = json_object(), *ids = json_object(),
                                       *versions = json_object(), *lint = json_object(),
                                       *changes = json_array();
        int r;

        if (!o || !ids || !versions || !lint || !changes)
                return NULL;

        for (Side s = 0; s < _SIDE_MAX; s++) {
                json_t *l = json_null();

                r = set(ids, side_to_string(s),
                        f->read[s] && f->content_id[s][0] ? json_string(f->content_id[s])
                                                          : json_null());
                if (r < 0)
                        return NULL;
                r = set(versions, side_to_string(s),
                        safe_json_string(scratch, f->read[s] ? f->version[s] : NULL,
                                         METRICS_MAX_LABEL_BYTES));
                if (r < 0)
                        return NULL;
                if (f->read[s] && file_format_is_enroot(f->format))
                        l = json_pack("{s:I,s:I}", "errors",
                                      (json_int_t) f->lint[s][SEVERITY_ERROR], "warnings",
                                      (json_int_t) f->lint[s][SEVERITY_WARNING]);
                if (set(lint, side_to_string(s), l) < 0)
                        return NULL;
        }
        for (size_t i = 0; i < f->n_changes; i++) {
                const KeyChange *c = &f->changes[i];
                json_t *key = safe_json_string(scratch, c->key, METRICS_MAX_LABEL_BYTES);

                if (!key)
                        return NULL;
                if (json_array_append_new(changes, json_pack("{s:o,s:s,s:b}", "key", key, "change",
                                                             diff_change_to_string(c->change),
                                                             "effective", (int) c->effective)) < 0)
                        return NULL;
        }

        if (set(o, "key", safe_json_string(scratch, file_key(f), METRICS_MAX_LABEL_BYTES)) < 0 ||
            set(o, "running_path", safe_json_string(scratch, f->running_path, METRICS_MAX_BYTES)) <
                    0 ||
            set(o, "format", json_string(file_format_to_string(f->format) ?: "unknown")) < 0 ||
            set(o, "state", json_string(file_state_to_string(f->state) ?: "unknown")) < 0 ||
            set(o, "since", time_json(f->state_since_usec)) < 0 ||
            set(o, "detail", safe_json_string(scratch, f->detail, METRICS_MAX_BYTES)) < 0 ||
            set(o, "superseded", json_boolean(f->superseded)) < 0 ||
            set(o, "mount_version",
                safe_json_string(scratch, f->mount_version, METRICS_MAX_LABEL_BYTES)) < 0 ||
            set(o, "version", json_incref(versions)) < 0 ||
            set(o, "content_id", json_incref(ids)) < 0 || set(o, "lint", json_incref(lint)) < 0 ||
            set(o, "drift_since",
                f->state == FILE_DRIFTED ? time_json(f->drift_since_usec) : json_null()) < 0 ||
            set(o, "drifted_keys", json_integer((json_int_t) f->n_drifted_keys)) < 0 ||
            set(o, "changes", json_incref(changes)) < 0 ||
            set(o, "changes_omitted", json_integer((json_int_t) f->n_changes_dropped)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

/* What the agent knows of the workload containers (workload.h). */
static json_t *workload_json(const Workload *w, StrBuf *scratch) {
        _cleanup_(json_decrefp) json_t *o = json_object(), *list = json_array();

        if (!o || !list)
                return NULL;
        for (size_t i = 0; w && i < w->n_containers; i++) {
                const WorkloadContainer *c = &w->containers[i];
                _cleanup_(json_decrefp) json_t *one = json_object();

                if (!one ||
                    set(one, "name", safe_json_string(scratch, c->name, METRICS_MAX_LABEL_BYTES)) <
                            0 ||
                    set(one, "running", json_boolean(c->running)) < 0 ||
                    set(one, "container_id",
                        safe_json_string(scratch, c->container_id, METRICS_MAX_LABEL_BYTES)) < 0 ||
                    set(one, "started_at", c->running ? time_json(c->started_usec) : json_null()) <
                            0 ||
                    set(one, "version",
                        safe_json_string(scratch, c->version, METRICS_MAX_LABEL_BYTES)) < 0 ||
                    set(one, "known_from",
                        c->version ? json_string(workload_source_to_string(c->source))
                                   : json_null()) < 0 ||
                    json_array_append_new(list, json_incref(one)) < 0)
                        return NULL;
        }
        if (set(o, "pod_read", json_boolean(w != NULL)) < 0 ||
            set(o, "problem", safe_json_string(scratch, w ? w->problem : NULL, METRICS_MAX_BYTES)) <
                    0 ||
            set(o, "containers", json_incref(list)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

static json_t *status_json(const Report *r, const MetricsCounters *c, StrBuf *scratch) {
        static const Report empty = {.pod = POD_UNKNOWN};
        _cleanup_(json_decrefp) json_t *o = json_object(), *files = json_array(),
                                       *observable = json_object();

        if (!o || !files || !observable)
                return NULL;
        if (!r)
                r = &empty;

        for (Side s = 0; s < _SIDE_MAX; s++)
                if (set(observable, side_to_string(s), json_boolean(r->observable[s])) < 0)
                        return NULL;
        for (size_t i = 0; i < r->n_files; i++)
                if (json_array_append_new(files, file_json(&r->files[i], scratch)) < 0)
                        return NULL;

        if (set(o, "pod", json_string(pod_state_to_string(report_pod_state(r)))) < 0 ||
            set(o, "evaluated", json_boolean(r->evaluated)) < 0 ||
            set(o, "evaluated_at", r->evaluated ? time_json(r->evaluated_usec) : json_null()) < 0 ||
            set(o, "desired_version",
                safe_json_string(scratch, r->desired_version, METRICS_MAX_LABEL_BYTES)) < 0 ||
            set(o, "observable", json_incref(observable)) < 0)
                return NULL;

        if (c) {
                _cleanup_(json_decrefp) json_t *agent = json_object(), *evals = json_object();

                if (!agent || !evals)
                        return NULL;
                for (EvalTrigger t = 0; t < _TRIGGER_MAX; t++)
                        if (set(evals, eval_trigger_to_string(t),
                                json_integer((json_int_t) c->evaluations[t])) < 0)
                                return NULL;
                if (set(agent, "version",
                        safe_json_string(scratch, c->version, METRICS_MAX_LABEL_BYTES)) < 0 ||
                    set(agent, "watch_mode",
                        safe_json_string(scratch, c->watch_mode, METRICS_MAX_LABEL_BYTES)) < 0 ||
                    set(agent, "evaluations", json_incref(evals)) < 0 ||
                    set(o, "agent", json_incref(agent)) < 0)
                        return NULL;
        }
        if (c && c->kube) {
                _cleanup_(json_decrefp) json_t *kube = json_object(), *reqs = json_array();
                const KubeStats *s = c->kube;

                if (!kube || !reqs)
                        return NULL;
                for (size_t i = 0; i < s->n_series; i++) {
                        char code[24];
                        json_t *one = json_pack("{s:s, s:s, s:I}", "verb",
                                                kube_verb_to_string(s->series[i].verb), "code",
                                                metrics_kube_code(s->series[i].code, code), "count",
                                                (json_int_t) s->series[i].count);
                        if (!one || json_array_append_new(reqs, one) < 0)
                                return NULL;
                }
                if (set(kube, "condition_synced", json_boolean(c->condition_synced)) < 0 ||
                    set(kube, "stopped", json_boolean(c->condition_stopped)) < 0 ||
                    set(kube, "last_success",
                        s->last_success_usec > 0 ? time_json(s->last_success_usec) : json_null()) <
                            0 ||
                    set(kube, "requests", json_incref(reqs)) < 0 ||
                    set(o, "kube", json_incref(kube)) < 0)
                        return NULL;
        }

        if (r->workload_checked && set(o, "workload", workload_json(r->workload, scratch)) < 0)
                return NULL;
        if (set(o, "files", json_incref(files)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

int status_json_render(StrBuf *out, const Report *r, const MetricsCounters *c) {
        StrBuf scratch = STRBUF_INIT(METRICS_MAX_BYTES);
        _cleanup_(json_decrefp) json_t *j = NULL;
        JsonOut o = {.out = out};

        j = status_json(r, c, &scratch);
        strbuf_done(&scratch);
        if (!j)
                return -ENOMEM;
        if (json_dump_callback(j, json_put, &o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0)
                return o.error < 0 ? o.error : -ENOMEM;
        return strbuf_putc(out, '\n');
}
