/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One program run to its end (spawn-run.h).
 *
 * The wait is on a pidfd (Linux 5.3), polled together with the output pipes:
 * the caller wakes when the child prints, closes its output or exits, and
 * never sleeps in between. Where pidfd_open() fails (an older kernel, a
 * seccomp filter, valgrind 3.19), a child that closed its output is looked
 * for every millisecond.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "spawn-run.h"
#include "strbuf.h"
#include "timeutil.h"

#if __has_include(<sys/pidfd.h>)
#include <sys/pidfd.h>
#else
/* glibc before 2.36 has no wrapper; the system call is the same on every
 * architecture but alpha. */
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
static int pidfd_open(pid_t pid, unsigned flags) {
        return (int) syscall(__NR_pidfd_open, pid, flags);
}
#endif

extern char **environ;

void spawn_result_done(SpawnResult *r) {
        if (!r)
                return;
        free(r->out);
        free(r->err);
        *r = (SpawnResult){};
}

/* The executable for name: itself when it holds a '/', else the first match in PATH. */
static int find_executable(const char *name, char **ret) {
        const char *path = getenv("PATH");

        if (strchr(name, '/')) {
                if (access(name, X_OK) < 0)
                        return negative_errno();
                *ret = strdup(name);
                return *ret ? 0 : -ENOMEM;
        }
        if (!path || !*path)
                path = "/usr/local/bin:/usr/bin:/bin";
        for (const char *p = path;;) {
                size_t n = strcspn(p, ":");
                _cleanup_free_ char *f = NULL;
                struct stat st;

                if (asprintf(&f, "%.*s/%s", (int) n, n ? p : ".", name) < 0)
                        return -ENOMEM;
                if (access(f, X_OK) == 0 && stat(f, &st) == 0 && S_ISREG(st.st_mode)) {
                        *ret = TAKE_PTR(f);
                        return 0;
                }
                p += n;
                if (!*p++)
                        break;
        }
        return -ENOENT;
}

/* execve() predates const: the strings are never written through this. */
static char *const *unconst_strv(const char *const *v) {
        union {
                const char *const *c;
                char *const *m;
        } u = {.c = v};
        return u.m;
}

/* The child: never returns. Only async-signal-safe calls after fork(). */
_Noreturn static void child_exec(const char *path, const char *const *argv, char *const *env,
                                 int out_fd, int err_fd, int status_fd) {
        int fds[3] = {-1, out_fd, err_fd};
        sigset_t none;
        int e;

        (void) setpgid(0, 0);
        (void) sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
        (void) signal(SIGPIPE, SIG_DFL);

        /* Above 2 first, so that no dup2() below overwrites a source (the
         * caller may have closed its stdin, stdout or stderr). */
        fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        for (size_t i = 0; i < 3; i++)
                if (fds[i] < 0 || (fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3)) < 0)
                        goto fail;
        for (int i = 0; i < 3; i++)
                if (dup2(fds[i], i) < 0)
                        goto fail;
        /* Every descriptor is close-on-exec already (the house rule); make
         * sure for those a caller opened otherwise. status_fd stays open until
         * execve() succeeds. */
        (void) close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
        execve(path, unconst_strv(argv), env);
fail:
        e = errno;
        (void) !write(status_fd, &e, sizeof(e));
        _exit(127);
}

static int close_fd(int fd) {
        if (fd >= 0)
                (void) close(fd);
        return -EBADF;
}

int spawn_run(const char *const *argv, char *const *envp, const SpawnLimits *limits,
              SpawnResult *result) {
        _cleanup_(strbuf_done) StrBuf out = STRBUF_INIT(limits->max_stdout_bytes);
        _cleanup_(strbuf_done) StrBuf err = STRBUF_INIT(limits->max_stderr_bytes);
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int out_r = -EBADF, out_w = -EBADF, err_r = -EBADF, err_w = -EBADF,
                            st_r = -EBADF, st_w = -EBADF, pidfd = -EBADF;
        uint64_t deadline;
        int r, status = 0, exec_errno = 0;
        bool timed_out = false, too_big = false, exited = false;
        pid_t pid;

        spawn_result_done(result);

        r = find_executable(argv[0], &path);
        if (r < 0) {
                result->exec_errno = -r;
                return r;
        }

        {
                int p[2];
                if (pipe2(p, O_CLOEXEC) < 0)
                        return negative_errno();
                out_r = p[0], out_w = p[1];
                if (pipe2(p, O_CLOEXEC) < 0)
                        return negative_errno();
                err_r = p[0], err_w = p[1];
                if (pipe2(p, O_CLOEXEC) < 0)
                        return negative_errno();
                st_r = p[0], st_w = p[1];
        }

        pid = fork();
        if (pid < 0)
                return negative_errno();
        if (pid == 0)
                child_exec(path, argv, envp ? envp : environ, out_w, err_w, st_w);
        /* The child does the same; doing it here too means a kill(-pid) on an
         * early timeout never misses it. */
        (void) setpgid(pid, pid);

        out_w = close_fd(out_w);
        err_w = close_fd(err_w);
        st_w = close_fd(st_w);
        deadline = now_usec(CLOCK_MONOTONIC) + limits->timeout_usec;

        /* The child is ours and not reaped yet, so its pid cannot be reused
         * under us. pidfds are always close-on-exec. Without one (Linux
         * before 5.3, a seccomp filter, valgrind 3.19), see below. */
        pidfd = pidfd_open(pid, 0);

        /* Until the output is closed and the child has exited: the pidfd
         * turns readable at its exit, the pipes at output or at their close
         * (the child may close them itself and run on). */
        while (r >= 0 && (out_r >= 0 || err_r >= 0 || st_r >= 0 || !exited)) {
                struct pollfd pfd[4] = {
                        {.fd = out_r, .events = POLLIN},
                        {.fd = err_r, .events = POLLIN},
                        {.fd = st_r, .events = POLLIN},
                        /* a readable pidfd stays readable: poll it until then */
                        {.fd = exited ? -EBADF : pidfd, .events = POLLIN},
                };
                int *fds[3] = {&out_r, &err_r, &st_r};
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                int k, ms;

                if (now >= deadline) {
                        timed_out = true;
                        break;
                }
                ms = (int) ((deadline - now + 999) / 1000);
                if (pidfd < 0 && out_r < 0 && err_r < 0 && st_r < 0) {
                        /* No pidfd and nothing left to read: look for the
                         * exit (leaving the child to waitpid() below) every
                         * millisecond until the deadline. */
                        siginfo_t si = {};

                        if (waitid(P_PID, (id_t) pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 &&
                            errno != EINTR) {
                                r = negative_errno();
                                break;
                        }
                        if (si.si_pid == pid) {
                                exited = true;
                                continue;
                        }
                        if (ms > 1)
                                ms = 1;
                }
                k = poll(pfd, ELEMENTSOF(pfd), ms);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        r = negative_errno();
                        break;
                }
                if (pfd[3].revents & (POLLIN | POLLHUP | POLLERR))
                        exited = true;
                for (size_t i = 0; i < ELEMENTSOF(fds); i++) {
                        char buf[16384];
                        ssize_t n;

                        if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        n = read(pfd[i].fd, buf, sizeof(buf));
                        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (n <= 0) {
                                *fds[i] = close_fd(*fds[i]);
                                continue;
                        }
                        if (i == 0) {
                                r = strbuf_append(&out, buf, (size_t) n);
                                if (r == -ENOBUFS) {
                                        too_big = true;
                                        r = 0;
                                }
                                if (too_big || r < 0)
                                        break;
                        } else if (i == 1) {
                                /* Keep what fits; drain the rest so the child never blocks. */
                                size_t room = err.max_len - err.len;
                                r = strbuf_append(&err, buf, (size_t) n < room ? (size_t) n : room);
                                if (r < 0)
                                        break;
                        } else if ((size_t) n >= sizeof(int))
                                memcpy(&exec_errno, buf, sizeof(int));
                }
                if (too_big)
                        break;
        }

        if (timed_out || too_big || r < 0) {
                (void) kill(-pid, SIGKILL);
                (void) kill(pid, SIGKILL);
        }
        /* It has exited or was just killed: this does not block for long. */
        for (;;) {
                pid_t w = waitpid(pid, &status, 0);

                if (w == pid) {
                        result->wait_status = status;
                        break;
                }
                if (w < 0 && errno != EINTR) {
                        r = r < 0 ? r : negative_errno();
                        break;
                }
        }

        result->out_len = out.len;
        result->out = strbuf_steal(&out);
        result->err_len = err.len;
        result->err = strbuf_steal(&err);
        if (!result->out || !result->err)
                return -ENOMEM;

        if (r < 0)
                return r;
        if (exec_errno > 0) {
                result->exec_errno = exec_errno;
                return -exec_errno;
        }
        if (timed_out)
                return -ETIME;
        if (too_big)
                return -EFBIG;
        return 0;
}
