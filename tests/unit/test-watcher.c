/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The watcher on real inotify, a real sd-event loop and the real atomic
 * writer (tests/tools/atomic-writer.sh) in child processes: updates, keys
 * added and removed, kubelet's no-op resync, bursts, the flip-to-handler
 * latency, an inotify queue overflow, the directory deleted or moved, poll
 * mode, and the automatic fallback when inotify is out of instances or
 * watches (real limits, lowered in a child's user namespace) or misses a
 * change (a mount over the directory). The handler does what the manager
 * will do: volume_read() everything.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <cmocka.h>
#include "unit-skip.h"

#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "volume.h"
#include "watcher.h"
#include "writer-child.h"

#define K_CONF          "enroot.conf"
#define K_ENV           "99-aicr-defaults.env"
#define K_EXTRA         "extra.conf"

#define V1_CONF         TEST_DATA_DIR "/volume/v1/enroot.conf"
#define V1_ENV          TEST_DATA_DIR "/volume/v1/99-aicr-defaults.env"
#define V2_CONF         TEST_DATA_DIR "/volume/v2/enroot.conf"
#define V2_EXTRA        TEST_DATA_DIR "/volume/v2/extra.conf"

#define POLL_USEC       (100u * 1000u)
#define MAX_BYTES       (1024u * 1024u)
#define WRITER_WAIT_MS  (60 * 1000)
/* How long a wait for something the watcher must do may last: it only ends a
 * test that hangs, and no check depends on it being short. */
#define HANG_MS         (30 * 1000)
/* Calls whose loop time is kept (Ctx.call_loop_usec). */
#define MAX_TIMED_CALLS 256u

static const char *const keys[] = {K_CONF, K_ENV, K_EXTRA};
static const char *const payload_v1[] = {K_CONF "=" V1_CONF, K_ENV "=" V1_ENV, NULL};

typedef struct Ctx {
        const char *dir;
        unsigned calls;
        unsigned by_reason[_WATCH_REASON_MAX];
        WatchReason last_reason;
        int last_error; /* of opening and reading the directory */
        char *version;  /* what the last call read */
        char *conf;
        int env_error, extra_error;
        sd_event *loop;                     /* the loop the watcher runs on, when known */
        uint64_t last_call_usec;            /* CLOCK_MONOTONIC */
        uint64_t new_version_realtime_usec; /* CLOCK_REALTIME, when a call first read a
                                             * version unlike the previous one: compared
                                             * with a file's ctime, nothing else */
        /* the loop's CLOCK_MONOTONIC time of each call (sd_event_now()), the first ones */
        uint64_t call_loop_usec[MAX_TIMED_CALLS];
        bool flip_call; /* the last call: watcher_call_flip() */
        uint32_t flip_cookie;
} Ctx;

static char top[] = "/tmp/test-watcher.XXXXXX";
static char dir[sizeof top + 64];
static sd_event *event;
static Watcher *watcher;
static Ctx ctx;

static uint64_t now_usec(clockid_t clock) {
        struct timespec ts;
        assert_int_equal(clock_gettime(clock, &ts), 0);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static void ctx_reset(Ctx *c, const char *d) {
        free(c->version);
        free(c->conf);
        *c = (Ctx){.dir = d, .last_reason = _WATCH_REASON_INVALID};
}

/* What the manager will do on every call: read everything again. */
static void on_change(Watcher *w, WatchReason reason, void *userdata) {
        Ctx *c = userdata;
        _cleanup_(volume_snapshot_freep) VolumeSnapshot *s = NULL;
        _cleanup_close_ int fd = -EBADF;
        char *old = c->version;

        c->calls++;
        c->flip_call = watcher_call_flip(w, &c->flip_cookie);
        if (reason >= 0 && reason < _WATCH_REASON_MAX)
                c->by_reason[reason]++;
        c->last_reason = reason;
        c->last_call_usec = now_usec(CLOCK_MONOTONIC);
        if (c->loop && c->calls <= MAX_TIMED_CALLS)
                (void) sd_event_now(c->loop, CLOCK_MONOTONIC, &c->call_loop_usec[c->calls - 1]);
        c->version = NULL;
        free(c->conf);
        c->conf = NULL;

        fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        c->last_error = fd < 0 ? -errno : volume_read(fd, keys, 3, MAX_BYTES, &s);
        if (c->last_error == 0) {
                c->version = s->version ? strdup(s->version) : NULL;
                if (s->files[0].error == 0)
                        c->conf = strdup(s->files[0].data);
                c->env_error = s->files[1].error;
                c->extra_error = s->files[2].error;
        }
        if (!streq_ptr(old, c->version))
                c->new_version_realtime_usec = now_usec(CLOCK_REALTIME);
        free(old);
}

static int setup(void **state) {
        static unsigned n;

        (void) snprintf(dir, sizeof dir, "%s/d%u", top, n++);
        if (mkdir(dir, 0755) < 0 || sd_event_new(&event) < 0)
                return -1;
        ctx_reset(&ctx, dir);
        ctx.loop = event;
        return writer_run(dir, payload_v1, NULL, 0) == 0 ? 0 : -1;
}

static int teardown(void **state) {
        watcher = watcher_free(watcher);
        event = sd_event_unref(event);
        ctx_reset(&ctx, NULL);
        return 0;
}

static int group_setup(void **state) {
        /* the event callbacks' messages show what the watcher tells a user */
        log_set_max_level(LOG_INFO);
        return mkdtemp(top) && chmod(top, 0755) == 0 ? 0 : -1;
}

static int group_teardown(void **state) {
        char cmd[sizeof top + 16];
        (void) snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
        return system(cmd) == 0 ? 0 : -1;
}

static char *slurp(const char *path) {
        char *data = NULL;
        size_t len;
        assert_int_equal(read_file_at(AT_FDCWD, path, 0, MAX_BYTES, &data, &len), 0);
        return data;
}

/* The version ..data names now (a new string). */
static char *current_version(void) {
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char *v = NULL;

        assert_int_equal(volume_read_version(fd, &v), 0);
        assert_non_null(v);
        return v;
}

/* Runs the loop until pred(arg) or timeout_ms; returns pred's last answer.
 * Each run is capped at 10 ms so that a predicate on something the loop
 * does not watch (a child's exit) is noticed soon. */
static bool run_until(sd_event *e, bool (*pred)(void *), void *arg, unsigned timeout_ms) {
        uint64_t end = now_usec(CLOCK_MONOTONIC) + timeout_ms * 1000ull;

        while (!pred(arg)) {
                uint64_t n = now_usec(CLOCK_MONOTONIC);
                if (n >= end)
                        return false;
                assert_true(sd_event_run(e, end - n < 10000 ? end - n : 10000) >= 0);
        }
        return true;
}

/* Runs the loop until pred(arg); fails the test, naming what, when that
 * takes HANG_MS. */
static void await(sd_event *e, bool (*pred)(void *), void *arg, const char *what) {
        if (!run_until(e, pred, arg, HANG_MS))
                fail_msg("waited %d s for %s", HANG_MS / 1000, what);
}

/* Runs the loop until everything that changes already made can cause has
 * happened: every change made before the call has its events queued (inotify
 * queues them in the system call that makes the change), so once the queue is
 * read, every settle timer they armed is due within WATCHER_SETTLE_MAX_USEC
 * (watcher.h); the loop runs that long on the monotonic clock, then until an
 * iteration dispatches nothing. A slow machine makes this take longer, never
 * end early. Returns 0, or a negative errno of sd_event_run(); no cmocka, so
 * that a forked child may use it. (Polling is not covered: it wakes on its
 * own timer.) */
static int settle(sd_event *e) {
        uint64_t end;
        int r;

        for (int pass = 0; pass < 2; pass++) {
                /* bounded only in case the loop never runs dry (a bug) */
                end = now_usec(CLOCK_MONOTONIC) + HANG_MS * 1000ull;
                do
                        r = sd_event_run(e, 0);
                while (r > 0 && now_usec(CLOCK_MONOTONIC) < end);
                if (r != 0)
                        return r < 0 ? r : -ETIME;
                if (pass > 0)
                        break;
                end = now_usec(CLOCK_MONOTONIC) + WATCHER_SETTLE_MAX_USEC + 1000u;
                for (uint64_t n; (n = now_usec(CLOCK_MONOTONIC)) < end;) {
                        r = sd_event_run(e, end - n);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

#define SETTLE(e) assert_int_equal(settle(e), 0)

/* Runs the loop until it has dispatched n times: in poll mode with nothing
 * else on the loop, n polls, each of which saw the directory as it is once
 * the changes made before the call are done. */
static void polls(sd_event *e, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                if (sd_event_run(e, HANG_MS * 1000ull) != 1)
                        fail_msg("waited %d s for poll %u of %u", HANG_MS / 1000, i + 1, n);
}

typedef struct Running {
        WriterChild *child;
        int status;
} Running;

static bool child_done(void *arg) {
        Running *r = arg;
        return writer_exited(r->child, &r->status);
}

/* Runs the writer while the loop runs; returns the version it printed
 * ("version X" or "unchanged X"), a new string. */
static char *write_while_watching(sd_event *e, const char *const *args) {
        WriterChild c;
        Running run = {.child = &c, .status = -1};
        char line[512];
        const char *v;

        assert_int_equal(writer_spawn(&c, ctx.dir, args), 0);
        await(e, child_done, &run, "the writer to exit");
        assert_int_equal(run.status, 0);
        assert_int_equal(writer_wait_line(&c, "", 1000, line, sizeof line), 1);
        for (;;) {
                char next[512];
                if (writer_next_line(&c, 1000, next, sizeof next) <= 0)
                        break;
                memcpy(line, next, sizeof line);
        }
        (void) writer_finish(&c, 0);
        v = startswith(line, "version ");
        if (!v)
                v = startswith(line, "unchanged ");
        assert_non_null(v);
        return strdup(v);
}

static void start_watcher(WatchMode mode) {
        assert_int_equal(watcher_new(event, dir, mode, POLL_USEC, on_change, &ctx, &watcher), 0);
}

/* ------------------------------------------------------------------------ */

static void test_strings(void **state) {
        for (int m = 0; m < _WATCH_MODE_MAX; m++)
                assert_int_equal(watch_mode_from_string(watch_mode_to_string(m)), m);
        for (int r = 0; r < _WATCH_REASON_MAX; r++)
                assert_int_equal(watch_reason_from_string(watch_reason_to_string(r)), r);
        assert_string_equal(watch_mode_to_string(WATCH_AUTO), "auto");
        assert_string_equal(watch_mode_to_string(WATCH_INOTIFY), "inotify");
        assert_string_equal(watch_mode_to_string(WATCH_POLL), "poll");
        assert_string_equal(watch_reason_to_string(WATCH_REASON_OVERFLOW), "overflow");
        assert_string_equal(watch_reason_to_string(WATCH_REASON_RECREATED), "recreated");
        assert_int_equal(watch_mode_from_string("fanotify"), _WATCH_MODE_INVALID);
        assert_int_equal(watch_mode_from_string(NULL), _WATCH_MODE_INVALID);
        assert_null(watch_mode_to_string(_WATCH_MODE_MAX));
        assert_null(watch_reason_to_string(_WATCH_REASON_INVALID));
}

static void test_arguments(void **state) {
        Watcher *sentinel = (Watcher *) 0x1, *w = sentinel;
        char missing[sizeof dir + 16], file[sizeof dir + 16];

        (void) snprintf(missing, sizeof missing, "%s/missing", dir);
        (void) snprintf(file, sizeof file, "%s/" K_CONF, dir);

        assert_int_equal(watcher_new(NULL, dir, WATCH_AUTO, POLL_USEC, on_change, &ctx, &w),
                         -EINVAL);
        assert_int_equal(watcher_new(event, dir, _WATCH_MODE_MAX, POLL_USEC, on_change, &ctx, &w),
                         -EINVAL);
        assert_int_equal(watcher_new(event, dir, WATCH_AUTO, POLL_USEC, NULL, &ctx, &w), -EINVAL);
        /* the interval limits, crossed on both sides */
        assert_int_equal(
                watcher_new(event, dir, WATCH_POLL, WATCHER_MIN_POLL_USEC - 1, on_change, &ctx, &w),
                -EINVAL);
        assert_int_equal(
                watcher_new(event, dir, WATCH_POLL, WATCHER_MAX_POLL_USEC + 1, on_change, &ctx, &w),
                -EINVAL);
        /* a directory problem is an error in every mode: polling would not help */
        for (int m = 0; m < _WATCH_MODE_MAX; m++) {
                assert_int_equal(watcher_new(event, missing, m, POLL_USEC, on_change, &ctx, &w),
                                 -ENOENT);
                assert_int_equal(watcher_new(event, file, m, POLL_USEC, on_change, &ctx, &w),
                                 -ENOTDIR);
        }
        assert_ptr_equal(w, sentinel);

        assert_null(watcher_free(NULL));
        assert_int_equal(watcher_active_mode(NULL), _WATCH_MODE_INVALID);
        assert_int_equal(watcher_verify(NULL), -EINVAL);
}

/* An update, a key added, a key removed: each ends with a read of exactly
 * what the writer wrote, reported as inotify. */
static void test_inotify_updates(void **state) {
        static const struct {
                const char *what;
                const char *payload[4];
                const char *conf;
                int env_error, extra_error;
        } steps[] = {
                {"update", {K_CONF "=" V2_CONF, K_ENV "=" V1_ENV}, V2_CONF, 0, -ENOENT},
                {"key added",
                 {K_CONF "=" V2_CONF, K_ENV "=" V1_ENV, K_EXTRA "=" V2_EXTRA},
                 V2_CONF,
                 0,
                 0},
                {"key removed", {K_CONF "=" V1_CONF, K_EXTRA "=" V2_EXTRA}, V1_CONF, -ENOENT, 0},
        };

        start_watcher(WATCH_INOTIFY);
        assert_int_equal(watcher_active_mode(watcher), WATCH_INOTIFY);
        assert_null(watcher_fallback_reason(watcher));
        assert_string_equal(watcher_path(watcher), dir);

        /* no call for the initial state */
        SETTLE(event);
        assert_int_equal(ctx.calls, 0);

        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                _cleanup_free_ char *expected = slurp(steps[i].conf), *v = NULL;
                unsigned before = ctx.calls;

                v = write_while_watching(event, steps[i].payload);
                SETTLE(event);
                print_message("%-11s: %u handler call(s), last read version %s\n", steps[i].what,
                              ctx.calls - before, ctx.version);
                assert_true(ctx.calls > before);
                assert_int_equal(ctx.by_reason[WATCH_REASON_INOTIFY], ctx.calls);
                assert_int_equal(ctx.last_error, 0);
                assert_string_equal(ctx.version, v);
                assert_string_equal(ctx.conf, expected);
                assert_int_equal(ctx.env_error, steps[i].env_error);
                assert_int_equal(ctx.extra_error, steps[i].extra_error);
        }
}

/* kubelet's periodic sync with nothing new opens and reads every file:
 * with IN_OPEN/IN_ACCESS/IN_CLOSE_NOWRITE out of the mask, not one call. */
static void test_noop_sync(void **state) {
        _cleanup_free_ char *v1 = NULL, *v = NULL;

        start_watcher(WATCH_INOTIFY);
        v1 = write_while_watching(event, payload_v1);
        SETTLE(event);
        assert_int_equal(ctx.calls, 0);

        /* and three more, back to back */
        for (int i = 0; i < 3; i++) {
                v = write_while_watching(event, payload_v1);
                assert_string_equal(v, v1);
                free(v);
                v = NULL;
        }
        SETTLE(event);
        assert_int_equal(ctx.calls, 0);
}

/* Writes n versions of enroot.conf under top; returns the source directory. */
static void make_sources(char *src, size_t size, unsigned n) {
        static unsigned serial;

        (void) snprintf(src, size, "%s/src%u", top, serial++);
        assert_int_equal(mkdir(src, 0755), 0);
        for (unsigned i = 1; i <= n; i++) {
                char path[PATH_MAX], data[64];
                FILE *f;

                (void) snprintf(path, sizeof path, "%s/%u", src, i);
                (void) snprintf(data, sizeof data, "ENROOT_MAX_PROCESSORS=%u\n", i);
                f = fopen(path, "we");
                assert_non_null(f);
                assert_true(fputs(data, f) >= 0);
                assert_int_equal(fclose(f), 0);
        }
}

/* bash loop: n updates, one after the other, as fast as the writer goes. */
static void spawn_updates(WriterChild *c, const char *src, unsigned n) {
        char count[16];
        const char *argv[] = {"bash",
                              "-c",
                              "for i in $(seq 1 \"$4\"); do "
                              "bash \"$1\" \"$2\" enroot.conf=\"$3/$i\" || exit 1; done",
                              "bash",
                              WRITER_SCRIPT,
                              dir,
                              src,
                              count,
                              NULL};

        (void) snprintf(count, sizeof count, "%u", n);
        assert_int_equal(child_spawn(c, argv), 0);
}

/* Rapid successive updates: fewer calls than updates, and the last read is
 * the last version. First with the loop busy elsewhere while they land (the
 * queue holds every event: one call), then with the loop running alongside. */
static void test_rapid_updates(void **state) {
        enum { N = 10 };
        char src[256], last[PATH_MAX];
        _cleanup_free_ char *expected = NULL;
        WriterChild c;
        Running run = {.child = &c, .status = -1};
        uint64_t t0;

        make_sources(src, sizeof src, N);
        (void) snprintf(last, sizeof last, "%s/%u", src, N);
        expected = slurp(last);
        start_watcher(WATCH_INOTIFY);

        /* the loop does not run while the updates land */
        t0 = now_usec(CLOCK_MONOTONIC);
        spawn_updates(&c, src, N);
        assert_int_equal(writer_finish(&c, WRITER_WAIT_MS), 0);
        print_message("%d updates took %.0f ms with the loop not running\n", N,
                      (double) (now_usec(CLOCK_MONOTONIC) - t0) / 1000.0);
        SETTLE(event);
        print_message("  -> %u handler call(s)\n", ctx.calls);
        assert_int_equal(ctx.calls, 1);
        assert_string_equal(ctx.conf, expected);

        /* again, with the loop running all along: the shell writer spends
         * tens of milliseconds per step (a process each), longer than the
         * settle time, so several calls per update are expected; what must
         * hold is that the last read is the last version */
        ctx.calls = 0;
        {
                char src2[256];
                make_sources(src2, sizeof src2, N);
                (void) snprintf(last, sizeof last, "%s/%u", src2, N);
                free(expected);
                expected = slurp(last);
                t0 = now_usec(CLOCK_MONOTONIC);
                spawn_updates(&c, src2, N);
        }
        await(event, child_done, &run, "the writer to exit");
        assert_int_equal(run.status, 0);
        (void) writer_finish(&c, 0);
        print_message("%d updates by the shell writer took %.0f ms with the loop running\n", N,
                      (double) (now_usec(CLOCK_MONOTONIC) - t0) / 1000.0);
        SETTLE(event);
        print_message("  -> %u handler call(s), last read %s\n", ctx.calls, ctx.version);
        assert_true(ctx.calls >= 1);
        assert_string_equal(ctx.conf, expected);
}

/* Rapid updates at kubelet's own speed (all steps of one update within
 * microseconds, like AtomicWriter.Write()), a millisecond apart, while the
 * loop runs: every call is for a flip (the rest of each update calls
 * nothing), so there are no more calls than updates, and the last read is
 * the last. (How often the daemon acts on them is bounded in manager.c:
 * test-pacing.sh.) */
static void test_rapid_updates_kubelet_speed(void **state) {
        enum { N = 50 };
        static const char *const conf_key[] = {K_CONF};
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char last[64];
        WriterChild c = {.pid = -1, .out_fd = -1};
        Running run = {.child = &c, .status = -1};
        uint64_t t0;

        assert_true(fd >= 0);
        start_watcher(WATCH_INOTIFY);
        (void) snprintf(last, sizeof last, "ENROOT_MAX_PROCESSORS=%d\n", N);

        t0 = now_usec(CLOCK_MONOTONIC);
        c.pid = fork();
        assert_true(c.pid >= 0);
        if (c.pid == 0) {
                char name[64], prev[64] = "", data[64];
                char *old = NULL;
                _cleanup_close_ int at = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                /* take over from the shell writer's version */
                if (at < 0 || volume_read_version(at, &old) < 0 || !old)
                        _exit(1);
                (void) snprintf(prev, sizeof prev, "%s", old);
                for (int i = 1; i <= N; i++) {
                        (void) snprintf(name, sizeof name, "..2030_01_01_00_00_00.%09d", i);
                        (void) snprintf(data, sizeof data, "ENROOT_MAX_PROCESSORS=%d\n", i);
                        if (fast_write(at, name, conf_key, 1, data, prev) < 0)
                                _exit(1);
                        memcpy(prev, name, sizeof prev);
                        (void) usleep(1000);
                }
                _exit(0);
        }
        await(event, child_done, &run, "the writer to exit");
        assert_int_equal(run.status, 0);
        print_message("%d kubelet-speed updates took %.1f ms with the loop running\n", N,
                      (double) (now_usec(CLOCK_MONOTONIC) - t0) / 1000.0);
        SETTLE(event);
        print_message("  -> %u handler call(s), last read %s\n", ctx.calls, ctx.version);
        assert_true(ctx.calls >= 1);
        assert_true(ctx.calls <= N);
        assert_string_equal(ctx.conf, last);
}

/* A flip right after the last flip's call is called at once too: one step
 * of the loop, no settle timer (how soon the daemon then looks is its pace,
 * manager.c). */
static void test_flip_after_flip(void **state) {
        static const char *const conf_key[] = {K_CONF};
        _cleanup_close_ int at = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *v1 = NULL;
        char prev[64], name[64], data[64];
        unsigned calls;

        assert_true(at >= 0);
        start_watcher(WATCH_INOTIFY);
        SETTLE(event);
        v1 = current_version();
        assert_non_null(v1);
        (void) snprintf(prev, sizeof prev, "%s", v1);
        calls = ctx.calls;
        for (int i = 1; i <= 5; i++) {
                (void) snprintf(name, sizeof name, "..2030_01_01_00_00_00.%09d", i);
                (void) snprintf(data, sizeof data, "ENROOT_MAX_PROCESSORS=%d\n", i);
                assert_int_equal(fast_write(at, name, conf_key, 1, data, prev), 0);
                assert_true(sd_event_run(event, 0) >= 0);
                if (ctx.calls != calls + (unsigned) i)
                        fail_msg("update %d: %u call(s) after one step of the loop, not %u", i,
                                 ctx.calls - calls, (unsigned) i);
                assert_string_equal(ctx.version, name);
                assert_string_equal(ctx.conf, data);
                (void) snprintf(prev, sizeof prev, "%s", name);
        }
        SETTLE(event);
        assert_int_equal(ctx.calls, calls + 5);
        assert_int_equal(watcher_verify(watcher), WATCH_VERIFY_OK);
}

typedef struct LatencyRun {
        WriterChild *child;
        bool paused;
        double rename_start, rename_done; /* the writer's CLOCK_REALTIME, seconds */
        const char *old_version;
} LatencyRun;

static bool saw_flip(void *arg) {
        LatencyRun *l = arg;
        char line[512];

        while (writer_next_line(l->child, 0, line, sizeof line) > 0) {
                const char *t;
                if ((t = startswith(line, "step rename-start ")))
                        l->rename_start = strtod(t, NULL);
                else if ((t = startswith(line, "step rename ")))
                        l->rename_done = strtod(t, NULL);
                else if (streq(line, "paused rename"))
                        l->paused = true;
        }
        return l->paused && ctx.version && !streq(ctx.version, l->old_version);
}

static uint64_t ctime_usec(const char *path) {
        struct stat st;
        assert_int_equal(lstat(path, &st), 0);
        return (uint64_t) st.st_ctim.tv_sec * 1000000u + (uint64_t) st.st_ctim.tv_nsec / 1000u;
}

/* kubelet's ..data flip alone makes the handler read the new version: the
 * writer pauses right after the rename, so nothing later can be what was
 * seen. The read comes after the rename: after ..data's ctime (the kernel
 * sets it in rename(2), from its coarse clock, at most a tick early), the one
 * comparison on CLOCK_REALTIME here. How long after is printed for a reader
 * and measured by `make bench` (tests/bench/latency.sh, over a thousand
 * flips, beside inotifywait), not bounded here: a bound on a loaded machine
 * says more about the machine. test_flip_not_postponed() checks, without a
 * clock, that no settle time is waited for. */
/* watcher_call_flip(): a call for kubelet's flip names the rename's cookie
 * (as another inotify instance sees it) when nothing after the flip could
 * change a read: removing the old version does not; a new key's link, made
 * after the flip, does. Every step of each update is queued before the loop
 * turns, so one read of inotify takes the whole update. */
static void test_flip_call(void **state) {
        static const char *const conf_key[] = {K_CONF};
        static const char *const new_key[] = {K_CONF, "new-key"};
        _cleanup_close_ int at = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int peer = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        _cleanup_free_ char *v1 = NULL;
        uint32_t cookie = 0;
        unsigned calls;
        ssize_t n;

        assert_true(at >= 0 && peer >= 0);
        start_watcher(WATCH_INOTIFY);
        SETTLE(event);
        v1 = current_version();
        assert_non_null(v1);
        assert_false(ctx.flip_call); /* no call yet, or not for a flip */
        assert_true(inotify_add_watch(peer, dir, IN_MOVED_TO) >= 0);

        calls = ctx.calls;
        assert_int_equal(
                fast_write(at, "..2030_01_01_00_00_00.000000001", conf_key, 1, "A=1\n", v1), 0);
        n = read(peer, buf, sizeof buf);
        assert_true(n >= (ssize_t) sizeof(struct inotify_event));
        cookie = ((const struct inotify_event *) buf)->cookie;
        assert_true(sd_event_run(event, 0) >= 0);
        assert_int_equal(ctx.calls, calls + 1);
        if (!ctx.flip_call)
                fail_msg("a flip and the old version's removal: not a call for the flip");
        assert_int_equal(ctx.flip_cookie, cookie);
        SETTLE(event);

        /* a key the volume did not have: its link comes after the flip */
        calls = ctx.calls;
        assert_int_equal(fast_write(at, "..2030_01_01_00_00_00.000000002", new_key, 2, "A=2\n",
                                    "..2030_01_01_00_00_00.000000001"),
                         0);
        assert_true(sd_event_run(event, 0) >= 0);
        assert_int_equal(ctx.calls, calls + 1);
        if (ctx.flip_call)
                fail_msg("a new key's link after the flip: still a call for the flip alone");
        SETTLE(event);
        assert_false(ctx.flip_call);
}

static void test_latency(void **state) {
        const char *args[] = {"--trace",          "--pause-after",  "rename", "60",
                              K_CONF "=" V2_CONF, K_ENV "=" V1_ENV, NULL};
        _cleanup_free_ char *v1 = NULL;
        char data_link[sizeof dir + 16];
        WriterChild c;
        LatencyRun l = {.child = &c};
        uint64_t flip_ctime_usec;

        start_watcher(WATCH_INOTIFY);
        v1 = current_version();
        l.old_version = v1;
        (void) snprintf(data_link, sizeof data_link, "%s/..data", dir);

        assert_int_equal(writer_spawn(&c, dir, args), 0);
        await(event, saw_flip, &l, "a call that reads the version the paused writer flipped to");

        flip_ctime_usec = ctime_usec(data_link);
        print_message("..data flip -> handler read the new version: %.1f ms after the rename "
                      "(..data ctime); %.1f ms after mv(1) was started, %.1f ms after it "
                      "returned\n",
                      ((double) ctx.new_version_realtime_usec - (double) flip_ctime_usec) / 1000.0,
                      (double) ctx.new_version_realtime_usec / 1000.0 - l.rename_start * 1000.0,
                      (double) ctx.new_version_realtime_usec / 1000.0 - l.rename_done * 1000.0);
        assert_int_equal(ctx.last_reason, WATCH_REASON_INOTIFY);
        assert_true(ctx.new_version_realtime_usec >= flip_ctime_usec);

        assert_int_equal(writer_resume(&c), 0);
        assert_int_equal(writer_finish(&c, WRITER_WAIT_MS), 0);
}

/* kubelet's rename of ..data calls the handler at once: in the same turn of
 * the loop that reads the event, with no settle time. The loop is only
 * stepped, never left to wait, so a call that waited for a timer would
 * never come. */
static void test_flip_not_postponed(void **state) {
        const char *args[] = {"--pause-after",    "rename",         "60",
                              K_CONF "=" V2_CONF, K_ENV "=" V1_ENV, NULL};
        _cleanup_free_ char *v1 = NULL;
        char line[512];
        WriterChild c;
        unsigned calls;

        start_watcher(WATCH_INOTIFY);
        SETTLE(event);
        v1 = current_version();
        calls = ctx.calls;

        assert_int_equal(writer_spawn(&c, dir, args), 0);
        assert_int_equal(writer_wait_line(&c, "paused rename", WRITER_WAIT_MS, line, sizeof line),
                         1);
        /* One step: the events up to the rename are read, and the handler
         * runs in that same step. */
        assert_true(sd_event_run(event, 0) >= 0);
        assert_int_equal(ctx.calls, calls + 1);
        assert_int_equal(ctx.last_reason, WATCH_REASON_INOTIFY);
        assert_non_null(ctx.version);
        assert_string_not_equal(ctx.version, v1);

        /* The rest of the update (rm -r of the old version; the keys are
         * the same, so no link changes) touches no name a read goes
         * through: no second call, and the signature taken afterwards keeps
         * watcher_verify() quiet. */
        assert_int_equal(writer_resume(&c), 0);
        assert_int_equal(writer_finish(&c, WRITER_WAIT_MS), 0);
        SETTLE(event);
        assert_int_equal(ctx.calls, calls + 1);
        assert_string_not_equal(ctx.version, v1);
        assert_int_equal(watcher_verify(watcher), WATCH_VERIFY_OK);
        assert_int_equal(watcher_active_mode(watcher), WATCH_INOTIFY);
}

/* Names that start with ".." other than ..data and the version it names
 * (the next version being written, the old one being removed, ..data_tmp)
 * cannot change a read: they call nothing, arm no timer and take no
 * signature (the loop wakes once, for the events), yet watcher_verify()
 * stays quiet. A key's name, or the version ..data names, still calls. */
static void test_inert_versions(void **state) {
        char path[sizeof dir + 64], target[sizeof dir + 128], moved[sizeof dir + 64];
        _cleanup_free_ char *v1 = NULL;
        unsigned calls;
        int r;

        start_watcher(WATCH_INOTIFY);
        SETTLE(event);
        v1 = current_version();
        calls = ctx.calls;

        /* kubelet's next version appears: one wake-up reads the event, and
         * nothing is left to run (no settle timer, no idle signature) */
        (void) snprintf(path, sizeof path, "%s/..2099_01_01_00_00_00.000000002", dir);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_int_equal(sd_event_run(event, HANG_MS * 1000ull), 1);
        r = sd_event_run(event, 2 * WATCHER_SETTLE_USEC);
        if (r != 0)
                fail_msg("an inert event left work on the loop: sd_event_run() returned %d", r);
        assert_int_equal(rmdir(path), 0);
        assert_int_equal(sd_event_run(event, HANG_MS * 1000ull), 1);
        assert_int_equal(sd_event_run(event, 2 * WATCHER_SETTLE_USEC), 0);
        assert_int_equal(ctx.calls, calls);
        assert_int_equal(watcher_verify(watcher), WATCH_VERIFY_OK);

        /* another version directory comes and goes, with a file in it */
        (void) snprintf(path, sizeof path, "%s/..2099_01_01_00_00_00.000000001", dir);
        assert_int_equal(mkdir(path, 0755), 0);
        (void) snprintf(target, sizeof target, "%s/" K_CONF, path);
        {
                _cleanup_close_ int fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                assert_true(fd >= 0);
                assert_int_equal(write(fd, "ENROOT_REMAP_ROOT=no\n", 21), 21);
        }
        (void) snprintf(target, sizeof target, "%s/..data_tmp", dir);
        assert_int_equal(symlink("..2099_01_01_00_00_00.000000001", target), 0);
        SETTLE(event);
        assert_int_equal(unlink(target), 0);
        (void) snprintf(target, sizeof target, "%s/" K_CONF, path);
        assert_int_equal(unlink(target), 0);
        assert_int_equal(rmdir(path), 0);
        SETTLE(event);
        assert_int_equal(ctx.calls, calls);
        assert_int_equal(watcher_verify(watcher), WATCH_VERIFY_OK);

        /* a key's name: a read in a directory without ..data goes through it */
        (void) snprintf(target, sizeof target, "%s/" K_EXTRA, dir);
        assert_int_equal(symlink("..data/" K_EXTRA, target), 0);
        SETTLE(event);
        assert_int_equal(ctx.calls, calls + 1);
        assert_int_equal(watcher_verify(watcher), WATCH_VERIFY_OK);

        /* the version ..data names, moved away and back */
        (void) snprintf(path, sizeof path, "%s/%s", dir, v1);
        (void) snprintf(moved, sizeof moved, "%s/..moved", dir);
        assert_int_equal(rename(path, moved), 0);
        SETTLE(event);
        assert_int_equal(ctx.calls, calls + 2);
        assert_int_not_equal(ctx.last_error, 0);
        assert_int_equal(rename(moved, path), 0);
        SETTLE(event);
        assert_int_equal(ctx.calls, calls + 3);
        assert_int_equal(ctx.last_error, 0);
        assert_string_equal(ctx.version, v1);
        assert_int_equal(watcher_verify(watcher), WATCH_VERIFY_OK);
        assert_int_equal(watcher_active_mode(watcher), WATCH_INOTIFY);
}

/* Idle means idle: in inotify mode nothing wakes the loop, even while
 * kubelet's no-op sync reads every file. Poll mode, for contrast, does. */
static void test_idle_no_wakeups(void **state) {
        enum { WINDOW_USEC = 1500 * 1000 };
        uint64_t it0, it1, t0, elapsed;
        unsigned windows = 0;
        WriterChild c;
        Running run = {.child = &c, .status = -1};
        char line[512];
        int r;

        start_watcher(WATCH_INOTIFY);
        SETTLE(event);

        /* A no-op sync runs meanwhile: windows of 1.5 s until it is over.
         * Each must end by its timeout, with nothing dispatched; its length
         * is a lower bound (the loop was not woken early), which a slow
         * machine cannot break. */
        assert_int_equal(writer_spawn(&c, dir, payload_v1), 0);
        assert_int_equal(sd_event_get_iteration(event, &it0), 0);
        t0 = now_usec(CLOCK_MONOTONIC);
        do {
                uint64_t w0 = now_usec(CLOCK_MONOTONIC);

                r = sd_event_run(event, WINDOW_USEC);
                elapsed = now_usec(CLOCK_MONOTONIC) - w0;
                windows++;
                if (r != 0 || elapsed < WINDOW_USEC)
                        fail_msg("inotify mode, idle, window %u: sd_event_run() returned %d "
                                 "after %.0f ms: woken",
                                 windows, r, (double) elapsed / 1000.0);
                if (now_usec(CLOCK_MONOTONIC) - t0 > HANG_MS * 1000ull)
                        fail_msg("waited %d s for the no-op sync to end", HANG_MS / 1000);
        } while (!child_done(&run));
        assert_int_equal(sd_event_get_iteration(event, &it1), 0);
        assert_int_equal(run.status, 0);
        assert_int_equal(writer_wait_line(&c, "unchanged ", WRITER_WAIT_MS, line, sizeof line), 1);
        (void) writer_finish(&c, 0);
        print_message("inotify mode, idle with a no-op sync: %u window(s) of 1.5 s, %" PRIu64
                      " iteration(s), %u handler call(s)\n",
                      windows, it1 - it0, ctx.calls);
        assert_int_equal(it1 - it0, windows);
        assert_int_equal(ctx.calls, 0);

        /* Contrast: polling wakes up on its own, again and again, and not
         * before its interval: the third wake-up is three intervals after
         * the watcher started at the earliest (the timer is armed again
         * from each wake-up; sd-event never fires a timer early). */
        watcher = watcher_free(watcher);
        t0 = now_usec(CLOCK_MONOTONIC);
        start_watcher(WATCH_POLL);
        for (int i = 0; i < 3; i++) {
                r = sd_event_run(event, HANG_MS * 1000ull);
                if (r != 1)
                        fail_msg("poll mode: waited %d s for wake-up %d", HANG_MS / 1000, i + 1);
        }
        elapsed = now_usec(CLOCK_MONOTONIC) - t0;
        print_message("poll mode (%u ms): 3 wake-ups after %.0f ms\n", POLL_USEC / 1000,
                      (double) elapsed / 1000.0);
        assert_true(elapsed >= 3 * POLL_USEC);
        assert_int_equal(ctx.calls, 0); /* woke up, saw nothing new */
}

static long read_sysctl(const char *path) {
        _cleanup_free_ char *data = NULL;
        size_t len;

        if (read_file_at(AT_FDCWD, path, 0, 64, &data, &len) < 0)
                return -1;
        return strtol(data, NULL, 10);
}

/* More events than the queue holds, queued while the loop is not running:
 * one call, reason overflow, and the watch keeps working. */
static void test_overflow(void **state) {
        long max = read_sysctl("/proc/sys/fs/inotify/max_queued_events");
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *v = NULL;
        long pairs;

        if (max <= 0 || max > 1000000)
                skip_test("overflow",
                          "fs.inotify.max_queued_events is %ld: too many events to "
                          "overflow it here",
                          max);

        start_watcher(WATCH_INOTIFY);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);

        /* create+close+unlink: 3 events each (IN_CREATE, IN_CLOSE_WRITE,
         * IN_DELETE), never merged since consecutive events differ */
        pairs = max / 3 + 100;
        for (long i = 0; i < pairs; i++) {
                char name[32];
                int f;

                (void) snprintf(name, sizeof name, "f%ld", i);
                f = openat(fd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                assert_true(f >= 0);
                assert_int_equal(close(f), 0);
                assert_int_equal(unlinkat(fd, name, 0), 0);
        }
        print_message("%ld events queued against a queue of %ld\n", pairs * 3, max);

        SETTLE(event);
        assert_int_equal(ctx.calls, 1);
        assert_int_equal(ctx.last_reason, WATCH_REASON_OVERFLOW);
        assert_int_equal(ctx.by_reason[WATCH_REASON_OVERFLOW], 1);
        assert_int_equal(ctx.last_error, 0);

        /* still watching */
        {
                const char *p[] = {K_CONF "=" V2_CONF, NULL};
                v = write_while_watching(event, p);
        }
        SETTLE(event);
        assert_true(ctx.calls > 1);
        assert_int_equal(ctx.last_reason, WATCH_REASON_INOTIFY);
        assert_string_equal(ctx.version, v);
}

static bool called_with(void *arg) {
        const WatchReason *r = arg;
        return ctx.calls > 0 && ctx.last_reason == *r;
}

static bool reads_version(void *arg) {
        return streq_ptr(ctx.version, arg);
}

/* The directory deleted, then made again; then moved away and back. */
static void test_recreated(void **state) {
        WatchReason recreated = WATCH_REASON_RECREATED;
        const char *p2[] = {K_CONF "=" V2_CONF, NULL};
        const char *p3[] = {K_CONF "=" V1_CONF, K_EXTRA "=" V2_EXTRA, NULL};
        char moved[sizeof dir + 16], cmd[sizeof dir + 32];
        _cleanup_free_ char *v2 = NULL, *v3 = NULL, *v4 = NULL;
        unsigned before;

        start_watcher(WATCH_INOTIFY);

        (void) snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
        await(event, called_with, &recreated, "a call with reason recreated");
        print_message("deleted: call %u, reason %s, read: %s\n", ctx.calls,
                      watch_reason_to_string(ctx.last_reason), strerror(-ctx.last_error));
        assert_int_equal(ctx.last_error, -ENOENT);

        /* nobody home: the watcher looks every poll interval */
        polls(event, 3);
        before = ctx.calls;

        assert_int_equal(mkdir(dir, 0755), 0);
        v2 = write_while_watching(event, p2);
        await(event, reads_version, v2, "a call that reads the second version");
        SETTLE(event);
        print_message("recreated: %u call(s) since, reasons recreated %u, inotify %u\n",
                      ctx.calls - before, ctx.by_reason[WATCH_REASON_RECREATED],
                      ctx.by_reason[WATCH_REASON_INOTIFY]);
        assert_true(ctx.by_reason[WATCH_REASON_RECREATED] >= 2);
        assert_int_equal(watcher_active_mode(watcher), WATCH_INOTIFY);

        /* watching the new directory */
        before = ctx.calls;
        v3 = write_while_watching(event, p3);
        SETTLE(event);
        assert_true(ctx.calls > before);
        assert_int_equal(ctx.last_reason, WATCH_REASON_INOTIFY);
        assert_string_equal(ctx.version, v3);

        /* moved away: the watch must not follow it */
        (void) snprintf(moved, sizeof moved, "%s.moved", dir);
        assert_int_equal(rename(dir, moved), 0);
        await(event, called_with, &recreated, "a call with reason recreated");
        SETTLE(event);
        before = ctx.calls;
        ctx.dir = moved;
        v4 = write_while_watching(event, payload_v1);
        ctx.dir = dir;
        SETTLE(event);
        assert_int_equal(ctx.calls, before);

        /* and back */
        assert_int_equal(rename(moved, dir), 0);
        await(event, reads_version, v4, "a call that reads the version written while moved away");
        assert_int_equal(ctx.last_reason, WATCH_REASON_RECREATED);
        assert_int_equal(watcher_active_mode(watcher), WATCH_INOTIFY);
}

static bool calls_above(void *arg) {
        return ctx.calls > *(unsigned *) arg;
}

/* Poll mode, asked for: sees an update, a key added, nothing for a no-op,
 * and the directory going and coming back. */
static void test_poll_mode(void **state) {
        const char *p2[] = {K_CONF "=" V2_CONF, K_ENV "=" V1_ENV, NULL};
        const char *p3[] = {K_CONF "=" V2_CONF, K_ENV "=" V1_ENV, K_EXTRA "=" V2_EXTRA, NULL};
        WatchReason recreated = WATCH_REASON_RECREATED;
        _cleanup_free_ char *v2 = NULL, *v3 = NULL, *v = NULL;
        char cmd[sizeof dir + 32], next[sizeof dir + 64];
        unsigned before;

        start_watcher(WATCH_POLL);
        assert_int_equal(watcher_active_mode(watcher), WATCH_POLL);
        /* asked for, not a fallback */
        assert_null(watcher_fallback_reason(watcher));
        assert_int_equal(watcher_verify(watcher), WATCH_VERIFY_OK);

        v2 = write_while_watching(event, p2);
        await(event, reads_version, v2, "a call that reads the second version");
        assert_int_equal(ctx.last_reason, WATCH_REASON_POLL);

        before = ctx.calls;
        v3 = write_while_watching(event, p3);
        await(event, reads_version, v3, "a call that reads the third version");
        assert_int_equal(ctx.extra_error, 0);

        /* a poll that began after the writer ended has seen its last change */
        polls(event, 1);
        before = ctx.calls;
        v = write_while_watching(event, p3);
        assert_string_equal(v, v3);
        polls(event, 5);
        assert_int_equal(ctx.calls, before);

        /* kubelet's next version, before its flip: no read sees it */
        (void) snprintf(next, sizeof next, "%s/..2099_01_01_00_00_00.000000001", dir);
        assert_int_equal(mkdir(next, 0755), 0);
        polls(event, 3);
        assert_int_equal(ctx.calls, before);
        assert_int_equal(rmdir(next), 0);

        (void) snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
        await(event, called_with, &recreated, "a call with reason recreated");
        assert_int_equal(ctx.last_error, -ENOENT);
        before = ctx.calls;
        assert_int_equal(mkdir(dir, 0755), 0);
        await(event, calls_above, &before, "a call for the directory made again");
        assert_int_equal(ctx.last_reason, WATCH_REASON_RECREATED);
        print_message("poll mode: %u calls in all: poll %u, recreated %u\n", ctx.calls,
                      ctx.by_reason[WATCH_REASON_POLL], ctx.by_reason[WATCH_REASON_RECREATED]);
}

/* What the writer of test_settle_cap() tells at its end. */
typedef struct Stream {
        uint64_t duration_usec; /* from its first write to its last, CLOCK_MONOTONIC */
        unsigned writes;
        unsigned gaps; /* quiet spells the watcher may rightly take for the end */
} Stream;

static bool two_calls_or_writer_done(void *arg) {
        Running *r = arg;
        return ctx.calls >= 2 || child_done(r);
}

/* A directory that never goes quiet still gets looked at: the handler runs
 * at the latest WATCHER_SETTLE_MAX_USEC after a burst began. A child rewrites
 * a file every 2 ms until told to stop, which happens once the handler has
 * run twice and at least STREAM_MS have passed; so both calls came while the
 * directory kept changing. */
static void test_settle_cap(void **state) {
        enum { STREAM_MS = 600, EVERY_US = 2000 };
        int stop[2], report[2];
        uint64_t t0;
        Stream st = {};
        WriterChild c = {.pid = -1, .out_fd = -1};
        Running run = {.child = &c, .status = -1};

        assert_int_equal(pipe2(stop, O_CLOEXEC), 0);
        assert_int_equal(pipe2(report, O_CLOEXEC), 0);
        start_watcher(WATCH_INOTIFY);
        t0 = now_usec(CLOCK_MONOTONIC);
        c.pid = fork();
        assert_true(c.pid >= 0);
        if (c.pid == 0) {
                _cleanup_close_ int at = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                uint64_t first = 0, before_prev = 0,
                         end = now_usec(CLOCK_MONOTONIC) + HANG_MS * 1000ull;
                struct pollfd pfd = {.fd = stop[0], .events = POLLIN};
                Stream out = {};

                (void) close(stop[1]);
                (void) close(report[0]);
                /* until the pipe is closed (or a hung test's bound) */
                while (at >= 0 && poll(&pfd, 1, 0) == 0 && now_usec(CLOCK_MONOTONIC) < end) {
                        uint64_t before = now_usec(CLOCK_MONOTONIC), after;
                        int fd =
                                openat(at, "noise", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

                        if (fd < 0 || write(fd, "x", 1) != 1)
                                _exit(1);
                        (void) close(fd);
                        after = now_usec(CLOCK_MONOTONIC);
                        if (!first)
                                first = before;
                        /* The quiet between this write's events and the
                         * previous write's lasted at most this long: count
                         * it when the watcher could have taken it for the
                         * end of the burst. */
                        if (before_prev && after - before_prev >= WATCHER_SETTLE_USEC)
                                out.gaps++;
                        before_prev = before;
                        out.duration_usec = after - first;
                        out.writes++;
                        /* spun, not slept: waking from a sleep can take
                         * longer than the settle time on a busy machine */
                        while (now_usec(CLOCK_MONOTONIC) < before + EVERY_US)
                                ;
                }
                _exit(write(report[1], &out, sizeof out) == sizeof out ? 0 : 1);
        }
        (void) close(stop[0]);
        (void) close(report[1]);

        await(event, two_calls_or_writer_done, &run,
              "two calls while the directory keeps changing");
        if (c.pid < 0)
                fail_msg("the writer ended (status %d) before the handler ran twice", run.status);
        while (now_usec(CLOCK_MONOTONIC) - t0 < STREAM_MS * 1000ull)
                assert_true(sd_event_run(event, 10 * 1000) >= 0);
        (void) close(stop[1]);
        await(event, child_done, &run, "the writer to exit");
        assert_int_equal(run.status, 0);
        assert_int_equal(read(report[0], &st, sizeof st), (ssize_t) sizeof st);
        (void) close(report[0]);
        SETTLE(event);
        print_message("events every %d ms for %.0f ms (%u writes): %u call(s) in all (cap %u ms); "
                      "the writer stalled for the settle time %u time(s)\n",
                      EVERY_US / 1000, (double) st.duration_usec / 1000.0, st.writes, ctx.calls,
                      WATCHER_SETTLE_MAX_USEC / 1000, st.gaps);
        /* one call per cap period at most, plus the last, plus one for each
         * quiet spell a loaded machine gave the watcher */
        assert_true(ctx.calls <= st.duration_usec / WATCHER_SETTLE_MAX_USEC + 2 + st.gaps);
}

/* Past WATCHER_MAX_POLL_ENTRIES entries, polling still sees a key added
 * (the directory's own mtime) without looking at every entry. */
static void test_poll_many_entries(void **state) {
        enum { MANY = WATCHER_MAX_POLL_ENTRIES + 200 };
        const char *p3[] = {K_CONF "=" V1_CONF, K_ENV "=" V1_ENV, K_EXTRA "=" V2_EXTRA, NULL};
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *v = NULL;

        assert_true(fd >= 0);
        for (int i = 0; i < MANY; i++) {
                char name[32];
                int f;

                (void) snprintf(name, sizeof name, "other-%d", i);
                f = openat(fd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                assert_true(f >= 0);
                assert_int_equal(close(f), 0);
        }
        start_watcher(WATCH_POLL);
        polls(event, 3);
        assert_int_equal(ctx.calls, 0);

        v = write_while_watching(event, p3);
        await(event, reads_version, v, "a call that reads the new version");
        assert_int_equal(ctx.extra_error, 0);
        assert_int_equal(ctx.last_reason, WATCH_REASON_POLL);
}

/* Writes text to path in place: the same inode when it exists. */
static void write_file(const char *path, const char *text) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
}

/* A plain directory (no ..data), polled: what a read goes through counts
 * (a key rewritten in place, a new key, the directory's permission), names
 * that start with ".." do not. */
static void test_poll_plain_directory(void **state) {
        char plain[sizeof top + 16], path[sizeof top + 64];
        Watcher *w = NULL;
        Ctx c = {};
        unsigned before;

        (void) snprintf(plain, sizeof plain, "%s/plain", top);
        assert_int_equal(mkdir(plain, 0755), 0);
        (void) snprintf(path, sizeof path, "%s/" K_CONF, plain);
        write_file(path, "ENROOT_REMAP_ROOT=yes\n");
        ctx_reset(&c, plain);
        assert_int_equal(watcher_new(event, plain, WATCH_POLL, POLL_USEC, on_change, &c, &w), 0);
        polls(event, 2);
        assert_int_equal(c.calls, 0);

        /* a key rewritten in place: no new inode, only its size and times */
        write_file(path, "ENROOT_REMAP_ROOT=no\n");
        polls(event, 2);
        assert_int_equal(c.calls, 1);
        assert_int_equal(c.last_reason, WATCH_REASON_POLL);
        assert_string_equal(c.conf, "ENROOT_REMAP_ROOT=no\n");

        /* a name no read goes through */
        before = c.calls;
        (void) snprintf(path, sizeof path, "%s/..hidden", plain);
        write_file(path, "x\n");
        polls(event, 3);
        assert_int_equal(c.calls, before);

        /* a new key, then the directory's permission */
        (void) snprintf(path, sizeof path, "%s/" K_EXTRA, plain);
        write_file(path, "X=1\n");
        polls(event, 2);
        assert_int_equal(c.calls, before + 1);
        assert_int_equal(c.extra_error, 0);
        assert_int_equal(chmod(plain, 0700), 0);
        polls(event, 2);
        assert_int_equal(c.calls, before + 2);

        watcher_free(w);
        ctx_reset(&c, NULL);
        (void) state;
}

/* ------------------------------------------------------------------------ */
/* Fallback, for real: inotify limits lowered to 0 in a child's own user
 * namespace (fs.inotify.max_user_* are per user namespace there, as
 * /proc/sys/user/max_inotify_*), so nothing outside the child is touched. */

typedef struct ChildResult {
        int skip_errno; /* the child could not set the scene: skip */
        char skip_what[64];
        int auto_r, auto_mode;
        char reason[512];
        int inotify_r;
        unsigned calls;
        int last_reason;
        bool read_update;
        int verify[8];
        int modes[4];
        bool seen[4];
} ChildResult;

static int write_proc(const char *path, const char *value) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (write(fd, value, strlen(value)) != (ssize_t) strlen(value))
                return -errno;
        return 0;
}

/* Becomes root in a new user namespace, mapped to whoever we were (root or
 * not: an unprivileged user may do this where user namespaces are allowed). */
static bool enter_user_namespace(ChildResult *res) {
        char uid_map[32], gid_map[32];
        const struct {
                const char *path, *value;
        } steps[] = {
                {"/proc/self/setgroups", "deny"},
                {"/proc/self/uid_map", uid_map},
                {"/proc/self/gid_map", gid_map},
        };
        int r;

        (void) snprintf(uid_map, sizeof uid_map, "0 %u 1", (unsigned) geteuid());
        (void) snprintf(gid_map, sizeof gid_map, "0 %u 1", (unsigned) getegid());
        if (unshare(CLONE_NEWUSER) < 0) {
                res->skip_errno = errno;
                (void) snprintf(res->skip_what, sizeof res->skip_what, "unshare(CLONE_NEWUSER)");
                return false;
        }
        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                r = write_proc(steps[i].path, steps[i].value);
                if (r < 0) {
                        res->skip_errno = -r;
                        (void) snprintf(res->skip_what, sizeof res->skip_what, "writing %s",
                                        steps[i].path);
                        return false;
                }
        }
        return true;
}

static void run_in_child(void (*fn)(ChildResult *), ChildResult *ret) {
        ChildResult res = {};
        int p[2], status;
        pid_t pid;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                fn(&res);
                _exit(write(p[1], &res, sizeof res) == sizeof res ? 0 : 1);
        }
        (void) close(p[1]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(read(p[0], &res, sizeof res), (ssize_t) sizeof res);
        (void) close(p[0]);
        *ret = res;
}

static bool child_writer_done(void *arg) {
        return child_done(arg);
}

/* In the child: an auto watcher must poll and still see an update. */
static void exercise_fallback(ChildResult *res, const char *sysctl_path) {
        const char *p2[] = {K_CONF "=" V2_CONF, NULL};
        sd_event *e = NULL;
        Watcher *w = NULL;
        WriterChild c;
        Running run = {.child = &c, .status = -1};
        int r;

        if (!enter_user_namespace(res))
                return;
        r = write_proc(sysctl_path, "0");
        if (r < 0) {
                res->skip_errno = -r;
                (void) snprintf(res->skip_what, sizeof res->skip_what, "writing %s", sysctl_path);
                return;
        }
        /* sd-event objects do not survive fork(): a new loop */
        if (sd_event_new(&e) < 0)
                _exit(2);
        ctx.loop = e;

        res->inotify_r = watcher_new(e, dir, WATCH_INOTIFY, POLL_USEC, on_change, &ctx, &w);
        w = watcher_free(w);
        res->auto_r = watcher_new(e, dir, WATCH_AUTO, POLL_USEC, on_change, &ctx, &w);
        if (res->auto_r < 0)
                return;
        res->auto_mode = watcher_active_mode(w);
        if (watcher_fallback_reason(w))
                (void) snprintf(res->reason, sizeof res->reason, "%s", watcher_fallback_reason(w));

        if (writer_spawn(&c, dir, p2) < 0)
                _exit(3);
        uint64_t end = now_usec(CLOCK_MONOTONIC) + WRITER_WAIT_MS * 1000ull;
        while (!child_writer_done(&run) && now_usec(CLOCK_MONOTONIC) < end)
                (void) sd_event_run(e, 50 * 1000);
        (void) writer_finish(&c, 0);
        /* until a poll has read the update (the parent reports a hung wait
         * as read_update false) */
        {
                _cleanup_free_ char *expected = NULL;
                char *data = NULL;
                size_t len;

                if (read_file_at(AT_FDCWD, V2_CONF, 0, MAX_BYTES, &data, &len) == 0)
                        expected = data;
                end = now_usec(CLOCK_MONOTONIC) + HANG_MS * 1000ull;
                while (expected && !streq_ptr(ctx.conf, expected) &&
                       now_usec(CLOCK_MONOTONIC) < end)
                        (void) sd_event_run(e, 50 * 1000);
                res->read_update = run.status == 0 && expected && streq_ptr(ctx.conf, expected);
        }
        res->calls = ctx.calls;
        res->last_reason = ctx.last_reason;
        watcher_free(w);
        sd_event_unref(e);
}

static void no_instances(ChildResult *res) {
        exercise_fallback(res, "/proc/sys/user/max_inotify_instances");
}

static void no_watches(ChildResult *res) {
        exercise_fallback(res, "/proc/sys/user/max_inotify_watches");
}

static void test_fallback(void **state) {
        static const struct {
                const char *what;
                void (*fn)(ChildResult *);
                int inotify_error;
                const char *reason_mentions;
        } cases[] = {
                {"no inotify instances left", no_instances, -EMFILE, "max_user_instances"},
                {"no inotify watches left", no_watches, -ENOSPC, "max_user_watches"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                ChildResult res;

                /* back to v1: the child's update must be a change */
                assert_int_equal(writer_run(dir, payload_v1, NULL, 0), 0);
                run_in_child(cases[i].fn, &res);
                if (res.skip_errno)
                        skip_test("inotify-limits",
                                  "%s failed: %s: inotify limits cannot be "
                                  "lowered for a child here",
                                  res.skip_what, strerror(res.skip_errno));
                print_message("%s: --watch inotify fails with %s; auto polls: \"%s\"; update "
                              "seen by %u call(s), last reason %s\n",
                              cases[i].what, strerror(-res.inotify_r), res.reason, res.calls,
                              watch_reason_to_string(res.last_reason));
                assert_int_equal(res.inotify_r, cases[i].inotify_error);
                assert_int_equal(res.auto_r, 0);
                assert_int_equal(res.auto_mode, WATCH_POLL);
                assert_non_null(strstr(res.reason, cases[i].reason_mentions));
                assert_true(res.calls >= 1);
                assert_int_equal(res.last_reason, WATCH_REASON_POLL);
                assert_true(res.read_update);
        }
}

/* Runs the loop until the writer (payload) is done; returns its exit code.
 * For children, where cmocka must not be used. */
static int child_write(sd_event *e, const char *const *payload) {
        WriterChild c;
        Running run = {.child = &c, .status = -1};
        uint64_t end;

        if (writer_spawn(&c, dir, payload) < 0)
                return -1;
        end = now_usec(CLOCK_MONOTONIC) + WRITER_WAIT_MS * 1000ull;
        while (!child_writer_done(&run) && now_usec(CLOCK_MONOTONIC) < end)
                (void) sd_event_run(e, 10 * 1000);
        (void) writer_finish(&c, 0);
        return run.status;
}

static bool reads_final_version(const Ctx *c) {
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *final = NULL;

        return fd >= 0 && volume_read_version(fd, &final) == 0 && final && c->last_error == 0 &&
               streq_ptr(c->version, final);
}

/* Runs the loop until c's handler has read the version ..data names (at most
 * HANG_MS: the caller's check then fails), then settles. For children. */
static void child_await_read(sd_event *e, const Ctx *c) {
        uint64_t end = now_usec(CLOCK_MONOTONIC) + HANG_MS * 1000ull;

        while (!reads_final_version(c) && now_usec(CLOCK_MONOTONIC) < end)
                (void) sd_event_run(e, 10 * 1000);
        (void) settle(e);
}

/* Changes that raise no inotify event, staged with mounts in a child's
 * private mount namespace:
 * - a tmpfs over the version directory (through ..data): the same
 *   directory's content changed unannounced, as on a virtio-fs or 9p share:
 *   auto falls back to polling, inotify mode reports it and stays;
 * - a tmpfs over the directory itself (a volume remount): another directory
 *   at the path: the watcher watches that one, in inotify mode still. */
static void verify_scene(ChildResult *res) {
        const char *p2[] = {K_CONF "=" V2_CONF, NULL};
        char version_path[sizeof dir + 16];
        sd_event *e = NULL;
        Watcher *w_auto = NULL, *w_inotify = NULL, *w_poll = NULL;
        Ctx c_auto = {.dir = dir}, c_inotify = {.dir = dir}, c_poll = {.dir = dir};
        unsigned calls;

        /* not root: a user namespace of our own makes mounting possible */
        if (geteuid() != 0 && !enter_user_namespace(res))
                return;
        if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0) {
                res->skip_errno = errno;
                (void) snprintf(res->skip_what, sizeof res->skip_what, "a private mount namespace");
                return;
        }
        if (sd_event_new(&e) < 0 ||
            watcher_new(e, dir, WATCH_AUTO, POLL_USEC, on_change, &c_auto, &w_auto) < 0 ||
            watcher_new(e, dir, WATCH_INOTIFY, POLL_USEC, on_change, &c_inotify, &w_inotify) < 0 ||
            watcher_new(e, dir, WATCH_POLL, POLL_USEC, on_change, &c_poll, &w_poll) < 0)
                _exit(2);

        /* a reported update is not a miss, during the burst or after */
        if (child_write(e, p2) != 0)
                _exit(3);
        res->verify[0] = watcher_verify(w_auto);
        if (settle(e) < 0)
                _exit(4);
        res->verify[1] = watcher_verify(w_auto);
        res->verify[2] = watcher_verify(w_inotify);

        /* the version directory's content replaced, unannounced */
        (void) snprintf(version_path, sizeof version_path, "%s/..data", dir);
        if (mount("tmpfs", version_path, "tmpfs", 0, "size=1m") < 0) {
                res->skip_errno = errno;
                (void) snprintf(res->skip_what, sizeof res->skip_what, "mounting a tmpfs");
                return;
        }
        calls = c_auto.calls + c_inotify.calls;
        res->verify[3] = watcher_verify(w_auto);
        res->modes[0] = watcher_active_mode(w_auto);
        if (watcher_fallback_reason(w_auto))
                (void) snprintf(res->reason, sizeof res->reason, "%s",
                                watcher_fallback_reason(w_auto));
        res->verify[4] = watcher_verify(w_inotify);
        res->modes[1] = watcher_active_mode(w_inotify);
        res->verify[5] = watcher_verify(w_poll);
        /* verify() never calls the handler itself */
        res->calls = c_auto.calls + c_inotify.calls - calls;
        (void) umount2(version_path, MNT_DETACH);

        /* polling now, and it sees the next update */
        calls = c_auto.calls;
        if (child_write(e, payload_v1) != 0)
                _exit(3);
        child_await_read(e, &c_auto);
        res->seen[0] = c_auto.calls > calls && c_auto.last_reason == WATCH_REASON_POLL &&
                       reads_final_version(&c_auto);

        /* a filesystem mounted over the directory itself */
        if (mount("tmpfs", dir, "tmpfs", 0, "size=1m") < 0) {
                res->skip_errno = errno;
                (void) snprintf(res->skip_what, sizeof res->skip_what, "mounting a tmpfs");
                return;
        }
        res->verify[6] = watcher_verify(w_inotify);
        res->modes[2] = watcher_active_mode(w_inotify);
        res->verify[7] = watcher_verify(w_inotify);
        /* watching the new one, with inotify */
        calls = c_inotify.calls;
        if (child_write(e, p2) != 0)
                _exit(3);
        child_await_read(e, &c_inotify);
        res->seen[1] = c_inotify.calls > calls && c_inotify.last_reason == WATCH_REASON_INOTIFY &&
                       reads_final_version(&c_inotify);

        watcher_free(w_auto);
        watcher_free(w_inotify);
        watcher_free(w_poll);
        ctx_reset(&c_auto, NULL);
        ctx_reset(&c_inotify, NULL);
        ctx_reset(&c_poll, NULL);
        (void) umount2(dir, MNT_DETACH);
        sd_event_unref(e);
}

static void test_verify_missed_change(void **state) {
        ChildResult res;

        run_in_child(verify_scene, &res);
        if (res.skip_errno)
                skip_test("verify-missed-change",
                          "%s failed: %s: cannot stage a change inotify misses", res.skip_what,
                          strerror(res.skip_errno));
        print_message("verify after a reported update: %d, %d, %d\n", res.verify[0], res.verify[1],
                      res.verify[2]);
        print_message("content changed unannounced: auto %d (now %s: \"%s\"), inotify %d (now "
                      "%s), poll %d\n",
                      res.verify[3], watch_mode_to_string(res.modes[0]), res.reason, res.verify[4],
                      watch_mode_to_string(res.modes[1]), res.verify[5]);
        print_message("directory mounted over: inotify %d then %d (now %s)\n", res.verify[6],
                      res.verify[7], watch_mode_to_string(res.modes[2]));
        assert_int_equal(res.verify[0], WATCH_VERIFY_OK);
        assert_int_equal(res.verify[1], WATCH_VERIFY_OK);
        assert_int_equal(res.verify[2], WATCH_VERIFY_OK);

        assert_int_equal(res.verify[3], WATCH_VERIFY_FELL_BACK);
        assert_int_equal(res.modes[0], WATCH_POLL);
        assert_non_null(strstr(res.reason, "without an inotify event"));
        assert_int_equal(res.verify[4], WATCH_VERIFY_MISSED);
        assert_int_equal(res.modes[1], WATCH_INOTIFY);    /* asked for inotify: stays */
        assert_int_equal(res.verify[5], WATCH_VERIFY_OK); /* polling: nothing to verify */
        assert_int_equal(res.calls, 0);
        assert_true(res.seen[0]);

        assert_int_equal(res.verify[6], WATCH_VERIFY_REWATCHED);
        assert_int_equal(res.verify[7], WATCH_VERIFY_OK); /* told once */
        assert_int_equal(res.modes[2], WATCH_INOTIFY);
        assert_true(res.seen[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_strings),
                cmocka_unit_test_setup_teardown(test_arguments, setup, teardown),
                cmocka_unit_test_setup_teardown(test_inotify_updates, setup, teardown),
                cmocka_unit_test_setup_teardown(test_noop_sync, setup, teardown),
                cmocka_unit_test_setup_teardown(test_rapid_updates, setup, teardown),
                cmocka_unit_test_setup_teardown(test_rapid_updates_kubelet_speed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_flip_after_flip, setup, teardown),
                cmocka_unit_test_setup_teardown(test_flip_call, setup, teardown),
                cmocka_unit_test_setup_teardown(test_latency, setup, teardown),
                cmocka_unit_test_setup_teardown(test_flip_not_postponed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_idle_no_wakeups, setup, teardown),
                cmocka_unit_test_setup_teardown(test_overflow, setup, teardown),
                cmocka_unit_test_setup_teardown(test_recreated, setup, teardown),
                cmocka_unit_test_setup_teardown(test_poll_mode, setup, teardown),
                cmocka_unit_test_setup_teardown(test_inert_versions, setup, teardown),
                cmocka_unit_test_setup_teardown(test_settle_cap, setup, teardown),
                cmocka_unit_test_setup_teardown(test_poll_many_entries, setup, teardown),
                cmocka_unit_test_setup_teardown(test_poll_plain_directory, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fallback, setup, teardown),
                cmocka_unit_test_setup_teardown(test_verify_missed_change, setup, teardown),
        };

        /* TEST_FILTER=test_overflow runs one test (cmocka's glob pattern) */
        if (getenv("TEST_FILTER"))
                cmocka_set_test_filter(getenv("TEST_FILTER"));
        return unit_skip_status(cmocka_run_group_tests(tests, group_setup, group_teardown));
}
