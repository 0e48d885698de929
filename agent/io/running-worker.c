/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The running view's reader thread (running-worker.h).
 *
 * A running file on a hung FUSE or NFS mount blocks the thread that opens or
 * reads it in the kernel; on the loop's thread that would stop /healthz,
 * /readyz, /metrics, the API client and the watchdog, and a liveness probe
 * would restart the agent into the same hang.
 *
 * A stalled read cannot be ended from here: a thread blocked in the kernel
 * cannot be cancelled, and a FUSE request its server has taken cannot even be
 * interrupted by SIGKILL. The read ends when the file system answers or the
 * mount is aborted (`umount -f`, killing the FUSE server, writing to
 * /sys/fs/fuse/connections/N/abort).
 *
 * The worker copies what the thread reads (the paths, the options' strings,
 * the mountinfo cache and the process memo): when it is freed while the
 * thread is stuck, the thread is left to free them itself if it ever returns.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "mountinfo-cache.h"
#include "running-worker.h"
#include "timeutil.h"

/* Threads of freed workers still inside a read. */
static atomic_uint left_behind;

struct RunningWorker {
        /* Set up before the thread starts and never changed: both threads
         * read them; only the thread uses mountinfo and memo. */
        RunningConfig cfg;
        char **paths;
        char *proc_dir, *running_root, *target_process;
        MountInfoCache *mountinfo;
        RunningMemo *memo;
        int event_fd; /* the thread writes 1 when a read ended */
        pthread_t thread;
        bool thread_started;

        /* Written by the thread, read by the loop when the deadline passes. */
        _Atomic size_t reading;

        pthread_mutex_t lock;
        pthread_cond_t wake;
        /* Under lock. */
        bool requested;    /* a read was asked for and not taken yet */
        bool in_read;      /* the thread is inside running_read() */
        bool quit;         /* the thread should end */
        bool orphaned;     /* the owner is gone: the thread frees the worker */
        pid_t last_pid;    /* the request's argument */
        RunningView *view; /* the ended read's result */
        int error;

        /* The loop's thread only. */
        sd_event_source *event_source, *deadline_source;
        RunningWorkerHandler handler;
        void *userdata;
        bool busy, stalled;
        uint64_t started_usec;
        uint64_t deadline_usec;
};

/* Frees what the worker owns, except what belongs to the loop (its event
 * sources, released by running_worker_free() before). */
static void worker_destroy(RunningWorker *w) {
        running_view_free(w->view);
        for (size_t i = 0; w->paths && i < w->cfg.n_paths; i++)
                free(w->paths[i]);
        free(w->paths);
        free(w->proc_dir);
        free(w->running_root);
        free(w->target_process);
        mountinfo_cache_free(w->mountinfo);
        running_memo_free(w->memo);
        if (w->event_fd >= 0)
                (void) close(w->event_fd);
        (void) pthread_cond_destroy(&w->wake);
        (void) pthread_mutex_destroy(&w->lock);
        free(w);
}

static void on_file(size_t index, void *userdata) {
        RunningWorker *w = userdata;

        atomic_store_explicit(&w->reading, index, memory_order_relaxed);
}

static void *worker_main(void *arg) {
        RunningWorker *w = arg;
        bool orphaned;

        (void) pthread_mutex_lock(&w->lock);
        for (;;) {
                RunningView *view = NULL;
                pid_t last_pid;
                int r;

                while (!w->requested && !w->quit)
                        (void) pthread_cond_wait(&w->wake, &w->lock);
                if (w->quit)
                        break;
                w->requested = false;
                w->in_read = true;
                last_pid = w->last_pid;
                (void) pthread_mutex_unlock(&w->lock);

                atomic_store_explicit(&w->reading, SIZE_MAX, memory_order_relaxed);
                r = running_read(&w->cfg, last_pid, &view);

                (void) pthread_mutex_lock(&w->lock);
                w->in_read = false;
                running_view_free(w->view);
                w->view = r < 0 ? NULL : view;
                w->error = r < 0 ? r : 0;
                if (w->orphaned)
                        break;
                /* An eventfd write fails only when the counter would overflow,
                 * after 2^64 - 2 reads the loop never took. */
                (void) eventfd_write(w->event_fd, 1);
        }
        orphaned = w->orphaned;
        (void) pthread_mutex_unlock(&w->lock);
        if (orphaned) {
                worker_destroy(w);
                atomic_fetch_sub(&left_behind, 1);
        }
        return NULL;
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        RunningWorker *w = userdata;
        RunningWorkerResult res = {
                .event = RUNNING_WORKER_STALLED,
                .stalled_index = atomic_load_explicit(&w->reading, memory_order_relaxed),
                .elapsed_usec = now_usec(CLOCK_MONOTONIC) - w->started_usec,
        };

        if (!w->busy)
                return 0;
        if (res.stalled_index >= w->cfg.n_paths)
                res.stalled_index = SIZE_MAX;
        w->stalled = true;
        w->handler(w, &res, w->userdata);
        return 0;
}

static int on_event(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        RunningWorker *w = userdata;
        _cleanup_(running_view_freep) RunningView *view = NULL;
        RunningWorkerResult res = {};
        eventfd_t n;
        int error;

        if (eventfd_read(fd, &n) < 0)
                return 0; /* EAGAIN: nothing ended */

        (void) pthread_mutex_lock(&w->lock);
        view = TAKE_PTR(w->view);
        error = w->error;
        (void) pthread_mutex_unlock(&w->lock);
        if (!w->busy)
                return 0;

        (void) sd_event_source_set_enabled(w->deadline_source, SD_EVENT_OFF);
        res.elapsed_usec = now_usec(CLOCK_MONOTONIC) - w->started_usec;
        w->busy = false;
        if (w->stalled) {
                w->stalled = false;
                res.event = RUNNING_WORKER_RECOVERED;
        } else {
                res.event = RUNNING_WORKER_DONE;
                res.view = TAKE_PTR(view);
                res.error = error;
        }
        w->handler(w, &res, w->userdata);
        running_view_free(res.view);
        return 0;
}

static int copy_config(RunningWorker *w, const RunningConfig *cfg) {
        w->cfg = (RunningConfig){
                .target_uid = cfg->target_uid,
                .n_paths = cfg->n_paths,
                .max_bytes = cfg->max_bytes,
                .on_file = on_file,
                .userdata = w,
        };
        if ((cfg->proc_dir && !(w->proc_dir = strdup(cfg->proc_dir))) ||
            (cfg->running_root && !(w->running_root = strdup(cfg->running_root))) ||
            (cfg->target_process && !(w->target_process = strdup(cfg->target_process))))
                return -ENOMEM;
        w->paths = calloc(cfg->n_paths ? cfg->n_paths : 1, sizeof(char *));
        if (!w->paths)
                return -ENOMEM;
        for (size_t i = 0; i < cfg->n_paths; i++)
                if (!(w->paths[i] = strdup(cfg->paths[i])))
                        return -ENOMEM;
        if (mountinfo_cache_new(&w->mountinfo) < 0 || running_memo_new(&w->memo) < 0)
                return -ENOMEM;
        w->cfg.proc_dir = w->proc_dir;
        w->cfg.running_root = w->running_root;
        w->cfg.target_process = w->target_process;
        w->cfg.paths = (const char *const *) w->paths;
        w->cfg.mountinfo = w->mountinfo;
        w->cfg.memo = w->memo;
        return 0;
}

/* The thread starts with every signal blocked: it inherits the mask of the
 * thread that creates it. */
static int start_thread(RunningWorker *w) {
        sigset_t all, saved;
        int r;

        (void) sigfillset(&all);
        r = pthread_sigmask(SIG_SETMASK, &all, &saved);
        if (r != 0)
                return -r;
        r = pthread_create(&w->thread, NULL, worker_main, w);
        (void) pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (r != 0)
                return -r;
        w->thread_started = true;
        (void) pthread_setname_np(w->thread, "running-reader");
        return 0;
}

int running_worker_new(sd_event *e, const RunningConfig *cfg, uint64_t deadline_usec,
                       RunningWorkerHandler handler, void *userdata, RunningWorker **ret) {
        _cleanup_(running_worker_freep) RunningWorker *w = NULL;
        int r;

        if (!e || !cfg || !handler || !ret || cfg->n_paths > RUNNING_MAX_PATHS ||
            (cfg->n_paths > 0 && !cfg->paths))
                return -EINVAL;
        for (size_t i = 0; i < cfg->n_paths; i++)
                if (!cfg->paths[i])
                        return -EINVAL;

        w = calloc(1, sizeof *w);
        if (!w)
                return -ENOMEM;
        w->event_fd = -EBADF;
        atomic_init(&w->reading, SIZE_MAX);
        (void) pthread_mutex_init(&w->lock, NULL);
        (void) pthread_cond_init(&w->wake, NULL);
        w->handler = handler;
        w->userdata = userdata;
        w->deadline_usec = deadline_usec;

        r = copy_config(w, cfg);
        if (r < 0)
                return r;
        w->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->event_fd < 0)
                return negative_errno();
        r = sd_event_add_io(e, &w->event_source, w->event_fd, EPOLLIN, on_event, w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(w->event_source, "running-reader");
        r = sd_event_add_time_relative(e, &w->deadline_source, CLOCK_MONOTONIC, deadline_usec, 0,
                                       on_deadline, w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(w->deadline_source, SD_EVENT_OFF);
        (void) sd_event_source_set_description(w->deadline_source, "running-deadline");

        r = start_thread(w);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

RunningWorker *running_worker_free(RunningWorker *w) {
        bool stuck;

        if (!w)
                return NULL;
        w->event_source = sd_event_source_disable_unref(w->event_source);
        w->deadline_source = sd_event_source_disable_unref(w->deadline_source);
        if (!w->thread_started) {
                worker_destroy(w);
                return NULL;
        }

        (void) pthread_mutex_lock(&w->lock);
        w->quit = true;
        /* A thread inside a read may never come back: it is left to free
         * the worker if it does. */
        stuck = w->in_read;
        w->orphaned = stuck;
        if (stuck)
                atomic_fetch_add(&left_behind, 1);
        (void) pthread_cond_signal(&w->wake);
        (void) pthread_mutex_unlock(&w->lock);

        if (stuck) {
                (void) pthread_detach(w->thread);
                return NULL;
        }
        (void) pthread_join(w->thread, NULL);
        worker_destroy(w);
        return NULL;
}

int running_worker_start(RunningWorker *w, pid_t last_pid) {
        int r;

        if (w->busy)
                return -EBUSY;
        r = sd_event_source_set_time_relative(w->deadline_source, w->deadline_usec);
        if (r >= 0)
                r = sd_event_source_set_enabled(w->deadline_source, SD_EVENT_ONESHOT);
        if (r < 0)
                return r;

        (void) pthread_mutex_lock(&w->lock);
        w->requested = true;
        w->last_pid = last_pid;
        (void) pthread_cond_signal(&w->wake);
        (void) pthread_mutex_unlock(&w->lock);

        w->busy = true;
        w->stalled = false;
        w->started_usec = now_usec(CLOCK_MONOTONIC);
        return 0;
}

bool running_worker_busy(const RunningWorker *w) {
        return w->busy;
}

bool running_worker_stalled(const RunningWorker *w) {
        return w->stalled;
}

const char *running_worker_path(const RunningWorker *w, size_t index) {
        return index < w->cfg.n_paths ? w->paths[index] : NULL;
}

unsigned running_worker_left_behind(void) {
        return atomic_load(&left_behind);
}
