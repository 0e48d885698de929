/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aicr-enroot-agent rollout [plan|apply|status|abort] [OPTIONS]
 *
 * The command: it reads the arguments (rollout-args.c),
 * connects to the API server and the Slurm commands, and runs the rollout
 * (rollout-run.c).
 */
#include <stdlib.h>
#include <unistd.h>

#include "incluster.h"
#include "kube.h"
#include "log.h"
#include "rollout-cmd.h"
#include "shell.h"

static int connect_kube(Rollout *r) {
        const RolloutArgs *a = r->args;
        _cleanup_free_ char *url = NULL, *ca = NULL, *token = NULL;
        bool plain;
        int k;

        if (a->kube_api)
                url = strdup(a->kube_api);
        else {
                k = incluster_api_url(&url);
                if (k == -ENOENT) {
                        log_error(
                                "The API server is unknown: give --kube-api (for example "
                                "http://127.0.0.1:8001 through `kubectl proxy`) or run in a pod.");
                        return -EINVAL;
                }
        }
        if (!url)
                return log_oom();
        r->api_url = strdup(url);
        if (!r->api_url)
                return log_oom();
        if (kube_api_url_check(url, &plain) < 0)
                plain = false; /* kube_client_new() below says what is wrong */
        if (!plain && incluster_credential_paths(a->sa_dir, &ca, &token) < 0)
                return log_oom();
        if (ca && access(ca, R_OK) < 0) {
                /* not in a pod: the system's CAs, and no token */
                free(ca);
                free(token);
                ca = token = NULL;
        }
        r->namespace =
                strdup(a->namespace && *a->namespace ? a->namespace : ROLLOUT_DEFAULT_NAMESPACE);
        if (!r->namespace)
                return log_oom();
        k = sd_event_new(&r->event);
        if (k < 0)
                return log_error_errno(k, "Cannot create an event loop: %m");
        k = kube_client_new(r->event,
                            &(KubeConfig){.api_url = url,
                                          .ca_file = ca,
                                          .token_file = token,
                                          .user_agent = PACKAGE_NAME "-rollout/" PACKAGE_VERSION},
                            &r->kube);
        if (k == -EPROTONOSUPPORT)
                return log_error_errno(k,
                                       "--kube-api: \"%s\" is neither https:// nor http:// to "
                                       "this machine (localhost, [::1] or 127.x.y.z: kubectl "
                                       "proxy).",
                                       url);
        if (k == -EINVAL)
                return log_error_errno(k,
                                       "--kube-api: \"%s\" is not SCHEME://HOST[:PORT][/PATH] "
                                       "(no user name, query or fragment).",
                                       url);
        if (k < 0)
                return log_error_errno(k, "Cannot use the API server %s: %m", url);
        return 0;
}

int cmd_rollout(int argc, char **argv) {
        _cleanup_(rollout_done) Rollout r = {};
        _cleanup_(shell_words_freep) char **prefix = NULL;
        RolloutArgs a;
        int k;

        k = rollout_args_parse(argc, argv, &a);
        if (k != 0)
                return k > 0 ? EXIT_ROLLOUT_DONE : EXIT_ROLLOUT_USAGE;
        r.args = &a;
        r.report = json_object();
        r.steps = json_array();
        if (!r.report || !r.steps)
                return log_oom(), EXIT_ROLLOUT_FAILED;

        if (connect_kube(&r) < 0)
                return EXIT_ROLLOUT_USAGE;
        if (a.slurm_exec) {
                /* rollout_args_parse() split it once already: only ENOMEM is left */
                k = shell_split_words(a.slurm_exec, &prefix, NULL);
                if (k < 0)
                        return log_error_errno(k, "--slurm-exec: %m"), EXIT_ROLLOUT_USAGE;
                a.slurm.exec_prefix = prefix;
        }
        k = slurm_client_new(&a.slurm, &r.slurm);
        if (k < 0)
                return log_error_errno(k, "Cannot set up the Slurm commands: %m"),
                       EXIT_ROLLOUT_USAGE;
        return rollout_run(&r);
}
