/* SPDX-License-Identifier: Apache-2.0 */
/* One file's state from both sides: one row per state and per superseded signal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "evaluate.h"

typedef struct Row {
        const char *name;
        const char *key;
        const char *desired; /* NULL: absent */
        int desired_error;
        const char *running;
        int running_error;
        const char *desired_version;
        const char *mount_version;
        bool mount_deleted;
        long nlink; /* -1: unknown */
        FileState state;
        bool superseded;
        const char *detail; /* substring, or NULL for none */
} Row;

#define V1 "..2026_12_02_10_00_00.111"
#define V2 "..2026_12_02_11_00_00.222"

static const Row rows[] = {
        {"same", "enroot.conf", "ENROOT_MOUNT_HOME=yes\n", 0, "ENROOT_MOUNT_HOME=yes\n", 0, V1, V1,
         false, 1, FILE_CURRENT, false, NULL},
        {"cosmetic", "enroot.conf", "# c\nENROOT_MOUNT_HOME=yes\n", 0, "ENROOT_MOUNT_HOME y\n", 0,
         V1, V1, false, 1, FILE_COSMETIC, false, NULL},
        {"drifted", "enroot.conf", "ENROOT_MOUNT_HOME=no\n", 0, "ENROOT_MOUNT_HOME=yes\n", 0, V2,
         V1, true, 0, FILE_DRIFTED, true, NULL},
        {"env drifted", "x.env", "NCCL_DEBUG=INFO\n", 0, "NCCL_DEBUG=WARN\n", 0, V2, V1, true, 0,
         FILE_DRIFTED, true, NULL},
        /* A -> B -> A: equal content on a superseded mount is reported, not drift */
        {"A-B-A", "enroot.conf", "ENROOT_MOUNT_HOME=yes\n", 0, "ENROOT_MOUNT_HOME=yes\n", 0, V2, V1,
         true, 0, FILE_CURRENT, true, NULL},
        {"superseded by nlink only", "enroot.conf", "ENROOT_MOUNT_HOME=yes\n", 0,
         "ENROOT_MOUNT_HOME=yes\n", 0, V2, NULL, false, 0, FILE_CURRENT, true, NULL},
        {"superseded by version only", "enroot.conf", "ENROOT_MOUNT_HOME=yes\n", 0,
         "ENROOT_MOUNT_HOME=yes\n", 0, V2, V1, false, -1, FILE_CURRENT, true, NULL},
        {"not a mount", "enroot.conf", "ENROOT_MOUNT_HOME=yes\n", 0, "ENROOT_MOUNT_HOME=yes\n", 0,
         V2, NULL, false, 1, FILE_CURRENT, false, NULL},
        {"desired key missing", "enroot.conf", NULL, -ENOENT, "ENROOT_MOUNT_HOME=yes\n", 0, V1, V1,
         false, 1, FILE_MISSING, false, "ConfigMap key \"enroot.conf\" does not exist"},
        {"running file missing", "enroot.conf", "ENROOT_MOUNT_HOME=yes\n", 0, NULL, -ENOENT, V1,
         NULL, false, -1, FILE_MISSING, false, "/etc/enroot/enroot.conf does not exist"},
        {"running unreadable", "enroot.conf", "ENROOT_MOUNT_HOME=yes\n", 0, NULL, -EACCES, V1, NULL,
         false, -1, FILE_UNREADABLE, false, "permission denied"},
        {"desired too big", "enroot.conf", NULL, -EFBIG, "", 0, V1, NULL, false, -1,
         FILE_UNREADABLE, false, "larger than 1 MiB"},
        {"running is a FIFO", "enroot.conf", "", 0, NULL, -EBADFD, V1, NULL, false, -1,
         FILE_UNREADABLE, false, "not a regular file"},
        {"..data outside", "enroot.conf", NULL, -EXDEV, "", 0, NULL, NULL, false, -1,
         FILE_UNREADABLE, false, "..data points outside the volume"},
        {"desired invalid", "enroot.conf", "ENROOT_MOUNT_HOME=\"yes\n", 0,
         "ENROOT_MOUNT_HOME=yes\n", 0, V1, V1, false, 1, FILE_INVALID, false, "1 lint error(s)"},
        {"desired invalid even if equal", "enroot.conf", "ENROOT_A=1\r\n", 0, "ENROOT_A=1\r\n", 0,
         V1, V1, false, 1, FILE_INVALID, false, "lint error"},
        {"running invalid is drift", "enroot.conf", "ENROOT_MOUNT_HOME=yes\n", 0,
         "ENROOT_MOUNT_HOME=\"yes\n", 0, V1, V1, false, 1, FILE_DRIFTED, false, NULL},
        /* enroot's loader skips NVIDIA_* and MELLANOX_* lines: no pod to replace */
        {"NVIDIA_ line only", "enroot.conf",
         "ENROOT_MOUNT_HOME=yes\nNVIDIA_DRIVER_CAPABILITIES=compute,utility\n", 0,
         "ENROOT_MOUNT_HOME=yes\nNVIDIA_DRIVER_CAPABILITIES=all\n", 0, V2, V1, true, 0,
         FILE_COSMETIC, true, NULL},
        {"MELLANOX_ line only", "enroot.conf", "MELLANOX_VISIBLE_DEVICES=all\n", 0, "", 0, V2, V1,
         true, 0, FILE_COSMETIC, true, NULL},
        /* Any other key is raw: the bytes, nothing else (no cosmetic, no lint). */
        {"raw same", "nginx.conf", "worker_processes 1;\n", 0, "worker_processes 1;\n", 0, V1, V1,
         false, 1, FILE_CURRENT, false, NULL},
        {"raw one byte", "nginx.conf", "worker_processes 1;\n", 0, "worker_processes 1; \n", 0, V1,
         V1, false, 1, FILE_DRIFTED, false, NULL},
        {"raw is not cosmetic", "nginx.conf", "# c\nENROOT_MOUNT_HOME=yes\n", 0,
         "ENROOT_MOUNT_HOME y\n", 0, V1, V1, false, 1, FILE_DRIFTED, false, NULL},
        {"raw is never invalid", "nginx.conf", "ENROOT_MOUNT_HOME=\"yes\n", 0,
         "ENROOT_MOUNT_HOME=\"yes\n", 0, V1, V1, false, 1, FILE_CURRENT, false, NULL},
        {"raw empty both", "nginx.conf", "", 0, "", 0, V1, V1, false, 1, FILE_CURRENT, false, NULL},
        {"raw A-B-A", "nginx.conf", "a\n", 0, "a\n", 0, V2, V1, true, 0, FILE_CURRENT, true, NULL},
        {"raw drifted superseded", "nginx.conf", "b\n", 0, "a\n", 0, V2, V1, true, 0, FILE_DRIFTED,
         true, NULL},
        {"raw desired missing", "nginx.conf", NULL, -ENOENT, "a\n", 0, V1, V1, false, 1,
         FILE_MISSING, false, "does not exist"},
        {"raw running missing", "nginx.conf", "a\n", 0, NULL, -ENOENT, V1, NULL, false, -1,
         FILE_MISSING, false, "does not exist"},
        {"raw running unreadable", "nginx.conf", "a\n", 0, NULL, -EACCES, V1, NULL, false, -1,
         FILE_UNREADABLE, false, "permission denied"},
        {"raw running too big", "nginx.conf", "a\n", 0, NULL, -EFBIG, V1, NULL, false, -1,
         FILE_UNREADABLE, false, "larger than 1 MiB"},
        {"raw key as enroot-env when .env", "app.env", "A=\"1\"\n", 0, "A=1\n", 0, V1, V1, false, 1,
         FILE_COSMETIC, false, NULL},
};

static const ContentKey test_key = {.bytes = "a fixed key for the tests only."};

static void fill(const Row *r, EvalInput *in) {
        *in = (EvalInput){
                .key = r->key,
                .running_path = endswith(r->key, ".env") ? "/etc/enroot/environ.d/x.env"
                                                         : "/etc/enroot/enroot.conf",
                .format = file_format_for_key(r->key),
                .type = evaluate_doc_type(file_format_for_key(r->key)),
                .desired_version = r->desired_version,
                .nlink_known = r->nlink >= 0,
                .nlink = r->nlink >= 0 ? (unsigned long) r->nlink : 0,
                .mount_version = r->mount_version,
                .mount_deleted = r->mount_deleted,
                .content_key = &test_key,
        };
        in->side[SIDE_DESIRED] = (EvalSide){.error = r->desired_error,
                                            .data = r->desired,
                                            .len = r->desired ? strlen(r->desired) : 0,
                                            .what = "ConfigMap key \"enroot.conf\"",
                                            .version = r->desired_version};
        in->side[SIDE_RUNNING] = (EvalSide){.error = r->running_error,
                                            .data = r->running,
                                            .len = r->running ? strlen(r->running) : 0,
                                            .what = "/etc/enroot/enroot.conf",
                                            .version = r->mount_version};
}

static void test_rows(void **state) {
        unsigned failures = 0;

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const Row *r = &rows[i];
                _cleanup_(file_report_done) FileReport f = {};
                EvalInput in;

                fill(r, &in);
                assert_int_equal(evaluate_file(&in, NULL, 1000, &f), 0);
                if (f.state != r->state || f.superseded != r->superseded ||
                    (r->detail && (!f.detail || !strstr(f.detail, r->detail))) ||
                    (!r->detail && f.detail)) {
                        print_error("%s: %s%s (%s), want %s%s (%s)\n", r->name,
                                    file_state_to_string(f.state),
                                    f.superseded ? "+superseded" : "", strnull(f.detail),
                                    file_state_to_string(r->state),
                                    r->superseded ? "+superseded" : "", strnull(r->detail));
                        failures++;
                }
        }
        assert_int_equal(failures, 0);
}

static void assert_same_report(const FileReport *a, const FileReport *b) {
        assert_int_equal(a->state, b->state);
        assert_int_equal(a->superseded, b->superseded);
        assert_string_equal(strnull(a->detail), strnull(b->detail));
        for (int s = 0; s < _SIDE_MAX; s++) {
                assert_int_equal(a->read[s], b->read[s]);
                assert_string_equal(a->content_id[s], b->content_id[s]);
                assert_string_equal(strnull(a->version[s]), strnull(b->version[s]));
                assert_memory_equal(a->lint[s], b->lint[s], sizeof a->lint[s]);
        }
        assert_int_equal(a->n_changes, b->n_changes);
        assert_int_equal(a->n_drifted_keys, b->n_drifted_keys);
        for (size_t i = 0; i < a->n_changes; i++) {
                assert_string_equal(a->changes[i].key, b->changes[i].key);
                assert_int_equal(a->changes[i].change, b->changes[i].change);
                assert_int_equal(a->changes[i].effective, b->changes[i].effective);
        }
}

/* A side whose bytes did not change is taken from the cache, and the report
 * is the same as without one: every row, forwards, backwards and twice in a
 * row, through one cache (so types, sizes and contents change under it). */
static void test_cache(void **state) {
        EvalCache cache[_SIDE_MAX] = {};
        size_t order[4 * ELEMENTSOF(rows)], n = 0;

        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                order[n++] = i;
        for (size_t i = ELEMENTSOF(rows); i-- > 0;)
                order[n++] = i;
        for (size_t i = 0; i < ELEMENTSOF(rows); i += 2) {
                order[n++] = i;
                order[n++] = i;
        }

        for (size_t k = 0; k < n; k++) {
                _cleanup_(file_report_done) FileReport plain = {}, cached = {};
                EvalInput in;

                fill(&rows[order[k]], &in);
                assert_int_equal(evaluate_file(&in, NULL, 1000, &plain), 0);
                in.cache[SIDE_DESIRED] = &cache[SIDE_DESIRED];
                in.cache[SIDE_RUNNING] = &cache[SIDE_RUNNING];
                assert_int_equal(evaluate_file(&in, NULL, 1000, &cached), 0);
                assert_same_report(&plain, &cached);
        }
        print_message("cache: desired %u hits, %u misses; running %u hits, %u misses\n",
                      cache[SIDE_DESIRED].hits, cache[SIDE_DESIRED].misses,
                      cache[SIDE_RUNNING].hits, cache[SIDE_RUNNING].misses);
        assert_true(cache[SIDE_DESIRED].hits > 0 && cache[SIDE_DESIRED].misses > 0);
        assert_true(cache[SIDE_RUNNING].hits > 0 && cache[SIDE_RUNNING].misses > 0);

        /* the same bytes read as another type are parsed again */
        {
                _cleanup_(file_report_done) FileReport f = {};
                unsigned misses = cache[SIDE_DESIRED].misses;
                Row r = rows[0];
                EvalInput in;

                r.key = "x.env";
                fill(&r, &in);
                in.cache[SIDE_DESIRED] = &cache[SIDE_DESIRED];
                assert_int_equal(evaluate_file(&in, NULL, 1000, &f), 0);
                assert_int_equal(cache[SIDE_DESIRED].misses, misses + 1);
                assert_int_equal(cache[SIDE_DESIRED].type, DOC_ENV);
        }

        /* a document over EVAL_CACHE_MAX_BYTES is not kept */
        {
                _cleanup_(file_report_done) FileReport f = {};
                _cleanup_free_ char *big = malloc(EVAL_CACHE_MAX_BYTES + 2);
                EvalInput in;

                assert_non_null(big);
                memset(big, '#', EVAL_CACHE_MAX_BYTES);
                big[EVAL_CACHE_MAX_BYTES] = '\n';
                big[EVAL_CACHE_MAX_BYTES + 1] = '\0';
                fill(&rows[0], &in);
                in.side[SIDE_RUNNING].data = big;
                in.side[SIDE_RUNNING].len = EVAL_CACHE_MAX_BYTES + 1;
                in.cache[SIDE_RUNNING] = &cache[SIDE_RUNNING];
                assert_int_equal(evaluate_file(&in, NULL, 1000, &f), 0);
                assert_null(cache[SIDE_RUNNING].doc);
                assert_null(cache[SIDE_RUNNING].data);
                assert_true(f.read[SIDE_RUNNING]);
        }

        for (int s = 0; s < _SIDE_MAX; s++)
                eval_cache_done(&cache[s]);
}

/* What the report publishes of each side's bytes: the version each came
 * from, and a content id that is keyed (docs/OPERATIONS.md, "Which file
 * identity is published"), never the bytes' plain SHA-256. */
static void test_identity(void **state) {
        static const ContentKey other_key = {.bytes = "another key, another process..."};
        _cleanup_(file_report_done) FileReport same = {}, drifted = {}, rekeyed = {}, nokey = {},
                                               missing = {};
        _cleanup_(document_freep) Document *doc = NULL;
        EvalInput in;

        fill(&rows[0], &in); /* equal bytes, both from V1 */
        assert_int_equal(evaluate_file(&in, NULL, 1, &same), 0);
        assert_int_equal(strlen(same.content_id[SIDE_DESIRED]), CONTENT_ID_HEX);
        assert_string_equal(same.content_id[SIDE_DESIRED], same.content_id[SIDE_RUNNING]);
        assert_string_equal(same.version[SIDE_DESIRED], V1);
        assert_string_equal(same.version[SIDE_RUNNING], V1);
        /* not a piece of the plain SHA-256 */
        assert_int_equal(document_parse(DOC_CONF, rows[0].desired, strlen(rows[0].desired), &doc),
                         0);
        assert_null(strstr(doc->sha256, same.content_id[SIDE_DESIRED]));

        fill(&rows[2], &in); /* different bytes, V2 and V1 */
        assert_int_equal(evaluate_file(&in, NULL, 1, &drifted), 0);
        assert_string_not_equal(drifted.content_id[SIDE_DESIRED], drifted.content_id[SIDE_RUNNING]);
        assert_string_equal(drifted.content_id[SIDE_RUNNING], same.content_id[SIDE_RUNNING]);
        assert_string_equal(drifted.version[SIDE_DESIRED], V2);
        assert_string_equal(drifted.version[SIDE_RUNNING], V1);

        /* the same bytes under another key: another id */
        fill(&rows[0], &in);
        in.content_key = &other_key;
        assert_int_equal(evaluate_file(&in, NULL, 1, &rekeyed), 0);
        assert_string_not_equal(rekeyed.content_id[SIDE_DESIRED], same.content_id[SIDE_DESIRED]);

        /* no key, no id; a version not known stays NULL */
        fill(&rows[7], &in); /* not a mount: no running version */
        in.content_key = NULL;
        assert_int_equal(evaluate_file(&in, NULL, 1, &nokey), 0);
        assert_true(nokey.read[SIDE_RUNNING]);
        assert_string_equal(nokey.content_id[SIDE_RUNNING], "");
        assert_null(nokey.version[SIDE_RUNNING]);

        /* a side not read has neither */
        fill(&rows[9], &in); /* running file missing */
        assert_int_equal(evaluate_file(&in, NULL, 1, &missing), 0);
        assert_false(missing.read[SIDE_RUNNING]);
        assert_string_equal(missing.content_id[SIDE_RUNNING], "");
        assert_null(missing.version[SIDE_RUNNING]);
}

static void test_unobservable(void **state) {
        _cleanup_(file_report_done) FileReport f = {};
        EvalInput in;

        fill(&rows[0], &in);
        in.running_unobservable = "no process named \"slurmd\"";
        assert_int_equal(evaluate_file(&in, NULL, 1, &f), 0);
        assert_int_equal(f.state, FILE_UNKNOWN);
        assert_string_equal(f.detail, "no process named \"slurmd\"");
}

static void test_since(void **state) {
        _cleanup_(file_report_done) FileReport a = {}, b = {}, c = {};
        EvalInput in;

        fill(&rows[2], &in); /* drifted */
        assert_int_equal(evaluate_file(&in, NULL, 1000, &a), 0);
        assert_int_equal(a.state_since_usec, 1000);
        assert_int_equal(a.drift_since_usec, 1000);
        /* unchanged state: the times carry over */
        assert_int_equal(evaluate_file(&in, &a, 2000, &b), 0);
        assert_int_equal(b.state_since_usec, 1000);
        assert_int_equal(b.drift_since_usec, 1000);
        /* current again: new state time, no drift time */
        fill(&rows[0], &in);
        assert_int_equal(evaluate_file(&in, &b, 3000, &c), 0);
        assert_int_equal(c.state_since_usec, 3000);
        assert_int_equal(c.drift_since_usec, 0);
}

static void test_changes_bounded(void **state) {
        StrBuf desired = STRBUF_INIT(1u << 20), running = STRBUF_INIT(1u << 20);
        StrBuf text = STRBUF_INIT(1u << 20);
        _cleanup_(file_report_done) FileReport f = {};
        EvalInput in;
        Row r = rows[2];
        size_t n = REPORT_MAX_KEY_CHANGES + 10;

        for (size_t i = 0; i < n; i++) {
                assert_int_equal(strbuf_printf(&desired, "K%04zu=secret-new\n", i), 0);
                assert_int_equal(strbuf_printf(&running, "K%04zu=secret-old\n", i), 0);
        }
        r.key = "many.env";
        r.desired = strbuf_str(&desired);
        r.running = strbuf_str(&running);
        fill(&r, &in);
        assert_int_equal(evaluate_file(&in, NULL, 1, &f), 0);
        assert_int_equal(f.state, FILE_DRIFTED);
        assert_int_equal(f.n_changes, REPORT_MAX_KEY_CHANGES);
        assert_int_equal(f.n_changes_dropped, 10);
        assert_int_equal(f.n_drifted_keys, n);

        assert_int_equal(evaluate_describe(&f, &text), 0);
        assert_non_null(strstr(strbuf_str(&text), "many.env: drifted; 64 changed: K0000 K0001"));
        assert_non_null(strstr(strbuf_str(&text), "; 10 more"));
        assert_null(strstr(strbuf_str(&text), "secret"));
        strbuf_done(&desired);
        strbuf_done(&running);
        strbuf_done(&text);
}

static void test_describe(void **state) {
        _cleanup_(file_report_done) FileReport f = {};
        StrBuf text = STRBUF_INIT(4096);
        EvalInput in;
        Row r = rows[2];

        r.desired = "ENROOT_MOUNT_HOME=no\nENROOT_X_Y=1\n";
        r.running = "ENROOT_MOUNT_HOME=yes\nENROOT_Z=1\n";
        fill(&r, &in);
        assert_int_equal(evaluate_file(&in, NULL, 1, &f), 0);
        assert_int_equal(evaluate_describe(&f, &text), 0);
        assert_string_equal(strbuf_str(&text),
                            "enroot.conf: drifted; 1 added: ENROOT_X_Y; 1 removed: ENROOT_Z; "
                            "1 changed: ENROOT_MOUNT_HOME; the running mount is from a superseded "
                            "version " V1);
        strbuf_done(&text);
}

/* A raw file: which format judged it, keyed ids of its bytes, nothing of
 * a document (no lint, no key changes), the size limit of every file. */
static const Row *row_named(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                if (streq(rows[i].name, name))
                        return &rows[i];
        fail_msg("no row %s", name);
        return NULL;
}

static void test_raw(void **state) {
        _cleanup_(file_report_done) FileReport same = {}, drifted = {}, big = {}, conf = {};
        _cleanup_free_ char *huge = malloc(DOCUMENT_MAX_BYTES + 1);
        char sha[65];
        EvalInput in;

        fill(row_named("raw same"), &in);
        assert_int_equal(in.format, FILE_FORMAT_RAW);
        assert_int_equal(evaluate_file(&in, NULL, 1, &same), 0);
        assert_int_equal(same.format, FILE_FORMAT_RAW);
        assert_int_equal(same.state, FILE_CURRENT);
        assert_true(same.read[SIDE_DESIRED] && same.read[SIDE_RUNNING]);
        assert_int_equal(strlen(same.content_id[SIDE_DESIRED]), CONTENT_ID_HEX);
        assert_string_equal(same.content_id[SIDE_DESIRED], same.content_id[SIDE_RUNNING]);
        assert_string_equal(same.version[SIDE_DESIRED], V1);
        /* the id is keyed, not a piece of the bytes' SHA-256 */
        assert_int_equal(content_sha256_hex(row_named("raw same")->desired,
                                            strlen(row_named("raw same")->desired), sha),
                         0);
        assert_null(strstr(sha, same.content_id[SIDE_DESIRED]));

        fill(row_named("raw one byte"), &in);
        assert_int_equal(evaluate_file(&in, NULL, 1, &drifted), 0);
        assert_int_equal(drifted.state, FILE_DRIFTED);
        assert_string_not_equal(drifted.content_id[SIDE_DESIRED], drifted.content_id[SIDE_RUNNING]);
        assert_int_equal(drifted.n_changes, 0);
        assert_int_equal(drifted.n_drifted_keys, 0);
        for (int s = 0; s < _SIDE_MAX; s++)
                for (int v = 0; v < _SEVERITY_MAX; v++)
                        assert_int_equal(drifted.lint[s][v], 0);

        /* the size limit holds for raw bytes handed in directly too */
        assert_non_null(huge);
        memset(huge, 'x', DOCUMENT_MAX_BYTES + 1);
        fill(row_named("raw same"), &in);
        in.side[SIDE_RUNNING].data = huge;
        in.side[SIDE_RUNNING].len = DOCUMENT_MAX_BYTES + 1;
        assert_int_equal(evaluate_file(&in, NULL, 1, &big), 0);
        assert_int_equal(big.state, FILE_UNREADABLE);
        assert_non_null(strstr(big.detail, "larger than 1 MiB"));

        /* the same key judged as enroot-conf by choice */
        fill(row_named("raw is not cosmetic"), &in);
        in.format = FILE_FORMAT_ENROOT_CONF;
        in.type = evaluate_doc_type(in.format);
        assert_int_equal(evaluate_file(&in, NULL, 1, &conf), 0);
        assert_int_equal(conf.format, FILE_FORMAT_ENROOT_CONF);
        assert_int_equal(conf.state, FILE_COSMETIC);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows),     cmocka_unit_test(test_cache),
                cmocka_unit_test(test_identity), cmocka_unit_test(test_unobservable),
                cmocka_unit_test(test_since),    cmocka_unit_test(test_changes_bounded),
                cmocka_unit_test(test_describe), cmocka_unit_test(test_raw),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
