/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Slurm's nodes and jobs as its commands print them (sinfo,
 * squeue, scontrol; slurm-client.h runs them): node and job states, the
 * parsers of their JSON and text output; hostlist.h expands the hostlists
 * they print (a job's nodes).
 *
 * Which parser reads what: `sinfo --json` (Slurm 21.08 to 22.05) and
 * `scontrol --json show node` (23.02 on) go to slurm_nodes_parse_json(),
 * `scontrol --oneliner show node` to slurm_nodes_parse_scontrol(),
 * `squeue --json` to slurm_jobs_parse_json(), `squeue --format` to
 * slurm_jobs_parse_squeue(). The text is what the rollout reads by default:
 * its fields mean the same from Slurm 22.05 to 26.05, the JSON does not.
 *
 * Everything a command prints is outside input: the parsers below are pure,
 * bounded and exported for the unit tests and the fuzz target. Never logs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hostlist.h"
#include "macro.h"

/* Nodes in one list, in one expanded hostlist, and in one update. */
#define SLURM_MAX_NODES      65536u
#define SLURM_MAX_JOBS       1000000u
/* A node name; longer ones are refused (Slurm's own limit is lower). */
#define SLURM_MAX_NAME_BYTES 255u
/* A reason, user or state read back; longer ones are cut at this length. */
#define SLURM_MAX_TEXT_BYTES 4096u

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
        uint32_t states;          /* SlurmJobState bits */
        char *state;              /* as Slurm printed it, words joined with '+': "RUNNING" */
        char *nodes;              /* the allocated nodes as a hostlist ("n-[0-3]"), "" when none */
        SlurmHostlist *node_list; /* nodes, parsed: never expanded (hostlist.h) */
        size_t n_nodes;           /* the names nodes stands for, counted without expanding */
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
/* Whether name is in the job's node list: linear in the length of the list
 * as printed, however many names it stands for. */
bool slurm_job_has_node(const SlurmJob *j, const char *name);
/* Keeps the jobs with an allocation on any of names[0..n_names), in order,
 * and frees the others. Per job, it either enumerates the job's nodes or
 * asks for each of names, whichever is fewer: a job on a handful of nodes
 * costs a handful of lookups among names, a job on "n[1-65536]" one check
 * per name (only the second when memory for a sorted copy of names runs out). */
void slurm_job_list_keep_nodes(SlurmJobList *l, char *const *names, size_t n_names);

/* "RUNNING", ... for one bit; NULL for SLURM_JOB_STATE_OTHER and unknown bits. */
const char *slurm_job_state_to_string(SlurmJobState s);

/* The "jobs" array of `squeue --json`: job_id, job_state (string or list),
 * nodes. Returns as slurm_nodes_parse_json(); -ENOBUFS past SLURM_MAX_JOBS. */
int slurm_jobs_parse_json(const char *data, size_t len, SlurmJobList **ret, char **ret_error);
/* `squeue --noheader --format=%A|%T|%N`: "ID|STATE|NODES" lines. */
int slurm_jobs_parse_squeue(const char *data, size_t len, SlurmJobList **ret, char **ret_error);

/* A node name as Slurm prints it: 1 to SLURM_MAX_NAME_BYTES bytes, printable, no blanks. */
bool slurm_name_is_valid(const char *s, size_t len);
/* A new copy of len bytes of Slurm's text, cut at SLURM_MAX_TEXT_BYTES,
 * control characters (NUL included) replaced by '?', safe to print; NULL on
 * -ENOMEM. */
char *slurm_text_dup(const char *s, size_t len);
