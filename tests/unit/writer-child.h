/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test helper shared by test-volume and test-watcher: runs
 * tests/tools/atomic-writer.sh (kubelet's atomic writer) as a real child
 * process and reads its stdout line by line ("paused STEP", "step STEP T",
 * "version NAME", "unchanged NAME"), with timeouts, so a test can stop the
 * writer between two steps, look, and let it go on with SIGUSR1.
 */
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "macro.h"

#define WRITER_SCRIPT   TEST_DATA_DIR "/../tools/atomic-writer.sh"
#define WRITER_MAX_ARGS 64

typedef struct WriterChild {
        pid_t pid;
        int out_fd;
        char buf[8192];
        size_t len;
        bool eof;
} WriterChild;

/* Starts argv (NULL-terminated, argv[0] looked up in PATH) with its stdout
 * on a pipe we read. Returns 0 or -errno. */
static inline int child_spawn(WriterChild *c, const char *const *argv) {
        int p[2];

        *c = (WriterChild){.pid = -1, .out_fd = -1};
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        c->pid = fork();
        if (c->pid < 0) {
                int r = -errno;
                (void) close(p[0]);
                (void) close(p[1]);
                return r;
        }
        if (c->pid == 0) {
                /* execvp() wants writable strings: copies, in the child only */
                char *copy[WRITER_MAX_ARGS + 1];
                size_t n = 0;

                for (; argv[n] && n < WRITER_MAX_ARGS; n++)
                        copy[n] = strdup(argv[n]);
                copy[n] = NULL;
                (void) dup2(p[1], STDOUT_FILENO);
                execvp(copy[0], copy);
                _exit(127);
        }
        (void) close(p[1]);
        c->out_fd = p[0];
        return 0;
}

/* Starts "bash atomic-writer.sh DIR ARGS..." (args NULL-terminated). */
static inline int writer_spawn(WriterChild *c, const char *dir, const char *const *args) {
        const char *argv[WRITER_MAX_ARGS + 1] = {"bash", WRITER_SCRIPT, dir};
        size_t n = 3;

        for (; args && *args && n < WRITER_MAX_ARGS; args++)
                argv[n++] = *args;
        argv[n] = NULL;
        return child_spawn(c, argv);
}

/* Next line (without "\n") into line. Returns 1, 0 on timeout, -EPIPE at
 * end of output. timeout_ms 0: do not wait. */
static inline int writer_next_line(WriterChild *c, int timeout_ms, char *line, size_t size) {
        for (;;) {
                char *nl = memchr(c->buf, '\n', c->len);
                struct pollfd pfd = {.fd = c->out_fd, .events = POLLIN};
                ssize_t n;
                int r;

                if (nl) {
                        size_t l = (size_t) (nl - c->buf);
                        size_t copy = l < size - 1 ? l : size - 1;

                        memcpy(line, c->buf, copy);
                        line[copy] = '\0';
                        memmove(c->buf, nl + 1, c->len - l - 1);
                        c->len -= l + 1;
                        return 1;
                }
                if (c->eof || c->len == sizeof c->buf)
                        return -EPIPE;

                r = poll(&pfd, 1, timeout_ms);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -errno;
                if (r == 0)
                        return 0;
                n = read(c->out_fd, c->buf + c->len, sizeof c->buf - c->len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        c->eof = true;
                        continue;
                }
                c->len += (size_t) n;
        }
}

/* Skips lines until one starts with prefix; that line goes to line.
 * Returns 1, 0 on timeout, -EPIPE when the writer ended first. */
static inline int writer_wait_line(WriterChild *c, const char *prefix, int timeout_ms, char *line,
                                   size_t size) {
        for (;;) {
                int r = writer_next_line(c, timeout_ms, line, size);
                if (r <= 0)
                        return r;
                if (startswith(line, prefix))
                        return 1;
        }
}

/* Ends a pause. */
static inline int writer_resume(WriterChild *c) {
        return kill(c->pid, SIGUSR1) < 0 ? -errno : 0;
}

/* True (and *ret_status = exit code, or 128+signal) once the writer exited. */
static inline bool writer_exited(WriterChild *c, int *ret_status) {
        int st;
        pid_t r;

        if (c->pid < 0)
                return true;
        r = waitpid(c->pid, &st, WNOHANG);
        if (r != c->pid)
                return false;
        c->pid = -1;
        *ret_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        return true;
}

/* Waits for the writer (killing it when it outlives timeout_ms) and closes
 * the pipe. Returns its exit code, 128+signal. Lines not read yet are lost. */
static inline int writer_finish(WriterChild *c, int timeout_ms) {
        int status = -1;

        for (int waited = 0; c->pid >= 0; waited += 10) {
                if (writer_exited(c, &status))
                        break;
                if (waited >= timeout_ms) {
                        (void) kill(c->pid, SIGKILL);
                        (void) waitpid(c->pid, NULL, 0);
                        c->pid = -1;
                        status = 128 + SIGKILL;
                        break;
                }
                (void) usleep(10 * 1000);
        }
        if (c->out_fd >= 0)
                (void) close(c->out_fd);
        c->out_fd = -1;
        return status;
}

/* Runs the writer to the end. The last line it printed goes to last_line
 * when not NULL. Returns its exit code. */
static inline int writer_run(const char *dir, const char *const *args, char *last_line,
                             size_t size) {
        WriterChild c;
        char line[512] = "";
        int r;

        r = writer_spawn(&c, dir, args);
        if (r < 0)
                return r;
        while (writer_next_line(&c, 30 * 1000, line, sizeof line) > 0)
                if (last_line)
                        (void) snprintf(last_line, size, "%s", line);
        return writer_finish(&c, 30 * 1000);
}

/* kubelet's AtomicWriter.Write() in C, at kubelet's own speed (no process
 * per step, microseconds in all): version directory `version` with every key
 * holding data, ..data_tmp, the rename over ..data, the top-level links,
 * then the previous version `prev` (NULL for none) removed with its files.
 * Links of keys `keys` lacks are left alone.
 * For bursts no shell script can produce. Returns 0 or -errno. */
static inline int fast_write(int at, const char *version, const char *const *keys, size_t n_keys,
                             const char *data, const char *prev) {
        int vfd, r = 0;

        if (mkdirat(at, version, 0755) < 0)
                return -errno;
        vfd = openat(at, version, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (vfd < 0)
                return -errno;
        for (size_t i = 0; i < n_keys && r == 0; i++) {
                int fd = openat(vfd, keys[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t) strlen(data))
                        r = -errno;
                if (fd >= 0)
                        (void) close(fd);
        }
        (void) close(vfd);
        if (r < 0)
                return r;

        if (symlinkat(version, at, "..data_tmp") < 0 ||
            renameat(at, "..data_tmp", at, "..data") < 0)
                return -errno;

        for (size_t i = 0; i < n_keys; i++) {
                char target[256];
                (void) snprintf(target, sizeof target, "..data/%s", keys[i]);
                if (symlinkat(target, at, keys[i]) < 0 && errno != EEXIST)
                        return -errno;
        }

        if (prev) {
                /* rm -r: every file of the old version, then the directory */
                int ofd = openat(at, prev, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                DIR *d = ofd >= 0 ? fdopendir(ofd) : NULL;

                for (struct dirent *de; d && (de = readdir(d));)
                        if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                                (void) unlinkat(dirfd(d), de->d_name, 0);
                if (d)
                        (void) closedir(d);
                else if (ofd >= 0)
                        (void) close(ofd);
                if (unlinkat(at, prev, AT_REMOVEDIR) < 0)
                        return -errno;
        }
        return 0;
}
