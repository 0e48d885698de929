/* SPDX-License-Identifier: Apache-2.0 */
/*
 * volume_read() against real directories written by the real atomic writer
 * (tests/tools/atomic-writer.sh), stopped between each of its steps, and
 * against hostile layouts: ..data pointing elsewhere, loops, FIFOs, devices,
 * a sparse giant, unreadable files, a deleted directory, a writer flipping
 * versions while we read.
 */
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <cmocka.h>
#include "unit-skip.h"

#include "fileio.h"
#include "macro.h"
#include "volume.h"
#include "writer-child.h"

#define K_CONF    "enroot.conf"
#define K_ENV     "99-aicr-defaults.env"
#define K_EXTRA   "extra.conf"

#define V1_CONF   TEST_DATA_DIR "/volume/v1/enroot.conf"
#define V1_ENV    TEST_DATA_DIR "/volume/v1/99-aicr-defaults.env"
#define V2_CONF   TEST_DATA_DIR "/volume/v2/enroot.conf"
#define V2_EXTRA  TEST_DATA_DIR "/volume/v2/extra.conf"

#define MAX_BYTES (1024u * 1024u)

static const char *const payload_v1[] = {K_CONF "=" V1_CONF, K_ENV "=" V1_ENV, NULL};
/* v2 changes enroot.conf, adds extra.conf, drops the env file */
static const char *const payload_v2[] = {K_CONF "=" V2_CONF, K_EXTRA "=" V2_EXTRA, NULL};
static const char *const all_keys[] = {K_CONF, K_ENV, K_EXTRA};

static char top[] = "/tmp/test-volume.XXXXXX";
static char dir[sizeof top + 64];
static int dir_fd = -1;
static pid_t flipper = -1;

static int setup(void **state) {
        static unsigned n;

        (void) snprintf(dir, sizeof dir, "%s/d%u", top, n++);
        if (mkdir(dir, 0755) < 0)
                return -1;
        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return dir_fd < 0 ? -1 : 0;
}

static int teardown(void **state) {
        if (flipper > 0) {
                (void) kill(flipper, SIGKILL);
                (void) waitpid(flipper, NULL, 0);
                flipper = -1;
        }
        if (dir_fd >= 0)
                (void) close(dir_fd);
        dir_fd = -1;
        return 0;
}

static int group_setup(void **state) {
        return mkdtemp(top) && chmod(top, 0755) == 0 ? 0 : -1;
}

static int group_teardown(void **state) {
        char cmd[sizeof top + 16];
        (void) snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
        return system(cmd) == 0 ? 0 : -1;
}

static char *slurp(const char *path) {
        char *data = NULL;
        size_t len;
        assert_int_equal(read_file_at(AT_FDCWD, path, 0, MAX_BYTES, &data, &len), 0);
        return data;
}

static void write_at(int at, const char *name, const char *data) {
        int fd = openat(at, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, strlen(data)), (ssize_t) strlen(data));
        assert_int_equal(close(fd), 0);
}

/* Runs the writer to the end; returns the version it printed (new string). */
static char *write_version(const char *d, const char *const *payload) {
        char line[512];
        const char *v;

        assert_int_equal(writer_run(d, payload, line, sizeof line), 0);
        v = startswith(line, "version ");
        if (!v)
                v = startswith(line, "unchanged ");
        assert_non_null(v);
        return strdup(v);
}

static void assert_file(const VolumeSnapshot *s, const char *key, const char *expected) {
        const VolumeFile *f = volume_snapshot_find(s, key);

        assert_non_null(f);
        if (!expected) {
                assert_int_equal(f->error, -ENOENT);
                assert_null(f->data);
                return;
        }
        assert_int_equal(f->error, 0);
        assert_int_equal(f->len, strlen(expected));
        assert_memory_equal(f->data, expected, f->len);
}

static int lstat_at(const char *name) {
        struct stat st;
        return fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static int stat_at(const char *name) {
        struct stat st;
        return fstatat(dir_fd, name, &st, 0) < 0 ? -errno : 0;
}

/* ------------------------------------------------------------------------ */

static void test_plain_directory(void **state) {
        VolumeSnapshot *s = NULL;
        static char untouched[] = "untouched";
        char *version = untouched;
        const char *keys[] = {K_CONF, "link", "missing"};

        write_at(dir_fd, K_CONF, "ENROOT_MOUNT_HOME=yes\n");
        assert_int_equal(symlinkat(K_CONF, dir_fd, "link"), 0);

        assert_int_equal(volume_read(dir_fd, keys, ELEMENTSOF(keys), MAX_BYTES, &s), 0);
        assert_null(s->version);
        assert_int_equal(s->n_retries, 0);
        assert_int_equal(s->n_files, 3);
        assert_file(s, K_CONF, "ENROOT_MOUNT_HOME=yes\n");
        /* a plain directory's symlinks are not followed */
        assert_int_equal(volume_snapshot_find(s, "link")->error, -ELOOP);
        assert_file(s, "missing", NULL);
        assert_null(volume_snapshot_find(s, "not-asked"));
        s = volume_snapshot_free(s);

        assert_int_equal(volume_read_version(dir_fd, &version), 0);
        assert_null(version);

        /* no keys at all is a valid (empty) read */
        assert_int_equal(volume_read(dir_fd, NULL, 0, MAX_BYTES, &s), 0);
        assert_int_equal(s->n_files, 0);
        volume_snapshot_free(s);
}

static void test_arguments(void **state) {
        VolumeSnapshot *sentinel = (VolumeSnapshot *) 0x1, *s = sentinel;
        const char *keys[VOLUME_MAX_KEYS + 1];

        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                keys[i] = "k";

        assert_int_equal(volume_read(-1, keys, 1, MAX_BYTES, &s), -EINVAL);
        assert_int_equal(volume_read(dir_fd, NULL, 1, MAX_BYTES, &s), -EINVAL);
        assert_int_equal(volume_read(dir_fd, keys, 1, 0, &s), -EINVAL);
        /* the key count limit, crossed by one */
        assert_int_equal(volume_read(dir_fd, keys, VOLUME_MAX_KEYS + 1, MAX_BYTES, &s), -E2BIG);
        assert_ptr_equal(s, sentinel);
        assert_int_equal(volume_read(dir_fd, keys, VOLUME_MAX_KEYS, MAX_BYTES, &s), 0);
        assert_int_equal(s->n_files, VOLUME_MAX_KEYS);
        volume_snapshot_free(s);

        /* a regular file is not a directory */
        write_at(dir_fd, "file", "x");
        {
                int fd = openat(dir_fd, "file", O_RDONLY | O_CLOEXEC);
                s = sentinel;
                assert_int_equal(volume_read(fd, keys, 1, MAX_BYTES, &s), -ENOTDIR);
                assert_ptr_equal(s, sentinel);
                (void) close(fd);
        }
}

/* The writer stopped after each of its steps: the read is always one whole
 * version, the old one until the rename, the new one from the rename on,
 * whatever the top-level links say at that moment. */
static void test_atomic_writer_states(void **state) {
        static const struct {
                const char *step;
                bool flipped;      /* ..data names the new version */
                int extra_link;    /* lstat of the new key's top-level link */
                int env_link;      /* lstat of the removed key's link */
                int env_link_stat; /* stat through it */
                bool old_exists;   /* the old version directory */
                bool data_tmp;     /* ..data_tmp exists */
        } cases[] = {
                {"read", false, -ENOENT, 0, 0, true, false},
                {"mkdir", false, -ENOENT, 0, 0, true, false},
                {"write", false, -ENOENT, 0, 0, true, false},
                {"symlink", false, -ENOENT, 0, 0, true, true},
                /* flipped: the new key has no link yet, the removed one dangles */
                {"rename", true, -ENOENT, 0, -ENOENT, true, false},
                {"links", true, 0, 0, -ENOENT, true, false},
                {"prune", true, 0, -ENOENT, -ENOENT, true, false},
                {"cleanup", true, 0, -ENOENT, -ENOENT, false, false},
        };
        _cleanup_free_ char *v1_conf = slurp(V1_CONF), *v1_env = slurp(V1_ENV),
                            *v2_conf = slurp(V2_CONF), *v2_extra = slurp(V2_EXTRA);

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const char *args[] = {"--pause-after", cases[i].step, "60",
                                      payload_v2[0],   payload_v2[1], NULL};
                _cleanup_free_ char *old = NULL, *version = NULL;
                VolumeSnapshot *s = NULL;
                WriterChild c;
                char line[512];
                const char *v;

                /* a fresh directory holding v1 */
                assert_int_equal(teardown(state), 0);
                assert_int_equal(setup(state), 0);
                old = write_version(dir, payload_v1);

                assert_int_equal(writer_spawn(&c, dir, args), 0);
                assert_int_equal(writer_wait_line(&c, "paused ", 30000, line, sizeof line), 1);
                assert_string_equal(line + strlen("paused "), cases[i].step);
                print_message("paused after %-8s: ", cases[i].step);

                /* the layout the step promises (the writer is faithful) */
                assert_int_equal(lstat_at(K_EXTRA), cases[i].extra_link);
                assert_int_equal(lstat_at(K_ENV), cases[i].env_link);
                if (cases[i].env_link == 0)
                        assert_int_equal(stat_at(K_ENV), cases[i].env_link_stat);
                assert_int_equal(lstat_at(old) == 0, cases[i].old_exists);
                assert_int_equal(lstat_at("..data_tmp") == 0, cases[i].data_tmp);

                assert_int_equal(volume_read(dir_fd, all_keys, 3, MAX_BYTES, &s), 0);
                assert_non_null(s->version);
                assert_int_equal(volume_read_version(dir_fd, &version), 0);
                assert_string_equal(version, s->version);
                if (cases[i].flipped) {
                        assert_string_not_equal(s->version, old);
                        assert_file(s, K_CONF, v2_conf);
                        assert_file(s, K_EXTRA, v2_extra);
                        assert_file(s, K_ENV, NULL);
                } else {
                        assert_string_equal(s->version, old);
                        assert_file(s, K_CONF, v1_conf);
                        assert_file(s, K_ENV, v1_env);
                        assert_file(s, K_EXTRA, NULL);
                }
                print_message("version %s, %u retries\n", s->version, s->n_retries);
                s = volume_snapshot_free(s);

                assert_int_equal(writer_resume(&c), 0);
                assert_int_equal(writer_wait_line(&c, "version ", 30000, line, sizeof line), 1);
                v = line + strlen("version ");
                assert_int_equal(writer_finish(&c, 30000), 0);

                assert_int_equal(volume_read(dir_fd, all_keys, 3, MAX_BYTES, &s), 0);
                assert_string_equal(s->version, v);
                assert_file(s, K_CONF, v2_conf);
                assert_file(s, K_EXTRA, v2_extra);
                assert_file(s, K_ENV, NULL);
                volume_snapshot_free(s);
        }
}

/* The same payload again: nothing written, same version. */
static void test_noop_sync(void **state) {
        _cleanup_free_ char *v1 = write_version(dir, payload_v1);
        char line[512];
        VolumeSnapshot *s = NULL;

        assert_int_equal(writer_run(dir, payload_v1, line, sizeof line), 0);
        assert_true(startswith(line, "unchanged "));
        assert_string_equal(line + strlen("unchanged "), v1);
        assert_int_equal(volume_read(dir_fd, all_keys, 3, MAX_BYTES, &s), 0);
        assert_string_equal(s->version, v1);
        volume_snapshot_free(s);
}

/* ..data that does not name a version directory inside DIR. */
static void test_bad_data_link(void **state) {
        char long_target[VOLUME_MAX_VERSION_LENGTH + 50];
        char at_limit[VOLUME_MAX_VERSION_LENGTH + 1];
        const struct {
                const char *target;
                int error;         /* from volume_read() */
                int version_error; /* from volume_read_version() */
        } cases[] = {
                {"/etc", -EXDEV, -EXDEV},
                {"../elsewhere", -EXDEV, -EXDEV},
                {"..v1/../..", -EXDEV, -EXDEV},
                {"..v1/", -EXDEV, -EXDEV},
                {"v1", -EXDEV, -EXDEV},
                {"..", -EXDEV, -EXDEV},
                {".", -EXDEV, -EXDEV},
                {long_target, -ENAMETOOLONG, -ENAMETOOLONG},
                /* the longest valid name: accepted (and missing) */
                {at_limit, -ESTALE, 0},
                {"/"
                 "................................................................"
                 "................................................................"
                 "................................................................"
                 "................................................................",
                 -EXDEV, -EXDEV},
                /* a loop: ..data -> ..data */
                {"..data", -ELOOP, 0},
                /* a loop: ..loop-a -> ..loop-b -> ..loop-a */
                {"..loop-a", -ELOOP, 0},
                {"..file", -ENOTDIR, 0},
                /* dangling: every retry finds it missing */
                {"..missing", -ESTALE, 0},
        };

        memset(long_target, 'x', sizeof long_target - 1);
        long_target[0] = long_target[1] = '.';
        long_target[sizeof long_target - 1] = '\0';
        memset(at_limit, 'x', sizeof at_limit - 1);
        at_limit[0] = at_limit[1] = '.';
        at_limit[sizeof at_limit - 1] = '\0';

        assert_int_equal(symlinkat("..loop-b", dir_fd, "..loop-a"), 0);
        assert_int_equal(symlinkat("..loop-a", dir_fd, "..loop-b"), 0);
        write_at(dir_fd, "..file", "not a directory\n");

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                VolumeSnapshot *sentinel = (VolumeSnapshot *) 0x1, *s = sentinel;
                char *version = NULL;
                int r;

                (void) unlinkat(dir_fd, "..data", 0);
                assert_int_equal(symlinkat(cases[i].target, dir_fd, "..data"), 0);

                r = volume_read(dir_fd, all_keys, 3, MAX_BYTES, &s);
                print_message("..data -> %.40s%s: %d (%s)\n", cases[i].target,
                              strlen(cases[i].target) > 40 ? "..." : "", r,
                              volume_error_to_string(r) ?: strerror(-r));
                assert_int_equal(r, cases[i].error);
                assert_ptr_equal(s, sentinel);

                r = volume_read_version(dir_fd, &version);
                assert_int_equal(r, cases[i].version_error);
                if (r == 0) {
                        assert_string_equal(version, cases[i].target);
                        free(version);
                }
        }

        /* ..data that is not a link at all */
        assert_int_equal(unlinkat(dir_fd, "..data", 0), 0);
        assert_int_equal(mkdirat(dir_fd, "..data", 0755), 0);
        {
                VolumeSnapshot *s = NULL;
                char *version = NULL;
                assert_int_equal(volume_read(dir_fd, all_keys, 3, MAX_BYTES, &s), -ENOLINK);
                assert_int_equal(volume_read_version(dir_fd, &version), -ENOLINK);
        }
}

/* Sets a file's atime far in the past so that any read(2) moves it
 * (relatime updates an atime older than mtime). */
static void age_atime(int at, const char *name) {
        struct timespec ts[2] = {{.tv_sec = 1000000}, {.tv_nsec = UTIME_NOW}};
        assert_int_equal(utimensat(at, name, ts, 0), 0);
}

static time_t atime_of(int at, const char *name) {
        struct stat st;
        assert_int_equal(fstatat(at, name, &st, 0), 0);
        return st.st_atim.tv_sec;
}

/* Whatever sits in place of a key is refused on its own, without blocking,
 * without reading a byte too many, and without harming the other keys. */
static void test_key_types(void **state) {
        enum { CAP = 4096 };
        _cleanup_free_ char *v1 = write_version(dir, payload_v1);
        _cleanup_close_ int vfd = -EBADF;
        char at_cap[CAP + 2];
        bool have_device, atime_works;
        struct {
                const char *key;
                int error;
        } cases[] = {
                {K_CONF, 0},          {"fifo", -EBADFD},
                {"device", -EBADFD},  {"directory", -EISDIR},
                {"symlink", -ELOOP},  {"sparse-1GiB", -EFBIG},
                {"at-cap", 0},        {"over-cap", -EFBIG},
                {"missing", -ENOENT}, {"", -EINVAL},
                {".", -EINVAL},       {"..", -EINVAL},
                {"..data", -EINVAL},  {"..hidden", -EINVAL},
                {"a/b", -EINVAL},     {"../escape", -EINVAL},
        };
        const char *keys[ELEMENTSOF(cases)];
        VolumeSnapshot *s = NULL;
        int fd;

        vfd = openat(dir_fd, v1, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(vfd >= 0);

        assert_int_equal(mkfifoat(vfd, "fifo", 0644), 0);
        have_device = mknodat(vfd, "device", S_IFCHR | 0644, makedev(1, 3)) == 0;
        if (!have_device)
                skip_part("device-row",
                          "mknod(2) of /dev/null's numbers failed: %s (needs "
                          "CAP_MKNOD): the device row is not checked",
                          strerror(errno));
        assert_int_equal(mkdirat(vfd, "directory", 0755), 0);
        assert_int_equal(symlinkat(K_CONF, vfd, "symlink"), 0);

        fd = openat(vfd, "sparse-1GiB", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, 1024 * 1024 * 1024), 0);
        assert_int_equal(close(fd), 0);

        memset(at_cap, 'x', sizeof at_cap);
        at_cap[CAP] = '\0';
        write_at(vfd, "at-cap", at_cap);
        at_cap[CAP] = 'x';
        at_cap[CAP + 1] = '\0';
        write_at(vfd, "over-cap", at_cap);

        /* Proof that the giant is never read: its atime. A control file read
         * the ordinary way shows whether this mount updates atimes at all. */
        age_atime(vfd, "sparse-1GiB");
        age_atime(vfd, "over-cap");
        age_atime(vfd, K_CONF);
        {
                char *data;
                size_t len;
                assert_int_equal(read_file_at(vfd, K_CONF, 0, CAP, &data, &len), 0);
                free(data);
        }
        atime_works = atime_of(vfd, K_CONF) > 1000000;
        if (!atime_works)
                print_message("NOTE: this mount does not update atimes (noatime): the "
                              "never-read check is limited to the error code\n");

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                keys[i] = cases[i].key;
        assert_int_equal(volume_read(dir_fd, keys, ELEMENTSOF(keys), CAP, &s), 0);
        assert_string_equal(s->version, v1);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const VolumeFile *f = &s->files[i];

                assert_string_equal(f->key, cases[i].key);
                if (streq(cases[i].key, "device") && !have_device) {
                        assert_int_equal(f->error, -ENOENT);
                        continue;
                }
                print_message("%-12s -> %d %s\n", cases[i].key, f->error,
                              f->error ? volume_error_to_string(f->error) ?: strerror(-f->error)
                                       : "");
                assert_int_equal(f->error, cases[i].error);
                if (f->error)
                        assert_null(f->data);
        }
        assert_int_equal(s->files[6].len, CAP);
        volume_snapshot_free(s);

        if (atime_works) {
                assert_int_equal(atime_of(vfd, "sparse-1GiB"), 1000000);
                assert_int_equal(atime_of(vfd, "over-cap"), 1000000);
        }
}

typedef struct NobodyRead {
        int r;
        int errors[3]; /* per key of all_keys, when r == 0 */
} NobodyRead;

/* volume_read() of all_keys in a child: as uid/gid 65534 when we are root
 * (root reads everything), as ourselves otherwise. Returns false when
 * privileges cannot be dropped. */
static bool read_as_nobody(NobodyRead *ret) {
        NobodyRead res = {};
        int p[2], status;
        pid_t pid;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                VolumeSnapshot *s = NULL;

                if (geteuid() == 0 &&
                    (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
                     setresuid(65534, 65534, 65534) < 0))
                        _exit(77);
                res.r = volume_read(dir_fd, all_keys, 3, MAX_BYTES, &s);
                for (size_t i = 0; res.r == 0 && i < 3; i++)
                        res.errors[i] = s->files[i].error;
                volume_snapshot_free(s);
                _exit(write(p[1], &res, sizeof res) == sizeof res ? 0 : 1);
        }
        (void) close(p[1]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
                (void) close(p[0]);
                return false;
        }
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(read(p[0], &res, sizeof res), (ssize_t) sizeof res);
        (void) close(p[0]);
        *ret = res;
        return true;
}

/* Permission denied comes back per key (a file) or for the whole read (the
 * version directory). Root reads everything: the reads run as nobody in a
 * child, which is as real as it gets. */
static void test_permission_denied(void **state) {
        _cleanup_free_ char *v1 = write_version(dir, payload_v1);
        _cleanup_close_ int vfd = openat(dir_fd, v1, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        NobodyRead res;

        assert_true(vfd >= 0);
        assert_int_equal(fchmodat(vfd, K_ENV, 0000, 0), 0);
        if (!read_as_nobody(&res))
                skip_test("permission-denied", "running as root and cannot drop to uid 65534, so "
                                               "permissions cannot be denied");
        assert_int_equal(res.r, 0);
        assert_int_equal(res.errors[0], 0);       /* enroot.conf */
        assert_int_equal(res.errors[1], -EACCES); /* the env file, mode 0000 */
        assert_int_equal(res.errors[2], -ENOENT); /* extra.conf: not in v1 */

        /* 0000, not 0700: when the tests do not run as root, the reader owns it */
        assert_int_equal(fchmod(vfd, 0000), 0);
        assert_true(read_as_nobody(&res));
        assert_int_equal(res.r, -EACCES);
        assert_int_equal(fchmod(vfd, 0755), 0);
}

/* The directory deleted and made again (a volume remount): a descriptor of
 * the old one says so instead of "every key missing". */
static void test_directory_recreated(void **state) {
        _cleanup_free_ char *v1 = write_version(dir, payload_v1), *v2 = NULL;
        _cleanup_free_ char *v2_conf = slurp(V2_CONF);
        _cleanup_close_ int fd = -EBADF;
        char cmd[sizeof dir + 32];
        VolumeSnapshot *s = NULL;
        char *version = NULL;

        assert_int_equal(volume_read_version(dir_fd, &version), 0);
        assert_string_equal(version, v1);
        free(version);
        version = NULL;

        (void) snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(mkdir(dir, 0755), 0);
        v2 = write_version(dir, payload_v2);

        assert_int_equal(volume_read(dir_fd, all_keys, 3, MAX_BYTES, &s), -EIDRM);
        assert_int_equal(volume_read_version(dir_fd, &version), -EIDRM);

        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(volume_read(fd, all_keys, 3, MAX_BYTES, &s), 0);
        assert_string_equal(s->version, v2);
        assert_file(s, K_CONF, v2_conf);
        volume_snapshot_free(s);
}

/* kubelet's sequence in C, as fast as it goes (with a short breath between
 * updates), so versions vanish under the reader for real. Each key of
 * version ..vN holds "N\n". */
static _Noreturn void run_flipper(int at) {
        static const char *const flip_keys[] = {"a", "b"};
        char prev[64] = "", name[64], buf[32];

        for (unsigned long n = 1;; n++) {
                (void) snprintf(name, sizeof name, "..v%lu", n);
                (void) snprintf(buf, sizeof buf, "%lu\n", n);
                if (fast_write(at, name, flip_keys, 2, buf, prev[0] ? prev : NULL) < 0)
                        _exit(1);
                memcpy(prev, name, sizeof prev);
                (void) usleep(200);
        }
}

static void test_versions_vanish_during_reads(void **state) {
        const char *keys[] = {"a", "b"};
        unsigned long reads = 0, retried = 0, retries = 0, stale = 0;
        struct timespec start, now;
        char *version = NULL;

        flipper = fork();
        assert_true(flipper >= 0);
        if (flipper == 0)
                run_flipper(dir_fd);

        /* wait for the first version */
        for (int i = 0; i < 1000 && volume_read_version(dir_fd, &version) == 0 && !version; i++)
                usleep(1000);
        free(version);

        clock_gettime(CLOCK_MONOTONIC, &start);
        do {
                VolumeSnapshot *s = NULL;
                int r = volume_read(dir_fd, keys, 2, 64, &s);

                /* before the continue below: the loop's condition reads it */
                clock_gettime(CLOCK_MONOTONIC, &now);
                reads++;
                if (r == -ESTALE) {
                        /* documented: the writer outran every retry */
                        stale++;
                        continue;
                }
                assert_int_equal(r, 0);
                assert_non_null(s->version);
                /* one version, never two: both keys and the id agree */
                assert_int_equal(s->files[0].error, 0);
                assert_int_equal(s->files[1].error, 0);
                assert_string_equal(s->files[0].data, s->files[1].data);
                assert_int_equal(strtoul(s->version + 3, NULL, 10),
                                 strtoul(s->files[0].data, NULL, 10));
                if (s->n_retries > 0)
                        retried++;
                retries += s->n_retries;
                volume_snapshot_free(s);
        } while (now.tv_sec - start.tv_sec < 2);

        print_message("%lu reads during continuous flips: %lu needed a retry (%lu retries in "
                      "all), %lu gave up with ESTALE, none mixed versions\n",
                      reads, retried, retries, stale);
        assert_true(reads > 100);
        /* every read gave up at most rarely: the retries are what makes it work */
        assert_true(stale * 100 <= reads);
        assert_true(retried > 0);
}

static void test_error_strings(void **state) {
        const int codes[] = {EIDRM, ENOLINK, EXDEV,  ENAMETOOLONG, ESTALE, E2BIG,
                             EFBIG, EBADFD,  EISDIR, ELOOP,        EINVAL};

        for (size_t i = 0; i < ELEMENTSOF(codes); i++) {
                assert_non_null(volume_error_to_string(-codes[i]));
                assert_string_equal(volume_error_to_string(-codes[i]),
                                    volume_error_to_string(codes[i]));
        }
        assert_null(volume_error_to_string(-ENOMEM));
        assert_null(volume_error_to_string(0));

        assert_true(volume_version_is_valid("..2024_05_01_12_00_00.123456789"));
        assert_false(volume_version_is_valid(".."));
        assert_false(volume_version_is_valid("..a/b"));
        assert_false(volume_version_is_valid("a"));
        assert_false(volume_version_is_valid(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_plain_directory, setup, teardown),
                cmocka_unit_test_setup_teardown(test_arguments, setup, teardown),
                cmocka_unit_test_setup_teardown(test_atomic_writer_states, setup, teardown),
                cmocka_unit_test_setup_teardown(test_noop_sync, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_data_link, setup, teardown),
                cmocka_unit_test_setup_teardown(test_key_types, setup, teardown),
                cmocka_unit_test_setup_teardown(test_permission_denied, setup, teardown),
                cmocka_unit_test_setup_teardown(test_directory_recreated, setup, teardown),
                cmocka_unit_test_setup_teardown(test_versions_vanish_during_reads, setup, teardown),
                cmocka_unit_test(test_error_strings),
        };

        return unit_skip_status(cmocka_run_group_tests(tests, group_setup, group_teardown));
}
