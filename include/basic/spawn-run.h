/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Runs one program to its end and collects what it prints, with a timeout
 * and caps on its output. It blocks: this is for command-line programs, never
 * for the daemon's event loop. Never logs.
 *
 * No shell: argv[0] is looked up in PATH (as execvp() does; itself when it
 * holds a '/'), argv is passed as it is. The child gets /dev/null as stdin,
 * pipes as stdout and stderr, none of our other descriptors, an empty signal
 * mask, SIGPIPE at its default, and its own process group, which is killed
 * whole (SIGKILL) on a timeout or when stdout crosses its cap. No SIGCHLD
 * handler is needed or touched.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef struct SpawnLimits {
        /* From the fork to the child's exit, its output read to the end.
         * Output that outlives the child (a background process holding the
         * pipes) counts as the child still running. */
        uint64_t timeout_usec;
        /* stdout kept; one byte more kills the command (-EFBIG). */
        size_t max_stdout_bytes;
        /* stderr kept, for messages; the rest is read and dropped, so the
         * child never blocks on a full pipe. */
        size_t max_stderr_bytes;
} SpawnLimits;

/* What one run did. spawn_run() empties it first and fills it whether it
 * succeeds or fails; the
 * caller owns it and empties it with spawn_result_done(). */
typedef struct SpawnResult {
        char *out; /* stdout as read (up to the cap), NUL-terminated; it may hold NULs */
        size_t out_len;
        char *err; /* stderr as read (up to the cap), NUL-terminated */
        size_t err_len;
        int exec_errno;  /* > 0: argv[0] was not found or could not be executed; it never ran */
        int wait_status; /* as waitpid() gives it, once the child was reaped; else 0 */
} SpawnResult;

/* Frees what r holds and zeroes it. Accepts NULL. */
void spawn_result_done(SpawnResult *r);

/* Runs argv (argv[0] non-NULL, NULL-terminated) with envp (NULL: ours) and
 * waits for it within limits. Returns 0 when the command ran and exited,
 * whatever its status (result->wait_status says it);
 * -ENOENT, -EACCES, -ENOEXEC, ... when it could not be run
 * (result->exec_errno is the same errno);
 * -ETIME when it was killed at the timeout; -EFBIG when it was killed for
 * printing more than max_stdout_bytes; -ENOMEM, or the -errno of pipe2(),
 * fork(), poll() or waitid() (the child is then killed and reaped).
 * result->out and result->err hold what was read in every case where the
 * command started. */
int spawn_run(const char *const *argv, char *const *envp, const SpawnLimits *limits,
              SpawnResult *result);
