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
 *
 * Early reads (running_worker_follow_flips()): the thread has an inotify
 * instance of its own on the ConfigMap directory and waits on it beside its
 * wake-up eventfd. The kernel gives a rename one cookie, the same in every
 * inotify instance that sees it, and no two renames the same one (inotify(7)
 * promises that much; that the kernel counts them up is not relied on): the
 * thread's read of the running files tagged with cookie C began after the
 * thread saw the flip with cookie C, which is all that the look the loop's
 * watcher makes for that flip needs.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "log.h"
#include "mountinfo-cache.h"
#include "running-worker.h"
#include "timeutil.h"
#include "volume.h"

/* Threads of freed workers still inside a read. */
static atomic_uint left_behind;

/* What a read was, or what the loop waits for. */
typedef struct RunningRead {
        uint64_t seq;          /* reads are numbered as they begin (the loop: the next one's) */
        uint64_t started_usec; /* CLOCK_MONOTONIC: when it began */
        bool early;            /* begun by the thread on a flip */
        uint32_t cookie;       /* early: the last flip's cookie the thread had seen */
        pid_t last_pid;        /* running_read()'s argument */
} RunningRead;

/* The read r serves the loop that waits for want: it began after the loop
 * asked (numbered under the lock, so exactly), or (a look for a flip) it is
 * an early read begun after that very flip (the last the thread had seen),
 * for the same process. */
static bool want_serves(const RunningRead *want, const RunningRead *r) {
        if (r->seq >= want->seq)
                return true;
        return want->early && r->early && r->cookie == want->cookie &&
               r->last_pid == want->last_pid;
}

/* A read that ended and was not delivered yet. */
typedef struct Ended {
        bool have;
        RunningRead read;
        RunningView *view; /* or */
        int error;
} Ended;

struct RunningWorker {
        /* Set up before the thread starts and never changed: both threads
         * read them; only the thread uses mountinfo and memo. */
        RunningConfig cfg;
        char **paths;
        char *proc_dir, *running_root, *target_process;
        MountInfoCache *mountinfo;
        RunningMemo *memo;
        int event_fd; /* the thread writes 1 when a read ended */
        int wake_fd;  /* the loop writes 1 when it asks the thread for something */
        int flip_fd;  /* the thread's inotify instance (early reads), or -EBADF */
        int flip_wd;  /* its watch on the ConfigMap directory, or -1 */
        pthread_t thread;
        bool thread_started;

        /* Written by the thread, read by the loop when the deadline passes. */
        _Atomic size_t reading;

        pthread_mutex_t lock;
        /* Under lock. */
        bool requested;   /* a read was asked for and not taken yet */
        bool in_read;     /* the thread is inside running_read() */
        bool quit;        /* the thread should end */
        bool orphaned;    /* the owner is gone: the thread frees the worker */
        bool owner_waits; /* the loop waits for a read: no early read now */
        uint64_t
                early_not_before; /* CLOCK_MONOTONIC: no early read before (running_worker_allow()) */
        pid_t last_pid;           /* the next read's argument */
        uint64_t next_seq;        /* the number the next read to begin gets */
        RunningRead current;      /* the read under way, while in_read */
        Ended ended;              /* the last read that ended, until the loop takes it */

        /* The loop's thread only. */
        sd_event_source *event_source, *deadline_source;
        RunningWorkerHandler handler;
        void *userdata;
        bool busy, stalled;
        RunningRead want;      /* busy: the read that serves (want_serves()) */
        Ended adopted;         /* an ended early read taken for the look: delivered next */
        uint64_t started_usec; /* the read that serves began then, or (not begun) was asked for */
        uint64_t deadline_usec;
};

/* Frees what the worker owns, except what belongs to the loop (its event
 * sources, released by running_worker_free() before). */
static void worker_destroy(RunningWorker *w) {
        running_view_free(w->ended.view);
        running_view_free(w->adopted.view);
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
        if (w->wake_fd >= 0)
                (void) close(w->wake_fd);
        if (w->flip_fd >= 0)
                (void) close(w->flip_fd);
        (void) pthread_mutex_destroy(&w->lock);
        free(w);
}

static void on_file(size_t index, void *userdata) {
        RunningWorker *w = userdata;

        atomic_store_explicit(&w->reading, index, memory_order_relaxed);
}

/* Drains the thread's inotify instance fd, whose watch is wd. Returns true
 * when kubelet flipped "..data" meanwhile, with the last flip's cookie in
 * *ret_cookie. A watch that went (the directory was removed) is named in
 * *ret_gone_wd: early reads end until running_worker_follow_flips() is
 * called again (the loop's own watcher still sees everything). */
static bool drain_flips(int fd, int wd, uint32_t *ret_cookie, int *ret_gone_wd) {
        bool flipped = false;

        for (;;) {
                char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
                ssize_t n = read(fd, buf, sizeof buf);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;

                        p += sizeof *ev + ev->len;
                        if (ev->mask & IN_Q_OVERFLOW)
                                /* events were lost: this drain matches no flip */
                                flipped = false;
                        else if (ev->wd != wd)
                                continue;
                        else if (ev->mask & IN_IGNORED) {
                                *ret_gone_wd = wd;
                                flipped = false;
                        } else if ((ev->mask & IN_MOVED_TO) && ev->len > 0 &&
                                   streq(ev->name, VOLUME_DATA_LINK)) {
                                flipped = true;
                                *ret_cookie = ev->cookie;
                        }
                }
        }
        return flipped;
}

/* Called and returns under lock: waits until the loop asks for something
 * or, when flips are followed, kubelet flips. Returns true with *ret_cookie
 * when an early read may begin now. */
static bool wait_for_work(RunningWorker *w, uint32_t *ret_cookie) {
        struct pollfd fds[2] = {
                {.fd = w->wake_fd, .events = POLLIN},
                {.fd = w->flip_fd, .events = POLLIN},
        };
        int wd = w->flip_wd, gone_wd = -1;
        bool flipped = false;
        eventfd_t n;

        (void) pthread_mutex_unlock(&w->lock);
        while (poll(fds, fds[1].fd >= 0 ? 2 : 1, -1) < 0 && errno == EINTR)
                ;
        if (fds[0].revents & POLLIN)
                (void) eventfd_read(w->wake_fd, &n);
        if (fds[1].fd >= 0 && (fds[1].revents & POLLIN))
                flipped = drain_flips(fds[1].fd, wd, ret_cookie, &gone_wd);
        (void) pthread_mutex_lock(&w->lock);

        if (gone_wd >= 0 && gone_wd == w->flip_wd)
                w->flip_wd = -1;
        /* A watch set up again meanwhile may have missed the flip's
         * neighbours: only the watch polled counts. */
        return flipped && wd >= 0 && wd == w->flip_wd && !w->owner_waits && !w->requested &&
               !w->quit && now_usec(CLOCK_MONOTONIC) >= w->early_not_before;
}

static void *worker_main(void *arg) {
        RunningWorker *w = arg;
        bool orphaned;

        (void) pthread_mutex_lock(&w->lock);
        for (;;) {
                RunningView *view = NULL;
                RunningRead read = {};
                uint32_t cookie = 0;
                int r;

                if (w->quit)
                        break;
                if (w->requested) {
                        w->requested = false;
                        read = (RunningRead){.last_pid = w->last_pid};
                } else if (wait_for_work(w, &cookie))
                        read = (RunningRead){
                                .early = true, .cookie = cookie, .last_pid = w->last_pid};
                else
                        continue;
                read.seq = w->next_seq++;
                read.started_usec = now_usec(CLOCK_MONOTONIC);
                w->current = read;
                w->in_read = true;
                (void) pthread_mutex_unlock(&w->lock);

                atomic_store_explicit(&w->reading, SIZE_MAX, memory_order_relaxed);
                r = running_read(&w->cfg, read.last_pid, &view);

                (void) pthread_mutex_lock(&w->lock);
                w->in_read = false;
                running_view_free(w->ended.view);
                w->ended = (Ended){.have = true,
                                   .read = read,
                                   .view = r < 0 ? NULL : view,
                                   .error = r < 0 ? r : 0};
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

/* Under lock, the loop waiting for a read that has not ended: when the
 * thread has neither it nor a request under way (a result that did not
 * serve was all there was), it is asked for one, so that the wait ends. */
static void ensure_request(RunningWorker *w) {
        if (w->in_read || w->requested || w->quit)
                return;
        w->requested = true;
        w->last_pid = w->want.last_pid;
        (void) eventfd_write(w->wake_fd, 1);
}

static int on_event(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        RunningWorker *w = userdata;
        _cleanup_(running_view_freep) RunningView *view = NULL;
        RunningWorkerResult res = {};
        Ended e;
        eventfd_t n;

        if (eventfd_read(fd, &n) < 0)
                return 0; /* EAGAIN: nothing ended */
        if (!w->busy)
                return 0; /* an early read nobody asked for yet stays for a look */

        (void) pthread_mutex_lock(&w->lock);
        if (w->adopted.have) {
                /* running_worker_start_after_flip() took it from the thread */
                e = w->adopted;
                w->adopted = (Ended){};
        } else if (w->ended.have && (w->stalled || want_serves(&w->want, &w->ended.read))) {
                /* A stalled read's end is its end, whatever it was. */
                e = w->ended;
                w->ended = (Ended){};
        } else {
                /* begun before the loop asked: the read that serves follows */
                ensure_request(w);
                (void) pthread_mutex_unlock(&w->lock);
                return 0;
        }
        w->owner_waits = false;
        /* no early read until the owner says when (running_worker_allow()) */
        w->early_not_before = UINT64_MAX;
        (void) pthread_mutex_unlock(&w->lock);
        view = e.view;

        (void) sd_event_source_set_enabled(w->deadline_source, SD_EVENT_OFF);
        res.elapsed_usec = now_usec(CLOCK_MONOTONIC) - w->started_usec;
        w->busy = false;
        if (w->stalled) {
                w->stalled = false;
                res.event = RUNNING_WORKER_RECOVERED;
        } else {
                res.event = RUNNING_WORKER_DONE;
                res.view = TAKE_PTR(view);
                res.error = e.error;
                res.early = e.read.early;
                res.read_started_usec = e.read.started_usec;
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
        w->wake_fd = -EBADF;
        w->flip_fd = -EBADF;
        w->flip_wd = -1;
        w->early_not_before = UINT64_MAX;
        atomic_init(&w->reading, SIZE_MAX);
        (void) pthread_mutex_init(&w->lock, NULL);
        w->handler = handler;
        w->userdata = userdata;
        w->deadline_usec = deadline_usec;

        r = copy_config(w, cfg);
        if (r < 0)
                return r;
        w->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->event_fd < 0)
                return negative_errno();
        w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->wake_fd < 0)
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
        (void) eventfd_write(w->wake_fd, 1);
        (void) pthread_mutex_unlock(&w->lock);

        if (stuck) {
                (void) pthread_detach(w->thread);
                return NULL;
        }
        (void) pthread_join(w->thread, NULL);
        worker_destroy(w);
        return NULL;
}

static int start(RunningWorker *w, pid_t last_pid, bool after_flip, uint32_t cookie) {
        uint64_t now = now_usec(CLOCK_MONOTONIC), began = now;
        int r;

        if (w->busy)
                return -EBUSY;
        r = sd_event_source_set_time_relative(w->deadline_source, w->deadline_usec);
        if (r >= 0)
                r = sd_event_source_set_enabled(w->deadline_source, SD_EVENT_ONESHOT);
        if (r < 0)
                return r;

        (void) pthread_mutex_lock(&w->lock);
        w->want = (RunningRead){
                .seq = w->next_seq, .early = after_flip, .cookie = cookie, .last_pid = last_pid};
        w->owner_waits = true;
        if (w->ended.have && want_serves(&w->want, &w->ended.read)) {
                /* An early read that ended: taken now, so that a later one
                 * cannot replace it before on_event() delivers it. */
                w->adopted = w->ended;
                w->ended = (Ended){};
                (void) eventfd_write(w->event_fd, 1);
        } else if (w->in_read && want_serves(&w->want, &w->current))
                /* under way: its deadline counts from its start */
                began = w->current.started_usec;
        else {
                w->requested = true;
                w->last_pid = last_pid;
                (void) eventfd_write(w->wake_fd, 1);
        }
        (void) pthread_mutex_unlock(&w->lock);

        if (began < now)
                (void) sd_event_source_set_time_relative(
                        w->deadline_source,
                        now - began < w->deadline_usec ? w->deadline_usec - (now - began) : 0);
        w->busy = true;
        w->stalled = false;
        w->started_usec = began;
        return 0;
}

int running_worker_start(RunningWorker *w, pid_t last_pid) {
        return start(w, last_pid, false, 0);
}

int running_worker_start_after_flip(RunningWorker *w, pid_t last_pid, uint32_t cookie) {
        return start(w, last_pid, true, cookie);
}

int running_worker_follow_flips(RunningWorker *w, const char *dir) {
        int old_wd, r = 0;

        if (dir && w->cfg.target_process)
                return -EOPNOTSUPP;
        (void) pthread_mutex_lock(&w->lock);
        old_wd = w->flip_wd;
        w->flip_wd = -1;
        if (!dir) {
                if (old_wd >= 0)
                        (void) inotify_rm_watch(w->flip_fd, old_wd);
                (void) pthread_mutex_unlock(&w->lock);
                return 0;
        }
        if (w->flip_fd < 0) {
                /* set up before the thread polls it: created here, under the
                 * lock the thread takes before it looks at flip_fd */
                w->flip_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
                if (w->flip_fd < 0)
                        r = negative_errno();
        }
        if (r >= 0) {
                w->flip_wd = inotify_add_watch(w->flip_fd, dir, IN_MOVED_TO | IN_ONLYDIR);
                if (w->flip_wd < 0)
                        r = negative_errno();
        }
        /* the directory replaced: the old one's watch goes */
        if (old_wd >= 0 && old_wd != w->flip_wd)
                (void) inotify_rm_watch(w->flip_fd, old_wd);
        /* the thread's poll() takes the new descriptor on its next turn */
        (void) eventfd_write(w->wake_fd, 1);
        (void) pthread_mutex_unlock(&w->lock);
        return r;
}

void running_worker_allow(RunningWorker *w, uint64_t not_before_usec, pid_t last_pid) {
        (void) pthread_mutex_lock(&w->lock);
        w->early_not_before = not_before_usec;
        w->last_pid = last_pid;
        (void) pthread_mutex_unlock(&w->lock);
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
