/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The readiness rule (readiness.h), pure: each row is a Report built on the
 * stack and the exact verdict and line it must give. The HTTP side of
 * /readyz (status codes, the newline, callbacks) is test-httpd's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "unit-skip.h"

#include "readiness.h"

#define MAX_FILES 4

typedef struct File {
        const char *key;
        FileState state;
        size_t drifted_keys;
} File;

typedef struct Row {
        const char *name;
        bool not_evaluated;
        bool blind[_SIDE_MAX]; /* that side cannot be observed */
        const char *detail;    /* the first file's detail */
        File files[MAX_FILES]; /* up to the first with a NULL key */
        bool require_current;
        bool ready;
        const char *line;
} Row;

static const Row rows[] = {
        {.name = "not evaluated",
         .not_evaluated = true,
         .files = {{"enroot.conf", FILE_CURRENT}},
         .line = "not ready: the first evaluation has not completed yet"},
        {.name = "desired side blind, with the reason",
         .blind = {[SIDE_DESIRED] = true},
         .detail = "cannot open the ConfigMap directory: Permission denied",
         .files = {{"enroot.conf", FILE_UNKNOWN}},
         .line = "not ready: the desired side (the ConfigMap directory) cannot be observed: "
                 "cannot open the ConfigMap directory: Permission denied"},
        {.name = "both sides blind: the desired side is named",
         .blind = {true, true},
         .line = "not ready: the desired side (the ConfigMap directory) cannot be observed"},
        {.name = "running side blind, no files",
         .blind = {[SIDE_RUNNING] = true},
         .line = "not ready: the running side (the workload's files) cannot be observed"},
        {.name = "no files", .require_current = true, .ready = true, .line = "ready: pod current"},
        {.name = "current and cosmetic files are not listed",
         .files = {{"enroot.conf", FILE_CURRENT}, {"a.env", FILE_COSMETIC}},
         .require_current = true,
         .ready = true,
         .line = "ready: pod current"},
        {.name = "one drifted key",
         .files = {{"a.env", FILE_COSMETIC}, {"enroot.conf", FILE_DRIFTED, 1}},
         .ready = true,
         .line = "ready: pod drifted: enroot.conf drifted (1 key)"},
        {.name = "drift with --require-current",
         .files = {{"enroot.conf", FILE_DRIFTED, 3}, {"a.env", FILE_MISSING}},
         .require_current = true,
         .line = "not ready: pod drifted and --require-current is set: enroot.conf drifted "
                 "(3 keys), a.env missing"},
        {.name = "every other state, in file order",
         .files = {{"a.env", FILE_INVALID},
                   {"b.env", FILE_UNVERIFIABLE},
                   {"c.env", FILE_UNREADABLE},
                   {"d.env", FILE_UNKNOWN}},
         .ready = true,
         .line = "ready: pod unknown: a.env invalid, b.env unverifiable, c.env unreadable, "
                 "d.env unknown"},
        {.name = "control characters in a key",
         .files = {{"a\tb\x7f"
                    "c\r.env",
                    FILE_MISSING}},
         .ready = true,
         .line = "ready: pod unknown: a?b?c?.env missing"},
};

static void run_row(const Row *row, const char *prefix) {
        FileReport files[MAX_FILES] = {};
        Report r = {.files = files, .evaluated = !row->not_evaluated};
        StrBuf b = STRBUF_INIT(4096);

        for (Side s = 0; s < _SIDE_MAX; s++)
                r.observable[s] = !row->blind[s];
        for (size_t i = 0; i < MAX_FILES && row->files[i].key; i++) {
                files[i] = (FileReport){.key = (char *) (uintptr_t) row->files[i].key,
                                        .state = row->files[i].state,
                                        .n_drifted_keys = row->files[i].drifted_keys};
                r.n_files++;
        }
        files[0].detail = (char *) (uintptr_t) row->detail;
        r.pod = report_pod_state(&r);

        assert_int_equal(strbuf_puts(&b, prefix), 0);
        if (readiness_is_ready(&r, row->require_current, &b) != row->ready)
                fail_msg("%s: expected %s", row->name, row->ready ? "ready" : "not ready");
        if (!startswith(strbuf_str(&b), prefix) ||
            !streq(strbuf_str(&b) + strlen(prefix), row->line))
                fail_msg("%s:\n  got  \"%s\"\n  want \"%s%s\"", row->name, strbuf_str(&b), prefix,
                         row->line);
        strbuf_done(&b);
}

static void test_rows(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                run_row(&rows[i], "");
}

/* The line is appended: what the buffer held stays in front. */
static void test_appends(void **state) {
        static const Row drifted = {.name = "after earlier text",
                                    .files = {{"enroot.conf", FILE_DRIFTED, 2}},
                                    .ready = true,
                                    .line = "ready: pod drifted: enroot.conf drifted (2 keys)"};

        run_row(&drifted, "earlier text|");
}

static void test_no_report(void **state) {
        StrBuf b = STRBUF_INIT(4096);

        assert_false(readiness_is_ready(NULL, false, &b));
        assert_string_equal(strbuf_str(&b),
                            "not ready: the first evaluation has not completed yet");
        strbuf_done(&b);
}

/* One file whose item (": KEY missing") is item_len bytes long. */
static void expect_one_item(size_t item_len, const char *want_line) {
        char key[READINESS_MAX_REASON_BYTES];
        FileReport f = {.key = key, .state = FILE_MISSING};
        Report r = {.files = &f, .n_files = 1, .evaluated = true, .observable = {true, true}};
        StrBuf b = STRBUF_INIT(4096);
        size_t key_len = item_len - strlen(":  missing");

        assert_true(key_len < sizeof key);
        memset(key, 'k', key_len);
        key[key_len] = '\0';
        assert_true(readiness_is_ready(&r, false, &b));
        if (want_line)
                assert_string_equal(strbuf_str(&b), want_line);
        else {
                /* the whole item is there */
                assert_true(startswith(strbuf_str(&b), "ready: pod unknown: kk"));
                assert_true(endswith(strbuf_str(&b), "kk missing"));
                assert_int_equal(b.len, strlen("ready: pod unknown") + item_len);
        }
        strbuf_done(&b);
}

/* The bound: an item goes in only while ", ..." would still fit after it, so
 * a line that was not cut is at most READINESS_MAX_REASON_BYTES - 5 bytes;
 * an item one byte longer is left out and ", ..." says so. */
static void test_bound(void **state) {
        size_t head = strlen("ready: pod unknown");
        size_t fits = READINESS_MAX_REASON_BYTES - 5 - head;
        Report r = {.evaluated = true, .observable = {true, true}};
        FileReport files[64] = {};
        char keys[64][32];
        StrBuf b = STRBUF_INIT(4096);

        expect_one_item(fits, NULL);
        expect_one_item(fits + 1, "ready: pod unknown, ...");

        /* many items: cut between two of them, never inside one */
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                (void) snprintf(keys[i], sizeof keys[i], "file-%02zu.conf", i);
                files[i] = (FileReport){.key = keys[i], .state = FILE_INVALID};
        }
        r.files = files;
        r.n_files = ELEMENTSOF(files);
        assert_false(readiness_is_ready(&r, true, &b));
        assert_true(b.len <= READINESS_MAX_REASON_BYTES);
        /* the next item would not have fitted */
        assert_true(b.len + strlen(", file-00.conf invalid") > READINESS_MAX_REASON_BYTES);
        assert_true(endswith(strbuf_str(&b), " invalid, ..."));
        strbuf_done(&b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows),
                cmocka_unit_test(test_appends),
                cmocka_unit_test(test_no_report),
                cmocka_unit_test(test_bound),
        };
        return unit_skip_status(cmocka_run_group_tests(tests, NULL, NULL));
}
