/* SPDX-License-Identifier: Apache-2.0 */
/* The rollout's checks: the ConfigMap's Helm release, and a job's
 * environment against 99-aicr-defaults.env as enroot reads it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rollout-verify.h"

typedef struct OwnerRow {
        const char *name;
        const char *json;
        int ret;
        const char *found;
} OwnerRow;

static const OwnerRow owner_rows[] = {
        {"the release's",
         "{\"metadata\":{\"annotations\":{\"meta.helm.sh/release-name\":"
         "\"slinky-slurm-pre\"}}}",
         0, NULL},
        {"another release's",
         "{\"metadata\":{\"annotations\":{\"meta.helm.sh/release-name\":\"slinky-slurm\"}}}",
         -EPERM, "slinky-slurm"},
        {"no annotations", "{\"metadata\":{\"name\":\"x\"}}", -ENOENT, NULL},
        {"only the namespace annotation",
         "{\"metadata\":{\"annotations\":{\"meta.helm.sh/release-namespace\":\"slurm\"}}}", -ENOENT,
         NULL},
        {"not a string", "{\"metadata\":{\"annotations\":{\"meta.helm.sh/release-name\":1}}}",
         -ENOENT, NULL},
};

static void test_owner(void **state) {
        (void) state;
        for (size_t i = 0; i < sizeof owner_rows / sizeof owner_rows[0]; i++) {
                const OwnerRow *row = &owner_rows[i];
                json_t *cm = json_loads(row->json, 0, NULL);
                const char *found = NULL;

                assert_non_null(cm);
                printf("# %s\n", row->name);
                assert_int_equal(rollout_configmap_owner(cm, "slinky-slurm-pre", &found), row->ret);
                if (row->found)
                        assert_string_equal(found, row->found);
                else
                        assert_null(found);
                json_decref(cm);
        }
}

typedef struct EnvRow {
        const char *name;
        const char *desired, *job;
        const char *differ, *missing, *dynamic; /* keys joined by ' ' */
        size_t same;
} EnvRow;

static const EnvRow env_rows[] = {
        {"all as desired", "A=1\nB=two\n", "PATH=/bin\nB=two\nA=1\n", "", "", "", 2},
        /* enroot strips one pair of quotes; a later line wins */
        {"quotes stripped, last line wins", "A=\"1\"\nB='x'\nB=y\n", "A=1\nB=y\n", "", "", "", 2},
        {"one differs, one missing", "A=1\nB=2\n", "A=10\n", "A", "B", "", 0},
        /* a line that is not NAME=... continues the value before it */
        {"a job value over lines", "A=1\nB=2\n", "A=1\nB=2\nline two\n", "B", "", "", 1},
        /* ENROOT_ and malformed lines are dropped: nothing to see */
        {"dropped lines", "ENROOT_X=1\n-bad\nA=1\n", "A=1\n", "", "", "", 1},
        {"${NAME}: not compared", "P=${HOME}/x\nA=1\n", "A=1\n", "", "", "P", 1},
        {"an empty value", "A=\n", "A=\n", "", "", "", 1},
        {"an empty value, absent", "A=\n", "B=1\n", "", "A", "", 0},
        {"a prefix is not the key", "AB=1\n", "A=1\nABC=1\n", "", "AB", "", 0},
        {"no trailing newline", "A=1\n", "A=1", "", "", "", 1},
};

static void expect_keys(char **keys, size_t n, const char *want) {
        char buf[256] = "";

        for (size_t i = 0; i < n; i++) {
                if (i)
                        strcat(buf, " ");
                strcat(buf, keys[i]);
        }
        assert_string_equal(buf, want);
}

static void test_env(void **state) {
        (void) state;
        for (size_t i = 0; i < sizeof env_rows / sizeof env_rows[0]; i++) {
                const EnvRow *row = &env_rows[i];
                RolloutEnvCheck c = {};

                printf("# %s\n", row->name);
                assert_int_equal(rollout_env_verify(row->desired, strlen(row->desired), row->job,
                                                    strlen(row->job), &c),
                                 0);
                expect_keys(c.differ, c.n_differ, row->differ);
                expect_keys(c.missing, c.n_missing, row->missing);
                expect_keys(c.dynamic, c.n_dynamic, row->dynamic);
                assert_int_equal(c.n_same, row->same);
                rollout_env_check_done(&c);
        }
}

/* An environment over ROLLOUT_VERIFY_MAX_ENV_BYTES is refused, not read. */
static void test_env_limit(void **state) {
        size_t n = ROLLOUT_VERIFY_MAX_ENV_BYTES + 1;
        char *big = malloc(n);
        RolloutEnvCheck c = {};

        (void) state;
        assert_non_null(big);
        memset(big, 'x', n);
        memcpy(big, "A=", 2);
        assert_int_equal(rollout_env_verify("A=1\n", 4, big, n, &c), -EFBIG);
        assert_int_equal(rollout_env_verify("A=1\n", 4, big, n - 1, &c), 0);
        assert_int_equal(c.n_differ, 1);
        rollout_env_check_done(&c);
        free(big);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_owner),
                cmocka_unit_test(test_env),
                cmocka_unit_test(test_env_limit),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
