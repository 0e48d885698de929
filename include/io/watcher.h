/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tells its owner when to look at the desired directory again. It watches
 * the directory, never a file (docs/DESIGN.md §2), and never says what
 * changed: it calls the handler, which re-reads everything (volume_read()).
 *
 * Modes:
 *  - inotify: events are coalesced into one handler call per burst, within
 *    WATCHER_SETTLE_USEC of quiet and at most WATCHER_SETTLE_MAX_USEC after
 *    its first event; kubelet's flip of ..data calls the handler at once,
 *    every flip (at most one call per wake-up of the loop): a writer that
 *    flips without pause calls it as often, and the owner bounds how often
 *    it acts on the calls. Kubelet's periodic re-reads of the volume are not
 *    changes. An idle inotify watcher arms no timer and never wakes the loop.
 *  - poll: every poll interval, compares a signature of what a read depends
 *    on (the directory's identity, mode and owner, the ..data target, and the lstat
 *    of ..data and that version, or in a plain directory of each entry whose
 *    name does not start with "..", at most WATCHER_MAX_POLL_ENTRIES of them)
 *    and calls the handler when it differs.
 *  - auto: inotify, or poll from then on when inotify cannot be used or
 *    cannot be trusted on that filesystem (watcher_fallback_reason() says why).
 *
 * When the directory is deleted, moved away or unmounted, the handler runs
 * (WATCH_REASON_RECREATED), the watcher looks for it every poll interval, and
 * runs the handler again once a directory exists at the path.
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
/* Entries of a plain directory (one without ..data) the signature looks at;
 * past this, the directory's own times stand in for the rest. A projection's
 * signature is ..data and the version it names, never a listing. */
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

/* From the handler: true when this call is for a burst of inotify events
 * that holds kubelet's flip (the rename of "..data" into the directory) and
 * nothing after the last flip that could change what a read sees (kubelet's
 * version directories and ..data_tmp cannot, once ..data names another), with
 * *ret_cookie the inotify cookie of that rename: a read begun after it sees
 * all the burst. False from any other call (a burst without a flip, or with
 * a change after it, a lost directory, polling, an overflow), and outside
 * the handler. */
bool watcher_call_flip(const Watcher *w, uint32_t *ret_cookie);

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
