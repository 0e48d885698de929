/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>

#include "fileio.h"
#include "macro.h"
#include "mountinfo.h"

/* ------------------------------------------------------------------------ */
/* One line, every field */

typedef struct LineCase {
        const char *name;
        const char *text;
        uint64_t mount_id, parent_id;
        unsigned major, minor;
        const char *root, *mount_point, *options, *optional, *fstype, *source, *super_options;
} LineCase;

static const LineCase line_cases[] = {
        {"proc(5) example",
         "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n",
         36, 35, 98, 0, "/mnt1", "/mnt/parent", "rw,noatime", "master:1", "ext3", "/dev/root",
         "rw,errors=continue"},
        {"no optional field", "21 26 0:20 / /proc rw,relatime - proc proc rw\n", 21, 26, 0, 20, "/",
         "/proc", "rw,relatime", "", "proc", "proc", "rw"},
        {"several optional fields",
         "67 45 0:39 / /x rw shared:1 master:2 propagate_from:3 unbindable - tmpfs tmpfs rw\n", 67,
         45, 0, 39, "/", "/x", "rw", "shared:1 master:2 propagate_from:3 unbindable", "tmpfs",
         "tmpfs", "rw"},
        {"escapes: space, backslash, tab, newline",
         "66 45 254:0 /vol/a\\040b\\134c/f\\011t /etc/x\\040y\\012z rw - ext4 /dev/my\\040disk "
         "rw\n",
         66, 45, 254, 0, "/vol/a b\\c/f\tt", "/etc/x y\nz", "rw", "", "ext4", "/dev/my disk", "rw"},
        {"backslash without three octal digits stays",
         "1 0 1:2 /a\\0b\\9xy\\400z\\ / rw - t s rw\n", 1, 0, 1, 2, "/a\\0b\\9xy\\400z\\", "/",
         "rw", "", "t", "s", "rw"},
        {"empty source (mount -t tmpfs \"\" DIR)", "65 45 0:39 / /tmp/e1 rw,relatime - tmpfs  rw\n",
         65, 45, 0, 39, "/", "/tmp/e1", "rw,relatime", "", "tmpfs", "", "rw"},
        {"options keep their escapes",
         "7 1 0:50 / /m rw - fuse.sshfs host:/a\\040b rw,user_id=0,x=a\\054b\n", 7, 1, 0, 50, "/",
         "/m", "rw", "", "fuse.sshfs", "host:/a b", "rw,user_id=0,x=a\\054b"},
        {"nsfs root is no path", "600 26 0:4 net:[4026532273] /run/netns/a rw - nsfs nsfs rw\n",
         600, 26, 0, 4, "net:[4026532273]", "/run/netns/a", "rw", "", "nsfs", "nsfs", "rw"},
        {"deleted subPath root",
         "1470 1463 259:1 /p/..2026_12_02_14_00_00.123456789/enroot.conf//deleted "
         "/etc/enroot/enroot.conf ro,relatime - ext4 /dev/nvme0n1p1 rw",
         1470, 1463, 259, 1, "/p/..2026_12_02_14_00_00.123456789/enroot.conf//deleted",
         "/etc/enroot/enroot.conf", "ro,relatime", "", "ext4", "/dev/nvme0n1p1", "rw"},
        {"fields a later kernel may append", "5 1 8:1 / /b rw - ext4 /dev/sda1 rw extra more\n", 5,
         1, 8, 1, "/", "/b", "rw", "", "ext4", "/dev/sda1", "rw"},
        {"large ids", "18446744073709551615 4294967296 4294967295:4294967295 / / rw - a b rw\n",
         UINT64_MAX, 4294967296ull, 4294967295u, 4294967295u, "/", "/", "rw", "", "a", "b", "rw"},
};

static void test_line_fields(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(line_cases); i++) {
                const LineCase *c = &line_cases[i];
                _cleanup_(mountinfo_freep) MountInfo *mi = NULL;
                const MountInfoEntry *e;

                print_message("case: %s\n", c->name);
                assert_int_equal(mountinfo_parse(c->text, strlen(c->text), &mi), 0);
                assert_int_equal(mi->n_malformed, 0);
                assert_int_equal(mi->n_entries, 1);
                e = &mi->entries[0];
                assert_true(e->mount_id == c->mount_id);
                assert_true(e->parent_id == c->parent_id);
                assert_int_equal(e->major, c->major);
                assert_int_equal(e->minor, c->minor);
                assert_string_equal(e->root, c->root);
                assert_string_equal(e->mount_point, c->mount_point);
                assert_string_equal(e->options, c->options);
                assert_string_equal(e->optional, c->optional);
                assert_string_equal(e->fstype, c->fstype);
                assert_string_equal(e->source, c->source);
                assert_string_equal(e->super_options, c->super_options);
                assert_int_equal(e->line, 1);
        }
}

/* ------------------------------------------------------------------------ */
/* Malformed lines: skipped, counted, and they hide no good line */

static const char *const malformed_lines[] = {
        "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 ext3 /dev/root rw", /* no "-" */
        "36 35 98:0 /mnt1 /mnt/parent",                                       /* too short */
        "36 35 98:0 /mnt1 /mnt/parent rw -",                                  /* nothing after - */
        "36 35 98:0 /mnt1 /mnt/parent rw - ext3",                             /* no source */
        "36 35 98:0 /mnt1 /mnt/parent rw - ext3 /dev/root",                   /* no super options */
        "36 35 98:0 /mnt1 /mnt/parent rw - ext3 /dev/root ", /* empty super options */
        "x6 35 98:0 / /m rw - ext3 /dev/root rw",            /* id not a number */
        "-1 35 98:0 / /m rw - ext3 /dev/root rw",            /* negative id */
        "36 +35 98:0 / /m rw - ext3 /dev/root rw",           /* sign */
        "18446744073709551616 1 98:0 / /m rw - e s rw",      /* id overflows */
        "36 35 98 / /m rw - ext3 /dev/root rw",              /* no minor */
        "36 35 98: / /m rw - ext3 /dev/root rw",             /* empty minor */
        "36 35 4294967296:0 / /m rw - ext3 /dev/root rw",    /* major overflows */
        "36 35 98:0 / mnt rw - ext3 /dev/root rw",           /* relative mount point */
        "36 35 98:0  /m rw - ext3 /dev/root rw",             /* empty root */
        "36 35 98:0 / /m\\000x rw - ext3 /dev/root rw",      /* escape decodes to NUL */
        "36 35 98:0 / /m rw -  /dev/root rw",                /* empty fstype */
        "36  35 98:0 / /m rw - ext3 /dev/root rw",           /* doubled separator */
        " 36 35 98:0 / /m rw - ext3 /dev/root rw",           /* leading space */
        "36 35 98:0 / /m  - ext3 /dev/root rw",              /* empty options */
        "36\t35 98:0 / /m rw - ext3 /dev/root rw",           /* tab is no separator */
        "-",
        "- - - - - - - - - -",
};

static void test_malformed(void **state) {
        static const char good[] = "21 26 0:20 / /proc rw,relatime - proc proc rw";

        for (size_t i = 0; i < ELEMENTSOF(malformed_lines); i++) {
                _cleanup_(mountinfo_freep) MountInfo *mi = NULL;
                _cleanup_free_ char *text = NULL;

                print_message("case: %s\n", malformed_lines[i]);
                assert_true(asprintf(&text, "%s\n%s\n%s\n", good, malformed_lines[i], good) > 0);
                assert_int_equal(mountinfo_parse(text, strlen(text), &mi), 0);
                assert_int_equal(mi->n_malformed, 1);
                assert_int_equal(mi->n_entries, 2);
                assert_int_equal(mi->entries[0].line, 1);
                assert_int_equal(mi->entries[1].line, 3);
                assert_string_equal(mi->entries[1].mount_point, "/proc");
        }
}

static void test_nul_and_blank_lines(void **state) {
        static const char text[] = "\n21 26 0:20 / /p\0x rw - proc proc rw\n\n"
                                   "22 26 0:21 / /sys rw - sysfs sysfs rw\n\n";
        _cleanup_(mountinfo_freep) MountInfo *mi = NULL;

        /* a NUL byte makes its line malformed; blank lines are no mounts and no errors */
        assert_int_equal(mountinfo_parse(text, sizeof text - 1, &mi), 0);
        assert_int_equal(mi->n_malformed, 1);
        assert_int_equal(mi->n_entries, 1);
        assert_string_equal(mi->entries[0].mount_point, "/sys");
        assert_int_equal(mi->entries[0].line, 4);
}

static void test_empty(void **state) {
        _cleanup_(mountinfo_freep) MountInfo *mi = NULL;

        assert_int_equal(mountinfo_parse("", 0, &mi), 0);
        assert_int_equal(mi->n_entries, 0);
        assert_int_equal(mi->n_malformed, 0);
}

/* ------------------------------------------------------------------------ */
/* Limits */

static void test_limit_bytes(void **state) {
        _cleanup_free_ char *text = malloc(MOUNTINFO_MAX_BYTES + 1);
        MountInfo *mi = NULL;

        assert_non_null(text);
        memset(text, '\n', MOUNTINFO_MAX_BYTES + 1);
        assert_int_equal(mountinfo_parse(text, MOUNTINFO_MAX_BYTES + 1, &mi), -EFBIG);
        assert_null(mi);
        assert_int_equal(mountinfo_parse(text, MOUNTINFO_MAX_BYTES, &mi), 0);
        assert_int_equal(mi->n_entries, 0);
        mountinfo_free(mi);
}

static char *lines(size_t n) {
        static const char line[] = "1 0 0:1 / / rw - t s rw\n";
        char *text = malloc(n * (sizeof line - 1) + 1);

        assert_non_null(text);
        for (size_t i = 0; i < n; i++)
                memcpy(text + i * (sizeof line - 1), line, sizeof line - 1);
        text[n * (sizeof line - 1)] = '\0';
        return text;
}

static void test_limit_entries(void **state) {
        _cleanup_free_ char *at = lines(MOUNTINFO_MAX_ENTRIES);
        _cleanup_free_ char *over = lines(MOUNTINFO_MAX_ENTRIES + 1);
        MountInfo *mi = NULL;

        assert_int_equal(mountinfo_parse(at, strlen(at), &mi), 0);
        assert_int_equal(mi->n_entries, MOUNTINFO_MAX_ENTRIES);
        mi = mountinfo_free(mi);

        /* refused, not truncated: a lost later line could change the answer */
        assert_int_equal(mountinfo_parse(over, strlen(over), &mi), -ENOBUFS);
        assert_null(mi);
}

static void test_limit_line(void **state) {
        static const char head[] = "1 0 0:1 /", tail[] = " /m rw - t s rw\n";
        _cleanup_(mountinfo_freep) MountInfo *mi = NULL;
        _cleanup_free_ char *text = NULL;
        size_t root_len, len;

        /* one line of exactly MOUNTINFO_MAX_LINE_BYTES (newline excluded) parses,
         * one byte more is skipped */
        for (int over = 0; over <= 1; over++) {
                root_len = MOUNTINFO_MAX_LINE_BYTES - (sizeof head - 1) - (sizeof tail - 2) + over;
                len = (sizeof head - 1) + root_len + (sizeof tail - 1);
                text = malloc(len + 1);
                assert_non_null(text);
                memcpy(text, head, sizeof head - 1);
                memset(text + sizeof head - 1, 'a', root_len);
                memcpy(text + sizeof head - 1 + root_len, tail, sizeof tail);
                assert_int_equal(mountinfo_parse(text, len, &mi), 0);
                assert_int_equal(mi->n_entries, over ? 0 : 1);
                assert_int_equal(mi->n_malformed, over ? 1 : 0);
                mi = mountinfo_free(mi);
                free(text);
                text = NULL;
        }
}

/* ------------------------------------------------------------------------ */
/* Which mount is on a path */

typedef struct FindCase {
        const char *name;
        const char *text;
        const char *path;
        int ret;
        unsigned line; /* of the entry expected on top */
} FindCase;

static const FindCase find_cases[] = {
        {"single", "1 0 0:1 / / rw - t s rw\n2 1 0:2 / /x rw - t s rw\n", "/x", 0, 2},
        {"nothing mounted there", "1 0 0:1 / / rw - t s rw\n2 1 0:2 / /x rw - t s rw\n", "/y",
         -ENOENT, 0},
        {"a prefix is not a match", "1 0 0:1 / / rw - t s rw\n2 1 0:2 / /x/y rw - t s rw\n", "/x",
         -ENOENT, 0},
        {"stacked in file order",
         "1 0 0:1 / / rw - t s rw\n10 1 0:2 / /x rw - t s rw\n11 10 0:3 / /x rw - t s rw\n"
         "12 11 0:4 / /x rw - t s rw\n",
         "/x", 0, 4},
        /* propagation tucks a mount under an existing one (Linux 4.11), and
         * MOVE_MOUNT_BENEATH (6.5) does so on purpose: the newest line is then
         * not the top; the parent chain says which is */
        {"tucked under: the last line is not the top",
         "1 0 0:1 / / rw - t s rw\n10 15 0:2 / /x rw - t s rw\n20 10 0:3 / /x rw - t s rw\n"
         "15 1 0:4 / /x rw - t s rw\n",
         "/x", 0, 3},
        {"cycle in a malformed table: the last line wins",
         "1 0 0:1 / / rw - t s rw\n10 11 0:2 / /x rw - t s rw\n11 10 0:3 / /x rw - t s rw\n", "/x",
         0, 3},
        {"two unrelated mounts on one path: the last line wins",
         "10 1 0:2 / /x rw - t s rw\n11 2 0:3 / /x rw - t s rw\n", "/x", 0, 2},
        {"escaped mount point", "7 1 0:2 / /etc/x\\040y rw - t s rw\n", "/etc/x y", 0, 1},
        {"root", "1 0 0:1 / / rw - t s rw\n", "/", 0, 1},
};

static void test_find_mount_point(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(find_cases); i++) {
                const FindCase *c = &find_cases[i];
                _cleanup_(mountinfo_freep) MountInfo *mi = NULL;
                const MountInfoEntry *e = NULL;

                print_message("case: %s\n", c->name);
                assert_int_equal(mountinfo_parse(c->text, strlen(c->text), &mi), 0);
                assert_int_equal(mountinfo_find_mount_point(mi, c->path, &e), c->ret);
                if (c->ret == 0) {
                        assert_non_null(e);
                        assert_int_equal(e->line, c->line);
                } else
                        assert_null(e);
        }
}

static void test_find_id(void **state) {
        static const char text[] = "1 0 0:1 / / rw - t s rw\n7 1 0:2 / /a rw - t s rw\n";
        _cleanup_(mountinfo_freep) MountInfo *mi = NULL;

        assert_int_equal(mountinfo_parse(text, strlen(text), &mi), 0);
        assert_string_equal(mountinfo_find_id(mi, 7)->mount_point, "/a");
        assert_string_equal(mountinfo_find_id(mi, 1)->mount_point, "/");
        assert_null(mountinfo_find_id(mi, 2));
}

/* ------------------------------------------------------------------------ */
/* Version ids in subPath roots */

typedef struct VersionCase {
        const char *root;
        int ret;
        const char *version;
        bool deleted;
} VersionCase;

static const VersionCase version_cases[] = {
        {"/var/lib/kubelet/pods/UID/volumes/kubernetes.io~configmap/enroot-config/"
         "..2026_12_02_14_00_00.123456789/enroot.conf//deleted",
         1, "..2026_12_02_14_00_00.123456789", true},
        {"/var/lib/kubelet/pods/UID/volumes/kubernetes.io~configmap/enroot-config/"
         "..2026_12_02_14_00_00.123456789/enroot.conf",
         1, "..2026_12_02_14_00_00.123456789", false},
        /* a volume on its own filesystem (tmpfs for a Secret): the version is first */
        {"/..2026_12_02_14_00_00.123456789/99-aicr-defaults.env//deleted", 1,
         "..2026_12_02_14_00_00.123456789", true},
        {"..2026_12_02_14_00_00.1/enroot.conf", 1, "..2026_12_02_14_00_00.1", false},
        /* the digits are checked, never read as a date */
        {"/vol/..0000_99_99_99_99_99.00000000000000000000/k", 1,
         "..0000_99_99_99_99_99.00000000000000000000", false},
        {"/vol/..2026_12_02_14_00_00.1//k", 1, "..2026_12_02_14_00_00.1", false},
        {"/vol/..2026_12_02_14_00_00.1/k/", 1, "..2026_12_02_14_00_00.1", false},
        /* ".." and no name kubelet writes: the version is unknown */
        {"..v1/enroot.conf", -EBADMSG, NULL, false},
        {"/vol/..not-a-date/enroot.conf", -EBADMSG, NULL, false},
        {"/vol/...x/k", -EBADMSG, NULL, false},
        {"/vol/..v/k//deleted", -EBADMSG, NULL, true},
        {"/vol/..2026_12_02_14_00_00./k", -EBADMSG, NULL, false},
        {"/vol/..2026_12_02_14_00_00.000000000000000000000/k", -EBADMSG, NULL, false},
        {"/vol/..2026_12_02_14_00_00.1x/k", -EBADMSG, NULL, false},
        {"/vol/..2026-12-02_14_00_00.1/k", -EBADMSG, NULL, false},
        {"/vol/..2026_12_02_14_00_0.1/k", -EBADMSG, NULL, false},
        {"/vol/..2026_12_02_14_00_00.1\n/k", -EBADMSG, NULL, false},
        {"/vol/..2026_12_02_14_00_00.1\033[2J/k//deleted", -EBADMSG, NULL, true},
        /* no version */
        {"/etc/enroot/enroot.conf", 0, NULL, false},
        {"/tmp/enroot.conf//deleted", 0, NULL, true},
        {"/vol/..data/enroot.conf", 0, NULL, false},
        {"/vol/..data_tmp/enroot.conf", 0, NULL, false},
        {"/vol/../enroot.conf", 0, NULL, false},
        {"/vol/.hidden/enroot.conf", 0, NULL, false},
        {"/..v", 0, NULL, false},
        {"enroot.conf", 0, NULL, false},
        {"/", 0, NULL, false},
        {"", 0, NULL, false},
        {"//deleted", 0, NULL, true},
        {"net:[4026532273]", 0, NULL, false},
        /* "//deleted" only as the suffix the kernel appends */
        {"/vol/..v/k//deleted/x", 0, NULL, false},
        {"/vol/..v/k/deleted", 0, NULL, false},
};

static void test_root_version(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(version_cases); i++) {
                const VersionCase *c = &version_cases[i];
                static char unset;
                char *version = &unset; /* written even when no version is found */
                bool deleted = !c->deleted;

                print_message("case: \"%s\"\n", c->root);
                assert_int_equal(mountinfo_root_version(c->root, &version, &deleted), c->ret);
                if (c->version) {
                        assert_string_equal(version, c->version);
                        free(version);
                } else
                        assert_null(version);
                assert_int_equal(deleted, c->deleted);

                /* either out pointer may be NULL */
                assert_int_equal(mountinfo_root_version(c->root, NULL, NULL), c->ret);
        }
}

/* ------------------------------------------------------------------------ */
/* Captured and realistic tables */

static MountInfo *parse_file(const char *name) {
        _cleanup_free_ char *path = NULL, *data = NULL;
        MountInfo *mi = NULL;
        size_t len;

        assert_true(asprintf(&path, "%s/mountinfo/%s", TEST_DATA_DIR, name) > 0);
        assert_int_equal(read_file_at(AT_FDCWD, path, 0, MOUNTINFO_MAX_BYTES, &data, &len), 0);
        assert_int_equal(mountinfo_parse(data, len, &mi), 0);
        return mi;
}

static void test_kernel_sample(void **state) {
        _cleanup_(mountinfo_freep) MountInfo *mi = parse_file("kernel-6.18-bind-deleted.txt");
        _cleanup_free_ char *version = NULL;
        const MountInfoEntry *e;
        bool deleted = false;

        assert_int_equal(mi->n_malformed, 0);
        assert_int_equal(mi->n_entries, 23);

        assert_int_equal(
                mountinfo_find_mount_point(mi, "/tmp/mountinfo-sample/etc/enroot/enroot.conf", &e),
                0);
        assert_string_equal(e->root, "/tmp/mountinfo-sample/vol/..2026_12_02_14_00_00.123456789/"
                                     "enroot.conf//deleted");
        assert_int_equal(mountinfo_root_version(e->root, &version, &deleted), 1);
        assert_string_equal(version, "..2026_12_02_14_00_00.123456789");
        assert_true(deleted);

        assert_int_equal(mountinfo_find_mount_point(mi, "/tmp/mountinfo-sample/etc/x y", &e), 0);
        assert_string_equal(e->root, "/tmp/mountinfo-sample/vol/a b\\c/f\tt");

        /* /dev/shm is mounted twice, the second on top of the first */
        assert_int_equal(mountinfo_find_mount_point(mi, "/dev/shm", &e), 0);
        assert_true(e->mount_id == 61 + 1);
        assert_int_equal(mountinfo_find_mount_point(mi, "/tmp/mountinfo-sample/shared", &e), 0);
        assert_string_equal(e->optional, "shared:1");
}

static void test_k8s_sample(void **state) {
        _cleanup_(mountinfo_freep) MountInfo *mi = parse_file("k8s-slurmd-superseded.txt");
        static const struct {
                const char *path;
                const char *version;
                bool deleted;
        } want[] = {
                {"/etc/enroot/enroot.conf", "..2026_12_02_14_00_00.123456789", true},
                {"/etc/enroot/environ.d/99-aicr-defaults.env", "..2026_12_02_14_00_00.123456789",
                 true},
                {"/etc/slurm/slurm.conf", "..2026_11_30_09_12_44.000111222", false},
                {"/etc/hosts", NULL, false},
                {"/run/aicr/desired", NULL, false},
        };
        const MountInfoEntry *e;

        assert_int_equal(mi->n_malformed, 0);
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                _cleanup_free_ char *version = NULL;
                bool deleted;

                print_message("path: %s\n", want[i].path);
                assert_int_equal(mountinfo_find_mount_point(mi, want[i].path, &e), 0);
                assert_int_equal(mountinfo_root_version(e->root, &version, &deleted),
                                 want[i].version ? 1 : 0);
                if (want[i].version)
                        assert_string_equal(version, want[i].version);
                assert_int_equal(deleted, want[i].deleted);
        }
        /* a file inside a mounted directory is no mount point of its own */
        assert_int_equal(mountinfo_find_mount_point(mi, "/etc/enroot", &e), -ENOENT);
}

/* Version directories kubelet never writes, bytes a terminal would obey
 * among them: parsed, decoded, and refused as versions. */
static void test_hostile_sample(void **state) {
        _cleanup_(mountinfo_freep) MountInfo *mi = parse_file("k8s-hostile-version.txt");
        static const struct {
                const char *path;
                int ret;
                const char *root_has; /* a decoded byte the root holds */
                bool deleted;
        } want[] = {
                {"/etc/enroot/enroot.conf", -EBADMSG, "\n", true},
                {"/etc/enroot/environ.d/99-aicr-defaults.env", -EBADMSG, "\r", false},
                {"/etc/enroot/x\ny", 1, "\n", false},
        };

        assert_int_equal(mi->n_malformed, 0);
        assert_int_equal(mi->n_entries, 5);
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                _cleanup_free_ char *version = NULL;
                const MountInfoEntry *e;
                bool deleted = !want[i].deleted;

                assert_int_equal(mountinfo_find_mount_point(mi, want[i].path, &e), 0);
                assert_non_null(strstr(e->root, want[i].root_has));
                assert_int_equal(mountinfo_root_version(e->root, &version, &deleted), want[i].ret);
                assert_int_equal(deleted, want[i].deleted);
                if (want[i].ret == 1)
                        assert_string_equal(version, "..2026_12_02_14_00_00.123456789");
                else
                        assert_null(version);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_line_fields),
                cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_nul_and_blank_lines),
                cmocka_unit_test(test_empty),
                cmocka_unit_test(test_limit_bytes),
                cmocka_unit_test(test_limit_entries),
                cmocka_unit_test(test_limit_line),
                cmocka_unit_test(test_find_mount_point),
                cmocka_unit_test(test_find_id),
                cmocka_unit_test(test_root_version),
                cmocka_unit_test(test_kernel_sample),
                cmocka_unit_test(test_k8s_sample),
                cmocka_unit_test(test_hostile_sample),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
