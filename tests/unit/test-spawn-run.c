/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent/basic/spawn-run.c: exit status and signals, what the child prints and
 * the caps on it, the timeout (the whole process group killed), commands
 * that cannot be run, and what the child inherits. The children are
 * /bin/sh one-liners and coreutils. Everything runs twice: as it is, and in
 * a child process where a seccomp filter makes pidfd_open() fail, as on an
 * older kernel or under valgrind 3.19.
 */
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "unit-skip.h"

#include "macro.h"
#include "spawn-run.h"
#include "timeutil.h"

#define SEC         1000000u
#define NO_EXIT     (-1)
#define DEFAULT_CAP 65536u

typedef struct Case {
        const char *name;
        const char *argv[6];
        size_t max_stdout_bytes; /* 0: DEFAULT_CAP */
        size_t max_stderr_bytes; /* 0: DEFAULT_CAP */
        int r;
        int exit_status; /* NO_EXIT when not expected to exit */
        int signal;      /* 0 when not expected to be killed */
        const char *out; /* NULL: not checked */
        size_t out_len;
        const char *err; /* NULL: not checked */
        size_t err_len;  /* checked when err is NULL and this is not 0 */
} Case;

#define SH(script) \
        { "/bin/sh", "-c", script, NULL }
#define TEXT(s) s, sizeof(s) - 1

static const Case cases[] = {
        {.name = "exit 0",
         .argv = SH("exit 0"),
         .exit_status = 0,
         .out = TEXT(""),
         .err = TEXT("")},
        {.name = "exit 3", .argv = SH("exit 3"), .exit_status = 3},
        {.name = "stdout and stderr apart, NULs kept",
         .argv = SH("printf 'a\\000b'; printf err >&2; printf c"),
         .exit_status = 0,
         .out = TEXT("a\0bc"),
         .err = TEXT("err")},
        {.name = "looked up in PATH",
         .argv = {"printf", "%s", "x y", NULL},
         .exit_status = 0,
         .out = TEXT("x y")},
        {.name = "stdin is /dev/null",
         .argv = SH("readlink /proc/$$/fd/0; cat"),
         .exit_status = 0,
         .out = TEXT("/dev/null\n")},
        {.name = "stdout at its cap",
         .argv = SH("printf 12345"),
         .max_stdout_bytes = 5,
         .exit_status = 0,
         .out = TEXT("12345")},
        {.name = "stdout one byte over its cap",
         .argv = SH("printf 123456"),
         .max_stdout_bytes = 5,
         .r = -EFBIG,
         .exit_status = NO_EXIT},
        {.name = "stdout far over its cap: killed while it writes",
         .argv = SH("exec cat /dev/zero"),
         .r = -EFBIG,
         .exit_status = NO_EXIT,
         .signal = SIGKILL},
        {.name = "stderr over its cap: kept up to it, the rest drained",
         .argv = SH("head -c 1000000 /dev/zero >&2; printf 'done'; exit 5"),
         .max_stderr_bytes = 10,
         .exit_status = 5,
         .out = TEXT("done"),
         .err_len = 10},
        {.name = "killed by a signal",
         .argv = SH("kill -TERM $$"),
         .exit_status = NO_EXIT,
         .signal = SIGTERM},
        {.name = "exit after closing its output",
         .argv = SH("printf x; exec >&- 2>&-; sleep 0.2; exit 4"),
         .exit_status = 4,
         .out = TEXT("x")},
        {.name = "not in PATH",
         .argv = {"no-such-command-for-test-spawn", NULL},
         .r = -ENOENT,
         .exit_status = NO_EXIT},
        {.name = "no such path",
         .argv = {"/nonexistent/bin/true", NULL},
         .r = -ENOENT,
         .exit_status = NO_EXIT},
};

static void run_case(const Case *c) {
        SpawnLimits limits = {
                .timeout_usec = 10 * SEC,
                .max_stdout_bytes = c->max_stdout_bytes ? c->max_stdout_bytes : DEFAULT_CAP,
                .max_stderr_bytes = c->max_stderr_bytes ? c->max_stderr_bytes : DEFAULT_CAP,
        };
        SpawnResult res = {};
        int r;

        print_message("case: %s\n", c->name);
        r = spawn_run(c->argv, NULL, &limits, &res);
        assert_int_equal(r, c->r);
        if (c->r == -ENOENT)
                assert_int_equal(res.exec_errno, ENOENT);
        else
                assert_int_equal(res.exec_errno, 0);
        if (c->exit_status != NO_EXIT) {
                assert_true(WIFEXITED(res.wait_status));
                assert_int_equal(WEXITSTATUS(res.wait_status), c->exit_status);
        }
        if (c->signal) {
                assert_true(WIFSIGNALED(res.wait_status));
                assert_int_equal(WTERMSIG(res.wait_status), c->signal);
        }
        if (c->out) {
                assert_non_null(res.out);
                assert_int_equal(res.out_len, c->out_len);
                assert_memory_equal(res.out, c->out, c->out_len);
                assert_int_equal(res.out[res.out_len], '\0');
        }
        if (c->err) {
                assert_non_null(res.err);
                assert_int_equal(res.err_len, c->err_len);
                assert_memory_equal(res.err, c->err, c->err_len);
        } else if (c->err_len)
                assert_int_equal(res.err_len, c->err_len);
        if (r == 0 || r == -EFBIG)
                assert_true(res.out_len <= limits.max_stdout_bytes);
        spawn_result_done(&res);
        assert_null(res.out);
}

static void test_table(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                run_case(&cases[i]);
}

/* A grandchild of ours, the test being a subreaper: reaped here, as
 * killed by SIGKILL, within a few seconds. */
static void assert_reaped_killed(pid_t gc) {
        for (int i = 0; i < 500; i++) {
                int status;
                pid_t w = waitpid(gc, &status, WNOHANG);

                assert_true(w >= 0);
                if (w == gc) {
                        assert_true(WIFSIGNALED(status));
                        assert_int_equal(WTERMSIG(status), SIGKILL);
                        return;
                }
                (void) usleep(10000);
        }
        (void) kill(gc, SIGKILL);
        (void) waitpid(gc, NULL, 0);
        fail_msg("process %d outlived the timeout", (int) gc);
}

/* The timeout kills the child and everything in its process group. A
 * second gives sh the time to start its background process and say so,
 * under valgrind too. */
static void test_timeout_kills_group(void **state) {
        const char *argv[] = SH("sleep 30 & echo $!; wait");
        SpawnLimits limits = {.timeout_usec = SEC,
                              .max_stdout_bytes = DEFAULT_CAP,
                              .max_stderr_bytes = DEFAULT_CAP};
        SpawnResult res = {};
        uint64_t t0 = now_usec(CLOCK_MONOTONIC), dt;
        int r;

        /* The test adopts the orphaned sleep to see how it died. */
        if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
                skip_test("no-subreaper",
                          "prctl(PR_SET_CHILD_SUBREAPER) fails here (%m), as under qemu-user; "
                          "the gcc, asan and valgrind cells run it natively");
        r = spawn_run(argv, NULL, &limits, &res);
        dt = now_usec(CLOCK_MONOTONIC) - t0;
        assert_int_equal(r, -ETIME);
        assert_true(dt >= SEC);
        assert_true(dt < 10 * SEC);
        assert_true(WIFSIGNALED(res.wait_status));
        assert_int_equal(WTERMSIG(res.wait_status), SIGKILL);
        assert_non_null(res.out);
        assert_true(atoi(res.out) > 0);
        assert_reaped_killed((pid_t) atoi(res.out));
        spawn_result_done(&res);
        assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0), 0);
}

/* A child that closed its output is still waited for, up to the timeout. */
static void test_timeout_after_output_closed(void **state) {
        const char *argv[] = SH("exec >&- 2>&-; exec sleep 30");
        SpawnLimits limits = {.timeout_usec = SEC / 5,
                              .max_stdout_bytes = DEFAULT_CAP,
                              .max_stderr_bytes = DEFAULT_CAP};
        SpawnResult res = {};
        uint64_t t0 = now_usec(CLOCK_MONOTONIC), dt;

        assert_int_equal(spawn_run(argv, NULL, &limits, &res), -ETIME);
        dt = now_usec(CLOCK_MONOTONIC) - t0;
        assert_true(dt >= SEC / 5);
        assert_true(dt < 5 * SEC);
        assert_true(WIFSIGNALED(res.wait_status));
        assert_int_equal(WTERMSIG(res.wait_status), SIGKILL);
        spawn_result_done(&res);
}

/* Found but not executable: access() refuses it; execve() refuses a file
 * that is neither ELF nor a script, and the child says so through its
 * status pipe. */
static void test_not_executable(void **state) {
        char dir[] = "/tmp/test-spawn.XXXXXX", path[sizeof(dir) + 16];
        const char *argv[] = {path, NULL};
        SpawnLimits limits = {.timeout_usec = 10 * SEC,
                              .max_stdout_bytes = DEFAULT_CAP,
                              .max_stderr_bytes = DEFAULT_CAP};
        SpawnResult res = {};
        int fd;

        assert_non_null(mkdtemp(dir));
        (void) snprintf(path, sizeof(path), "%s/prog", dir);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "\1\2\3\4 not a program\n", 20), 20);
        assert_int_equal(close(fd), 0);

        if (geteuid() != 0) { /* root may execute anything with one x bit, and read past 0644 */
                assert_int_equal(spawn_run(argv, NULL, &limits, &res), -EACCES);
                assert_int_equal(res.exec_errno, EACCES);
        }
        assert_int_equal(chmod(path, 0755), 0);
        assert_int_equal(spawn_run(argv, NULL, &limits, &res), -ENOEXEC);
        assert_int_equal(res.exec_errno, ENOEXEC);
        assert_true(WIFEXITED(res.wait_status));
        spawn_result_done(&res);

        assert_int_equal(unlink(path), 0);
        assert_int_equal(rmdir(dir), 0);
}

/* The environment given, and none of our descriptors. */
static void test_inherits(void **state) {
        char script[128];
        const char *sh_argv[] = SH(script), *env_argv[] = {"env", NULL};
        char *env[] = {(char *) (uintptr_t) "ONLY=this", NULL};
        SpawnLimits limits = {.timeout_usec = 10 * SEC,
                              .max_stdout_bytes = DEFAULT_CAP,
                              .max_stderr_bytes = DEFAULT_CAP};
        SpawnResult res = {};
        int fd = open("/dev/null", O_RDONLY); /* not close-on-exec, on purpose */

        assert_int_equal(spawn_run(env_argv, env, &limits, &res), 0);
        assert_true(WIFEXITED(res.wait_status));
        assert_int_equal(WEXITSTATUS(res.wait_status), 0);
        assert_string_equal(res.out, "ONLY=this\n");

        assert_true(fd > 2);
        (void) snprintf(script, sizeof(script), "test -e /proc/$$/fd/%d && echo leaked; echo ok",
                        fd);
        assert_int_equal(spawn_run(sh_argv, NULL, &limits, &res), 0);
        assert_string_equal(res.out, "ok\n");
        spawn_result_done(&res);
        assert_int_equal(close(fd), 0);
}

#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif

/* pidfd_open() fails with ENOSYS from here on, in this process and its children. */
static int deny_pidfd_open(void) {
        struct sock_filter filter[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pidfd_open, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {.len = ELEMENTSOF(filter), .filter = filter};

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
                return -errno;
        return 0;
}

/* The filter holds: the tests of this group take the path without a pidfd. */
static void test_pidfd_open_denied(void **state) {
        assert_int_equal(syscall(__NR_pidfd_open, getpid(), 0), -1);
        assert_int_equal(errno, ENOSYS);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_timeout_kills_group),
                cmocka_unit_test(test_timeout_after_output_closed),
                cmocka_unit_test(test_not_executable),
                cmocka_unit_test(test_inherits),
        };
        const struct CMUnitTest tests_without_pidfd[] = {
                cmocka_unit_test(test_pidfd_open_denied),
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_timeout_kills_group),
                cmocka_unit_test(test_timeout_after_output_closed),
        };
        int failed, status;
        pid_t pid;

        failed = cmocka_run_group_tests_name("spawn-run", tests, NULL, NULL);
        (void) fflush(stdout);
        (void) fflush(stderr);
        pid = fork();
        if (pid < 0)
                return 1;
        if (pid == 0) {
                int r = deny_pidfd_open();
                if (r < 0) {
                        skip_part("no-seccomp",
                                  "a seccomp filter cannot be installed here (%s), as under "
                                  "qemu-user; the gcc, asan and valgrind cells run the fallback",
                                  strerror(-r));
                        _exit(77);
                }
                _exit(unit_skip_status(cmocka_run_group_tests_name(
                        "spawn-run without pidfd_open", tests_without_pidfd, NULL, NULL)));
        }
        /* The child's skips were reported in its own lines; one counts here. */
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
                failed++;
        else if (WEXITSTATUS(status) == 77)
                unit_skips++;
        else if (WEXITSTATUS(status) != 0)
                failed++;
        return unit_skip_status(failed);
}
