/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Layer 2: Slurm through its commands (sinfo, squeue, scontrol), as the
 * rollout needs it: every node's state and reason, the jobs on given nodes,
 * and drain / resume / down of named nodes.
 *
 * Each call forks and execs one command (no shell), with the caller's
 * environment (SLURM_CONF, SLURM_CLUSTERS, ...), waits for it with a timeout
 * and caps what it may print. It blocks: this is for a command-line program,
 * never for the daemon's event loop. The child gets /dev/null as stdin, its
 * own process group (killed whole on timeout), and none of our descriptors.
 * Variables that change what the commands print or select (SINFO_*,
 * SQUEUE_*, SCONTROL_*) are removed from its environment, and
 * SLURM_TIME_FORMAT is set to "%s" so times read as seconds since the epoch.
 *
 * Output formats: Slurm 21.08 and later print JSON (`sinfo --json`,
 * `squeue --json`; from 23.02 the node list comes from `scontrol --json show
 * node`, because `sinfo --json` then groups nodes). Debian 12 ships 22.05,
 * which has the first two and no `scontrol --json`. Older or JSON-less builds
 * are read through `scontrol --oneliner show node` and `squeue --format`.
 * SLURM_FORMAT_AUTO picks by `scontrol --version` and falls back to text
 * when a JSON command says it does not know the option or has no serializer.
 *
 * Everything a command prints is outside input: the parsers below are pure,
 * bounded and exported for the unit tests and the fuzz target.
 * Never logs above debug.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* Per command, unless the configuration says otherwise. */
#define SLURM_DEFAULT_TIMEOUT_USEC     (30u * 1000000u)
/* stdout of one command; the JSON of squeue is about 3 KiB a job. */
#define SLURM_DEFAULT_MAX_OUTPUT_BYTES (64u * 1024u * 1024u)
#define SLURM_MAX_OUTPUT_BYTES         (1024u * 1024u * 1024u)
/* stderr kept for messages; the rest is read and dropped. */
#define SLURM_MAX_STDERR_BYTES         (64u * 1024u)
/* Nodes in one list, in one expanded hostlist, and in one update. */
#define SLURM_MAX_NODES                65536u
#define SLURM_MAX_JOBS                 1000000u
/* A node name; longer ones are refused (Slurm's own limit is lower). */
#define SLURM_MAX_NAME_BYTES           255u
/* A reason, user or state read back; longer ones are cut at this length. */
#define SLURM_MAX_TEXT_BYTES           4096u
/* A reason this module writes. */
#define SLURM_MAX_REASON_BYTES         1024u

/* ------------------------------------------------------------------------ */
/* Nodes */

/* Slurm's base node states (slurm.h NODE_STATE_*). */
typedef enum SlurmNodeBase {
        SLURM_NODE_UNKNOWN,
        SLURM_NODE_DOWN,
        SLURM_NODE_IDLE,
        SLURM_NODE_ALLOCATED,
        SLURM_NODE_ERROR,
        SLURM_NODE_MIXED,
        SLURM_NODE_FUTURE,
        _SLURM_NODE_BASE_MAX,
        _SLURM_NODE_BASE_INVALID = -1,
} SlurmNodeBase;

/* Slurm's node state flags, as bits. */
typedef enum SlurmNodeFlag {
        SLURM_NODE_DRAIN = 1u << 0,
        SLURM_NODE_COMPLETING = 1u << 1,
        SLURM_NODE_NOT_RESPONDING = 1u << 2,
        SLURM_NODE_FAIL = 1u << 3,
        SLURM_NODE_REBOOT_REQUESTED = 1u << 4,
        SLURM_NODE_REBOOT_ISSUED = 1u << 5,
        SLURM_NODE_MAINTENANCE = 1u << 6,
        SLURM_NODE_RESERVED = 1u << 7,
        SLURM_NODE_POWER_DOWN = 1u << 8,
        SLURM_NODE_POWER_UP = 1u << 9,
        SLURM_NODE_POWERED_DOWN = 1u << 10,
        SLURM_NODE_POWERING_DOWN = 1u << 11,
        SLURM_NODE_POWERING_UP = 1u << 12,
        SLURM_NODE_CLOUD = 1u << 13,
        SLURM_NODE_INVALID_REG = 1u << 14,
        SLURM_NODE_DYNAMIC_FUTURE = 1u << 15,
        SLURM_NODE_DYNAMIC_NORM = 1u << 16,
        SLURM_NODE_PLANNED = 1u << 17,
        SLURM_NODE_RESUME = 1u << 18,
        SLURM_NODE_PERFCTRS = 1u << 19,
        SLURM_NODE_BLOCKED = 1u << 20,
        SLURM_NODE_EXTERNAL = 1u << 21,
        /* A flag this module does not know; SlurmNode.state names it. */
        SLURM_NODE_FLAG_OTHER = 1u << 31,
} SlurmNodeFlag;

typedef struct SlurmNode {
        char *name;
        SlurmNodeBase base;      /* SLURM_NODE_UNKNOWN also when Slurm printed no known base */
        uint32_t flags;          /* SlurmNodeFlag bits */
        char *state;             /* every word as Slurm printed it, upper case, base first:
                             * "IDLE+DRAIN", "DOWN+DRAIN+NOT_RESPONDING" */
        char *reason;            /* "" when none */
        char *reason_user;       /* who set the reason, "" when unknown */
        int64_t reason_time_sec; /* when, seconds since the epoch; 0 when unknown */
        int64_t boot_time_sec;   /* the node's boot time as slurmd reported it; 0 when unknown */
        int64_t slurmd_start_time_sec; /* 0 when unknown */
} SlurmNode;

typedef struct SlurmNodeList {
        SlurmNode *nodes;
        size_t n_nodes;
} SlurmNodeList;

SlurmNodeList *slurm_node_list_free(SlurmNodeList *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(SlurmNodeList *, slurm_node_list_free);

/* Borrowed from l, or NULL. */
const SlurmNode *slurm_node_list_find(const SlurmNodeList *l, const char *name);

/* DRAIN and nothing left running: ready for maintenance. */
bool slurm_node_is_drained(const SlurmNode *n);
/* DRAIN while jobs still run or complete on it. */
bool slurm_node_is_draining(const SlurmNode *n);
/* Out of service for any reason: DOWN, DRAIN, FAIL, NOT_RESPONDING, ERROR,
 * FUTURE, INVALID_REG, a reboot or power transition, MAINTENANCE, or a flag
 * this module does not know. What the guide calls "drained, down, or failed". */
bool slurm_node_is_unavailable(const SlurmNode *n);

/* "IDLE", ...; NULL when out of range. */
const char *slurm_node_base_to_string(SlurmNodeBase b);
/* "DRAIN", ... for one bit; NULL for SLURM_NODE_FLAG_OTHER and unknown bits. */
const char *slurm_node_flag_to_string(SlurmNodeFlag f);

/* Parses a node state as Slurm prints it: words separated by '+' (scontrol
 * "IDLE+DRAIN"), case-insensitive, base anywhere (JSON lists it first).
 * Unknown words set SLURM_NODE_FLAG_OTHER. Returns 0, -EBADMSG for an empty
 * state or an empty word. */
int slurm_node_state_parse(const char *s, SlurmNodeBase *ret_base, uint32_t *ret_flags);

/* The "nodes" array of `sinfo --json` (Slurm 21.08 to 22.05) or of
 * `scontrol --json show node` (23.02 on): state as a string plus
 * "state_flags", or as an array; times as numbers or {"set","infinite","number"}.
 * A document with a non-empty "errors" array is Slurm saying it failed (the
 * 22.05 commands exit 0 when the controller is down): -EIO, *ret_error says
 * what Slurm said. Returns 0, -EBADMSG (not this document, a node without a
 * name or state), -ENOBUFS (more than SLURM_MAX_NODES), -ENOMEM.
 * *ret_error (may be NULL) is a new string on failure. */
int slurm_nodes_parse_json(const char *data, size_t len, SlurmNodeList **ret, char **ret_error);
/* `scontrol --oneliner show node` with SLURM_TIME_FORMAT=%s: one
 * "NodeName=... State=... Reason=TEXT [USER@TIME]" line a node, Reason last.
 * Same returns. */
int slurm_nodes_parse_scontrol(const char *data, size_t len, SlurmNodeList **ret, char **ret_error);

/* ------------------------------------------------------------------------ */
/* Jobs */

/* Slurm's job states, base and flags alike, as bits: 22.05 prints one word,
 * later versions a list. */
typedef enum SlurmJobState {
        SLURM_JOB_PENDING = 1u << 0,
        SLURM_JOB_RUNNING = 1u << 1,
        SLURM_JOB_SUSPENDED = 1u << 2,
        SLURM_JOB_COMPLETED = 1u << 3,
        SLURM_JOB_CANCELLED = 1u << 4,
        SLURM_JOB_FAILED = 1u << 5,
        SLURM_JOB_TIMEOUT = 1u << 6,
        SLURM_JOB_NODE_FAIL = 1u << 7,
        SLURM_JOB_PREEMPTED = 1u << 8,
        SLURM_JOB_BOOT_FAIL = 1u << 9,
        SLURM_JOB_DEADLINE = 1u << 10,
        SLURM_JOB_OUT_OF_MEMORY = 1u << 11,
        SLURM_JOB_COMPLETING = 1u << 12,
        SLURM_JOB_CONFIGURING = 1u << 13,
        SLURM_JOB_STOPPED = 1u << 14,
        SLURM_JOB_RESIZING = 1u << 15,
        SLURM_JOB_REQUEUED = 1u << 16,
        SLURM_JOB_SIGNALING = 1u << 17,
        SLURM_JOB_STAGE_OUT = 1u << 18,
        SLURM_JOB_STATE_OTHER = 1u << 31,
} SlurmJobState;

typedef struct SlurmJob {
        uint32_t job_id;
        uint32_t states;   /* SlurmJobState bits */
        char *state;       /* as Slurm printed it, words joined with '+': "RUNNING" */
        char *nodes;       /* the allocated nodes as a hostlist ("n-[0-3]"), "" when none */
        char **node_names; /* nodes, expanded */
        size_t n_node_names;
} SlurmJob;

typedef struct SlurmJobList {
        SlurmJob *jobs;
        size_t n_jobs;
} SlurmJobList;

SlurmJobList *slurm_job_list_free(SlurmJobList *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(SlurmJobList *, slurm_job_list_free);

/* Holds an allocation: running, completing, configuring, suspended or
 * stopped (the guide's squeue --states list). A job in a state this module
 * does not know counts as active while it has nodes and no final state. */
bool slurm_job_is_active(const SlurmJob *j);
/* Pending: queued, no allocation. */
bool slurm_job_is_pending(const SlurmJob *j);
bool slurm_job_has_node(const SlurmJob *j, const char *name);

/* "RUNNING", ... for one bit; NULL for SLURM_JOB_STATE_OTHER and unknown bits. */
const char *slurm_job_state_to_string(SlurmJobState s);

/* The "jobs" array of `squeue --json`: job_id, job_state (string or list),
 * nodes. Returns as slurm_nodes_parse_json(); -ENOBUFS past SLURM_MAX_JOBS. */
int slurm_jobs_parse_json(const char *data, size_t len, SlurmJobList **ret, char **ret_error);
/* `squeue --noheader --format=%A|%T|%N`: "ID|STATE|NODES" lines. */
int slurm_jobs_parse_squeue(const char *data, size_t len, SlurmJobList **ret, char **ret_error);

/* Expands a Slurm hostlist ("a-[01-03,7],b", "r[1-2]-n[1-2]") into names,
 * in order. "" gives none. Returns 0 with *ret_names a new NULL-terminated
 * array of *ret_n new strings (free it with slurm_names_free()), -EBADMSG (unbalanced
 * brackets, a reversed or malformed range), -ENOBUFS (more than
 * SLURM_MAX_NODES names or a name over SLURM_MAX_NAME_BYTES), -ENOMEM. */
int slurm_hostlist_expand(const char *hostlist, char ***ret_names, size_t *ret_n);
char **slurm_names_free(char **names);

/* ------------------------------------------------------------------------ */
/* The commands */

typedef enum SlurmFormat {
        SLURM_FORMAT_AUTO,
        SLURM_FORMAT_JSON,
        SLURM_FORMAT_TEXT,
        _SLURM_FORMAT_MAX,
        _SLURM_FORMAT_INVALID = -1,
} SlurmFormat;

const char *slurm_format_to_string(SlurmFormat f);
SlurmFormat slurm_format_from_string(const char *s);

typedef struct SlurmConfig {
        /* A path, or a name looked up in PATH; NULL: "sinfo", "squeue", "scontrol". */
        const char *sinfo;
        const char *squeue;
        const char *scontrol;
        uint64_t timeout_usec;   /* per command; 0: SLURM_DEFAULT_TIMEOUT_USEC */
        size_t max_output_bytes; /* stdout per command; 0: SLURM_DEFAULT_MAX_OUTPUT_BYTES */
        SlurmFormat format;
} SlurmConfig;

/* What the last command of a call did, for messages. Every call that takes
 * one empties it first and fills it whether the call succeeds or fails. */
typedef struct SlurmCommandReport {
        char *command_line; /* the argv, quoted where a shell would need it */
        int exit_status;    /* exit code, 128+N when killed by signal N, -1 when it
                             * did not run or was killed on timeout or output size */
        char *stderr_text;  /* its stderr (up to SLURM_MAX_STDERR_BYTES), "" when none */
        char *error;        /* NULL on success; else one line naming the command line,
                             * what happened (exit status, signal, timeout, ...) and
                             * the first line of stderr, or what was wrong with its output */
} SlurmCommandReport;

void slurm_command_report_done(SlurmCommandReport *r);

typedef struct SlurmClient SlurmClient;

/* cfg's strings are copied. Runs nothing yet. Returns 0, -EINVAL (a
 * max_output_bytes over SLURM_MAX_OUTPUT_BYTES, a bad format), -ENOMEM. */
int slurm_client_new(const SlurmConfig *cfg, SlurmClient **ret);
SlurmClient *slurm_client_free(SlurmClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(SlurmClient *, slurm_client_free);

/* The format in use: the configured one, or for AUTO what the first read
 * chose (AUTO until then). */
SlurmFormat slurm_client_format(const SlurmClient *c);
/* "22.05.8" once `scontrol --version` ran (AUTO does on its first read), else NULL. Borrowed. */
const char *slurm_client_version(const SlurmClient *c);

/* Runs `scontrol --version` and remembers the version. Returns 0, or as below. */
int slurm_probe_version(SlurmClient *c, SlurmCommandReport *report);

/* Every node the controller knows, hidden partitions included.
 * Returns 0 with *ret new, or -ENOENT (command not found), -EACCES,
 * -ETIME (timed out), -EFBIG (output over the cap), -EIO (non-zero exit,
 * killed, or Slurm reported an error), -EBADMSG (output not understood),
 * -ENOBUFS, -ENOMEM. report (may be NULL) says what happened. */
int slurm_read_nodes(SlurmClient *c, SlurmNodeList **ret, SlurmCommandReport *report);

/* The jobs with an allocation on any of names[0..n_names) (pending jobs
 * have none), or every job the controller knows when names is NULL.
 * Returns as slurm_read_nodes(). */
int slurm_read_jobs(SlurmClient *c, char *const *names, size_t n_names, SlurmJobList **ret,
                    SlurmCommandReport *report);

/* One `scontrol update NodeName=a,b,... State=... [Reason=...]` for exactly
 * the nodes named: never a hostlist expression, never ALL (which would
 * overwrite every node's reason). Slurm applies it to all of them or, when
 * one name is unknown, to none. The reason must be non-empty, printable,
 * at most SLURM_MAX_REASON_BYTES, and neither start nor end with '"'
 * (scontrol strips those), so that it reads back as written.
 * Returns 0, -EINVAL (no names, more than SLURM_MAX_NODES, a name that is
 * empty, ALL, or holds ',', '[', ']', '=', blanks or control characters; a
 * bad reason), or the errors of slurm_read_nodes(); report->stderr_text has
 * what scontrol said, on success too. */
int slurm_drain_nodes(SlurmClient *c, char *const *names, size_t n_names, const char *reason,
                      SlurmCommandReport *report);
/* State=RESUME: clears DRAIN and DOWN (scontrol fails for a node that is neither). */
int slurm_resume_nodes(SlurmClient *c, char *const *names, size_t n_names,
                       SlurmCommandReport *report);
/* State=DOWN with a reason. */
int slurm_down_nodes(SlurmClient *c, char *const *names, size_t n_names, const char *reason,
                     SlurmCommandReport *report);
