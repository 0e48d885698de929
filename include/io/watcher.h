/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Layer 2: tells its owner when to look at the desired directory again.
 *
 * The watcher watches the directory, never a file (docs/DESIGN.md §2): a watch on a
 * file, or on the directory ..data resolves to, dies with IN_DELETE_SELF at
 * the next kubelet update. Events are hints only: the watcher never says what
 * changed, it calls the handler, which re-reads everything (volume_read()).
 *
 * inotify mode: one watch on the directory with a mask that leaves out
 * IN_OPEN, IN_ACCESS and IN_CLOSE_NOWRITE (kubelet opens and reads every file
 * of the volume on each sync, about once a minute, without changing it).
 * Events are drained as they come and coalesced: the handler runs once the
 * directory has been quiet for WATCHER_SETTLE_USEC, and at the latest
 * WATCHER_SETTLE_MAX_USEC after the first event of a burst. kubelet's rename
 * of ..data over the old link is the update itself: the handler runs at
 * once, and events later in the same burst never postpone it (unless the
 * last flip was looked at less than WATCHER_SETTLE_USEC before: a storm of
 * updates is coalesced like any other burst). The rest of
 * kubelet's update (links for new keys, rm -r of the old version: well under
 * a millisecond) is usually a second, short burst; when it touches only
 * names that start with ".." other than ..data and the version the handler
 * last read (Kubernetes refuses such keys: they are version directories and
 * ..data_tmp, which no read goes through), it calls nothing and only takes
 * a new signature; a link for a new key still calls the handler. The
 * inotify source runs before the loop's other sources of the same turn (a
 * scrape that arrives with a change is answered after the change is looked
 * at), and after a flip's call the signature for watcher_verify() is taken
 * once the loop is idle, not before the call. An inotify
 * queue overflow (IN_Q_OVERFLOW) is a hint like any other. When the
 * directory is deleted, moved away or unmounted, the handler runs (reason
 * RECREATED, the directory is gone), the watcher checks every poll interval
 * until a directory exists at the path again, watches it and runs the handler
 * again (RECREATED). No timer is armed while nothing changes: an idle
 * inotify watcher never wakes the loop.
 *
 * poll mode: every poll interval, compares a signature of the directory
 * (readlink(..data); the directory's dev, ino, mtime, ctime; lstat of each
 * entry: name, ino, mode, size, mtime, ctime, at most WATCHER_MAX_POLL_ENTRIES)
 * with the previous one and runs the handler when it differs. Reading a
 * file changes no part of the signature, so kubelet's resync is not a change.
 *
 * auto mode: inotify, or poll when inotify cannot be used: inotify_init1()
 * fails (EMFILE: fs.inotify.max_user_instances, shared by every container of
 * the user on the node, often 128; ENOSYS, EINVAL: a runtime without it),
 * inotify_add_watch() fails (ENOSPC: fs.inotify.max_user_watches), the
 * directory is on a filesystem whose changes made outside this kernel raise no
 * event (FUSE/virtio-fs, 9p, NFS, SMB, Ceph: see remote_filesystem_name()), or
 * watcher_verify() found a change no event announced. The switch is for good.
 *
 * The handler is called from the event loop; it must not free the watcher.
 * It should open the directory by path on each call (it may have been
 * recreated: volume_read() says -EIDRM on a descriptor of a deleted one).
 * Only the event callbacks log (a lost or recovered directory, an overflow,
 * a later fallback); watcher_new() does not: the owner logs the mode and
 * watcher_fallback_reason().
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "macro.h"

/* Quiet time after the last event of a burst before the handler runs. */
#define WATCHER_SETTLE_USEC          (10u * 1000u)
/* Longest delay from the first event of a burst to the handler call, so a
 * directory that never stops changing still gets looked at. */
#define WATCHER_SETTLE_MAX_USEC      (100u * 1000u)
/* Bounds on the poll interval (also the retry interval for a lost directory). */
#define WATCHER_MIN_POLL_USEC        (1u * 1000u)
#define WATCHER_MAX_POLL_USEC        (86400ull * 1000u * 1000u)
/* Entries looked at per poll; a ConfigMap volume holds a few (keys, ..data,
 * two versions for a moment). Entries past this are not part of the
 * signature. */
#define WATCHER_MAX_POLL_ENTRIES     1024u
/* inotify reads per wake-up before yielding to the rest of the loop
 * (epoll is level-triggered: what is left is read on the next iteration). */
#define WATCHER_MAX_READS_PER_WAKEUP 64u

typedef enum WatchMode {
        WATCH_AUTO,    /* inotify, polling when inotify is unavailable or unreliable */
        WATCH_INOTIFY, /* inotify only: fail when it is unavailable */
        WATCH_POLL,    /* polling only */
        _WATCH_MODE_MAX,
        _WATCH_MODE_INVALID = -1,
} WatchMode;

typedef enum WatchReason {
        WATCH_REASON_INOTIFY,   /* inotify reported changes in the directory */
        WATCH_REASON_OVERFLOW,  /* the inotify queue overflowed: changes may be unreported */
        WATCH_REASON_RECREATED, /* the directory vanished, or appeared again at its path */
        WATCH_REASON_POLL,      /* polling saw the signature change */
        _WATCH_REASON_MAX,
        _WATCH_REASON_INVALID = -1,
} WatchReason;

typedef struct Watcher Watcher;

/* Runs in the event loop; reason tells what woke it (for counting only:
 * every reason means "read everything again"). */
typedef void (*watcher_handler_t)(Watcher *w, WatchReason reason, void *userdata);

/* "auto", "inotify", "poll"; NULL / _WATCH_MODE_INVALID for anything else. */
const char *watch_mode_to_string(WatchMode m);
WatchMode watch_mode_from_string(const char *s);
/* "inotify", "overflow", "recreated", "poll": the trigger label of a metric. */
const char *watch_reason_to_string(WatchReason r);
WatchReason watch_reason_from_string(const char *s);

/* Watches dir in the loop e (a new reference is taken on e) and calls
 * handler(w, reason, userdata) after changes. dir is copied. The directory
 * must exist now. The handler is NOT called for the initial state: the owner
 * reads the directory itself after this returns.
 * poll_interval_usec (WATCHER_MIN_POLL_USEC .. WATCHER_MAX_POLL_USEC) is the
 * poll period in poll mode, and how often a lost directory is looked for.
 * On success *ret is a new Watcher owned by the caller (watcher_free()).
 * Returns 0, or:
 *   -EINVAL        bad mode, interval, NULL argument
 *   -ENOENT, -ENOTDIR, -EACCES, ...  the directory cannot be opened
 *   mode WATCH_INOTIFY only: the -errno of inotify_init1() (-EMFILE,
 *                  -ENFILE, -ENOSYS, -EINVAL) or inotify_add_watch()
 *                  (-ENOSPC, -ENOMEM)
 *   -ENOMEM, or an sd-event -errno. */
int watcher_new(sd_event *e, const char *dir, WatchMode mode, uint64_t poll_interval_usec,
                watcher_handler_t handler, void *userdata, Watcher **ret);

/* Stops watching, releases the event sources and the loop reference.
 * Accepts NULL, returns NULL. Must not be called from the handler. */
Watcher *watcher_free(Watcher *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(Watcher *, watcher_free);

/* WATCH_INOTIFY or WATCH_POLL: what is in use now (never WATCH_AUTO). */
WatchMode watcher_active_mode(const Watcher *w);

/* Why auto mode polls, as one sentence naming the cause and the setting to
 * change ("inotify_init1() failed: Too many open files: the user's inotify
 * instances (fs.inotify.max_user_instances) are used up..."), or NULL when
 * inotify is in use or poll mode was asked for. Borrowed: valid until the
 * next call into the watcher. */
const char *watcher_fallback_reason(const Watcher *w);

/* The path being watched (borrowed). */
const char *watcher_path(const Watcher *w);

/* What watcher_verify() found (all but OK are worth a log line and a
 * re-read by the owner). */
enum {
        WATCH_VERIFY_OK = 0,        /* nothing went unreported, or polling: nothing to verify */
        WATCH_VERIFY_MISSED = 1,    /* the directory changed without an event; mode inotify
                                     * was asked for, so the watcher keeps using it */
        WATCH_VERIFY_FELL_BACK = 2, /* same, in auto mode: the watcher polls from now on
                                     * (watcher_fallback_reason() says why) */
        WATCH_VERIFY_REWATCHED = 3, /* the path names another directory than the one watched
                                     * (a filesystem mounted over it, a parent replaced): the
                                     * watcher watches that one now (or looks for it every poll
                                     * interval when nothing is there), still with inotify */
};

/* For the owner's periodic re-verification (its resync timer): checks
 * whether the directory changed since the handler last ran without inotify
 * saying so. Events already queued are taken in first (they schedule the
 * handler as usual), so a change that inotify did report is never counted.
 * Returns a WATCH_VERIFY_* value, or -errno (-ENOMEM, sd-event errors).
 * The handler is not called from here, and nothing is logged above debug. */
int watcher_verify(Watcher *w);
