/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The workload's process by name (process.h).
 *
 * A name proves little: any process of the shared PID namespace could call
 * itself NAME (prctl(PR_SET_NAME)), and a user of a login pod can start one
 * under "unshare -Urm" with an enroot.conf of their own. Hence the user
 * namespace and uid filter, and an order of preference that favours the
 * long-lived daemon over its children and look-alikes.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include "fileio.h"
#include "macro.h"
#include "process.h"

static void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

/* The PID procfs at proc_fd gives us through "self", or 0 (a fake tree, or a
 * procfs of another PID namespace, where "self" names nobody or someone else). */
static pid_t proc_self_pid(int proc_fd) {
        char buf[32];
        ssize_t n;
        long v;
        char *e;

        n = readlinkat(proc_fd, "self", buf, sizeof buf - 1);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        errno = 0;
        v = strtol(buf, &e, 10);
        if (errno != 0 || *e != '\0' || v <= 0 || v > INT_MAX)
                return 0;
        return (pid_t) v;
}

static bool parse_pid(const char *s, pid_t *ret) {
        long v = 0;

        if (!*s)
                return false;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return false;
                v = v * 10 + (*s - '0');
                if (v > INT_MAX)
                        return false;
        }
        if (v <= 0)
                return false;
        *ret = (pid_t) v;
        return true;
}

/* comm as the kernel keeps it: at most PROCESS_COMM_MAX bytes. */
static bool comm_equal(const char *comm, const char *name) {
        size_t l = strnlen(name, PROCESS_COMM_MAX);
        return strlen(comm) == l && strncmp(comm, name, l) == 0;
}

/* 1 when dir_fd/path (a comm file) names name, 0 when another, -errno. */
static int comm_is_at(int dir_fd, const char *path, const char *name) {
        _cleanup_free_ char *data = NULL;
        size_t len;
        int r;

        r = read_file_at(dir_fd, path, 0, PROCESS_MAX_PROC_FILE_BYTES, &data, &len);
        if (r < 0)
                return r;
        if (len > 0 && data[len - 1] == '\n')
                data[--len] = '\0';
        if (strlen(data) != len)
                return 0;
        return comm_equal(data, name);
}

/* Field 3 (state) and 4 (ppid) of proc(5) stat. comm (field 2) may hold
 * spaces and parentheses: parse from its last ')'. */
static int stat_at(int dir_fd, const char *path, char *ret_state, pid_t *ret_ppid) {
        _cleanup_free_ char *data = NULL;
        const char *p;
        size_t len;
        int ppid;
        char state;
        int r;

        r = read_file_at(dir_fd, path, 0, PROCESS_MAX_PROC_FILE_BYTES, &data, &len);
        if (r < 0)
                return r;
        p = strrchr(data, ')');
        if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2)
                return -EINVAL;
        *ret_state = state;
        *ret_ppid = ppid;
        return 0;
}

static bool state_is_dead(char state) {
        return state == 'Z' || state == 'X' || state == 'x';
}

int process_selector_init(ProcessSelector *s, int proc_fd, const char *name, uid_t uid) {
        struct stat st;

        *s = (ProcessSelector){.proc_fd = proc_fd, .name = name, .uid = uid};
        s->self = proc_self_pid(proc_fd);
        /* Our own user namespace: through proc_dir's "self" where it names
         * us (a test's tree stands in for procfs), else the real one: nsfs
         * inodes are the same whichever procfs shows them. */
        if (fstatat(proc_fd, "self/ns/user", &st, 0) < 0 &&
            stat(PROCESS_DEFAULT_PROC_DIR "/self/ns/user", &st) < 0) {
                if (errno != ENOENT)
                        return negative_errno();
                return 0; /* a kernel without user namespaces (CONFIG_USER_NS=n) */
        }
        s->userns_known = true;
        s->userns_dev = st.st_dev;
        s->userns_ino = st.st_ino;
        return 0;
}

/* The four uids of proc(5) status: real, effective, saved, filesystem.
 * Only the first PROCESS_MAX_PROC_FILE_BYTES are read: "Uid:" comes early,
 * and what follows can be long (a "Groups:" line of thousands of groups). */
static int status_uids_at(int dir_fd, const char *path, unsigned long ret_uids[4]) {
        _cleanup_close_ int fd = -EBADF;
        char data[PROCESS_MAX_PROC_FILE_BYTES + 1];
        const char *p;
        size_t len = 0;

        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return negative_errno();
        while (len < sizeof data - 1) {
                ssize_t n = read(fd, data + len, sizeof data - 1 - len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        data[len] = '\0';
        p = startswith(data, "Uid:") ? data : strstr(data, "\nUid:");
        if (!p || sscanf(p + (*p == '\n') + 4, "%lu %lu %lu %lu", &ret_uids[0], &ret_uids[1],
                         &ret_uids[2], &ret_uids[3]) != 4)
                return -EBADMSG;
        return 0;
}

/* Whether the process at dir_fd (PROC/PID, or proc_fd with "PID/" in
 * prefix) may be the workload's: in the agent's user namespace (a user who
 * starts a process of that name under "unshare -Ur" is root only in a
 * namespace of their own, with files of their own), and running as s->uid
 * with every one of its uids (a set-user-ID program started through a link
 * of that name has another real uid). 1: it may; 0: it may not, and
 * reason (size bytes) says why; -errno: it cannot be told (-ENOENT: gone).
 * ns/user is behind the same ptrace check as PID/root: a process whose
 * namespace the agent may not see is one whose files it cannot read, so it
 * passes here and fails there with the sentence about CAP_SYS_PTRACE. */
static int process_vet_at(const ProcessSelector *s, int dir_fd, const char *prefix, char *reason,
                          size_t size) {
        unsigned long uids[4];
        char path[64];
        struct stat st;
        int r;

        (void) snprintf(path, sizeof path, "%sns/user", prefix);
        if (fstatat(dir_fd, path, &st, 0) == 0) {
                if (s->userns_known && (st.st_dev != s->userns_dev || st.st_ino != s->userns_ino)) {
                        (void) snprintf(reason, size,
                                        "it is in another user namespace (inode %llu, the "
                                        "agent's is %llu)",
                                        (unsigned long long) st.st_ino,
                                        (unsigned long long) s->userns_ino);
                        return 0;
                }
        } else {
                r = negative_errno();
                if (r == -ENOENT && s->userns_known)
                        return r;
                if (r != -ENOENT && r != -EACCES && r != -EPERM)
                        return r;
        }

        (void) snprintf(path, sizeof path, "%sstatus", prefix);
        r = status_uids_at(dir_fd, path, uids);
        if (r == -EBADMSG) {
                (void) snprintf(reason, size, "its status shows no uid");
                return 0;
        }
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(uids); i++)
                if (uids[i] != (unsigned long) s->uid) {
                        (void) snprintf(reason, size,
                                        "it runs as uid %lu (real, effective, saved, "
                                        "filesystem: %lu %lu %lu %lu), not %lu",
                                        uids[i], uids[0], uids[1], uids[2], uids[3],
                                        (unsigned long) s->uid);
                        return 0;
                }
        return 1;
}

/* 1 when the process at dir_fd (PROC/PID, or proc_fd with "PID/" in prefix)
 * is alive, named s->name and may be the workload's (process_vet_at()), 0
 * when not, -errno when it cannot be told. */
int process_matches_at(const ProcessSelector *s, int dir_fd, const char *prefix) {
        char path[64], reason[PROCESS_MAX_REASON_BYTES];
        pid_t ppid;
        char state;
        int r;

        (void) snprintf(path, sizeof path, "%scomm", prefix);
        r = comm_is_at(dir_fd, path, s->name);
        if (r <= 0)
                return r;
        (void) snprintf(path, sizeof path, "%sstat", prefix);
        r = stat_at(dir_fd, path, &state, &ppid);
        if (r < 0)
                return r;
        if (state_is_dead(state))
                return 0;
        return process_vet_at(s, dir_fd, prefix, reason, sizeof reason);
}

/* Whether an ancestor of the process whose parent is ppid has the name: a
 * helper the daemon forked (slurmd, and sshd for each connection), or a
 * process a user started from a session of it, not the daemon itself. The
 * chain ends at PID 1, the PID namespace's init (in a pod with a shared
 * process namespace, the pause container; each container's first process
 * has a parent outside the namespace: PPid 0). */
static bool has_ancestor_named(const ProcessSelector *s, pid_t ppid) {
        for (unsigned i = 0; ppid > 0 && i < PROCESS_MAX_ANCESTORS; i++) {
                char path[64], state;

                (void) snprintf(path, sizeof path, "%d/comm", (int) ppid);
                if (comm_is_at(s->proc_fd, path, s->name) > 0)
                        return true;
                (void) snprintf(path, sizeof path, "%d/stat", (int) ppid);
                if (stat_at(s->proc_fd, path, &state, &ppid) < 0)
                        return false;
        }
        return false;
}

/* Whether a is a better guess at the workload's process than b. */
static bool candidate_better(const ProcessCandidate *a, const ProcessCandidate *b) {
        if (a->descendant != b->descendant)
                return !a->descendant;
        if (a->init_child != b->init_child)
                return a->init_child;
        return a->pid < b->pid;
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return (x > y) - (x < y);
}

int process_find_at(const ProcessSelector *s, ProcessSelection *sel) {
        _cleanup_(closedirp) DIR *d = NULL;
        int fd;

        *sel = (ProcessSelection){};
        fd = openat(s->proc_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        d = fdopendir(fd);
        if (!d) {
                int r = negative_errno();
                (void) close(fd);
                return r;
        }

        for (;;) {
                char path[64], reason[PROCESS_MAX_REASON_BYTES];
                struct dirent *de;
                ProcessCandidate c = {};
                pid_t ppid;
                char state;
                int r;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                return negative_errno();
                        break;
                }
                if (!parse_pid(de->d_name, &c.pid) || c.pid == s->self)
                        continue;

                /* Processes come and go while we look: any error skips one. */
                (void) snprintf(path, sizeof path, "%d/comm", (int) c.pid);
                if (comm_is_at(s->proc_fd, path, s->name) <= 0)
                        continue;
                (void) snprintf(path, sizeof path, "%d/stat", (int) c.pid);
                if (stat_at(s->proc_fd, path, &state, &ppid) < 0 || state_is_dead(state))
                        continue;
                (void) snprintf(path, sizeof path, "%d/", (int) c.pid);
                r = process_vet_at(s, s->proc_fd, path, reason, sizeof reason);
                if (r < 0)
                        continue;
                if (r == 0) {
                        if (sel->n_rejected < PROCESS_MAX_CANDIDATES) {
                                ProcessRejected *x = &sel->rejected[sel->n_rejected++];
                                x->pid = c.pid;
                                memcpy(x->reason, reason, sizeof reason);
                        } else
                                sel->n_rejected_dropped++;
                        continue;
                }

                /* The daemon is the one no process of its name started
                 * (slurmd forks helpers that may keep its name); then one
                 * the PID namespace's init adopted or a container runtime
                 * started; then the oldest, barring PID wrap-around. */
                c.descendant = has_ancestor_named(s, ppid);
                c.init_child = ppid <= 1;
                if (!c.descendant) {
                        if (sel->n_several < PROCESS_MAX_CANDIDATES)
                                sel->several[sel->n_several++] = c.pid;
                        else
                                sel->n_several_dropped++;
                }
                if (sel->best.pid == 0 || candidate_better(&c, &sel->best))
                        sel->best = c;
        }

        qsort(sel->several, sel->n_several, sizeof *sel->several, cmp_pid);
        qsort(sel->rejected, sel->n_rejected, sizeof *sel->rejected, cmp_pid);
        return sel->best.pid == 0 ? -ESRCH : 0;
}

int process_find(const char *proc_dir, const char *name, uid_t uid, pid_t *ret_pid) {
        _cleanup_free_ ProcessSelection *sel = NULL;
        _cleanup_close_ int proc_fd = -EBADF;
        ProcessSelector s;
        int r;

        proc_fd = open(proc_dir ? proc_dir : PROCESS_DEFAULT_PROC_DIR,
                       O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0)
                return negative_errno();
        r = process_selector_init(&s, proc_fd, name, uid);
        if (r < 0)
                return r;
        sel = malloc(sizeof *sel);
        if (!sel)
                return -ENOMEM;
        r = process_find_at(&s, sel);
        if (r < 0)
                return r;
        *ret_pid = sel->best.pid;
        return 0;
}
