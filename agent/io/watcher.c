/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watches the desired directory: inotify, coalesced into one handler call
 * per burst, or a poll timer. See watcher.h for the contract.
 *
 * A watch on a file, or on the directory ..data resolves to, dies with
 * IN_DELETE_SELF at the next kubelet update, hence one watch on the directory.
 * Its mask leaves out IN_OPEN, IN_ACCESS and IN_CLOSE_NOWRITE: kubelet opens
 * and reads every file of the volume on each sync, about once a minute,
 * without changing it.
 *
 * inotify mode: events are drained as they come and coalesced: the handler
 * runs once the directory has been quiet for WATCHER_SETTLE_USEC, and at the
 * latest WATCHER_SETTLE_MAX_USEC after the first event of a burst. kubelet's
 * rename of ..data over the old link is the update itself: the handler runs
 * at once, and events later in the same burst never postpone it (how often
 * a storm of flips is acted on is the owner's to bound: the daemon paces its
 * looks, manager.c). The rest of kubelet's update
 * (links for new keys, rm -r of the old version: well under a millisecond)
 * is usually a second, short burst; when it touches only names that start
 * with ".." other than ..data and the version the handler last read
 * (Kubernetes refuses such keys: they are version directories and
 * ..data_tmp, which no read goes through), it calls nothing, arms no timer
 * and takes no signature (the signature leaves those names out); a link for
 * a new key still calls the handler. The inotify source runs before the
 * loop's other sources of the same turn (a scrape that arrives with a change
 * is answered after the change is looked at), and after
 * a flip's call the signature for watcher_verify() is taken once the loop is
 * idle, not before the call. An inotify queue overflow (IN_Q_OVERFLOW) is a
 * hint like any other.
 *
 * poll mode: the signature is what a read depends on: the directory's dev,
 * ino, mode and owner; readlink(..data); then in kubelet's projection the
 * lstat of ..data and of the version it names when kubelet could have named
 * it so (for a directory its identity: ino and mode), in a plain directory
 * that of each entry whose name does not start with ".." (name, ino, mode,
 * size, mtime, ctime). Kubelet's other versions, ..data_tmp and a
 * projection's key links change nothing a read sees.
 * Reading a file changes no part of it, so kubelet's resync is not a change.
 *
 * auto mode falls back to polling, for good, when inotify_init1() fails
 * (EMFILE: fs.inotify.max_user_instances, shared by every container of the
 * user on the node, often 128; ENOSYS, EINVAL: a runtime without it),
 * inotify_add_watch() fails (ENOSPC: fs.inotify.max_user_watches), the
 * directory is on a filesystem whose changes made outside this kernel raise
 * no event (FUSE/virtio-fs, 9p, NFS, SMB, Ceph: see
 * remote_filesystem_name()), or watcher_verify() found a change no event
 * announced.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "atomic-writer.h"
#include "log.h"
#include "string-table.h"
#include "volume.h"
#include "watcher.h"

/* Everything that changes a name, a link or a file in the directory, and
 * the directory itself going away. Never IN_OPEN, IN_ACCESS or
 * IN_CLOSE_NOWRITE: kubelet opens and reads every file on each sync (about
 * once a minute) without changing anything, and so does our own reader.
 * IN_ONLYDIR: the path must still be a directory when the watch is added. */
#define WATCH_MASK                                                                          \
        (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY | IN_CLOSE_WRITE | \
         IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

/* The watch is gone, or about to be: the directory was deleted, moved away
 * (the watch would follow the inode elsewhere) or unmounted. */
#define LOST_MASK (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT)

/* What polling and watcher_verify() compare: what a read depends on. error
 * != 0: the directory could not be opened. */
typedef struct DirSignature {
        int error;
        dev_t dev;
        ino_t ino;
        /* the directory's permission and owner: a read needs them */
        mode_t mode;
        uid_t uid;
        gid_t gid;
        struct timespec mtime, ctime; /* the directory's, only past WATCHER_MAX_POLL_ENTRIES */
        int link_error;             /* readlink(..data): 0, or -errno (-ENOENT: plain directory) */
        char version[NAME_MAX + 1]; /* the ..data target, truncated to fit */
        uint64_t entries_hash; /* order-independent, over the entries' lstat (signature_read()) */
        size_t n_entries;
} DirSignature;

struct Watcher {
        sd_event *event;
        char *path;
        WatchMode mode;   /* as asked */
        WatchMode active; /* WATCH_INOTIFY or WATCH_POLL */
        uint64_t poll_usec;
        watcher_handler_t handler;
        void *userdata;

        int inotify_fd;
        int wd; /* -1 while the directory is lost */
        sd_event_source *inotify_source;
        sd_event_source *settle_source;    /* coalesces a burst of events */
        sd_event_source *retry_source;     /* inotify mode: looks for a lost directory */
        sd_event_source *poll_source;      /* poll mode */
        sd_event_source *signature_source; /* takes the signature once a flip's call is done */

        bool pending;         /* a burst is being coalesced: the handler is due */
        bool flipped;         /* ..data was renamed in this burst: the handler runs at once */
        uint32_t flip_cookie; /* inotify's cookie of the last flip read */
        bool flip_then_live;  /* in this burst, an event that can change what a read
                               * sees came after the last flip */
        bool in_flip_call;    /* the handler runs for a burst with a flip (watcher_call_flip()) */
        uint64_t burst_start_usec;
        uint64_t flip_usec;
        WatchReason pending_reason;

        DirSignature sig;     /* taken just before the handler last ran, or once the
                               * loop was idle after a flip's call */
        bool signature_stale; /* a flip's call ran and sig is not taken yet */
        char *data_link_path; /* path/..data */
        /* ..data's target when the handler last ran, "" when there was none */
        char read_version[NAME_MAX + 1];
        bool has_reason;
        char fallback_reason[512];
};

static const char *const watch_mode_table[_WATCH_MODE_MAX] = {
        [WATCH_AUTO] = "auto",
        [WATCH_INOTIFY] = "inotify",
        [WATCH_POLL] = "poll",
};

static const char *const watch_reason_table[_WATCH_REASON_MAX] = {
        [WATCH_REASON_INOTIFY] = "inotify",
        [WATCH_REASON_OVERFLOW] = "overflow",
        [WATCH_REASON_RECREATED] = "recreated",
        [WATCH_REASON_POLL] = "poll",
};

DEFINE_STRING_TABLE_LOOKUP(watch_mode, WatchMode, _WATCH_MODE_INVALID);
DEFINE_STRING_TABLE_LOOKUP(watch_reason, WatchReason, _WATCH_REASON_INVALID);

/* ------------------------------------------------------------------------ */
/* Signature */

static uint64_t mix64(uint64_t h, uint64_t v) {
        /* splitmix64 finalizer over the running value: cheap, well spread */
        h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h ^= h >> 30;
        h *= 0xbf58476d1ce4e5b9ull;
        h ^= h >> 27;
        h *= 0x94d049bb133111ebull;
        h ^= h >> 31;
        return h;
}

static uint64_t hash_string(const char *s) {
        uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
        for (; *s; s++) {
                h ^= (unsigned char) *s;
                h *= 0x100000001b3ull;
        }
        return h;
}

static uint64_t hash_timespec(uint64_t h, const struct timespec *ts) {
        return mix64(mix64(h, (uint64_t) ts->tv_sec), (uint64_t) ts->tv_nsec);
}

static uint64_t entry_hash(int dir_fd, const char *name) {
        uint64_t h = hash_string(name);
        struct stat st;

        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return mix64(h, (uint64_t) errno);
        h = mix64(h, (uint64_t) st.st_ino);
        h = mix64(h, (uint64_t) st.st_mode);
        /* A subdirectory's times move with its contents, which no watch on
         * this directory reports (a version directory being filled): compare
         * only its identity. */
        if (!S_ISDIR(st.st_mode)) {
                h = mix64(h, (uint64_t) st.st_size);
                h = hash_timespec(h, &st.st_mtim);
                h = hash_timespec(h, &st.st_ctim);
        }
        return h;
}

static void signature_read(const char *path, DirSignature *ret) {
        DirSignature sig = {};
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        bool full = false;
        ssize_t n;

        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0) {
                sig.error = negative_errno();
                *ret = sig;
                return;
        }
        sig.dev = st.st_dev;
        sig.ino = st.st_ino;
        sig.mode = st.st_mode;
        sig.uid = st.st_uid;
        sig.gid = st.st_gid;

        /* kubelet flips ..data with rename(2): the cheapest sign of an update */
        n = readlinkat(fd, VOLUME_DATA_LINK, sig.version, sizeof sig.version - 1);
        if (n < 0)
                sig.link_error = negative_errno();
        else
                sig.version[n] = '\0';

        if (!sig.link_error) {
                /* kubelet's projection: a read goes through ..data and the
                 * version it names only (volume_read()), so they are what
                 * the signature holds; key links, the next version being
                 * written, the old one removed and ..data_tmp change nothing
                 * a read sees, and no listing is needed. */
                sig.entries_hash = entry_hash(fd, VOLUME_DATA_LINK);
                /* only a name kubelet could have written: a target that leaves
                 * the directory is not read (volume_read() says -EXDEV), and
                 * what it names is not watched */
                if (volume_version_is_valid(sig.version))
                        sig.entries_hash += entry_hash(fd, sig.version);
                sig.n_entries = 2;
                *ret = sig;
                return;
        }

        /* A plain directory: each entry but names that start with "..",
         * which are never keys (event_is_inert() says why). getdents64()
         * into a buffer of our own: readdir() would allocate 32 KiB and
         * check the descriptor again. */
        for (;;) {
                char buf[8192] __attribute__((aligned(__alignof__(struct dirent64))));
                ssize_t len = getdents64(fd, buf, sizeof buf);

                if (len < 0) {
                        sig.entries_hash = mix64(sig.entries_hash, (uint64_t) errno);
                        break;
                }
                if (len == 0)
                        break;
                for (ssize_t off = 0; off < len;) {
                        const struct dirent64 *de = (const struct dirent64 *) (buf + off);

                        off += de->d_reclen;
                        if (streq(de->d_name, ".") ||
                            startswith(de->d_name, VOLUME_RESERVED_PREFIX))
                                continue;
                        if (sig.n_entries >= WATCHER_MAX_POLL_ENTRIES) {
                                full = true;
                                break;
                        }
                        sig.n_entries++;
                        /* a sum does not depend on the listing's order */
                        sig.entries_hash += entry_hash(fd, de->d_name);
                }
                if (full)
                        break;
        }
        /* Past the bound, the directory's own times stand in for the entries
         * left out (adding, removing or renaming any of them moves them). */
        if (full) {
                sig.mtime = st.st_mtim;
                sig.ctime = st.st_ctim;
        }

        *ret = sig;
}

static bool timespec_eq(const struct timespec *a, const struct timespec *b) {
        return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static bool signature_same_directory(const DirSignature *a, const DirSignature *b) {
        if (a->error || b->error)
                return a->error == b->error;
        return a->dev == b->dev && a->ino == b->ino;
}

static bool signature_eq(const DirSignature *a, const DirSignature *b) {
        if (!signature_same_directory(a, b))
                return false;
        if (a->error)
                return true;
        return a->mode == b->mode && a->uid == b->uid && a->gid == b->gid &&
               timespec_eq(&a->mtime, &b->mtime) && timespec_eq(&a->ctime, &b->ctime) &&
               a->link_error == b->link_error && (a->link_error || streq(a->version, b->version)) &&
               a->entries_hash == b->entries_hash && a->n_entries == b->n_entries;
}

/* ------------------------------------------------------------------------ */
/* Fallback reasons */

_printf_(3, 4) static void set_reason(Watcher *w, int error, const char *fmt, ...) {
        int saved = errno;
        va_list ap;

        /* %m in fmt prints error */
        errno = error < 0 ? -error : error;
        va_start(ap, fmt);
        (void) vsnprintf(w->fallback_reason, sizeof w->fallback_reason, fmt, ap);
        va_end(ap);
        errno = saved;
        w->has_reason = true;
}

static void set_init_reason(Watcher *w, int error) {
        switch (-error) {
        case EMFILE:
                set_reason(w, error,
                           "inotify_init1() failed: %m: this user's inotify instances are used up "
                           "(fs.inotify.max_user_instances is shared by every container of the "
                           "user on the node) or the open file limit is reached");
                break;
        case ENFILE:
                set_reason(w, error,
                           "inotify_init1() failed: %m: the system's open file table is full");
                break;
        case ENOSYS:
        case EINVAL:
                set_reason(w, error,
                           "inotify_init1() failed: %m: the kernel or the container runtime "
                           "does not offer inotify");
                break;
        default:
                set_reason(w, error, "inotify_init1() failed: %m");
        }
}

static void set_add_watch_reason(Watcher *w, int error) {
        if (error == -ENOSPC)
                set_reason(w, error,
                           "inotify_add_watch() on \"%s\" failed: %m: this user's inotify "
                           "watches are used up (fs.inotify.max_user_watches)",
                           w->path);
        else
                set_reason(w, error, "inotify_add_watch() on \"%s\" failed: %m", w->path);
}

/* Filesystems on which a change made by another kernel (the host, behind a
 * VM or sandbox boundary, or another NFS client) raises no inotify event. */
static const char *remote_filesystem_name(int fd) {
        static const struct {
                unsigned long magic;
                const char *name;
        } table[] = {
                {0x65735546ul, "FUSE (virtio-fs, as in Kata Containers)"},
                {0x01021997ul, "9p (VM and sandbox file sharing)"},
                {0x00006969ul, "NFS"},
                {0x0000517bul, "SMB"},
                {0xff534d42ul, "CIFS"},
                {0xfe534d42ul, "SMB2"},
                {0x00c36400ul, "Ceph"},
        };
        struct statfs sfs;

        if (fstatfs(fd, &sfs) < 0)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if ((unsigned long) (unsigned int) sfs.f_type == table[i].magic)
                        return table[i].name;
        return NULL;
}

/* ------------------------------------------------------------------------ */
/* Coalescing */

static int reason_rank(WatchReason r) {
        switch (r) {
        case WATCH_REASON_RECREATED:
                return 3;
        case WATCH_REASON_OVERFLOW:
                return 2;
        default:
                return 1;
        }
}

/* Takes the signature watcher_verify() compares with. */
static void take_signature(Watcher *w) {
        signature_read(w->path, &w->sig);
        w->signature_stale = false;
        if (w->signature_source)
                (void) sd_event_source_set_enabled(w->signature_source, SD_EVENT_OFF);
}

static void set_read_version(Watcher *w, const char *version) {
        (void) snprintf(w->read_version, sizeof w->read_version, "%s", version);
}

static int on_idle_signature(_unused_ sd_event_source *s, void *userdata) {
        take_signature(userdata);
        return 0;
}

/* After a flip's call: the signature (an lstat of ..data and of the version
 * it names, while kubelet is still removing the old version, which contends
 * for the same directory) waits until the loop has nothing else to do, so
 * the new state is served first. A change in between is reported by inotify
 * like any other; watcher_verify() finds the signature taken, or takes it
 * itself. */
static void defer_signature(Watcher *w) {
        int r;

        w->signature_stale = true;
        if (!w->signature_source) {
                r = sd_event_add_defer(w->event, &w->signature_source, on_idle_signature, w);
                if (r < 0) {
                        log_debug_errno(r, "Cannot defer the signature of \"%s\": %m.", w->path);
                        take_signature(w);
                        return;
                }
                (void) sd_event_source_set_priority(w->signature_source, SD_EVENT_PRIORITY_IDLE);
                (void) sd_event_source_set_description(w->signature_source, "watcher-signature");
        }
        r = sd_event_source_set_enabled(w->signature_source, SD_EVENT_ONESHOT);
        if (r < 0) {
                log_debug_errno(r, "Cannot defer the signature of \"%s\": %m.", w->path);
                take_signature(w);
        }
}

static int on_settle(_unused_ sd_event_source *s, _unused_ uint64_t usec, void *userdata) {
        Watcher *w = userdata;
        WatchReason reason = w->pending_reason;
        bool flipped = w->flipped, flip_last = !w->flip_then_live;

        w->pending = false;
        w->flipped = false;
        w->flip_then_live = false;

        if (flipped) {
                char version[NAME_MAX + 1];
                ssize_t n;

                /* Only the version the handler is about to read is needed
                 * now (for event_is_inert()). */
                n = readlink(w->data_link_path, version, sizeof version - 1);
                version[n < 0 ? 0 : n] = '\0';
                set_read_version(w, version);
                defer_signature(w);
        } else {
                /* What the handler is about to read: watcher_verify()
                 * compares with it. */
                take_signature(w);
                set_read_version(w, w->sig.link_error ? "" : w->sig.version);
        }
        log_debug("Directory \"%s\" changed (%s): looking again.", w->path,
                  watch_reason_to_string(reason));
        /* The flip was the last thing that changed what a read sees: a read
         * begun after it serves the call (watcher_call_flip()). */
        w->in_flip_call = flipped && reason == WATCH_REASON_INOTIFY && flip_last;
        w->handler(w, reason, w->userdata);
        w->in_flip_call = false;
        return 0;
}

bool watcher_call_flip(const Watcher *w, uint32_t *ret_cookie) {
        if (!w->in_flip_call)
                return false;
        *ret_cookie = w->flip_cookie;
        return true;
}

/* Called for events that can change what a read sees (see event_is_inert()),
 * or that join a burst under way. */
static int schedule_handler(Watcher *w, WatchReason reason, bool immediately) {
        uint64_t now, deadline;
        int r;

        r = sd_event_now(w->event, CLOCK_MONOTONIC, &now);
        if (r < 0)
                return r;

        if (!w->pending) {
                w->pending = true;
                w->burst_start_usec = now;
                w->pending_reason = reason;
        } else if (reason_rank(reason) > reason_rank(w->pending_reason)) {
                w->pending_reason = reason;
        }

        /* Quiet for WATCHER_SETTLE_USEC, but never later than
         * WATCHER_SETTLE_MAX_USEC after the burst began. */
        deadline = now + WATCHER_SETTLE_USEC;
        if (deadline > w->burst_start_usec + WATCHER_SETTLE_MAX_USEC)
                deadline = w->burst_start_usec + WATCHER_SETTLE_MAX_USEC;
        /* kubelet's rename of ..data is the update itself: whatever follows
         * in the same burst (links, removing the old version) changes nothing
         * a read sees, so it must not postpone the call. Those of them that
         * could change a read still count: one arriving after the call starts
         * a new burst (kubelet's other versions and ..data_tmp start none).
         * Every flip is a call: how often a storm of them is acted on is the
         * owner's to bound (watcher.h). */
        if (immediately && !w->flipped) {
                w->flipped = true;
                w->flip_usec = now;
        }
        if (w->flipped)
                deadline = w->flip_usec;

        if (!w->settle_source) {
                /* Accuracy 1 µs: sd-event would otherwise defer the call by up
                 * to its accuracy to batch wake-ups, and this timer fires once
                 * per burst only. */
                r = sd_event_add_time(w->event, &w->settle_source, CLOCK_MONOTONIC, deadline, 1,
                                      on_settle, w);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(w->settle_source, "watcher-settle");
        } else {
                r = sd_event_source_set_time(w->settle_source, deadline);
                if (r < 0)
                        return r;
        }
        return sd_event_source_set_enabled(w->settle_source, SD_EVENT_ONESHOT);
}

/* ------------------------------------------------------------------------ */
/* Polling */

static int on_poll(sd_event_source *s, uint64_t usec, void *userdata);

static int arm_timer(Watcher *w, sd_event_source **src, sd_event_time_handler_t cb,
                     const char *description) {
        /* Let the loop batch this wake-up with others: a tenth of the period. */
        uint64_t accuracy = w->poll_usec / 10;
        int r;

        if (accuracy < 1000)
                accuracy = 1000;

        if (!*src) {
                r = sd_event_add_time_relative(w->event, src, CLOCK_MONOTONIC, w->poll_usec,
                                               accuracy, cb, w);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(*src, description);
                return 0;
        }
        r = sd_event_source_set_time_relative(*src, w->poll_usec);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(*src, SD_EVENT_ONESHOT);
}

static int on_poll(_unused_ sd_event_source *s, _unused_ uint64_t usec, void *userdata) {
        Watcher *w = userdata;
        DirSignature now;
        WatchReason reason;
        int r;

        r = arm_timer(w, &w->poll_source, on_poll, "watcher-poll");
        if (r < 0)
                log_error_errno(r,
                                "Cannot re-arm the poll timer for \"%s\": %m. "
                                "Changes are seen only at the next resync.",
                                w->path);

        signature_read(w->path, &now);
        if (signature_eq(&now, &w->sig))
                return 0;

        reason = signature_same_directory(&now, &w->sig) ? WATCH_REASON_POLL
                                                         : WATCH_REASON_RECREATED;
        if (now.error && !w->sig.error)
                log_warning_errno(now.error,
                                  "Directory \"%s\" is gone: %m. Looking for it "
                                  "every poll interval.",
                                  w->path);
        else if (!now.error && w->sig.error)
                log_info("Directory \"%s\" is back.", w->path);

        w->sig = now;
        w->handler(w, reason, w->userdata);
        return 0;
}

static void stop_inotify(Watcher *w) {
        w->inotify_source = sd_event_source_disable_unref(w->inotify_source);
        w->retry_source = sd_event_source_disable_unref(w->retry_source);
        closep(&w->inotify_fd);
        w->inotify_fd = -EBADF;
        w->wd = -1;
}

static int start_poll(Watcher *w) {
        stop_inotify(w);
        /* Polling compares with what the handler last read: a signature taken
         * later could hide a change from it. One not taken yet differs from
         * the directory, which costs one more call, never a missed change. */
        if (w->signature_source)
                (void) sd_event_source_set_enabled(w->signature_source, SD_EVENT_OFF);
        w->signature_stale = false;
        w->active = WATCH_POLL;
        return arm_timer(w, &w->poll_source, on_poll, "watcher-poll");
}

/* ------------------------------------------------------------------------ */
/* inotify */

static bool is_directory_error(int error) {
        /* the path's fault, not inotify's: no fallback would help */
        switch (-error) {
        case ENOENT:
        case ENOTDIR:
        case EACCES:
        case EPERM:
        case ELOOP:
        case ENAMETOOLONG:
                return true;
        default:
                return false;
        }
}

static int add_watch(Watcher *w) {
        int wd;

        wd = inotify_add_watch(w->inotify_fd, w->path, WATCH_MASK);
        if (wd < 0)
                return negative_errno();
        w->wd = wd;
        return 0;
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata);

/* The watch is gone, or watches the wrong directory: drop it and watch
 * whatever is at the path now, or look for it every poll interval. Logs
 * above debug only when called from an event callback (from_callback);
 * watcher_verify()'s caller does its own logging. Returns 0 or the -errno of
 * arming the replacement (polling, or the retry timer). */
static int handle_lost(Watcher *w, bool from_callback) {
        int level = from_callback ? LOG_WARNING : LOG_DEBUG;
        int r;

        if (w->wd >= 0)
                /* after IN_MOVE_SELF the watch follows the inode elsewhere;
                 * EINVAL when the kernel already dropped it (IN_IGNORED) */
                (void) inotify_rm_watch(w->inotify_fd, w->wd);
        w->wd = -1;

        r = add_watch(w);
        if (r >= 0) {
                log_full_errno(from_callback ? LOG_NOTICE : LOG_DEBUG, 0,
                               "Directory \"%s\" was replaced; watching the new one.", w->path);
                return 0;
        }
        if (!is_directory_error(r) && w->mode == WATCH_AUTO) {
                set_add_watch_reason(w, r);
                log_full_errno(level, 0, "Watching \"%s\" by polling from now on: %s", w->path,
                               w->fallback_reason);
                return start_poll(w);
        }

        log_full_errno(level, r,
                       "Directory \"%s\" is gone or cannot be watched: %m. Looking for it "
                       "every poll interval.",
                       w->path);
        return arm_timer(w, &w->retry_source, on_retry, "watcher-retry");
}

static int on_retry(_unused_ sd_event_source *s, _unused_ uint64_t usec, void *userdata) {
        Watcher *w = userdata;
        int r;

        r = add_watch(w);
        if (r >= 0) {
                log_info("Directory \"%s\" is back; watching it again.", w->path);
                r = schedule_handler(w, WATCH_REASON_RECREATED, false);
                if (r < 0)
                        log_error_errno(r, "Cannot schedule a look at \"%s\": %m.", w->path);
                return 0;
        }
        if (!is_directory_error(r) && w->mode == WATCH_AUTO) {
                set_add_watch_reason(w, r);
                log_warning("Watching \"%s\" by polling from now on: %s", w->path,
                            w->fallback_reason);
                r = start_poll(w);
                if (r < 0)
                        log_error_errno(r, "Cannot start polling \"%s\": %m.", w->path);
                return 0;
        }
        if (r != -ENOENT)
                log_debug_errno(r, "Cannot watch \"%s\" yet: %m.", w->path);
        r = arm_timer(w, &w->retry_source, on_retry, "watcher-retry");
        if (r < 0)
                log_error_errno(r, "Cannot arm the timer that looks for \"%s\": %m.", w->path);
        return 0;
}

/* Names that start with ".." are never keys (Kubernetes refuses such
 * ConfigMap keys, and so does the agent): they are kubelet's version
 * directories and ..data_tmp. A read goes through ..data and the version it
 * names only (volume_read()), so a change to any other such name changes
 * nothing a read sees: the next version being written before the flip, the
 * old one removed after it. */
static bool event_is_inert(const Watcher *w, const struct inotify_event *ev) {
        if (ev->len == 0 || (ev->mask & LOST_MASK))
                return false;
        if (!startswith(ev->name, VOLUME_RESERVED_PREFIX) || streq(ev->name, VOLUME_DATA_LINK))
                return false;
        return !streq(ev->name, w->read_version);
}

/* Reads what inotify has queued and schedules the handler. Returns the
 * number of events that concern us, or -errno. */
static int drain_inotify(Watcher *w) {
        bool lost = false, overflow = false, flipped = false, live = false;
        bool after_flip = w->flipped; /* this burst flipped before this drain */
        unsigned reads = 0;
        int n_events = 0, r;

        while (reads++ < WATCHER_MAX_READS_PER_WAKEUP) {
                char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
                ssize_t n;

                n = read(w->inotify_fd, buf, sizeof buf);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                break;
                        /* Not expected; whatever it was, look again. */
                        r = negative_errno();
                        log_warning_errno(r, "Cannot read inotify events for \"%s\": %m.", w->path);
                        overflow = true;
                        break;
                }

                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;

                        p += sizeof *ev + ev->len;
                        if (ev->mask & IN_Q_OVERFLOW) {
                                overflow = true;
                                n_events++;
                                continue;
                        }
                        /* late events of a watch we already dropped */
                        if (ev->wd != w->wd || w->wd < 0)
                                continue;
                        n_events++;
                        if (ev->mask & LOST_MASK)
                                lost = true;
                        if (!event_is_inert(w, ev))
                                live = true;
                        if ((ev->mask & IN_MOVED_TO) && ev->len > 0 &&
                            streq(ev->name, VOLUME_DATA_LINK)) {
                                flipped = after_flip = true;
                                w->flip_cookie = ev->cookie;
                                w->flip_then_live = false;
                        } else if (after_flip &&
                                   !(ev->len > 0 && startswith(ev->name, VOLUME_RESERVED_PREFIX) &&
                                     !streq(ev->name, VOLUME_DATA_LINK)))
                                /* After a flip, kubelet's versions and
                                 * ..data_tmp change nothing a read through
                                 * ..data sees (kubelet never names a new
                                 * version as an old one); anything else might. */
                                w->flip_then_live = true;
                }
        }

        if (lost) {
                r = handle_lost(w, true);
                if (r < 0)
                        log_error_errno(r,
                                        "Cannot keep watching \"%s\": %m. Changes are seen "
                                        "only at the next resync.",
                                        w->path);
                r = schedule_handler(w, WATCH_REASON_RECREATED, false);
        } else if (overflow) {
                log_notice("The inotify queue for \"%s\" overflowed; reading everything again.",
                           w->path);
                r = schedule_handler(w, WATCH_REASON_OVERFLOW, false);
        } else if (live || (n_events > 0 && w->pending)) {
                r = schedule_handler(w, WATCH_REASON_INOTIFY, flipped);
        } else {
                /* None, or only kubelet's other versions and ..data_tmp:
                 * nothing to read, and nothing the signature holds
                 * (signature_read()), so nothing to do: no timer, no
                 * signature. */
                r = 0;
        }
        if (r < 0)
                return r;
        return n_events;
}

static int on_inotify(_unused_ sd_event_source *s, _unused_ int fd, _unused_ uint32_t revents,
                      void *userdata) {
        Watcher *w = userdata;
        int r;

        r = drain_inotify(w);
        if (r < 0)
                log_error_errno(r, "Cannot schedule a look at \"%s\": %m.", w->path);
        /* kubelet's flip: look now, not one turn of the loop later. (Only
         * here: watcher_verify() drains too, and its caller is not ready for
         * the handler to run inside it.) */
        if (w->pending && w->flipped && w->settle_source) {
                (void) sd_event_source_set_enabled(w->settle_source, SD_EVENT_OFF);
                (void) on_settle(w->settle_source, 0, w);
        }
        return 0;
}

/* 0 watching, or -errno with *ret_inotify_problem telling whether polling
 * could stand in (true) or the directory itself is the problem (false). */
static int start_inotify(Watcher *w, int dir_fd, bool *ret_inotify_problem) {
        const char *fs;
        int r;

        *ret_inotify_problem = true;

        if (w->mode == WATCH_AUTO && (fs = remote_filesystem_name(dir_fd))) {
                set_reason(w, 0,
                           "\"%s\" is on %s, where changes made outside this kernel raise no "
                           "inotify event",
                           w->path, fs);
                return -EREMOTE;
        }

        w->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (w->inotify_fd < 0) {
                r = negative_errno();
                w->inotify_fd = -EBADF;
                set_init_reason(w, r);
                return r;
        }

        r = add_watch(w);
        if (r < 0) {
                *ret_inotify_problem = !is_directory_error(r);
                set_add_watch_reason(w, r);
                return r;
        }

        r = sd_event_add_io(w->event, &w->inotify_source, w->inotify_fd, EPOLLIN, on_inotify, w);
        if (r < 0) {
                *ret_inotify_problem = false;
                return r;
        }
        /* When a change and a request wake the loop together, the change is
         * looked at first: the request gets the new state, not the one the
         * change replaces. */
        (void) sd_event_source_set_priority(w->inotify_source, SD_EVENT_PRIORITY_IMPORTANT);
        (void) sd_event_source_set_description(w->inotify_source, "watcher-inotify");
        w->active = WATCH_INOTIFY;
        return 0;
}

/* ------------------------------------------------------------------------ */

Watcher *watcher_free(Watcher *w) {
        if (!w)
                return NULL;
        stop_inotify(w);
        sd_event_source_disable_unref(w->settle_source);
        sd_event_source_disable_unref(w->poll_source);
        sd_event_source_disable_unref(w->signature_source);
        sd_event_unref(w->event);
        free(w->data_link_path);
        free(w->path);
        free(w);
        return NULL;
}

int watcher_new(sd_event *e, const char *dir, WatchMode mode, uint64_t poll_interval_usec,
                watcher_handler_t handler, void *userdata, Watcher **ret) {
        _cleanup_(watcher_freep) Watcher *w = NULL;
        _cleanup_close_ int fd = -EBADF;
        bool inotify_problem = false;
        int r;

        if (!e || !dir || !*dir || !handler || !ret || mode < 0 || mode >= _WATCH_MODE_MAX ||
            poll_interval_usec < WATCHER_MIN_POLL_USEC ||
            poll_interval_usec > WATCHER_MAX_POLL_USEC)
                return -EINVAL;

        w = calloc(1, sizeof *w);
        if (!w)
                return -ENOMEM;
        w->inotify_fd = -EBADF;
        w->wd = -1;
        w->event = sd_event_ref(e);
        w->mode = mode;
        w->poll_usec = poll_interval_usec;
        w->handler = handler;
        w->userdata = userdata;
        w->path = strdup(dir);
        if (!w->path)
                return -ENOMEM;
        if (asprintf(&w->data_link_path, "%s/" VOLUME_DATA_LINK, dir) < 0) {
                w->data_link_path = NULL;
                return -ENOMEM;
        }

        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();

        if (mode != WATCH_POLL) {
                r = start_inotify(w, fd, &inotify_problem);
                if (r < 0) {
                        if (mode == WATCH_INOTIFY || !inotify_problem)
                                return r;
                        log_debug("Falling back to polling \"%s\": %s", dir, w->fallback_reason);
                }
        }
        /* After the watch exists: a change from here on is reported, so the
         * signature never hides one from watcher_verify(). */
        take_signature(w);
        set_read_version(w, w->sig.link_error ? "" : w->sig.version);

        if (w->active != WATCH_INOTIFY) {
                r = start_poll(w);
                if (r < 0)
                        return r;
        }

        *ret = TAKE_PTR(w);
        return 0;
}

WatchMode watcher_active_mode(const Watcher *w) {
        return w ? w->active : _WATCH_MODE_INVALID;
}

const char *watcher_fallback_reason(const Watcher *w) {
        return w && w->active == WATCH_POLL && w->mode == WATCH_AUTO && w->has_reason
                       ? w->fallback_reason
                       : NULL;
}

const char *watcher_path(const Watcher *w) {
        return w ? w->path : NULL;
}

int watcher_verify(Watcher *w) {
        DirSignature now;
        int r;

        if (!w)
                return -EINVAL;
        if (w->active != WATCH_INOTIFY || w->wd < 0)
                return WATCH_VERIFY_OK;

        /* Take in what inotify already queued: those changes were reported. */
        r = drain_inotify(w);
        if (r < 0)
                return r;
        if (w->pending || w->active != WATCH_INOTIFY || w->wd < 0)
                return WATCH_VERIFY_OK;
        if (w->signature_stale) {
                /* a flip's call ran and the loop was never idle since:
                 * nothing to compare with yet */
                take_signature(w);
                return WATCH_VERIFY_OK;
        }

        signature_read(w->path, &now);

        /* A local change queues its event before the syscall returns: one that
         * slipped in while we were reading the signature is in the queue now. */
        r = drain_inotify(w);
        if (r < 0)
                return r;
        if (w->pending || signature_eq(&now, &w->sig))
                return WATCH_VERIFY_OK;

        if (!signature_same_directory(&now, &w->sig)) {
                /* The path names another directory than the one watched, and
                 * no IN_DELETE_SELF said so: a filesystem mounted over it (a
                 * volume remount), or the path's parent replaced. Watch what
                 * is there now; inotify itself did nothing wrong. */
                w->sig = now;
                r = handle_lost(w, false);
                if (r < 0)
                        return r;
                return w->active == WATCH_POLL ? WATCH_VERIFY_FELL_BACK : WATCH_VERIFY_REWATCHED;
        }

        /* The same directory changed and inotify never said so: its
         * filesystem does not report (every) change. */
        w->sig = now;
        if (w->mode != WATCH_AUTO)
                return WATCH_VERIFY_MISSED;

        set_reason(w, 0,
                   "\"%s\" changed without an inotify event: its filesystem does not report "
                   "every change",
                   w->path);
        r = start_poll(w);
        if (r < 0)
                return r;
        return WATCH_VERIFY_FELL_BACK;
}
