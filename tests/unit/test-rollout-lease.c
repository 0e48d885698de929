/* SPDX-License-Identifier: Apache-2.0 */
/* The rollout's Lease: reading it, whose it is, and the record of steps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rollout-lease.h"

#define REC(steps)                                                                                 \
        "{\\\"id\\\":\\\"20261202T180512Z\\\",\\\"state\\\":\\\"running\\\",\\\"steps\\\":[" steps \
        "]}"
#define LEASE(spec, annotation)                                                                \
        "{\"metadata\":{\"name\":\"aicr-enroot-rollout\",\"resourceVersion\":\"7\"" annotation \
        "},\"spec\":{" spec "}}"
#define ANN(rec) ",\"annotations\":{\"aicr-enroot-agent/rollout\":\"" rec "\"}"
#define HELD(who, renew) \
        "\"holderIdentity\":\"" who "\",\"leaseDurationSeconds\":30,\"renewTime\":\"" renew "\""

/* 2026-12-02T18:05:12Z */
#define T0 1796234712
#define S  INT64_C(1000000)

typedef struct ParseRow {
        const char *name;
        const char *json;
        int ret;
        const char *error; /* substring, on failure */
        const char *holder;
        int64_t renew_usec;
        bool record;
        LeaseOwner owner_at_t0, owner_later; /* for "me", at T0 + 10 s and T0 + 31 s */
} ParseRow;

static const ParseRow parse_rows[] = {
        {"held, renewed at T0", LEASE(HELD("other", "2026-12-02T18:05:12.000000Z"), ANN(REC(""))),
         0, NULL, "other", T0 *S, true, LEASE_HELD, LEASE_EXPIRED},
        {"ours", LEASE(HELD("me", "2026-12-02T18:05:12.5Z"), ANN(REC(""))), 0, NULL, "me",
         T0 *S + 500000, true, LEASE_OURS, LEASE_OURS},
        {"released: no holder", LEASE("\"leaseDurationSeconds\":30", ANN(REC(""))), 0, NULL, NULL,
         0, true, LEASE_FREE, LEASE_FREE},
        {"empty holder is none", LEASE("\"holderIdentity\":\"\"", ""), 0, NULL, NULL, 0, false,
         LEASE_FREE, LEASE_FREE},
        {"no renewal time: acquireTime counts",
         LEASE("\"holderIdentity\":\"other\",\"leaseDurationSeconds\":30,\"acquireTime\":\"2026-12-"
               "02T18:05:12Z\"",
               ""),
         0, NULL, "other", T0 *S, false, LEASE_HELD, LEASE_EXPIRED},
        {"no duration never expires",
         LEASE("\"holderIdentity\":\"other\",\"renewTime\":\"2026-12-02T18:05:12Z\"", ""), 0, NULL,
         "other", T0 *S, false, LEASE_HELD, LEASE_HELD},
        {"steps of each kind",
         LEASE(HELD("other", "2026-12-02T18:05:12Z"),
               ANN(REC("{\\\"step\\\":\\\"drain\\\",\\\"node\\\":\\\"n0\\\"},"
                       "{\\\"step\\\":\\\"delete\\\",\\\"pod\\\":\\\"p0\\\",\\\"uid\\\":\\\"u0\\\","
                       "\\\"role\\\":\\\"worker\\\",\\\"node\\\":\\\"n0\\\"},"
                       "{\\\"step\\\":\\\"ready\\\",\\\"pod\\\":\\\"p0\\\",\\\"uid\\\":\\\"u0\\\"},"
                       "{\\\"step\\\":\\\"resume\\\",\\\"node\\\":\\\"n0\\\"},"
                       "{\\\"step\\\":\\\"verify\\\",\\\"node\\\":\\\"n0\\\",\\\"result\\\":"
                       "\\\"verified\\\"}"))),
         0, NULL, "other", T0 *S, true, LEASE_HELD, LEASE_EXPIRED},
        {"no resourceVersion", "{\"metadata\":{\"name\":\"x\"},\"spec\":{}}", -EBADMSG,
         "resourceVersion", NULL, 0, false, 0, 0},
        {"record not JSON", LEASE(HELD("o", "2026-12-02T18:05:12Z"), ANN("{nope")), -EBADMSG,
         "not a JSON object", NULL, 0, false, 0, 0},
        {"record without id",
         LEASE(HELD("o", "2026-12-02T18:05:12Z"),
               ANN("{\\\"state\\\":\\\"running\\\",\\\"steps\\\":[]}")),
         -EBADMSG, "no id", NULL, 0, false, 0, 0},
        {"record with an unknown state",
         LEASE(HELD("o", "2026-12-02T18:05:12Z"),
               ANN("{\\\"id\\\":\\\"x\\\",\\\"state\\\":\\\"odd\\\",\\\"steps\\\":[]}")),
         -EBADMSG, "state", NULL, 0, false, 0, 0},
        {"delete step without its uid",
         LEASE(HELD("o", "2026-12-02T18:05:12Z"),
               ANN(REC("{\\\"step\\\":\\\"delete\\\",\\\"pod\\\":\\\"p0\\\",\\\"role\\\":"
                       "\\\"worker\\\"}"))),
         -EBADMSG, "lacks its fields", NULL, 0, false, 0, 0},
        {"verify step without its result",
         LEASE(HELD("o", "2026-12-02T18:05:12Z"),
               ANN(REC("{\\\"step\\\":\\\"verify\\\",\\\"node\\\":\\\"n0\\\"}"))),
         -EBADMSG, "lacks its fields", NULL, 0, false, 0, 0},
        {"unknown step",
         LEASE(HELD("o", "2026-12-02T18:05:12Z"), ANN(REC("{\\\"step\\\":\\\"zap\\\"}"))), -EBADMSG,
         "lacks its fields", NULL, 0, false, 0, 0},
        {"negative duration", LEASE("\"holderIdentity\":\"o\",\"leaseDurationSeconds\":-1", ""),
         -EBADMSG, "leaseDurationSeconds", NULL, 0, false, 0, 0},
};

static void test_parse(void **state) {
        (void) state;
        for (size_t i = 0; i < sizeof parse_rows / sizeof parse_rows[0]; i++) {
                const ParseRow *row = &parse_rows[i];
                json_t *j = json_loads(row->json, 0, NULL);
                RolloutLease l = {};
                const char *error = NULL;
                int k;

                print_message("%s\n", row->name);
                assert_non_null(j);
                k = rollout_lease_parse(j, &l, &error);
                assert_int_equal(k, row->ret);
                if (k < 0) {
                        assert_non_null(error);
                        assert_non_null(strstr(error, row->error));
                        assert_null(l.holder);
                        json_decref(j);
                        continue;
                }
                assert_string_equal(l.resource_version, "7");
                if (row->holder)
                        assert_string_equal(l.holder, row->holder);
                else
                        assert_null(l.holder);
                assert_int_equal(l.renew_usec, row->renew_usec);
                assert_int_equal(l.record != NULL, row->record);
                assert_int_equal(rollout_lease_owner(&l, "me", (T0 + 10) * S), row->owner_at_t0);
                assert_int_equal(rollout_lease_owner(&l, "me", (T0 + 31) * S), row->owner_later);
                /* exactly at the end of the duration it is still held, a
                 * microsecond later not: the fraction of the renewal counts */
                if (row->owner_at_t0 == LEASE_HELD && row->owner_later == LEASE_EXPIRED) {
                        assert_int_equal(rollout_lease_owner(&l, "me", row->renew_usec + 30 * S),
                                         LEASE_HELD);
                        assert_int_equal(
                                rollout_lease_owner(&l, "me", row->renew_usec + 30 * S + 1),
                                LEASE_EXPIRED);
                }
                rollout_lease_done(&l);
                json_decref(j);
        }
}

/* What is written reads back the same. */
static void test_round_trip(void **state) {
        json_t *rec = rollout_record_new("20261202T180512Z"), *o, *pending;
        RolloutLease l = {};
        char t[ROLLOUT_MICROTIME_BYTES];

        (void) state;
        rollout_microtime_format((uint64_t) T0 * 1000000u + 42u, t);
        assert_string_equal(t, "2026-12-02T18:05:12.000042Z");

        assert_non_null(rec);
        assert_true(rollout_record_running(rec));
        assert_int_equal(
                rollout_record_add(rec, json_pack("{s:s, s:s}", "step", "drain", "node", "n0")), 0);
        assert_int_equal(rollout_record_add(rec, json_pack("{s:s, s:s, s:s, s:s, s:s}", "step",
                                                           "delete", "pod", "p0", "uid", "u0",
                                                           "role", "worker", "node", "n0")),
                         0);
        assert_int_equal(rollout_record_add(rec, json_pack("{s:s, s:s, s:s, s:s, s:s}", "step",
                                                           "delete", "pod", "p1", "uid", "u1",
                                                           "role", "worker", "node", "n1")),
                         0);
        assert_int_equal(rollout_record_add(rec, json_pack("{s:s, s:s, s:s}", "step", "ready",
                                                           "pod", "p0", "uid", "u0")),
                         0);
        assert_true(rollout_record_has(rec, "delete", "pod", "p0", "u0"));
        assert_false(rollout_record_has(rec, "delete", "pod", "p0", "u9"));
        assert_true(rollout_record_has(rec, "drain", "node", "n0", NULL));
        assert_false(rollout_record_has(rec, "drain", "node", "n1", NULL));
        /* p1 was deleted and its replacement not seen; p0's was */
        pending = rollout_record_pending(rec);
        assert_int_equal(json_array_size(pending), 1);
        assert_string_equal(json_string_value(json_object_get(json_array_get(pending, 0), "pod")),
                            "p1");
        json_decref(pending);

        o = rollout_lease_object("slurm", "host_1_2", 30, NULL, (uint64_t) T0 * 1000000u, "5", rec);
        assert_non_null(o);
        assert_int_equal(rollout_lease_parse(o, &l, NULL), 0);
        assert_string_equal(l.holder, "host_1_2");
        assert_string_equal(l.resource_version, "5");
        assert_int_equal(l.duration_sec, 30);
        assert_int_equal(l.renew_usec, T0 * S);
        assert_true(json_equal(l.record, rec));
        assert_string_equal(rollout_record_id(l.record), "20261202T180512Z");
        rollout_lease_done(&l);
        json_decref(o);

        /* released, done: no holder, the record stays */
        assert_int_equal(rollout_record_set_state(rec, "done"), 0);
        assert_false(rollout_record_running(rec));
        o = rollout_lease_object("slurm", NULL, 30, "2026-12-02T18:00:00.000000Z",
                                 (uint64_t) T0 * 1000000u, NULL, rec);
        json_object_set_new(json_object_get(o, "metadata"), "resourceVersion", json_string("6"));
        assert_int_equal(rollout_lease_parse(o, &l, NULL), 0);
        assert_null(l.holder);
        assert_string_equal(l.acquire_time, "2026-12-02T18:00:00.000000Z");
        assert_string_equal(rollout_record_state(l.record), "done");
        rollout_lease_done(&l);
        json_decref(o);
        json_decref(rec);
}

/* The record's limits: steps, and bytes; a refused step leaves it as it was. */
static void test_limits(void **state) {
        json_t *rec = rollout_record_new("20261202T180512Z");
        char big[4096];
        size_t n = 0;
        int k;

        (void) state;
        for (;;) {
                k = rollout_record_add(rec, json_pack("{s:s, s:s}", "step", "drain", "node", "n"));
                if (k < 0)
                        break;
                n++;
        }
        assert_int_equal(k, -E2BIG);
        assert_int_equal(n, ROLLOUT_LEASE_MAX_STEPS);
        assert_int_equal(json_array_size(json_object_get(rec, "steps")), ROLLOUT_LEASE_MAX_STEPS);
        json_decref(rec);

        memset(big, 'x', sizeof big - 1);
        big[sizeof big - 1] = '\0';
        rec = rollout_record_new("20261202T180512Z");
        n = 0;
        for (;;) {
                k = rollout_record_add(rec, json_pack("{s:s, s:s}", "step", "drain", "node", big));
                if (k < 0)
                        break;
                n++;
        }
        assert_int_equal(k, -E2BIG);
        assert_true(n < ROLLOUT_LEASE_MAX_STEPS);
        assert_int_equal(json_array_size(json_object_get(rec, "steps")), n);
        {
                char *text = json_dumps(rec, JSON_COMPACT);
                assert_true(strlen(text) <= ROLLOUT_LEASE_MAX_BYTES);
                free(text);
        }
        json_decref(rec);
}

/* The login notice: "notify" steps, as read back from a Lease. */
typedef struct NoticeRow {
        const char *name;
        const char *steps; /* the record's steps, JSON */
        bool valid;        /* the record is accepted */
        bool notice;
        int64_t time_usec, deadline_usec;
        const char *noticed, *not_noticed; /* pods named, and not */
} NoticeRow;

#define NOTIFY(time, grace, pods)                                                                \
        "{\"step\":\"notify\",\"time\":\"" time "\",\"grace_seconds\":" grace ",\"pods\":[" pods \
        "]}"

static const NoticeRow notice_rows[] = {
        {"none", "[]", true, false, 0, 0, NULL, "a"},
        {"one", "[" NOTIFY("2026-12-02T18:05:12.500000Z", "300", "\"a\",\"b\"") "]", true, true,
         T0 *S + 500000, (T0 + 300) * S + 500000, "b", "c"},
        {"no grace", "[" NOTIFY("2026-12-02T18:05:12Z", "0", "\"a\"") "]", true, true, T0 *S, T0 *S,
         "a", "b"},
        {"two: the first time, the latest end",
         "[" NOTIFY("2026-12-02T18:05:12Z", "300", "\"a\"") "," NOTIFY("2026-12-02T18:06:12Z", "30",
                                                                       "\"b\"") "]",
         true, true, T0 *S, (T0 + 300) * S, "b", "c"},
        {"a later notice that ends last",
         "[" NOTIFY("2026-12-02T18:05:12Z", "10", "\"a\"") "," NOTIFY("2026-12-02T18:06:12Z", "30",
                                                                      "\"b\"") "]",
         true, true, T0 *S, (T0 + 90) * S, "a", "c"},
        {"no time", "[{\"step\":\"notify\",\"grace_seconds\":1,\"pods\":[]}]", false},
        {"a time that is not one", "[" NOTIFY("yesterday", "1", "") "]", false},
        {"negative grace", "[" NOTIFY("2026-12-02T18:05:12Z", "-1", "") "]", false},
        {"grace over a day", "[" NOTIFY("2026-12-02T18:05:12Z", "86401", "") "]", false},
        {"grace not a number", "[" NOTIFY("2026-12-02T18:05:12Z", "\"300\"", "") "]", false},
        {"a pod that is not a name", "[" NOTIFY("2026-12-02T18:05:12Z", "1", "7") "]", false},
        {"no pods", "[{\"step\":\"notify\",\"time\":\"2026-12-02T18:05:12Z\",\"grace_seconds\":1}]",
         false},
};

static void test_notice(void **state) {
        (void) state;
        for (size_t i = 0; i < sizeof notice_rows / sizeof notice_rows[0]; i++) {
                const NoticeRow *row = &notice_rows[i];
                json_t *rec = json_pack("{s:s, s:s, s:o}", "id", "20261202T180512Z", "state",
                                        "running", "steps", json_loads(row->steps, 0, NULL));
                char *text = json_dumps(rec, JSON_COMPACT);
                json_t *lease = json_pack("{s:{s:s, s:{s:s}}}", "metadata", "resourceVersion", "7",
                                          "annotations", ROLLOUT_LEASE_ANNOTATION, text);
                RolloutLease l = {};
                const char *error = NULL;
                int64_t t = -1, d = -1;
                int k = rollout_lease_parse(lease, &l, &error);

                print_message("%s\n", row->name);
                assert_int_equal(k, row->valid ? 0 : -EBADMSG);
                if (row->valid) {
                        assert_int_equal(rollout_record_notice(l.record, &t, &d), row->notice);
                        if (row->notice) {
                                assert_int_equal(t, row->time_usec);
                                assert_int_equal(d, row->deadline_usec);
                        } else
                                assert_int_equal(t, -1); /* written only when found */
                        if (row->noticed)
                                assert_true(rollout_record_noticed(l.record, row->noticed));
                        assert_false(rollout_record_noticed(l.record, row->not_noticed));
                } else
                        assert_non_null(strstr(error, "lacks its fields"));
                rollout_lease_done(&l);
                json_decref(lease);
                json_decref(rec);
                free(text);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_limits),
                cmocka_unit_test(test_notice),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
