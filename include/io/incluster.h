/* SPDX-License-Identifier: Apache-2.0 */
/*
 * In-cluster configuration: what Kubernetes gives a pod to find and trust
 * the API server. kubelet sets KUBERNETES_SERVICE_HOST and
 * KUBERNETES_SERVICE_PORT in every container; a projected service-account
 * volume holds token, ca.crt and namespace (OPTIONS_DEFAULT_SERVICEACCOUNT_DIR
 * by default). The daemon and the rollout tool find them here; the URL is
 * built by options_service_api_url(), the one place, which the daemon's
 * options use through options_apply_environment(). The downward API's
 * POD_NAME and POD_NAMESPACE are read with the options
 * (options_apply_environment(), rollout_args_parse()). What each does without
 * ca.crt is its own (the daemon refuses, the rollout tool trusts the system's
 * CAs and sends no token): see their callers.
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
