/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Slurm through its commands (sinfo, squeue, scontrol), as the rollout needs
 * it: every node's state and reason, the jobs on given nodes, and drain /
 * resume / down of named nodes. What the commands print is read by the Slurm
 * model (slurm.h).
 *
 * Each call runs one command through the spawner (spawn-run.h: no shell, a
 * timeout, a cap on what it may print), with the caller's environment
 * (SLURM_CONF, SLURM_CLUSTERS, ...) less the variables that change what the
 * commands print or select (SINFO_*, SQUEUE_*, SCONTROL_*), and with
 * SLURM_TIME_FORMAT set to "%s". It blocks: this is for a command-line
 * program, never for the daemon's event loop. SLURM_FORMAT_AUTO reads the
 * text whose fields have kept their meaning from Slurm 22.05 to 26.05
 * (`scontrol --oneliner show node`, `squeue --format=%A|%T|%N`);
 * SLURM_FORMAT_JSON the JSON commands, whose shape changes with Slurm's
 * data_parser version. Never logs above debug.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "slurm.h"

/* Per command, unless the configuration says otherwise. */
#define SLURM_DEFAULT_TIMEOUT_USEC     (30u * 1000000u)
/* stdout of one command; the JSON of squeue is about 3 KiB a job. */
#define SLURM_DEFAULT_MAX_OUTPUT_BYTES (64u * 1024u * 1024u)
#define SLURM_MAX_OUTPUT_BYTES         (1024u * 1024u * 1024u)
/* stderr kept for messages; the rest is read and dropped. */
#define SLURM_MAX_STDERR_BYTES         (64u * 1024u)
/* A reason this module writes. */
#define SLURM_MAX_REASON_BYTES         1024u

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
        const char *srun;        /* NULL: "srun" (slurm_container_env() only) */
        uint64_t timeout_usec;   /* per command; 0: SLURM_DEFAULT_TIMEOUT_USEC */
        size_t max_output_bytes; /* stdout per command; 0: SLURM_DEFAULT_MAX_OUTPUT_BYTES */
        SlurmFormat format;
        /* NULL, or words run before every command (NULL-terminated; see
         * slurm_client_new()). */
        char *const *exec_prefix;
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

/* With cfg->exec_prefix, every command runs as PREFIX env -u VAR...
 * SLURM_TIME_FORMAT=%s COMMAND ARGS (VAR: each variable that sinfo, squeue or
 * scontrol read to change what they print or select), through a relay such
 * as `kubectl exec POD --`: the environment set here never crosses it, so it
 * is set on the far side by env(1), which that side must have. The relay must
 * pass its arguments on as they are (kubectl exec does; ssh joins them into
 * one shell line and does not): before the first command, the client runs
 * PREFIX env -i 'NAME=VALUE' env with a VALUE that holds blanks and shell
 * quotes and fails with -EPROTO unless it reads back exactly NAME=VALUE.
 * cfg's strings are copied. Runs nothing yet. Returns 0, -EINVAL (a
 * max_output_bytes over SLURM_MAX_OUTPUT_BYTES, a bad format), -ENOMEM. */
int slurm_client_new(const SlurmConfig *cfg, SlurmClient **ret);
SlurmClient *slurm_client_free(SlurmClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(SlurmClient *, slurm_client_free);

/* The format in use: the configured one, or for AUTO what the first read
 * chose, always TEXT (AUTO until then). */
SlurmFormat slurm_client_format(const SlurmClient *c);
/* "22.05.8" once `scontrol --version` ran (JSON does on its first read), else NULL. Borrowed. */
const char *slurm_client_version(const SlurmClient *c);

/* Runs `scontrol --version` and remembers the version. Returns 0, or as below. */
int slurm_probe_version(SlurmClient *c, SlurmCommandReport *report);

/* Every node the controller knows, hidden partitions included.
 * Returns 0 with *ret new, or -ENOENT (command not found), -EACCES,
 * -ETIME (timed out), -EFBIG (output over the cap), -EIO (non-zero exit,
 * killed, or Slurm reported an error), -EBADMSG (output not understood),
 * -EPROTO (the exec prefix changed the arguments),
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

/* slurm_container_env(): srun's --time in minutes, and how long the client
 * waits for it (the allocation, the image's import, the job). */
#define SLURM_VERIFY_TIME_LIMIT_MIN 10u
#define SLURM_VERIFY_TIMEOUT_USEC   ((SLURM_VERIFY_TIME_LIMIT_MIN + 1u) * 60u * 1000000u)
/* What env may print there. */
#define SLURM_VERIFY_MAX_ENV_BYTES  (1024u * 1024u)

/* Runs `srun -w NODE -N1 -n1 --time=SLURM_VERIFY_TIME_LIMIT_MIN
 * --job-name=aicr-enroot-verify --container-image=IMAGE env` (no --pty: the
 * output is read, never shown) and returns what env printed: *ret_out (new,
 * *ret_len bytes; it holds the job's values, which the caller must never
 * print). Returns 0; -ENOTSUP when srun refused --container-image (no pyxis
 * plugin: "unrecognized option"); -EINVAL (a node name as for
 * slurm_drain_nodes(), an image that is empty, starts with '-' or holds
 * control characters: nothing ran); else as slurm_read_nodes(). */
int slurm_container_env(SlurmClient *c, const char *node, const char *image, char **ret_out,
                        size_t *ret_len, SlurmCommandReport *report);
