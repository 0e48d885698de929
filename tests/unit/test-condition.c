/* SPDX-License-Identifier: Apache-2.0 */
/* The pod condition: one row per status and reason, the patch, the event. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "condition.h"

typedef struct FileRow {
        const char *key;
        FileState state;
        bool superseded;
        const char *changed; /* an effective changed key, or NULL */
        const char *detail;
} FileRow;

typedef struct Row {
        const char *name;
        bool evaluated, desired_ok, running_ok;
        FileRow files[2];
        ConditionStatus status;
        const char *reason;
        const char *message; /* exact */
} Row;

static const Row rows[] = {
        {"not evaluated",
         false,
         true,
         true,
         {},
         CONDITION_UNKNOWN,
         "NotYetEvaluated",
         "The agent has not compared the files yet."},
        {"all current",
         true,
         true,
         true,
         {{"enroot.conf", FILE_CURRENT}, {"99-aicr-defaults.env", FILE_CURRENT}},
         CONDITION_TRUE,
         "ConfigCurrent",
         "enroot.conf current; 99-aicr-defaults.env current."},
        {"cosmetic",
         true,
         true,
         true,
         {{"enroot.conf", FILE_COSMETIC}, {"99-aicr-defaults.env", FILE_CURRENT}},
         CONDITION_TRUE,
         "CosmeticDifferencesOnly",
         "enroot.conf cosmetic; 99-aicr-defaults.env current."},
        {"superseded but equal",
         true,
         true,
         true,
         {{"enroot.conf", FILE_CURRENT, true}, {"99-aicr-defaults.env", FILE_CURRENT}},
         CONDITION_TRUE,
         "SupersededMountUnchanged",
         "enroot.conf current, mounted from superseded ConfigMap version ..v1; "
         "99-aicr-defaults.env current."},
        {"drifted",
         true,
         true,
         true,
         {{"enroot.conf", FILE_DRIFTED, true, "ENROOT_MOUNT_HOME"},
          {"99-aicr-defaults.env", FILE_CURRENT}},
         CONDITION_FALSE,
         "ConfigDrifted",
         "enroot.conf drifted (changed: ENROOT_MOUNT_HOME), mounted from superseded ConfigMap "
         "version ..v1; 99-aicr-defaults.env current. Replace the pod to run the ConfigMap's "
         "configuration."},
        {"drift beats doubt",
         true,
         true,
         true,
         {{"enroot.conf", FILE_MISSING, false, NULL, "/etc/enroot/enroot.conf does not exist"},
          {"99-aicr-defaults.env", FILE_DRIFTED, false, "NCCL_DEBUG"}},
         CONDITION_FALSE,
         "ConfigDrifted",
         "enroot.conf missing: /etc/enroot/enroot.conf does not exist; 99-aicr-defaults.env "
         "drifted (changed: NCCL_DEBUG). Replace the pod to run the ConfigMap's configuration."},
        {"invalid",
         true,
         true,
         true,
         {{"enroot.conf", FILE_INVALID, false, NULL, "1 lint error"},
          {"99-aicr-defaults.env", FILE_CURRENT}},
         CONDITION_UNKNOWN,
         "ConfigMapInvalid",
         "enroot.conf invalid: 1 lint error; 99-aicr-defaults.env current."},
        {"unreadable",
         true,
         true,
         true,
         {{"enroot.conf", FILE_UNREADABLE, false, NULL, "permission denied"}},
         CONDITION_UNKNOWN,
         "FileUnreadable",
         "enroot.conf unreadable: permission denied."},
        {"running unobservable",
         true,
         true,
         false,
         {{"enroot.conf", FILE_UNKNOWN, false, NULL, "no process named \"slurmd\""}},
         CONDITION_UNKNOWN,
         "RunningFilesUnobservable",
         "enroot.conf unknown: no process named \"slurmd\"."},
        {"desired unobservable",
         true,
         false,
         true,
         {{"enroot.conf", FILE_UNREADABLE, false, NULL, "gone"}},
         CONDITION_UNKNOWN,
         "ConfigMapUnreadable",
         "enroot.conf unreadable: gone."},
        /* Any other key is raw, and the message says so. */
        {"raw current on a superseded mount",
         true,
         true,
         true,
         {{"nginx.conf", FILE_CURRENT, true}, {"enroot.conf", FILE_CURRENT}},
         CONDITION_TRUE,
         "SupersededMountUnchanged",
         "nginx.conf (raw) current, mounted from superseded ConfigMap version ..v1; enroot.conf "
         "current."},
        {"raw drifted",
         true,
         true,
         true,
         {{"nginx.conf", FILE_DRIFTED}, {"99-aicr-defaults.env", FILE_CURRENT}},
         CONDITION_FALSE,
         "ConfigDrifted",
         "nginx.conf (raw) drifted; 99-aicr-defaults.env current. Replace the pod to run the "
         "ConfigMap's configuration."},
};

static Report *make_report(const Row *row) {
        Report *r = calloc(1, sizeof(Report));

        assert_non_null(r);
        r->evaluated = row->evaluated;
        r->observable[SIDE_DESIRED] = row->desired_ok;
        r->observable[SIDE_RUNNING] = row->running_ok;
        r->files = calloc(2, sizeof(FileReport));
        assert_non_null(r->files);
        for (size_t i = 0; i < 2 && row->files[i].key; i++) {
                const FileRow *f = &row->files[i];
                FileReport *x = &r->files[r->n_files++];

                x->key = strdup(f->key);
                x->format = file_format_for_key(f->key);
                x->state = f->state;
                x->superseded = f->superseded;
                x->mount_version = f->superseded ? strdup("..v1") : NULL;
                x->detail = f->detail ? strdup(f->detail) : NULL;
                if (f->changed) {
                        x->changes = calloc(1, sizeof(KeyChange));
                        x->changes[0] = (KeyChange){.key = strdup(f->changed),
                                                    .change = CHANGE_CHANGED,
                                                    .effective = true};
                        x->n_changes = 1;
                        x->n_drifted_keys = 1;
                }
        }
        return r;
}

static void test_rows(void **state) {
        unsigned failures = 0;

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_(report_freep) Report *r = make_report(&rows[i]);
                _cleanup_(condition_done) Condition c = {};

                assert_int_equal(condition_from_report(r, CONDITION_DEFAULT_TYPE, &c), 0);
                if (c.status != rows[i].status || !streq(c.reason, rows[i].reason) ||
                    !streq(c.message, rows[i].message)) {
                        print_error("%s: %s %s \"%s\"\n  want %s %s \"%s\"\n", rows[i].name,
                                    condition_status_to_string(c.status), c.reason, c.message,
                                    condition_status_to_string(rows[i].status), rows[i].reason,
                                    rows[i].message);
                        failures++;
                }
        }
        assert_int_equal(failures, 0);
}

static void test_null_report(void **state) {
        _cleanup_(condition_done) Condition c = {};

        assert_int_equal(condition_from_report(NULL, "EnrootConfigCurrent", &c), 0);
        assert_int_equal(c.status, CONDITION_UNKNOWN);
}

static void test_message_bounded(void **state) {
        Row row = rows[4];
        _cleanup_(report_freep) Report *r = NULL;
        _cleanup_(condition_done) Condition c = {};
        char key[300];

        r = make_report(&row);
        /* 40 drifted keys with long names: the message stays bounded and says so */
        free(r->files[0].changes[0].key);
        free(r->files[0].changes);
        r->files[0].changes = calloc(40, sizeof(KeyChange));
        for (size_t i = 0; i < 40; i++) {
                (void) snprintf(key, sizeof key, "ENROOT_%0200zu", i);
                r->files[0].changes[i] =
                        (KeyChange){.key = strdup(key), .change = CHANGE_ADDED, .effective = true};
        }
        r->files[0].n_changes = 40;
        assert_int_equal(condition_from_report(r, CONDITION_DEFAULT_TYPE, &c), 0);
        assert_true(strlen(c.message) <= CONDITION_MAX_MESSAGE_BYTES);
        assert_non_null(strstr(c.message, "more file(s)"));
        assert_true(endswith(c.message, "configuration."));
}

static void test_matches_and_patch(void **state) {
        _cleanup_(report_freep) Report *r = make_report(&rows[4]);
        _cleanup_(condition_done) Condition c = {};
        json_t *conds, *patch, *x;
        json_error_t e;

        assert_int_equal(condition_from_report(r, CONDITION_DEFAULT_TYPE, &c), 0);
        conds = json_loads("[{\"type\":\"Ready\",\"status\":\"True\"},"
                           "{\"type\":\"EnrootConfigCurrent\",\"status\":\"False\","
                           "\"reason\":\"ConfigDrifted\",\"message\":\"old\","
                           "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]",
                           0, &e);
        assert_non_null(conds);
        assert_false(condition_matches(conds, &c));

        /* same status: lastTransitionTime is kept */
        patch = condition_patch(&c, "uid-1", conds, 1796224032000000ull);
        assert_non_null(patch);
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(patch, "metadata"), "uid")),
                "uid-1");
        x = json_array_get(json_object_get(json_object_get(patch, "status"), "conditions"), 0);
        assert_string_equal(json_string_value(json_object_get(x, "type")), "EnrootConfigCurrent");
        assert_string_equal(json_string_value(json_object_get(x, "status")), "False");
        assert_string_equal(json_string_value(json_object_get(x, "lastTransitionTime")),
                            "2026-01-01T00:00:00Z");
        assert_string_equal(json_string_value(json_object_get(x, "lastProbeTime")),
                            "2026-12-02T15:07:12Z");
        /* only this condition is in the patch: the others stay as they are */
        assert_int_equal(
                json_array_size(json_object_get(json_object_get(patch, "status"), "conditions")),
                1);
        json_decref(patch);

        /* after the patch the pod says it: nothing more to write */
        json_object_set_new(json_array_get(conds, 1), "message", json_string(c.message));
        assert_true(condition_matches(conds, &c));

        /* status change: a new lastTransitionTime */
        json_object_set_new(json_array_get(conds, 1), "status", json_string("True"));
        assert_false(condition_matches(conds, &c));
        patch = condition_patch(&c, "uid-1", conds, 1796224032000000ull);
        x = json_array_get(json_object_get(json_object_get(patch, "status"), "conditions"), 0);
        assert_string_equal(json_string_value(json_object_get(x, "lastTransitionTime")),
                            "2026-12-02T15:07:12Z");
        json_decref(patch);

        /* no condition yet, or no list at all */
        patch = condition_patch(&c, "uid-1", NULL, 1796224032000000ull);
        assert_non_null(patch);
        json_decref(patch);
        assert_false(condition_matches(NULL, &c));
        json_decref(conds);
}

static void test_event(void **state) {
        _cleanup_(report_freep) Report *r = make_report(&rows[4]);
        _cleanup_(condition_done) Condition c = {};
        json_t *ev;

        assert_int_equal(condition_from_report(r, CONDITION_DEFAULT_TYPE, &c), 0);
        ev = condition_event(&c, "worker-0", "slurm", "uid-1", "aicr-enroot-agent",
                             1796224032000000ull);
        assert_non_null(ev);
        assert_string_equal(json_string_value(json_object_get(ev, "type")), "Warning");
        assert_string_equal(json_string_value(json_object_get(ev, "reason")), "ConfigDrifted");
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(ev, "involvedObject"), "uid")),
                "uid-1");
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(ev, "metadata"), "namespace")),
                "slurm");
        json_decref(ev);
}

static void test_type_names(void **state) {
        static const char *const good[] = {"EnrootConfigCurrent", "a", "x.y-z_1",
                                           "example.com/EnrootConfigCurrent", NULL};
        static const char *const bad[] = {"",
                                          "-a",
                                          "a-",
                                          "a b",
                                          "Example.com/x",
                                          "/x",
                                          "a/",
                                          "a/b/c",
                                          "x234567890123456789012345678901234567890123"
                                          "456789012345678901234",
                                          NULL};

        for (const char *const *t = good; *t; t++)
                if (!condition_type_is_valid(*t))
                        fail_msg("\"%s\" should be valid", *t);
        for (const char *const *t = bad; *t; t++)
                if (condition_type_is_valid(*t))
                        fail_msg("\"%s\" should be invalid", *t);
}

/* --condition-detail counts: no key, setting, path or detail in the
 * message, only counts; the status and reason are the same as with names. */
static void test_counts_only(void **state) {
        static const FileRow secret_files[2] = {
                {"tls.key", FILE_DRIFTED, true, "NOT_A_SECRET_NAME", "x"},
                {"ca.crt", FILE_CURRENT, false, NULL, NULL},
        };
        Row row = {"counts", true, true, true, {}, CONDITION_FALSE, "ConfigDrifted", ""};
        _cleanup_(report_freep) Report *r = NULL;
        _cleanup_(condition_done) Condition names = {}, counts = {}, none = {};

        memcpy(row.files, secret_files, sizeof secret_files);
        r = make_report(&row);
        assert_int_equal(condition_from_report_detail(r, CONDITION_DEFAULT_TYPE, false, &names), 0);
        assert_non_null(strstr(names.message, "tls.key"));
        assert_int_equal(condition_from_report_detail(r, CONDITION_DEFAULT_TYPE, true, &counts), 0);
        assert_int_equal(counts.status, names.status);
        assert_string_equal(counts.reason, names.reason);
        assert_string_equal(counts.message,
                            "2 files: 1 current, 1 drifted; 1 mounted from a superseded "
                            "ConfigMap version. Replace the pod to run the ConfigMap's "
                            "configuration.");
        assert_null(strstr(counts.message, "tls"));
        assert_null(strstr(counts.message, "ca.crt"));
        assert_null(strstr(counts.message, "NOT_A_SECRET_NAME"));

        /* nothing evaluated yet reads the same either way */
        assert_int_equal(condition_from_report_detail(NULL, CONDITION_DEFAULT_TYPE, true, &none),
                         0);
        assert_string_equal(none.message, "The agent has not compared the files yet.");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows),
                cmocka_unit_test(test_null_report),
                cmocka_unit_test(test_message_bounded),
                cmocka_unit_test(test_matches_and_patch),
                cmocka_unit_test(test_event),
                cmocka_unit_test(test_type_names),
                cmocka_unit_test(test_counts_only),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
