/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/PID/mountinfo as a table (proc(5)): one entry per mount, with the
 * kernel's \ooo escapes in paths decoded.
 *
 * Parsing never fails on content: a line that does not have mountinfo's shape
 * is skipped and counted, so one odd filesystem cannot hide the mounts we
 * need. Nothing here logs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* The whole text. A container's mountinfo is a few KiB; a busy node's host
 * mountinfo a few MiB (every pod adds several lines). More is refused. */
#define MOUNTINFO_MAX_BYTES      (8u * 1024u * 1024u)
/* Entries kept; a table with more is refused rather than truncated, since a
 * missing later line could change which mount is on top. */
#define MOUNTINFO_MAX_ENTRIES    65536u
/* One line: root, mount point and source can each be PATH_MAX bytes, and
 * escaping turns one byte into four. Longer lines are skipped as malformed. */
#define MOUNTINFO_MAX_LINE_BYTES (64u * 1024u)

typedef struct MountInfoEntry {
        uint64_t mount_id;       /* field 1; the same number statx() reports as stx_mnt_id */
        uint64_t parent_id;      /* field 2 */
        unsigned major, minor;   /* field 3 */
        const char *root;        /* field 4, decoded: the path of the mount's root within its
                                    * filesystem; ends in "//deleted" once that dentry was
                                    * unlinked. Not always a path: nsfs shows "net:[4026531840]". */
        const char *mount_point; /* field 5, decoded, relative to the reading process's root */
        const char *options;     /* field 6: per-mount options, e.g. "ro,relatime" */
        const char *optional;    /* fields 7..: space-separated ("shared:1 master:2"), "" if none */
        const char *fstype;      /* "ext4", "fuse.sshfs", ... */
        const char *source;      /* decoded; may be "" */
        const char *super_options; /* per-superblock options */
        unsigned line;             /* 1-based line number in the text */
} MountInfoEntry;

typedef struct MountInfo {
        MountInfoEntry *entries; /* in file order; strings borrowed from storage below */
        size_t n_entries;
        size_t n_malformed; /* lines skipped: wrong shape or longer than MOUNTINFO_MAX_LINE_BYTES */
        char *storage;      /* owned: the decoded text every entry points into */
} MountInfo;

/* Parses len bytes of mountinfo text (NUL bytes end nothing: a line holding
 * one is malformed). A missing final newline is accepted.
 * Returns 0 with *ret a new table owned by the caller (mountinfo_free()),
 * -EFBIG when len exceeds MOUNTINFO_MAX_BYTES, -ENOBUFS when more than
 * MOUNTINFO_MAX_ENTRIES lines parse, -ENOMEM. */
int mountinfo_parse(const char *text, size_t len, MountInfo **ret);
MountInfo *mountinfo_free(MountInfo *mi);
DEFINE_TRIVIAL_CLEANUP_FUNC(MountInfo *, mountinfo_free);

/* The mount a process sees at path (compared byte for byte with the decoded
 * mount point: pass a normalized absolute path). Mounts stack: when several
 * entries share the mount point, the one on top is the one no other entry on
 * that path names as its parent (this also holds for mounts tucked under
 * others by propagation or MOVE_MOUNT_BENEATH, where file order would lie);
 * when that does not single one out (a malformed table), the LAST one in the
 * file wins. On success *ret points into mi (borrowed).
 * Returns 0, -ENOENT when nothing is mounted on path, -ENOMEM. */
int mountinfo_find_mount_point(const MountInfo *mi, const char *path, const MountInfoEntry **ret);

/* The entry with this mount ID (statx() STATX_MNT_ID; IDs are unique across
 * mount namespaces), or NULL. Borrowed. */
const MountInfoEntry *mountinfo_find_id(const MountInfo *mi, uint64_t mount_id);

/* What a kubelet subPath mount root (".../<volume>/..VERSION/KEY", with
 * "//deleted" appended once kubelet removed that version directory) says
 * about its version (docs/DESIGN.md §3).
 *
 * *ret_deleted tells whether root ends in "//deleted". The version id is the
 * component right before the last one when it starts with ".." (kubelet's
 * reserved "..data" and "..data_tmp" excepted); it is returned whole, ".."
 * included, so it compares equal to readlink("..data") of a whole-directory
 * mount of the same volume. It is an opaque id, never a date; its shape is
 * checked (mountinfo_version_is_valid()), so it holds no byte that could not
 * go into a log line, a metric or the pod condition.
 * A ConfigMap item projected into a subdirectory (items[].path "a/b") is not
 * recognized: the version directory is then not the file's parent.
 * Either ret pointer may be NULL; *ret_deleted is set in every case but
 * -ENOMEM. Returns 1 with *ret_version a new string when a version id was
 * found, 0 with *ret_version NULL when there is none, -EBADMSG with
 * *ret_version NULL when the component starts with ".." but is no name
 * kubelet writes (the version is then unknown), -ENOMEM. */
int mountinfo_root_version(const char *root, char **ret_version, bool *ret_deleted);

/* Whether len bytes at s are a version directory name as kubelet's atomic
 * writer makes them: os.MkdirTemp(dir, "..2006_01_02_15_04_05.") appends
 * decimal digits to that pattern, so "..DDDD_DD_DD_DD_DD_DD." and 1 to
 * MOUNTINFO_MAX_VERSION_DIGITS digits (docs/DESIGN.md §2). The digits are checked,
 * never read as a date. */
bool mountinfo_version_is_valid(const char *s, size_t len);

/* Go's MkdirTemp appends a uint32 in decimal (10 digits at most); a 64-bit
 * one would take 20: both are accepted. */
#define MOUNTINFO_MAX_VERSION_DIGITS 20u

/* The suffix the kernel appends to an unlinked mount root. */
#define MOUNTINFO_DELETED_SUFFIX     "//deleted"
