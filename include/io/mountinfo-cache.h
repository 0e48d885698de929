/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The parsed mountinfo of one mount namespace, kept between reads of the
 * running view (running.h) and parsed again only after the kernel reports a
 * mount or unmount in that namespace.
 *
 * What changes without a mount event is not seen here: a mount root's
 * "//deleted" when kubelet removes the version directory a subPath file was
 * mounted from is taken from the file's own st_nlink instead (see
 * RunningFile). A mountinfo file not on procfs (tests) is read every time. In
 * target mode the namespace is checked at each read (the target may have been
 * replaced); the agent's own (default mode) is taken to stay the one it was
 * read in: a program that changes its mount namespace (unshare(2), setns(2))
 * must not keep a cache across the change.
 *
 * Never logs.
 */
#pragma once

#include <stdbool.h>

#include "macro.h"
#include "mountinfo.h"

typedef struct MountInfoCache MountInfoCache;

int mountinfo_cache_new(MountInfoCache **ret);
MountInfoCache *mountinfo_cache_free(MountInfoCache *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(MountInfoCache *, mountinfo_cache_free);
/* How many times the cache read a mountinfo file (tests, debugging). */
unsigned mountinfo_cache_reads(const MountInfoCache *c);

/* The parsed "mountinfo" of dir_fd (a /proc/PID directory; own: it is
 * PROC/self, the agent's own namespace), read again only when the cached
 * table is not that namespace's current one. Returns 0 with *ret borrowed
 * from the cache (valid until its next call), or the -errno of reading or
 * parsing it (-ENOMEM, -EFBIG over MOUNTINFO_MAX_BYTES, ...). */
int mountinfo_cache_read(MountInfoCache *c, int dir_fd, bool own, const MountInfo **ret);

/* The cached table of the agent's own namespace when nothing was mounted or
 * unmounted since it was read (not even PROC/self needs opening), else NULL;
 * c may be NULL. Borrowed from the cache. */
const MountInfo *mountinfo_cache_own_current(MountInfoCache *c);
