/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/PID/mountinfo parsing (mountinfo.h). One line per mount (proc(5)):
 *
 *   36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue
 *   (1)(2)(3)  (4)   (5)         (6)       (7)      (8)(9)  (10)      (11)
 *
 * mount ID, parent ID, major:minor, root, mount point, mount options, zero or
 * more optional fields ended by a lone "-", filesystem type, source, super
 * options. Fields are separated by exactly one space; the kernel escapes
 * space, tab, newline and backslash in paths as \ooo octal (seq_escape), so a
 * field may be empty (a mount with source "" shows two spaces) but never holds
 * a raw separator.
 *
 * A subPath mount's root: kubelet bind-mounts the file inside the atomic
 * writer's version directory, so the root reads
 * ".../<volume>/..2026_12_02_14_00_00.123456789/enroot.conf", and once the
 * writer has removed that directory the kernel's dentry_path() appends
 * "//deleted" (a sequence no live path contains). The version's shape is
 * checked because a decoded "\012" is a newline: what the table holds must
 * not put such bytes into a log line, a metric or the pod condition.
 */
#include <limits.h>

#include "mountinfo.h"

/* Like strtoull() for a whole field of decimal digits, without locale, sign
 * or blank skipping, refusing overflow. */
static int parse_u64(const char *s, size_t len, uint64_t *ret) {
        uint64_t v = 0;

        if (len == 0)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                unsigned d;

                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                d = (unsigned) (s[i] - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

static int parse_uint(const char *s, size_t len, unsigned *ret) {
        uint64_t v;
        int r;

        r = parse_u64(s, len, &v);
        if (r < 0)
                return r;
        if (v > UINT_MAX)
                return -ERANGE;
        *ret = (unsigned) v;
        return 0;
}

static bool is_octal(char c) {
        return c >= '0' && c <= '7';
}

/* Decodes the kernel's \ooo escapes in place (seq_escape() writes exactly
 * three octal digits). Any other backslash is kept as it is. A decoded NUL
 * cannot come from the kernel and would cut the string: refused. */
static int unescape_in_place(char *s) {
        char *w = s;

        for (const char *p = s; *p;) {
                if (p[0] == '\\' && is_octal(p[1]) && is_octal(p[2]) && is_octal(p[3]) &&
                    p[1] <= '3') {
                        char c = (char) (((p[1] - '0') << 6) | ((p[2] - '0') << 3) | (p[3] - '0'));
                        if (c == '\0')
                                return -EINVAL;
                        *w++ = c;
                        p += 4;
                } else
                        *w++ = *p++;
        }
        *w = '\0';
        return 0;
}

typedef struct Cursor {
        char *p;   /* next unread byte */
        char *end; /* end of the line (exclusive) */
} Cursor;

/* The next field: [*ret_start, *ret_end). Returns true when a space follows
 * it (more fields), false at the end of the line. */
static bool next_field(Cursor *c, char **ret_start, char **ret_end) {
        char *sp = memchr(c->p, ' ', (size_t) (c->end - c->p));

        *ret_start = c->p;
        if (!sp) {
                *ret_end = c->end;
                c->p = c->end;
                return false;
        }
        *ret_end = sp;
        c->p = sp + 1;
        return true;
}

/* Parses one line in place (it may be cut into NUL-terminated fields).
 * Returns 0, or -EINVAL when the line does not have mountinfo's shape. */
static int parse_line(char *line, char *end, MountInfoEntry *e) {
        Cursor c = {line, end};
        char *f[6][2], *s, *t, *opt_start, *colon, *fstype, *source;
        int r;

        /* fields 1 to 6 are each followed by at least the separator */
        for (size_t i = 0; i < ELEMENTSOF(f); i++)
                if (!next_field(&c, &f[i][0], &f[i][1]))
                        return -EINVAL;

        /* optional fields, up to a lone "-" */
        opt_start = c.p;
        for (;;) {
                bool more = next_field(&c, &s, &t);
                if (t - s == 1 && s[0] == '-') {
                        if (!more)
                                return -EINVAL;
                        break;
                }
                if (!more)
                        return -EINVAL;
        }
        if (s == opt_start)
                e->optional = "";
        else {
                s[-1] = '\0'; /* the space before "-" */
                e->optional = opt_start;
        }

        /* fstype, source, super options; fields a later kernel may append are ignored */
        if (!next_field(&c, &s, &t))
                return -EINVAL;
        *t = '\0';
        fstype = s;
        if (!next_field(&c, &s, &t))
                return -EINVAL;
        *t = '\0';
        source = s;
        (void) next_field(&c, &s, &t);
        *t = '\0';
        e->super_options = s;
        if (e->super_options[0] == '\0')
                return -EINVAL;

        r = parse_u64(f[0][0], (size_t) (f[0][1] - f[0][0]), &e->mount_id);
        if (r < 0)
                return -EINVAL;
        r = parse_u64(f[1][0], (size_t) (f[1][1] - f[1][0]), &e->parent_id);
        if (r < 0)
                return -EINVAL;
        colon = memchr(f[2][0], ':', (size_t) (f[2][1] - f[2][0]));
        if (!colon)
                return -EINVAL;
        r = parse_uint(f[2][0], (size_t) (colon - f[2][0]), &e->major);
        if (r < 0)
                return -EINVAL;
        r = parse_uint(colon + 1, (size_t) (f[2][1] - colon - 1), &e->minor);
        if (r < 0)
                return -EINVAL;

        for (size_t i = 3; i < ELEMENTSOF(f); i++)
                *f[i][1] = '\0';
        e->root = f[3][0];
        e->mount_point = f[4][0];
        e->options = f[5][0];

        /* Options stay as written: a decoded "\054" would be a comma that
         * splits nothing. Paths, type and source are decoded. */
        if (unescape_in_place(f[3][0]) < 0 || unescape_in_place(f[4][0]) < 0 ||
            unescape_in_place(fstype) < 0 || unescape_in_place(source) < 0)
                return -EINVAL;
        e->fstype = fstype;
        e->source = source;

        /* The kernel skips mounts outside the reader's root, so every mount
         * point it shows is absolute; the root need not be (nsfs). */
        if (e->mount_point[0] != '/' || e->root[0] == '\0' || e->fstype[0] == '\0' ||
            e->options[0] == '\0')
                return -EINVAL;
        return 0;
}

MountInfo *mountinfo_free(MountInfo *mi) {
        if (!mi)
                return NULL;
        free(mi->entries);
        free(mi->storage);
        free(mi);
        return NULL;
}

int mountinfo_parse(const char *text, size_t len, MountInfo **ret) {
        _cleanup_(mountinfo_freep) MountInfo *mi = NULL;
        size_t alloc = 0;
        unsigned line_no = 0;
        char *p, *end;

        if (len > MOUNTINFO_MAX_BYTES)
                return -EFBIG;

        mi = calloc(1, sizeof *mi);
        if (!mi)
                return -ENOMEM;
        mi->storage = malloc(len + 1);
        if (!mi->storage)
                return -ENOMEM;
        if (len > 0)
                memcpy(mi->storage, text, len);
        mi->storage[len] = '\0';

        for (p = mi->storage, end = mi->storage + len; p < end;) {
                char *nl = memchr(p, '\n', (size_t) (end - p));
                char *line_end = nl ? nl : end;
                char *next = nl ? nl + 1 : end;
                MountInfoEntry e = {};

                line_no++;
                if (line_end == p) { /* an empty line is no mount, and no harm */
                        p = next;
                        continue;
                }
                *line_end = '\0';
                if ((size_t) (line_end - p) > MOUNTINFO_MAX_LINE_BYTES ||
                    memchr(p, '\0', (size_t) (line_end - p)) || parse_line(p, line_end, &e) < 0) {
                        mi->n_malformed++;
                        p = next;
                        continue;
                }
                e.line = line_no;

                if (mi->n_entries == alloc) {
                        size_t want = alloc ? alloc * 2 : 64;
                        MountInfoEntry *n;

                        if (alloc >= MOUNTINFO_MAX_ENTRIES)
                                return -ENOBUFS;
                        if (want > MOUNTINFO_MAX_ENTRIES)
                                want = MOUNTINFO_MAX_ENTRIES;
                        n = reallocarray(mi->entries, want, sizeof *n);
                        if (!n)
                                return -ENOMEM;
                        mi->entries = n;
                        alloc = want;
                }
                mi->entries[mi->n_entries++] = e;
                p = next;
        }

        *ret = TAKE_PTR(mi);
        return 0;
}

const MountInfoEntry *mountinfo_find_id(const MountInfo *mi, uint64_t mount_id) {
        const MountInfoEntry *found = NULL;

        /* IDs are unique in a real table; in a malformed one, the last wins
         * as for mount points. */
        for (size_t i = 0; i < mi->n_entries; i++)
                if (mi->entries[i].mount_id == mount_id)
                        found = &mi->entries[i];
        return found;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return (x > y) - (x < y);
}

int mountinfo_find_mount_point(const MountInfo *mi, const char *path, const MountInfoEntry **ret) {
        _cleanup_free_ uint64_t *ids = NULL;
        const MountInfoEntry *last = NULL, *top = NULL;
        size_t n = 0;

        for (size_t i = 0; i < mi->n_entries; i++)
                if (streq(mi->entries[i].mount_point, path)) {
                        last = &mi->entries[i];
                        n++;
                }
        if (!last)
                return -ENOENT;
        if (n == 1) {
                *ret = last;
                return 0;
        }

        /* A mount stacked on another at the same path has that one as its
         * parent. Sorting the IDs keeps this O(n log n) even for a hostile
         * table where every line names the same path. */
        ids = malloc(n * sizeof *ids);
        if (!ids)
                return -ENOMEM;
        n = 0;
        for (size_t i = 0; i < mi->n_entries; i++)
                if (streq(mi->entries[i].mount_point, path))
                        ids[n++] = mi->entries[i].parent_id;
        qsort(ids, n, sizeof *ids, cmp_u64);

        for (size_t i = 0; i < mi->n_entries; i++) {
                const MountInfoEntry *e = &mi->entries[i];
                if (streq(e->mount_point, path) &&
                    !bsearch(&e->mount_id, ids, n, sizeof *ids, cmp_u64))
                        top = e; /* nothing on this path is mounted on top of e */
        }

        *ret = top ? top : last;
        return 0;
}

bool mountinfo_version_is_valid(const char *s, size_t len) {
        static const char shape[] = "..DDDD_DD_DD_DD_DD_DD.";
        size_t n = sizeof shape - 1;

        if (len <= n || len > n + MOUNTINFO_MAX_VERSION_DIGITS)
                return false;
        for (size_t i = 0; i < len; i++) {
                bool digit = s[i] >= '0' && s[i] <= '9';

                if ((i >= n || shape[i] == 'D') ? !digit : s[i] != shape[i])
                        return false;
        }
        return true;
}

int mountinfo_root_version(const char *root, char **ret_version, bool *ret_deleted) {
        const char *last, *prev;
        size_t len = strlen(root), vlen;
        bool deleted;

        deleted = endswith(root, MOUNTINFO_DELETED_SUFFIX);
        if (deleted)
                len -= strlen(MOUNTINFO_DELETED_SUFFIX);

        /* root[0, len) is ".../<version>/<key>": find the last two components */
        while (len > 0 && root[len - 1] == '/')
                len--;
        last = memrchr(root, '/', len);
        if (!last)
                goto none;
        vlen = (size_t) (last - root);
        while (vlen > 0 && root[vlen - 1] == '/')
                vlen--;
        prev = memrchr(root, '/', vlen);
        prev = prev ? prev + 1 : root;
        vlen -= (size_t) (prev - root);

        /* kubelet's atomic_writer.go names version directories "..<timestamp>"
         * and reserves "..data" (the current link) and "..data_tmp". */
        if (vlen <= 2 || prev[0] != '.' || prev[1] != '.' ||
            (vlen == 6 && memcmp(prev, "..data", 6) == 0) ||
            (vlen == 10 && memcmp(prev, "..data_tmp", 10) == 0))
                goto none;
        if (!mountinfo_version_is_valid(prev, vlen)) {
                /* Any byte may sit in a decoded root (a directory named
                 * "..\n"): what kubelet never writes is no version at all. */
                if (ret_version)
                        *ret_version = NULL;
                if (ret_deleted)
                        *ret_deleted = deleted;
                return -EBADMSG;
        }

        if (ret_version) {
                char *v = strndup(prev, vlen);
                if (!v)
                        return -ENOMEM;
                *ret_version = v;
        }
        if (ret_deleted)
                *ret_deleted = deleted;
        return 1;

none:
        if (ret_version)
                *ret_version = NULL;
        if (ret_deleted)
                *ret_deleted = deleted;
        return 0;
}
