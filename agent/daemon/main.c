/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aicr-enroot-agent: tells which pods run an enroot configuration that no
 * longer matches the ConfigMap, and why. main() only dispatches: the daemon,
 * the readiness probe, or a one-shot command (lint, diff; rollout is
 * aicr-enroot-rollout).
 */
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "check.h"
#include "commands.h"
#include "httpd.h"
#include "log.h"
#include "manager.h"
#include "options.h"
#include "running-worker.h"

static const char *lookup_env(const char *name) {
        return getenv(name);
}

static int check_config(Options *o) {
        _cleanup_free_ char *error = NULL;
        HttpdListen listen;

        if (options_validate_daemon(o, &error) < 0 ||
            options_apply_environment(o, lookup_env, &error) < 0 ||
            httpd_parse_listen(o->listen, &listen, &error) < 0) {
                log_error("%s", error ? error : "Out of memory.");
                return EXIT_TROUBLE;
        }
        printf("The options are valid: %zu file(s), ConfigMap directory %s, listening on %s.\n",
               o->n_files, o->desired_dir, o->listen);
        if (o->kube_enabled)
                printf("Pod condition %s on pod %s%s%s through %s.\n", o->condition_type,
                       strempty(o->pod_namespace), o->pod_namespace ? "/" : "", o->pod_name,
                       o->kube_api);
        else
                printf("No pod condition: %s.\n",
                       o->kube_disabled_reason ? o->kube_disabled_reason : "--kube off");
        return EXIT_SUCCESS;
}

static int run_daemon(Options *o) {
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_free_ char *error = NULL;
        int rc = EXIT_SUCCESS;

        if (options_validate_daemon(o, &error) < 0 ||
            options_apply_environment(o, lookup_env, &error) < 0) {
                log_error("%s. Try \"aicr-enroot-agent --help\".", error ? error : "Out of memory");
                return EXIT_TROUBLE;
        }
        if (manager_new(o, &m) < 0 || manager_run(m) < 0)
                rc = EXIT_FAILURE;
        m = manager_free(m);
        if (running_worker_left_behind() > 0) {
                /* A read of the running files still waits for its file
                 * system. exit() would run the libraries' exit handlers
                 * while that thread may wake and use what they free (and a
                 * sanitizer's leak check would wait for a thread the kernel
                 * holds): end at once; the kernel ends the thread too. */
                log_notice("Exiting while a read of the running files still waits for its "
                           "file system.");
                (void) fflush(NULL);
                _exit(rc);
        }
        return rc;
}

int main(int argc, char **argv) {
        _cleanup_(options_done) Options o = {};
        _cleanup_free_ char *error = NULL;
        int r;

        log_setup();

        /* The daemon holds a service-account token: no core dump
         * of it, and no /proc/PID/mem, environ or fd for another process of
         * the same uid (the kernel makes /proc/PID root's). The process
         * still reads its own /proc/self. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
                log_error_errno(errno, "Cannot make the process non-dumpable: %m");
                return EXIT_TROUBLE;
        }

        if (argc > 1 && streq(argv[1], "lint"))
                return cmd_lint(argc - 1, argv + 1);
        if (argc > 1 && streq(argv[1], "diff"))
                return cmd_diff(argc - 1, argv + 1);
        if (argc > 1 && streq(argv[1], "rollout")) {
                /* The rollout tool is its own program: the daemon links none
                 * of it. */
                log_error("rollout is the program aicr-enroot-rollout: run \"aicr-enroot-agent "
                          "rollout\", which finds it, or %s/aicr-enroot-rollout.",
                          PKGLIBEXECDIR);
                return EXIT_TROUBLE;
        }

        r = options_parse(argc, argv, &o, &error);
        if (r < 0) {
                log_error("%s. Try \"aicr-enroot-agent --help\".", error ? error : "Out of memory");
                return EXIT_TROUBLE;
        }
        log_set_max_level(o.log_level);

        switch (o.action) {
        case ACTION_HELP:
                fputs(options_help, stdout);
                return EXIT_SUCCESS;
        case ACTION_VERSION:
                printf("%s %s\n", PACKAGE_NAME, PACKAGE_VERSION);
                return EXIT_SUCCESS;
        case ACTION_CHECK:
                return check_run(o.listen, o.require_current, o.check_timeout_usec);
        case ACTION_CHECK_CONFIG:
                return check_config(&o);
        default:
                return run_daemon(&o);
        }
}
