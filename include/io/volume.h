/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The desired side: reads the keys of a ConfigMap mounted as a whole
 * directory, laid out by kubelet's atomic writer (docs/DESIGN.md §2):
 *
 *   DIR/..data          -> ..2024_05_01_12_00_00.123456789   (symlink, flipped by rename(2))
 *   DIR/..2024_05_...   the version directory: one regular file per key
 *   DIR/KEY             -> ..data/KEY                        (created after the flip)
 *
 * A read resolves ..data once and reads every key from that one version
 * directory, never through the top-level KEY links, so a snapshot never
 * mixes two versions.
 *
 * A directory without ..data (a hostPath, a test, a copy) is read directly:
 * each key must be a regular file in DIR itself; a top-level symlink there
 * reads as -ELOOP.
 *
 * Nothing here logs above debug: every failure is a -errno the caller turns
 * into a message (volume_error_to_string() helps).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "atomic-writer.h"
#include "macro.h"

/* How often volume_read() starts over when the version directory vanishes
 * under it (kubelet removes the old version right after a flip). Two flips
 * within one read are already unusual: kubelet syncs a volume about once a
 * minute. */
#define VOLUME_MAX_RETRIES 8u

/* The most keys one read takes (the daemon's --file limit is lower). */
#define VOLUME_MAX_KEYS    64u

typedef struct VolumeFile {
        char *key;  /* copy of the key asked for */
        int error;  /* 0, or this key's -errno (see volume_read()); data is NULL then */
        char *data; /* the file's bytes, NUL-terminated (may contain NULs: use len) */
        size_t len;
} VolumeFile;

typedef struct VolumeSnapshot {
        /* The ..data target the keys were read from (an opaque version id,
         * never a date), or NULL when DIR has no ..data (plain directory). */
        char *version;
        /* When ..data was made to name it: the ctime of the ..data link
         * (rename(2) sets it), CLOCK_REALTIME microseconds; 0 when unknown
         * or plain. The start-time rule of workload.h compares it with the
         * workload containers' start times. */
        uint64_t version_since_usec;
        /* How many times the read started over because the version vanished. */
        unsigned n_retries;
        VolumeFile *files; /* one per key, in the order asked */
        size_t n_files;
} VolumeSnapshot;

/* Frees the snapshot and everything in it. Accepts NULL, returns NULL. */
VolumeSnapshot *volume_snapshot_free(VolumeSnapshot *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(VolumeSnapshot *, volume_snapshot_free);

/* Returns the entry for key in s, or NULL when the key was not asked for. */
const VolumeFile *volume_snapshot_find(const VolumeSnapshot *s, const char *key);

/* One consistent read of n_keys keys from the directory dir_fd (borrowed, not
 * closed), each capped at max_bytes.
 *
 * On success (0), *ret is a new snapshot owned by the caller; each key then
 * has its own result in VolumeFile.error, not fatal for the others:
 *   0             read, data/len set
 *   -ENOENT       the version (or plain directory) has no such key
 *   -EFBIG        larger than max_bytes (refused from fstat, never read)
 *   -EISDIR       a directory in place of the key
 *   -EBADFD       not a regular file: a FIFO, a device, a socket (never opened
 *                 for blocking I/O)
 *   -ELOOP        a symlink in place of the key (never followed)
 *   -EACCES       permission denied
 *   -EINVAL       the key itself is unusable: empty, contains '/', is "." or
 *                 "..", or starts with ".." (names kubelet reserves)
 *   other -errno  from open/read
 *
 * Fails, writing nothing to *ret, with:
 *   -EINVAL       dir_fd < 0, keys NULL with n_keys > 0, or max_bytes == 0
 *   -E2BIG        n_keys > VOLUME_MAX_KEYS
 *   -EIDRM        dir_fd is a directory that has been deleted (st_nlink == 0):
 *                 reopen it by path, it may have been recreated
 *   -ENOLINK      DIR/..data exists but is not a symbolic link
 *   -EXDEV        DIR/..data points outside DIR: absolute, contains '/', is
 *                 empty, "..", or does not start with ".." like every name
 *                 the atomic writer creates
 *   -ENAMETOOLONG the ..data target is longer than VOLUME_MAX_VERSION_LENGTH
 *   -ELOOP        ..data points to a symlink (a loop such as ..data -> ..data)
 *   -ENOTDIR      ..data points to something that is not a directory
 *   -ESTALE       the version directory ..data names vanished on every one of
 *                 1 + VOLUME_MAX_RETRIES attempts (a dangling ..data, or a
 *                 writer flipping faster than we read)
 *   -EACCES, -ENOMEM, other -errno of readlinkat/openat/fstat on DIR.
 *
 * The read starts over (counted in n_retries) when the version directory
 * cannot be opened (ENOENT), when it was deleted while being read (fstat
 * st_nlink == 0 after the reads), or when a key came back ENOENT and ..data
 * meanwhile points elsewhere. */
int volume_read(int dir_fd, const char *const *keys, size_t n_keys, size_t max_bytes,
                VolumeSnapshot **ret);

/* The current ..data target, cheaply (one fstat, one readlinkat): for
 * polling and for comparing with a running mount's version. On success
 * *ret_version is a new string, or NULL when DIR has no ..data.
 * Fails with -EIDRM, -ENOLINK, -EXDEV, -ENAMETOOLONG as volume_read(), or
 * another -errno. Does not check that the version directory exists. */
int volume_read_version(int dir_fd, char **ret_version);

/* A short English phrase for the errors above whose strerror() would
 * mislead ("..data points outside the directory" for -EXDEV, ...), or NULL
 * for any other error (use strerror()/%m). error is -errno or errno. */
const char *volume_error_to_string(int error);
