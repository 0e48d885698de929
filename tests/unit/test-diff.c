/* SPDX-License-Identifier: Apache-2.0 */
/* Desired against running, as enroot sees them: one row per rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "diff.h"
#include "strbuf.h"

typedef struct Row {
        const char *name;
        DocType type;
        const char *desired;
        const char *running;
        DiffVerdict verdict;
        const char *keys; /* "KEY:change:effective|cosmetic ..." in key order, exactly */
} Row;

static const Row rows[] = {
        {"identical", DOC_CONF, "ENROOT_MOUNT_HOME=yes\n", "ENROOT_MOUNT_HOME=yes\n", DIFF_SAME,
         ""},
        {"comment only", DOC_CONF, "# new\nENROOT_MOUNT_HOME=yes\n", "ENROOT_MOUNT_HOME=yes\n",
         DIFF_COSMETIC, ""},
        {"order", DOC_CONF, "ENROOT_A_B=1\nENROOT_C_D=2\n", "ENROOT_C_D=2\nENROOT_A_B=1\n",
         DIFF_COSMETIC, ""},
        {"K V vs K=V", DOC_CONF, "ENROOT_DATA_PATH /d\n", "ENROOT_DATA_PATH=/d\n", DIFF_COSMETIC,
         ""},
        {"spacing", DOC_CONF, "ENROOT_DATA_PATH = /d  \n", "ENROOT_DATA_PATH=/d\n", DIFF_COSMETIC,
         ""},
        {"quoting", DOC_CONF, "ENROOT_DATA_PATH=\"/d\"\n", "ENROOT_DATA_PATH=/d\n", DIFF_COSMETIC,
         "ENROOT_DATA_PATH:changed:cosmetic"},
        {"inline comment", DOC_CONF, "ENROOT_DATA_PATH=/d # x\n", "ENROOT_DATA_PATH=/d\n",
         DIFF_COSMETIC, "ENROOT_DATA_PATH:changed:cosmetic"},
        {"losing duplicate", DOC_CONF, "ENROOT_DATA_PATH=/d\nENROOT_DATA_PATH=/e\n",
         "ENROOT_DATA_PATH=/d\n", DIFF_COSMETIC, "ENROOT_DATA_PATH:changed:cosmetic"},
        {"boolean yes variants", DOC_CONF, "ENROOT_MOUNT_HOME=yes\n", "ENROOT_MOUNT_HOME=y\n",
         DIFF_COSMETIC, "ENROOT_MOUNT_HOME:changed:cosmetic"},
        {"boolean 1 is yes", DOC_CONF, "ENROOT_MOUNT_HOME=1\n", "ENROOT_MOUNT_HOME=true\n",
         DIFF_COSMETIC, "ENROOT_MOUNT_HOME:changed:cosmetic"},
        {"false variants", DOC_CONF, "ENROOT_MOUNT_HOME=no\n", "ENROOT_MOUNT_HOME=FALSE\n",
         DIFF_COSMETIC, "ENROOT_MOUNT_HOME:changed:cosmetic"},
        {"yes to no", DOC_CONF, "ENROOT_MOUNT_HOME=no\n", "ENROOT_MOUNT_HOME=yes\n", DIFF_DRIFT,
         "ENROOT_MOUNT_HOME:changed:effective"},
        {"0 is not no", DOC_CONF, "ENROOT_MOUNT_HOME=no\n", "ENROOT_MOUNT_HOME=0\n", DIFF_DRIFT,
         "ENROOT_MOUNT_HOME:changed:effective"},
        {"non-boolean values", DOC_CONF, "ENROOT_DATA_PATH=/a\n", "ENROOT_DATA_PATH=/b\n",
         DIFF_DRIFT, "ENROOT_DATA_PATH:changed:effective"},
        {"added", DOC_CONF, "ENROOT_MOUNT_HOME=yes\nENROOT_REMAP_ROOT=yes\n",
         "ENROOT_MOUNT_HOME=yes\n", DIFF_DRIFT, "ENROOT_REMAP_ROOT:added:effective"},
        {"removed", DOC_CONF, "ENROOT_MOUNT_HOME=yes\n",
         "ENROOT_MOUNT_HOME=yes\nENROOT_REMAP_ROOT=yes\n", DIFF_DRIFT,
         "ENROOT_REMAP_ROOT:removed:effective"},
        {"false vs absent is drift", DOC_CONF, "ENROOT_MOUNT_HOME=no\n", "", DIFF_DRIFT,
         "ENROOT_MOUNT_HOME:added:effective"},
        {"empty vs absent", DOC_CONF, "ENROOT_DATA_PATH=\n", "", DIFF_COSMETIC,
         "ENROOT_DATA_PATH:added:cosmetic"},
        {"ignored key changes nothing", DOC_CONF, "NCCL_DEBUG=INFO\nENROOT_MOUNT_HOME=yes\n",
         "ENROOT_MOUNT_HOME=yes\n", DIFF_COSMETIC, ""},
        /* enroot's loader skips MELLANOX_* and NVIDIA_* lines (docs/DESIGN.md §5) */
        {"MELLANOX value changes nothing", DOC_CONF,
         "MELLANOX_VISIBLE_DEVICES=none\nENROOT_MOUNT_HOME=yes\n",
         "MELLANOX_VISIBLE_DEVICES=all\nENROOT_MOUNT_HOME=yes\n", DIFF_COSMETIC, ""},
        {"NVIDIA line added changes nothing", DOC_CONF,
         "NVIDIA_DRIVER_CAPABILITIES=compute,utility\nENROOT_MOUNT_HOME=yes\n",
         "ENROOT_MOUNT_HOME=yes\n", DIFF_COSMETIC, ""},
        {"NVIDIA line removed changes nothing", DOC_CONF, "ENROOT_MOUNT_HOME=yes\n",
         "NVIDIA_VISIBLE_DEVICES=all\nENROOT_MOUNT_HOME=yes\n", DIFF_COSMETIC, ""},
        {"NVIDIA beside a real change", DOC_CONF,
         "NVIDIA_VISIBLE_DEVICES=void\nENROOT_MOUNT_HOME=no\n",
         "NVIDIA_VISIBLE_DEVICES=all\nENROOT_MOUNT_HOME=yes\n", DIFF_DRIFT,
         "ENROOT_MOUNT_HOME:changed:effective"},
        {"export line changes nothing", DOC_CONF,
         "export ENROOT_MOUNT_HOME=no\nENROOT_MOUNT_HOME=yes\n", "ENROOT_MOUNT_HOME=yes\n",
         DIFF_COSMETIC, ""},
        {"live shell same text", DOC_CONF, "ENROOT_DATA_PATH=$HOME/d\n# c\n",
         "ENROOT_DATA_PATH=$HOME/d\n", DIFF_COSMETIC, ""},
        {"live shell other text", DOC_CONF, "ENROOT_DATA_PATH=$HOME/d\n",
         "ENROOT_DATA_PATH=${HOME}/d\n", DIFF_DRIFT, "ENROOT_DATA_PATH:changed:effective"},
        {"live shell fallback differs", DOC_CONF, "ENROOT_DATA_PATH=$X\nENROOT_DATA_PATH=/a\n",
         "ENROOT_DATA_PATH=$X\nENROOT_DATA_PATH=/b\n", DIFF_DRIFT,
         "ENROOT_DATA_PATH:changed:effective"},
        {"unterminated last line", DOC_CONF, "ENROOT_MOUNT_HOME=yes\n", "ENROOT_MOUNT_HOME=yes",
         DIFF_DRIFT, "ENROOT_MOUNT_HOME:added:effective"},
        {"refused running", DOC_CONF, "ENROOT_MOUNT_HOME=yes\n",
         "ENROOT_MOUNT_HOME=yes\nENROOT_DATA_PATH=\"/d\n", DIFF_DRIFT,
         "ENROOT_DATA_PATH:removed:effective"},
        {"CRLF is drift", DOC_CONF, "ENROOT_DATA_PATH=/d\n", "ENROOT_DATA_PATH=/d\r\n", DIFF_DRIFT,
         "ENROOT_DATA_PATH:changed:effective"},

        {"env identical", DOC_ENV, "NCCL_DEBUG=WARN\n", "NCCL_DEBUG=WARN\n", DIFF_SAME, ""},
        {"env quotes", DOC_ENV, "NCCL_DEBUG=\"WARN\"\n", "NCCL_DEBUG=WARN\n", DIFF_COSMETIC,
         "NCCL_DEBUG:changed:cosmetic"},
        {"env changed", DOC_ENV, "NCCL_DEBUG=INFO\n", "NCCL_DEBUG=WARN\n", DIFF_DRIFT,
         "NCCL_DEBUG:changed:effective"},
        {"env later wins", DOC_ENV, "NCCL_DEBUG=INFO\nNCCL_DEBUG=WARN\n", "NCCL_DEBUG=WARN\n",
         DIFF_COSMETIC, "NCCL_DEBUG:changed:cosmetic"},
        {"env empty is a value", DOC_ENV, "A=\n", "", DIFF_DRIFT, "A:added:effective"},
        {"env dropped line", DOC_ENV, "export A=1\nB=2\n", "B=2\n", DIFF_COSMETIC, ""},
        {"env ENROOT_ dropped", DOC_ENV, "ENROOT_MOUNT_HOME=no\nB=2\n", "B=2\n", DIFF_COSMETIC, ""},
        {"env inline comment matters", DOC_ENV, "A=1 # c\n", "A=1\n", DIFF_DRIFT,
         "A:changed:effective"},
        {"env ${NAME} same text", DOC_ENV, "A=${HOME}\n", "A=${HOME}\n", DIFF_SAME, ""},
        {"env ${NAME} other text", DOC_ENV, "A=${HOME}\n", "A=${USER}\n", DIFF_DRIFT,
         "A:changed:effective"},
        {"env last line without newline", DOC_ENV, "A=1\n", "A=1", DIFF_COSMETIC, ""},
};

static void render(const Diff *d, StrBuf *b) {
        for (size_t i = 0; i < d->n_keys; i++)
                assert_int_equal(strbuf_printf(b, "%s%s:%s:%s", i ? " " : "", d->keys[i].key,
                                               diff_change_to_string(d->keys[i].change),
                                               d->keys[i].effective ? "effective" : "cosmetic"),
                                 0);
}

static void test_rows(void **state) {
        unsigned failures = 0;

        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                const Row *r = &rows[i];
                _cleanup_(document_freep) Document *a = NULL, *b = NULL;
                _cleanup_(diff_freep) Diff *d = NULL;
                StrBuf keys = STRBUF_INIT(4096);

                assert_int_equal(document_parse(r->type, r->desired, strlen(r->desired), &a), 0);
                assert_int_equal(document_parse(r->type, r->running, strlen(r->running), &b), 0);
                assert_int_equal(diff_documents(a, b, &d), 0);
                render(d, &keys);

                if (d->verdict != r->verdict || !streq(strbuf_str(&keys), r->keys)) {
                        print_error("%s: %s [%s], want %s [%s]\n", r->name,
                                    diff_verdict_to_string(d->verdict), strbuf_str(&keys),
                                    diff_verdict_to_string(r->verdict), r->keys);
                        failures++;
                }
                strbuf_done(&keys);
        }
        assert_int_equal(failures, 0);
}

static void test_type_mismatch(void **state) {
        _cleanup_(document_freep) Document *a = NULL, *b = NULL;
        Diff *d = NULL;

        assert_int_equal(document_parse(DOC_CONF, "", 0, &a), 0);
        assert_int_equal(document_parse(DOC_ENV, "", 0, &b), 0);
        assert_int_equal(diff_documents(a, b, &d), -EINVAL);
        assert_null(d);
}

static void test_counts(void **state) {
        static const char a[] = "ENROOT_A_A=1\nENROOT_B_B=1\nENROOT_C_C=1\n";
        static const char b[] = "ENROOT_B_B=2\nENROOT_C_C=1\nENROOT_D_D=1\nENROOT_E_E=1\n";
        _cleanup_(document_freep) Document *x = NULL, *y = NULL;
        _cleanup_(diff_freep) Diff *d = NULL;

        assert_int_equal(document_parse(DOC_CONF, a, sizeof(a) - 1, &x), 0);
        assert_int_equal(document_parse(DOC_CONF, b, sizeof(b) - 1, &y), 0);
        assert_int_equal(diff_documents(x, y, &d), 0);
        assert_int_equal(d->n_changes[CHANGE_ADDED], 1);
        assert_int_equal(d->n_changes[CHANGE_REMOVED], 2);
        assert_int_equal(d->n_changes[CHANGE_CHANGED], 1);
        assert_int_equal(d->n_effective, 4);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows),
                cmocka_unit_test(test_type_mismatch),
                cmocka_unit_test(test_counts),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
