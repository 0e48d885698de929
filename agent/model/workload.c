/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The workload's ConfigMap version (workload.h).
 *
 * kubelet resolves a subPath when it starts a container: each container gets
 * the file of the version directory that was current at ITS start. The agent's
 * own mounts show the version current when the agent started, which is the
 * workload's only while both started under the same version. A restart of the
 * agent alone after a ConfigMap update breaks that: the agent then shows the
 * new version while slurmd still runs the old one. Hence the three sources of
 * a container's version in workload.h; the record exists because the pod
 * status outlives the agent's restarts, and the start time is
 * status.containerStatuses[].state.running.startedAt against the ctime of
 * ..data (kubelet resolved the version current at the container's start).
 *
 * The start-time rule has one blind spot, named in OPERATIONS: an update that
 * kubelet writes between creating and starting the workload container (a
 * fraction of a second) within the same wall-clock second.
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "strbuf.h"
#include "string-table.h"
#include "atomic-writer.h"
#include "workload.h"

static const char *const workload_source_table[_WORKLOAD_SOURCE_MAX] = {
        [WORKLOAD_SOURCE_NONE] = "none",
        [WORKLOAD_SOURCE_REMEMBERED] = "remembered",
        [WORKLOAD_SOURCE_RECORD] = "record",
        [WORKLOAD_SOURCE_START_TIME] = "start-time",
};

DEFINE_STRING_TABLE_TO_STRING(workload_source, WorkloadSource);

static void container_done(WorkloadContainer *c) {
        free(c->name);
        free(c->container_id);
        free(c->version);
        *c = (WorkloadContainer){};
}

Workload *workload_free(Workload *w) {
        if (!w)
                return NULL;
        for (size_t i = 0; i < w->n_containers; i++)
                container_done(&w->containers[i]);
        free(w->containers);
        free(w->problem);
        free(w);
        return NULL;
}

static int dup_or_null(const char *s, char **ret) {
        *ret = s ? strdup(s) : NULL;
        return s && !*ret ? -ENOMEM : 0;
}

int workload_copy(const Workload *w, Workload **ret) {
        _cleanup_(workload_freep) Workload *c = NULL;

        *ret = NULL;
        if (!w)
                return 0;
        c = calloc(1, sizeof(Workload));
        if (!c)
                return -ENOMEM;
        c->containers = calloc(WORKLOAD_MAX_CONTAINERS, sizeof(WorkloadContainer));
        if (!c->containers || dup_or_null(w->problem, &c->problem) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < w->n_containers; i++) {
                const WorkloadContainer *from = &w->containers[i];
                WorkloadContainer *to = &c->containers[i];

                *to = (WorkloadContainer){.running = from->running,
                                          .started_usec = from->started_usec,
                                          .source = from->source};
                c->n_containers++;
                if (dup_or_null(from->name, &to->name) < 0 ||
                    dup_or_null(from->container_id, &to->container_id) < 0 ||
                    dup_or_null(from->version, &to->version) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

void workload_record_done(WorkloadRecord *r) {
        for (size_t i = 0; i < r->n_entries; i++) {
                free(r->entries[i].name);
                free(r->entries[i].container_id);
                free(r->entries[i].version);
        }
        free(r->entries);
        *r = (WorkloadRecord){};
}

/* ---------------------------------------------------------------------------
 * Fields */

/* A container name as Kubernetes allows it (RFC 1123 label). */
static bool name_is_valid(const char *s) {
        size_t l = s ? strlen(s) : 0;

        if (l == 0 || l > WORKLOAD_MAX_NAME_LENGTH || s[0] == '-' || s[l - 1] == '-')
                return false;
        for (size_t i = 0; i < l; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
                        return false;
        return true;
}

/* "RUNTIME://ID": printable, no space, bracket or semicolon (the record's
 * separators), bounded. */
static bool container_id_is_valid(const char *s) {
        size_t l = s ? strlen(s) : 0;
        const char *sep = s ? strstr(s, "://") : NULL;

        if (l == 0 || l > WORKLOAD_MAX_ID_LENGTH || !sep || sep == s || sep[3] == '\0')
                return false;
        for (size_t i = 0; i < l; i++)
                if (s[i] <= ' ' || s[i] > '~' || s[i] == '[' || s[i] == ']' || s[i] == ';')
                        return false;
        return true;
}

/* A version id that can stand in the record: kubelet's, never a separator. */
static bool record_version_is_valid(const char *s) {
        if (!volume_version_is_valid(s))
                return false;
        for (const char *p = s; *p; p++)
                if (*p <= ' ' || *p > '~' || *p == '[' || *p == ']' || *p == ';')
                        return false;
        return true;
}

int workload_parse_time(const char *s, uint64_t *ret_usec) {
        struct tm tm = {};
        const char *p;
        time_t t;

        if (!s)
                return -EINVAL;
        p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!p)
                return -EINVAL;
        if (*p == '.') {
                p++;
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                while (*p >= '0' && *p <= '9')
                        p++;
        }
        if (!streq(p, "Z"))
                return -EINVAL;
        t = timegm(&tm);
        if (t < 0)
                return -EINVAL;
        *ret_usec = (uint64_t) t * 1000000u;
        return 0;
}

static const char *string_at(const json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

/* ---------------------------------------------------------------------------
 * The pod */

static bool mounts_a_path(const json_t *container, const WorkloadConfig *cfg) {
        const json_t *mounts = json_object_get(container, "volumeMounts"), *m;
        size_t i;

        if (!json_is_array(mounts))
                return false;
        json_array_foreach(mounts, i, m) {
                const char *path = string_at(m, "mountPath"), *sub = string_at(m, "subPath");

                if (!path || !sub || !*sub)
                        continue;
                for (size_t k = 0; k < cfg->n_paths; k++)
                        if (streq(path, cfg->paths[k]))
                                return true;
        }
        return false;
}

static bool is_named(const char *name, const char *const *names) {
        for (size_t i = 0; names && names[i]; i++)
                if (streq(name, names[i]))
                        return true;
        return false;
}

/* The container status of a name, from either list. */
static const json_t *find_status(const json_t *status, const char *name) {
        static const char *const lists[] = {"containerStatuses", "initContainerStatuses"};

        for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
                const json_t *a = json_object_get(status, lists[l]), *x;
                size_t i;

                if (!json_is_array(a))
                        continue;
                json_array_foreach(a, i, x) {
                        const char *n = string_at(x, "name");
                        if (n && streq(n, name))
                                return x;
                }
        }
        return NULL;
}

static int set_problem(Workload *w, const char *fmt, ...) _printf_(2, 3);
static int set_problem(Workload *w, const char *fmt, ...) {
        va_list ap;
        int r;

        for (size_t i = 0; i < w->n_containers; i++)
                container_done(&w->containers[i]);
        w->n_containers = 0;
        free(w->problem);
        va_start(ap, fmt);
        r = vasprintf(&w->problem, fmt, ap);
        va_end(ap);
        if (r < 0) {
                w->problem = NULL;
                return -ENOMEM;
        }
        return 0;
}

static int add_container(Workload *w, const char *name, const json_t *status) {
        const json_t *st = find_status(status, name);
        const json_t *running = json_object_get(json_object_get(st, "state"), "running");
        const char *id = string_at(st, "containerID");
        WorkloadContainer *c;

        if (w->n_containers >= WORKLOAD_MAX_CONTAINERS)
                return set_problem(w,
                                   "the pod has more than %u containers that mount the "
                                   "files; name the workload with --workload-container",
                                   WORKLOAD_MAX_CONTAINERS);
        c = &w->containers[w->n_containers];
        *c = (WorkloadContainer){.name = strdup(name)};
        if (!c->name)
                return -ENOMEM;
        w->n_containers++;

        /* Running, with a start time and an ID we can keep: else the
         * container counts as not running (it will resolve its mounts anew
         * when it starts). */
        if (json_is_object(running) && container_id_is_valid(id) &&
            workload_parse_time(string_at(running, "startedAt"), &c->started_usec) == 0) {
                c->container_id = strdup(id);
                if (!c->container_id)
                        return -ENOMEM;
                c->running = true;
        } else
                c->started_usec = 0;
        return 0;
}

static int take_list(Workload *w, const json_t *list, bool init, const WorkloadConfig *cfg,
                     const json_t *status) {
        const json_t *x;
        size_t i;
        int r;

        if (!json_is_array(list))
                return 0;
        json_array_foreach(list, i, x) {
                const char *name = string_at(x, "name"), *policy = string_at(x, "restartPolicy");

                if (w->problem)
                        return 0;
                if (!name_is_valid(name) || streq(name, cfg->agent_container))
                        continue;
                /* An init container runs beside the workload only as a
                 * sidecar (restartPolicy Always); the others are done before
                 * it starts. */
                if (init && !(policy && streq(policy, "Always")))
                        continue;
                if (cfg->names ? !is_named(name, cfg->names) : !mounts_a_path(x, cfg))
                        continue;
                r = add_container(w, name, status);
                if (r < 0)
                        return r;
        }
        return 0;
}

int workload_from_pod(const json_t *pod, const WorkloadConfig *cfg, Workload **ret) {
        _cleanup_(workload_freep) Workload *w = NULL;
        const json_t *spec = json_object_get(pod, "spec"), *status = json_object_get(pod, "status");
        int r;

        w = calloc(1, sizeof(Workload));
        if (!w)
                return -ENOMEM;
        w->containers = calloc(WORKLOAD_MAX_CONTAINERS, sizeof(WorkloadContainer));
        if (!w->containers)
                return -ENOMEM;

        r = take_list(w, json_object_get(spec, "containers"), false, cfg, status);
        if (r >= 0)
                r = take_list(w, json_object_get(spec, "initContainers"), true, cfg, status);
        if (r < 0)
                return r;

        for (size_t i = 0; !w->problem && cfg->names && cfg->names[i]; i++) {
                bool found = false;

                for (size_t k = 0; k < w->n_containers; k++)
                        found |= streq(w->containers[k].name, cfg->names[i]);
                if (!found)
                        r = set_problem(w,
                                        "the pod has no container \"%s\" (--workload-container) "
                                        "beside the agent's",
                                        cfg->names[i]);
        }
        if (r >= 0 && !w->problem && w->n_containers == 0)
                r = set_problem(w,
                                "no container of the pod but the agent's (\"%s\") mounts %s%s "
                                "with a subPath: name the workload with --workload-container",
                                cfg->agent_container,
                                cfg->n_paths > 0 ? cfg->paths[0] : "the files",
                                cfg->n_paths > 1 ? " or the other files" : "");
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

/* ---------------------------------------------------------------------------
 * The record */

static int record_add(WorkloadRecord *rec, const char *name, const char *id, const char *version) {
        WorkloadRecordEntry *e;

        e = reallocarray(rec->entries, rec->n_entries + 1, sizeof *e);
        if (!e)
                return -ENOMEM;
        rec->entries = e;
        e = &rec->entries[rec->n_entries];
        *e = (WorkloadRecordEntry){
                .name = strdup(name), .container_id = strdup(id), .version = strdup(version)};
        rec->n_entries++;
        return e->name && e->container_id && e->version ? 0 : -ENOMEM;
}

/* "NAME ID runs VERSION" into its three fields; false when it is not one. */
static bool split_entry(char *entry, char **name, char **id, char **version) {
        char *save = NULL, *runs;

        *name = strtok_r(entry, " ", &save);
        *id = strtok_r(NULL, " ", &save);
        runs = strtok_r(NULL, " ", &save);
        *version = strtok_r(NULL, " ", &save);
        return *name && *id && runs && *version && streq(runs, "runs") &&
               !strtok_r(NULL, " ", &save) && name_is_valid(*name) && container_id_is_valid(*id) &&
               record_version_is_valid(*version);
}

int workload_record_parse(const char *message, WorkloadRecord *ret) {
        _cleanup_(workload_record_done) WorkloadRecord rec = {};
        _cleanup_free_ char *body = NULL;
        const char *start, *p;
        char *save = NULL;
        size_t len;
        int r;

        *ret = (WorkloadRecord){};
        if (!message)
                return 0;
        /* The last one: a message names keys, never a bracket, but be sure. */
        start = NULL;
        for (p = strstr(message, WORKLOAD_RECORD_PREFIX); p;
             p = strstr(p + 1, WORKLOAD_RECORD_PREFIX))
                start = p;
        if (!start)
                return 0;
        start += strlen(WORKLOAD_RECORD_PREFIX);
        len = strlen(start);
        if (len < strlen(WORKLOAD_RECORD_SUFFIX) + 1 || !endswith(start, WORKLOAD_RECORD_SUFFIX))
                return 0;
        body = strndup(start, len - strlen(WORKLOAD_RECORD_SUFFIX));
        if (!body)
                return -ENOMEM;

        for (char *e = strtok_r(body, ";", &save); e; e = strtok_r(NULL, ";", &save)) {
                char *name, *id, *version;

                while (*e == ' ')
                        e++;
                if (rec.n_entries >= WORKLOAD_MAX_CONTAINERS ||
                    !split_entry(e, &name, &id, &version))
                        return 0; /* not what an agent writes: no evidence at all */
                r = record_add(&rec, name, id, version);
                if (r < 0)
                        return r;
        }
        *ret = rec;
        rec = (WorkloadRecord){};
        return 0;
}

int workload_record_format(const Workload *w, char **ret) {
        StrBuf b = STRBUF_INIT(4096);
        size_t n = 0;

        for (size_t i = 0; w && i < w->n_containers; i++) {
                const WorkloadContainer *c = &w->containers[i];

                if (!c->version || !c->container_id || !record_version_is_valid(c->version))
                        continue;
                (void) strbuf_printf(&b, "%s%s %s runs %s", n ? "; " : WORKLOAD_RECORD_PREFIX,
                                     c->name, c->container_id, c->version);
                n++;
        }
        if (n > 0)
                (void) strbuf_puts(&b, WORKLOAD_RECORD_SUFFIX);
        *ret = strbuf_steal(&b);
        return *ret ? 0 : -ENOMEM;
}

/* ---------------------------------------------------------------------------
 * Which version */

static int know(WorkloadContainer *c, const char *version, WorkloadSource source) {
        c->version = strdup(version);
        if (!c->version)
                return -ENOMEM;
        c->source = source;
        return 0;
}

int workload_resolve(Workload *w, const Workload *old, const WorkloadRecord *record,
                     const char *desired_version, uint64_t desired_since_usec) {
        for (size_t i = 0; w && i < w->n_containers; i++) {
                WorkloadContainer *c = &w->containers[i];
                int r = 0;

                if (!c->running || c->version)
                        continue;
                for (size_t k = 0; old && k < old->n_containers && !c->version && r >= 0; k++) {
                        const WorkloadContainer *o = &old->containers[k];
                        if (o->version && streq_ptr(o->container_id, c->container_id))
                                r = know(c, o->version, WORKLOAD_SOURCE_REMEMBERED);
                }
                for (size_t k = 0; record && k < record->n_entries && !c->version && r >= 0; k++) {
                        const WorkloadRecordEntry *e = &record->entries[k];
                        if (streq(e->name, c->name) && streq(e->container_id, c->container_id))
                                r = know(c, e->version, WORKLOAD_SOURCE_RECORD);
                }
                /* startedAt has whole seconds: a start in the same second as
                 * the flip counts as after it (the blind spot in the header). */
                if (!c->version && r >= 0 && desired_version && desired_since_usec > 0 &&
                    c->started_usec >= desired_since_usec / 1000000u * 1000000u)
                        r = know(c, desired_version, WORKLOAD_SOURCE_START_TIME);
                if (r < 0)
                        return r;
        }
        return 0;
}

bool workload_equal(const Workload *a, const Workload *b) {
        if (!a || !b)
                return a == b;
        if (a->n_containers != b->n_containers || !streq_ptr(a->problem, b->problem))
                return false;
        for (size_t i = 0; i < a->n_containers; i++) {
                const WorkloadContainer *x = &a->containers[i], *y = &b->containers[i];

                if (!streq(x->name, y->name) || x->running != y->running ||
                    !streq_ptr(x->container_id, y->container_id) ||
                    x->started_usec != y->started_usec || !streq_ptr(x->version, y->version))
                        return false;
        }
        return true;
}

static const char *or_none(const char *s) {
        return s ? s : "(none)";
}

int workload_check(const Workload *w, const char *mount_version, const char *desired_version,
                   char **ret_detail) {
        bool all_desired = true;
        int r;

        *ret_detail = NULL;
        if (!w) {
                *ret_detail = strdup("the agent has not read its pod yet, so it does not know "
                                     "which ConfigMap version the workload runs");
                return *ret_detail ? WORKLOAD_UNVERIFIABLE : -ENOMEM;
        }
        if (w->problem) {
                *ret_detail = strdup(w->problem);
                return *ret_detail ? WORKLOAD_UNVERIFIABLE : -ENOMEM;
        }
        for (size_t i = 0; i < w->n_containers; i++) {
                const WorkloadContainer *c = &w->containers[i];

                if (!c->running)
                        r = asprintf(ret_detail,
                                     "container %s is not running: it mounts the version current "
                                     "when it starts again",
                                     c->name);
                else if (!c->version)
                        r = asprintf(ret_detail,
                                     "container %s (%s) started before kubelet wrote ConfigMap "
                                     "version %s, and no record says which version it runs: "
                                     "replace the pod to be sure",
                                     c->name, c->container_id, or_none(desired_version));
                else if (!streq_ptr(c->version, mount_version) &&
                         !streq_ptr(c->version, desired_version))
                        r = asprintf(ret_detail,
                                     "container %s runs ConfigMap version %s, which the agent "
                                     "cannot read (its own mount is from %s): replace the pod",
                                     c->name, c->version, or_none(mount_version));
                else {
                        all_desired &= streq_ptr(c->version, desired_version);
                        continue;
                }
                if (r < 0) {
                        *ret_detail = NULL;
                        return -ENOMEM;
                }
                return WORKLOAD_UNVERIFIABLE;
        }
        /* Some run the agent's mount's version, the rest the ConfigMap's
         * own: the agent's view is the worst of them. */
        if (all_desired && !streq_ptr(mount_version, desired_version))
                return WORKLOAD_RUNS_DESIRED;
        return WORKLOAD_RUNS_MOUNT;
}
