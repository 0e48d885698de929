/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <linux/magic.h>
#include <stdint.h>
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

#include "macro.h"
#include "root-open.h"

/* openat2(2) through syscall(): glibc 2.36 has no wrapper, and a build on an
 * older libc should still run (and fall back) on whatever kernel it meets. */
static int sys_openat2(int dir_fd, const char *path, const struct open_how *how) {
#ifdef SYS_openat2
        long r = syscall(SYS_openat2, dir_fd, path, how, sizeof *how);
        return r < 0 ? negative_errno() : (int) r;
#else
        return -ENOSYS;
#endif
}

typedef struct FdStack {
        int fds[ROOT_OPEN_MAX_DEPTH];
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

int root_open_walk(int root_fd, const char *path, int flags) {
        _cleanup_(fd_stack_clear) FdStack stack = {.depth = 0};
        _cleanup_free_ char *todo = NULL;
        unsigned links = 0;
        size_t pos = 0;

        if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
                return -EINVAL;
        if (path[0] == '\0')
                return -ENOENT; /* as open("") */
        if (strlen(path) >= ROOT_OPEN_MAX_PATH_LENGTH)
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
                        char target[ROOT_OPEN_MAX_PATH_LENGTH];
                        _cleanup_free_ char *spliced = NULL;
                        ssize_t n;

                        if (++links > ROOT_OPEN_MAX_SYMLINKS)
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

                        if ((size_t) n + 1 + strlen(rest) + 1 >= ROOT_OPEN_MAX_PATH_LENGTH)
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
                        if (stack.depth >= ROOT_OPEN_MAX_DEPTH)
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

int root_open(int root_fd, const char *path, int flags, RootResolve *ret_resolve) {
        struct open_how how = {
                .flags = (uint64_t) (flags | O_CLOEXEC),
                .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
        };
        RootResolve how_done = ROOT_RESOLVE_OPENAT2;
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
                        fd = root_open_walk(root_fd, path, flags);
                how_done = ROOT_RESOLVE_WALK;
        }
        if (fd >= 0 && ret_resolve)
                *ret_resolve = how_done;
        return fd;
}

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static int kept_fd = -EBADF; /* O_PATH of /proc/self/fd */
static bool kept_inherited;  /* kept_fd is the parent's: this is a child of fork() */
static bool kept_tracked;    /* the handlers below are registered */
static pthread_once_t kept_once = PTHREAD_ONCE_INIT;

/* fork() waits for a reopen under way, so the child's lock is free and the
 * descriptor it inherits is the one just decided on. */
static void kept_prepare(void) {
        (void) pthread_mutex_lock(&kept_lock);
}

static void kept_parent(void) {
        (void) pthread_mutex_unlock(&kept_lock);
}

static void kept_child(void) {
        kept_inherited = true;
        (void) pthread_mutex_unlock(&kept_lock);
}

static void kept_register(void) {
        kept_tracked = pthread_atfork(kept_prepare, kept_parent, kept_child) == 0;
}

int root_open_kept_fd(void) {
        int fd;

        /* after fork() the child holds the parent's copy, open all the
         * same, until it execs */
        (void) pthread_mutex_lock(&kept_lock);
        fd = kept_fd;
        (void) pthread_mutex_unlock(&kept_lock);
        return fd;
}

/* Reopens an O_PATH fd as O_RDONLY through /proc/self/fd/N. The directory
 * /proc/self/fd is opened once per process and kept: walking "/proc",
 * "self" (a link the kernel formats at each walk) and the process's own
 * directory again at every read cost as much as the reopen itself. A child
 * of fork() opens its own (the kept one names the parent's descriptors);
 * the fork handlers say when, with no getpid() per read. Without them, the
 * path is walked as before. */
static int reopen_read_only(int path_fd) {
        char name[16];
        int fd, dir;

        (void) pthread_once(&kept_once, kept_register);
        (void) pthread_mutex_lock(&kept_lock);
        if (kept_tracked && (kept_fd < 0 || kept_inherited)) {
                /* One inherited through fork() is left alone (the child may
                 * have closed it, and the number be another file's now):
                 * O_CLOEXEC ends it at the child's exec. */
                kept_fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
                kept_inherited = false;
        }
        dir = kept_fd;
        (void) pthread_mutex_unlock(&kept_lock);

        (void) snprintf(name, sizeof name, "%d", path_fd);
        if (dir < 0) {
                char self_fd[64];

                (void) snprintf(self_fd, sizeof self_fd, "/proc/self/fd/%s", name);
                fd = open(self_fd, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        } else
                fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        return fd < 0 ? negative_errno() : fd;
}

int root_open_regular(int root_fd, const char *path, RootResolve *ret_resolve, struct statx *sx,
                      bool *ret_have_stat) {
        _cleanup_close_ int path_fd = -EBADF;
        struct statfs sfs;

        *ret_have_stat = false;
        path_fd = root_open(root_fd, path, O_PATH, ret_resolve);
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
                        .stx_size = (uint64_t) st.st_size,
                };
        }
        *ret_have_stat = true;

        if (S_ISDIR(sx->stx_mode))
                return -EISDIR;
        if (!S_ISREG(sx->stx_mode))
                return -EBADFD;
        /* procfs and sysfs, as every file system without a block device
         * (tmpfs, overlayfs), have a device number of major 0: only those
         * need asking which file system they are. */
        if (sx->stx_dev_major == 0) {
                if (fstatfs(path_fd, &sfs) < 0)
                        return negative_errno();
                if (sfs.f_type == PROC_SUPER_MAGIC || sfs.f_type == SYSFS_MAGIC)
                        return -EMEDIUMTYPE;
        }

        return reopen_read_only(path_fd);
}
