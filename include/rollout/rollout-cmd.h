/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rollout command, aicr-enroot-agent rollout (the program
 * aicr-enroot-rollout), in three parts: its arguments (rollout-args.c), the
 * run loop that plans, applies, shows or aborts a rollout (rollout-run.c),
 * and the command itself, which connects to Kubernetes and Slurm and runs it
 * (cmd-rollout.c).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "kube.h"
#include "rollout-lease.h"
#include "rollout-verify.h"
#include "rollout.h"
#include "slurm-client.h"

#define ROLLOUT_DEFAULT_WORKERS   "app.kubernetes.io/instance=slinky-slurm-worker-slinky"
#define ROLLOUT_DEFAULT_LOGINS    "app.kubernetes.io/instance=slinky-slurm-login-slinky"
#define ROLLOUT_DEFAULT_NAMESPACE "slurm"
#define ROLLOUT_MAX_EXCLUDES      1024u
/* --settle-timeout's default: how long a node that is only settling
 * (rollout_node_is_settling()) is read again before it counts as blocking.
 * slurmctld pings every SlurmdTimeout/3 (100 s at the default
 * SlurmdTimeout=300, which Slinky keeps) and waits up to MessageTimeout
 * (10 s) for an answer; 10 s more for the poll and a ping still running. A
 * RESUME asks for a ping at once, so a healthy node settles within seconds. */
#define ROLLOUT_SETTLE_SEC        120u
/* --login-grace's default: how long the users of the login pods have, once
 * told, before the first login pod goes. An interactive session needs the
 * time to see the message, finish a command, save a file and log out: five
 * minutes, as `shutdown +5` gives. In the window strategy the drained nodes
 * wait that much longer for their resume; every job on them ended already. */
#define ROLLOUT_LOGIN_GRACE_SEC   300u
/* How long --notify-command may run, and what of its output is kept. */
#define ROLLOUT_NOTIFY_RUN_USEC   (60u * 1000000u)
#define ROLLOUT_NOTIFY_MAX_STDOUT (1024u * 1024u)
#define ROLLOUT_NOTIFY_MAX_STDERR (64u * 1024u)
/* How long a resumed node may take to answer slurmctld's ping. */
#define ROLLOUT_RESPONDING_USEC   (60u * 1000000u)

/* Exit statuses. */
#define EXIT_ROLLOUT_DONE         0 /* done, or nothing to do */
#define EXIT_ROLLOUT_BLOCKED \
        1                    /* plan: work to do (or blocked); apply: blocked, nothing changed;
                                     * plan, apply: the ConfigMap check refused */
#define EXIT_ROLLOUT_USAGE 2 /* bad option */
#define EXIT_ROLLOUT_FAILED \
        3 /* a step failed or timed out: the cluster is as reported;
                                     * apply: --verify-image found a difference or could not run */

typedef enum RolloutAction {
        ACTION_PLAN,
        ACTION_APPLY,
        ACTION_STATUS,
        ACTION_ABORT,
} RolloutAction;

/* The command line. The strings are borrowed from argv and the
 * environment. */
typedef struct RolloutArgs {
        RolloutAction action;
        const char *namespace, *kube_api, *sa_dir, *condition_type;
        const char *selector[_ROLE_MAX];
        bool node_from_hostname;
        bool rolling;
        unsigned batch;
        const char *excludes[ROLLOUT_MAX_EXCLUDES];
        size_t n_excludes;
        uint64_t jobs_timeout_usec, pod_timeout_usec, poll_usec;
        /* --settle-timeout; 0: judge every node as first read */
        uint64_t settle_usec;
        const char *rollout_id;
        int64_t lease_duration_sec; /* --lease-duration */
        bool json;
        bool trust_unprotected; /* --trust-unprotected-conditions */
        SlurmConfig slurm;      /* its exec_prefix is set by cmd_rollout() */
        const char *slurm_exec; /* --slurm-exec, checked by shell_split_words() */
        const char *self;       /* POD_NAME: never replaced */
        /* --configmap, --configmap-release: the enroot ConfigMap and the Helm
         * release that must own it */
        const char *configmap, *configmap_release;
        const char *verify_image; /* --verify-image; NULL: no verification */
        /* --notify-command, checked by shell_split_words(); NULL: none */
        const char *notify_command;
        uint64_t login_grace_usec; /* --login-grace; 0: no wait */
} RolloutArgs;

/* One run: args is borrowed, everything else is owned (rollout_done()). */
typedef struct Rollout {
        const RolloutArgs *args;
        sd_event *event;
        KubeClient *kube;
        SlurmClient *slurm;
        char *namespace;
        char *api_url; /* for messages */
        char id[ROLLOUT_ID_BYTES];
        bool id_found; /* a rollout in progress was found in the cluster */
        bool applying; /* apply runs: the id is this run's, found or new */
        /* Nodes still settling after --settle-timeout: they block. */
        bool settle_expired;
        RolloutTrust trust;
        RolloutPod *pods[_ROLE_MAX];
        size_t n_pods[_ROLE_MAX];
        SlurmNodeList *nodes;
        json_t *report; /* the --format json document */
        json_t *steps;
        /* The Lease (rollout-lease.h): as last read or written. */
        RolloutLease lease;
        bool lease_exists;
        char *holder;   /* this process's identity in it */
        json_t *record; /* the record this run writes, once it holds the Lease */
        /* The ConfigMap check: NULL when it passed, else why not (said). */
        char *configmap_refused;
        char *desired_env; /* its ROLLOUT_ENV_KEY, desired_env_len bytes; NULL: none */
        size_t desired_env_len;
        /* The worker nodes this run saw replaced, for --verify-image. */
        char **replaced_nodes;
        size_t n_replaced_nodes;
        bool lease_held;             /* this run holds it */
        uint64_t lease_written_usec; /* CLOCK_MONOTONIC of the last write */
} Rollout;

/* "plan", "apply", "status", "abort". */
const char *rollout_action_to_string(RolloutAction a);

/* Parses the command line (argv[0] is the command name; getopt names it in
 * its messages) into *ret, with the defaults and $POD_NAMESPACE, $POD_NAME.
 * Returns 0; 1 after printing --help; -EINVAL after logging what is wrong. */
int rollout_args_parse(int argc, char **argv, RolloutArgs *ret);

/* Reads the cluster and does r->args->action, printing its progress (and the
 * JSON report with --format json). r has its args, clients, namespace,
 * api_url, report and steps. Returns the exit status, EXIT_ROLLOUT_*. */
int rollout_run(Rollout *r);

/* Frees what r owns; r may be half built. */
void rollout_done(Rollout *r);

/* aicr-enroot-agent rollout: the whole command. argv[0] is the command name.
 * Returns the exit status, EXIT_ROLLOUT_*. */
int cmd_rollout(int argc, char **argv);
