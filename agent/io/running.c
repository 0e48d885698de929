/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#else
struct open_how {
        uint64_t flags;
        uint64_t mode;
        uint64_t resolve;
};
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_IN_ROOT       0x10
#endif

#include "fileio.h"
#include "kubeproto.h"
#include "log.h"
#include "mountinfo.h"
#include "running.h"
#include "strbuf.h"

static void *mfree(void *p) {
        free(p);
        return NULL;
}

static void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

/* openat2(2) and pidfd_open(2) through syscall(): glibc 2.36 has no openat2
 * wrapper, and a build on an older libc should still run (and fall back) on
 * whatever kernel it meets. */
static int sys_openat2(int dir_fd, const char *path, const struct open_how *how) {
#ifdef SYS_openat2
        long r = syscall(SYS_openat2, dir_fd, path, how, sizeof *how);
        return r < 0 ? negative_errno() : (int) r;
#else
        return -ENOSYS;
#endif
}

static int sys_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
        long r = syscall(SYS_pidfd_open, pid, 0);
        return r < 0 ? negative_errno() : (int) r;
#else
        return -ENOSYS;
#endif
}

/* ------------------------------------------------------------------------ */
/* Opening inside a root */

typedef struct FdStack {
        int fds[RUNNING_MAX_DEPTH];
        size_t depth;
} FdStack;

static void fd_stack_pop(FdStack *s) {
        if (s->depth > 0)
                (void) close(s->fds[--s->depth]);
}

static void fd_stack_clear(FdStack *s) {
        while (s->depth > 0)
                fd_stack_pop(s);
}

static int fd_stack_top(const FdStack *s, int root_fd) {
        return s->depth > 0 ? s->fds[s->depth - 1] : root_fd;
}

int running_open_in_root_walk(int root_fd, const char *path, int flags) {
        _cleanup_(fd_stack_clear) FdStack stack = {.depth = 0};
        _cleanup_free_ char *todo = NULL;
        unsigned links = 0;
        size_t pos = 0;

        if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
                return -EINVAL;
        if (path[0] == '\0')
                return -ENOENT; /* as open("") */
        if (strlen(path) >= RUNNING_MAX_PATH_LENGTH)
                return -ENAMETOOLONG;
        todo = strdup(path);
        if (!todo)
                return -ENOMEM;

        for (;;) {
                _cleanup_close_ int fd = -EBADF;
                const char *p = todo + pos, *end, *rest;
                char name[NAME_MAX + 1];
                bool last, trailing_slash;
                struct stat st;
                size_t len;

                while (*p == '/')
                        p++;
                if (*p == '\0') {
                        /* Resolved to a directory: the root itself, or after "..". */
                        fd = openat(fd_stack_top(&stack, root_fd), ".", flags | O_CLOEXEC);
                        return fd < 0 ? negative_errno() : TAKE_FD(fd);
                }
                end = strchrnul(p, '/');
                len = (size_t) (end - p);
                if (len > NAME_MAX)
                        return -ENAMETOOLONG;
                memcpy(name, p, len);
                name[len] = '\0';
                for (rest = end; *rest == '/'; rest++)
                        ;
                last = *rest == '\0';
                trailing_slash = *end == '/';
                pos = (size_t) (rest - todo);

                if (streq(name, "."))
                        continue;
                if (streq(name, "..")) {
                        /* Pop our own stack rather than open "..": at root_fd we
                         * stay, as chroot(2) would, and a directory moved away
                         * meanwhile cannot take us outside. */
                        fd_stack_pop(&stack);
                        continue;
                }

                fd = openat(fd_stack_top(&stack, root_fd), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return negative_errno();
                if (fstat(fd, &st) < 0)
                        return negative_errno();

                if (S_ISLNK(st.st_mode)) {
                        char target[RUNNING_MAX_PATH_LENGTH];
                        _cleanup_free_ char *spliced = NULL;
                        ssize_t n;

                        if (++links > RUNNING_MAX_SYMLINKS)
                                return -ELOOP;
                        /* An O_PATH fd of the link itself: readlinkat(fd, "") reads it
                         * without a second lookup that could race. Magic links read
                         * as text ("/", "pipe:[...]") and are never followed. */
                        n = readlinkat(fd, "", target, sizeof target);
                        if (n < 0)
                                return negative_errno();
                        if ((size_t) n >= sizeof target)
                                return -ENAMETOOLONG;
                        if (n == 0)
                                return -ENOENT; /* as the kernel does for an empty link */
                        target[n] = '\0';

                        if ((size_t) n + 1 + strlen(rest) + 1 >= RUNNING_MAX_PATH_LENGTH)
                                return -ENAMETOOLONG;
                        if (asprintf(&spliced, "%s%s%s", target, *rest || trailing_slash ? "/" : "",
                                     rest) < 0)
                                return -ENOMEM;
                        free(todo);
                        todo = TAKE_PTR(spliced);
                        pos = 0;
                        if (target[0] == '/')
                                fd_stack_clear(&stack);
                        continue;
                }

                if (!last) {
                        if (!S_ISDIR(st.st_mode))
                                return -ENOTDIR;
                        if (stack.depth >= RUNNING_MAX_DEPTH)
                                return -ENAMETOOLONG;
                        stack.fds[stack.depth++] = TAKE_FD(fd);
                        continue;
                }

                if (trailing_slash && !S_ISDIR(st.st_mode))
                        return -ENOTDIR;

                /* The last component: open it for real, and make sure it is
                 * still the inode we looked at (it may have been swapped for a
                 * symlink in between: O_NOFOLLOW then refuses it). */
                {
                        _cleanup_close_ int rfd = -EBADF;
                        struct stat rst;

                        rfd = openat(fd_stack_top(&stack, root_fd), name,
                                     flags | O_CLOEXEC | O_NOFOLLOW);
                        if (rfd < 0)
                                return negative_errno();
                        if (fstat(rfd, &rst) < 0)
                                return negative_errno();
                        if (rst.st_dev != st.st_dev || rst.st_ino != st.st_ino)
                                return -EAGAIN;
                        return TAKE_FD(rfd);
                }
        }
}

/* Whether openat2() works at all here (an old seccomp profile answers EPERM
 * for every syscall it does not know, not ENOSYS). */
static bool openat2_works(int root_fd) {
        struct open_how how = {
                .flags = O_PATH | O_CLOEXEC,
                .resolve = RESOLVE_IN_ROOT,
        };
        int fd = sys_openat2(root_fd, ".", &how);

        if (fd >= 0) {
                (void) close(fd);
                return true;
        }
        return fd != -ENOSYS && fd != -EPERM;
}

int running_open_in_root(int root_fd, const char *path, int flags, RunningResolve *ret_resolve) {
        struct open_how how = {
                .flags = (uint64_t) (flags | O_CLOEXEC),
                .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
        };
        RunningResolve how_done = RUNNING_RESOLVE_OPENAT2;
        int fd = -EAGAIN;

        if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
                return -EINVAL;

        /* openat2(2): with RESOLVE_IN_ROOT, EAGAIN means a rename or mount
         * raced with the lookup and the kernel could not vouch for it: retry. */
        for (unsigned i = 0; i < 3 && fd == -EAGAIN; i++)
                fd = sys_openat2(root_fd, path, &how);

        if (fd == -ENOSYS || (fd == -EPERM && !openat2_works(root_fd))) {
                /* the walk's EAGAIN: the last component changed under it */
                fd = -EAGAIN;
                for (unsigned i = 0; i < 3 && fd == -EAGAIN; i++)
                        fd = running_open_in_root_walk(root_fd, path, flags);
                how_done = RUNNING_RESOLVE_WALK;
        }
        if (fd >= 0 && ret_resolve)
                *ret_resolve = how_done;
        return fd;
}

/* ------------------------------------------------------------------------ */
/* Processes */

/* The PID procfs at proc_fd gives us through "self", or 0 (a fake tree, or a
 * procfs of another PID namespace, where "self" names nobody or someone else). */
static pid_t proc_self_pid(int proc_fd) {
        char buf[32];
        ssize_t n;
        long v;
        char *e;

        n = readlinkat(proc_fd, "self", buf, sizeof buf - 1);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        errno = 0;
        v = strtol(buf, &e, 10);
        if (errno != 0 || *e != '\0' || v <= 0 || v > INT_MAX)
                return 0;
        return (pid_t) v;
}

static bool parse_pid(const char *s, pid_t *ret) {
        long v = 0;

        if (!*s)
                return false;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return false;
                v = v * 10 + (*s - '0');
                if (v > INT_MAX)
                        return false;
        }
        if (v <= 0)
                return false;
        *ret = (pid_t) v;
        return true;
}

/* comm as the kernel keeps it: at most RUNNING_COMM_MAX bytes. */
static bool comm_equal(const char *comm, const char *name) {
        size_t l = strnlen(name, RUNNING_COMM_MAX);
        return strlen(comm) == l && strncmp(comm, name, l) == 0;
}

/* 1 when dir_fd/path (a comm file) names name, 0 when another, -errno. */
static int comm_is_at(int dir_fd, const char *path, const char *name) {
        _cleanup_free_ char *data = NULL;
        size_t len;
        int r;

        r = read_file_at(dir_fd, path, 0, RUNNING_MAX_PROC_FILE_BYTES, &data, &len);
        if (r < 0)
                return r;
        if (len > 0 && data[len - 1] == '\n')
                data[--len] = '\0';
        if (strlen(data) != len)
                return 0;
        return comm_equal(data, name);
}

/* Field 3 (state) and 4 (ppid) of proc(5) stat. comm (field 2) may hold
 * spaces and parentheses: parse from its last ')'. */
static int stat_at(int dir_fd, const char *path, char *ret_state, pid_t *ret_ppid) {
        _cleanup_free_ char *data = NULL;
        const char *p;
        size_t len;
        int ppid;
        char state;
        int r;

        r = read_file_at(dir_fd, path, 0, RUNNING_MAX_PROC_FILE_BYTES, &data, &len);
        if (r < 0)
                return r;
        p = strrchr(data, ')');
        if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2)
                return -EINVAL;
        *ret_state = state;
        *ret_ppid = ppid;
        return 0;
}

static bool state_is_dead(char state) {
        return state == 'Z' || state == 'X' || state == 'x';
}

/* What the target must be, and where to look (target mode). */
typedef struct Selector {
        int proc_fd;
        const char *name;
        pid_t self;        /* the caller, never a candidate (0: not in this procfs) */
        uid_t uid;         /* every uid of the target */
        bool userns_known; /* false: no user namespaces (no ns/user anywhere) */
        dev_t userns_dev;  /* the agent's own user namespace: the nsfs inode */
        ino_t userns_ino;
} Selector;

static int selector_init(Selector *s, int proc_fd, const char *name, uid_t uid) {
        struct stat st;

        *s = (Selector){.proc_fd = proc_fd, .name = name, .uid = uid};
        s->self = proc_self_pid(proc_fd);
        /* Our own user namespace: through proc_dir's "self" where it names
         * us (a test's tree stands in for procfs), else the real one: nsfs
         * inodes are the same whichever procfs shows them. */
        if (fstatat(proc_fd, "self/ns/user", &st, 0) < 0 &&
            stat(RUNNING_DEFAULT_PROC_DIR "/self/ns/user", &st) < 0) {
                if (errno != ENOENT)
                        return negative_errno();
                return 0; /* a kernel without user namespaces (CONFIG_USER_NS=n) */
        }
        s->userns_known = true;
        s->userns_dev = st.st_dev;
        s->userns_ino = st.st_ino;
        return 0;
}

/* The four uids of proc(5) status: real, effective, saved, filesystem.
 * Only the first RUNNING_MAX_PROC_FILE_BYTES are read: "Uid:" comes early,
 * and what follows can be long (a "Groups:" line of thousands of groups). */
static int status_uids_at(int dir_fd, const char *path, unsigned long ret_uids[4]) {
        _cleanup_close_ int fd = -EBADF;
        char data[RUNNING_MAX_PROC_FILE_BYTES + 1];
        const char *p;
        size_t len = 0;

        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return negative_errno();
        while (len < sizeof data - 1) {
                ssize_t n = read(fd, data + len, sizeof data - 1 - len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        data[len] = '\0';
        p = startswith(data, "Uid:") ? data : strstr(data, "\nUid:");
        if (!p || sscanf(p + (*p == '\n') + 4, "%lu %lu %lu %lu", &ret_uids[0], &ret_uids[1],
                         &ret_uids[2], &ret_uids[3]) != 4)
                return -EBADMSG;
        return 0;
}

/* Whether the process at dir_fd (PROC/PID, or proc_fd with "PID/" in
 * prefix) may be the workload's: in the agent's user namespace (a user who
 * starts a process of that name under "unshare -Ur" is root only in a
 * namespace of their own, with files of their own), and running as s->uid
 * with every one of its uids (a set-user-ID program started through a link
 * of that name has another real uid). 1: it may; 0: it may not, and
 * reason (size bytes) says why; -errno: it cannot be told (-ENOENT: gone).
 * ns/user is behind the same ptrace check as PID/root: a process whose
 * namespace the agent may not see is one whose files it cannot read, so it
 * passes here and fails there with the sentence about CAP_SYS_PTRACE. */
static int process_vet_at(const Selector *s, int dir_fd, const char *prefix, char *reason,
                          size_t size) {
        unsigned long uids[4];
        char path[64];
        struct stat st;
        int r;

        (void) snprintf(path, sizeof path, "%sns/user", prefix);
        if (fstatat(dir_fd, path, &st, 0) == 0) {
                if (s->userns_known && (st.st_dev != s->userns_dev || st.st_ino != s->userns_ino)) {
                        (void) snprintf(reason, size,
                                        "it is in another user namespace (inode %llu, the "
                                        "agent's is %llu)",
                                        (unsigned long long) st.st_ino,
                                        (unsigned long long) s->userns_ino);
                        return 0;
                }
        } else {
                r = negative_errno();
                if (r == -ENOENT && s->userns_known)
                        return r;
                if (r != -ENOENT && r != -EACCES && r != -EPERM)
                        return r;
        }

        (void) snprintf(path, sizeof path, "%sstatus", prefix);
        r = status_uids_at(dir_fd, path, uids);
        if (r == -EBADMSG) {
                (void) snprintf(reason, size, "its status shows no uid");
                return 0;
        }
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(uids); i++)
                if (uids[i] != (unsigned long) s->uid) {
                        (void) snprintf(reason, size,
                                        "it runs as uid %lu (real, effective, saved, "
                                        "filesystem: %lu %lu %lu %lu), not %lu",
                                        uids[i], uids[0], uids[1], uids[2], uids[3],
                                        (unsigned long) s->uid);
                        return 0;
                }
        return 1;
}

/* 1 when the process at dir_fd (PROC/PID, or proc_fd with "PID/" in prefix)
 * is alive, named s->name and may be the workload's (process_vet_at()), 0
 * when not, -errno when it cannot be told. */
static int process_is_at(const Selector *s, int dir_fd, const char *prefix) {
        char path[64], reason[RUNNING_MAX_REASON_BYTES];
        pid_t ppid;
        char state;
        int r;

        (void) snprintf(path, sizeof path, "%scomm", prefix);
        r = comm_is_at(dir_fd, path, s->name);
        if (r <= 0)
                return r;
        (void) snprintf(path, sizeof path, "%sstat", prefix);
        r = stat_at(dir_fd, path, &state, &ppid);
        if (r < 0)
                return r;
        if (state_is_dead(state))
                return 0;
        return process_vet_at(s, dir_fd, prefix, reason, sizeof reason);
}

/* Whether an ancestor of the process whose parent is ppid has the name: a
 * helper the daemon forked (slurmd, and sshd for each connection), or a
 * process a user started from a session of it, not the daemon itself. The
 * chain ends at PID 1, the PID namespace's init (in a pod with a shared
 * process namespace, the pause container; each container's first process
 * has a parent outside the namespace: PPid 0). */
static bool has_ancestor_named(const Selector *s, pid_t ppid) {
        for (unsigned i = 0; ppid > 0 && i < RUNNING_MAX_ANCESTORS; i++) {
                char path[64], state;

                (void) snprintf(path, sizeof path, "%d/comm", (int) ppid);
                if (comm_is_at(s->proc_fd, path, s->name) > 0)
                        return true;
                (void) snprintf(path, sizeof path, "%d/stat", (int) ppid);
                if (stat_at(s->proc_fd, path, &state, &ppid) < 0)
                        return false;
        }
        return false;
}

typedef struct Candidate {
        pid_t pid;
        bool descendant; /* an ancestor has the name */
        bool init_child; /* its parent is PID 1, or outside the PID namespace */
} Candidate;

/* Whether a is a better guess at the workload's process than b. */
static bool candidate_better(const Candidate *a, const Candidate *b) {
        if (a->descendant != b->descendant)
                return !a->descendant;
        if (a->init_child != b->init_child)
                return a->init_child;
        return a->pid < b->pid;
}

typedef struct Rejected {
        pid_t pid;
        char reason[RUNNING_MAX_REASON_BYTES];
} Rejected;

/* One look at the processes named s->name. */
typedef struct Selection {
        Candidate best;                            /* pid 0: none */
        pid_t several[RUNNING_MAX_CANDIDATES];     /* accepted, not descendants, sorted */
        size_t n_several, n_several_dropped;       /* beyond the array: counted */
        Rejected rejected[RUNNING_MAX_CANDIDATES]; /* sorted by PID */
        size_t n_rejected, n_rejected_dropped;
} Selection;

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return (x > y) - (x < y);
}

static int find_process_at(const Selector *s, Selection *sel) {
        _cleanup_(closedirp) DIR *d = NULL;
        int fd;

        *sel = (Selection){};
        fd = openat(s->proc_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        d = fdopendir(fd);
        if (!d) {
                int r = negative_errno();
                (void) close(fd);
                return r;
        }

        for (;;) {
                char path[64], reason[RUNNING_MAX_REASON_BYTES];
                struct dirent *de;
                Candidate c = {};
                pid_t ppid;
                char state;
                int r;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                return negative_errno();
                        break;
                }
                if (!parse_pid(de->d_name, &c.pid) || c.pid == s->self)
                        continue;

                /* Processes come and go while we look: any error skips one. */
                (void) snprintf(path, sizeof path, "%d/comm", (int) c.pid);
                if (comm_is_at(s->proc_fd, path, s->name) <= 0)
                        continue;
                (void) snprintf(path, sizeof path, "%d/stat", (int) c.pid);
                if (stat_at(s->proc_fd, path, &state, &ppid) < 0 || state_is_dead(state))
                        continue;
                (void) snprintf(path, sizeof path, "%d/", (int) c.pid);
                r = process_vet_at(s, s->proc_fd, path, reason, sizeof reason);
                if (r < 0)
                        continue;
                if (r == 0) {
                        if (sel->n_rejected < RUNNING_MAX_CANDIDATES) {
                                Rejected *x = &sel->rejected[sel->n_rejected++];
                                x->pid = c.pid;
                                memcpy(x->reason, reason, sizeof reason);
                        } else
                                sel->n_rejected_dropped++;
                        continue;
                }

                /* The daemon is the one no process of its name started
                 * (slurmd forks helpers that may keep its name); then one
                 * the PID namespace's init adopted or a container runtime
                 * started; then the oldest, barring PID wrap-around. */
                c.descendant = has_ancestor_named(s, ppid);
                c.init_child = ppid <= 1;
                if (!c.descendant) {
                        if (sel->n_several < RUNNING_MAX_CANDIDATES)
                                sel->several[sel->n_several++] = c.pid;
                        else
                                sel->n_several_dropped++;
                }
                if (sel->best.pid == 0 || candidate_better(&c, &sel->best))
                        sel->best = c;
        }

        qsort(sel->several, sel->n_several, sizeof *sel->several, cmp_pid);
        qsort(sel->rejected, sel->n_rejected, sizeof *sel->rejected, cmp_pid);
        return sel->best.pid == 0 ? -ESRCH : 0;
}

int running_find_process(const char *proc_dir, const char *name, uid_t uid, pid_t *ret_pid) {
        _cleanup_free_ Selection *sel = NULL;
        _cleanup_close_ int proc_fd = -EBADF;
        Selector s;
        int r;

        proc_fd = open(proc_dir ? proc_dir : RUNNING_DEFAULT_PROC_DIR,
                       O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0)
                return negative_errno();
        r = selector_init(&s, proc_fd, name, uid);
        if (r < 0)
                return r;
        sel = malloc(sizeof *sel);
        if (!sel)
                return -ENOMEM;
        r = find_process_at(&s, sel);
        if (r < 0)
                return r;
        *ret_pid = sel->best.pid;
        return 0;
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
        v->resolve = RUNNING_RESOLVE_OPENAT2;
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

/* Opens path in root_fd for reading, without opening anything but a
 * regular file: opening a device runs its driver, a FIFO may block, and a
 * procfs or sysfs file is kernel state (a link to /proc/self/environ would
 * hand over the agent's environment). The path is resolved with O_PATH,
 * which opens nothing; the inode is checked; only then is it reopened
 * through /proc/self/fd, which reopens that very inode. *sx is filled from
 * the O_PATH fd whenever it could be opened (*ret_have_stat), even when the
 * file is refused. Returns the fd, or -EISDIR, -EBADFD (not a regular file),
 * -EMEDIUMTYPE (on procfs or sysfs), or the -errno of resolving it. */
static int open_regular_in_root(int root_fd, const char *path, RunningResolve *ret_resolve,
                                struct statx *sx, bool *ret_have_stat) {
        _cleanup_close_ int path_fd = -EBADF;
        struct statfs sfs;
        char self_fd[64];
        int fd;

        *ret_have_stat = false;
        path_fd = running_open_in_root(root_fd, path, O_PATH, ret_resolve);
        if (path_fd < 0)
                return path_fd;

        if (statx(path_fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT,
                  STATX_BASIC_STATS | STATX_MNT_ID, sx) < 0) {
                struct stat st;

                if (fstat(path_fd, &st) < 0)
                        return negative_errno();
                /* statx() unavailable (Linux < 4.11, or a seccomp filter): no
                 * mount ID and no mount-root attribute */
                *sx = (struct statx){
                        .stx_mask = STATX_BASIC_STATS,
                        .stx_dev_major = major(st.st_dev),
                        .stx_dev_minor = minor(st.st_dev),
                        .stx_ino = st.st_ino,
                        .stx_nlink = (uint32_t) st.st_nlink,
                        .stx_mode = (uint16_t) st.st_mode,
                };
        }
        *ret_have_stat = true;

        if (S_ISDIR(sx->stx_mode))
                return -EISDIR;
        if (!S_ISREG(sx->stx_mode))
                return -EBADFD;
        if (fstatfs(path_fd, &sfs) < 0)
                return negative_errno();
        if (sfs.f_type == PROC_SUPER_MAGIC || sfs.f_type == SYSFS_MAGIC)
                return -EMEDIUMTYPE;

        (void) snprintf(self_fd, sizeof self_fd, "/proc/self/fd/%d", path_fd);
        fd = open(self_fd, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        return fd < 0 ? negative_errno() : fd;
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
                RunningResolve resolve = RUNNING_RESOLVE_OPENAT2;
                bool have_root_attr = false, is_mount_root = false;
                _cleanup_close_ int fd = -EBADF;
                struct statx sx;
                bool have_stat;

                report_file(cfg, i);
                fd = open_regular_in_root(root_fd, f->path, &resolve, &sx, &have_stat);
                if (resolve == RUNNING_RESOLVE_WALK)
                        v->resolve = RUNNING_RESOLVE_WALK;
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

struct MountInfoCache {
        int fd;          /* the open mountinfo file, -EBADF: none */
        uint64_t ns_ino; /* the mount namespace it describes (its ns/mnt inode) */
        bool own;        /* read through PROC/self: this process's own namespace */
        MountInfo *mi;
        unsigned reads;
};

int mountinfo_cache_new(MountInfoCache **ret) {
        MountInfoCache *c = calloc(1, sizeof *c);

        if (!c)
                return -ENOMEM;
        c->fd = -EBADF;
        *ret = c;
        return 0;
}

MountInfoCache *mountinfo_cache_free(MountInfoCache *c) {
        if (!c)
                return NULL;
        closep(&c->fd);
        mountinfo_free(c->mi);
        free(c);
        return NULL;
}

unsigned mountinfo_cache_reads(const MountInfoCache *c) {
        return c ? c->reads : 0;
}

/* The inode of the mount namespace whose mountinfo sits beside "ns/mnt" in
 * dir_fd (a /proc/PID directory), 0 when it cannot be known. The same PID
 * may come back as another process in another namespace: the namespace,
 * not the PID, says whose table the cache holds. */
static uint64_t mount_ns_ino(int dir_fd, const char *ns_path) {
        struct stat st;

        return fstatat(dir_fd, ns_path, &st, 0) == 0 ? (uint64_t) st.st_ino : 0;
}

/* Forgets the table and closes the file it was read from. */
static void cache_drop(MountInfoCache *c) {
        closep(&c->fd);
        c->fd = -EBADF;
        c->mi = mountinfo_free(c->mi);
        c->own = false;
}

/* Whether the cached table is still the namespace's: the same namespace,
 * and no POLLPRI (nor POLLERR, which procfs reports with it) since it was
 * read. procfs reports an event to one poll only, so a table found stale is
 * dropped at once: the next look cannot take it for current. */
static bool cache_is_current(MountInfoCache *c, uint64_t ns_ino) {
        struct pollfd p = {.fd = c->fd, .events = POLLPRI};

        if (c->fd < 0 || !c->mi || ns_ino == 0 || c->ns_ino != ns_ino)
                return false;
        if (poll(&p, 1, 0) == 0)
                return true;
        cache_drop(c);
        return false;
}

/* The same for this process's own namespace, without looking at ns/mnt:
 * the agent never changes its own mount namespace (see running.h). */
static bool cache_own_is_current(MountInfoCache *c) {
        return c && c->own && cache_is_current(c, c->ns_ino);
}

/* Reads path (relative to dir_fd) into c, keeping the file open for
 * cache_is_current() when it is on procfs. */
static int cache_read(MountInfoCache *c, int dir_fd, const char *path, uint64_t ns_ino, bool own) {
        _cleanup_(mountinfo_freep) MountInfo *mi = NULL;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *data = NULL;
        struct statfs sfs;
        size_t len;
        int r;

        cache_drop(c);
        c->reads++;

        /* Opened before it is read: a change in between is reported by the
         * next poll and only costs one more read. */
        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        r = read_fd_bounded(fd, MOUNTINFO_MAX_BYTES, &data, &len);
        if (r >= 0)
                r = mountinfo_parse(data, len, &mi);
        if (r < 0)
                return r;
        c->mi = TAKE_PTR(mi);
        c->ns_ino = ns_ino;
        c->own = own;
        if (ns_ino != 0 && fstatfs(fd, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC)
                c->fd = TAKE_FD(fd);
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

        if (cache) {
                uint64_t ns_ino = mount_ns_ino(dir_fd, "ns/mnt");

                r = cache_is_current(cache, ns_ino)
                            ? 0
                            : cache_read(cache, dir_fd, "mountinfo", ns_ino, own);
                if (r >= 0)
                        *ret = cache->mi;
        } else {
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

        if (cache_own_is_current(cfg->mountinfo)) {
                /* nothing mounted or unmounted since the last read: not even
                 * PROC/self needs opening */
                mi = cfg->mountinfo->mi;
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
        if (v->resolve == RUNNING_RESOLVE_WALK)
                return view_note(v, "%s", walk_note);
        return 0;
}

static bool error_is_gone(int r) {
        return r == -ENOENT || r == -ESRCH;
}

/* One attempt at reading through process pid. Returns 1 when done (read, or
 * a definite answer set in v), 0 when the process vanished and the caller
 * should look again, -ENOMEM. */
static int read_target_once(const RunningConfig *cfg, const char *proc_dir, const Selector *sel,
                            pid_t pid, RunningView *v) {
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
        r = process_is_at(sel, pid_fd, "");
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
        r = process_is_at(sel, pid_fd, "");
        if (r <= 0)
                return 0;

        if (v->resolve == RUNNING_RESOLVE_WALK && view_note(v, "%s", walk_note) < 0)
                return -ENOMEM;
        v->observable = true;
        v->error = 0;
        v->detail = mfree(v->detail);
        v->pid = pid;
        v->pidfd = TAKE_FD(pidfd);
        return 1;
}

struct RunningMemo {
        pid_t rejected[RUNNING_MAX_CANDIDATES]; /* ignored at the last look, sorted */
        size_t n_rejected;
        pid_t several[RUNNING_MAX_CANDIDATES]; /* the last set warned about, sorted */
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

static bool pid_in(const pid_t *pids, size_t n, pid_t pid) {
        return bsearch(&pid, pids, n, sizeof *pids, cmp_pid) != NULL;
}

/* The sentences one look at the processes calls for (view_warn()), each
 * said once while it lasts when the caller keeps a memo. */
static int warn_selection(RunningView *v, const Selector *s, const Selection *sel,
                          RunningMemo *memo) {
        size_t n_new = 0;
        int r = 0;

        for (size_t i = 0; i < sel->n_rejected && r >= 0; i++) {
                const Rejected *x = &sel->rejected[i];

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
                StrBuf b = STRBUF_INIT(RUNNING_MAX_CANDIDATES * 16);

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
        _cleanup_free_ Selection *sel = NULL;
        _cleanup_close_ int proc_fd = -EBADF;
        Selector s;
        int r;

        proc_fd = open(proc_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0) {
                r = negative_errno();
                return view_unobservable(v, r, "cannot open %s: %s", proc_dir, strerror(-r));
        }
        /* A pidfd is only this process when proc_dir is our own PID
         * namespace's procfs, which "self" tells. */
        r = selector_init(&s, proc_fd, name, cfg->target_uid);
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
                        if (process_is_at(&s, proc_fd, prefix) > 0)
                                pid = last_pid;
                        last_pid = 0; /* a second attempt always looks again */
                }
                if (pid == 0) {
                        r = find_process_at(&s, sel);
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
