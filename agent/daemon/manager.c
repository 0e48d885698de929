/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "condition.h"
#include "document.h"
#include "evaluate.h"
#include "httpd.h"
#include "incluster.h"
#include "log.h"
#include "manager.h"
#include "fileio.h"
#include "metrics.h"
#include "podsync.h"
#include "running.h"
#include "running-worker.h"
#include "timeutil.h"
#include "volume.h"
#include "watcher.h"
#include "workload.h"

/* While the target process is absent, look for it this often: a restart of
 * the workload container must show up in seconds, not at the next resync. */
#define MANAGER_PROCESS_RETRY_USEC (2u * 1000u * 1000u)
/* One-line summaries for STATUS= and logs. */
#define MANAGER_MAX_LINE_BYTES     4096u
/* Pacing: a look at both sides (the running files read, the evaluation, what
 * it publishes) is followed by at least as long without one, and by at most
 * this: whatever asks meanwhile is looked at when the pause ends, in one look.
 * A storm of triggers (a writer flipping ..data without pause, a pod that
 * changes without end) then gets looks at most half of the time (looks up to
 * this long; a longer one is followed by this pause only), while a trigger
 * that comes more than one look's length after the last look ended is looked
 * at at once. */
#define MANAGER_PACE_MAX_USEC      (100u * 1000u)

struct Manager {
        const Options *options;
        sd_event *event;
        Watcher *watcher;
        Httpd *httpd;
        PodSync *podsync; /* the pod condition, NULL when not kept */
        sd_event_source *resync_source;
        sd_event_source *process_source; /* pidfd of the target process, or the retry timer */
        const char **keys;               /* from options->files, borrowed strings */
        const char **paths;
        pid_t target_pid;
        /* Reads the running files off the loop (running-worker.h). */
        RunningWorker *reader;
        bool read_again;              /* something asked for a look during the outstanding read */
        EvalTrigger last_trigger;     /* what asked for the read under way */
        uint64_t look_start_usec;     /* CLOCK_MONOTONIC: when the last look began */
        uint64_t next_look_usec;      /* no look starts before this (MANAGER_PACE_MAX_USEC) */
        sd_event_source *pace_source; /* starts the look that waits for next_look_usec */
        EvalTrigger paced_trigger;    /* what asked for that look */
        /* What asked for a look since the last read began: kubelet's flips
         * only (the last one's inotify cookie) may be served by the reader's
         * early read (running_worker_start_after_flip()). */
        bool flip_asked, other_asked;
        uint32_t flip_cookie;
        bool ready;                     /* READY=1 was sent: the first evaluation completed */
        size_t stalled_index;           /* the read is stalled on this path (SIZE_MAX: elsewhere) */
        EvalCache (*parsed)[_SIDE_MAX]; /* each file's sides as last parsed */
        ContentKey content_key;         /* drawn at start, never shown (document.h) */
        Report *report;
        uint64_t evaluations[_TRIGGER_MAX];
        /* The workload containers and the versions they run (workload.h),
         * NULL until the pod was read; kept only when checks_workload(). */
        Workload *workload;
        char *desired_version;       /* from the last read of the ConfigMap directory */
        uint64_t desired_since_usec; /* when kubelet made it current */
        /* The ConfigMap directory as read for the look under way (read
         * while the reader reads the running side), until it is judged:
         * the snapshot, or the error; neither when it was not read. */
        VolumeSnapshot *desired;
        int desired_error;
        bool desired_warned; /* its error was logged; until a read succeeds */
};

/* The agent reads its own subPath mounts for the workload's (no
 * --target-process) and sees its pod: it must then know which version the
 * workload runs before it trusts them. */
static bool checks_workload(const Manager *m) {
        return m->options->kube_enabled && !m->options->target_process;
}

/* ---------------------------------------------------------------------------
 * Evaluation */

static bool changes_equal(const FileReport *a, const FileReport *b) {
        if (a->n_changes != b->n_changes || a->n_changes_dropped != b->n_changes_dropped)
                return false;
        for (size_t i = 0; i < a->n_changes; i++)
                if (!streq(a->changes[i].key, b->changes[i].key) ||
                    a->changes[i].change != b->changes[i].change ||
                    a->changes[i].effective != b->changes[i].effective)
                        return false;
        return true;
}

/* One line per state change: file, state, keys (never values), since when. */
static void log_changes(const Report *old, const Report *new) {
        for (size_t i = 0; i < new->n_files; i++) {
                const FileReport *f = &new->files[i], *p = old ? &old->files[i] : NULL;
                StrBuf line = STRBUF_INIT(MANAGER_MAX_LINE_BYTES);
                char since[32];

                if (p && p->state == f->state && p->superseded == f->superseded &&
                    streq_ptr(p->detail, f->detail) && changes_equal(p, f))
                        continue;
                if (evaluate_describe(f, &line) < 0 && line.len == 0) {
                        strbuf_done(&line);
                        (void) log_oom();
                        continue;
                }
                condition_format_time(f->state_since_usec, since);
                if (f->state == FILE_DRIFTED || f->state == FILE_INVALID ||
                    f->state == FILE_UNREADABLE)
                        log_warning("%s, since %s.", strbuf_str(&line), since);
                else
                        log_info("%s, since %s.", strbuf_str(&line), since);
                strbuf_done(&line);
        }
}

static void notify_status(const Manager *m) {
        StrBuf s = STRBUF_INIT(MANAGER_MAX_LINE_BYTES);
        const Report *r = m->report;

        (void) strbuf_printf(&s, "STATUS=pod %s:", pod_state_to_string(r->pod));
        for (size_t i = 0; i < r->n_files; i++)
                (void) strbuf_printf(&s, "%s %s %s%s", i ? "," : "", r->files[i].key,
                                     file_state_to_string(r->files[i].state),
                                     r->files[i].superseded ? " (superseded mount)" : "");
        (void) sd_notify(false, strbuf_str(&s));
        strbuf_done(&s);
}

static int on_process(sd_event_source *s, int fd, uint32_t revents, void *userdata);
static int on_process_retry(sd_event_source *s, uint64_t usec, void *userdata);

/* In target-process mode, wake up when the process exits (its pidfd turns
 * readable), or retry soon while it is absent. */
static void track_process(Manager *m, RunningView *view) {
        int r;

        if (!m->options->target_process)
                return;
        if (view->observable && view->pid == m->target_pid && m->process_source)
                return;

        m->process_source = sd_event_source_disable_unref(m->process_source);
        m->target_pid = view->observable ? view->pid : 0;

        if (view->observable && view->pidfd >= 0) {
                int fd = TAKE_FD(view->pidfd);
                r = sd_event_add_io(m->event, &m->process_source, fd, EPOLLIN, on_process, m);
                if (r < 0) {
                        (void) close(fd);
                        log_warning_errno(r,
                                          "Cannot watch process %d for exits (%m): a restart "
                                          "will show at the next resync.",
                                          (int) view->pid);
                        return;
                }
                (void) sd_event_source_set_io_fd_own(m->process_source, true);
                (void) sd_event_source_set_description(m->process_source, "target-pidfd");
                return;
        }
        if (!view->observable) {
                r = sd_event_add_time_relative(m->event, &m->process_source, CLOCK_MONOTONIC,
                                               MANAGER_PROCESS_RETRY_USEC, 100 * 1000,
                                               on_process_retry, m);
                if (r < 0)
                        log_warning_errno(r, "Cannot arm the process retry timer: %m");
        }
}

/* When the running side is the agent's own subPath mount, what the workload
 * runs decides whether it stands for the workload's file (workload.h).
 * Returns 1 when the workload was checked, 0 when not, -ENOMEM. */
static int check_workload(const Manager *m, const RunningFile *rf, const VolumeSnapshot *snap,
                          EvalInput *in, char *what_workload, size_t what_size,
                          char **ret_unverifiable) {
        int verdict;

        if (!checks_workload(m) || !rf->mount_version || !snap || in->running_unobservable)
                return 0;
        verdict = workload_check(m->workload, rf->mount_version, snap->version, ret_unverifiable);
        if (verdict < 0)
                return verdict;
        switch (verdict) {
        case WORKLOAD_RUNS_DESIRED:
                /* The workload runs the very version the ConfigMap shows:
                 * its files are the ConfigMap's, whatever the agent's mount
                 * holds. */
                (void) snprintf(what_workload, what_size,
                                "%s (ConfigMap version %s in the workload)", in->running_path,
                                snap->version);
                in->side[SIDE_RUNNING] = in->side[SIDE_DESIRED];
                in->side[SIDE_RUNNING].what = what_workload;
                in->nlink_known = false;
                in->mount_version = NULL;
                in->mount_deleted = false;
                break;
        case WORKLOAD_UNVERIFIABLE:
                in->unverifiable = *ret_unverifiable;
                break;
        default:
                break;
        }
        return 1;
}

static void fill_input(const Manager *m, size_t i, const VolumeSnapshot *snap, int dir_error,
                       const RunningView *view, char *what_desired, size_t what_size,
                       EvalInput *in) {
        const FileSpec *spec = &m->options->files[i];
        const RunningFile *rf = &view->files[i];

        (void) snprintf(what_desired, what_size, "ConfigMap key \"%s\" in %s", spec->key,
                        m->options->desired_dir);
        *in = (EvalInput){
                .key = spec->key,
                .running_path = spec->path,
                .format = spec->format,
                .type = evaluate_doc_type(spec->format),
                .desired_version = snap ? snap->version : NULL,
                .nlink_known = rf->have_stat,
                .nlink = rf->nlink,
                .mount_version = rf->mount_version,
                .mount_deleted = rf->mount_deleted,
                .running_unobservable = view->observable ? NULL : view->detail,
                .content_key = &m->content_key,
        };
        if (dir_error < 0)
                in->side[SIDE_DESIRED] = (EvalSide){.error = dir_error, .what = what_desired};
        else
                in->side[SIDE_DESIRED] = (EvalSide){.error = snap->files[i].error,
                                                    .data = snap->files[i].data,
                                                    .len = snap->files[i].len,
                                                    .what = what_desired,
                                                    .version = snap->version};
        /* The version the running mount's root names: the inode read is that
         * mount's root, so its bytes are that version's (running.h). */
        in->side[SIDE_RUNNING] = (EvalSide){.error = rf->error,
                                            .data = rf->content,
                                            .len = rf->size,
                                            .what = spec->path,
                                            .version = rf->mount_version};
        for (int s = 0; s < _SIDE_MAX; s++)
                in->cache[s] = &m->parsed[i][s];
}

/* Keeps the version the ConfigMap directory shows, and applies the
 * start-time rule to workload containers not known yet. */
static int remember_desired(Manager *m, const VolumeSnapshot *snap) {
        const char *v = snap ? snap->version : NULL;

        if (!streq_ptr(v, m->desired_version)) {
                char *copy = v ? strdup(v) : NULL;

                if (v && !copy)
                        return -ENOMEM;
                free(m->desired_version);
                m->desired_version = copy;
        }
        m->desired_since_usec = snap ? snap->version_since_usec : 0;
        if (!m->workload)
                return 0;
        return workload_resolve(m->workload, NULL, NULL, m->desired_version, m->desired_since_usec);
}

static void drop_desired(Manager *m) {
        m->desired = volume_snapshot_free(m->desired);
        m->desired_error = 0;
}

/* Reads the desired side of a look: the ConfigMap directory, opened by path
 * each time (it may have been replaced). Returns 0, or -ENOMEM. */
static int read_desired(Manager *m) {
        _cleanup_close_ int dir_fd = -EBADF;
        const Options *o = m->options;
        int r;

        drop_desired(m);
        dir_fd = open(o->desired_dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (dir_fd < 0)
                m->desired_error = negative_errno();
        else {
                r = volume_read(dir_fd, m->keys, o->n_files, DOCUMENT_MAX_BYTES, &m->desired);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        m->desired_error = r;
        }
        /* once while it stays unreadable, however often it is read again */
        if (m->desired_error < 0 && !m->desired_warned)
                log_warning_errno(m->desired_error,
                                  "Cannot read the ConfigMap directory \"%s\": %s", o->desired_dir,
                                  volume_error_to_string(m->desired_error));
        m->desired_warned = m->desired_error < 0;
        return 0;
}

/* What the running side is while a read waits for a file system that does
 * not answer (running-worker.h): the file it waits for is unreadable for
 * that reason, and the others were not looked at; nothing else is known. */
static int stalled_view(const Manager *m, RunningView **ret) {
        _cleanup_(running_view_freep) RunningView *v = calloc(1, sizeof(RunningView));
        size_t n = m->options->n_files;

        if (!v)
                return -ENOMEM;
        v->observable = true;
        v->pidfd = -EBADF;
        v->pid = m->target_pid;
        v->files = calloc(n ? n : 1, sizeof(RunningFile));
        if (!v->files)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                v->files[i].path = strdup(m->paths[i]);
                if (!v->files[i].path)
                        return -ENOMEM;
                v->files[i].error = m->stalled_index == SIZE_MAX || m->stalled_index == i
                                            ? -ETIMEDOUT
                                            : -EINPROGRESS;
                v->n_files++;
        }
        *ret = TAKE_PTR(v);
        return 0;
}

/* Judges the desired side, read for this look (read now when it was not),
 * against view, the running side read for it (or what is known of it while
 * a read is stalled), then publishes the result: /metrics and /status, the
 * pod condition, STATUS=, and READY=1 the first time. */
static int evaluate_view(Manager *m, RunningView *view, bool stalled) {
        _cleanup_(volume_snapshot_freep) VolumeSnapshot *snap = NULL;
        _cleanup_(report_freep) Report *new = NULL, *old = NULL;
        const Options *o = m->options;
        uint64_t now = now_usec(CLOCK_REALTIME);
        int dir_error, r;

        if (!m->desired && m->desired_error == 0 && read_desired(m) < 0)
                return log_oom();
        snap = TAKE_PTR(m->desired);
        dir_error = m->desired_error;
        drop_desired(m);

        if (view->note && !m->report)
                log_notice("%s", view->note);
        if (view->warning)
                log_warning("%s", view->warning);

        new = calloc(1, sizeof(Report));
        if (!new)
                return log_oom();
        new->files = calloc(o->n_files, sizeof(FileReport));
        if (!new->files)
                return log_oom();
        if (snap && snap->version) {
                new->desired_version = strdup(snap->version);
                if (!new->desired_version)
                        return log_oom();
        }
        new->observable[SIDE_DESIRED] = dir_error == 0;
        new->observable[SIDE_RUNNING] = view->observable;
        r = remember_desired(m, snap);
        if (r < 0)
                return log_oom();

        for (size_t i = 0; i < o->n_files; i++) {
                const FileReport *prev = m->report ? &m->report->files[i] : NULL;
                _cleanup_free_ char *unverifiable = NULL;
                char what[512], what_workload[512];
                EvalInput in;

                fill_input(m, i, snap, dir_error, view, what, sizeof what, &in);
                r = check_workload(m, &view->files[i], dir_error == 0 ? snap : NULL, &in,
                                   what_workload, sizeof what_workload, &unverifiable);
                if (r < 0)
                        return log_oom();
                new->workload_checked |= r > 0;
                r = evaluate_file(&in, prev, now, &new->files[i]);
                if (r == -ENOMEM)
                        return log_oom();
                if (r < 0)
                        return log_error_errno(r, "Cannot evaluate \"%s\": %m", in.key);
                new->n_files++;
        }
        if (new->workload_checked && workload_copy(m->workload, &new->workload) < 0)
                return log_oom();
        new->evaluated = true;
        new->evaluated_usec = now;
        new->pod = report_pod_state(new);

        old = TAKE_PTR(m->report);
        m->report = TAKE_PTR(new);
        if (m->podsync && podsync_update(m->podsync, m->report) < 0)
                (void) log_oom();
        /* A stalled read says nothing about the process: keep following it. */
        if (!stalled)
                track_process(m, view);
        notify_status(m);
        if (!m->ready) {
                (void) sd_notify(false, "READY=1");
                m->ready = true;
        }
        /* The new state is served first: a scrape that came in while we
         * evaluated gets it now, before the lines below are written (a write
         * to the log pipe wakes its reader, which may take this CPU) and
         * before the PATCH that podsync_update() queued for the next turn. */
        httpd_answer_waiting(m->httpd);

        if (old && old->pod != m->report->pod)
                log_notice("Pod is now %s (was %s).", pod_state_to_string(m->report->pod),
                           pod_state_to_string(old->pod));
        log_changes(old, m->report);
        if (!view->observable && (!old || old->observable[SIDE_RUNNING]))
                log_warning("Cannot look at the running files: %s", view->detail);
        log_debug("Evaluated (%s%s): pod %s.", eval_trigger_to_string(m->last_trigger),
                  stalled ? ", running files stalled" : "", pod_state_to_string(m->report->pod));
        return 0;
}

static int evaluate_stalled(Manager *m) {
        _cleanup_(running_view_freep) RunningView *view = NULL;

        /* the directory as it is now, not as the stalled look found it */
        drop_desired(m);

        if (stalled_view(m, &view) < 0)
                return log_oom();
        return evaluate_view(m, view, true);
}

/* A look ended (judged, or failed): the next one waits as long as this one
 * took, up to MANAGER_PACE_MAX_USEC. */
static void look_done(Manager *m) {
        uint64_t now = now_usec(CLOCK_MONOTONIC), took = now - m->look_start_usec;

        m->next_look_usec = now + (took < MANAGER_PACE_MAX_USEC ? took : MANAGER_PACE_MAX_USEC);
        /* the reader may read on kubelet's next flip when a look could start */
        running_worker_allow(m->reader, m->next_look_usec, m->target_pid);
        /* A look that failed judged nothing: its desired side goes, and
         * scrapes held for it get what is known. */
        drop_desired(m);
        httpd_release(m->httpd);
        /* The monotonic times let a test check the pace from the log. */
        log_debug("Look done at %" PRIu64 " us, after %" PRIu64 " us.", now, took);
}

static int look(Manager *m, EvalTrigger trigger);

static int on_pace(_unused_ sd_event_source *s, _unused_ uint64_t usec, void *userdata) {
        Manager *m = userdata;

        (void) look(m, m->paced_trigger);
        return 0;
}

/* Looks at both sides again, now or when the last look's pause ends. The
 * running side is read on the reader's thread and judged when it arrives
 * (on_running()); while a read is under way, one more follows it, however
 * many times this is called. */
static int look(Manager *m, EvalTrigger trigger) {
        uint64_t now;
        int r;

        if (running_worker_busy(m->reader)) {
                m->read_again = true;
                /* the read under way is judged against the directory as it
                 * is then, not as it was when the read began */
                drop_desired(m);
                /* While a read is stalled, the desired side can still be
                 * looked at (paced like any look). */
                if (!running_worker_stalled(m->reader))
                        return 0;
        }
        now = now_usec(CLOCK_MONOTONIC);
        if (now < m->next_look_usec) {
                m->paced_trigger = trigger;
                if (!m->pace_source) {
                        r = sd_event_add_time(m->event, &m->pace_source, CLOCK_MONOTONIC,
                                              m->next_look_usec, 1, on_pace, m);
                        if (r < 0)
                                return log_error_errno(r, "Cannot schedule a look: %m");
                        (void) sd_event_source_set_description(m->pace_source, "look-pace");
                } else {
                        r = sd_event_source_set_time(m->pace_source, m->next_look_usec);
                        if (r >= 0)
                                r = sd_event_source_set_enabled(m->pace_source, SD_EVENT_ONESHOT);
                        if (r < 0)
                                return log_error_errno(r, "Cannot schedule a look: %m");
                }
                return 0;
        }
        if (m->pace_source)
                (void) sd_event_source_set_enabled(m->pace_source, SD_EVENT_OFF);
        m->last_trigger = trigger;
        m->look_start_usec = now;
        log_debug("Look (%s) starts at %" PRIu64 " us.", eval_trigger_to_string(trigger), now);
        if (running_worker_busy(m->reader)) { /* stalled */
                r = evaluate_stalled(m);
                look_done(m);
                return r;
        }
        if (m->flip_asked && !m->other_asked)
                r = running_worker_start_after_flip(m->reader, m->target_pid, m->flip_cookie);
        else
                r = running_worker_start(m->reader, m->target_pid);
        if (r < 0)
                return log_error_errno(r, "Cannot start reading the running files: %m");
        m->flip_asked = m->other_asked = false;
        /* While the reader reads the running side: a scrape now waits for
         * what this look finds, and the desired side is read. */
        httpd_hold(m->httpd);
        if (read_desired(m) < 0)
                (void) log_oom(); /* evaluate_view() tries again */
        return 0;
}

/* Asks for a look; flip_cookie: only kubelet's flip with that cookie asked
 * (watcher_call_flip()), else NULL. */
static int ask_look(Manager *m, EvalTrigger trigger, const uint32_t *flip_cookie) {
        m->evaluations[trigger]++;
        if (flip_cookie) {
                m->flip_asked = true;
                m->flip_cookie = *flip_cookie;
        } else
                m->other_asked = true;
        return look(m, trigger);
}

static int manager_evaluate(Manager *m, EvalTrigger trigger) {
        return ask_look(m, trigger, NULL);
}

static void on_running(RunningWorker *w, RunningWorkerResult *res, void *userdata) {
        Manager *m = userdata;
        const char *path;

        switch (res->event) {
        case RUNNING_WORKER_DONE:
                if (res->early)
                        log_debug("The running files were read from %" PRIu64
                                  " us, on kubelet's flip.",
                                  res->read_started_usec);
                if (res->error < 0)
                        log_error_errno(res->error, "Cannot read the running files: %m");
                else
                        (void) evaluate_view(m, res->view, false);
                look_done(m);
                break;
        case RUNNING_WORKER_STALLED:
                m->stalled_index = res->stalled_index;
                path = running_worker_path(w, res->stalled_index);
                log_warning("No answer from the file system within %u s while reading %s (a "
                            "hung FUSE or NFS mount?): the running files are reported "
                            "unreadable until it answers.",
                            (unsigned) RUNNING_READ_DEADLINE_SEC,
                            path ? path : "the target process's /proc entries");
                (void) evaluate_stalled(m);
                return;
        case RUNNING_WORKER_RECOVERED:
                log_notice("The file system answered after %llu ms: reading the running files "
                           "again.",
                           (unsigned long long) (res->elapsed_usec / 1000u));
                m->read_again = true;
                m->other_asked = true; /* a read begun now, nothing earlier */
                break;
        }
        if (m->read_again) {
                m->read_again = false;
                (void) look(m, m->last_trigger);
        }
}

/* ---------------------------------------------------------------------------
 * Event sources */

static int on_process(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;

        log_info("Process %d (%s) exited; looking for it again.", (int) m->target_pid,
                 m->options->target_process);
        m->process_source = sd_event_source_disable_unref(m->process_source);
        m->target_pid = 0;
        (void) manager_evaluate(m, TRIGGER_PROCESS);
        return 0;
}

static int on_process_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        m->process_source = sd_event_source_disable_unref(m->process_source);
        (void) manager_evaluate(m, TRIGGER_PROCESS);
        return 0;
}

/* The reader follows kubelet's flips in the directory the watcher watches
 * (running_worker_follow_flips()): at start, and when the watcher found it
 * replaced; not while the watcher polls (its calls name no flip). Without
 * it the reader only reads when asked. --target-process reads never begin
 * early: a read whose view is dropped would still have said its warnings
 * about the process (running.h's memo). */
static void follow_flips(Manager *m) {
        const char *dir = m->options->desired_dir;
        int r;

        if (m->options->target_process)
                return;
        if (watcher_active_mode(m->watcher) != WATCH_INOTIFY) {
                (void) running_worker_follow_flips(m->reader, NULL);
                return;
        }
        r = running_worker_follow_flips(m->reader, dir);
        if (r < 0)
                /* the agent still sees every change; each just costs one
                 * wake-up more */
                log_full_errno(LOG_NOTICE, r,
                               "Cannot watch \"%s\" for kubelet's flips from the reader "
                               "thread: %m. The running files are read when a look asks. "
                               "Inotify instances and watches are bounded by "
                               "fs.inotify.max_user_instances and max_user_watches.",
                               dir);
        else
                log_debug("The reader follows kubelet's flips in \"%s\": it reads on each.", dir);
}

static void on_watch(Watcher *w, WatchReason reason, void *userdata) {
        static const EvalTrigger triggers[_WATCH_REASON_MAX] = {
                [WATCH_REASON_INOTIFY] = TRIGGER_INOTIFY,
                [WATCH_REASON_OVERFLOW] = TRIGGER_OVERFLOW,
                [WATCH_REASON_RECREATED] = TRIGGER_INOTIFY,
                [WATCH_REASON_POLL] = TRIGGER_POLL,
        };
        Manager *m = userdata;
        uint32_t cookie;
        bool flip = watcher_call_flip(w, &cookie);

        if (reason == WATCH_REASON_RECREATED)
                follow_flips(m);
        (void) ask_look(
                m, reason >= 0 && reason < _WATCH_REASON_MAX ? triggers[reason] : TRIGGER_INOTIFY,
                flip ? &cookie : NULL);
}

static int on_resync(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        int r;

        /* A change inotify never reported means the filesystem does not
         * deliver events (virtio-fs, 9p): in auto mode the watcher polls. */
        r = watcher_verify(m->watcher);
        switch (r) {
        case WATCH_VERIFY_FELL_BACK:
                log_warning("The ConfigMap directory changed without an inotify event (%s): "
                            "polling every %llu s from now on.",
                            strnull(watcher_fallback_reason(m->watcher)),
                            (unsigned long long) (m->options->poll_usec / 1000000u));
                follow_flips(m);
                break;
        case WATCH_VERIFY_MISSED:
                log_warning("The ConfigMap directory changed without an inotify event; "
                            "--watch inotify keeps watching: consider --watch auto or poll.");
                break;
        case WATCH_VERIFY_REWATCHED:
                log_notice("A filesystem was mounted over the ConfigMap directory: watching "
                           "the new one.");
                follow_flips(m);
                break;
        default:
                if (r < 0)
                        log_warning_errno(r, "Cannot verify the watch on the ConfigMap "
                                             "directory: %m");
        }
        (void) manager_evaluate(m, TRIGGER_RESYNC);

        r = sd_event_source_set_time_relative(s, m->options->resync_usec);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        if (r < 0)
                log_error_errno(r, "Cannot re-arm the resync timer: %m");
        return 0;
}

static int on_reload(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        log_info("SIGHUP: evaluating now%s.", m->podsync ? " and retrying the Kubernetes API" : "");
        (void) manager_evaluate(m, TRIGGER_SIGNAL);
        if (m->podsync)
                podsync_retry_now(m->podsync);
        return 0;
}

static int on_stop(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        log_info("%s: stopping.", strsignal((int) si->ssi_signo));
        (void) sd_notify(false, "STOPPING=1");
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

/* One line per workload container whose instance or known version changed. */
static void log_workload(const Workload *old, const Workload *new) {
        if (new->problem) {
                if (!old || !streq_ptr(old->problem, new->problem))
                        log_warning("Cannot tell which container is the workload: %s.",
                                    new->problem);
                return;
        }
        for (size_t i = 0; i < new->n_containers; i++) {
                const WorkloadContainer *c = &new->containers[i];
                const WorkloadContainer *p = NULL;
                char started[32];

                for (size_t k = 0; old && k < old->n_containers; k++)
                        if (streq(old->containers[k].name, c->name))
                                p = &old->containers[k];
                if (p && p->running == c->running && streq_ptr(p->container_id, c->container_id) &&
                    streq_ptr(p->version, c->version))
                        continue;
                if (!c->running) {
                        log_info("Workload container %s is not running.", c->name);
                        continue;
                }
                condition_format_time(c->started_usec, started);
                if (c->version)
                        log_info("Workload container %s (%s, started %s) runs ConfigMap version "
                                 "%s (known from: %s).",
                                 c->name, c->container_id, started, c->version,
                                 workload_source_to_string(c->source));
                else
                        log_warning("Workload container %s (%s, started %s) started before the "
                                    "ConfigMap version the agent sees, and no record says which "
                                    "version it runs.",
                                    c->name, c->container_id, started);
        }
}

/* The pod as the API server has it now: which containers are the workload,
 * which instances run, and what the agent's condition recorded. */
static void on_pod(const json_t *pod, void *userdata) {
        Manager *m = userdata;
        const Options *o = m->options;
        _cleanup_(workload_freep) Workload *w = NULL;
        _cleanup_(workload_record_done) WorkloadRecord record = {};
        const json_t *conditions = json_object_get(json_object_get(pod, "status"), "conditions");
        const char *message = json_string_value(
                json_object_get(condition_find(conditions, o->condition_type), "message"));
        WorkloadConfig cfg = {.agent_container = o->agent_container,
                              .names = (const char *const *) o->workload_containers,
                              .paths = m->paths,
                              .n_paths = o->n_files};

        if (!checks_workload(m))
                return;
        if (workload_from_pod(pod, &cfg, &w) < 0 || workload_record_parse(message, &record) < 0 ||
            workload_resolve(w, m->workload, &record, m->desired_version, m->desired_since_usec) <
                    0) {
                (void) log_oom();
                return;
        }
        if (workload_equal(m->workload, w))
                return;
        log_workload(m->workload, w);
        workload_free(m->workload);
        m->workload = TAKE_PTR(w);
        (void) manager_evaluate(m, TRIGGER_POD);
}

/* ---------------------------------------------------------------------------
 * HTTP source */

static const Report *get_report(void *userdata) {
        Manager *m = userdata;
        return m->report;
}

static void get_counters(void *userdata, MetricsCounters *ret) {
        Manager *m = userdata;

        *ret = (MetricsCounters){
                .watch_mode =
                        m->watcher ? watch_mode_to_string(watcher_active_mode(m->watcher)) : NULL,
                .version = PACKAGE_VERSION,
        };
        memcpy(ret->evaluations, m->evaluations, sizeof ret->evaluations);
        if (m->podsync) {
                PodSyncStatus st;

                podsync_status(m->podsync, &st);
                ret->kube = st.requests;
                ret->condition_synced = st.synced;
                ret->condition_stopped = st.stopped;
        }
}

/* ---------------------------------------------------------------------------
 * Life cycle */

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        running_worker_free(m->reader);
        podsync_free(m->podsync);
        httpd_free(m->httpd);
        watcher_free(m->watcher);
        sd_event_source_disable_unref(m->resync_source);
        sd_event_source_disable_unref(m->process_source);
        sd_event_source_disable_unref(m->pace_source);
        sd_event_unref(m->event);
        report_free(m->report);
        workload_free(m->workload);
        free(m->desired_version);
        drop_desired(m);
        for (size_t i = 0; m->parsed && i < m->options->n_files; i++)
                for (int s = 0; s < _SIDE_MAX; s++)
                        eval_cache_done(&m->parsed[i][s]);
        free(m->parsed);
        free(m->keys);
        free(m->paths);
        explicit_bzero(&m->content_key, sizeof m->content_key);
        free(m);
        return NULL;
}

static int start_podsync(Manager *m) {
        const Options *o = m->options;
        _cleanup_free_ char *ns = NULL, *ca = NULL, *token = NULL;
        KubeClient *client = NULL;
        int r;

        if (!o->kube_enabled) {
                if (o->kube_disabled_reason)
                        log_info("Not keeping a pod condition: %s.", o->kube_disabled_reason);
                return 0;
        }
        if (o->pod_namespace) {
                ns = strdup(o->pod_namespace);
                if (!ns)
                        return log_oom();
        } else {
                /* when no option or POD_NAMESPACE named one */
                r = incluster_read_namespace(o->serviceaccount_dir, &ns);
                if (r < 0)
                        return r;
        }
        if (incluster_credential_paths(o->serviceaccount_dir, &ca, &token) < 0)
                return log_oom();
        /* The daemon trusts the pod's CA alone, so that no other CA can vouch
         * for a server and be sent the token: without it, no condition. */
        if (access(ca, R_OK) < 0)
                return log_error_errno(negative_errno(),
                                       "Cannot read the API server's CA bundle \"%s\" (%m): mount "
                                       "a projected service account token volume there (see the "
                                       "manifests), or run with --kube off.",
                                       ca);

        r = kube_client_new(m->event,
                            &(KubeConfig){.api_url = o->kube_api,
                                          .ca_file = ca,
                                          .token_file = token,
                                          .user_agent = PACKAGE_NAME "/" PACKAGE_VERSION},
                            &client);
        if (r < 0)
                return log_error_errno(r,
                                       "Cannot use the service account token \"%s\" (%s): mount "
                                       "a projected service account token volume there, or run "
                                       "with --kube off.",
                                       token,
                                       r == -EBADMSG ? "empty or not a token" : strerror(-r));
        r = podsync_new(m->event, client,
                        &(PodSyncConfig){.pod_name = o->pod_name,
                                         .pod_namespace = ns,
                                         .pod_uid = o->pod_uid,
                                         .condition_type = o->condition_type,
                                         .counts_only = o->condition_counts_only,
                                         .component = PACKAGE_NAME,
                                         .on_pod = on_pod,
                                         .userdata = m},
                        &m->podsync);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the pod condition: %m");
        log_info("Keeping condition %s on pod %s/%s through %s.", o->condition_type, ns,
                 o->pod_name, o->kube_api);
        return 0;
}

int manager_new(const Options *o, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_free_ char *error = NULL;
        WatchMode mode = watch_mode_from_string(o->watch);
        HttpdSource source;
        HttpdListen listen;
        sigset_t mask;
        int r;

        m = calloc(1, sizeof(Manager));
        if (!m)
                return log_oom();
        m->options = o;
        /* Flags 0: blocks only until the kernel's pool is first initialised,
         * early at boot, long before a pod starts. */
        if (getrandom(m->content_key.bytes, sizeof m->content_key.bytes, 0) !=
            (ssize_t) sizeof m->content_key.bytes)
                return log_error_errno(negative_errno(), "Cannot draw a random key: getrandom: %m");
        m->keys = calloc(o->n_files, sizeof(char *));
        m->paths = calloc(o->n_files, sizeof(char *));
        m->parsed = calloc(o->n_files, sizeof *m->parsed);
        if (!m->keys || !m->paths || !m->parsed)
                return log_oom();
        for (size_t i = 0; i < o->n_files; i++) {
                m->keys[i] = o->files[i].key;
                m->paths[i] = o->files[i].path;
        }

        r = sd_event_new(&m->event);
        if (r < 0)
                return log_error_errno(r, "Cannot create the event loop: %m");

        /* sd-event delivers these through a signalfd: they must be blocked. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(negative_errno(), "Cannot block signals: %m");
        r = sd_event_add_signal(m->event, NULL, SIGTERM, on_stop, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, on_stop, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGHUP, on_reload, m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch signals: %m");

        /* Pings WATCHDOG=1 at half of WATCHDOG_USEC when systemd asks for it:
         * a loop stuck in one callback stops pinging and gets restarted. */
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the watchdog: %m");

        r = httpd_parse_listen(o->listen, &listen, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ? error : "--listen is invalid");
        source = (HttpdSource){
                .get_report = get_report, .get_counters = get_counters, .userdata = m};
        r = httpd_start(m->event, &listen, NULL, &source, &m->httpd, &error);
        if (r < 0)
                return log_error_errno(r, "Cannot serve HTTP: %s", error ? error : "failed");
        log_info("Serving /metrics, /healthz, /readyz and /status on %s.",
                 httpd_get_address(m->httpd));

        r = watcher_new(m->event, o->desired_dir, mode, o->poll_usec, on_watch, m, &m->watcher);
        if (r < 0)
                return log_error_errno(
                        r,
                        "Cannot watch the ConfigMap directory \"%s\": %m. Mount the "
                        "enroot ConfigMap there as a whole directory (no subPath)%s.",
                        o->desired_dir,
                        mode == WATCH_INOTIFY ? ", or use --watch auto or poll" : "");
        log_info("Watching \"%s\" with %s%s%s.", o->desired_dir,
                 watch_mode_to_string(watcher_active_mode(m->watcher)),
                 watcher_fallback_reason(m->watcher) ? ": " : "",
                 strempty(watcher_fallback_reason(m->watcher)));

        r = running_worker_new(m->event,
                               &(RunningConfig){.running_root = o->running_root,
                                                .target_process = o->target_process,
                                                .target_uid = o->target_uid,
                                                .paths = m->paths,
                                                .n_paths = o->n_files,
                                                .max_bytes = DOCUMENT_MAX_BYTES},
                               RUNNING_WORKER_DEADLINE_USEC, on_running, m, &m->reader);
        if (r < 0)
                return log_error_errno(r, "Cannot start the thread that reads the running files: "
                                          "%m");
        follow_flips(m);

        r = sd_event_add_time_relative(m->event, &m->resync_source, CLOCK_MONOTONIC, o->resync_usec,
                                       1000 * 1000, on_resync, m);
        if (r < 0)
                return log_error_errno(r, "Cannot arm the resync timer: %m");

        r = start_podsync(m);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(m);
        return 0;
}

int manager_run(Manager *m) {
        int r;

        /* READY=1 follows the first evaluation (evaluate_view()). */
        r = manager_evaluate(m, TRIGGER_STARTUP);
        if (r < 0)
                return r;

        r = sd_event_loop(m->event);
        if (r < 0)
                return log_error_errno(r, "The event loop failed: %m");
        return 0;
}
