/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Finding the workload's process by name in a procfs (the running view's
 * target mode, running.h). Only a process in the agent's own user namespace
 * whose uids are all the target uid is taken (the others are listed, with the
 * reason, for the caller to say); among those, one without an ancestor of the
 * same name wins, then one whose parent is the PID namespace's init or
 * outside it, then the lowest PID.
 *
 * Stateless: each call looks again. Processes come and go while we look: one
 * that cannot be read is skipped. Never logs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PROCESS_DEFAULT_PROC_DIR    "/proc"

/* The kernel keeps 15 bytes of a process name (TASK_COMM_LEN 16, NUL
 * included): a longer NAME is compared by its first 15 bytes. */
#define PROCESS_COMM_MAX            15u
/* PROC/PID/comm and PROC/PID/stat are read up to this size; a process whose
 * files are larger (never from a real kernel) is skipped. Of
 * PROC/PID/status, only this many first bytes are read: its "Uid:" line
 * comes early, and a "Groups:" line after it can be far longer. */
#define PROCESS_MAX_PROC_FILE_BYTES 4096u
/* Processes of the name that one look tells apart by PID (those ignored,
 * and those that could each be the target); more are counted. */
#define PROCESS_MAX_CANDIDATES      32u
/* Parents followed up from a candidate to find an ancestor of the same
 * name. */
#define PROCESS_MAX_ANCESTORS       64u
/* One reason a process was ignored, in bytes. */
#define PROCESS_MAX_REASON_BYTES    128u

/* What the target must be, and where to look. */
typedef struct ProcessSelector {
        int proc_fd;       /* the procfs, borrowed */
        const char *name;  /* borrowed */
        pid_t self;        /* the caller, never a candidate (0: not in this procfs) */
        uid_t uid;         /* every uid of the target */
        bool userns_known; /* false: no user namespaces (no ns/user anywhere) */
        dev_t userns_dev;  /* the agent's own user namespace: the nsfs inode */
        ino_t userns_ino;
} ProcessSelector;

typedef struct ProcessCandidate {
        pid_t pid;
        bool descendant; /* an ancestor has the name */
        bool init_child; /* its parent is PID 1, or outside the PID namespace */
} ProcessCandidate;

typedef struct ProcessRejected {
        pid_t pid;
        char reason[PROCESS_MAX_REASON_BYTES]; /* why it may not be the target */
} ProcessRejected;

/* One look at the processes named s->name. */
typedef struct ProcessSelection {
        ProcessCandidate best;                            /* pid 0: none */
        pid_t several[PROCESS_MAX_CANDIDATES];            /* accepted, not descendants, sorted */
        size_t n_several, n_several_dropped;              /* beyond the array: counted */
        ProcessRejected rejected[PROCESS_MAX_CANDIDATES]; /* sorted by PID */
        size_t n_rejected, n_rejected_dropped;
} ProcessSelection;

/* Fills *s for looking in proc_fd (a procfs, or a tree that stands in for
 * one) for processes named name running as uid; s borrows proc_fd and name.
 * The caller's own user namespace is taken from proc_fd's "self" where it
 * names the caller, else from the real /proc. Returns 0, or the -errno of
 * looking at that namespace. */
int process_selector_init(ProcessSelector *s, int proc_fd, const char *name, uid_t uid);

/* 1 when the process at dir_fd (PROC/PID, or proc_fd with "PID/" in
 * prefix) is alive, named s->name and may be the workload's (in the
 * agent's user namespace, every uid s->uid), 0 when not, -errno when it
 * cannot be told (-ENOENT: gone). */
int process_matches_at(const ProcessSelector *s, int dir_fd, const char *prefix);

/* Looks at every process of s->proc_fd once, skipping zombies and the
 * caller itself, and fills *sel: the best candidate, those that could each
 * be the target, those of the name that were ignored and why. Returns 0
 * when one was found, -ESRCH when none (*sel still says which were
 * ignored), or the -errno of listing the processes. */
int process_find_at(const ProcessSelector *s, ProcessSelection *sel);

/* Finds the process named name (its comm, compared on PROCESS_COMM_MAX bytes)
 * in proc_dir (NULL: "/proc"), skipping zombies, the caller itself, and
 * processes in another user namespace than the caller's or with a uid other
 * than uid. When several match, one without an ancestor of the same name
 * wins (the main process of a daemon that forks helpers under its own
 * name), then one whose parent is PID 1 or outside the PID namespace (PPid
 * 0: a container's first process in a pod's shared PID namespace), then the
 * lowest PID (the oldest, barring PID wrap-around).
 * Returns 0 with *ret_pid, -ESRCH when none matches, or the -errno of
 * opening proc_dir. */
int process_find(const char *proc_dir, const char *name, uid_t uid, pid_t *ret_pid);
