/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reads the running view (running.h) on a thread of its own, so that a file
 * system that never answers (a FUSE mount whose server hangs, an NFS mount
 * whose server went away) cannot stop the event loop: only the worker thread
 * waits.
 *
 * One read at a time: running_worker_start() refuses (-EBUSY) while the
 * owner waits for one, so reads stuck on a hung file system never pile up. A read
 * that has not returned RUNNING_READ_DEADLINE_SEC (evaluate.h) after it
 * started is reported as STALLED, naming the path it waits for (NULL when it
 * waits elsewhere, on procfs say). It stays outstanding until the file system
 * answers or the mount is aborted; its view is then stale: it is dropped and
 * RECOVERED is reported, so the owner reads again.
 *
 * Early reads (running_worker_follow_flips()): the thread also watches the
 * ConfigMap directory for kubelet's flip and begins a read on it at once,
 * while the owner's loop is still waking for the same flip; the look the
 * flip brings takes that read. The read still begins after the flip, and one
 * read at a time still holds: the thread begins none while the owner waits
 * for one or before running_worker_allow() says so (the owner's pace).
 *
 * The worker owns copies of everything the thread reads: nothing the owner
 * frees is touched by the thread, even when the worker is freed while the
 * thread is stuck. The thread runs with every signal blocked, so signals
 * (SIGTERM, SIGHUP) keep going to the loop's signalfd.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "evaluate.h"
#include "macro.h"
#include "running.h"

#define RUNNING_WORKER_DEADLINE_USEC ((uint64_t) RUNNING_READ_DEADLINE_SEC * 1000u * 1000u)

typedef struct RunningWorker RunningWorker;

typedef enum RunningWorkerEvent {
        RUNNING_WORKER_DONE,      /* the read ended in time: view, or error */
        RUNNING_WORKER_STALLED,   /* the deadline passed: stalled_index says where it waits */
        RUNNING_WORKER_RECOVERED, /* a stalled read ended after all; its view was dropped */
} RunningWorkerEvent;

typedef struct RunningWorkerResult {
        RunningWorkerEvent event;
        RunningView *view;          /* DONE with error 0: the view; the handler may take it
                               * (TAKE_PTR), else it is freed after the call */
        int error;                  /* DONE: running_read()'s error (-ENOMEM, -EINVAL), else 0 */
        size_t stalled_index;       /* STALLED: index of the path being opened or read, or
                               * SIZE_MAX when the read waits outside the files */
        uint64_t elapsed_usec;      /* from the read's start (if it had begun when asked
                                * for), else from the request, to now */
        bool early;                 /* DONE: the thread began it on kubelet's flip, before
                                * running_worker_start_after_flip() asked */
        uint64_t read_started_usec; /* DONE: CLOCK_MONOTONIC, when the read began */
} RunningWorkerResult;

typedef void (*RunningWorkerHandler)(RunningWorker *w, RunningWorkerResult *result, void *userdata);

/* Starts the thread; a read that has not ended deadline_usec after it started
 * is reported STALLED (the daemon: RUNNING_WORKER_DEADLINE_USEC). cfg is
 * copied (its on_file and userdata are the worker's own; its mountinfo and memo are ignored: the worker keeps its
 * own). Returns 0, -EINVAL (a configuration running_read() would refuse),
 * -ENOMEM, or the -errno of creating the eventfd or the thread. */
int running_worker_new(sd_event *e, const RunningConfig *cfg, uint64_t deadline_usec,
                       RunningWorkerHandler handler, void *userdata, RunningWorker **ret);
/* Ends the thread. A thread stuck in a read is left behind (detached): it
 * frees the worker if the read ever ends, and calls no handler. */
RunningWorker *running_worker_free(RunningWorker *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(RunningWorker *, running_worker_free);

/* Starts a read (running_read(cfg, last_pid)); the handler is called from
 * the loop when it ends or stalls. Returns 0, or -EBUSY while a read is
 * outstanding (stalled ones included). */
int running_worker_start(RunningWorker *w, pid_t last_pid);

/* Early reads: the thread watches dir (the ConfigMap directory) for
 * kubelet's flip, the rename of "..data" into it, and on each one begins a
 * read at once when running_worker_allow() lets it and the owner waits for
 * no read, without waiting for the owner's loop to wake and ask: the look
 * the flip brings then finds its read under way or done
 * (running_worker_start_after_flip()). Called again (the directory was
 * replaced), it watches the new one; with NULL, it stops. Returns 0,
 * -EOPNOTSUPP with a target process (RunningConfig.target_process: a
 * dropped read would still have said its once-only warnings), or the -errno
 * of inotify (early reads are then off; nothing else changes). A thread's
 * read that nobody asked for is not reported stalled until a look asks. */
int running_worker_follow_flips(RunningWorker *w, const char *dir);
/* Lets the thread begin early reads from not_before_usec (CLOCK_MONOTONIC)
 * on, for the process last_pid (running_read()'s argument): the owner's
 * pace and its process. Until the first call the thread begins none. */
void running_worker_allow(RunningWorker *w, uint64_t not_before_usec, pid_t last_pid);
/* running_worker_start() for a look that only kubelet's flips asked for,
 * the last of them the rename with this inotify cookie: an early read the
 * thread began right after it saw that flip (the last one it had seen), for
 * last_pid, serves it, whether it is under way or done. The kernel gives a
 * rename one cookie in every inotify instance, and no two renames the same.
 * Otherwise a read starts, as running_worker_start(). */
int running_worker_start_after_flip(RunningWorker *w, pid_t last_pid, uint32_t cookie);

/* A read is outstanding. */
bool running_worker_busy(const RunningWorker *w);
/* The outstanding read passed its deadline. */
bool running_worker_stalled(const RunningWorker *w);
/* The configured path at index (as given to running_worker_new()), or NULL. */
const char *running_worker_path(const RunningWorker *w, size_t index);

/* How many freed workers' threads are still stuck in a read, in the whole
 * process. While one is, the process must not run its exit handlers (the
 * thread could wake and use what they free): it ends with _exit(). */
unsigned running_worker_left_behind(void);
