/* SPDX-License-Identifier: Apache-2.0 */
/* root-open.h: opening a path inside a directory as if it were "/". The
 * kernel's openat2() and the fallback walk must agree, neither may leave the
 * root, and root_open_regular() opens nothing but a regular file. Where
 * openat2() is unavailable (an old kernel, valgrind 3.19), root_open() is the
 * walk and the checks run on it. */
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "macro.h"
#include "root-open.h"

static char dir[] = "/tmp/test-root-open.XXXXXX";
static int dir_fd = -1;
static int root_fd = -1; /* dir/root; dir/etc/hostname lies just outside it */

/* ------------------------------------------------------------------------ */
/* Helpers */

static void write_at(int at, const char *name, const char *data) {
        int fd = openat(at, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, strlen(data)), (ssize_t) strlen(data));
        assert_int_equal(close(fd), 0);
}

static void mkdirs_at(int at, const char *path) {
        char buf[PATH_MAX];

        assert_true(strlen(path) < sizeof buf);
        strcpy(buf, path);
        for (char *p = buf + 1;; p++)
                if (*p == '/' || *p == '\0') {
                        char c = *p;
                        *p = '\0';
                        assert_true(mkdirat(at, buf, 0755) == 0 || errno == EEXIST);
                        if (c == '\0')
                                break;
                        *p = c;
                }
}

static int setup(void **state) {
        if (!mkdtemp(dir))
                return -1;
        dir_fd = open(dir, O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0)
                return -1;
        mkdirs_at(dir_fd, "root/etc/enroot");
        mkdirs_at(dir_fd, "root/etc/dir");
        mkdirs_at(dir_fd, "etc");
        root_fd = openat(dir_fd, "root", O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0)
                return -1;
        write_at(dir_fd, "etc/hostname", "outside\n"); /* one ".." above the root */
        write_at(root_fd, "etc/enroot/enroot.conf", "ENROOT_MOUNT_HOME=yes\n");
        write_at(root_fd, "etc/hostname", "inside\n");
        if (mkfifoat(root_fd, "etc/fifo", 0644) < 0)
                return -1;
        /* links that would leave the root if they were resolved from ours */
        if (symlinkat("/etc/hostname", root_fd, "etc/abs-link") < 0 ||
            symlinkat("../../../../../../../../etc/hostname", root_fd, "etc/up-link") < 0 ||
            symlinkat("../../etc/hostname", root_fd, "etc/up1-link") < 0 ||
            symlinkat("hostname", root_fd, "etc/rel-link") < 0 ||
            symlinkat("/etc/enroot", root_fd, "etc/dir-link") < 0 ||
            symlinkat("/..", root_fd, "etc/parent-link") < 0 ||
            symlinkat("loop", root_fd, "etc/loop") < 0 ||
            symlinkat("/nonexistent", root_fd, "etc/dangling") < 0 ||
            symlinkat("/etc/fifo", root_fd, "etc/fifo-link") < 0 ||
            symlinkat("/etc/enroot/./././././././././././././././././././././././././././././././."
                      "/./././././././././././././././././././././././././././././././././././.",
                      root_fd, "etc/long-link") < 0)
                return -1;
        /* Linux refuses an empty link target (ENOENT); other systems may not */
        (void) symlinkat("", root_fd, "etc/empty-link");
        return 0;
}

static int teardown(void **state) {
        char cmd[sizeof dir + 16];

        (void) snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        (void) close(root_fd);
        (void) close(dir_fd);
        return system(cmd) == 0 ? 0 : -1;
}

/* Whether this kernel, or this valgrind (3.19 does not know openat2), offers
 * openat2(). Without it, root_open() is the fallback walk. */
static bool have_openat2(void) {
        static int cached = -1;

        if (cached < 0) {
                struct open_how how = {.flags = O_PATH | O_CLOEXEC};
                long fd = syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof how);

                cached = fd >= 0;
                if (fd >= 0)
                        (void) close((int) fd);
                else
                        print_message("note: openat2() is not available here (%s): testing "
                                      "the fallback walk in its place\n",
                                      strerror(errno));
        }
        return cached;
}

static RootResolve expected_resolve(void) {
        return have_openat2() ? ROOT_RESOLVE_OPENAT2 : ROOT_RESOLVE_WALK;
}

static void assert_same_inode(int fd, int at, const char *path) {
        struct stat a, b;

        assert_int_equal(fstat(fd, &a), 0);
        assert_int_equal(fstatat(at, path, &b, AT_SYMLINK_NOFOLLOW), 0);
        assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
}

static void assert_same_open(int dfd, const char *path) {
        _cleanup_close_ int a = -EBADF, b = -EBADF;
        const RootResolve unset = (RootResolve) -1;
        RootResolve how = unset;
        struct stat sa, sb;

        print_message("path: \"%s\"\n", path);
        a = root_open(dfd, path, O_RDONLY | O_NONBLOCK, &how);
        b = root_open_walk(dfd, path, O_RDONLY | O_NONBLOCK);
        /* written on success only */
        assert_int_equal(how, a >= 0 ? expected_resolve() : unset);
        if (a < 0 || b < 0) {
                assert_int_equal(b, a);
                return;
        }
        assert_int_equal(fstat(a, &sa), 0);
        assert_int_equal(fstat(b, &sb), 0);
        assert_true(sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino);
        assert_int_equal(fcntl(b, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
}

static void test_walk_agrees(void **state) {
        static const char *const paths[] = {
                "/etc/enroot/enroot.conf",
                "etc/enroot/enroot.conf",
                "/etc/abs-link",
                "/etc/up-link",
                "/etc/rel-link",
                "/etc/dir-link/enroot.conf",
                "/etc/dir-link/",
                "/etc/dir-link/../hostname",
                "/../../../etc/hostname",
                "/etc/./enroot/../hostname",
                "/etc/enroot/..",
                "/",
                "",
                "..",
                "/etc/",
                "/etc/loop",
                "/etc/dangling",
                "/etc/empty-link",
                "/etc/missing",
                "/etc/hostname/",
                "/etc/hostname/x",
                "/etc/abs-link/",
                "/etc/fifo",
        };

        for (size_t i = 0; i < ELEMENTSOF(paths); i++)
                assert_same_open(root_fd, paths[i]);
}

static void test_walk_limits(void **state) {
        char name[32], target[32], *path;
        size_t len;
        int fd;

        /* ROOT_OPEN_MAX_SYMLINKS: a chain of exactly that many links resolves,
         * one more is a loop, for the kernel and for the walk alike */
        for (unsigned i = 0; i <= ROOT_OPEN_MAX_SYMLINKS; i++) {
                (void) snprintf(name, sizeof name, "etc/chain%u", i);
                if (i == 0)
                        strcpy(target, "hostname");
                else
                        (void) snprintf(target, sizeof target, "chain%u", i - 1);
                assert_int_equal(symlinkat(target, root_fd, name), 0);
        }
        (void) snprintf(name, sizeof name, "/etc/chain%u", ROOT_OPEN_MAX_SYMLINKS - 1);
        assert_same_open(root_fd, name);
        fd = root_open_walk(root_fd, name, O_RDONLY);
        assert_true(fd >= 0);
        (void) close(fd);
        (void) snprintf(name, sizeof name, "/etc/chain%u", ROOT_OPEN_MAX_SYMLINKS);
        assert_same_open(root_fd, name);
        assert_int_equal(root_open_walk(root_fd, name, O_RDONLY), -ELOOP);

        /* ROOT_OPEN_MAX_DEPTH directory levels are held open, one more is refused */
        path = malloc(2 * (ROOT_OPEN_MAX_DEPTH + 1) + 8);
        assert_non_null(path);
        len = 0;
        for (unsigned i = 0; i < ROOT_OPEN_MAX_DEPTH + 1; i++) {
                path[len++] = 'd';
                path[len] = '\0';
                assert_true(mkdirat(dir_fd, path, 0755) == 0 || errno == EEXIST);
                path[len++] = '/';
        }
        strcpy(path + len, "f");
        write_at(dir_fd, path, "deep\n");
        /* "d/.../d/f" with ROOT_OPEN_MAX_DEPTH + 1 directories */
        assert_int_equal(root_open_walk(dir_fd, path, O_RDONLY), -ENAMETOOLONG);
        /* one level less: open d first, then the rest below it */
        {
                _cleanup_close_ int d = openat(dir_fd, "d", O_PATH | O_DIRECTORY | O_CLOEXEC);
                assert_true(d >= 0);
                fd = root_open_walk(d, path + 2, O_RDONLY);
                assert_true(fd >= 0);
                (void) close(fd);
        }
        free(path);

        /* ROOT_OPEN_MAX_PATH_LENGTH: a longer path is refused before any lookup */
        path = malloc(ROOT_OPEN_MAX_PATH_LENGTH + 1);
        assert_non_null(path);
        memset(path, '/', ROOT_OPEN_MAX_PATH_LENGTH);
        path[ROOT_OPEN_MAX_PATH_LENGTH] = '\0';
        assert_int_equal(root_open_walk(root_fd, path, O_RDONLY), -ENAMETOOLONG);
        path[ROOT_OPEN_MAX_PATH_LENGTH - 1] = '\0'; /* "////...": the root itself */
        fd = root_open_walk(root_fd, path, O_RDONLY | O_DIRECTORY);
        assert_true(fd >= 0);
        (void) close(fd);
        free(path);

        /* ... also once a link's target is spliced in (the kernel has no such
         * limit: the walk refuses what openat2() would open) */
        path = malloc(ROOT_OPEN_MAX_PATH_LENGTH);
        assert_non_null(path);
        strcpy(path, "etc/long-link");
        len = strlen(path);
        while (len + 2 + strlen("/enroot.conf") < ROOT_OPEN_MAX_PATH_LENGTH) {
                memcpy(path + len, "/.", 2);
                len += 2;
        }
        strcpy(path + len, "/enroot.conf");
        if (have_openat2()) {
                fd = root_open(root_fd, path, O_RDONLY, NULL);
                assert_true(fd >= 0);
                (void) close(fd);
        }
        assert_int_equal(root_open_walk(root_fd, path, O_RDONLY), -ENAMETOOLONG);
        free(path);

        assert_int_equal(root_open_walk(root_fd, "/etc/x", O_RDONLY | O_CREAT), -EINVAL);
        assert_int_equal(root_open(root_fd, "/etc/x", O_RDONLY | O_CREAT, NULL), -EINVAL);
}

/* The walk reads a magic link as text inside the root; the kernel refuses
 * it (RESOLVE_NO_MAGICLINKS). Neither leaves the root. */
static void test_magic_links(void **state) {
        _cleanup_close_ int slash = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int fd = -EBADF;
        struct stat a, b;

        assert_true(slash >= 0);
        if (have_openat2())
                assert_int_equal(root_open(slash, "/proc/self/root/etc/passwd", O_RDONLY, NULL),
                                 -ELOOP);
        fd = root_open_walk(slash, "/proc/self/root/etc/passwd", O_RDONLY);
        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &a), 0);
        assert_int_equal(stat("/etc/passwd", &b), 0);
        assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);

        /* inside a root, the text "/" of /proc/self/root is that root */
        mkdirs_at(root_fd, "proc/self");
        assert_int_equal(symlinkat("/", root_fd, "proc/self/root"), 0);
        (void) close(fd);
        fd = root_open_walk(root_fd, "/proc/self/root/etc/hostname", O_RDONLY);
        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &a), 0);
        assert_int_equal(fstatat(root_fd, "etc/hostname", &b, 0), 0);
        assert_true(a.st_ino == b.st_ino);
}

/* ------------------------------------------------------------------------ */
/* The contract: never out of the root */

/* Each path climbs, or jumps to "/", on its way to etc/hostname: both ways
 * of opening find the root's own, never dir/etc/hostname one level up nor
 * the machine's /etc/hostname. */
static void test_stays_inside(void **state) {
        static const char *const paths[] = {
                "/../etc/hostname",
                "../etc/hostname",
                "/etc/../../etc/hostname",
                "/etc/abs-link",
                "/etc/up-link",
                "/etc/up1-link",
                "/etc/parent-link/etc/hostname",
                "/etc/dir-link/../../../etc/hostname",
        };

        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                _cleanup_close_ int a = -EBADF, b = -EBADF;
                RootResolve how = (RootResolve) -1;

                print_message("path: \"%s\"\n", paths[i]);
                a = root_open(root_fd, paths[i], O_RDONLY, &how);
                assert_true(a >= 0);
                assert_int_equal(how, expected_resolve());
                assert_same_inode(a, root_fd, "etc/hostname");
                b = root_open_walk(root_fd, paths[i], O_RDONLY);
                assert_true(b >= 0);
                assert_same_inode(b, root_fd, "etc/hostname");
        }

        /* ".." of the root is the root, as in a chroot */
        for (unsigned walk = 0; walk < 2; walk++) {
                _cleanup_close_ int fd = walk ? root_open_walk(root_fd, "/..", O_PATH)
                                              : root_open(root_fd, "/..", O_PATH, NULL);
                assert_true(fd >= 0);
                assert_same_inode(fd, dir_fd, "root");
        }
}

/* ------------------------------------------------------------------------ */
/* The contract: nothing but a regular file is opened */

static void test_regular_only(void **state) {
        _cleanup_close_ int slash = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        RootResolve how = (RootResolve) -1;
        struct statx sx;
        bool have_stat = true;
        char buf[16];
        int fd;

        fd = root_open_regular(root_fd, "/etc/abs-link", &how, &sx, &have_stat);
        assert_true(fd >= 0);
        assert_true(have_stat);
        assert_int_equal(how, expected_resolve());
        assert_true(S_ISREG(sx.stx_mode));
        assert_same_inode(fd, root_fd, "etc/hostname");
        assert_int_equal(read(fd, buf, sizeof buf), 7);
        assert_memory_equal(buf, "inside\n", 7);
        assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
        assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
        (void) close(fd);

        /* refused, with the facts of what is there */
        assert_int_equal(root_open_regular(root_fd, "/etc/dir", NULL, &sx, &have_stat), -EISDIR);
        assert_true(have_stat);
        assert_true(S_ISDIR(sx.stx_mode));
        /* a FIFO, directly or through a link: refused without opening it (an
         * open for reading would block until a writer comes) */
        assert_int_equal(root_open_regular(root_fd, "/etc/fifo", NULL, &sx, &have_stat), -EBADFD);
        assert_true(have_stat);
        assert_true(S_ISFIFO(sx.stx_mode));
        assert_int_equal(root_open_regular(root_fd, "/etc/fifo-link", NULL, &sx, &have_stat),
                         -EBADFD);
        assert_true(have_stat);

        /* what cannot be resolved leaves no facts */
        assert_int_equal(root_open_regular(root_fd, "/etc/missing", NULL, &sx, &have_stat),
                         -ENOENT);
        assert_false(have_stat);
        assert_int_equal(root_open_regular(root_fd, "/etc/loop", NULL, &sx, &have_stat), -ELOOP);
        assert_false(have_stat);

        /* a device, and kernel state on procfs */
        assert_true(slash >= 0);
        assert_int_equal(root_open_regular(slash, "/dev/null", NULL, &sx, &have_stat), -EBADFD);
        assert_true(have_stat);
        assert_true(S_ISCHR(sx.stx_mode));
        assert_int_equal(root_open_regular(slash, "/proc/self/environ", NULL, &sx, &have_stat),
                         -EMEDIUMTYPE);
        assert_true(have_stat);
        assert_int_equal(sx.stx_dev_major, 0);
        /* procfs, sysfs and tmpfs all have device major 0; of the three,
         * only tmpfs holds files to read */
        assert_int_equal(
                root_open_regular(slash, "/sys/kernel/uevent_seqnum", NULL, &sx, &have_stat),
                -EMEDIUMTYPE);
        assert_true(have_stat);
        assert_int_equal(sx.stx_dev_major, 0);
        {
                char path[] = "/dev/shm/test-root-open.XXXXXX";
                _cleanup_close_ int tmp = mkstemp(path);

                assert_true(tmp >= 0);
                assert_int_equal(write(tmp, "on tmpfs\n", 9), 9);
                fd = root_open_regular(slash, path, NULL, &sx, &have_stat);
                assert_int_equal(unlink(path), 0);
                assert_true(fd >= 0);
                assert_int_equal(sx.stx_dev_major, 0);
                assert_int_equal(sx.stx_size, 9);
                assert_int_equal(read(fd, buf, sizeof buf), 9);
                assert_memory_equal(buf, "on tmpfs\n", 9);
                (void) close(fd);
        }
}

/* A child after fork() reopens its own file: /proc/self/fd, kept open from
 * an earlier call, would name the parent's descriptors there. The parent
 * holds another file at the very number the child's O_PATH fd gets. */
static void test_after_fork(void **state) {
        struct statx sx;
        bool have_stat;
        int fd, go[2], status;
        char c = 0;
        pid_t pid;

        fd = root_open_regular(root_fd, "/etc/abs-link", NULL, &sx, &have_stat);
        assert_true(fd >= 0);
        (void) close(fd);

        assert_int_equal(pipe2(go, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                char buf[16];

                if (read(go[0], &c, 1) != 1)
                        _exit(2);
                fd = root_open_regular(root_fd, "/etc/abs-link", NULL, &sx, &have_stat);
                if (fd < 0)
                        _exit(3);
                _exit(read(fd, buf, sizeof buf) == 7 && memcmp(buf, "inside\n", 7) == 0 ? 0 : 4);
        }
        /* the lowest free number: the one the child's O_PATH fd takes (the
         * two tables are alike until then) */
        fd = openat(root_fd, "etc/dir", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(write(go[1], &c, 1), 1);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        (void) close(fd);
        (void) close(go[0]);
        (void) close(go[1]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        (void) state;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_walk_agrees),  cmocka_unit_test(test_walk_limits),
                cmocka_unit_test(test_magic_links),  cmocka_unit_test(test_stays_inside),
                cmocka_unit_test(test_regular_only), cmocka_unit_test(test_after_fork),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
