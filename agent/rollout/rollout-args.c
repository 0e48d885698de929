/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rollout command's arguments: its options, their defaults and --help.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "condition-type.h"
#include "log.h"
#include "options.h"
#include "rollout-cmd.h"
#include "shell.h"
#include "string-table.h"

/* Sized by its highest entry: RolloutAction has no _MAX or invalid value,
 * which would need a case in every switch on it. The lookup returns an int
 * for the same reason: the index, or -1 for no action of that name. */
static const char *const rollout_action_table[] = {
        [ACTION_PLAN] = "plan",
        [ACTION_APPLY] = "apply",
        [ACTION_STATUS] = "status",
        [ACTION_ABORT] = "abort",
};

DEFINE_STRING_TABLE_TO_STRING(rollout_action, RolloutAction);
DEFINE_PRIVATE_STRING_TABLE_FROM_STRING(rollout_action, int, -1);

/* A command line given to an option (--slurm-exec, --notify-command) must
 * split into words as the rollout will split it when it runs it. */
static int check_words(const char *option, const char *arg) {
        _cleanup_(shell_words_freep) char **words = NULL;
        const char *why = NULL;
        int k = shell_split_words(arg, &words, &why);

        if (k == -ENOMEM)
                return log_oom();
        if (k < 0)
                return log_error_errno(-EINVAL, "%s: \"%s\": %s.", option, arg, why);
        return 0;
}

static void help(void) {
        printf("Usage: aicr-enroot-agent rollout [plan|apply|status|abort] [OPTIONS]\n\n"
               "Replaces exactly the worker and login pods whose agent reports the enroot\n"
               "configuration as drifted, following the maintenance procedure: drain their\n"
               "Slurm nodes, wait for their jobs, replace worker pods one at a time, then login\n"
               "pods, then resume the nodes this rollout drained. Every reason it sets names\n"
               "the rollout, so an interrupted rollout is found again from the cluster.\n\n"
               "  plan (default)            print what apply would do; change nothing\n"
               "  apply                     do it (continues an interrupted rollout)\n"
               "  status                    what a rollout in progress holds and what is left\n"
               "  abort                     resume the nodes this rollout drained and did not\n"
               "                            replace\n\n"
               "  --namespace NS            the Slurm namespace (default $POD_NAMESPACE, else "
               "slurm)\n"
               "  --kube-api URL            https://HOST:PORT, or http://127.0.0.1:PORT through\n"
               "                            kubectl proxy (default: in-cluster)\n"
               "  --serviceaccount-dir DIR  token and ca.crt for https (default in-cluster)\n"
               "  --worker-selector SEL     default " ROLLOUT_DEFAULT_WORKERS "\n"
               "  --login-selector SEL      default " ROLLOUT_DEFAULT_LOGINS "\n"
               "  --node-name hostname|pod  a worker's Slurm node: hostname (default): the\n"
               "                            label " ROLLOUT_HOSTNAME_LABEL ",\n"
               "                            else spec.hostname, else the pod name; pod: always\n"
               "                            the pod name\n"
               "  --condition-type TYPE     default " CONDITION_DEFAULT_TYPE "\n"
               "  --strategy window|rolling window: drain all, replace, resume (the guide's);\n"
               "                            rolling: --batch nodes at a time (default 1)\n"
               "  --exclude NODE            leave this node alone (repeatable)\n"
               "  --jobs-timeout SECONDS    wait this long for jobs to end (default 86400)\n"
               "  --pod-timeout SECONDS     wait this long for each replacement (default 600)\n"
               "  --poll-interval MS        how often to look while waiting (default 2000)\n"
               "  --settle-timeout SECONDS  a node out of service only for a moment Slurm ends\n"
               "                            by itself (NOT_RESPONDING but not DOWN, as right\n"
               "                            after a resume; COMPLETING), with no reason, is\n"
               "                            read again this long before apply counts it as\n"
               "                            blocking (default %u; 0: at once). DOWN, DRAIN,\n"
               "                            FAIL and other reasons block at once\n"
               "  --rollout-id ID           continue or abort this rollout\n"
               "  --lease-duration SECONDS  how long the rollout's Lease (" ROLLOUT_LEASE_NAME ")\n"
               "                            outlives a holder that stopped renewing (default %d)\n"
               "  --format text|json        json: a report on stdout, progress on stderr\n"
               "  --trust-unprotected-conditions\n"
               "                            believe every pod's condition, whoever wrote it\n"
               "                            (clusters without the admission policies); by\n"
               "                            default a condition counts only while the policies\n"
               "                            " ROLLOUT_POLICY_OWN_POD " and\n"
               "                            " ROLLOUT_POLICY_CONDITION "\n"
               "                            are bound with Deny, and only when written since\n"
               "  --configmap NAME          the enroot ConfigMap the pods mount (default\n"
               "                            " ROLLOUT_DEFAULT_CONFIGMAP "). plan and apply\n"
               "                            replace no pod unless it exists and its Helm\n"
               "                            annotation " ROLLOUT_HELM_RELEASE_ANNOTATION "\n"
               "                            names --configmap-release\n"
               "  --configmap-release NAME  the Helm release that owns it (default\n"
               "                            " ROLLOUT_DEFAULT_RELEASE ")\n"
               "  --verify-image IMAGE      once the nodes are back, run `srun -w NODE -N1 -n1\n"
               "                            --time=%u --container-image=IMAGE env` on each\n"
               "                            replaced worker node and compare the keys of the\n"
               "                            ConfigMap's " ROLLOUT_ENV_KEY " with what the\n"
               "                            job sees (by SHA-256: values are never printed);\n"
               "                            skipped where srun has no pyxis\n"
               "  --sinfo, --squeue, --scontrol, --srun PATH   the Slurm commands\n"
               "  --slurm-exec PREFIX       run every Slurm command as PREFIX COMMAND ..., for\n"
               "                            example 'kubectl exec -n slurm slurm-controller-0\n"
               "                            -c slurmctld --'. PREFIX is split into words as a\n"
               "                            shell would ('...', \"...\" and \\ honoured; $, `,\n"
               "                            globs and operators refused) and never run by a\n"
               "                            shell. The relay must pass the words after it on\n"
               "                            unchanged (kubectl exec does, ssh does not: this is\n"
               "                            checked first), and the far side needs env(1)\n"
               "  --notify-command CMD      run CMD once before the first login pod goes, to\n"
               "                            tell its users (for example a script that runs\n"
               "                            `kubectl exec POD -- wall MESSAGE` for each pod);\n"
               "                            split into words as --slurm-exec is, never run by\n"
               "                            a shell. Its environment adds AICR_ROLLOUT_ID,\n"
               "                            _NAMESPACE, _LOGIN_PODS and _LOGIN_NODES (names,\n"
               "                            blank-separated, same order, - for a node not\n"
               "                            known), _GRACE_SECONDS, _DELETE_AT (UTC, RFC 3339)\n"
               "                            and _DELETE_AT_EPOCH. A command that is not found\n"
               "                            blocks apply before anything changes; one that\n"
               "                            fails or runs past 60 s is reported, and the\n"
               "                            rollout goes on (stopping would keep the drained\n"
               "                            nodes out of service)\n"
               "  --login-grace SECONDS     then wait this long before the first login pod goes\n"
               "                            (default %u: time to save work and log out; 0: no\n"
               "                            wait). Each login pod also gets an Event\n"
               "                            (reason " ROLLOUT_NOTICE_REASON "). The notice is\n"
               "                            recorded in the Lease first: a continued rollout\n"
               "                            tells nobody twice and waits only what is left\n\n"
               "Exit status: 0 done or nothing to do; 1 plan/status: work to do, or blocked\n"
               "(nothing changed), or another rollout holds the Lease, or (plan, apply) the\n"
               "ConfigMap is missing or not the release's, or the notify command is not found;\n"
               "2 bad option; 3 a step failed or timed out, or --verify-image found keys that\n"
               "differ or could not run.\n",
               ROLLOUT_SETTLE_SEC, ROLLOUT_LEASE_DEFAULT_SEC, SLURM_VERIFY_TIME_LIMIT_MIN,
               ROLLOUT_LOGIN_GRACE_SEC);
}

static int parse_seconds(const char *opt, const char *s, uint64_t unit, uint64_t *ret) {
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || *end || end == s || *s == '-' || v == 0 || v > 1000000000ull) {
                log_error("%s: \"%s\" is not a positive number.", opt, s);
                return -EINVAL;
        }
        *ret = v * unit;
        return 0;
}

/* Options with no short letter. */
enum {
        ARG_NOTIFY_COMMAND = 0x100 + 'C',
        ARG_LOGIN_GRACE = 0x100 + 'G',
};

int rollout_args_parse(int argc, char **argv, RolloutArgs *a) {
        static const struct option options[] = {
                {"namespace", required_argument, NULL, 'n'},
                {"kube-api", required_argument, NULL, 'A'},
                {"serviceaccount-dir", required_argument, NULL, 'S'},
                {"worker-selector", required_argument, NULL, 'w'},
                {"login-selector", required_argument, NULL, 'l'},
                {"node-name", required_argument, NULL, 'N'},
                {"condition-type", required_argument, NULL, 't'},
                {"strategy", required_argument, NULL, 's'},
                {"batch", required_argument, NULL, 'b'},
                {"exclude", required_argument, NULL, 'x'},
                {"jobs-timeout", required_argument, NULL, 'J'},
                {"pod-timeout", required_argument, NULL, 'P'},
                {"poll-interval", required_argument, NULL, 'i'},
                {"settle-timeout", required_argument, NULL, 'W'},
                {"rollout-id", required_argument, NULL, 'r'},
                {"lease-duration", required_argument, NULL, 'L'},
                {"format", required_argument, NULL, 'f'},
                {"trust-unprotected-conditions", no_argument, NULL, 'T'},
                {"sinfo", required_argument, NULL, '1'},
                {"squeue", required_argument, NULL, '2'},
                {"scontrol", required_argument, NULL, '3'},
                {"slurm-exec", required_argument, NULL, 'X'},
                {"srun", required_argument, NULL, '4'},
                {"configmap", required_argument, NULL, 'C'},
                {"configmap-release", required_argument, NULL, 'R'},
                {"verify-image", required_argument, NULL, 'V'},
                {"notify-command", required_argument, NULL, ARG_NOTIFY_COMMAND},
                {"login-grace", required_argument, NULL, ARG_LOGIN_GRACE},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        uint64_t v;
        int c;

        *a = (RolloutArgs){
                .namespace = getenv("POD_NAMESPACE"),
                .sa_dir = OPTIONS_DEFAULT_SERVICEACCOUNT_DIR,
                .condition_type = CONDITION_DEFAULT_TYPE,
                .selector = {ROLLOUT_DEFAULT_WORKERS, ROLLOUT_DEFAULT_LOGINS},
                .node_from_hostname = true,
                .batch = 1,
                .jobs_timeout_usec = 86400ull * 1000000u,
                .pod_timeout_usec = 600ull * 1000000u,
                .poll_usec = 2000ull * 1000u,
                .settle_usec = ROLLOUT_SETTLE_SEC * 1000000ull,
                .lease_duration_sec = ROLLOUT_LEASE_DEFAULT_SEC,
                .self = getenv("POD_NAME"),
                .configmap = ROLLOUT_DEFAULT_CONFIGMAP,
                .configmap_release = ROLLOUT_DEFAULT_RELEASE,
                .login_grace_usec = ROLLOUT_LOGIN_GRACE_SEC * 1000000ull,
        };
        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'n':
                        a->namespace = optarg;
                        break;
                case 'A':
                        a->kube_api = optarg;
                        break;
                case 'S':
                        a->sa_dir = optarg;
                        break;
                case 'w':
                        a->selector[ROLE_WORKER] = optarg;
                        break;
                case 'l':
                        a->selector[ROLE_LOGIN] = optarg;
                        break;
                case 'N':
                        if (!streq(optarg, "hostname") && !streq(optarg, "pod")) {
                                log_error("--node-name: \"%s\" is not hostname or pod.", optarg);
                                return -EINVAL;
                        }
                        a->node_from_hostname = streq(optarg, "hostname");
                        break;
                case 't':
                        if (!condition_type_is_valid(optarg)) {
                                log_error("--condition-type: \"%s\" is not a qualified name.",
                                          optarg);
                                return -EINVAL;
                        }
                        a->condition_type = optarg;
                        break;
                case 's':
                        if (!streq(optarg, "window") && !streq(optarg, "rolling")) {
                                log_error("--strategy: \"%s\" is not window or rolling.", optarg);
                                return -EINVAL;
                        }
                        a->rolling = streq(optarg, "rolling");
                        break;
                case 'b':
                        if (parse_seconds("--batch", optarg, 1, &v) < 0)
                                return -EINVAL;
                        a->batch = v > 65536 ? 65536 : (unsigned) v;
                        break;
                case 'x':
                        if (a->n_excludes >= ROLLOUT_MAX_EXCLUDES) {
                                log_error("--exclude: more than %u nodes.", ROLLOUT_MAX_EXCLUDES);
                                return -EINVAL;
                        }
                        a->excludes[a->n_excludes++] = optarg;
                        break;
                case 'J':
                        if (parse_seconds("--jobs-timeout", optarg, 1000000u,
                                          &a->jobs_timeout_usec) < 0)
                                return -EINVAL;
                        break;
                case 'P':
                        if (parse_seconds("--pod-timeout", optarg, 1000000u, &a->pod_timeout_usec) <
                            0)
                                return -EINVAL;
                        break;
                case 'i':
                        if (parse_seconds("--poll-interval", optarg, 1000u, &a->poll_usec) < 0)
                                return -EINVAL;
                        break;
                case 'W':
                        /* 0 is allowed here: judge every node as first seen */
                        if (streq(optarg, "0"))
                                a->settle_usec = 0;
                        else if (parse_seconds("--settle-timeout", optarg, 1000000u,
                                               &a->settle_usec) < 0)
                                return -EINVAL;
                        break;
                case 'r':
                        if (!rollout_id_parse(optarg, NULL)) {
                                log_error("--rollout-id: \"%s\" is not a rollout id "
                                          "(YYYYMMDDTHHMMSSZ).",
                                          optarg);
                                return -EINVAL;
                        }
                        a->rollout_id = optarg;
                        break;
                case 'L':
                        if (parse_seconds("--lease-duration", optarg, 1, &v) < 0)
                                return -EINVAL;
                        if (v > ROLLOUT_LEASE_MAX_SEC) {
                                log_error("--lease-duration: more than %d seconds.",
                                          ROLLOUT_LEASE_MAX_SEC);
                                return -EINVAL;
                        }
                        a->lease_duration_sec = (int64_t) v;
                        break;
                case 'f':
                        if (!streq(optarg, "text") && !streq(optarg, "json")) {
                                log_error("--format: \"%s\" is not text or json.", optarg);
                                return -EINVAL;
                        }
                        a->json = streq(optarg, "json");
                        break;
                case 'T':
                        a->trust_unprotected = true;
                        break;
                case '1':
                        a->slurm.sinfo = optarg;
                        break;
                case '2':
                        a->slurm.squeue = optarg;
                        break;
                case '3':
                        a->slurm.scontrol = optarg;
                        break;
                case '4':
                        a->slurm.srun = optarg;
                        break;
                case 'C':
                case 'R':
                        /* a name in a URL path or an annotation's value */
                        if (!*optarg || strpbrk(optarg, "/?#%") || optarg[0] == '.') {
                                log_error("--%s: \"%s\" is not an object name.",
                                          c == 'C' ? "configmap" : "configmap-release", optarg);
                                return -EINVAL;
                        }
                        *(c == 'C' ? &a->configmap : &a->configmap_release) = optarg;
                        break;
                case 'V':
                        if (!*optarg || optarg[0] == '-') {
                                log_error("--verify-image: \"%s\" is not an image.", optarg);
                                return -EINVAL;
                        }
                        a->verify_image = optarg;
                        break;
                case 'X':
                        if (check_words("--slurm-exec", optarg) < 0)
                                return -EINVAL;
                        a->slurm_exec = optarg;
                        break;
                case ARG_NOTIFY_COMMAND:
                        if (check_words("--notify-command", optarg) < 0)
                                return -EINVAL;
                        a->notify_command = optarg;
                        break;
                case ARG_LOGIN_GRACE:
                        /* 0 is allowed: no wait */
                        if (streq(optarg, "0"))
                                a->login_grace_usec = 0;
                        else if (parse_seconds("--login-grace", optarg, 1000000u,
                                               &a->login_grace_usec) < 0)
                                return -EINVAL;
                        else if (a->login_grace_usec > ROLLOUT_NOTICE_MAX_SEC * 1000000ull) {
                                log_error("--login-grace: more than %d seconds.",
                                          ROLLOUT_NOTICE_MAX_SEC);
                                return -EINVAL;
                        }
                        break;
                case 'h':
                        help();
                        return 1;
                default:
                        log_error("Try \"aicr-enroot-agent rollout --help\".");
                        return -EINVAL;
                }
        if (optind < argc) {
                int action = rollout_action_from_string(argv[optind]);
                if (action < 0 || optind + 1 < argc) {
                        log_error("rollout: \"%s\" is not plan, apply, status or abort.",
                                  argv[optind]);
                        return -EINVAL;
                }
                a->action = (RolloutAction) action;
        }
        return 0;
}
