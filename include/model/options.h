/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's command line. Every error names the option
 * and says what is wrong; nothing is logged here.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "file-format.h"
#include "macro.h"

#define OPTIONS_MAX_FILES                  32u
/* kubelet's limit on a ConfigMap key (a DNS subdomain-like name). */
#define OPTIONS_MAX_KEY_LENGTH             253u
#define OPTIONS_MAX_PATH_LENGTH            4096u
#define OPTIONS_MAX_RESYNC_SECONDS         86400u
#define OPTIONS_DEFAULT_RESYNC_SECONDS     60u
#define OPTIONS_DEFAULT_POLL_SECONDS       5u
#define OPTIONS_DEFAULT_LISTEN             ":9100"
#define OPTIONS_DEFAULT_CHECK_TIMEOUT_MS   1000u
#define OPTIONS_DEFAULT_SERVICEACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
/* Kubernetes names: a pod name is a DNS subdomain, a namespace a DNS label. */
#define OPTIONS_MAX_POD_NAME_LENGTH        253u
#define OPTIONS_MAX_NAMESPACE_LENGTH       63u
#define OPTIONS_MAX_UID_LENGTH             128u
#define OPTIONS_MAX_URL_LENGTH             2048u

typedef enum AgentAction {
        ACTION_DAEMON,       /* watch and serve (the default) */
        ACTION_CHECK,        /* --check: ask the running daemon, exit 0/1 */
        ACTION_CHECK_CONFIG, /* --check-config: validate the options, exit */
        ACTION_HELP,
        ACTION_VERSION,
} AgentAction;

typedef enum KubeMode {
        KUBE_AUTO, /* on when KUBERNETES_SERVICE_HOST is set (in a pod) */
        KUBE_ON,
        KUBE_OFF,
        _KUBE_MODE_MAX,
        _KUBE_MODE_INVALID = -1,
} KubeMode;

/* The agent's container name in the manifests this project ships. */
#define OPTIONS_DEFAULT_AGENT_CONTAINER "aicr-enroot-agent"
/* Workload containers one --workload-container list may name. */
#define OPTIONS_MAX_WORKLOAD_CONTAINERS 8u

typedef struct FileSpec {
        char *key;         /* ConfigMap key, e.g. "enroot.conf" */
        char *path;        /* absolute path in the workload container */
        FileFormat format; /* :FORMAT, else file_format_for_key(key) */
} FileSpec;

typedef struct Options {
        AgentAction action;
        char *desired_dir; /* --desired-dir: the whole-directory ConfigMap projection */
        FileSpec *files;   /* --file KEY=PATH[:FORMAT], or the two defaults */
        size_t n_files;
        char *running_root;          /* --running-root, default "/" */
        char *target_process;        /* --target-process NAME, or NULL */
        uid_t target_uid;            /* --target-uid UID, default 0 */
        bool target_uid_set;         /* --target-uid given: it needs --target-process */
        char *listen;                /* --listen [ADDR]:PORT, default ":9100" */
        uint64_t resync_usec;        /* --resync-interval SECONDS */
        uint64_t poll_usec;          /* --poll-interval SECONDS (the polling fallback) */
        char *watch;                 /* --watch auto|inotify|poll */
        bool require_current;        /* --check --require-current */
        uint64_t check_timeout_usec; /* --timeout MILLISECONDS for --check */
        int log_level;               /* --log-level (syslog level), default LOG_INFO */

        /* The pod condition (docs/DESIGN.md §6). */
        KubeMode kube;              /* --kube auto|on|off */
        char *kube_api;             /* --kube-api URL, else from KUBERNETES_SERVICE_HOST/_PORT */
        char *serviceaccount_dir;   /* --serviceaccount-dir: token, ca.crt, namespace */
        char *condition_type;       /* --condition-type, default "EnrootConfigCurrent" */
        bool condition_counts_only; /* --condition-detail counts: no key names in it */
        char *pod_name;             /* --pod-name, else POD_NAME */
        char *pod_namespace;        /* --pod-namespace, else POD_NAMESPACE, else the SA dir's */
        char *pod_uid;              /* --pod-uid, else POD_UID, else learnt from the first read */
        char *agent_container;      /* --agent-container, default "aicr-enroot-agent" */
        char **workload_containers; /* --workload-container NAME, NULL-terminated; NULL: auto */
        size_t n_workload_containers;
        bool kube_enabled;                /* decided by options_apply_environment() */
        const char *kube_disabled_reason; /* static: why auto mode stays off, or NULL */
} Options;

/* Parses argv (argv[0] is the program). On success fills *ret (owned by the
 * caller: options_done()). On -EINVAL, *ret_error is a new sentence naming the
 * option ("--resync-interval: \"x\" is not a number of seconds from 1 to 86400").
 * -ENOMEM otherwise. */
int options_parse(int argc, char **argv, Options *ret, char **ret_error);
void options_done(Options *o);

/* The API server's URL from kubelet's KUBERNETES_SERVICE_HOST and _PORT
 * (in every container of a pod): https://HOST:PORT, an IPv6 address in
 * brackets, port 443 when port is NULL or empty. Returns 0 with a new string,
 * -ENOENT when host is NULL or empty, -ENOMEM. */
int options_service_api_url(const char *host, const char *port, char **ret_url);

/* Reads what the options leave to the environment: POD_NAME, POD_NAMESPACE,
 * POD_UID (the downward API) and KUBERNETES_SERVICE_HOST/_PORT (kubelet), and
 * decides o->kube_enabled: --kube on requires an API address and a pod name;
 * auto is on with both, and off (with o->kube_disabled_reason) when in a pod
 * without POD_NAME. lookup is getenv() or a test's stand-in.
 * Returns 0, or -EINVAL with *ret_error, -ENOMEM. */
int options_apply_environment(Options *o, const char *(*lookup)(const char *name),
                              char **ret_error);

/* Checks what only matters for the daemon (--desired-dir given, ...).
 * Returns 0, or -EINVAL with *ret_error as for options_parse(). */
int options_validate_daemon(const Options *o, char **ret_error);

/* The --help text. */
extern const char options_help[];

/* True for a key kubelet accepts in a ConfigMap: [-._a-zA-Z0-9]+, at most 253
 * characters, not "." or "..", not starting with "..". */
bool configmap_key_is_valid(const char *key);
