/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "unit-skip.h"

#include "macro.h"
#include "mountinfo-cache.h"
#include "process-stats.h"
#include "process.h"
#include "root-open.h"
#include "running.h"

#define MAX_BYTES 64u

static char dir[] = "/tmp/test-running.XXXXXX";
static int dir_fd = -1;
static char root[sizeof dir + 8]; /* dir/root: the running root, or a chroot */
static int root_fd = -1;

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
        char big[MAX_BYTES + 2];

        if (!mkdtemp(dir))
                return -1;
        dir_fd = open(dir, O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0)
                return -1;
        /* other uids must reach the tree (the permission test drops to nobody) */
        if (chmod(dir, 0755) < 0)
                return -1;
        (void) snprintf(root, sizeof root, "%s/root", dir);

        mkdirs_at(dir_fd, "root/etc/enroot/environ.d");
        mkdirs_at(dir_fd, "root/etc/dir");
        root_fd = open(root, O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0)
                return -1;
        write_at(root_fd, "etc/enroot/enroot.conf", "ENROOT_MOUNT_HOME=yes\n");
        write_at(root_fd, "etc/enroot/environ.d/99-aicr-defaults.env", "NCCL_DEBUG=WARN\n");
        write_at(root_fd, "etc/hostname", "inside\n");
        memset(big, 'x', sizeof big - 1);
        big[MAX_BYTES + 1] = '\0';
        write_at(root_fd, "etc/big", big); /* MAX_BYTES + 1 bytes */
        big[MAX_BYTES] = '\0';
        write_at(root_fd, "etc/max", big); /* exactly MAX_BYTES */
        if (mkfifoat(root_fd, "etc/fifo", 0644) < 0)
                return -1;
        /* links that would leave the root if they were resolved from ours */
        if (symlinkat("/etc/hostname", root_fd, "etc/abs-link") < 0 ||
            symlinkat("../../../../../../../../etc/hostname", root_fd, "etc/up-link") < 0 ||
            symlinkat("hostname", root_fd, "etc/rel-link") < 0 ||
            symlinkat("/etc/enroot", root_fd, "etc/dir-link") < 0 ||
            symlinkat("loop", root_fd, "etc/loop") < 0 ||
            symlinkat("/nonexistent", root_fd, "etc/dangling") < 0 ||
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

#define WALK_NOTE                                                                            \
        "openat2() is not available (Linux < 5.6 or a seccomp filter): paths were resolved " \
        "one component at a time"

/* Whether this kernel, or this valgrind (3.19 does not know openat2), offers
 * openat2(). Without it, every test below runs the fallback walk instead. */
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

/* valgrind 3.19 does not know pidfd_open() either. */
static bool have_pidfd_open(void) {
        static int cached = -1;

        if (cached < 0) {
                long fd = syscall(SYS_pidfd_open, getpid(), 0);

                cached = fd >= 0;
                if (fd >= 0)
                        (void) close((int) fd);
                else
                        print_message("note: pidfd_open() is not available here (%s): the "
                                      "pidfd checks do not run\n",
                                      strerror(errno));
        }
        return cached;
}

/* Whether statx() names the mount an inode came from (Linux >= 5.8). Without
 * it, the agent falls back to the mountinfo entry on the path. qemu-user 7.2
 * sets STATX_MNT_ID in the mask and leaves the ID 0. */
static bool have_statx_mnt_id(void) {
        static int cached = -1;

        if (cached < 0) {
                struct statx sx = {};

                cached = statx(AT_FDCWD, "/", 0, STATX_MNT_ID, &sx) == 0 &&
                         (sx.stx_mask & STATX_MNT_ID) && sx.stx_mnt_id != 0;
                if (!cached)
                        print_message("note: statx() gives no mount ID here: the mountinfo "
                                      "fallback is tested in its place\n");
        }
        return cached;
}

/* The note a target-mode view of the real /proc carries here. */
static void assert_target_note(const RunningView *v, const char *name) {
        _cleanup_free_ char *want = NULL;

        if (have_openat2() && have_pidfd_open()) {
                assert_null(v->note);
                return;
        }
        /* empty (0 bytes) when only openat2() is missing */
        assert_true(asprintf(&want, "%s%s%s",
                             have_pidfd_open() ? ""
                                               : "pidfd_open() failed: Function not implemented: "
                                                 "the agent notices a restart of \"",
                             have_pidfd_open() ? "" : name,
                             have_pidfd_open() ? "" : "\" only at the next resync") >= 0);
        if (!have_openat2()) {
                char *w = NULL;
                assert_true(asprintf(&w, "%s%s%s", want, *want ? "; " : "", WALK_NOTE) > 0);
                free(want);
                want = w;
        }
        assert_string_equal(v->note, want);
}

static RootResolve expected_resolve(void) {
        return have_openat2() ? ROOT_RESOLVE_OPENAT2 : ROOT_RESOLVE_WALK;
}

/* The mountinfo cache read_view() passes, when a test sets one. */
static MountInfoCache *view_cache;

static RunningView *read_view(const char *running_root, const char *target, pid_t last_pid,
                              const char *const *paths, size_t n_paths) {
        RunningConfig cfg = {
                .running_root = running_root,
                .target_process = target,
                .target_uid = getuid(),
                .paths = paths,
                .n_paths = n_paths,
                .max_bytes = MAX_BYTES,
                .mountinfo = view_cache,
        };
        RunningView *v = NULL;

        assert_int_equal(running_read(&cfg, last_pid, &v), 0);
        assert_non_null(v);
        assert_int_equal(v->n_files, n_paths);
        for (size_t i = 0; i < n_paths; i++)
                assert_string_equal(v->files[i].path, paths[i]);
        return v;
}

static void assert_content(const RunningFile *f, const char *want) {
        assert_int_equal(f->error, 0);
        assert_non_null(f->content);
        assert_int_equal(f->size, strlen(want));
        assert_memory_equal(f->content, want, f->size);
}

/* A real process named name (PR_SET_NAME sets its comm), optionally
 * chrooted, optionally in a private mount namespace with file bind-mounted
 * on target first. Returns once it runs under that name. */
static pid_t spawn(const char *name, const char *chroot_dir, const char *bind_source,
                   const char *bind_target) {
        int p[2];
        pid_t pid;
        char c = 0;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                (void) close(p[0]);
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (bind_source && (unshare(CLONE_NEWNS) < 0 ||
                                    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0 ||
                                    mount(bind_source, bind_target, "none", MS_BIND, NULL) < 0))
                        _exit(2);
                if (chroot_dir && (chroot(chroot_dir) < 0 || chdir("/") < 0))
                        _exit(3);
                if (prctl(PR_SET_NAME, name) < 0)
                        _exit(4);
                if (write(p[1], "r", 1) != 1)
                        _exit(5);
                for (;;)
                        pause();
        }
        (void) close(p[1]);
        if (read(p[0], &c, 1) != 1) {
                int status = 0;
                (void) waitpid(pid, &status, 0);
                fail_msg("child could not set itself up (exit %d)", WEXITSTATUS(status));
        }
        (void) close(p[0]);
        return pid;
}

static void reap(pid_t pid) {
        (void) kill(pid, SIGKILL);
        assert_int_equal(waitpid(pid, NULL, 0), pid);
}

/* A process name of our own, so no process of the machine can match. */
static const char *unique_name(const char *tag) {
        static char name[16];
        (void) snprintf(name, sizeof name, "rt%s%d", tag, (int) getpid());
        return name;
}

static bool pidfd_exited(int pidfd, int timeout_ms) {
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

/* ------------------------------------------------------------------------ */
/* Default mode: a running root */

static void test_running_root(void **state) {
        static const char *const paths[] = {
                "/etc/enroot/enroot.conf",
                "/etc/enroot/environ.d/99-aicr-defaults.env",
                "/etc/enroot/missing.conf",
                "/etc/dir",
                "/etc/fifo",
                "/etc/big",
                "/etc/max",
                "/etc/abs-link",
                "/etc/up-link",
                "/etc/loop",
                "/etc/dangling",
                "/etc/hostname/",
                "//etc/./dir/../enroot/enroot.conf",
        };
        _cleanup_(running_view_freep) RunningView *v = NULL;
        struct stat st;

        v = read_view(root, NULL, 0, paths, ELEMENTSOF(paths));
        assert_true(v->observable);
        assert_int_equal(v->error, 0);
        assert_null(v->detail);
        assert_int_equal(v->pid, 0);
        assert_true(v->pidfd < 0);
        assert_int_equal(v->resolve, expected_resolve());
        if (have_openat2())
                assert_null(v->note);
        else
                assert_string_equal(v->note, WALK_NOTE);
        assert_int_equal(v->mountinfo_error, 0);

        assert_content(&v->files[0], "ENROOT_MOUNT_HOME=yes\n");
        assert_true(v->files[0].have_stat);
        assert_int_equal(fstatat(root_fd, "etc/enroot/enroot.conf", &st, 0), 0);
        assert_true(v->files[0].ino == st.st_ino);
        assert_true(v->files[0].dev == st.st_dev);
        assert_int_equal(v->files[0].nlink, 1);
        assert_true(S_ISREG(v->files[0].mode));
        /* a plain file in a directory is no mount of its own */
        assert_true(v->files[0].mount_known);
        assert_false(v->files[0].mount_point);
        assert_null(v->files[0].mount_root);
        assert_null(v->files[0].mount_version);

        assert_content(&v->files[1], "NCCL_DEBUG=WARN\n");
        assert_int_equal(v->files[2].error, -ENOENT);
        assert_false(v->files[2].have_stat);
        assert_null(v->files[2].content);
        assert_int_equal(v->files[3].error, -EISDIR);
        assert_true(v->files[3].have_stat);           /* it exists: its facts are known */
        assert_int_equal(v->files[4].error, -EBADFD); /* and reading it did not block */
        assert_int_equal(v->files[5].error, -EFBIG);
        assert_null(v->files[5].content);
        assert_int_equal(v->files[6].size, MAX_BYTES);
        /* absolute and climbing links resolve inside the running root */
        assert_content(&v->files[7], "inside\n");
        assert_content(&v->files[8], "inside\n");
        assert_int_equal(v->files[9].error, -ELOOP);
        assert_int_equal(v->files[10].error, -ENOENT);
        assert_int_equal(v->files[11].error, -ENOTDIR);
        assert_content(&v->files[12], "ENROOT_MOUNT_HOME=yes\n");
}

static void test_running_root_missing(void **state) {
        static const char *const paths[] = {"/etc/enroot/enroot.conf"};
        _cleanup_(running_view_freep) RunningView *v = NULL;
        _cleanup_free_ char *missing = NULL, *want = NULL;

        assert_true(asprintf(&missing, "%s/nonexistent", dir) > 0);
        v = read_view(missing, NULL, 0, paths, 1);
        assert_false(v->observable);
        assert_int_equal(v->error, -ENOENT);
        assert_true(asprintf(&want,
                             "cannot open the running root \"%s\": No such file or directory",
                             missing) > 0);
        assert_string_equal(v->detail, want);
        assert_int_equal(v->files[0].error, -ENOENT);
        assert_null(v->files[0].content);
}

static void test_bad_config(void **state) {
        const char *paths[RUNNING_MAX_PATHS + 1];
        RunningConfig cfg = {.paths = paths, .max_bytes = MAX_BYTES};
        RunningView *v = NULL;

        for (size_t i = 0; i < ELEMENTSOF(paths); i++)
                paths[i] = "/etc/enroot/enroot.conf";

        cfg.n_paths = RUNNING_MAX_PATHS + 1;
        assert_int_equal(running_read(&cfg, 0, &v), -EINVAL);
        cfg.n_paths = RUNNING_MAX_PATHS;
        cfg.running_root = root;
        assert_int_equal(running_read(&cfg, 0, &v), 0);
        v = running_view_free(v);

        paths[0] = "etc/enroot/enroot.conf";
        cfg.n_paths = 1;
        assert_int_equal(running_read(&cfg, 0, &v), -EINVAL);
        paths[0] = "/etc/enroot/enroot.conf";
        cfg.target_process = "";
        assert_int_equal(running_read(&cfg, 0, &v), -EINVAL);
        assert_null(v);
}

/* ------------------------------------------------------------------------ */
/* Finding the process in a fake /proc */

/* A fake process: comm, stat, status (its uids), and ns/user, a hard link
 * of the tree's "self/ns/user" (the agent's user namespace) or, with
 * other_ns, a file of its own (another namespace: another inode). */
static void fake_process_as(int proc_fd, int pid, const char *comm, char state, int ppid,
                            unsigned uid, bool other_ns) {
        char path[64], stat[256];

        if (mkdirat(proc_fd, "self", 0755) == 0) {
                assert_int_equal(mkdirat(proc_fd, "self/ns", 0755), 0);
                write_at(proc_fd, "self/ns/user", "");
        }
        (void) snprintf(path, sizeof path, "%d", pid);
        assert_int_equal(mkdirat(proc_fd, path, 0755), 0);
        (void) snprintf(path, sizeof path, "%d/comm", pid);
        (void) snprintf(stat, sizeof stat, "%s\n", comm);
        write_at(proc_fd, path, stat);
        (void) snprintf(path, sizeof path, "%d/stat", pid);
        (void) snprintf(stat, sizeof stat, "%d (%s) %c %d 1 1 0 -1 4194560 0 0\n", pid, comm, state,
                        ppid);
        write_at(proc_fd, path, stat);
        (void) snprintf(path, sizeof path, "%d/status", pid);
        (void) snprintf(stat, sizeof stat,
                        "Name:\t%s\nUmask:\t0022\nState:\t%c\nPPid:\t%d\nUid:\t%u\t%u\t%u\t%u\n"
                        "Gid:\t0\t0\t0\t0\n",
                        comm, state, ppid, uid, uid, uid, uid);
        write_at(proc_fd, path, stat);
        (void) snprintf(path, sizeof path, "%d/ns", pid);
        assert_int_equal(mkdirat(proc_fd, path, 0755), 0);
        (void) snprintf(path, sizeof path, "%d/ns/user", pid);
        if (other_ns)
                write_at(proc_fd, path, "");
        else
                assert_int_equal(linkat(proc_fd, "self/ns/user", proc_fd, path, 0), 0);
}

static void fake_process(int proc_fd, int pid, const char *comm, char state, int ppid) {
        fake_process_as(proc_fd, pid, comm, state, ppid, 0, false);
}

static void test_find_process_fake(void **state) {
        _cleanup_close_ int proc_fd = -EBADF;
        _cleanup_free_ char *proc = NULL;
        char big[PROCESS_MAX_PROC_FILE_BYTES + 2];
        pid_t pid = 0;

        assert_true(asprintf(&proc, "%s/proc-find", dir) > 0);
        assert_int_equal(mkdir(proc, 0755), 0);
        proc_fd = open(proc, O_DIRECTORY | O_CLOEXEC);
        assert_true(proc_fd >= 0);

        assert_int_equal(process_find(proc, "slurmd", 0, &pid), -ESRCH);

        fake_process(proc_fd, 1, "tini", 'S', 0);
        /* a helper forked by slurmd, under its name, with a lower PID (wrap-around) */
        fake_process(proc_fd, 2, "slurmd", 'S', 9);
        fake_process(proc_fd, 9, "slurmd", 'S', 1);
        fake_process(proc_fd, 12, "slurmd", 'S', 1);
        /* a zombie is no process to read */
        fake_process(proc_fd, 4, "slurmd", 'Z', 1);
        /* comm holding ") " does not confuse the stat parser */
        fake_process(proc_fd, 3, "a) Z 1 (b", 'S', 1);
        assert_int_equal(mkdirat(proc_fd, "self-not-a-pid", 0755), 0);

        assert_int_equal(process_find(proc, "slurmd", 0, &pid), 0);
        assert_int_equal(pid, 9); /* parent is not slurmd, lowest of those */
        assert_int_equal(process_find(proc, "a) Z 1 (b", 0, &pid), 0);
        assert_int_equal(pid, 3);
        assert_int_equal(process_find(proc, "tini", 0, &pid), 0);
        assert_int_equal(pid, 1);
        assert_int_equal(process_find(proc, "slurm", 0, &pid), -ESRCH);
        assert_int_equal(process_find(proc, "slurmdd", 0, &pid), -ESRCH);

        /* the kernel keeps 15 bytes of a name: a longer one matches on those */
        fake_process(proc_fd, 20, "slurmd-with-a-l", 'S', 1);
        assert_int_equal(process_find(proc, "slurmd-with-a-long-name", 0, &pid), 0);
        assert_int_equal(pid, 20);

        /* PROCESS_MAX_PROC_FILE_BYTES: a larger comm file is skipped */
        memset(big, 'b', sizeof big - 1);
        big[sizeof big - 1] = '\0';
        fake_process(proc_fd, 30, "big", 'S', 1);
        write_at(proc_fd, "30/comm", big);
        assert_int_equal(process_find(proc, big, 0, &pid), -ESRCH);

        assert_int_equal(process_find("/nonexistent-proc", "slurmd", 0, &pid), -ENOENT);

        /* A login pod: users can name a process "sshd", with lower PIDs than
         * the daemon's (a supervisor restart, PID wrap-around). */
        fake_process_as(proc_fd, 5, "sshd", 'S', 1, 0, true); /* root in a namespace of its own */
        fake_process_as(proc_fd, 6, "sshd", 'S', 1, 1000, false); /* another uid */
        fake_process(proc_fd, 40, "sshd", 'S', 0);  /* the container's first process */
        fake_process(proc_fd, 41, "sshd", 'S', 40); /* one connection's */
        fake_process(proc_fd, 42, "bash", 'S', 41);
        fake_process(proc_fd, 43, "sshd", 'S', 42); /* root's, started from a session */
        assert_int_equal(process_find(proc, "sshd", 0, &pid), 0);
        assert_int_equal(pid, 40);
        /* the uid the deployment names */
        assert_int_equal(process_find(proc, "sshd", 1000, &pid), 0);
        assert_int_equal(pid, 6);
        assert_int_equal(process_find(proc, "sshd", 7, &pid), -ESRCH);

        /* below a shell (an entrypoint script), a child of init is preferred
         * whatever the PIDs */
        fake_process(proc_fd, 50, "sh", 'S', 0);
        fake_process(proc_fd, 51, "munged", 'S', 50);
        fake_process(proc_fd, 60, "munged", 'S', 1);
        assert_int_equal(process_find(proc, "munged", 0, &pid), 0);
        assert_int_equal(pid, 60);

        /* a status without uids is no process to trust */
        fake_process(proc_fd, 70, "nouid", 'S', 1);
        write_at(proc_fd, "70/status", "Name:\tnouid\n");
        assert_int_equal(process_find(proc, "nouid", 0, &pid), -ESRCH);

        /* PROCESS_MAX_PROC_FILE_BYTES of status are read: a long Groups line
         * after Uid is no matter, a Uid line past them is not seen */
        {
                char status[2 * PROCESS_MAX_PROC_FILE_BYTES + 64];
                size_t n;

                fake_process(proc_fd, 80, "groups", 'S', 1);
                n = (size_t) snprintf(status, sizeof status,
                                      "Name:\tgroups\nUid:\t0\t0\t0\t0\nGroups:");
                while (n < sizeof status - 8)
                        n += (size_t) snprintf(status + n, sizeof status - n, " %u", (unsigned) n);
                status[n] = '\0';
                write_at(proc_fd, "80/status", status);
                assert_int_equal(process_find(proc, "groups", 0, &pid), 0);
                assert_int_equal(pid, 80);

                fake_process(proc_fd, 81, "late", 'S', 1);
                memset(status, 'x', PROCESS_MAX_PROC_FILE_BYTES);
                (void) snprintf(status + PROCESS_MAX_PROC_FILE_BYTES,
                                sizeof status - PROCESS_MAX_PROC_FILE_BYTES,
                                "\nUid:\t0\t0\t0\t0\n");
                write_at(proc_fd, "81/status", status);
                assert_int_equal(process_find(proc, "late", 0, &pid), -ESRCH);
        }
}

/* The whole target mode on a fake tree: "root" and "mountinfo" are ours. */
static void test_target_fake_tree(void **state) {
        static const char *const paths[] = {"/etc/abs-link", "/etc/enroot/enroot.conf"};
        _cleanup_(running_view_freep) RunningView *v = NULL;
        _cleanup_close_ int proc_fd = -EBADF;
        _cleanup_free_ char *proc = NULL, *want = NULL;
        RunningConfig cfg = {.paths = paths, .n_paths = 2, .max_bytes = MAX_BYTES};

        assert_true(asprintf(&proc, "%s/proc-tree", dir) > 0);
        assert_int_equal(mkdir(proc, 0755), 0);
        proc_fd = open(proc, O_DIRECTORY | O_CLOEXEC);
        assert_true(proc_fd >= 0);
        fake_process(proc_fd, 7, "slurmd", 'S', 1);
        assert_int_equal(symlinkat(root, proc_fd, "7/root"), 0);
        write_at(proc_fd, "7/mountinfo",
                 "1 0 0:1 / / rw - t s rw\nbroken\n9 1 0:2 "
                 "/vol/..2026_12_02_14_00_00.1/enroot.conf//deleted "
                 "/etc/enroot/enroot.conf ro - t s rw\n");

        cfg.proc_dir = proc;
        cfg.target_process = "slurmd";
        assert_int_equal(running_read(&cfg, 0, &v), 0);
        assert_true(v->observable);
        assert_int_equal(v->pid, 7);
        /* no "self" link: not our procfs, so no pidfd, and the view says why */
        assert_true(v->pidfd < 0);
        assert_true(asprintf(&want,
                             "%s is not this PID namespace's procfs: the agent notices a restart "
                             "of \"slurmd\" only at the next resync%s",
                             proc, have_openat2() ? "" : "; " WALK_NOTE) > 0);
        assert_string_equal(v->note, want);
        assert_int_equal(v->mountinfo_error, 0);
        assert_int_equal(v->mountinfo_malformed, 1);
        /* the absolute link resolved in the process's root */
        assert_content(&v->files[0], "inside\n");
        assert_content(&v->files[1], "ENROOT_MOUNT_HOME=yes\n");
        /* statx() says the file is not a mount root here, whatever a (fake)
         * mountinfo claims about the path; without a mount ID from statx(),
         * the mountinfo entry on the path is all there is */
        assert_true(v->files[1].mount_known);
        assert_int_equal(v->files[1].mount_point, !have_statx_mnt_id());
        v = running_view_free(v);

        /* gone: the sentence a user needs */
        assert_int_equal(unlinkat(proc_fd, "7/comm", 0), 0);
        write_at(proc_fd, "7/comm", "other\n");
        assert_int_equal(running_read(&cfg, 7, &v), 0);
        assert_false(v->observable);
        assert_int_equal(v->error, -ESRCH);
        assert_string_equal(v->detail, "no process named \"slurmd\" in this PID namespace: is "
                                       "shareProcessNamespace: true set on the pod?");
        assert_int_equal(v->files[0].error, -ESRCH);
        assert_int_equal(v->files[1].error, -ESRCH);
        assert_int_equal(v->pid, 0);
        v = running_view_free(v);

        cfg.proc_dir = "/nonexistent-proc";
        assert_int_equal(running_read(&cfg, 0, &v), 0);
        assert_false(v->observable);
        assert_int_equal(v->error, -ENOENT);
        assert_string_equal(v->detail, "cannot open /nonexistent-proc: No such file or directory");
}

/* ------------------------------------------------------------------------ */
/* Target mode against real processes and the real /proc */

static void test_target_real(void **state) {
        _cleanup_free_ char *path = NULL;
        const char *const *paths;
        char name[16];
        pid_t a, b, c;
        int pidfd;

        strcpy(name, unique_name("a"));
        assert_true(asprintf(&path, "%s/etc/enroot/enroot.conf", root) > 0);
        paths = (const char *const *) &path;

        a = spawn(name, NULL, NULL, NULL);
        {
                _cleanup_(running_view_freep) RunningView *v = read_view(NULL, name, 0, paths, 1);
                assert_true(v->observable);
                assert_null(v->detail);
                assert_int_equal(v->pid, a);
                assert_target_note(v, name);
                assert_content(&v->files[0], "ENROOT_MOUNT_HOME=yes\n");
                /* a pidfd the manager can take and wait on */
                assert_int_equal(v->pidfd >= 0, have_pidfd_open());
                if (v->pidfd >= 0)
                        assert_false(pidfd_exited(v->pidfd, 0));
                pidfd = TAKE_FD(v->pidfd);
        }

        /* the container restarts: the pidfd wakes, the next read finds the new process */
        reap(a);
        if (pidfd >= 0) {
                assert_true(pidfd_exited(pidfd, 1000));
                (void) close(pidfd);
        }
        b = spawn(name, NULL, NULL, NULL);
        {
                _cleanup_(running_view_freep) RunningView *v = read_view(NULL, name, a, paths, 1);
                assert_true(v->observable);
                assert_int_equal(v->pid, b);
                assert_int_equal(v->pidfd >= 0, have_pidfd_open());
        }

        /* a second process with the name: the one read last is kept */
        c = spawn(name, NULL, NULL, NULL);
        {
                _cleanup_(running_view_freep) RunningView *v = read_view(NULL, name, c, paths, 1);
                assert_int_equal(v->pid, c);
        }
        {
                _cleanup_(running_view_freep) RunningView *v = read_view(NULL, name, 0, paths, 1);
                assert_int_equal(v->pid, b < c ? b : c);
        }

        /* an unreaped (zombie) process is gone for us */
        (void) kill(b, SIGKILL);
        (void) kill(c, SIGKILL);
        {
                siginfo_t si;
                assert_int_equal(waitid(P_PID, (id_t) b, &si, WEXITED | WNOWAIT), 0);
                assert_int_equal(waitid(P_PID, (id_t) c, &si, WEXITED | WNOWAIT), 0);
        }
        {
                _cleanup_(running_view_freep) RunningView *v = read_view(NULL, name, b, paths, 1);
                _cleanup_free_ char *want = NULL;

                assert_false(v->observable);
                assert_int_equal(v->error, -ESRCH);
                assert_int_equal(v->pid, 0);
                assert_true(v->pidfd < 0);
                assert_true(asprintf(&want,
                                     "no process named \"%s\" in this PID namespace: is "
                                     "shareProcessNamespace: true set on the pod?",
                                     name) > 0);
                assert_string_equal(v->detail, want);
        }
        assert_int_equal(waitpid(b, NULL, 0), b);
        assert_int_equal(waitpid(c, NULL, 0), c);
}

static void test_target_long_name(void **state) {
        const char *const paths[] = {"/etc/hostname"};
        char long_name[64];
        pid_t a;

        (void) snprintf(long_name, sizeof long_name, "%s-with-a-long-name", unique_name("l"));
        assert_true(strlen(long_name) > PROCESS_COMM_MAX);

        /* PR_SET_NAME keeps the first 15 bytes, as execve() does with a file name */
        a = spawn(long_name, NULL, NULL, NULL);
        {
                _cleanup_(running_view_freep) RunningView *v = NULL;
                pid_t found = 0;

                assert_int_equal(process_find(NULL, long_name, getuid(), &found), 0);
                assert_int_equal(found, a);
                v = read_view(NULL, long_name, 0, paths, 1);
                assert_int_equal(v->pid, a);
        }
        reap(a);
}

/* The process's root is the container's: absolute links resolve there. */
static void test_target_chroot(void **state) {
        static const char *const paths[] = {"/etc/enroot/enroot.conf", "/etc/abs-link",
                                            "/etc/up-link", "/etc/dangling"};
        _cleanup_(running_view_freep) RunningView *v = NULL;
        const char *name = unique_name("c");
        pid_t a;

        if (geteuid() != 0)
                skip_test("target-chroot-not-root", "chroot(2) needs root");

        a = spawn(name, root, NULL, NULL);
        v = read_view(NULL, name, 0, paths, ELEMENTSOF(paths));
        assert_true(v->observable);
        assert_int_equal(v->pid, a);
        assert_content(&v->files[0], "ENROOT_MOUNT_HOME=yes\n");
        assert_content(&v->files[1], "inside\n");
        assert_content(&v->files[2], "inside\n");
        assert_int_equal(v->files[3].error, -ENOENT);
        reap(a);
}

/* Another uid without CAP_SYS_PTRACE: the sentence names what is missing. */
static void test_target_permission(void **state) {
        static const char *const paths[] = {"/etc/enroot/enroot.conf"};
        const char *name = unique_name("p");
        char buf[512] = {}, want[512];
        int p[2], status = 0;
        pid_t a, child;
        ssize_t n;

        if (geteuid() != 0)
                skip_test("target-permission-not-root",
                          "starting a process of another uid needs root");

        a = spawn(name, NULL, NULL, NULL);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                RunningConfig cfg = {.target_process = name,
                                     .paths = paths,
                                     .n_paths = 1,
                                     .max_bytes = MAX_BYTES};
                RunningView *v = NULL;

                (void) close(p[0]);
                if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
                    setresuid(65534, 65534, 65534) < 0)
                        _exit(2);
                if (running_read(&cfg, 0, &v) < 0)
                        _exit(3);
                dprintf(p[1], "%d %d %d %d %s", v->observable, v->error, v->files[0].error,
                        (int) v->pid, v->detail ? v->detail : "(null)");
                running_view_free(v);
                _exit(0);
        }
        (void) close(p[1]);
        n = read(p[0], buf, sizeof buf - 1);
        (void) close(p[0]);
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_true(n > 0);
        (void) snprintf(want, sizeof want,
                        "0 %d %d %d cannot open /proc/%d/root: Permission denied: the agent needs "
                        "the same uid as the process or CAP_SYS_PTRACE",
                        -EACCES, -EACCES, (int) a, (int) a);
        assert_string_equal(buf, want);
        reap(a);
}

/* ------------------------------------------------------------------------ */
/* Bind mounts: what kubelet's subPath does, and its atomic writer's update */

#define V1 "..2026_12_02_14_00_00.123456789"
#define V2 "..2026_12_02_14_05_00.987654321"

/* The atomic writer's last step: rm -r of the old version directory. */
static void kubelet_remove(int vol_fd, const char *version) {
        char path[128];

        (void) snprintf(path, sizeof path, "%s/enroot.conf", version);
        assert_int_equal(unlinkat(vol_fd, path, 0), 0);
        assert_int_equal(unlinkat(vol_fd, version, AT_REMOVEDIR), 0);
}

/* kubelet's atomic writer: new version directory, ..data flipped by
 * rename(2), old version removed. */
static void kubelet_update(int vol_fd, const char *version, const char *content,
                           const char *old_version) {
        char path[128];

        assert_int_equal(mkdirat(vol_fd, version, 0755), 0);
        (void) snprintf(path, sizeof path, "%s/enroot.conf", version);
        write_at(vol_fd, path, content);
        assert_int_equal(symlinkat(version, vol_fd, "..data_tmp"), 0);
        assert_int_equal(renameat(vol_fd, "..data_tmp", vol_fd, "..data"), 0);
        if (old_version)
                kubelet_remove(vol_fd, old_version);
}

static void assert_mount(const RunningFile *f, const char *content, unsigned long nlink,
                         const char *version, bool deleted) {
        assert_content(f, content);
        assert_int_equal(f->nlink, nlink);
        assert_true(f->mount_known);
        assert_true(f->mount_point);
        assert_true(f->mount_id != 0);
        assert_non_null(f->mount_root);
        assert_string_equal(f->mount_version, version);
        assert_int_equal(f->mount_deleted, deleted);
        assert_int_equal(endswith(f->mount_root, "//deleted"), deleted);
}

/* A sidecar reads the subPath mount of another mount namespace. */
static void test_target_bind_mount(void **state) {
        _cleanup_free_ char *source = NULL, *target = NULL;
        _cleanup_close_ int vol_fd = -EBADF;
        const char *name = unique_name("m");
        const char *const *paths;
        pid_t a;

        if (geteuid() != 0)
                skip_test("target-bind-mount-not-root", "mounting needs root");

        mkdirs_at(dir_fd, "vol-target");
        vol_fd = openat(dir_fd, "vol-target", O_DIRECTORY | O_CLOEXEC);
        assert_true(vol_fd >= 0);
        kubelet_update(vol_fd, V1, "A=1\n", NULL);
        assert_true(asprintf(&source, "%s/vol-target/%s/enroot.conf", dir, V1) > 0);
        assert_true(asprintf(&target, "%s/etc/enroot/enroot.conf", root) > 0);
        paths = (const char *const *) &target;

        a = fork();
        assert_true(a >= 0);
        if (a == 0) {
                /* can this machine mount at all? */
                if (unshare(CLONE_NEWNS) < 0 ||
                    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
                        _exit(77);
                _exit(0);
        } else {
                int status = 0;
                assert_int_equal(waitpid(a, &status, 0), a);
                if (WEXITSTATUS(status) == 77)
                        skip_test("target-bind-mount-no-mount-namespace",
                                  "no private mount namespace here");
        }

        a = spawn(name, NULL, source, target);
        {
                _cleanup_(running_view_freep) RunningView *v = read_view(NULL, name, 0, paths, 1);
                assert_true(v->observable);
                assert_mount(&v->files[0], "A=1\n", 1, V1, false);
        }
        /* our own namespace has no such mount: the view used the process's */
        {
                _cleanup_(running_view_freep) RunningView *v = read_view(NULL, NULL, 0, paths, 1);
                assert_content(&v->files[0], "ENROOT_MOUNT_HOME=yes\n");
                assert_false(v->files[0].mount_point);
        }

        kubelet_update(vol_fd, V2, "A=2\n", V1);
        {
                _cleanup_(running_view_freep) RunningView *v = read_view(NULL, name, a, paths, 1);
                assert_int_equal(v->pid, a);
                /* the old content stays readable, from an unlinked inode */
                assert_mount(&v->files[0], "A=1\n", 0, V1, true);
        }
        reap(a);
}

/* Moves this test process into a private mount namespace; false, with the
 * SKIP line for the check ID printed, when it cannot. */
static bool enter_private_mount_namespace(const char *id) {
        if (geteuid() != 0) {
                skip_part(id, "mounting needs root");
                return false;
        }
        if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0) {
                skip_part(id, "no private mount namespace here: %s", strerror(errno));
                return false;
        }
        return true;
}

/* A kubelet-style volume VOL (under dir) with version V1 ("B=1"), whose
 * enroot.conf is bind-mounted over root's /etc/enroot/enroot.conf as a
 * subPath mount is. Returns the volume's fd; *ret_target is the mount point. */
static int mount_first_version(const char *vol, char **ret_target) {
        _cleanup_free_ char *source = NULL;
        int vol_fd;

        mkdirs_at(dir_fd, vol);
        vol_fd = openat(dir_fd, vol, O_DIRECTORY | O_CLOEXEC);
        assert_true(vol_fd >= 0);
        kubelet_update(vol_fd, V1, "B=1\n", NULL);
        assert_true(asprintf(&source, "%s/%s/%s/enroot.conf", dir, vol, V1) > 0);
        assert_true(asprintf(ret_target, "%s/etc/enroot/enroot.conf", root) > 0);
        assert_int_equal(mount(source, *ret_target, "none", MS_BIND, NULL), 0);
        return vol_fd;
}

/* The agent in the workload container itself: default mode, our mountinfo.
 * Runs last: it moves this test process into a private mount namespace. */
static void test_default_bind_mount(void **state) {
        static const char *const paths[] = {"/etc/enroot/enroot.conf"};
        _cleanup_free_ char *target = NULL;
        _cleanup_close_ int vol_fd = -EBADF;

        if (!enter_private_mount_namespace("default-bind-mount"))
                skip();
        vol_fd = mount_first_version("vol-default", &target);

        {
                _cleanup_(running_view_freep) RunningView *v = read_view(root, NULL, 0, paths, 1);
                assert_true(v->observable);
                assert_mount(&v->files[0], "B=1\n", 1, V1, false);
        }
        /* a mount stacked on top is the one read and reported (kubelet never
         * does this, but a container runtime or an operator might) */
        kubelet_update(vol_fd, V2, "B=2\n", NULL);
        {
                _cleanup_free_ char *v2 = NULL;
                assert_true(asprintf(&v2, "%s/vol-default/%s/enroot.conf", dir, V2) > 0);
                assert_int_equal(mount(v2, target, "none", MS_BIND, NULL), 0);
        }
        {
                _cleanup_(running_view_freep) RunningView *v = read_view(root, NULL, 0, paths, 1);
                assert_mount(&v->files[0], "B=2\n", 1, V2, false);
        }
        assert_int_equal(umount2(target, MNT_DETACH), 0);

        /* the writer removes the old version: superseded */
        kubelet_remove(vol_fd, V1);
        {
                _cleanup_(running_view_freep) RunningView *v = read_view(root, NULL, 0, paths, 1);
                assert_mount(&v->files[0], "B=1\n", 0, V1, true);
        }
        assert_int_equal(umount2(target, MNT_DETACH), 0);
}

/* The same, with the daemon's mountinfo cache: the mount table is read
 * again only when a mount changes, and what changes without a mount event
 * (the subPath file's version removed) is still seen, from st_nlink. */
static void test_mountinfo_cache(void **state) {
        static const char *const paths[] = {"/etc/enroot/enroot.conf"};
        _cleanup_(mountinfo_cache_freep) MountInfoCache *cache = NULL;
        _cleanup_free_ char *target = NULL, *proc = NULL;
        _cleanup_close_ int vol_fd = -EBADF, proc_fd = -EBADF;

        assert_int_equal(mountinfo_cache_new(&cache), 0);
        view_cache = cache;

        /* a mountinfo that is not procfs' (a test's fake) is read every time */
        assert_true(asprintf(&proc, "%s/proc-cache", dir) > 0);
        assert_int_equal(mkdir(proc, 0755), 0);
        proc_fd = open(proc, O_DIRECTORY | O_CLOEXEC);
        assert_true(proc_fd >= 0);
        fake_process(proc_fd, 8, "slurmd", 'S', 1);
        assert_int_equal(symlinkat(root, proc_fd, "8/root"), 0);
        write_at(proc_fd, "8/mountinfo", "1 0 0:1 / / rw - t s rw\n");
        {
                RunningConfig cfg = {.paths = paths,
                                     .n_paths = 1,
                                     .max_bytes = MAX_BYTES,
                                     .proc_dir = proc,
                                     .target_process = "slurmd",
                                     .mountinfo = cache};
                for (int i = 0; i < 2; i++) {
                        _cleanup_(running_view_freep) RunningView *v = NULL;
                        assert_int_equal(running_read(&cfg, 0, &v), 0);
                        assert_true(v->observable);
                }
                assert_int_equal(mountinfo_cache_reads(cache), 2);
        }

        if (!enter_private_mount_namespace("cache-bind-mount")) {
                view_cache = NULL;
                skip();
        }
        vol_fd = mount_first_version("vol-cache", &target);

        {
                unsigned before = mountinfo_cache_reads(cache);
                _cleanup_(running_view_freep) RunningView *v = read_view(root, NULL, 0, paths, 1);
                assert_mount(&v->files[0], "B=1\n", 1, V1, false);
                assert_int_equal(mountinfo_cache_reads(cache), before + 1);
        }
        /* nothing mounted since: the table is not read again */
        for (int i = 0; i < 3; i++) {
                unsigned before = mountinfo_cache_reads(cache);
                _cleanup_(running_view_freep) RunningView *v = read_view(root, NULL, 0, paths, 1);
                assert_mount(&v->files[0], "B=1\n", 1, V1, false);
                assert_int_equal(mountinfo_cache_reads(cache), before);
        }
        /* the writer removes the old version: no mount event, still superseded */
        kubelet_update(vol_fd, V2, "B=2\n", NULL);
        kubelet_remove(vol_fd, V1);
        {
                unsigned before = mountinfo_cache_reads(cache);
                _cleanup_(running_view_freep) RunningView *v = read_view(root, NULL, 0, paths, 1);
                assert_content(&v->files[0], "B=1\n");
                assert_int_equal(v->files[0].nlink, 0);
                assert_string_equal(v->files[0].mount_version, V1);
                assert_true(v->files[0].mount_deleted);
                assert_int_equal(mountinfo_cache_reads(cache), before);
        }
        /* a mount event: read again, and the kernel's own "//deleted" agrees */
        assert_int_equal(umount2(target, MNT_DETACH), 0);
        {
                _cleanup_free_ char *v2 = NULL;
                assert_true(asprintf(&v2, "%s/vol-cache/%s/enroot.conf", dir, V2) > 0);
                assert_int_equal(mount(v2, target, "none", MS_BIND, NULL), 0);
        }
        {
                unsigned before = mountinfo_cache_reads(cache);
                _cleanup_(running_view_freep) RunningView *v = read_view(root, NULL, 0, paths, 1);
                assert_mount(&v->files[0], "B=2\n", 1, V2, false);
                assert_int_equal(mountinfo_cache_reads(cache), before + 1);
        }
        assert_int_equal(umount2(target, MNT_DETACH), 0);
        view_cache = NULL;
}

/* ------------------------------------------------------------------------ */
/* Impostors: processes of the target's name that are not the workload's */

/* A fake tree with the daemon (PID 7, its root the test's) and two
 * impostors with lower PIDs whose roots hold an enroot.conf of their own. */
static char *impostor_tree(int *ret_proc_fd) {
        char *proc = NULL;
        int proc_fd;

        assert_true(asprintf(&proc, "%s/proc-impostor", dir) > 0);
        assert_int_equal(mkdir(proc, 0755), 0);
        proc_fd = open(proc, O_DIRECTORY | O_CLOEXEC);
        assert_true(proc_fd >= 0);
        mkdirs_at(dir_fd, "impostor/etc/enroot");
        write_at(dir_fd, "impostor/etc/enroot/enroot.conf", "ENROOT_REMAP_ROOT=no\n");

        fake_process_as(proc_fd, 3, "sshd", 'S', 1, 0, true);
        fake_process_as(proc_fd, 4, "sshd", 'S', 1, 1000, false);
        fake_process(proc_fd, 7, "sshd", 'S', 0);
        {
                char impostor[PATH_MAX];
                (void) snprintf(impostor, sizeof impostor, "%s/impostor", dir);
                assert_int_equal(symlinkat(impostor, proc_fd, "3/root"), 0);
                assert_int_equal(symlinkat(impostor, proc_fd, "4/root"), 0);
        }
        assert_int_equal(symlinkat(root, proc_fd, "7/root"), 0);
        *ret_proc_fd = proc_fd;
        return proc;
}

static RunningView *read_fake(const char *proc, pid_t last_pid, RunningMemo *memo) {
        static const char *const paths[] = {"/etc/enroot/enroot.conf"};
        RunningConfig cfg = {.proc_dir = proc,
                             .target_process = "sshd",
                             .paths = paths,
                             .n_paths = 1,
                             .max_bytes = MAX_BYTES,
                             .memo = memo};
        RunningView *v = NULL;

        assert_int_equal(running_read(&cfg, last_pid, &v), 0);
        return v;
}

#define WARN_IGNORED                                                                        \
        "Ignoring a process of the target's name: PID 3: it is in another user namespace "  \
        "(inode %llu, the agent's is %llu). And PID 4: it runs as uid 1000 (real, "         \
        "effective, saved, filesystem: 1000 1000 1000 1000), not 0. Only a process in the " \
        "agent's user namespace with uid 0 is read as \"sshd\"."

static void test_target_impostor_fake(void **state) {
        _cleanup_(running_memo_freep) RunningMemo *memo = NULL;
        _cleanup_close_ int proc_fd = -EBADF;
        _cleanup_free_ char *proc = NULL, *want = NULL;
        struct stat own, other;

        proc = impostor_tree(&proc_fd);
        assert_int_equal(fstatat(proc_fd, "self/ns/user", &own, 0), 0);
        assert_int_equal(fstatat(proc_fd, "3/ns/user", &other, 0), 0);
        assert_true(asprintf(&want, WARN_IGNORED, (unsigned long long) other.st_ino,
                             (unsigned long long) own.st_ino) > 0);
        assert_int_equal(running_memo_new(&memo), 0);

        /* the daemon's files, and the impostors named once */
        {
                _cleanup_(running_view_freep) RunningView *v = read_fake(proc, 0, memo);
                assert_true(v->observable);
                assert_int_equal(v->pid, 7);
                assert_content(&v->files[0], "ENROOT_MOUNT_HOME=yes\n");
                assert_string_equal(v->warning, want);
        }
        {
                _cleanup_(running_view_freep) RunningView *v = read_fake(proc, 0, memo);
                assert_int_equal(v->pid, 7);
                assert_null(v->warning);
        }
        /* a PID the agent read before, taken over by an impostor, is not kept */
        {
                _cleanup_(running_view_freep) RunningView *v = read_fake(proc, 4, memo);
                assert_int_equal(v->pid, 7);
                assert_null(v->warning);
        }
        /* without a memo, every look says it */
        {
                _cleanup_(running_view_freep) RunningView *v = read_fake(proc, 0, NULL);
                assert_string_equal(v->warning, want);
        }

        /* a second process that could be the daemon: warned about once, by PIDs */
        fake_process(proc_fd, 9, "sshd", 'S', 0);
        assert_int_equal(symlinkat(root, proc_fd, "9/root"), 0);
        {
                _cleanup_(running_view_freep) RunningView *v = read_fake(proc, 0, memo);
                assert_int_equal(v->pid, 7);
                assert_string_equal(v->warning,
                                    "Several processes named \"sshd\" could be the workload's "
                                    "(PIDs 7, 9): reading PID 7 (a child of the PID namespace's "
                                    "init first, then the lowest PID).");
        }
        {
                _cleanup_(running_view_freep) RunningView *v = read_fake(proc, 0, memo);
                assert_null(v->warning);
        }
        /* a new impostor: only it is named */
        fake_process_as(proc_fd, 2, "sshd", 'S', 1, 65534, false);
        {
                _cleanup_(running_view_freep) RunningView *v = read_fake(proc, 0, memo);
                assert_int_equal(v->pid, 7);
                assert_string_equal(
                        v->warning,
                        "Ignoring a process of the target's name: PID 2: it runs as uid 65534 "
                        "(real, effective, saved, filesystem: 65534 65534 65534 65534), not 0. "
                        "Only a process in the agent's user namespace with uid 0 is read as "
                        "\"sshd\".");
        }

        /* only impostors left: nothing is read, and the sentence says why */
        write_at(proc_fd, "7/comm", "other\n");
        write_at(proc_fd, "9/comm", "other\n");
        {
                _cleanup_(running_view_freep) RunningView *v = read_fake(proc, 7, memo);
                assert_false(v->observable);
                assert_int_equal(v->error, -ESRCH);
                assert_int_equal(v->pid, 0);
                assert_int_equal(v->files[0].error, -ESRCH);
                assert_null(v->files[0].content);
                assert_string_equal(v->detail,
                                    "no process named \"sshd\" runs as uid 0 in the agent's user "
                                    "namespace (3 of that name ignored: the log says why)");
                assert_null(v->warning);
        }
}

/* A real process of the name: PR_SET_NAME, after unshare(CLONE_NEWUSER)
 * (root in a namespace of its own, as "unshare -Ur" makes it) or after
 * dropping to uid. Returns once it runs under that name; 0 when the kernel
 * refuses the namespace (the caller skips). */
static pid_t spawn_impostor(const char *name, bool userns, uid_t uid) {
        int p[2];
        pid_t pid;
        char c = 0;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                (void) close(p[0]);
                if (userns && unshare(CLONE_NEWUSER) < 0)
                        _exit(77);
                if (!userns && (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
                                setresuid(uid, uid, uid) < 0))
                        _exit(2);
                /* after the uid change, which clears it */
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || prctl(PR_SET_NAME, name) < 0 ||
                    write(p[1], "r", 1) != 1)
                        _exit(3);
                for (;;)
                        pause();
        }
        (void) close(p[1]);
        if (read(p[0], &c, 1) != 1) {
                int status = 0;
                (void) close(p[0]);
                assert_int_equal(waitpid(pid, &status, 0), pid);
                if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
                        return 0;
                fail_msg("impostor could not set itself up (exit %d)", WEXITSTATUS(status));
        }
        (void) close(p[0]);
        return pid;
}

/* The same against the real /proc: the impostors start first (lower PIDs). */
static void test_target_impostor_real(void **state) {
        _cleanup_free_ char *path = NULL, *ns = NULL, *uid = NULL;
        const char *const *paths;
        char name[16];
        pid_t in_ns, other_uid, daemon;

        if (geteuid() != 0)
                skip_test("impostor-not-root", "starting a process of another uid needs root");
        strcpy(name, unique_name("i"));
        assert_true(asprintf(&path, "%s/etc/enroot/enroot.conf", root) > 0);
        paths = (const char *const *) &path;

        in_ns = spawn_impostor(name, true, 0);
        if (in_ns == 0)
                skip_test("impostor-no-user-namespace", "unshare(CLONE_NEWUSER) is refused here");
        other_uid = spawn_impostor(name, false, 65534);
        daemon = spawn(name, NULL, NULL, NULL);
        assert_true(in_ns < daemon && other_uid < daemon);

        {
                _cleanup_(running_view_freep) RunningView *v = read_view(NULL, name, 0, paths, 1);
                assert_true(v->observable);
                assert_int_equal(v->pid, daemon);
                assert_content(&v->files[0], "ENROOT_MOUNT_HOME=yes\n");
                assert_non_null(v->warning);
                assert_true(asprintf(&ns, "PID %d: it is in another user namespace", (int) in_ns) >
                            0);
                assert_true(asprintf(&uid, "PID %d: it runs as uid 65534", (int) other_uid) > 0);
                assert_non_null(strstr(v->warning, ns));
                assert_non_null(strstr(v->warning, uid));
        }
        reap(daemon);
        {
                _cleanup_(running_view_freep) RunningView *v =
                        read_view(NULL, name, daemon, paths, 1);
                assert_false(v->observable);
                assert_int_equal(v->error, -ESRCH);
                assert_int_equal(v->pid, 0);
        }
        reap(in_ns);
        reap(other_uid);
}

/* ------------------------------------------------------------------------ */
/* What is not a regular file is never opened */

/* A FIFO with a writer blocked in open(2): the open returns, and the writer
 * says so, only once a reader opens the FIFO. */
static void test_fifo_not_opened(void **state) {
        static const char *const paths[] = {"/etc/fifo-writer"};
        char fifo[PATH_MAX], c;
        struct pollfd pfd;
        int p[2], fd;
        pid_t writer;

        (void) snprintf(fifo, sizeof fifo, "%s/etc/fifo-writer", root);
        assert_int_equal(mkfifo(fifo, 0644), 0);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        writer = fork();
        assert_true(writer >= 0);
        if (writer == 0) {
                (void) close(p[0]);
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (open(fifo, O_WRONLY | O_CLOEXEC) < 0 || write(p[1], "o", 1) != 1)
                        _exit(1);
                _exit(0);
        }
        (void) close(p[1]);
        usleep(50 * 1000); /* let the writer block in open() */
        {
                _cleanup_(running_view_freep) RunningView *v = read_view(root, NULL, 0, paths, 1);
                assert_int_equal(v->files[0].error, -EBADFD);
                assert_null(v->files[0].content);
                assert_true(v->files[0].have_stat);
                assert_true(S_ISFIFO(v->files[0].mode));
        }
        pfd = (struct pollfd){.fd = p[0], .events = POLLIN};
        if (poll(&pfd, 1, 200) != 0)
                fail_msg("the agent opened the FIFO: its writer's open() returned");

        /* release the writer */
        fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(read(p[0], &c, 1), 1);
        assert_int_equal(waitpid(writer, NULL, 0), writer);
        (void) close(fd);
        (void) close(p[0]);
        assert_int_equal(unlink(fifo), 0);
}

/* Devices, and files of procfs and sysfs, reached by name or through a
 * link in the running root: a link to /proc/self/environ would hand over
 * the agent's environment. */
static void test_kernel_files_refused(void **state) {
        _cleanup_free_ char *environ_link = NULL, *status_link = NULL;
        const char *paths[5];
        struct stat st;

        assert_int_equal(symlinkat("/proc/self/environ", root_fd, "etc/environ-link"), 0);
        assert_int_equal(symlinkat("/proc/self/status", root_fd, "etc/status-link"), 0);
        assert_true(asprintf(&environ_link, "%s/etc/environ-link", root) > 0);
        assert_true(asprintf(&status_link, "%s/etc/status-link", root) > 0);
        paths[0] = environ_link;
        paths[1] = status_link;
        paths[2] = "/proc/self/environ";
        paths[3] = "/dev/null";
        paths[4] = stat("/sys/kernel/uevent_seqnum", &st) == 0 ? "/sys/kernel/uevent_seqnum"
                                                               : "/proc/version";

        /* running root "/": the links resolve to the agent's own /proc */
        {
                _cleanup_(running_view_freep) RunningView *v = read_view("/", NULL, 0, paths, 5);
                assert_true(v->observable);
                for (size_t i = 0; i < 5; i++) {
                        const RunningFile *f = &v->files[i];

                        assert_int_equal(f->error, i == 3 ? -EBADFD : -EMEDIUMTYPE);
                        assert_null(f->content);
                        assert_int_equal(f->size, 0);
                        assert_true(f->have_stat);
                }
                assert_true(S_ISCHR(v->files[3].mode));
        }
        assert_int_equal(unlinkat(root_fd, "etc/environ-link", 0), 0);
        assert_int_equal(unlinkat(root_fd, "etc/status-link", 0), 0);
}

/* A mount root whose version directory holds a newline and an escape
 * (mountinfo shows them as \012 and \033, decoded on parsing): no version,
 * and the note shows neither byte. */
static void test_bad_version_mount(void **state) {
        _cleanup_free_ char *source = NULL, *target = NULL, *want = NULL;
        const char *name = unique_name("v");
        const char *bad = "..2026_12_02_14_00_00.1\n\033[31m";
        const char *const *paths;
        pid_t a;

        if (geteuid() != 0)
                skip_test("bad-version-mount-not-root", "mounting needs root");
        mkdirs_at(dir_fd, "vol-bad");
        {
                char sub[PATH_MAX];
                (void) snprintf(sub, sizeof sub, "vol-bad/%s", bad);
                assert_int_equal(mkdirat(dir_fd, sub, 0755), 0);
                (void) snprintf(sub, sizeof sub, "vol-bad/%s/enroot.conf", bad);
                write_at(dir_fd, sub, "A=1\n");
        }
        assert_true(asprintf(&source, "%s/vol-bad/%s/enroot.conf", dir, bad) > 0);
        assert_true(asprintf(&target, "%s/etc/enroot/enroot.conf", root) > 0);
        paths = (const char *const *) &target;

        a = spawn(name, NULL, source, target);
        {
                _cleanup_(running_view_freep) RunningView *v = read_view(NULL, name, 0, paths, 1);
                const RunningFile *f = &v->files[0];

                assert_true(v->observable);
                assert_content(f, "A=1\n");
                assert_true(f->mount_point);
                assert_null(f->mount_version);
                assert_false(f->mount_deleted);
                assert_non_null(v->note);
                assert_true(asprintf(&want,
                                     "%s is mounted from \"%s/vol-bad/..2026_12_02_14_00_00.1??"
                                     "[31m/enroot.conf\", whose directory is not a kubelet "
                                     "version (..YYYY_MM_DD_hh_mm_ss.N): its ConfigMap version "
                                     "is unknown",
                                     target, dir) > 0);
                assert_non_null(strstr(v->note, want));
                for (const char *p = v->note; *p; p++)
                        assert_false((unsigned char) *p < 0x20 || *p == 0x7f);
        }
        reap(a);
}

/* The descriptor kept for reopening running files is not one of the
 * agent's own: process_open_fds leaves it out, as it does the two kept for
 * the statistics. */
static void test_kept_fd_not_counted(void **state) {
        _cleanup_close_ int slash = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct statx sx;
        bool have_stat;
        ProcessStats p;
        uint64_t listed = 0;
        DIR *d;
        int fd;

        /* the kept descriptors exist: the reopen's and the statistics' */
        fd = root_open_regular(slash, "/etc/passwd", NULL, &sx, &have_stat);
        assert_true(fd >= 0);
        (void) close(fd);
        assert_true(root_open_kept_fd() >= 0);
        assert_int_equal(process_stats_read(&p), 0);

        d = opendir("/proc/self/fd");
        assert_non_null(d);
        for (struct dirent *de; (de = readdir(d));)
                if (de->d_name[0] != '.')
                        listed++;
        (void) closedir(d);
        assert_int_equal(process_stats_read(&p), 0);
        /* less this listing's own, the statistics' two and the reopen's */
        assert_int_equal(p.open_fds, listed - 1 - 2 - 1);
        (void) state;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_running_root),
                cmocka_unit_test(test_running_root_missing),
                cmocka_unit_test(test_bad_config),
                cmocka_unit_test(test_find_process_fake),
                cmocka_unit_test(test_target_fake_tree),
                cmocka_unit_test(test_target_real),
                cmocka_unit_test(test_target_long_name),
                cmocka_unit_test(test_target_chroot),
                cmocka_unit_test(test_target_permission),
                cmocka_unit_test(test_target_bind_mount),
                cmocka_unit_test(test_target_impostor_fake),
                cmocka_unit_test(test_target_impostor_real),
                cmocka_unit_test(test_fifo_not_opened),
                cmocka_unit_test(test_kernel_files_refused),
                cmocka_unit_test(test_bad_version_mount),
                cmocka_unit_test(test_default_bind_mount),
                cmocka_unit_test(test_mountinfo_cache),
                cmocka_unit_test(test_kept_fd_not_counted),
        };
        return unit_skip_status(cmocka_run_group_tests(tests, setup, teardown));
}
