/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The running view (running.h), read afresh at every call.
 *
 * Paths are resolved with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
 * from a directory fd of the root, so an absolute symlink in the container
 * resolves in the container, and ".." never climbs out. Where openat2 is
 * unavailable (Linux < 5.6, or a seccomp filter that refuses it), the same
 * resolution is done one component at a time with O_NOFOLLOW and the view
 * says so in its note.
 *
 * Target mode chooses the process by name (process.h), so any process of the
 * shared PID namespace could call itself NAME (prctl(PR_SET_NAME)), and a
 * user of a login pod can start one under "unshare -Urm" with an enroot.conf
 * of their own. Hence only a process in the agent's own user namespace whose
 * uids are all cfg->target_uid is taken; among those, keeping last_pid,
 * preferring one without an ancestor of the same name, then one whose parent
 * is the PID namespace's init or outside it, then the lowest PID favour the
 * long-lived daemon.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "fileio.h"
#include "kubeproto.h"
#include "log.h"
#include "mountinfo-cache.h"
#include "mountinfo.h"
#include "process.h"
#include "root-open.h"
#include "running.h"
#include "strbuf.h"

static void *mfree(void *p) {
        free(p);
        return NULL;
}

/* pidfd_open(2) through syscall(): a build on an older libc should still
 * run on whatever kernel it meets. */
static int sys_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
        long r = syscall(SYS_pidfd_open, pid, 0);
        return r < 0 ? negative_errno() : (int) r;
#else
        return -ENOSYS;
#endif
}

/* ------------------------------------------------------------------------ */
/* The view */

static void running_file_reset(RunningFile *f) {
        char *path = f->path;

        free(f->content);
        free(f->mount_root);
        free(f->mount_version);
        *f = (RunningFile){.path = path};
}

RunningView *running_view_free(RunningView *v) {
        if (!v)
                return NULL;
        for (size_t i = 0; i < v->n_files; i++) {
                running_file_reset(&v->files[i]);
                free(v->files[i].path);
        }
        free(v->files);
        free(v->detail);
        free(v->note);
        free(v->warning);
        if (v->pidfd >= 0)
                (void) close(v->pidfd);
        free(v);
        return NULL;
}

static void view_reset(RunningView *v) {
        for (size_t i = 0; i < v->n_files; i++)
                running_file_reset(&v->files[i]);
        v->mountinfo_error = 0;
        v->mountinfo_malformed = 0;
        v->resolve = ROOT_RESOLVE_OPENAT2;
        v->note = mfree(v->note);
}

_printf_(3, 4) static int view_unobservable(RunningView *v, int error, const char *fmt, ...) {
        va_list ap;
        int r;

        view_reset(v);
        v->observable = false;
        v->error = error;
        for (size_t i = 0; i < v->n_files; i++)
                v->files[i].error = error;
        free(v->detail);
        v->detail = NULL;
        va_start(ap, fmt);
        r = vasprintf(&v->detail, fmt, ap);
        va_end(ap);
        if (r < 0) {
                v->detail = NULL;
                return -ENOMEM;
        }
        return 0;
}

/* Appends a sentence to *text (v->note, v->warning), "; " between two. */
_printf_(3, 0) static int text_append(char **text, const char *sep, const char *fmt, va_list ap) {
        _cleanup_free_ char *s = NULL;
        char *joined;

        if (vasprintf(&s, fmt, ap) < 0)
                return -ENOMEM;
        if (!*text) {
                *text = TAKE_PTR(s);
                return 0;
        }
        if (asprintf(&joined, "%s%s%s", *text, sep, s) < 0)
                return -ENOMEM;
        free(*text);
        *text = joined;
        return 0;
}

_printf_(2, 3) static int view_note(RunningView *v, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = text_append(&v->note, "; ", fmt, ap);
        va_end(ap);
        return r;
}

_printf_(2, 3) static int view_warn(RunningView *v, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = text_append(&v->warning, " ", fmt, ap);
        va_end(ap);
        return r;
}

/* "/a//b/" -> "/a/b": mountinfo shows mount points without doubled or
 * trailing slashes. */
static char *path_join_normalized(const char *prefix, const char *path) {
        size_t lp = prefix ? strlen(prefix) : 0, lq = strlen(path);
        char *s = malloc(lp + 1 + lq + 1), *w = s;

        if (!s)
                return NULL;
        if (lp > 0) {
                memcpy(w, prefix, lp);
                w += lp;
                *w++ = '/';
        }
        memcpy(w, path, lq + 1);

        w = s;
        for (const char *p = s; *p; p++)
                if (!(*p == '/' && w > s && w[-1] == '/'))
                        *w++ = *p;
        while (w > s + 1 && w[-1] == '/')
                w--;
        *w = '\0';
        return s;
}

static int file_mount_facts(RunningFile *f, const MountInfo *mi, const char *mount_point,
                            bool have_root_attr, bool is_mount_root) {
        const MountInfoEntry *e = NULL;
        int r;

        if (f->mount_id != 0 && have_root_attr) {
                /* statx() says which mount the inode we read came from, and
                 * whether it is that mount's root: no path to compare, so
                 * symlinks and prefixes cannot mislead. Mount IDs are shared by
                 * every mount namespace. */
                if (!is_mount_root) {
                        f->mount_known = true;
                        return 0;
                }
                e = mountinfo_find_id(mi, f->mount_id);
        }
        if (!e) {
                /* Linux < 5.8 (no STATX_MNT_ID), or the file could not be opened:
                 * the entry mounted on the path, as mountinfo spells it. */
                r = mountinfo_find_mount_point(mi, mount_point, &e);
                if (r == -ENOMEM)
                        return r;
        }

        f->mount_known = true;
        if (!e)
                return 0;

        f->mount_point = true;
        f->mount_id = e->mount_id;
        f->mount_root = strdup(e->root);
        if (!f->mount_root)
                return -ENOMEM;
        r = mountinfo_root_version(e->root, &f->mount_version, &f->mount_deleted);
        if (r == -ENOMEM)
                return r;
        /* The file is this mount's root: unlinked, the kernel shows the root
         * with "//deleted", which no mount event announces (a cached
         * mountinfo would not show it). */
        if (f->have_stat && f->nlink == 0)
                f->mount_deleted = true;
        return r == -EBADMSG ? r : 0;
}

/* A mount root whose version directory kubelet cannot have made: the
 * version stays unknown, and the note quotes the root with its control
 * bytes replaced (it comes decoded from the mount table). */
static int note_bad_version(RunningView *v, const RunningFile *f) {
        char quoted[KUBE_MAX_QUOTE_BYTES];

        kube_quote(f->mount_root, strlen(f->mount_root), quoted, sizeof quoted);
        return view_note(v,
                         "%s is mounted from \"%s\", whose directory is not a kubelet version "
                         "(..YYYY_MM_DD_hh_mm_ss.N): its ConfigMap version is unknown",
                         f->path, quoted);
}

/* Reads every file under root_fd. mount_prefix: what mountinfo puts before
 * a path (the running root in the default mode, NULL in target mode). */
static void report_file(const RunningConfig *cfg, size_t index) {
        if (cfg->on_file)
                cfg->on_file(index, cfg->userdata);
}

static int view_read_files(const RunningConfig *cfg, RunningView *v, int root_fd,
                           const MountInfo *mi, const char *mount_prefix) {
        int r;

        for (size_t i = 0; i < v->n_files; i++) {
                RunningFile *f = &v->files[i];
                RootResolve resolve = ROOT_RESOLVE_OPENAT2;
                bool have_root_attr = false, is_mount_root = false;
                _cleanup_close_ int fd = -EBADF;
                struct statx sx;
                bool have_stat;

                report_file(cfg, i);
                fd = root_open_regular(root_fd, f->path, &resolve, &sx, &have_stat);
                if (resolve == ROOT_RESOLVE_WALK)
                        v->resolve = ROOT_RESOLVE_WALK;
                if (have_stat) {
                        f->have_stat = true;
                        f->dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
                        f->ino = sx.stx_ino;
                        f->nlink = sx.stx_nlink;
                        f->mode = sx.stx_mode;
                        if (sx.stx_mask & STATX_MNT_ID)
                                f->mount_id = sx.stx_mnt_id;
                        have_root_attr = sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT;
                        is_mount_root = sx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
                }
                if (fd < 0)
                        f->error = fd;
                else {
                        /* statx() above was of this very inode */
                        if (sx.stx_mask & STATX_SIZE)
                                f->error = read_regular_bounded(fd, v->max_bytes, sx.stx_size,
                                                                &f->content, &f->size);
                        else
                                f->error = read_fd_bounded(fd, v->max_bytes, &f->content, &f->size);
                        if (f->error == -ENOMEM)
                                return -ENOMEM;
                }

                if (mi) {
                        _cleanup_free_ char *mount_point =
                                path_join_normalized(mount_prefix, f->path);
                        if (!mount_point)
                                return -ENOMEM;
                        r = file_mount_facts(f, mi, mount_point, have_root_attr, is_mount_root);
                        if (r == -EBADMSG)
                                r = note_bad_version(v, f);
                        if (r < 0)
                                return r;
                }
        }
        report_file(cfg, SIZE_MAX);
        return 0;
}

static int note_mountinfo_error(RunningView *v, const char *display, int error) {
        v->mountinfo_error = error;
        return view_note(v,
                         "cannot read %s: %s: whether a file is mounted from a superseded "
                         "version is unknown",
                         display, strerror(-error));
}

/* Reads and parses dir_fd's "mountinfo" (dir_fd: a /proc/PID directory; own:
 * it is PROC/self), or takes it from cache. *ret is owned by the cache, or by
 * *ret_owned without one. A failure is a note, not an error. */
static int view_read_mountinfo(RunningView *v, MountInfoCache *cache, int dir_fd, bool own,
                               const char *display, MountInfo **ret_owned, const MountInfo **ret) {
        _cleanup_free_ char *data = NULL;
        size_t len;
        int r;

        if (cache)
                r = mountinfo_cache_read(cache, dir_fd, own, ret);
        else {
                r = read_file_at(dir_fd, "mountinfo", 0, MOUNTINFO_MAX_BYTES, &data, &len);
                if (r >= 0)
                        r = mountinfo_parse(data, len, ret_owned);
                if (r >= 0)
                        *ret = *ret_owned;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return note_mountinfo_error(v, display, r);
        v->mountinfo_malformed = (*ret)->n_malformed;
        return 0;
}

static const char walk_note[] = "openat2() is not available (Linux < 5.6 or a seccomp filter): "
                                "paths were resolved one component at a time";

static size_t strip_slashes_len(const char *s) {
        size_t l = strlen(s);
        while (l > 1 && s[l - 1] == '/')
                l--;
        return l;
}

static int read_default(const RunningConfig *cfg, const char *proc_dir, RunningView *v) {
        const char *root = cfg->running_root ? cfg->running_root : RUNNING_DEFAULT_ROOT;
        _cleanup_(mountinfo_freep) MountInfo *mi_owned = NULL;
        const MountInfo *mi = NULL;
        _cleanup_free_ char *self_path = NULL, *mi_path = NULL;
        _cleanup_close_ int root_fd = -EBADF, self_fd = -EBADF;
        int r;

        root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0) {
                r = negative_errno();
                return view_unobservable(v, r, "cannot open the running root \"%s\": %s", root,
                                         strerror(-r));
        }

        mi = mountinfo_cache_own_current(cfg->mountinfo);
        if (mi) {
                /* nothing mounted or unmounted since the last read: not even
                 * PROC/self needs opening */
                v->mountinfo_malformed = mi->n_malformed;
        } else {
                r = asprintf(&self_path, "%.*s/self", (int) strip_slashes_len(proc_dir), proc_dir);
                if (r < 0)
                        return -ENOMEM;
                r = asprintf(&mi_path, "%s/mountinfo", self_path);
                if (r < 0)
                        return -ENOMEM;
                self_fd = open(self_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (self_fd < 0)
                        r = note_mountinfo_error(v, mi_path, negative_errno());
                else
                        r = view_read_mountinfo(v, cfg->mountinfo, self_fd, true, mi_path,
                                                &mi_owned, &mi);
                if (r < 0)
                        return r;
        }

        v->observable = true;
        r = view_read_files(cfg, v, root_fd, mi, streq(root, "/") ? NULL : root);
        if (r < 0)
                return r;
        if (v->resolve == ROOT_RESOLVE_WALK)
                return view_note(v, "%s", walk_note);
        return 0;
}

static bool error_is_gone(int r) {
        return r == -ENOENT || r == -ESRCH;
}

/* One attempt at reading through process pid. Returns 1 when done (read, or
 * a definite answer set in v), 0 when the process vanished and the caller
 * should look again, -ENOMEM. */
static int read_target_once(const RunningConfig *cfg, const char *proc_dir,
                            const ProcessSelector *sel, pid_t pid, RunningView *v) {
        MountInfoCache *cache = cfg->mountinfo;
        const char *name = sel->name;
        bool proc_is_ours = sel->self == getpid();
        _cleanup_(mountinfo_freep) MountInfo *mi_owned = NULL;
        const MountInfo *mi = NULL;
        _cleanup_close_ int pid_fd = -EBADF, pidfd = -EBADF, root_fd = -EBADF;
        int proc_len = (int) strip_slashes_len(proc_dir);
        char path[32];
        int r;

        view_reset(v);

        /* Everything below goes through this directory fd: if the PID is
         * reused meanwhile, the fd still names the process we opened. */
        (void) snprintf(path, sizeof path, "%d", (int) pid);
        pid_fd = openat(sel->proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pid_fd < 0) {
                r = negative_errno();
                if (error_is_gone(r))
                        return 0;
                return view_unobservable(v, r, "cannot open %.*s/%d: %s", proc_len, proc_dir,
                                         (int) pid, strerror(-r))
                               ?: 1;
        }

        if (proc_is_ours) {
                pidfd = sys_pidfd_open(pid);
                if (error_is_gone(pidfd))
                        return 0;
                if (pidfd < 0 && view_note(v,
                                           "pidfd_open() failed: %s: the agent notices a "
                                           "restart of \"%s\" only at the next resync",
                                           strerror(-pidfd), name) < 0)
                        return -ENOMEM;
        }
        /* Checked after pidfd_open(): while this process lives, nobody else
         * can hold its PID, so the pidfd is this process's. */
        r = process_matches_at(sel, pid_fd, "");
        if (r <= 0)
                return 0;
        if (!proc_is_ours &&
            view_note(v,
                      "%.*s is not this PID namespace's procfs: the agent notices a restart "
                      "of \"%s\" only at the next resync",
                      proc_len, proc_dir, name) < 0)
                return -ENOMEM;

        root_fd = openat(pid_fd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0) {
                r = negative_errno();
                if (error_is_gone(r))
                        return 0;
                v->pid = pid;
                v->pidfd = TAKE_FD(pidfd);
                if (r == -EACCES || r == -EPERM)
                        r = view_unobservable(v, r,
                                              "cannot open %.*s/%d/root: %s: the agent needs "
                                              "the same uid as the process or CAP_SYS_PTRACE",
                                              proc_len, proc_dir, (int) pid, strerror(-r));
                else
                        r = view_unobservable(v, r, "cannot open %.*s/%d/root: %s", proc_len,
                                              proc_dir, (int) pid, strerror(-r));
                return r < 0 ? r : 1;
        }

        {
                char display[PATH_MAX];
                (void) snprintf(display, sizeof display, "%.*s/%d/mountinfo", proc_len, proc_dir,
                                (int) pid);
                r = view_read_mountinfo(v, cache, pid_fd, false, display, &mi_owned, &mi);
                if (r < 0)
                        return r;
        }

        r = view_read_files(cfg, v, root_fd, mi, NULL);
        if (r < 0)
                return r;

        /* A process that exited while we read leaves a view of nothing that
         * runs: look again. */
        r = process_matches_at(sel, pid_fd, "");
        if (r <= 0)
                return 0;

        if (v->resolve == ROOT_RESOLVE_WALK && view_note(v, "%s", walk_note) < 0)
                return -ENOMEM;
        v->observable = true;
        v->error = 0;
        v->detail = mfree(v->detail);
        v->pid = pid;
        v->pidfd = TAKE_FD(pidfd);
        return 1;
}

struct RunningMemo {
        pid_t rejected[PROCESS_MAX_CANDIDATES]; /* ignored at the last look, sorted */
        size_t n_rejected;
        pid_t several[PROCESS_MAX_CANDIDATES]; /* the last set warned about, sorted */
        size_t n_several;
};

int running_memo_new(RunningMemo **ret) {
        RunningMemo *m = calloc(1, sizeof *m);

        if (!m)
                return -ENOMEM;
        *ret = m;
        return 0;
}

RunningMemo *running_memo_free(RunningMemo *m) {
        free(m);
        return NULL;
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return (x > y) - (x < y);
}

/* Whether pid is in pids (n of them, sorted). */
static bool pid_in(const pid_t *pids, size_t n, pid_t pid) {
        return bsearch(&pid, pids, n, sizeof *pids, cmp_pid) != NULL;
}

/* The sentences one look at the processes calls for (view_warn()), each
 * said once while it lasts when the caller keeps a memo. */
static int warn_selection(RunningView *v, const ProcessSelector *s, const ProcessSelection *sel,
                          RunningMemo *memo) {
        size_t n_new = 0;
        int r = 0;

        for (size_t i = 0; i < sel->n_rejected && r >= 0; i++) {
                const ProcessRejected *x = &sel->rejected[i];

                if (memo && pid_in(memo->rejected, memo->n_rejected, x->pid))
                        continue;
                r = view_warn(v, "%s PID %d: %s.",
                              n_new++ == 0 ? "Ignoring a process of the target's name:" : "And",
                              (int) x->pid, x->reason);
        }
        if (r >= 0 && sel->n_rejected_dropped > 0 && (!memo || n_new > 0))
                r = view_warn(v, "And %zu more.", sel->n_rejected_dropped);
        if (r >= 0 && n_new > 0)
                r = view_warn(v,
                              "Only a process in the agent's user namespace with uid %lu is "
                              "read as \"%s\".",
                              (unsigned long) s->uid, s->name);

        if (r >= 0 && sel->n_several > 1 &&
            (!memo || memo->n_several != sel->n_several ||
             memcmp(memo->several, sel->several, sel->n_several * sizeof(pid_t)) != 0)) {
                StrBuf b = STRBUF_INIT(PROCESS_MAX_CANDIDATES * 16);

                for (size_t i = 0; i < sel->n_several && r >= 0; i++)
                        r = strbuf_printf(&b, "%s%d", i ? ", " : "", (int) sel->several[i]);
                if (r >= 0 && sel->n_several_dropped > 0)
                        r = strbuf_printf(&b, " and %zu more", sel->n_several_dropped);
                if (r >= 0)
                        r = view_warn(v,
                                      "Several processes named \"%s\" could be the workload's "
                                      "(PIDs %s): reading PID %d (a child of the PID "
                                      "namespace's init first, then the lowest PID).",
                                      s->name, strbuf_str(&b), (int) sel->best.pid);
                strbuf_done(&b);
        }
        if (r < 0)
                return -ENOMEM;

        if (memo) {
                memo->n_rejected = sel->n_rejected;
                for (size_t i = 0; i < sel->n_rejected; i++)
                        memo->rejected[i] = sel->rejected[i].pid;
                memo->n_several = sel->n_several;
                memcpy(memo->several, sel->several, sel->n_several * sizeof(pid_t));
        }
        return 0;
}

static int read_target(const RunningConfig *cfg, const char *proc_dir, pid_t last_pid,
                       RunningView *v) {
        const char *name = cfg->target_process;
        _cleanup_free_ ProcessSelection *sel = NULL;
        _cleanup_close_ int proc_fd = -EBADF;
        ProcessSelector s;
        int r;

        proc_fd = open(proc_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0) {
                r = negative_errno();
                return view_unobservable(v, r, "cannot open %s: %s", proc_dir, strerror(-r));
        }
        /* A pidfd is only this process when proc_dir is our own PID
         * namespace's procfs, which "self" tells. */
        r = process_selector_init(&s, proc_fd, name, cfg->target_uid);
        if (r < 0)
                return view_unobservable(v, r,
                                         "cannot tell the agent's own user namespace from "
                                         "/proc/self/ns/user: %s",
                                         strerror(-r));
        sel = malloc(sizeof *sel);
        if (!sel)
                return -ENOMEM;

        for (unsigned attempt = 0; attempt < RUNNING_MAX_ATTEMPTS; attempt++) {
                pid_t pid = 0;
                char prefix[32];

                if (last_pid > 0) {
                        (void) snprintf(prefix, sizeof prefix, "%d/", (int) last_pid);
                        if (process_matches_at(&s, proc_fd, prefix) > 0)
                                pid = last_pid;
                        last_pid = 0; /* a second attempt always looks again */
                }
                if (pid == 0) {
                        r = process_find_at(&s, sel);
                        if (r == -ESRCH || r >= 0) {
                                if (warn_selection(v, &s, sel, cfg->memo) < 0)
                                        return -ENOMEM;
                        }
                        if (r == -ESRCH && sel->n_rejected + sel->n_rejected_dropped > 0)
                                return view_unobservable(
                                        v, r,
                                        "no process named \"%s\" runs as uid %lu in the agent's "
                                        "user namespace (%zu of that name ignored: the log "
                                        "says why)",
                                        name, (unsigned long) s.uid,
                                        sel->n_rejected + sel->n_rejected_dropped);
                        if (r == -ESRCH)
                                return view_unobservable(
                                        v, r,
                                        "no process named \"%s\" in this PID namespace: is "
                                        "shareProcessNamespace: true set on the pod?",
                                        name);
                        if (r < 0)
                                return view_unobservable(v, r,
                                                         "cannot list the processes in %s: %s",
                                                         proc_dir, strerror(-r));
                        pid = sel->best.pid;
                }

                r = read_target_once(cfg, proc_dir, &s, pid, v);
                if (r != 0)
                        return r < 0 ? r : 0;
                log_debug("Process \"%s\" (PID %d) exited while being read, looking again.", name,
                          (int) pid);
        }

        return view_unobservable(v, -ESRCH,
                                 "process \"%s\" exited while being read, %u times in a row", name,
                                 RUNNING_MAX_ATTEMPTS);
}

int running_read(const RunningConfig *cfg, pid_t last_pid, RunningView **ret) {
        _cleanup_(running_view_freep) RunningView *v = NULL;
        const char *proc_dir = cfg->proc_dir ? cfg->proc_dir : RUNNING_DEFAULT_PROC_DIR;
        int r;

        if (cfg->n_paths > RUNNING_MAX_PATHS || (cfg->n_paths > 0 && !cfg->paths))
                return -EINVAL;
        if (cfg->target_process && cfg->target_process[0] == '\0')
                return -EINVAL;
        for (size_t i = 0; i < cfg->n_paths; i++)
                if (!cfg->paths[i] || cfg->paths[i][0] != '/' ||
                    strlen(cfg->paths[i]) >= RUNNING_MAX_PATH_LENGTH)
                        return -EINVAL;

        v = calloc(1, sizeof *v);
        if (!v)
                return -ENOMEM;
        v->pidfd = -EBADF;
        v->max_bytes = cfg->max_bytes;
        v->files = calloc(cfg->n_paths ? cfg->n_paths : 1, sizeof *v->files);
        if (!v->files)
                return -ENOMEM;
        for (size_t i = 0; i < cfg->n_paths; i++) {
                v->files[i].path = strdup(cfg->paths[i]);
                if (!v->files[i].path)
                        return -ENOMEM;
                v->n_files++;
        }

        if (cfg->target_process)
                r = read_target(cfg, proc_dir, last_pid, v);
        else
                r = read_default(cfg, proc_dir, v);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(v);
        return 0;
}
