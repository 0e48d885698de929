/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lint rules, one row each: the input file and its expected report live in
 * tests/data/lint/ (NAME.conf or NAME.env, and NAME.expected). Each row also
 * names the rule ids it must raise, so a reworded message cannot hide a lost
 * rule. UPDATE_EXPECTED=1 rewrites the .expected files (review the diff); it
 * is refused under CI (golden.h).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "fileio.h"
#include "golden.h"
#include "lint.h"
#include "print.h"

typedef struct Row {
        const char *file;
        const char *ids; /* space-separated "LINE:SEVERITY:ID" that must all be present */
        size_t n_errors;
        size_t n_warnings;
} Row;

static const Row rows[] = {
        {"clean.conf", "", 0, 0},
        {"clean.env", "", 0, 0},
        {"syntax-quote.conf", "2:error:syntax", 1, 0},
        /* bash reports an unterminated $( where the file ends */
        {"syntax-subst.conf", "3:error:syntax 2:warning:live-shell", 1, 1},
        {"syntax-backtick.conf", "1:error:syntax 1:warning:live-shell", 1, 1},
        {"no-final-newline.conf", "2:error:no-final-newline", 1, 0},
        {"no-final-newline-comment.conf", "2:warning:no-final-newline", 0, 1},
        {"nul-byte.conf", "2:error:nul-byte", 1, 0},
        {"crlf.conf", "1:error:carriage-return", 1, 0},
        {"export.conf", "1:warning:export", 0, 1},
        {"ignored-key.conf", "1:warning:ignored-key 2:warning:ignored-key 3:warning:ignored-key", 0,
         3},
        /* a value quoted across lines, and a line of terminal escapes: neither named */
        {"not-a-key.conf", "1:warning:live-shell 2:warning:ignored-line 3:warning:ignored-line", 0,
         3},
        /* enroot's hooks read MELLANOX_* and NVIDIA_* from the container environment */
        {"hook-key.conf", "2:warning:ignored-key 3:warning:ignored-key 4:warning:ignored-key", 0,
         3},
        {"unknown-key.conf", "1:warning:unknown-key 2:warning:unknown-key", 0, 2},
        {"duplicate-key.conf", "2:warning:duplicate-key 3:warning:duplicate-key", 0, 2},
        {"boolean-value.conf",
         "1:warning:boolean-value 2:warning:boolean-value 3:warning:boolean-value "
         "4:warning:boolean-value",
         0, 4},
        {"live-shell.conf",
         "1:warning:live-shell 2:warning:live-shell 3:warning:live-shell 4:warning:live-shell "
         "5:warning:live-shell",
         0, 5},
        {"echo-option.conf", "1:warning:echo-option 2:warning:echo-option", 0, 2},
        {"dropped-line.env",
         "1:warning:dropped-line 2:warning:dropped-line 3:warning:dropped-line "
         "4:warning:dropped-line",
         0, 4},
        {"enroot-key.env", "1:warning:enroot-key", 0, 1},
        {"unbraced-variable.env", "2:warning:unbraced-variable", 0, 1},
        {"unsupported-expansion.env", "1:warning:unsupported-expansion", 0, 1},
        {"inline-comment.env", "1:warning:inline-comment", 0, 1},
        {"job-scoped.env",
         "2:warning:job-scoped 3:warning:job-scoped 4:warning:job-scoped 5:warning:job-scoped "
         "6:warning:job-scoped",
         0, 5},
        {"duplicate-key.env", "1:warning:duplicate-key", 0, 1},
        {"crlf.env", "1:error:carriage-return", 1, 0},
        {"nul-byte.env", "1:error:nul-byte", 1, 0},
        {"substituted-key.env", "1:warning:substituted-key", 0, 1},
};

static bool has_finding(const Lint *l, const char *want) {
        for (size_t i = 0; i < l->n_findings; i++) {
                char id[256];
                (void) snprintf(id, sizeof id, "%u:%s:%s", l->findings[i].line,
                                severity_to_string(l->findings[i].severity), l->findings[i].id);
                if (streq(id, want))
                        return true;
        }
        return false;
}

static void test_rows(void **state) {
        static const char *const extra[] = {"UCX_TLS", NULL};
        const LintOptions opts = {.job_scoped_extra = extra};
        bool update = golden_update_requested();
        unsigned failures = 0;

        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                const Row *r = &rows[i];
                _cleanup_free_ char *path = NULL, *exp_path = NULL, *data = NULL, *expected = NULL;
                _cleanup_(document_freep) Document *d = NULL;
                _cleanup_(lint_freep) Lint *l = NULL;
                StrBuf out = STRBUF_INIT(1u << 20);
                size_t len, elen;
                char *ids, *save = NULL;

                assert_true(asprintf(&path, "%s/lint/%s", TEST_DATA_DIR, r->file) > 0);
                assert_true(asprintf(&exp_path, "%s/lint/%s.expected", TEST_DATA_DIR, r->file) > 0);
                assert_int_equal(read_file_at(AT_FDCWD, path, 0, DOCUMENT_MAX_BYTES, &data, &len),
                                 0);
                assert_int_equal(document_parse(doc_type_from_name(r->file), data, len, &d), 0);
                assert_int_equal(lint_document(d, &opts, &l), 0);
                assert_int_equal(print_lint_text(&out, r->file, l), 0);

                if (l->n_errors != r->n_errors || l->n_warnings != r->n_warnings) {
                        print_error("%s: %zu errors, %zu warnings; want %zu, %zu\n%s", r->file,
                                    l->n_errors, l->n_warnings, r->n_errors, r->n_warnings,
                                    strbuf_str(&out));
                        failures++;
                }
                ids = strdupa(r->ids);
                for (char *id = strtok_r(ids, " ", &save); id; id = strtok_r(NULL, " ", &save))
                        if (!has_finding(l, id)) {
                                print_error("%s: no finding %s\n%s", r->file, id, strbuf_str(&out));
                                failures++;
                        }

                if (update) {
                        FILE *f = fopen(exp_path, "we");
                        assert_non_null(f);
                        fputs(strbuf_str(&out), f);
                        assert_int_equal(fclose(f), 0);
                } else if (read_file_at(AT_FDCWD, exp_path, 0, 1u << 20, &expected, &elen) < 0) {
                        print_error("%s: cannot read %s\n", r->file, exp_path);
                        failures++;
                } else if (!streq(expected, strbuf_str(&out))) {
                        print_error("%s: report differs from %s:\n--- got\n%s--- expected\n%s",
                                    r->file, exp_path, strbuf_str(&out), expected);
                        failures++;
                }
                strbuf_done(&out);
        }
        assert_int_equal(failures, 0);
}

static void test_oversized(void **state) {
        _cleanup_(lint_freep) Lint *l = NULL;

        assert_int_equal(lint_oversized(&l), 0);
        assert_int_equal(l->n_errors, 1);
        assert_string_equal(l->findings[0].id, "too-large");
        assert_non_null(strstr(l->findings[0].message, "1048576"));
}

static void test_no_values_in_messages(void **state) {
        /* Values may be secrets: no finding may quote one. */
        static const char conf[] = "https_proxy=http://user:s3cr3t@proxy\n"
                                   "https_proxy=http://user:s3cr3t@other\n"
                                   "ENROOT_DATA_PATH=$(cat s3cr3t)\nENROOT_MOUNT_HOME=s3cr3t0\n";
        _cleanup_(document_freep) Document *d = NULL;
        _cleanup_(lint_freep) Lint *l = NULL;

        assert_int_equal(document_parse(DOC_CONF, conf, sizeof(conf) - 1, &d), 0);
        assert_int_equal(lint_document(d, NULL, &l), 0);
        assert_true(l->n_findings >= 2);
        for (size_t i = 0; i < l->n_findings; i++)
                assert_null(strstr(l->findings[i].message, "s3cr3t"));
}

static void test_no_value_named_as_key(void **state) {
        /* enroot reads one line at a time: the second line of a value quoted
         * across two starts with part of the value, which is no key to name.
         * Nor may a control byte of the file reach the terminal. */
        static const char conf[] = "https_proxy=\"http://user:\n"
                                   "s3cr3t@proxy\"\n"
                                   "NO_SUCH\033]0;x\007=1\n"
                                   "\033[2J=1\n";
        _cleanup_(document_freep) Document *d = NULL;
        _cleanup_(lint_freep) Lint *l = NULL;
        unsigned ignored = 0;

        assert_int_equal(document_parse(DOC_CONF, conf, sizeof(conf) - 1, &d), 0);
        assert_int_equal(lint_document(d, NULL, &l), 0);
        for (size_t i = 0; i < l->n_findings; i++) {
                const Finding *f = &l->findings[i];

                assert_null(strstr(f->message, "s3cr3t"));
                assert_true(!f->key || !strstr(f->key, "s3cr3t"));
                for (const char *p = f->message; *p; p++)
                        assert_false((unsigned char) *p < 0x20 || *p == 0x7f);
                if (streq(f->id, "ignored-line")) {
                        assert_null(f->key);
                        assert_non_null(strstr(f->message, "does not start with a key"));
                        ignored++;
                }
        }
        assert_int_equal(ignored, 3);
}

static void test_long_key(void **state) {
        size_t n = 100000;
        _cleanup_free_ char *conf = malloc(n + 8);
        _cleanup_(document_freep) Document *d = NULL;
        _cleanup_(lint_freep) Lint *l = NULL;

        assert_non_null(conf);
        memcpy(conf, "ENROOT_", 7);
        memset(conf + 7, 'X', n - 7);
        memcpy(conf + n, "=1\n", 4);
        assert_int_equal(document_parse(DOC_CONF, conf, n + 3, &d), 0);
        assert_int_equal(lint_document(d, NULL, &l), 0);
        assert_int_equal(l->n_findings, 1);
        assert_string_equal(l->findings[0].id, "unknown-key");
        assert_int_equal(strlen(l->findings[0].key), LINT_MAX_KEY_BYTES);
        assert_int_equal(strlen(l->findings[0].message), LINT_MAX_MESSAGE_BYTES);
        assert_true(endswith(l->findings[0].message, "..."));
}

static void test_empty(void **state) {
        _cleanup_(document_freep) Document *d = NULL;
        _cleanup_(lint_freep) Lint *l = NULL;

        assert_int_equal(document_parse(DOC_CONF, "", 0, &d), 0);
        assert_int_equal(lint_document(d, NULL, &l), 0);
        assert_int_equal(l->n_findings, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows),
                cmocka_unit_test(test_oversized),
                cmocka_unit_test(test_no_values_in_messages),
                cmocka_unit_test(test_no_value_named_as_key),
                cmocka_unit_test(test_long_key),
                cmocka_unit_test(test_empty),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
