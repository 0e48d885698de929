/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The running-view reader thread on a real sd-event loop and a real running
 * root. running_read() is wrapped at link time (-Wl,--wrap=running_read):
 * the wrapper says which file it is at, as the real one does, and can hold
 * the read back until the test lets it go, which is how a hung file system
 * looks from the loop. tests/integration/test-hung-fs.sh does the same
 * through the daemon with a real FUSE mount that never answers.
 */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "log.h"
#include "macro.h"
#include "running-worker.h"
#include "timeutil.h"

/* Long enough for a read of two small files on a slow machine (valgrind,
 * qemu-user), short enough for the stall cases to end soon. */
#define DEADLINE_USEC (500u * 1000u)
/* How long a test waits for the loop to call the handler at all. */
#define WAIT_USEC     (10u * 1000u * 1000u)

int __real_running_read(const RunningConfig *cfg, pid_t last_pid, RunningView **ret);
int __wrap_running_read(const RunningConfig *cfg, pid_t last_pid, RunningView **ret);

/* What the wrapper does: shared with the reader thread. */
static struct {
        atomic_bool hold;      /* the next read waits on the gate */
        atomic_size_t hold_at; /* the file index it says it is at while it waits */
        atomic_uint calls;
        atomic_uint ended; /* reads that returned */
        int gate[2];       /* a byte written to gate[1] lets one held read go */
        /* the reading thread's signal mask, as it saw it last */
        sigset_t mask;
        atomic_bool have_mask;
} fake;

int __wrap_running_read(const RunningConfig *cfg, pid_t last_pid, RunningView **ret) {
        atomic_fetch_add(&fake.calls, 1);
        if (pthread_sigmask(SIG_SETMASK, NULL, &fake.mask) == 0)
                atomic_store(&fake.have_mask, true);
        if (atomic_load(&fake.hold)) {
                char c;

                if (cfg->on_file)
                        cfg->on_file(atomic_load(&fake.hold_at), cfg->userdata);
                while (read(fake.gate[0], &c, 1) < 0)
                        ;
        }
        {
                int r = __real_running_read(cfg, last_pid, ret);

                atomic_fetch_add(&fake.ended, 1);
                return r;
        }
}

typedef struct Ctx {
        char root[64];
        char *paths[2];
        sd_event *event;
        RunningWorker *worker;
        unsigned calls;
        RunningWorkerEvent last_event;
        RunningView *view; /* the last DONE's */
        bool early;        /* the last DONE's read was an early one */
        int error;
        size_t stalled_index;
        const char *stalled_path;
} Ctx;

static void on_result(RunningWorker *w, RunningWorkerResult *res, void *userdata) {
        Ctx *c = userdata;

        c->calls++;
        c->last_event = res->event;
        c->error = res->error;
        c->early = res->early;
        running_view_free(c->view);
        c->view = TAKE_PTR(res->view);
        if (res->event == RUNNING_WORKER_STALLED) {
                c->stalled_index = res->stalled_index;
                c->stalled_path = running_worker_path(w, res->stalled_index);
        }
}

/* Runs the loop until the handler was called `calls` times in all, or
 * usec passed. */
static void run_until(Ctx *c, unsigned calls, uint64_t usec) {
        uint64_t end = now_usec(CLOCK_MONOTONIC) + usec;

        while (c->calls < calls && now_usec(CLOCK_MONOTONIC) < end)
                assert_return_code(sd_event_run(c->event, 50 * 1000), 0);
}

static void write_conf(Ctx *c, const char *content) {
        char path[128];
        FILE *f;

        (void) snprintf(path, sizeof path, "%s/etc/enroot/enroot.conf", c->root);
        f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fputs(content, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
}

static int setup(void **state) {
        Ctx *c = calloc(1, sizeof *c);
        char path[128];

        assert_non_null(c);
        (void) snprintf(c->root, sizeof c->root, "/tmp/test-running-worker.XXXXXX");
        assert_non_null(mkdtemp(c->root));
        (void) snprintf(path, sizeof path, "%s/etc", c->root);
        assert_int_equal(mkdir(path, 0755), 0);
        (void) snprintf(path, sizeof path, "%s/etc/enroot", c->root);
        assert_int_equal(mkdir(path, 0755), 0);
        write_conf(c, "ENROOT_MOUNT_HOME=yes\n");
        c->paths[0] = strdup("/etc/enroot/enroot.conf");
        c->paths[1] = strdup("/etc/enroot/environ.d/99-aicr-defaults.env");
        assert_int_equal(pipe2(fake.gate, O_CLOEXEC), 0);
        atomic_store(&fake.hold, false);
        atomic_store(&fake.calls, 0);
        atomic_store(&fake.ended, 0);
        atomic_store(&fake.have_mask, false);

        assert_return_code(sd_event_new(&c->event), 0);
        assert_return_code(running_worker_new(c->event,
                                              &(RunningConfig){
                                                      .running_root = c->root,
                                                      .paths = (const char *const *) c->paths,
                                                      .n_paths = 2,
                                                      .max_bytes = 1024 * 1024,
                                              },
                                              DEADLINE_USEC, on_result, c, &c->worker),
                           0);
        *state = c;
        return 0;
}

static int teardown(void **state) {
        Ctx *c = *state;
        char cmd[128];

        running_worker_free(c->worker);
        running_view_free(c->view);
        sd_event_unref(c->event);
        (void) close(fake.gate[0]);
        (void) close(fake.gate[1]);
        free(c->paths[0]);
        free(c->paths[1]);
        (void) snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->root);
        assert_int_equal(system(cmd), 0);
        free(c);
        return 0;
}

/* The next reads wait on the gate, saying they are at file index `at`. */
static void hold_reads(size_t at) {
        atomic_store(&fake.hold_at, at);
        atomic_store(&fake.hold, true);
}

/* Reads no longer wait, and the one waiting goes on. */
static void let_go(void) {
        atomic_store(&fake.hold, false);
        assert_int_equal(write(fake.gate[1], "x", 1), 1);
}

/* A read that ends in time: its view reaches the handler, once. */
static void test_read_in_time(void **state) {
        Ctx *c = *state;

        assert_int_equal(running_worker_start(c->worker, 0), 0);
        assert_true(running_worker_busy(c->worker));
        run_until(c, 1, WAIT_USEC);
        assert_int_equal(c->calls, 1);
        assert_int_equal(c->last_event, RUNNING_WORKER_DONE);
        assert_int_equal(c->error, 0);
        assert_non_null(c->view);
        assert_true(c->view->observable);
        assert_int_equal(c->view->files[0].error, 0);
        assert_string_equal(c->view->files[0].content, "ENROOT_MOUNT_HOME=yes\n");
        assert_int_equal(c->view->files[1].error, -ENOENT);
        assert_false(running_worker_busy(c->worker));

        /* the deadline was disarmed: nothing more comes */
        run_until(c, 2, 3 * DEADLINE_USEC);
        assert_int_equal(c->calls, 1);
}

/* One read at a time: a second start while one is under way is refused. */
static void test_one_read_at_a_time(void **state) {
        Ctx *c = *state;

        hold_reads(SIZE_MAX);
        assert_int_equal(running_worker_start(c->worker, 0), 0);
        assert_int_equal(running_worker_start(c->worker, 0), -EBUSY);
        let_go();
        run_until(c, 1, WAIT_USEC);
        assert_int_equal(c->last_event, RUNNING_WORKER_DONE);
        assert_int_equal(atomic_load(&fake.calls), 1);
        assert_int_equal(running_worker_start(c->worker, 0), 0);
        run_until(c, 2, WAIT_USEC);
        assert_int_equal(c->last_event, RUNNING_WORKER_DONE);
        assert_int_equal(atomic_load(&fake.calls), 2);
}

/* A read that does not end: STALLED at the deadline, naming the file it
 * waits for; no second read piles up behind it; when it ends after all,
 * its stale view is dropped (RECOVERED) and the next read sees the file as
 * it is now. */
static void test_stall_and_recover(void **state) {
        Ctx *c = *state;
        uint64_t t0;

        hold_reads(0);
        t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(running_worker_start(c->worker, 0), 0);
        run_until(c, 1, WAIT_USEC);
        assert_int_equal(c->calls, 1);
        assert_int_equal(c->last_event, RUNNING_WORKER_STALLED);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 >= DEADLINE_USEC);
        assert_int_equal(c->stalled_index, 0);
        assert_string_equal(c->stalled_path, "/etc/enroot/enroot.conf");
        assert_true(running_worker_busy(c->worker));
        assert_true(running_worker_stalled(c->worker));

        /* the loop keeps turning; asking again starts nothing */
        for (int i = 0; i < 5; i++)
                assert_int_equal(running_worker_start(c->worker, 0), -EBUSY);
        run_until(c, 2, 5 * DEADLINE_USEC);
        assert_int_equal(c->calls, 1);
        assert_int_equal(atomic_load(&fake.calls), 1);

        write_conf(c, "ENROOT_MOUNT_HOME=no\n");
        let_go();
        run_until(c, 2, WAIT_USEC);
        assert_int_equal(c->calls, 2);
        assert_int_equal(c->last_event, RUNNING_WORKER_RECOVERED);
        assert_null(c->view);
        assert_false(running_worker_busy(c->worker));
        assert_false(running_worker_stalled(c->worker));

        assert_int_equal(running_worker_start(c->worker, 0), 0);
        run_until(c, 3, WAIT_USEC);
        assert_int_equal(c->last_event, RUNNING_WORKER_DONE);
        assert_non_null(c->view);
        assert_string_equal(c->view->files[0].content, "ENROOT_MOUNT_HOME=no\n");
}

/* Waiting outside the files (procfs, mountinfo): no path is named. */
static void test_stall_outside_the_files(void **state) {
        Ctx *c = *state;

        hold_reads(SIZE_MAX);
        assert_int_equal(running_worker_start(c->worker, 0), 0);
        run_until(c, 1, WAIT_USEC);
        assert_int_equal(c->last_event, RUNNING_WORKER_STALLED);
        assert_int_equal(c->stalled_index, SIZE_MAX);
        assert_null(c->stalled_path);
        let_go();
        run_until(c, 2, WAIT_USEC);
        assert_int_equal(c->last_event, RUNNING_WORKER_RECOVERED);
}

/* Freed while a read is stuck: the owner goes on at once; the thread frees
 * what it holds if the read ever ends (valgrind and LeakSanitizer see no
 * leak), and never calls the handler again. */
static void test_free_while_stuck(void **state) {
        Ctx *c = *state;
        unsigned calls;

        hold_reads(0);
        assert_int_equal(running_worker_start(c->worker, 0), 0);
        run_until(c, 1, WAIT_USEC);
        assert_int_equal(c->last_event, RUNNING_WORKER_STALLED);
        c->worker = running_worker_free(c->worker);
        calls = c->calls;
        assert_int_equal(running_worker_left_behind(), 1);

        let_go();
        /* the thread ends on its own, freeing the worker; nothing reaches
         * this loop */
        for (uint64_t end = now_usec(CLOCK_MONOTONIC) + WAIT_USEC;
             running_worker_left_behind() > 0 && now_usec(CLOCK_MONOTONIC) < end;)
                (void) usleep(10 * 1000);
        assert_int_equal(running_worker_left_behind(), 0);
        run_until(c, calls + 1, 3 * DEADLINE_USEC);
        assert_int_equal(c->calls, calls);
}

/* The reader thread blocks every signal: they are the loop's (sd-event
 * takes SIGTERM, SIGHUP and SIGCHLD through a signalfd, which a thread that
 * does not block them would steal). The mask is read by the thread itself,
 * as the wrapped running_read() runs on it: this holds under qemu-user too,
 * where /proc shows the emulator's own mask, not the program's. */
static void test_thread_blocks_signals(void **state) {
        Ctx *c = *state;

        assert_int_equal(running_worker_start(c->worker, 0), 0);
        run_until(c, 1, WAIT_USEC);
        assert_int_equal(c->last_event, RUNNING_WORKER_DONE);
        assert_true(atomic_load(&fake.have_mask));
        for (int sig = 1; sig < 32; sig++)
                if (sig != SIGKILL && sig != SIGSTOP && !sigismember(&fake.mask, sig))
                        fail_msg("the reader thread does not block signal %d (%s)", sig,
                                 strsignal(sig));
}

/* ---------------------------------------------------------------------------
 * Early reads: the thread reads on kubelet's flip, before the loop asks */

/* A ConfigMap directory in the root (not read by anyone: the flips are
 * what counts), and an inotify instance of the test's own that learns each
 * flip's cookie as the loop's watcher does. */
typedef struct Flips {
        char dir[128];
        int fd;
        unsigned n;
} Flips;

/* Sets them up; the worker follows the directory
 * (running_worker_follow_flips()). */
static void follow(Ctx *c, Flips *f) {
        (void) snprintf(f->dir, sizeof f->dir, "%s/cm", c->root);
        assert_int_equal(mkdir(f->dir, 0755), 0);
        f->fd = inotify_init1(IN_CLOEXEC);
        assert_true(f->fd >= 0);
        assert_true(inotify_add_watch(f->fd, f->dir, IN_MOVED_TO) >= 0);
        f->n = 0;
        assert_int_equal(running_worker_follow_flips(c->worker, f->dir), 0);
}

/* kubelet's flip: ..data_tmp renamed over ..data. Returns its cookie. */
static uint32_t flip(Flips *f) {
        char tmp[192], data[192], target[32];
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        const struct inotify_event *ev;
        ssize_t n;

        (void) snprintf(tmp, sizeof tmp, "%s/..data_tmp", f->dir);
        (void) snprintf(data, sizeof data, "%s/..data", f->dir);
        (void) snprintf(target, sizeof target, "..v%u", ++f->n);
        assert_int_equal(symlink(target, tmp), 0);
        assert_int_equal(rename(tmp, data), 0);
        n = read(f->fd, buf, sizeof buf);
        assert_true(n >= (ssize_t) sizeof *ev);
        ev = (const struct inotify_event *) buf;
        assert_true(ev->mask & IN_MOVED_TO);
        return ev->cookie;
}

/* Waits (without turning the loop) until the wrapped running_read()
 * returned `ended` times in all (begun: `began` times). */
static void await_reads(atomic_uint *counter, unsigned want, const char *what) {
        uint64_t end = now_usec(CLOCK_MONOTONIC) + WAIT_USEC;

        while (atomic_load(counter) < want && now_usec(CLOCK_MONOTONIC) < end)
                (void) usleep(1000);
        if (atomic_load(counter) < want)
                fail_msg("%u read(s) %s, not %u, after %u s", atomic_load(counter), what, want,
                         WAIT_USEC / 1000000u);
}
#define await_ended(n) await_reads(&fake.ended, (n), "ended")
#define await_began(n) await_reads(&fake.calls, (n), "began")

/* A flip: the thread reads at once, unasked; the look the flip brings takes
 * that read, and no other; a look something else asked for reads afresh. */
static void test_early_read(void **state) {
        Ctx *c = *state;
        uint32_t cookie;
        Flips f;

        follow(c, &f);
        running_worker_allow(c->worker, 0, 0);
        cookie = flip(&f);
        await_ended(1);
        assert_int_equal(c->calls, 0);           /* nobody asked: nothing reaches the handler */
        write_conf(c, "ENROOT_MOUNT_HOME=no\n"); /* after the early read: not in it */
        assert_int_equal(running_worker_start_after_flip(c->worker, 0, cookie), 0);
        assert_true(running_worker_busy(c->worker));
        run_until(c, 1, WAIT_USEC);
        assert_int_equal(c->last_event, RUNNING_WORKER_DONE);
        assert_true(c->early);
        assert_string_equal(c->view->files[0].content, "ENROOT_MOUNT_HOME=yes\n");
        assert_int_equal(atomic_load(&fake.calls), 1);
        assert_false(running_worker_busy(c->worker));

        assert_int_equal(running_worker_start(c->worker, 0), 0);
        run_until(c, 2, WAIT_USEC);
        assert_false(c->early);
        assert_string_equal(c->view->files[0].content, "ENROOT_MOUNT_HOME=no\n");
        assert_int_equal(atomic_load(&fake.calls), 2);
        (void) close(f.fd);
}

/* Until the owner allows it, a flip begins no read. (This can only pass
 * falsely, on a machine too slow to read in 200 ms.) */
static void test_no_early_read_unallowed(void **state) {
        Ctx *c = *state;
        Flips f;

        follow(c, &f);
        (void) flip(&f);
        (void) usleep(200 * 1000);
        assert_int_equal(atomic_load(&fake.calls), 0);
        /* nor after it stopped following */
        running_worker_allow(c->worker, 0, 0);
        assert_int_equal(running_worker_follow_flips(c->worker, NULL), 0);
        (void) flip(&f);
        (void) usleep(200 * 1000);
        assert_int_equal(atomic_load(&fake.calls), 0);
        (void) close(f.fd);
}

/* An early read serves only a look for its own flip, for the
 * same process, and never a look that something else asked for. */
static void test_early_read_not_for_others(void **state) {
        Ctx *c = *state;
        uint32_t cookie;
        Flips f;

        follow(c, &f);
        running_worker_allow(c->worker, 0, 0);
        (void) flip(&f);
        await_ended(1);

        /* a later flip the thread may not read on (the owner's pace) */
        running_worker_allow(c->worker, now_usec(CLOCK_MONOTONIC) + 3600u * 1000000u, 0);
        cookie = flip(&f);
        assert_int_equal(running_worker_start_after_flip(c->worker, 0, cookie), 0);
        run_until(c, 1, WAIT_USEC);
        assert_int_equal(c->last_event, RUNNING_WORKER_DONE);
        assert_false(c->early);
        assert_int_equal(atomic_load(&fake.calls), 2);

        /* another process than the early read's */
        running_worker_allow(c->worker, 0, 0);
        cookie = flip(&f);
        await_ended(3);
        assert_int_equal(running_worker_start_after_flip(c->worker, 1, cookie), 0);
        run_until(c, 2, WAIT_USEC);
        assert_false(c->early);
        assert_int_equal(atomic_load(&fake.calls), 4);

        /* a plain look, with an early read for the last flip waiting */
        running_worker_allow(c->worker, 0, 0);
        (void) flip(&f);
        await_ended(5);
        assert_int_equal(running_worker_start(c->worker, 0), 0);
        run_until(c, 3, WAIT_USEC);
        assert_false(c->early);
        assert_int_equal(atomic_load(&fake.calls), 6);
        (void) close(f.fd);
}

/* An early read still under way serves the look that comes; one that does
 * not end is reported STALLED to that look, and RECOVERED when it ends. */
static void test_early_read_under_way(void **state) {
        Ctx *c = *state;
        uint32_t cookie;
        Flips f;

        follow(c, &f);
        running_worker_allow(c->worker, 0, 0);
        hold_reads(SIZE_MAX);
        cookie = flip(&f);
        await_began(1);
        assert_int_equal(running_worker_start_after_flip(c->worker, 0, cookie), 0);
        let_go();
        run_until(c, 1, WAIT_USEC);
        assert_int_equal(c->last_event, RUNNING_WORKER_DONE);
        assert_true(c->early);
        assert_int_equal(atomic_load(&fake.calls), 1);

        running_worker_allow(c->worker, 0, 0);
        hold_reads(0);
        cookie = flip(&f);
        await_began(2);
        assert_int_equal(running_worker_start_after_flip(c->worker, 0, cookie), 0);
        run_until(c, 2, WAIT_USEC);
        assert_int_equal(c->last_event, RUNNING_WORKER_STALLED);
        assert_string_equal(c->stalled_path, "/etc/enroot/enroot.conf");
        /* no second read piles up behind it */
        assert_int_equal(atomic_load(&fake.calls), 2);
        let_go();
        run_until(c, 3, WAIT_USEC);
        assert_int_equal(c->last_event, RUNNING_WORKER_RECOVERED);
        assert_int_equal(atomic_load(&fake.calls), 2);
        (void) close(f.fd);
}

/* An ended early read taken for a look is the one delivered, even when a
 * later early read (for another process, so serving nobody) ends before the
 * loop turns. */
static void test_early_read_taken_stays(void **state) {
        Ctx *c = *state;
        uint32_t first;
        Flips f;

        follow(c, &f);
        running_worker_allow(c->worker, 0, 1);
        first = flip(&f);
        await_ended(1);
        write_conf(c, "ENROOT_MOUNT_HOME=no\n");
        running_worker_allow(c->worker, 0, 2);
        hold_reads(SIZE_MAX);
        (void) flip(&f);
        await_began(2);
        assert_int_equal(running_worker_start_after_flip(c->worker, 1, first), 0);
        let_go();
        await_ended(2);
        run_until(c, 1, WAIT_USEC);
        assert_int_equal(c->last_event, RUNNING_WORKER_DONE);
        assert_true(c->early);
        assert_string_equal(c->view->files[0].content, "ENROOT_MOUNT_HOME=yes\n");
        /* and nothing else comes */
        run_until(c, 2, 3 * DEADLINE_USEC);
        assert_int_equal(c->calls, 1);
        (void) close(f.fd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_read_in_time, setup, teardown),
                cmocka_unit_test_setup_teardown(test_one_read_at_a_time, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stall_and_recover, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stall_outside_the_files, setup, teardown),
                cmocka_unit_test_setup_teardown(test_free_while_stuck, setup, teardown),
                cmocka_unit_test_setup_teardown(test_thread_blocks_signals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_early_read, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_early_read_unallowed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_early_read_not_for_others, setup, teardown),
                cmocka_unit_test_setup_teardown(test_early_read_under_way, setup, teardown),
                cmocka_unit_test_setup_teardown(test_early_read_taken_stays, setup, teardown),
        };

        log_set_max_level(LOG_WARNING);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
