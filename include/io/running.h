/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Layer 2: the running view, what the workload container really reads
 * (DESIGN §3): each running file's content, its inode facts and what
 * mountinfo says about the mount it comes from.
 *
 * Two modes:
 *  - default: the files are under a running root directory (--running-root,
 *    "/" when the agent runs in the workload container itself); mount facts
 *    come from PROC/self/mountinfo.
 *  - target process (--target-process NAME): a sidecar in a pod with
 *    shareProcessNamespace: true reads the files through PROC/PID/root of the
 *    process whose comm is NAME, and that process's PROC/PID/mountinfo.
 *    Needs the same uid as that process, or CAP_SYS_PTRACE (proc(5):
 *    /proc/PID/root is guarded by a ptrace access-mode check).
 *
 * Every path is resolved inside the root as if it were "/": with
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) from a directory fd of the
 * root, so an absolute symlink in the container resolves in the container,
 * and ".." never climbs out. Where openat2 is unavailable (Linux < 5.6, or a
 * seccomp filter that refuses it), the same resolution is done one component
 * at a time with O_NOFOLLOW and the view says so.
 *
 * Stateless: each call looks again ("events are hints, state is the truth").
 * Nothing here logs above debug; sentences for the user are returned.
 *
 * Use from the manager (target mode): keep view->pid and pass it back as
 * last_pid; when it differs from the previous one, take the new pidfd
 * (TAKE_FD(view->pidfd)), close the old, and watch it with
 * sd_event_add_io(..., EPOLLIN, ...): it fires once the process exits, which
 * is the moment to read again. Nothing signals a process that appears: while
 * the view is not observable, only a timer (the resync) finds it.
 * The process is chosen by name, so any process of the shared PID namespace
 * could call itself NAME (prctl(PR_SET_NAME)), and a user of a login pod can
 * start one under "unshare -Urm" with an enroot.conf of their own. Only a
 * process in the agent's own user namespace whose uids are all
 * cfg->target_uid is taken (the others are named in view->warning); among
 * those, keeping last_pid, preferring one without an ancestor of the same
 * name, then one whose parent is the PID namespace's init or outside it,
 * then the lowest PID favour the long-lived daemon.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"

#define RUNNING_DEFAULT_PROC_DIR    "/proc"
#define RUNNING_DEFAULT_ROOT        "/"

/* Paths one call reads (the daemon's --file options are capped lower). */
#define RUNNING_MAX_PATHS           64u
/* The kernel keeps 15 bytes of a process name (TASK_COMM_LEN 16, NUL
 * included): a longer NAME is compared by its first 15 bytes. */
#define RUNNING_COMM_MAX            15u
/* Fallback resolution only: symlinks followed per path (the kernel's
 * MAXSYMLINKS), directory levels held open, bytes of a path after
 * splicing in link targets. Crossing one fails with -ELOOP, -ENAMETOOLONG,
 * -ENAMETOOLONG. */
#define RUNNING_MAX_SYMLINKS        40u
#define RUNNING_MAX_DEPTH           256u
#define RUNNING_MAX_PATH_LENGTH     4096u
/* Target mode: PROC/PID/comm and PROC/PID/stat are read up to this size; a
 * process whose files are larger (never from a real kernel) is skipped. Of
 * PROC/PID/status, only this many first bytes are read: its "Uid:" line
 * comes early, and a "Groups:" line after it can be far longer. */
#define RUNNING_MAX_PROC_FILE_BYTES 4096u
/* Target mode: a read that raced with the process exiting is redone on the
 * process found next, at most this many times in all. */
#define RUNNING_MAX_ATTEMPTS        3u
/* Target mode: processes of the name that one look tells apart by PID
 * (those ignored, and those that could each be the target); more are
 * counted. */
#define RUNNING_MAX_CANDIDATES      32u
/* Target mode: parents followed up from a candidate to find an ancestor of
 * the same name. */
#define RUNNING_MAX_ANCESTORS       64u
/* Target mode: one reason a process was ignored, in bytes. */
#define RUNNING_MAX_REASON_BYTES    128u

/* The parsed mountinfo of one mount namespace, kept between reads: the
 * kernel reports every mount and unmount in that namespace as POLLPRI on an
 * open procfs mountinfo file (proc(5)), so an unchanged mount table is
 * never formatted and parsed again (most of an evaluation's CPU otherwise).
 * What changes without a mount event, a mount root's "//deleted" when
 * kubelet removes the version directory a subPath file was mounted from,
 * is taken from the file's own st_nlink instead (see RunningFile). A
 * mountinfo file not on procfs (tests) is read every time. In target mode
 * the namespace is checked at each read (the target may have been replaced);
 * the agent's own (default mode) is taken to stay the one it was read in:
 * a program that changes its mount namespace (unshare(2), setns(2)) must
 * not keep a cache across the change. */
typedef struct MountInfoCache MountInfoCache;

int mountinfo_cache_new(MountInfoCache **ret);
MountInfoCache *mountinfo_cache_free(MountInfoCache *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(MountInfoCache *, mountinfo_cache_free);
/* How many times the cache read a mountinfo file (tests, debugging). */
unsigned mountinfo_cache_reads(const MountInfoCache *c);

/* What target mode has already said about the processes of the name (the
 * ones it ignored, the ones that could each be the target), kept between
 * reads so that each is said once while it lasts, not at every look. */
typedef struct RunningMemo RunningMemo;

int running_memo_new(RunningMemo **ret);
RunningMemo *running_memo_free(RunningMemo *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(RunningMemo *, running_memo_free);

typedef struct RunningConfig {
        const char *proc_dir;       /* where procfs is mounted; NULL: "/proc" */
        const char *running_root;   /* default mode: NULL means "/"; ignored in target mode */
        const char *target_process; /* NULL: default mode; else the process name (comm) */
        uid_t target_uid;           /* target mode: the uid (real, effective, saved and
                                     * filesystem) the process runs as; 0 is root */
        RunningMemo *memo;          /* target mode: NULL says everything at every call */
        const char *const *paths;   /* absolute paths as the workload sees them */
        size_t n_paths;             /* at most RUNNING_MAX_PATHS */
        size_t max_bytes;           /* cap on each file's content */
        MountInfoCache *mountinfo;  /* NULL: mountinfo is read at every call */
        /* Called, when set, with the index of each path just before it is
         * opened, and with SIZE_MAX once the last one was read: a caller on
         * another thread learns which file a read that does not return is
         * waiting for (running-worker.h). */
        void (*on_file)(size_t index, void *userdata);
        void *userdata;
} RunningConfig;

typedef enum RunningResolve {
        RUNNING_RESOLVE_OPENAT2, /* the kernel kept every lookup inside the root */
        RUNNING_RESOLVE_WALK,    /* openat2 unavailable: resolved one component at a time */
} RunningResolve;

typedef struct RunningFile {
        char *path;    /* as configured, e.g. "/etc/enroot/enroot.conf" */
        int error;     /* 0 when content was read; else -errno: -ENOENT, -EACCES, -EFBIG
                       * (over max_bytes), -EISDIR, -EBADFD (FIFO, socket, device: never
                       * opened, only looked at through O_PATH), -EMEDIUMTYPE (a file on
                       * procfs or sysfs, never read), -ELOOP, ...; when the view is not
                       * observable, the view's error */
        char *content; /* error == 0: size bytes plus a NUL (the file may hold NULs) */
        size_t size;

        /* fstat() of what was opened (symlinks followed), when have_stat */
        bool have_stat;
        uint64_t dev, ino;
        unsigned long nlink; /* 0: the inode was unlinked, e.g. a subPath whose version
                              * directory kubelet has since removed (superseded) */
        uint32_t mode;

        /* From mountinfo, when mount_known (mountinfo readable and parsed) */
        bool mount_known;
        bool mount_point;    /* the file is the root of a mount: a bind-mounted file */
        uint64_t mount_id;   /* 0 when unknown */
        char *mount_root;    /* mount_point: the decoded root field, else NULL */
        char *mount_version; /* mount_point: the version id in that root (with its ".."), or NULL */
        bool mount_deleted;  /* mount_point: the root ends in "//deleted", or the file
                              * is that mount's root and unlinked (st_nlink 0) */
} RunningFile;

typedef struct RunningView {
        bool observable; /* the root (or process) could be looked at: file errors are
                          * about the files; when false, detail says why */
        int error;       /* !observable: -ESRCH (no such process), -EACCES/-EPERM, -ENOENT, ... */
        char *detail;    /* !observable: one sentence for the user; else NULL */
        char *note;      /* observable but degraded (openat2 fallback, mountinfo
                          * unreadable, no pidfd, a mount root that names no kubelet
                          * version): one sentence; else NULL */
        char *warning;   /* target mode: processes of the name that were ignored (another
                          * user namespace, another uid), or several that could each be
                          * the target, each said once while it lasts (cfg->memo):
                          * sentences for a warning in the log; else NULL */

        pid_t pid; /* target mode: the process read (pass it back as last_pid); else 0 */
        int pidfd; /* target mode: pidfd_open() of that process, readable (EPOLLIN) once it
                     * exits; owned by the view and closed by running_view_free() unless
                     * taken with TAKE_FD(). -EBADF when not available: default mode, a
                     * proc_dir that is not our own PID namespace's procfs, or a kernel
                     * without pidfd_open (Linux < 5.3). */
        RunningResolve resolve;

        int mountinfo_error;        /* 0, or -errno reading or parsing mountinfo */
        size_t mountinfo_malformed; /* lines skipped in it */

        size_t max_bytes;
        RunningFile *files; /* one per configured path, in the same order */
        size_t n_files;
} RunningView;

/* Reads the running view. last_pid is the pid of the previous view (0 the
 * first time): in target mode it is kept while that process is alive and
 * still has the name, so the view follows one process; otherwise (it
 * exited, the container restarted) the process is found again.
 * The view is returned even when nothing could be read (observable false);
 * that is a fact about the pod, not a failure of this call.
 * Returns 0 with *ret a new view owned by the caller, -EINVAL for a bad
 * configuration (a relative path, too many paths), -ENOMEM. */
int running_read(const RunningConfig *cfg, pid_t last_pid, RunningView **ret);
RunningView *running_view_free(RunningView *v);
DEFINE_TRIVIAL_CLEANUP_FUNC(RunningView *, running_view_free);

/* Finds the process named name (its comm, compared on RUNNING_COMM_MAX bytes)
 * in proc_dir (NULL: "/proc"), skipping zombies, the caller itself, and
 * processes in another user namespace than the caller's or with a uid other
 * than uid. When several match, one without an ancestor of the same name
 * wins (the main process of a daemon that forks helpers under its own
 * name), then one whose parent is PID 1 or outside the PID namespace (PPid
 * 0: a container's first process in a pod's shared PID namespace), then the
 * lowest PID (the oldest, barring PID wrap-around).
 * Returns 0 with *ret_pid, -ESRCH when none matches, or the -errno of
 * opening proc_dir. */
int running_find_process(const char *proc_dir, const char *name, uid_t uid, pid_t *ret_pid);

/* Opens path inside the directory root_fd as if root_fd were "/" (absolute
 * symlinks and ".." stay inside). flags are added to O_CLOEXEC; O_CREAT is
 * refused. Uses openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS), retried on
 * its EAGAIN, or running_open_in_root_walk() when openat2 is unavailable.
 * Returns a new fd, with *ret_resolve (may be NULL) saying which was used,
 * or -errno. */
int running_open_in_root(int root_fd, const char *path, int flags, RunningResolve *ret_resolve);

/* The fallback: resolves path one component at a time with
 * O_PATH|O_NOFOLLOW, following symlinks by reading them and restarting
 * absolute ones at root_fd, holding a directory fd per level so ".." pops
 * rather than climbs (at root_fd it stays there, as in a chroot). Magic links
 * (/proc/self/...) are read as text, never followed.
 * Returns a new fd opened with flags|O_CLOEXEC|O_NOFOLLOW, or -errno. */
int running_open_in_root_walk(int root_fd, const char *path, int flags);
