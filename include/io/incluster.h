/* SPDX-License-Identifier: Apache-2.0 */
/*
 * In-cluster configuration: where a pod finds and how it trusts the API
 * server (docs/DESIGN.md §6): KUBERNETES_SERVICE_HOST and
 * KUBERNETES_SERVICE_PORT, and the projected service-account volume's token,
 * ca.crt and namespace (OPTIONS_DEFAULT_SERVICEACCOUNT_DIR by default). Shared
 * by the daemon and the rollout tool; what each does without ca.crt is its
 * caller's choice (the daemon refuses, the rollout tool trusts the system's
 * CAs and sends no token).
 */
#pragma once

/* The API server from KUBERNETES_SERVICE_HOST and _PORT. Returns 0 with a
 * new string, -ENOENT when KUBERNETES_SERVICE_HOST is unset or empty (not in
 * a pod), -ENOMEM. Does not log. */
int incluster_api_url(char **ret_url);

/* The paths of sa_dir's ca.crt and token, new strings. Returns 0, -ENOMEM.
 * Does not log. */
int incluster_credential_paths(const char *sa_dir, char **ret_ca, char **ret_token);

/* Reads the pod's namespace from sa_dir's namespace file. Returns 0 with a
 * new string; logs what to do and returns -errno when it cannot be read,
 * -EBADMSG when it holds no namespace name. */
int incluster_read_namespace(const char *sa_dir, char **ret);
