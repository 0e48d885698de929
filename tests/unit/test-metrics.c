/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Metrics and /status rendering. Each sample Report renders to a golden file
 * in tests/data/metrics/ (NAME.prom, and NAME.json for the status document);
 * UPDATE_EXPECTED=1 rewrites them (review the diff; refused under CI, see
 * golden.h). Every rendering is also checked by the real `promtool check
 * metrics` (PROMTOOL, else the PATH), which must accept it with no lint
 * finding at all.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <cmocka.h>
#include "unit-skip.h"

#include "fileio.h"
#include "golden.h"
#include "metrics.h"
#include "process-stats.h"
#include "status-json.h"

extern char **environ;

/* ---------------------------------------------------------------------------
 * Building sample Reports */

static Report *report_new(size_t n_files) {
        Report *r = calloc(1, sizeof *r);

        assert_non_null(r);
        if (n_files > 0) {
                r->files = calloc(n_files, sizeof *r->files);
                assert_non_null(r->files);
        }
        r->n_files = n_files;
        return r;
}

/* The side was read: its content id is fill repeated, its version (NULL:
 * unknown) the ConfigMap version directory its bytes came from. */
static void side_read(FileReport *f, Side s, char fill, const char *version) {
        memset(f->content_id[s], fill, CONTENT_ID_HEX);
        f->content_id[s][CONTENT_ID_HEX] = '\0';
        f->read[s] = true;
        if (version) {
                f->version[s] = strdup(version);
                assert_non_null(f->version[s]);
        }
}

static FileReport *file_init(Report *r, size_t i, const char *key, const char *path,
                             FileState state) {
        FileReport *f = &r->files[i];

        f->key = strdup(key);
        f->running_path = path ? strdup(path) : NULL;
        f->format = file_format_for_key(key);
        f->state = state;
        f->state_since_usec = UINT64_C(1714564800000000); /* 2024-05-01T12:00:00Z */
        return f;
}

static void change_add(FileReport *f, const char *key, DiffChange change, bool effective) {
        KeyChange *c = realloc(f->changes, (f->n_changes + 1) * sizeof *c);

        assert_non_null(c);
        f->changes = c;
        c[f->n_changes++] =
                (KeyChange){.key = strdup(key), .change = change, .effective = effective};
        if (effective)
                f->n_drifted_keys++;
}

static const MetricsCounters sample_counters = {
        .evaluations = {[TRIGGER_STARTUP] = 1,
                        [TRIGGER_INOTIFY] = 4,
                        [TRIGGER_RESYNC] = 12,
                        [TRIGGER_SIGNAL] = 1},
        .watch_mode = "inotify",
        .version = "0.1.0",
        .has_process = true,
        .process = {.cpu_usec = 1250000,
                    .resident_bytes = 4194304,
                    .virtual_bytes = 12582912,
                    .virtual_max_bytes = UINT64_MAX,
                    .open_fds = 9,
                    .max_fds = 1048576,
                    .start_time_usec = UINT64_C(1714564790500000)},
};

/* enroot.conf drifted on a superseded mount, the env file current. */
static Report *sample_drifted(void) {
        Report *r = report_new(2);
        FileReport *f;

        r->desired_version = strdup("..2024_05_01_12_00_00.123456789");
        r->evaluated = true;
        r->observable[SIDE_DESIRED] = r->observable[SIDE_RUNNING] = true;
        r->evaluated_usec = UINT64_C(1714564801250000);

        f = file_init(r, 0, "enroot.conf", "/etc/enroot/enroot.conf", FILE_DRIFTED);
        f->superseded = true;
        f->mount_version = strdup("..2024_04_01_08_00_00.987654321");
        side_read(f, SIDE_DESIRED, 'a', r->desired_version);
        side_read(f, SIDE_RUNNING, 'b', f->mount_version);
        f->lint[SIDE_DESIRED][SEVERITY_WARNING] = 1;
        change_add(f, "ENROOT_MOUNT_HOME", CHANGE_CHANGED, true);
        change_add(f, "ENROOT_REMAP_ROOT", CHANGE_CHANGED, false);
        change_add(f, "ENROOT_ROOTFS_WRITABLE", CHANGE_ADDED, true);
        f->drift_since_usec = UINT64_C(1714564800500000);

        f = file_init(r, 1, "99-aicr-defaults.env", "/etc/enroot/environ.d/99-aicr-defaults.env",
                      FILE_CURRENT);
        side_read(f, SIDE_DESIRED, 'c', r->desired_version);
        side_read(f, SIDE_RUNNING, 'c', NULL);
        r->pod = report_pod_state(r);
        return r;
}

/* Everything current, one file only cosmetically different. */
static Report *sample_current(void) {
        Report *r = report_new(2);
        FileReport *f;

        r->desired_version = strdup("..2024_05_01_12_00_00.123456789");
        r->evaluated = true;
        r->observable[SIDE_DESIRED] = r->observable[SIDE_RUNNING] = true;
        r->evaluated_usec = UINT64_C(1714564801000000);

        f = file_init(r, 0, "enroot.conf", "/etc/enroot/enroot.conf", FILE_COSMETIC);
        side_read(f, SIDE_DESIRED, 'a', r->desired_version);
        side_read(f, SIDE_RUNNING, 'd', NULL);
        change_add(f, "ENROOT_MOUNT_HOME", CHANGE_CHANGED, false);
        f = file_init(r, 1, "99-aicr-defaults.env", "/etc/enroot/environ.d/99-aicr-defaults.env",
                      FILE_CURRENT);
        side_read(f, SIDE_DESIRED, 'c', r->desired_version);
        side_read(f, SIDE_RUNNING, 'c', r->desired_version);
        r->pod = report_pod_state(r);
        return r;
}

/* Nothing drifted, but nothing known to be current either. */
static Report *sample_unknown(void) {
        Report *r = report_new(3);
        FileReport *f;

        r->evaluated = true;
        r->observable[SIDE_DESIRED] = true;
        r->evaluated_usec = UINT64_C(1714564801000000);

        f = file_init(r, 0, "enroot.conf", "/etc/enroot/enroot.conf", FILE_MISSING);
        f->detail = strdup("the running file /etc/enroot/enroot.conf does not exist");
        side_read(f, SIDE_DESIRED, 'a', NULL);
        f = file_init(r, 1, "99-aicr-defaults.env", "/etc/enroot/environ.d/99-aicr-defaults.env",
                      FILE_UNREADABLE);
        f->detail = strdup("the running file is not readable (permission denied)");
        side_read(f, SIDE_DESIRED, 'c', NULL);
        f = file_init(r, 2, "extra.conf", "/etc/enroot/extra.conf", FILE_INVALID);
        f->format = FILE_FORMAT_ENROOT_CONF; /* --file extra.conf=...:enroot-conf */
        f->detail = strdup("the ConfigMap's version has 2 lint errors");
        side_read(f, SIDE_DESIRED, 'e', NULL);
        side_read(f, SIDE_RUNNING, 'e', NULL);
        f->lint[SIDE_DESIRED][SEVERITY_ERROR] = 2;
        f->lint[SIDE_RUNNING][SEVERITY_ERROR] = 2;
        f->lint[SIDE_RUNNING][SEVERITY_WARNING] = 3;
        r->pod = report_pod_state(r);
        return r;
}

/* Raw files beside an enroot one: a raw file current on a superseded mount
 * (equal bytes, old version), a raw file drifted, enroot.conf current. Raw
 * files have no lint series and no key series. */
static Report *sample_raw(void) {
        Report *r = report_new(3);
        FileReport *f;

        r->evaluated = true;
        r->observable[SIDE_DESIRED] = r->observable[SIDE_RUNNING] = true;
        r->evaluated_usec = UINT64_C(1714564801000000);
        r->desired_version = strdup("..2024_05_01_12_00_00.2");

        f = file_init(r, 0, "nginx.conf", "/etc/nginx/nginx.conf", FILE_CURRENT);
        f->superseded = true;
        f->mount_version = strdup("..2024_05_01_11_00_00.1");
        side_read(f, SIDE_DESIRED, 'a', r->desired_version);
        side_read(f, SIDE_RUNNING, 'a', f->mount_version);
        f = file_init(r, 1, "app.properties", "/etc/app/app.properties", FILE_DRIFTED);
        f->drift_since_usec = UINT64_C(1714564800000000);
        side_read(f, SIDE_DESIRED, 'b', r->desired_version);
        side_read(f, SIDE_RUNNING, 'c', r->desired_version);
        f = file_init(r, 2, "enroot.conf", "/etc/enroot/enroot.conf", FILE_CURRENT);
        side_read(f, SIDE_DESIRED, 'd', r->desired_version);
        side_read(f, SIDE_RUNNING, 'd', r->desired_version);
        r->pod = report_pod_state(r);
        return r;
}

/* Names built to break a careless renderer. */
static Report *sample_hostile(void) {
        Report *r = report_new(2);
        char long_a[301], long_b[301];
        FileReport *f;

        memset(long_a, 'K', 300);
        long_a[300] = '\0';
        memcpy(long_b, long_a, sizeof long_b);
        long_b[299] = 'L'; /* same first 256 bytes as long_a */

        r->evaluated = true;
        r->observable[SIDE_DESIRED] = r->observable[SIDE_RUNNING] = true;
        r->desired_version = strdup("..v\"1\\\n");

        f = file_init(r, 0, "quote\"back\\slash\nnewline.conf", "/etc/\xff.conf", FILE_DRIFTED);
        f->format = FILE_FORMAT_ENROOT_CONF;
        side_read(f, SIDE_DESIRED, '0', r->desired_version);
        side_read(f, SIDE_RUNNING, '1', long_a);
        change_add(f, "A\"B", CHANGE_CHANGED, true);
        change_add(f, "C\\D", CHANGE_ADDED, true);
        change_add(f, "E\nF", CHANGE_REMOVED, true);
        change_add(f, "G} 1\n# TYPE evil counter\nevil_total 1", CHANGE_CHANGED, true);
        change_add(f, "BAD_\xff\xfe_UTF8", CHANGE_CHANGED, true);
        change_add(f, "OVERLONG_\xc0\xaf", CHANGE_CHANGED, true);
        change_add(f, "SURROGATE_\xed\xa0\x80", CHANGE_CHANGED, true);
        change_add(f, "CUT_\xe2\x82", CHANGE_CHANGED, true);
        change_add(f, "\xff", CHANGE_ADDED, true);
        change_add(f, "\xfe", CHANGE_ADDED, true);
        change_add(f, "GOOD_\xc3\x84\xc3\x96_\xf0\x9f\x90\xa7", CHANGE_CHANGED, true);
        change_add(f, long_a, CHANGE_CHANGED, true);
        change_add(f, long_b, CHANGE_CHANGED, true);
        /* more drifted keys than the Report kept */
        f->n_drifted_keys += 70;
        f->n_changes_dropped = 70;
        f->drift_since_usec = 1;

        f = file_init(r, 1, "", "", FILE_UNKNOWN);
        r->pod = report_pod_state(r);
        return r;
}

/* ---------------------------------------------------------------------------
 * Helpers */

static char *render(const Report *r, const MetricsCounters *c) {
        StrBuf b = STRBUF_INIT(METRICS_MAX_BYTES);

        assert_int_equal(metrics_render(&b, r, c), 0);
        return strbuf_steal(&b);
}

static char *render_status(const Report *r, const MetricsCounters *c) {
        StrBuf b = STRBUF_INIT(METRICS_MAX_BYTES);

        assert_int_equal(status_json_render(&b, r, c), 0);
        return strbuf_steal(&b);
}

static void expect_golden(const char *name, const char *got) {
        char path[4096];
        _cleanup_free_ char *want = NULL;
        size_t len;
        int r;

        (void) snprintf(path, sizeof path, "%s/metrics/%s", TEST_DATA_DIR, name);
        if (golden_update_requested()) {
                _cleanup_fclose_ FILE *f = fopen(path, "we");

                assert_non_null(f);
                assert_int_equal(fputs(got, f) >= 0, 1);
                return;
        }
        r = read_file_at(AT_FDCWD, path, 0, 1u << 20, &want, &len);
        if (r < 0)
                fail_msg("cannot read %s: %s (UPDATE_EXPECTED=1 writes it)", path, strerror(-r));
        if (!streq(want, got)) {
                fprintf(stderr, "--- %s (expected)\n%s--- rendered\n%s", path, want, got);
                fail_msg("%s differs from the rendering (UPDATE_EXPECTED=1 rewrites it)", name);
        }
}

static const char *promtool_path(void) {
        static char found[4096];
        const char *env = getenv("PROMTOOL");
        const char *path = getenv("PATH");

        if (env && *env)
                return env;
        for (const char *p = path; p && *p;) {
                size_t n = strcspn(p, ":");

                if (n > 0 && n + sizeof "/promtool" < sizeof found) {
                        memcpy(found, p, n);
                        strcpy(found + n, "/promtool");
                        if (access(found, X_OK) == 0)
                                return found;
                }
                p += n;
                if (*p == ':')
                        p++;
        }
        return NULL;
}

/* Runs `promtool check metrics` on text. Returns its exit status; *ret_output
 * is what it printed (both streams). */
static int promtool_check(const char *text, char **ret_output) {
        const char *tool = promtool_path();
        char in_path[] = "/tmp/test-metrics-in.XXXXXX", out_path[] = "/tmp/test-metrics-out.XXXXXX";
        posix_spawn_file_actions_t fa;
        int in_fd, out_fd, status;
        size_t len;
        pid_t pid;
        char *argv[] = {(char *) (uintptr_t) tool, (char *) (uintptr_t) "check",
                        (char *) (uintptr_t) "metrics", NULL};

        assert_non_null(tool);
        in_fd = mkostemp(in_path, O_CLOEXEC);
        out_fd = mkostemp(out_path, O_CLOEXEC);
        assert_true(in_fd >= 0 && out_fd >= 0);
        assert_int_equal(write(in_fd, text, strlen(text)), (ssize_t) strlen(text));
        assert_int_equal(lseek(in_fd, 0, SEEK_SET), 0);

        assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
        assert_int_equal(posix_spawn_file_actions_adddup2(&fa, in_fd, 0), 0);
        assert_int_equal(posix_spawn_file_actions_adddup2(&fa, out_fd, 1), 0);
        assert_int_equal(posix_spawn_file_actions_adddup2(&fa, out_fd, 2), 0);
        assert_int_equal(posix_spawn(&pid, tool, &fa, NULL, argv, environ), 0);
        posix_spawn_file_actions_destroy(&fa);
        assert_int_equal(waitpid(pid, &status, 0), pid);

        assert_int_equal(read_file_at(AT_FDCWD, out_path, 0, 1u << 20, ret_output, &len), 0);
        (void) unlink(in_path);
        (void) unlink(out_path);
        (void) close(in_fd);
        (void) close(out_fd);
        assert_true(WIFEXITED(status));
        return WEXITSTATUS(status);
}

static void expect_promtool_clean(const char *name, const char *text) {
        _cleanup_free_ char *output = NULL;
        int status;

        status = promtool_check(text, &output);
        if (status != 0 || output[0] != '\0')
                fail_msg("promtool check metrics on %s: exit %d:\n%s", name, status, output);
}

static size_t count_lines_starting(const char *text, const char *prefix) {
        size_t n = 0;

        for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (startswith(p, prefix))
                        n++;
        return n;
}

/* ---------------------------------------------------------------------------
 * Tests */

typedef struct Sample {
        const char *name;
        Report *(*build)(void);
        const MetricsCounters *counters;
} Sample;

static const MetricsCounters counters_poll_no_process = {
        .evaluations = {[TRIGGER_STARTUP] = 1, [TRIGGER_POLL] = 3, [TRIGGER_OVERFLOW] = 2},
        .watch_mode = "poll",
        .version = "0.1.0",
};

static const MetricsCounters counters_unstarted = {.version = "0.1.0"};

static const MetricsCounters counters_hostile = {
        .watch_mode = "fan\"otify\n",
        .version = "1.0\\\"\n\xff",
};

static Report *sample_none(void) {
        return NULL;
}

static const Sample samples[] = {
        {"drifted", sample_drifted, &sample_counters},
        {"current", sample_current, &counters_poll_no_process},
        {"unknown", sample_unknown, &counters_unstarted},
        {"empty", sample_none, &counters_unstarted},
        {"empty-no-counters", sample_none, NULL},
        {"hostile", sample_hostile, &counters_hostile},
        {"raw", sample_raw, &counters_poll_no_process},
};

static void test_golden(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(samples); i++) {
                _cleanup_(report_freep) Report *r = samples[i].build();
                _cleanup_free_ char *text = render(r, samples[i].counters);
                _cleanup_free_ char *status = render_status(r, samples[i].counters);
                char name[128];

                (void) snprintf(name, sizeof name, "%s.prom", samples[i].name);
                expect_golden(name, text);
                (void) snprintf(name, sizeof name, "%s.json", samples[i].name);
                expect_golden(name, status);
        }
}

static char *render_cached(MetricsCache *cache, const Report *r, uint64_t generation,
                           const MetricsCounters *c) {
        StrBuf b = STRBUF_INIT(METRICS_MAX_BYTES);

        assert_int_equal(metrics_render_cached(&b, cache, r, generation, c), 0);
        return strbuf_steal(&b);
}

/* The cached rendering is byte for byte metrics_render()'s, for every sample
 * and after every change of Report; the Report's part is rendered again only
 * when the Report changed (address, evaluated_usec or generation). */
static void test_cache(void **state) {
        MetricsCache cache = METRICS_CACHE_INIT;
        _cleanup_(report_freep) Report *drifted = sample_drifted(), *current = sample_current();
        _cleanup_free_ char *stale = NULL, *fresh = NULL;
        MetricsCounters later = sample_counters;
        uint64_t generation = 0;

        /* every sample, each one a new Report, twice (the second from the cache) */
        for (unsigned round = 0; round < 2; round++)
                for (size_t i = 0; i < ELEMENTSOF(samples); i++) {
                        _cleanup_(report_freep) Report *r = samples[i].build();
                        _cleanup_free_ char *want = render(r, samples[i].counters);
                        _cleanup_free_ char *got =
                                render_cached(&cache, r, ++generation, samples[i].counters);
                        _cleanup_free_ char *again =
                                render_cached(&cache, r, generation, samples[i].counters);

                        assert_string_equal(got, want);
                        assert_string_equal(again, want);
                }

        /* one Report, then another: the cached part follows */
        for (unsigned round = 0; round < 3; round++) {
                const Report *r = round % 2 == 0 ? drifted : current;
                _cleanup_free_ char *want = render(r, &sample_counters);
                _cleanup_free_ char *got = render_cached(&cache, r, generation, &sample_counters);

                assert_string_equal(got, want);
        }

        /* the counters are rendered per call, never cached */
        later.evaluations[TRIGGER_INOTIFY]++;
        later.process.open_fds = 12;
        {
                _cleanup_free_ char *want = render(drifted, &later);
                _cleanup_free_ char *got = render_cached(&cache, drifted, generation, &later);

                assert_string_equal(got, want);
                assert_non_null(strstr(got, "\nprocess_open_fds 12\n"));
        }

        /* a new Report at the same address (a freed one's memory reused):
         * told apart by its evaluation time, or by the caller's generation */
        stale = render(drifted, &sample_counters);
        drifted->files[0].state = FILE_CURRENT;
        drifted->pod = report_pod_state(drifted);
        {
                /* same address, time and generation: the cache is used (proof that it is) */
                _cleanup_free_ char *got =
                        render_cached(&cache, drifted, generation, &sample_counters);

                assert_string_equal(got, stale);
        }
        fresh = render(drifted, &sample_counters);
        assert_string_not_equal(fresh, stale);
        {
                _cleanup_free_ char *got =
                        render_cached(&cache, drifted, generation + 1, &sample_counters);

                assert_string_equal(got, fresh);
                assert_non_null(strstr(got, "\naicr_enroot_config_current 1\n"));
        }
        drifted->files[1].state = FILE_MISSING;
        drifted->pod = report_pod_state(drifted);
        drifted->evaluated_usec += 1000000u;
        {
                _cleanup_free_ char *want = render(drifted, &sample_counters);
                _cleanup_free_ char *got =
                        render_cached(&cache, drifted, generation + 1, &sample_counters);

                assert_string_equal(got, want);
                assert_non_null(strstr(got, "\naicr_enroot_config_current 0\n"));
        }

        /* out's cap crossed: an error, and the next call is whole again */
        {
                StrBuf small = STRBUF_INIT(100);
                _cleanup_free_ char *want = render(current, &sample_counters);
                _cleanup_free_ char *got = NULL;

                assert_int_equal(metrics_render_cached(&small, &cache, current, generation + 2,
                                                       &sample_counters),
                                 -ENOBUFS);
                strbuf_done(&small);
                got = render_cached(&cache, current, generation + 2, &sample_counters);
                assert_string_equal(got, want);
        }

        /* no Report yet, no counters */
        {
                _cleanup_free_ char *want = render(NULL, NULL);
                _cleanup_free_ char *got = render_cached(&cache, NULL, generation + 3, NULL);

                assert_string_equal(got, want);
        }
        metrics_cache_done(&cache);
        metrics_cache_done(&cache); /* twice is fine */
}

/* Skips before anything is allocated: skip() leaves the test by longjmp,
 * past every cleanup (a sanitizer build reports the leak). */
static void require_promtool(const char *what) {
        if (!promtool_path())
                skip_test("promtool",
                          "promtool not found (set PROMTOOL or install prometheus): %s was "
                          "not validated",
                          what);
}

static void test_promtool(void **state) {
        require_promtool("the sample renderings");
        for (size_t i = 0; i < ELEMENTSOF(samples); i++) {
                _cleanup_(report_freep) Report *r = samples[i].build();
                _cleanup_free_ char *text = render(r, samples[i].counters);

                expect_promtool_clean(samples[i].name, text);
        }
}

/* The check above proves nothing if promtool accepted anything. */
static void test_promtool_rejects(void **state) {
        _cleanup_free_ char *output = NULL;

        if (!promtool_path())
                skip_test("promtool-rejects", "promtool not found (set PROMTOOL or install "
                                              "prometheus): its rejections were not checked");
        assert_int_not_equal(promtool_check("# HELP x_count A counter.\n# TYPE x_count counter\n"
                                            "x_count 1\n",
                                            &output),
                             0);
        assert_non_null(strstr(output, "_total"));
        free(output);
        output = NULL;
        assert_int_not_equal(promtool_check("a{k=\"\xff\"} 1\n", &output), 0);
}

static void test_promtool_live_process(void **state) {
        MetricsCounters c = sample_counters;
        _cleanup_(report_freep) Report *r = NULL;
        _cleanup_free_ char *text = NULL;

        require_promtool("the rendering with live process stats");
        r = sample_drifted();
        assert_int_equal(process_stats_read(&c.process), 0);
        text = render(r, &c);
        expect_promtool_clean("drifted with live process stats", text);
}

/* Every listed name, label set and kind, as the issue fixes them. */
static void test_names(void **state) {
        _cleanup_(report_freep) Report *r = sample_drifted();
        _cleanup_free_ char *text = render(r, &sample_counters);
        static const char *const want[] = {
                "# TYPE aicr_enroot_config_current gauge\naicr_enroot_config_current 0\n",
                "aicr_enroot_config_drift{file=\"enroot.conf\"} 1\n",
                "aicr_enroot_config_drift{file=\"99-aicr-defaults.env\"} 0\n",
                "aicr_enroot_config_superseded_mount{file=\"enroot.conf\"} 1\n",
                "aicr_enroot_config_drifted_keys{file=\"enroot.conf\"} 2\n",
                "aicr_enroot_config_key_drift{file=\"enroot.conf\",key=\"ENROOT_MOUNT_HOME\","
                "change=\"changed\"} 1\n",
                "aicr_enroot_config_key_drift{file=\"enroot.conf\",key=\"ENROOT_ROOTFS_WRITABLE\","
                "change=\"added\"} 1\n",
                "aicr_enroot_config_key_drift_omitted{file=\"enroot.conf\"} 0\n",
                "aicr_enroot_config_info{file=\"enroot.conf\",side=\"desired\","
                "version=\"..2024_05_01_12_00_00.123456789\",content_id=\"aaaaaaaaaaaaaaaa\"} 1\n",
                "aicr_enroot_config_info{file=\"enroot.conf\",side=\"running\","
                "version=\"..2024_04_01_08_00_00.987654321\",content_id=\"bbbbbbbbbbbbbbbb\"} 1\n",
                "aicr_enroot_config_info{file=\"99-aicr-defaults.env\",side=\"running\","
                "content_id=\"cccccccccccccccc\"} 1\n",
                "aicr_enroot_config_lint_findings{file=\"enroot.conf\",side=\"desired\","
                "severity=\"warning\"} 1\n",
                "aicr_enroot_config_drift_start_timestamp_seconds{file=\"enroot.conf\"} "
                "1714564800.5\n",
                "aicr_enroot_config_state{file=\"enroot.conf\",state=\"drifted\"} 1\n",
                "aicr_enroot_config_state{file=\"enroot.conf\",state=\"current\"} 0\n",
                "# TYPE aicr_enroot_agent_evaluations_total counter\n",
                "aicr_enroot_agent_evaluations_total{trigger=\"resync\"} 12\n",
                "aicr_enroot_agent_evaluations_total{trigger=\"overflow\"} 0\n",
                "aicr_enroot_agent_watch_mode{mode=\"inotify\"} 1\n",
                "aicr_enroot_agent_watch_mode{mode=\"poll\"} 0\n",
                "aicr_enroot_agent_build_info{version=\"0.1.0\"} 1\n",
                "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.25\n",
                "process_open_fds 9\n",
                "process_max_fds 1048576\n",
                "process_resident_memory_bytes 4194304\n",
                "process_virtual_memory_bytes 12582912\n",
                "process_virtual_memory_max_bytes 18446744073709551615\n",
                "process_start_time_seconds 1714564790.5\n",
        };

        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                if (!strstr(text, want[i]))
                        fail_msg("missing \"%s\" in:\n%s", want[i], text);
        /* the cosmetic change is not a drifted key */
        assert_null(strstr(text, "ENROOT_REMAP_ROOT"));
        /* the current file has no drift start */
        assert_null(strstr(text, "drift_start_timestamp_seconds{file=\"99-aicr"));
        /* eight states per file, one of them 1 */
        assert_int_equal(count_lines_starting(text, "aicr_enroot_config_state{"), 16);
        /* every family has HELP and TYPE */
        assert_int_equal(count_lines_starting(text, "# HELP "),
                         count_lines_starting(text, "# TYPE "));
}

static void test_current_gauge(void **state) {
        _cleanup_(report_freep) Report *cur = sample_current(), *unk = sample_unknown();
        _cleanup_free_ char *a = render(cur, NULL), *b = render(unk, NULL), *c = render(NULL, NULL);

        assert_non_null(strstr(a, "\naicr_enroot_config_current 1\n"));
        assert_non_null(strstr(b, "\naicr_enroot_config_current 0\n"));
        assert_non_null(strstr(c, "\naicr_enroot_config_current 0\n"));
        /* no agent metrics without counters */
        assert_null(strstr(c, "aicr_enroot_agent_build_info"));
        assert_null(strstr(c, "process_"));
}

static void test_hostile_labels(void **state) {
        _cleanup_(report_freep) Report *r = sample_hostile();
        _cleanup_free_ char *text = render(r, &counters_hostile);
        const char *p;

        /* escaped per the format */
        assert_non_null(strstr(text, "{file=\"quote\\\"back\\\\slash\\nnewline.conf\""));
        assert_non_null(strstr(text, "key=\"A\\\"B\""));
        assert_non_null(strstr(text, "key=\"C\\\\D\""));
        assert_non_null(strstr(text, "key=\"E\\nF\""));
        /* no injected line */
        assert_null(strstr(text, "\nevil_total"));
        assert_null(strstr(text, "\n# TYPE evil"));
        /* valid UTF-8 kept as is, invalid replaced and tagged */
        assert_non_null(strstr(text, "key=\"GOOD_\xc3\x84\xc3\x96_\xf0\x9f\x90\xa7\""));
        assert_non_null(strstr(text, "key=\"BAD_\xef\xbf\xbd\xef\xbf\xbd_UTF8...#"));
        assert_null(strstr(text, "\xff"));
        assert_null(strstr(text, "\xc0\xaf"));
        assert_null(strstr(text, "\xed\xa0\x80"));
        /* two names that differ only in a bad byte stay two series */
        p = strstr(text, "key=\"\xef\xbf\xbd...#");
        assert_non_null(p);
        assert_non_null(strstr(p + 1, "key=\"\xef\xbf\xbd...#"));
        assert_memory_not_equal(p, strstr(p + 1, "key=\"\xef\xbf\xbd...#"), 30);
        /* omitted series counted */
        assert_non_null(strstr(text, "aicr_enroot_config_key_drift_omitted{file=\"quote"));
        assert_non_null(strstr(text, "\"} 70\n"));
        /* an unknown watch mode is still listed */
        assert_non_null(strstr(text, "aicr_enroot_agent_watch_mode{mode=\"fan\\\"otify\\n\"} 1\n"));
}

static void test_long_labels(void **state) {
        _cleanup_(report_freep) Report *r = sample_hostile();
        _cleanup_free_ char *text = render(r, NULL);
        const char *a, *b, *end;
        char prefix[300];

        memset(prefix, 'K', 256);
        (void) snprintf(prefix + 256, sizeof prefix - 256, "...#");
        a = strstr(text, prefix);
        assert_non_null(a);
        b = strstr(a + 1, prefix);
        assert_non_null(b);
        /* cut at the cap, tagged with different hashes */
        end = strchr(a, '"');
        assert_int_equal(end - a, 256 + 4 + 16);
        assert_memory_not_equal(a, b, 256 + 4 + 16);
        assert_null(strstr(text, "KKKKL"));
}

/* The worst case the rest of the program lets through stays far under the cap,
 * and a rendering that crosses a cap fails cleanly. */
static void test_bounds(void **state) {
        _cleanup_(report_freep) Report *r = report_new(32);
        StrBuf small = STRBUF_INIT(1000);
        char key[METRICS_MAX_LABEL_BYTES + 1], key_version[1001];
        _cleanup_free_ char *text = NULL;

        /* a version id from a mount root longer than any label value */
        memset(key_version, 'v', sizeof key_version - 1);
        key_version[0] = key_version[1] = '.';
        key_version[sizeof key_version - 1] = '\0';

        for (size_t i = 0; i < r->n_files; i++) {
                char name[300];
                FileReport *f;

                memset(name, 'f', 250);
                (void) snprintf(name + 250, sizeof name - 250, "%03zu", i);
                f = file_init(r, i, name, "/etc/enroot/x", FILE_DRIFTED);
                side_read(f, SIDE_DESIRED, 'a', key_version);
                side_read(f, SIDE_RUNNING, 'b', key_version);
                for (size_t j = 0; j < REPORT_MAX_KEY_CHANGES; j++) {
                        memset(key, 'K', sizeof key - 1);
                        (void) snprintf(key + METRICS_MAX_LABEL_BYTES - 4, 5, "%04zu", j);
                        change_add(f, key, CHANGE_CHANGED, true);
                }
                f->n_drifted_keys = 1000;
                f->n_changes_dropped = 1000 - REPORT_MAX_KEY_CHANGES;
                f->drift_since_usec = 1;
        }
        r->evaluated = true;

        text = render(r, &sample_counters);
        assert_true(strlen(text) < METRICS_MAX_BYTES / 2);
        assert_int_equal(count_lines_starting(text, "aicr_enroot_config_key_drift{"),
                         32 * REPORT_MAX_KEY_CHANGES);
        assert_non_null(strstr(text, "\"} 936\n"));

        assert_int_equal(metrics_render(&small, r, &sample_counters), -ENOBUFS);
        assert_true(small.len <= 1000);
        strbuf_done(&small);
        small = STRBUF_INIT(1000);
        assert_int_equal(status_json_render(&small, r, &sample_counters), -ENOBUFS);
        strbuf_done(&small);
}

static void test_status(void **state) {
        _cleanup_(report_freep) Report *r = sample_drifted();
        _cleanup_free_ char *text = render_status(r, &sample_counters);
        _cleanup_(json_decrefp) json_t *j = NULL;
        json_t *f0, *f1, *c0;
        json_error_t err;

        j = json_loads(text, 0, &err);
        if (!j)
                fail_msg("status is not JSON: %s", err.text);
        assert_string_equal(json_string_value(json_object_get(j, "pod")), "drifted");
        assert_true(json_is_true(json_object_get(j, "evaluated")));
        assert_string_equal(json_string_value(json_object_get(j, "evaluated_at")),
                            "2024-05-01T12:00:01Z");
        assert_int_equal(
                json_integer_value(json_object_get(
                        json_object_get(json_object_get(j, "agent"), "evaluations"), "resync")),
                12);
        f0 = json_array_get(json_object_get(j, "files"), 0);
        f1 = json_array_get(json_object_get(j, "files"), 1);
        assert_string_equal(json_string_value(json_object_get(f0, "state")), "drifted");
        assert_true(json_is_true(json_object_get(f0, "superseded")));
        assert_string_equal(json_string_value(json_object_get(f0, "mount_version")),
                            "..2024_04_01_08_00_00.987654321");
        assert_string_equal(json_string_value(json_object_get(f0, "drift_since")),
                            "2024-05-01T12:00:00Z");
        assert_int_equal(json_integer_value(json_object_get(f0, "drifted_keys")), 2);
        assert_int_equal(json_array_size(json_object_get(f0, "changes")), 3);
        c0 = json_array_get(json_object_get(f0, "changes"), 1);
        assert_string_equal(json_string_value(json_object_get(c0, "key")), "ENROOT_REMAP_ROOT");
        assert_string_equal(json_string_value(json_object_get(c0, "change")), "changed");
        assert_true(json_is_false(json_object_get(c0, "effective")));
        assert_int_equal(
                json_integer_value(json_object_get(
                        json_object_get(json_object_get(f0, "lint"), "desired"), "warnings")),
                1);
        assert_true(json_is_null(json_object_get(f1, "drift_since")));
        assert_string_equal(json_string_value(json_object_get(f1, "state")), "current");
}

static void test_status_hostile_is_json(void **state) {
        _cleanup_(report_freep) Report *r = sample_hostile();
        _cleanup_free_ char *text = render_status(r, &counters_hostile);
        _cleanup_(json_decrefp) json_t *j = NULL;
        json_error_t err;
        json_t *changes;

        j = json_loads(text, 0, &err);
        if (!j)
                fail_msg("hostile status is not JSON: %s", err.text);
        changes = json_object_get(json_array_get(json_object_get(j, "files"), 0), "changes");
        assert_string_equal(json_string_value(json_object_get(json_array_get(changes, 0), "key")),
                            "A\"B");
        assert_string_equal(json_string_value(json_object_get(json_array_get(changes, 2), "key")),
                            "E\nF");
        /* the running path's bad byte replaced, and tagged */
        assert_non_null(
                strstr(json_string_value(json_object_get(
                               json_array_get(json_object_get(j, "files"), 0), "running_path")),
                       "/etc/\xef\xbf\xbd.conf...#"));
}

static void test_triggers(void **state) {
        for (EvalTrigger t = 0; t < _TRIGGER_MAX; t++)
                assert_int_equal(eval_trigger_from_string(eval_trigger_to_string(t)), t);
        assert_null(eval_trigger_to_string(_TRIGGER_MAX));
        assert_int_equal(eval_trigger_from_string("nope"), _TRIGGER_INVALID);
        assert_int_equal(eval_trigger_from_string(NULL), _TRIGGER_INVALID);
}

static void test_process_stats(void **state) {
        ProcessStats a, b;
        struct rlimit rl;
        struct timespec now;
        int fd;
        struct timespec cpu0, cpu;

        assert_int_equal(process_stats_read(&a), 0);
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        /* burn 50 ms of CPU: more than a few clock ticks */
        assert_int_equal(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0), 0);
        do
                assert_int_equal(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu), 0);
        while ((cpu.tv_sec - cpu0.tv_sec) * 1000000000L + (cpu.tv_nsec - cpu0.tv_nsec) < 50000000L);
        assert_int_equal(process_stats_read(&b), 0);
        (void) close(fd);

        assert_int_equal(b.open_fds, a.open_fds + 1);
        assert_true(a.open_fds >= 3);
        /* the same number as a listing, leaving out what reads the
         * statistics (the descriptors process_stats_read() keeps, this
         * listing's own) */
        {
                char self_stat[64], self_fd[64], link[256], path[300];
                uint64_t listed = 0;
                struct dirent *de;
                DIR *d;

                (void) snprintf(self_stat, sizeof self_stat, "/proc/%d/statm", (int) getpid());
                (void) snprintf(self_fd, sizeof self_fd, "/proc/%d/fd", (int) getpid());
                d = opendir("/proc/self/fd");
                assert_non_null(d);
                while ((de = readdir(d))) {
                        ssize_t n;

                        if (de->d_name[0] == '.' || atoi(de->d_name) == dirfd(d))
                                continue;
                        (void) snprintf(path, sizeof path, "/proc/self/fd/%s", de->d_name);
                        n = readlink(path, link, sizeof link - 1);
                        assert_true(n > 0);
                        link[n] = '\0';
                        if (streq(link, self_stat) || streq(link, self_fd))
                                continue;
                        listed++;
                }
                (void) closedir(d);
                assert_int_equal(process_stats_read(&b), 0);
                assert_int_equal(b.open_fds, listed);
        }
        assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
        assert_int_equal(a.max_fds, rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur);
        assert_true(a.resident_bytes > 0);
        assert_true(a.virtual_bytes >= a.resident_bytes);
        assert_true(b.cpu_usec > a.cpu_usec);
        assert_true(a.start_time_usec == b.start_time_usec);
        assert_int_equal(clock_gettime(CLOCK_REALTIME, &now), 0);
        /* started within the last hour, not in the future */
        assert_true(a.start_time_usec <= (uint64_t) now.tv_sec * 1000000u + 1000000u);
        assert_true(a.start_time_usec + UINT64_C(3600000000) >= (uint64_t) now.tv_sec * 1000000u);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_golden),
                cmocka_unit_test(test_cache),
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_current_gauge),
                cmocka_unit_test(test_hostile_labels),
                cmocka_unit_test(test_long_labels),
                cmocka_unit_test(test_bounds),
                cmocka_unit_test(test_status),
                cmocka_unit_test(test_status_hostile_is_json),
                cmocka_unit_test(test_triggers),
                cmocka_unit_test(test_process_stats),
                cmocka_unit_test(test_promtool),
                cmocka_unit_test(test_promtool_rejects),
                cmocka_unit_test(test_promtool_live_process),
        };
        return unit_skip_status(cmocka_run_group_tests(tests, NULL, NULL));
}
