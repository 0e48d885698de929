/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Layer 1 (pure): the daemon's command line. Every error names the option
 * and says what is wrong; nothing is logged here.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

#define OPTIONS_MAX_FILES                32u
/* kubelet's limit on a ConfigMap key (a DNS subdomain-like name). */
#define OPTIONS_MAX_KEY_LENGTH           253u
#define OPTIONS_MAX_PATH_LENGTH          4096u
#define OPTIONS_MAX_RESYNC_SECONDS       86400u
#define OPTIONS_DEFAULT_RESYNC_SECONDS   60u
#define OPTIONS_DEFAULT_POLL_SECONDS     5u
#define OPTIONS_DEFAULT_LISTEN           ":9100"
#define OPTIONS_DEFAULT_CHECK_TIMEOUT_MS 1000u

typedef enum AgentAction {
        ACTION_DAEMON,       /* watch and serve (the default) */
        ACTION_CHECK,        /* --check: ask the running daemon, exit 0/1 */
        ACTION_CHECK_CONFIG, /* --check-config: validate the options, exit */
        ACTION_HELP,
        ACTION_VERSION,
} AgentAction;

typedef struct FileSpec {
        char *key;  /* ConfigMap key, e.g. "enroot.conf" */
        char *path; /* absolute path in the workload container */
} FileSpec;

typedef struct Options {
        AgentAction action;
        char *desired_dir; /* --desired-dir: the whole-directory ConfigMap projection */
        FileSpec *files;   /* --file KEY=PATH, or the two defaults */
        size_t n_files;
        char *running_root;          /* --running-root, default "/" */
        char *target_process;        /* --target-process NAME, or NULL */
        char *listen;                /* --listen [ADDR]:PORT, default ":9100" */
        uint64_t resync_usec;        /* --resync-interval SECONDS */
        uint64_t poll_usec;          /* --poll-interval SECONDS (the polling fallback) */
        char *watch;                 /* --watch auto|inotify|poll */
        bool require_current;        /* --check --require-current */
        uint64_t check_timeout_usec; /* --timeout MILLISECONDS for --check */
        int log_level;               /* --log-level (syslog level), default LOG_INFO */
} Options;

/* Parses argv (argv[0] is the program). On success fills *ret (owned by the
 * caller: options_done()). On -EINVAL, *ret_error is a new sentence naming the
 * option ("--resync-interval: \"x\" is not a number of seconds from 1 to 86400").
 * -ENOMEM otherwise. */
int options_parse(int argc, char **argv, Options *ret, char **ret_error);
void options_done(Options *o);

/* Checks what only matters for the daemon (--desired-dir given, ...).
 * Returns 0, or -EINVAL with *ret_error as for options_parse(). */
int options_validate_daemon(const Options *o, char **ret_error);

/* The --help text. */
extern const char options_help[];

/* True for a key kubelet accepts in a ConfigMap: [-._a-zA-Z0-9]+, at most 253
 * characters, not "." or "..", not starting with "..". */
bool configmap_key_is_valid(const char *key);
