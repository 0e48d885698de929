/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Opening a path inside a directory as if that directory were "/"
 * (a process's root seen through /proc/PID/root, or a running root), without
 * ever leaving it: an absolute symlink resolves inside the root, and ".."
 * never climbs out.
 *
 * The kernel does it with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
 * from a directory fd of the root. Where openat2 is unavailable (Linux < 5.6,
 * or a seccomp filter that refuses it), the same resolution is done one
 * component at a time with O_NOFOLLOW, and the caller is told so.
 *
 * Never logs.
 */
#pragma once

#include <stdbool.h>
#include <sys/stat.h>

/* Fallback resolution only: symlinks followed per path (the kernel's
 * MAXSYMLINKS), directory levels held open, bytes of a path after
 * splicing in link targets. Crossing one fails with -ELOOP, -ENAMETOOLONG,
 * -ENAMETOOLONG. */
#define ROOT_OPEN_MAX_SYMLINKS    40u
#define ROOT_OPEN_MAX_DEPTH       256u
#define ROOT_OPEN_MAX_PATH_LENGTH 4096u

typedef enum RootResolve {
        ROOT_RESOLVE_OPENAT2, /* the kernel kept every lookup inside the root */
        ROOT_RESOLVE_WALK,    /* openat2 unavailable: resolved one component at a time */
} RootResolve;

/* Opens path inside the directory root_fd as if root_fd were "/" (absolute
 * symlinks and ".." stay inside). flags are added to O_CLOEXEC; O_CREAT is
 * refused. Uses openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS), retried on
 * its EAGAIN, or root_open_walk() when openat2 is unavailable.
 * Returns a new fd, with *ret_resolve (may be NULL) saying which was used,
 * or -errno. */
int root_open(int root_fd, const char *path, int flags, RootResolve *ret_resolve);

/* The fallback: resolves path one component at a time with
 * O_PATH|O_NOFOLLOW, following symlinks by reading them and restarting
 * absolute ones at root_fd, holding a directory fd per level so ".." pops
 * rather than climbs (at root_fd it stays there, as in a chroot). Magic links
 * (/proc/self/...) are read as text, never followed.
 * Returns a new fd opened with flags|O_CLOEXEC|O_NOFOLLOW, or -errno. */
int root_open_walk(int root_fd, const char *path, int flags);

/* Opens path in root_fd (root_open()) for reading, without opening anything
 * but a regular file: opening a device runs its driver, a FIFO may block,
 * and a procfs or sysfs file is kernel state (a link to /proc/self/environ
 * would hand over the caller's environment). The path is resolved with
 * O_PATH, which opens nothing; the inode is checked; only then is it
 * reopened through /proc/self/fd, which reopens that very inode.
 * *sx is filled from the O_PATH fd whenever it could be opened
 * (*ret_have_stat true), even when the file is refused; without statx()
 * only its basic fields are, with no mount ID. *ret_resolve is written as
 * root_open() writes it.
 * Returns a new fd (O_RDONLY|O_CLOEXEC|O_NOCTTY|O_NONBLOCK), or -EISDIR,
 * -EBADFD (not a regular file), -EMEDIUMTYPE (on procfs or sysfs), or the
 * -errno of resolving it. */
int root_open_regular(int root_fd, const char *path, RootResolve *ret_resolve, struct statx *sx,
                      bool *ret_have_stat);

/* The descriptor root_open_regular() keeps open on /proc/self/fd for its
 * reopens (once per process, from its first call), or -EBADF: not one of
 * the caller's own, which a count of open descriptors leaves out. */
int root_open_kept_fd(void);
