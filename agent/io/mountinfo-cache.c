/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The mountinfo cache (mountinfo-cache.h). The kernel reports every mount and
 * unmount in a namespace as POLLPRI on an open procfs mountinfo file
 * (proc(5)), so an unchanged mount table is never formatted and parsed again:
 * that formatting and parsing is most of an evaluation's CPU otherwise.
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "fileio.h"
#include "macro.h"
#include "mountinfo-cache.h"

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
 * the agent never changes its own mount namespace (see mountinfo-cache.h). */
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

int mountinfo_cache_read(MountInfoCache *c, int dir_fd, bool own, const MountInfo **ret) {
        uint64_t ns_ino = mount_ns_ino(dir_fd, "ns/mnt");
        int r;

        r = cache_is_current(c, ns_ino) ? 0 : cache_read(c, dir_fd, "mountinfo", ns_ino, own);
        if (r >= 0)
                *ret = c->mi;
        return r;
}

const MountInfo *mountinfo_cache_own_current(MountInfoCache *c) {
        return cache_own_is_current(c) ? c->mi : NULL;
}
