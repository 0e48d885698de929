/* SPDX-License-Identifier: Apache-2.0 */
/*
 * In-cluster configuration (incluster.h). kubelet sets
 * KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT in every container. The
 * URL is built by options_service_api_url(), the one place, which the
 * daemon's options also use through options_apply_environment(). The
 * downward API's POD_NAME and POD_NAMESPACE are read with the options
 * (options_apply_environment(), rollout_args_parse()), not here.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#include "fileio.h"
#include "incluster.h"
#include "log.h"
#include "options.h"

int incluster_api_url(char **ret_url) {
        return options_service_api_url(getenv("KUBERNETES_SERVICE_HOST"),
                                       getenv("KUBERNETES_SERVICE_PORT"), ret_url);
}

int incluster_credential_paths(const char *sa_dir, char **ret_ca, char **ret_token) {
        _cleanup_free_ char *ca = NULL, *token = NULL;

        if (asprintf(&ca, "%s/ca.crt", sa_dir) < 0 || asprintf(&token, "%s/token", sa_dir) < 0)
                return -ENOMEM;
        *ret_ca = TAKE_PTR(ca);
        *ret_token = TAKE_PTR(token);
        return 0;
}

int incluster_read_namespace(const char *sa_dir, char **ret) {
        _cleanup_free_ char *path = NULL, *data = NULL;
        size_t len;
        int r;

        if (asprintf(&path, "%s/namespace", sa_dir) < 0)
                return log_oom();
        r = read_file_at(AT_FDCWD, path, 0, OPTIONS_MAX_NAMESPACE_LENGTH + 2, &data, &len);
        if (r < 0)
                return log_error_errno(r,
                                       "The pod's namespace is unknown: set POD_NAMESPACE from "
                                       "the downward API (fieldRef metadata.namespace), or mount "
                                       "it at \"%s\" (%m).",
                                       path);
        while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r'))
                data[--len] = '\0';
        for (size_t i = 0; i < len; i++)
                if (!((data[i] >= 'a' && data[i] <= 'z') || (data[i] >= '0' && data[i] <= '9') ||
                      data[i] == '-'))
                        len = 0;
        if (len == 0 || strlen(data) != len)
                return log_error_errno(-EBADMSG, "\"%s\" does not hold a namespace name.", path);
        *ret = TAKE_PTR(data);
        return 0;
}
