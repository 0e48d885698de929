/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The running view, what the workload container really reads
 * (docs/DESIGN.md §3): each running file's content, its inode facts and what
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
 *    /proc/PID/root is guarded by a ptrace access-mode check). Only a process
 *    in the agent's own user namespace whose uids are all cfg->target_uid is
 *    taken; the others are named in view->warning.
 *
 * Every path is resolved inside the root as if it were "/" (root-open.h): ".."
 * and absolute symlinks never leave it.
 *
 * Stateless: each call looks again. Blocking: a read of a hung FUSE or NFS
 * mount does not return (running-worker.h runs it off the loop). Nothing here
 * logs above debug; sentences for the user are returned.
 *
 * Use from the manager (target mode): keep view->pid and pass it back as
 * last_pid; when it differs from the previous one, take the new pidfd
 * (TAKE_FD(view->pidfd)), close the old, and watch it with
 * sd_event_add_io(..., EPOLLIN, ...): it fires once the process exits, which
 * is the moment to read again. Nothing signals a process that appears: while
 * the view is not observable, only a timer (the resync) finds it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"
#include "mountinfo-cache.h"
#include "root-open.h"

#define RUNNING_DEFAULT_PROC_DIR "/proc"
#define RUNNING_DEFAULT_ROOT     "/"

/* Paths one call reads (the daemon's --file options are capped lower). */
#define RUNNING_MAX_PATHS        64u
/* Bytes of one configured path: a longer one could not be resolved. */
#define RUNNING_MAX_PATH_LENGTH  ROOT_OPEN_MAX_PATH_LENGTH
/* Target mode: a read that raced with the process exiting is redone on the
 * process found next, at most this many times in all. */
#define RUNNING_MAX_ATTEMPTS     3u

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
        RootResolve resolve; /* ROOT_RESOLVE_WALK when any path needed the fallback */

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
