/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake-rbac: the API server's request attributes and its RBAC authorizer, for
 * the fake API server (tests/tools/fake-apiserver.c). Never logs.
 *
 * Modelled on k8s.io/apiserver's RequestInfoFactory (which path is a
 * resource request, its verb, namespace, resource, subresource and name) and
 * on k8s.io/kubernetes' RBAC authorizer (plugin/pkg/auth/authorizer/rbac):
 * ClusterRoleBindings, then the RoleBindings of the request's namespace;
 * a binding grants its Role's or ClusterRole's rules to its subjects (User,
 * Group, ServiceAccount; a ServiceAccount without a namespace is in the
 * binding's); a rule allows a request when its verbs, apiGroups, resources
 * (with "*" and "*\/SUBRESOURCE") and resourceNames, or for a path its
 * nonResourceURLs (a trailing "*" is a prefix), all match. A binding whose
 * role is missing grants nothing and says so in the 403's message, as the
 * real authorizer does. Every authenticated user may GET discovery, health
 * and version paths (the built-in system:discovery and
 * system:public-info-viewer bindings). Not modelled: aggregated ClusterRoles
 * (aggregationRule), the built-in roles (cluster-admin, admin, edit, view:
 * a binding naming one grants nothing), impersonation, the Node and webhook
 * authorizers, and the escalation checks on writes of RBAC objects.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

/* RBAC objects read from all files, at most. */
#define FAKE_RBAC_MAX_OBJECTS 256u

/* One request as the authorizer sees it. Borrowed strings; resource is the
 * resource without the subresource. */
typedef struct RequestAttributes {
        bool resource_request;
        const char *verb; /* get list watch create update patch delete deletecollection */
        const char *path; /* for a non-resource request */
        char group[256], version[64], ns[254], resource[64], subresource[64], name[254];
} RequestAttributes;

/* The user a token authenticates as, with the groups the real server gives
 * it (system:serviceaccounts[:NS] for a service account, and
 * system:authenticated). */
typedef struct Subject {
        const char *user; /* borrowed */
        char groups[3][300];
} Subject;

typedef struct Rbac Rbac;

/* The attributes of METHOD PATH with the query's watch and fieldSelector
 * (NULL when absent), as RequestInfoFactory derives them. */
void request_attributes(const char *method, const char *path, const char *watch,
                        const char *field_selector, RequestAttributes *ret);

/* The subject user authenticates as, with its groups; user is borrowed and
 * must outlive s. */
void subject_init(Subject *s, const char *user);

/* A new, empty authorizer (denies every resource request), or NULL. */
Rbac *rbac_new(void);
Rbac *rbac_free(Rbac *r);

/* Adds the RBAC objects of a YAML (mini-yaml.h) or JSON file (a List, a
 * list, or one object); other kinds are skipped; namespaced objects without
 * a namespace get default_ns. 0; -EINVAL with *ret_error a new message;
 * -ENOMEM; or the -errno of reading the file. */
int rbac_load(Rbac *r, const char *path, const char *default_ns, char **ret_error);

/* Whether s may do a; when not and the bindings that apply to s name roles
 * that do not exist, *ret_reason is a new "RBAC: ..." text, else NULL. */
bool rbac_allows(const Rbac *r, const Subject *s, const RequestAttributes *a, char **ret_reason);

/* The 403 Status the real server answers when a is refused for user:
 * message, reason Forbidden, details. A new reference, or NULL. reason
 * (NULL: none) is the authorizer's, appended after ": ". */
json_t *forbidden_status_new(const RequestAttributes *a, const char *user, const char *reason);
