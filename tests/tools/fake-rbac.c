/* SPDX-License-Identifier: Apache-2.0 */
/* RBAC for the fake API server: see fake-rbac.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake-rbac.h"
#include "fileio.h"
#include "macro.h"
#include "mini-yaml.h"
#include "strbuf.h"

#define RBAC_API_VERSION      "rbac.authorization.k8s.io/v1"
#define RBAC_MAX_FILE_BYTES   (1024u * 1024u)
#define SERVICEACCOUNT_PREFIX "system:serviceaccount:"

struct Rbac {
        /* Role, ClusterRole, RoleBinding, ClusterRoleBinding objects as
         * read, each with metadata.namespace set where namespaced */
        json_t *objects;
};

/* ---------------------------------------------------------------------------
 * Request attributes (k8s.io/apiserver pkg/endpoints/request/requestinfo.go) */

static bool copy_part(char *buf, size_t size, const char *s, size_t n) {
        if (n >= size)
                return false;
        memcpy(buf, s, n);
        buf[n] = '\0';
        return true;
}

void request_attributes(const char *method, const char *path, const char *watch,
                        const char *field_selector, RequestAttributes *ret) {
        RequestAttributes a = {.path = path};
        const char *parts[8];
        size_t len[8], n = 0, first;
        const char *p = path;

        a.verb = streq(method, "POST")     ? "create"
                 : streq(method, "PUT")    ? "update"
                 : streq(method, "PATCH")  ? "patch"
                 : streq(method, "DELETE") ? "delete"
                                           : "get";
        while (*p && n < ELEMENTSOF(parts)) {
                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                parts[n] = p;
                len[n] = strcspn(p, "/");
                p += len[n++];
        }
        /* /api/VERSION/..., /apis/GROUP/VERSION/...: three parts at least
         * after the prefix's, else a non-resource path (discovery) */
        if (n < 3 || *p)
                goto done;
        if (len[0] == 3 && strncmp(parts[0], "api", 3) == 0)
                first = 1;
        else if (len[0] == 4 && strncmp(parts[0], "apis", 4) == 0) {
                if (n < 4 || !copy_part(a.group, sizeof a.group, parts[1], len[1]))
                        goto done;
                first = 2;
        } else
                goto done;
        if (!copy_part(a.version, sizeof a.version, parts[first], len[first]))
                goto done;
        first++;
        if (len[first] == 10 && strncmp(parts[first], "namespaces", 10) == 0 && n > first + 1) {
                if (!copy_part(a.ns, sizeof a.ns, parts[first + 1], len[first + 1]))
                        goto done;
                /* namespaces/NS/RESOURCE/...; namespaces/NS alone is the
                 * namespace object itself */
                if (n > first + 2 &&
                    !(len[first + 2] == 6 && strncmp(parts[first + 2], "status", 6) == 0) &&
                    !(len[first + 2] == 8 && strncmp(parts[first + 2], "finalize", 8) == 0))
                        first += 2;
        }
        if (!copy_part(a.resource, sizeof a.resource, parts[first], len[first]) ||
            (n > first + 1 &&
             !copy_part(a.name, sizeof a.name, parts[first + 1], len[first + 1])) ||
            (n > first + 2 &&
             !copy_part(a.subresource, sizeof a.subresource, parts[first + 2], len[first + 2])))
                goto done;
        a.resource_request = true;
        if (!a.name[0] && streq(a.verb, "get")) {
                bool w = watch &&
                         (streq(watch, "1") || streq(watch, "true") || streq(watch, "t") ||
                          streq(watch, "True") || streq(watch, "TRUE") || streq(watch, "T"));
                const char *eq;

                a.verb = w ? "watch" : "list";
                /* a list or watch of one name is authorized as that name */
                if (field_selector && (eq = startswith(field_selector, "metadata.name=")) &&
                    (*eq != '=' || *++eq) && !strchr(eq, ',') && !strchr(eq, '/'))
                        (void) copy_part(a.name, sizeof a.name, eq, strlen(eq));
        } else if (!a.name[0] && streq(a.verb, "delete"))
                a.verb = "deletecollection";
done:
        *ret = a;
}

void subject_init(Subject *s, const char *user) {
        const char *rest = startswith(user, SERVICEACCOUNT_PREFIX);

        *s = (Subject){.user = user};
        snprintf(s->groups[0], sizeof s->groups[0], "system:authenticated");
        if (rest && strchr(rest, ':')) {
                snprintf(s->groups[1], sizeof s->groups[1], "system:serviceaccounts");
                snprintf(s->groups[2], sizeof s->groups[2], "system:serviceaccounts:%.*s",
                         (int) strcspn(rest, ":"), rest);
        }
}

/* ---------------------------------------------------------------------------
 * Loading */

Rbac *rbac_new(void) {
        Rbac *r = calloc(1, sizeof *r);

        if (!r)
                return NULL;
        r->objects = json_array();
        if (!r->objects) {
                free(r);
                return NULL;
        }
        return r;
}

Rbac *rbac_free(Rbac *r) {
        if (!r)
                return NULL;
        json_decref(r->objects);
        free(r);
        return NULL;
}

static bool is_string_list(const json_t *v) {
        size_t i;
        json_t *x;

        if (!v || json_is_null(v))
                return true;
        if (!json_is_array(v))
                return false;
        json_array_foreach(v, i, x) if (!json_is_string(x)) return false;
        return true;
}

/* What the real server's validation refuses in the fields read here. */
static const char *invalid_object(const char *kind, const json_t *o) {
        const json_t *rules = json_object_get(o, "rules"), *rule, *subjects, *sub, *ref;
        bool cluster = kind[0] == 'C';
        size_t i;

        if (!json_string_value(json_object_get(json_object_get(o, "metadata"), "name")))
                return "metadata.name: Required value";
        if (!streq_ptr(json_string_value(json_object_get(o, "apiVersion")), RBAC_API_VERSION))
                return "apiVersion: must be " RBAC_API_VERSION;
        if (endswith(kind, "Role")) {
                if (json_object_get(o, "aggregationRule"))
                        return "aggregationRule: not modelled by this fake";
                if (!json_is_null(rules) && rules && !json_is_array(rules))
                        return "rules: must be a list";
                json_array_foreach(rules, i, rule) {
                        const json_t *verbs = json_object_get(rule, "verbs");

                        if (!json_is_object(rule) || !json_is_array(verbs) ||
                            json_array_size(verbs) == 0 || !is_string_list(verbs))
                                return "rules[].verbs: Required value";
                        if (!is_string_list(json_object_get(rule, "apiGroups")) ||
                            !is_string_list(json_object_get(rule, "resources")) ||
                            !is_string_list(json_object_get(rule, "resourceNames")) ||
                            !is_string_list(json_object_get(rule, "nonResourceURLs")))
                                return "rules[]: apiGroups, resources, resourceNames and "
                                       "nonResourceURLs must be lists of strings";
                        if (json_array_size(json_object_get(rule, "nonResourceURLs")) > 0 &&
                            (!cluster || json_array_size(json_object_get(rule, "resources")) > 0))
                                return "rules[].nonResourceURLs: only in a ClusterRole, and not "
                                       "with resources";
                        if (json_array_size(json_object_get(rule, "nonResourceURLs")) == 0 &&
                            json_array_size(json_object_get(rule, "resources")) == 0)
                                return "rules[]: resource rules need resources (and apiGroups)";
                }
                return NULL;
        }
        ref = json_object_get(o, "roleRef");
        if (!streq_ptr(json_string_value(json_object_get(ref, "apiGroup")),
                       "rbac.authorization.k8s.io") ||
            !json_string_value(json_object_get(ref, "name")) ||
            !(streq_ptr(json_string_value(json_object_get(ref, "kind")), "ClusterRole") ||
              (!cluster && streq_ptr(json_string_value(json_object_get(ref, "kind")), "Role"))))
                return "roleRef: apiGroup rbac.authorization.k8s.io, kind Role (in a "
                       "RoleBinding) or ClusterRole, and a name";
        subjects = json_object_get(o, "subjects");
        if (subjects && !json_is_null(subjects) && !json_is_array(subjects))
                return "subjects: must be a list";
        json_array_foreach(subjects, i, sub) {
                const char *k = json_string_value(json_object_get(sub, "kind"));

                if (!k || !json_string_value(json_object_get(sub, "name")) ||
                    !(streq(k, "User") || streq(k, "Group") || streq(k, "ServiceAccount")))
                        return "subjects[]: kind User, Group or ServiceAccount, and a name";
                if (cluster && streq(k, "ServiceAccount") &&
                    !json_string_value(json_object_get(sub, "namespace")))
                        return "subjects[].namespace: Required value for a ServiceAccount";
        }
        return NULL;
}

static int add_object(Rbac *r, json_t *o, const char *default_ns, char **ret_error) {
        const char *kind = json_string_value(json_object_get(o, "kind")), *why;
        json_t *meta = json_object_get(o, "metadata");

        if (!kind || !(streq(kind, "Role") || streq(kind, "ClusterRole") ||
                       streq(kind, "RoleBinding") || streq(kind, "ClusterRoleBinding")))
                return 0; /* ServiceAccounts and the rest: not RBAC */
        why = invalid_object(kind, o);
        if (why)
                return asprintf(ret_error, "%s %s: %s", kind,
                                strnull(json_string_value(json_object_get(meta, "name"))), why) < 0
                               ? -ENOMEM
                               : -EINVAL;
        if (kind[0] == 'C')
                json_object_del(meta, "namespace"); /* cluster-scoped */
        else if (!json_string_value(json_object_get(meta, "namespace")))
                json_object_set_new(meta, "namespace", json_string(default_ns));
        if (json_array_size(r->objects) >= FAKE_RBAC_MAX_OBJECTS)
                return asprintf(ret_error, "more than %u RBAC objects", FAKE_RBAC_MAX_OBJECTS) < 0
                               ? -ENOMEM
                               : -EINVAL;
        return json_array_append(r->objects, o) < 0 ? -ENOMEM : 0;
}

int rbac_load(Rbac *r, const char *path, const char *default_ns, char **ret_error) {
        _cleanup_(json_decrefp) json_t *docs = NULL;
        _cleanup_free_ char *data = NULL, *error = NULL;
        json_t *items, *o;
        size_t len, i;
        int k;

        k = read_file_at(AT_FDCWD, path, 0, RBAC_MAX_FILE_BYTES, &data, &len);
        if (k < 0)
                return k;
        if (len > 0 && (data[0] == '{' || data[0] == '[')) {
                json_error_t err;

                docs = json_loadb(data, len, 0, &err);
                if (!docs)
                        return asprintf(ret_error, "line %d: %s", err.line, err.text) < 0 ? -ENOMEM
                                                                                          : -EINVAL;
                /* a List (kubectl -o json of several objects) or one object */
                items = json_object_get(docs, "items");
                if (json_is_object(docs) && json_is_array(items)) {
                        json_incref(items);
                        json_decref(docs);
                        docs = items;
                }
        } else {
                k = mini_yaml_parse(data, len, &docs, &error);
                if (k < 0) {
                        if (k == -EINVAL)
                                *ret_error = TAKE_PTR(error);
                        return k;
                }
        }
        if (json_is_object(docs)) {
                json_t *a = json_array();

                if (!a || json_array_append(a, docs) < 0) {
                        json_decref(a);
                        return -ENOMEM;
                }
                json_decref(docs);
                docs = a;
        }
        json_array_foreach(docs, i, o) {
                k = add_object(r, o, default_ns, ret_error);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* ---------------------------------------------------------------------------
 * Authorizing (plugin/pkg/auth/authorizer/rbac/rbac.go, rbac/v1 helpers) */

static bool list_has(const json_t *list, const char *want, bool star) {
        size_t i;
        json_t *x;

        json_array_foreach(list, i, x) {
                const char *v = json_string_value(x);

                if (v && (streq(v, want) || (star && streq(v, "*"))))
                        return true;
        }
        return false;
}

static bool resource_matches(const json_t *rule, const RequestAttributes *a) {
        char combined[sizeof a->resource + sizeof a->subresource + 1];
        size_t i;
        json_t *x;

        snprintf(combined, sizeof combined, "%s%s%s", a->resource, a->subresource[0] ? "/" : "",
                 a->subresource);
        json_array_foreach(json_object_get(rule, "resources"), i, x) {
                const char *v = json_string_value(x);

                if (streq(v, "*") || streq(v, combined))
                        return true;
                if (a->subresource[0] && startswith(v, "*/") && streq(v + 2, a->subresource))
                        return true;
        }
        return false;
}

static bool url_matches(const json_t *rule, const char *path) {
        size_t i;
        json_t *x;

        json_array_foreach(json_object_get(rule, "nonResourceURLs"), i, x) {
                const char *v = json_string_value(x);
                size_t n = strlen(v);

                if (streq(v, "*") || streq(v, path) ||
                    (n > 0 && v[n - 1] == '*' && strncmp(v, path, n - 1) == 0))
                        return true;
        }
        return false;
}

static bool rule_allows(const json_t *rule, const RequestAttributes *a) {
        const json_t *names = json_object_get(rule, "resourceNames");

        if (!list_has(json_object_get(rule, "verbs"), a->verb, true))
                return false;
        if (!a->resource_request)
                return url_matches(rule, a->path);
        return list_has(json_object_get(rule, "apiGroups"), a->group, true) &&
               resource_matches(rule, a) &&
               (json_array_size(names) == 0 || (a->name[0] && list_has(names, a->name, false)));
}

static const json_t *find_object(const Rbac *r, const char *kind, const char *ns,
                                 const char *name) {
        size_t i;
        json_t *o;

        json_array_foreach(r->objects, i, o) {
                const json_t *meta = json_object_get(o, "metadata");

                if (streq(json_string_value(json_object_get(o, "kind")), kind) &&
                    streq(json_string_value(json_object_get(meta, "name")), name) &&
                    streq_ptr(json_string_value(json_object_get(meta, "namespace")), ns))
                        return o;
        }
        return NULL;
}

static bool subject_matches(const json_t *sub, const Subject *s, const char *binding_ns) {
        const char *kind = json_string_value(json_object_get(sub, "kind"));
        const char *name = json_string_value(json_object_get(sub, "name"));
        const char *ns = json_string_value(json_object_get(sub, "namespace"));

        if (streq(kind, "User"))
                return streq(name, s->user);
        if (streq(kind, "Group")) {
                for (size_t i = 0; i < ELEMENTSOF(s->groups); i++)
                        if (s->groups[i][0] && streq(name, s->groups[i]))
                                return true;
                return false;
        }
        {
                _cleanup_free_ char *sa = NULL;

                if (asprintf(&sa, SERVICEACCOUNT_PREFIX "%s:%s", ns ? ns : strempty(binding_ns),
                             name) < 0)
                        return false;
                return streq(sa, s->user);
        }
}

static bool binding_applies(const json_t *b, const Subject *s) {
        const char *ns =
                json_string_value(json_object_get(json_object_get(b, "metadata"), "namespace"));
        size_t i;
        json_t *sub;

        json_array_foreach(json_object_get(b, "subjects"), i,
                           sub) if (subject_matches(sub, s, ns)) return true;
        return false;
}

bool rbac_allows(const Rbac *r, const Subject *s, const RequestAttributes *a, char **ret_reason) {
        static const char *const public_paths[] = {
                "/api",    "/api/*",   "/apis",     "/apis/*",  "/healthz",   "/livez",
                "/readyz", "/version", "/version/", "/openapi", "/openapi/*",
        };
        _cleanup_(strbuf_done) StrBuf missing = STRBUF_INIT(4096);
        unsigned n_missing = 0;
        size_t i;
        json_t *b;

        *ret_reason = NULL;
        if (!a->resource_request && streq(a->verb, "get"))
                for (size_t k = 0; k < ELEMENTSOF(public_paths); k++) {
                        size_t n = strlen(public_paths[k]);

                        if (streq(a->path, public_paths[k]) ||
                            (public_paths[k][n - 1] == '*' &&
                             strncmp(a->path, public_paths[k], n - 1) == 0))
                                return true;
                }
        json_array_foreach(r->objects, i, b) {
                const char *kind = json_string_value(json_object_get(b, "kind"));
                const char *ns = json_string_value(
                        json_object_get(json_object_get(b, "metadata"), "namespace"));
                const json_t *ref = json_object_get(b, "roleRef"), *role, *rule;
                const char *ref_kind = json_string_value(json_object_get(ref, "kind"));
                const char *ref_name = json_string_value(json_object_get(ref, "name"));
                size_t j;

                /* ClusterRoleBindings everywhere; RoleBindings in their
                 * namespace, and never for a cluster-scoped request */
                if (streq(kind, "RoleBinding")) {
                        if (!a->resource_request || !streq(ns, a->ns))
                                continue;
                } else if (!streq(kind, "ClusterRoleBinding"))
                        continue;
                if (!binding_applies(b, s))
                        continue;
                role = find_object(r, ref_kind, streq(ref_kind, "Role") ? ns : NULL, ref_name);
                if (!role) {
                        (void) strbuf_printf(
                                &missing, "%s%s.rbac.authorization.k8s.io \"%s\" not found",
                                n_missing++ ? ", " : "",
                                streq(ref_kind, "Role") ? "role" : "clusterrole", ref_name);
                        continue;
                }
                json_array_foreach(json_object_get(role, "rules"), j,
                                   rule) if (rule_allows(rule, a)) return true;
        }
        /* utilerrors.NewAggregate: one error as it is, several in brackets */
        if (n_missing > 0 && asprintf(ret_reason, n_missing == 1 ? "RBAC: %s" : "RBAC: [%s]",
                                      strbuf_str(&missing)) < 0)
                *ret_reason = NULL;
        return false;
}

json_t *forbidden_status_new(const RequestAttributes *a, const char *user, const char *reason) {
        _cleanup_free_ char *what = NULL, *message = NULL, *qualified = NULL;
        char combined[sizeof a->resource + sizeof a->subresource + 1];
        json_t *details;
        int k;

        /* responsewriters.forbiddenMessage, then apierrors.NewForbidden */
        snprintf(combined, sizeof combined, "%s%s%s", a->resource, a->subresource[0] ? "/" : "",
                 a->subresource);
        if (!a->resource_request)
                k = asprintf(&what, "User \"%s\" cannot %s path \"%s\"", user, a->verb, a->path);
        else if (a->ns[0])
                k = asprintf(&what,
                             "User \"%s\" cannot %s resource \"%s\" in API group \"%s\" in the "
                             "namespace \"%s\"",
                             user, a->verb, combined, a->group, a->ns);
        else
                k = asprintf(&what,
                             "User \"%s\" cannot %s resource \"%s\" in API group \"%s\" at the "
                             "cluster scope",
                             user, a->verb, combined, a->group);
        if (k < 0)
                return NULL;
        if (!a->resource_request)
                k = asprintf(&message, "forbidden: %s%s%s", what, reason ? ": " : "",
                             strempty(reason));
        else {
                if (asprintf(&qualified, "%s%s%s", a->resource, a->group[0] ? "." : "", a->group) <
                    0)
                        return NULL;
                k = a->name[0] ? asprintf(&message, "%s \"%s\" is forbidden: %s%s%s", qualified,
                                          a->name, what, reason ? ": " : "", strempty(reason))
                               : asprintf(&message, "%s is forbidden: %s%s%s", qualified, what,
                                          reason ? ": " : "", strempty(reason));
        }
        if (k < 0)
                return NULL;
        details = json_object();
        if (a->name[0])
                json_object_set_new(details, "name", json_string(a->name));
        if (a->group[0])
                json_object_set_new(details, "group", json_string(a->group));
        if (a->resource_request)
                json_object_set_new(details, "kind", json_string(a->resource));
        return json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:o, s:i}", "kind", "Status",
                         "apiVersion", "v1", "metadata", "status", "Failure", "message", message,
                         "reason", "Forbidden", "details", details, "code", 403);
}
