/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "fileio.h"
#include "macro.h"

static char dir[] = "/tmp/test-fileio.XXXXXX";
static int dir_fd = -1;

static int setup(void **state) {
        if (!mkdtemp(dir))
                return -1;
        dir_fd = open(dir, O_DIRECTORY | O_CLOEXEC);
        return dir_fd < 0 ? -1 : 0;
}

static int teardown(void **state) {
        char cmd[sizeof dir + 16];
        (void) snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        (void) close(dir_fd);
        return system(cmd) == 0 ? 0 : -1;
}

static void write_at(const char *name, const char *data, size_t len) {
        int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, len), (ssize_t) len);
        assert_int_equal(close(fd), 0);
}

static void test_regular(void **state) {
        _cleanup_free_ char *data = NULL;
        size_t len = 0;

        write_at("a", "x\0y", 3);
        assert_int_equal(read_file_at(dir_fd, "a", 0, 3, &data, &len), 0);
        assert_int_equal(len, 3);
        assert_memory_equal(data, "x\0y", 4);
}

static void test_limits_and_types(void **state) {
        char *data = NULL;
        size_t len = 0;

        write_at("big", "0123456789", 10);
        assert_int_equal(read_file_at(dir_fd, "big", 0, 9, &data, &len), -EFBIG);
        assert_null(data);
        assert_int_equal(read_file_at(dir_fd, "missing", 0, 9, &data, &len), -ENOENT);
        assert_int_equal(mkdirat(dir_fd, "sub", 0755), 0);
        assert_int_equal(read_file_at(dir_fd, "sub", 0, 9, &data, &len), -EISDIR);
        /* a FIFO never blocks the caller */
        assert_int_equal(mkfifoat(dir_fd, "fifo", 0644), 0);
        assert_int_equal(read_file_at(dir_fd, "fifo", 0, 9, &data, &len), -EBADFD);
        /* O_NOFOLLOW refuses a symlink */
        assert_int_equal(symlinkat("big", dir_fd, "link"), 0);
        assert_int_equal(read_file_at(dir_fd, "link", O_NOFOLLOW, 100, &data, &len), -ELOOP);
        assert_int_equal(read_file_at(dir_fd, "link", 0, 100, &data, &len), 0);
        assert_int_equal(len, 10);
        free(data);
}

/* Whole files of every size around the first buffer (4 KiB), empty ones,
 * and procfs files, whose st_size (0) says nothing of their length. */
static void test_sizes(void **state) {
        static const size_t sizes[] = {0, 1, 4093, 4094, 4095, 4096, 4097, 10000, 70000};
        _cleanup_free_ char *want = malloc(70000);

        assert_non_null(want);
        for (size_t i = 0; i < 70000; i++)
                want[i] = (char) ('a' + i % 26);
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                _cleanup_free_ char *data = NULL;
                size_t len = 1;

                write_at("sized", want, sizes[i]);
                assert_int_equal(read_file_at(dir_fd, "sized", 0, 70000, &data, &len), 0);
                assert_int_equal(len, sizes[i]);
                assert_memory_equal(data, want, sizes[i]);
                assert_int_equal(data[len], '\0');
        }

        {
                _cleanup_free_ char *data = NULL;
                size_t len = 0;

                assert_int_equal(read_file_at(AT_FDCWD, "/proc/self/status", 0, 65536, &data, &len),
                                 0);
                assert_true(len > 0);
                assert_non_null(strstr(data, "\nPid:"));
                assert_int_equal(data[len - 1], '\n');
        }
}

/* The size a caller took before opening is a hint: a file that grew or
 * shrank since is still read whole; one over the cap is refused unread. */
static void test_given_size(void **state) {
        static const uint64_t given[] = {0, 1, 9, 10, 11, 4096, 100};
        static const char text[] = "ten bytes\n";

        write_at("given", text, 10);
        for (size_t i = 0; i < ELEMENTSOF(given); i++) {
                _cleanup_close_ int fd = openat(dir_fd, "given", O_RDONLY | O_CLOEXEC);
                _cleanup_free_ char *data = NULL;
                size_t len = 0;

                assert_true(fd >= 0);
                assert_int_equal(read_regular_bounded(fd, 4096, given[i], &data, &len), 0);
                assert_int_equal(len, 10);
                assert_memory_equal(data, text, 11);
        }
        {
                _cleanup_close_ int fd = openat(dir_fd, "given", O_RDONLY | O_CLOEXEC);
                char *data = NULL;
                size_t len = 0;

                assert_int_equal(read_regular_bounded(fd, 50, 51, &data, &len), -EFBIG);
                assert_null(data);
        }
        (void) state;
}

static void test_stream(void **state) {
        int p[2];
        char *data = NULL;
        size_t len = 0;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(write(p[1], "abcdef", 6), 6);
        assert_int_equal(close(p[1]), 0);
        assert_int_equal(read_stream_bounded(p[0], 5, &data, &len), -EFBIG);
        assert_int_equal(close(p[0]), 0);

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(write(p[1], "abcdef", 6), 6);
        assert_int_equal(close(p[1]), 0);
        assert_int_equal(read_stream_bounded(p[0], 6, &data, &len), 0);
        assert_string_equal(data, "abcdef");
        assert_int_equal(close(p[0]), 0);
        free(data);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_regular), cmocka_unit_test(test_limits_and_types),
                cmocka_unit_test(test_sizes),   cmocka_unit_test(test_given_size),
                cmocka_unit_test(test_stream),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
