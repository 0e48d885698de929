/* SPDX-License-Identifier: Apache-2.0 */
/* What the agent reads from the API server: pods, watch lines, Status
 * objects, Retry-After, and the retry schedule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "kubeproto.h"
#include "macro.h"

typedef struct PodRow {
        const char *name;
        const char *json;
        int ret;
        const char *uid, *rv; /* on success */
        size_t n_conditions;
        const char *error; /* a word of the error, on failure */
} PodRow;

static const PodRow pod_rows[] = {
        {"full",
         "{\"metadata\":{\"uid\":\"u-1\",\"resourceVersion\":\"42\"},"
         "\"status\":{\"conditions\":[{\"type\":\"Ready\"},{\"type\":\"X\"}]}}",
         0, "u-1", "42", 2, NULL},
        {"no status", "{\"metadata\":{\"uid\":\"u-1\"}}", 0, "u-1", NULL, 0, NULL},
        {"null conditions", "{\"metadata\":{\"uid\":\"u\"},\"status\":{\"conditions\":null}}", 0,
         "u", NULL, 0, NULL},
        {"not an object", "[1]", -EBADMSG, NULL, NULL, 0, "object"},
        {"no metadata", "{\"status\":{}}", -EBADMSG, NULL, NULL, 0, "metadata"},
        {"no uid", "{\"metadata\":{}}", -EBADMSG, NULL, NULL, 0, "uid"},
        {"uid not a string", "{\"metadata\":{\"uid\":7}}", -EBADMSG, NULL, NULL, 0, "uid"},
        {"uid with a space", "{\"metadata\":{\"uid\":\"a b\"}}", -EBADMSG, NULL, NULL, 0, "uid"},
        {"empty uid", "{\"metadata\":{\"uid\":\"\"}}", -EBADMSG, NULL, NULL, 0, "uid"},
        {"rv not a string", "{\"metadata\":{\"uid\":\"u\",\"resourceVersion\":5}}", -EBADMSG, NULL,
         NULL, 0, "resourceVersion"},
        {"conditions not a list", "{\"metadata\":{\"uid\":\"u\"},\"status\":{\"conditions\":{}}}",
         -EBADMSG, NULL, NULL, 0, "conditions"},
        {"status not an object", "{\"metadata\":{\"uid\":\"u\"},\"status\":3}", -EBADMSG, NULL,
         NULL, 0, "status"},
        {"not JSON", "{\"metadata\":", -EBADMSG, NULL, NULL, 0, "JSON"},
        {"duplicate keys", "{\"metadata\":{\"uid\":\"a\",\"uid\":\"b\"}}", -EBADMSG, NULL, NULL, 0,
         "JSON"},
};

static void test_pod_rows(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(pod_rows); i++) {
                const PodRow *row = &pod_rows[i];
                KubePod pod = {};
                const char *error = NULL;
                int r = kube_pod_parse(row->json, strlen(row->json), &pod, &error);

                print_message("%s\n", row->name);
                assert_int_equal(r, row->ret);
                if (r < 0) {
                        assert_non_null(error);
                        assert_non_null(strstr(error, row->error));
                        assert_null(pod.uid); /* untouched on failure */
                        continue;
                }
                assert_string_equal(pod.uid, row->uid);
                if (row->rv)
                        assert_string_equal(pod.resource_version, row->rv);
                else
                        assert_null(pod.resource_version);
                assert_int_equal(json_array_size(pod.conditions), row->n_conditions);
                kube_pod_done(&pod);
        }
}

static void test_pod_limits(void **state) {
        /* an id at the limit passes, one past it fails */
        char json[512], id[KUBE_MAX_ID_BYTES + 2];
        KubePod pod = {};

        memset(id, 'a', KUBE_MAX_ID_BYTES);
        id[KUBE_MAX_ID_BYTES] = '\0';
        (void) snprintf(json, sizeof json, "{\"metadata\":{\"uid\":\"%s\"}}", id);
        assert_int_equal(kube_pod_parse(json, strlen(json), &pod, NULL), 0);
        kube_pod_done(&pod);
        id[KUBE_MAX_ID_BYTES] = 'a';
        id[KUBE_MAX_ID_BYTES + 1] = '\0';
        (void) snprintf(json, sizeof json, "{\"metadata\":{\"uid\":\"%s\"}}", id);
        assert_int_equal(kube_pod_parse(json, strlen(json), &pod, NULL), -EBADMSG);

        /* an object past KUBE_MAX_OBJECT_BYTES is refused before parsing */
        size_t big = KUBE_MAX_OBJECT_BYTES + 1;
        char *data = malloc(big);
        const char *error = NULL;
        assert_non_null(data);
        memset(data, ' ', big);
        memcpy(data, "{\"metadata\":{\"uid\":\"u\"}}", 24);
        assert_int_equal(kube_pod_parse(data, big, &pod, &error), -EBADMSG);
        assert_non_null(strstr(error, "too large"));
        assert_int_equal(kube_pod_parse(data, big - 1, &pod, NULL), 0);
        kube_pod_done(&pod);
        free(data);
}

typedef struct EventRow {
        const char *line;
        int ret;
        KubeEventType type;
} EventRow;

static const EventRow event_rows[] = {
        {"{\"type\":\"ADDED\",\"object\":{}}", 0, KUBE_EVENT_ADDED},
        {"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{}}}", 0, KUBE_EVENT_MODIFIED},
        {"{\"type\":\"DELETED\",\"object\":{}}", 0, KUBE_EVENT_DELETED},
        {"{\"type\":\"BOOKMARK\",\"object\":{}}", 0, KUBE_EVENT_BOOKMARK},
        {"{\"type\":\"ERROR\",\"object\":{\"code\":410}}", 0, KUBE_EVENT_ERROR},
        {"{\"type\":\"RENAMED\",\"object\":{}}", -EBADMSG, 0},
        {"{\"type\":\"ADDED\"}", -EBADMSG, 0},
        {"{\"type\":\"ADDED\",\"object\":[]}", -EBADMSG, 0},
        {"{\"object\":{}}", -EBADMSG, 0},
        {"[]", -EBADMSG, 0},
        {"", -EBADMSG, 0},
        {"{\"type\":\"ADDED\",\"object\":{}} trailing", -EBADMSG, 0},
};

static void test_watch_events(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(event_rows); i++) {
                KubeWatchEvent ev = {};
                const char *error = NULL;
                int r = kube_watch_event_parse(event_rows[i].line, strlen(event_rows[i].line), &ev,
                                               &error);

                print_message("%s\n", event_rows[i].line);
                assert_int_equal(r, event_rows[i].ret);
                if (r < 0) {
                        assert_non_null(error);
                        continue;
                }
                assert_int_equal(ev.type, event_rows[i].type);
                assert_true(json_is_object(ev.object));
                assert_non_null(strstr(event_rows[i].line, kube_event_type_to_string(ev.type)));
                kube_watch_event_done(&ev);
        }
        assert_null(kube_event_type_to_string(_KUBE_EVENT_TYPE_MAX));
}

static void test_status(void **state) {
        KubeStatus s;
        const char *conflict = "{\"kind\":\"Status\",\"code\":409,\"reason\":\"Conflict\","
                               "\"message\":\"Precondition failed: UID in precondition: a, UID "
                               "in object meta: b\"}";

        kube_status_parse(conflict, strlen(conflict), &s);
        assert_int_equal(s.code, 409);
        assert_string_equal(s.reason, "Conflict");
        assert_true(kube_status_is_uid_conflict(&s));

        kube_status_parse("{\"code\":409,\"message\":\"the object has been modified\"}", 52, &s);
        assert_false(kube_status_is_uid_conflict(&s));

        /* no body, not JSON, wrong types: an empty Status, never a failure */
        kube_status_parse(NULL, 0, &s);
        assert_int_equal(s.code, 0);
        assert_string_equal(s.message, "");
        kube_status_parse("<html>", 6, &s);
        assert_string_equal(s.reason, "");
        /* a proxy's error page: its start, on one line, is the message */
        kube_status_parse("<html>\r\n<head><title>502 Bad Gateway</title></head>\n\n  <body>", 61,
                          &s);
        assert_int_equal(s.code, 0);
        assert_string_equal(s.reason, "");
        assert_string_equal(s.message, "not a Kubernetes Status: <html> <head><title>502 Bad "
                                       "Gateway</title></head> <body>");
        assert_false(kube_status_is_uid_conflict(&s));
        kube_status_parse("{\"code\":\"409\",\"reason\":1,\"message\":[]}", 38, &s);
        assert_int_equal(s.code, 0);
        assert_string_equal(s.reason, "");
        kube_status_parse("{\"code\":-5}", 11, &s);
        assert_int_equal(s.code, 0);

        /* control characters and a long message are made safe for a log line */
        kube_status_parse("{\"message\":\"a\\nb\\u001b[31m\"}", 28, &s);
        assert_string_equal(s.message, "a?b?[31m");
}

static void test_quote(void **state) {
        char buf[8], big[KUBE_MAX_QUOTE_BYTES];
        char *longer = malloc(4 * KUBE_MAX_QUOTE_BYTES);

        kube_quote("abc", 3, buf, sizeof buf);
        assert_string_equal(buf, "abc");
        kube_quote("abcdefgh", 8, buf, sizeof buf);
        assert_string_equal(buf, "abcd...");
        kube_quote("abcdefg", 7, buf, sizeof buf);
        assert_string_equal(buf, "abcdefg");
        /* a multi-byte character is never cut */
        kube_quote("abcd\xc3\xa9xyz", 9, buf, sizeof buf);
        assert_string_equal(buf, "abcd...");
        kube_quote("ab\xc3\xa9", 4, buf, sizeof buf);
        assert_string_equal(buf, "ab\xc3\xa9");
        /* invalid UTF-8, overlong forms, surrogates */
        kube_quote("\xff\xc0\x80\xed\xa0\x80", 6, buf, sizeof buf);
        assert_string_equal(buf, "??????");
        kube_quote("a\0b", 3, buf, sizeof buf);
        assert_string_equal(buf, "a?b");
        kube_quote("abc", 3, buf, 2);
        assert_string_equal(buf, "a");

        assert_non_null(longer);
        memset(longer, 'x', 4 * KUBE_MAX_QUOTE_BYTES);
        kube_quote(longer, 4 * KUBE_MAX_QUOTE_BYTES, big, sizeof big);
        assert_int_equal(strlen(big), KUBE_MAX_QUOTE_BYTES - 1);
        assert_string_equal(big + KUBE_MAX_QUOTE_BYTES - 4, "...");
        free(longer);
}

static void test_retry_after(void **state) {
        static const struct {
                const char *value;
                int ret;
                uint64_t usec;
        } rows[] = {
                {"1", 0, 1000000u},
                {" 30\r\n", 0, 30000000u},
                {"0", 0, 0},
                {"600", 0, KUBE_MAX_RETRY_AFTER_USEC},
                {"601", 0, KUBE_MAX_RETRY_AFTER_USEC},
                {"99999999999999999999999", 0, KUBE_MAX_RETRY_AFTER_USEC},
                {"", -EINVAL, 0},
                {"-1", -EINVAL, 0},
                {"1.5", -EINVAL, 0},
                {"Wed, 21 Oct 2015 07:28:00 GMT", -EINVAL, 0},
                {"5 s", -EINVAL, 0},
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                uint64_t usec = 7;
                int r = kube_parse_retry_after(rows[i].value, &usec);

                print_message("\"%s\"\n", rows[i].value);
                assert_int_equal(r, rows[i].ret);
                assert_int_equal(usec, r == 0 ? rows[i].usec : 7);
        }
}

static void test_backoff(void **state) {
        const uint64_t base = 1000000u, cap = 120000000u;

        /* half fixed, half jitter, doubling up to the cap */
        assert_int_equal(kube_backoff_usec(0, base, cap, 0), base / 2);
        assert_int_equal(kube_backoff_usec(0, base, cap, base / 2), base);
        assert_int_equal(kube_backoff_usec(0, base, cap, base / 2 + 1), base / 2);
        assert_int_equal(kube_backoff_usec(3, base, cap, 0), 4 * base);
        assert_int_equal(kube_backoff_usec(7, base, cap, 0), cap / 2);
        assert_int_equal(kube_backoff_usec(1000, base, cap, UINT64_MAX),
                         cap / 2 + UINT64_MAX % (cap / 2 + 1));
        for (unsigned a = 0; a < 64; a++)
                for (uint64_t rnd = 0; rnd < 5; rnd++) {
                        uint64_t d = kube_backoff_usec(a, base, cap, rnd * 7919u);
                        assert_true(d >= base / 2 && d <= cap);
                }
}

static void test_url_escape(void **state) {
        char buf[16];

        assert_int_equal(kube_url_escape("worker-0.a_b~", buf, sizeof buf), 0);
        assert_string_equal(buf, "worker-0.a_b~");
        assert_int_equal(kube_url_escape("a=b&c d/", buf, sizeof buf), -ENOBUFS);
        assert_int_equal(kube_url_escape("a=b&c d", buf, sizeof buf), 0);
        assert_string_equal(buf, "a%3Db%26c%20d");
        assert_int_equal(kube_url_escape("0123456789abcdef", buf, sizeof buf), -ENOBUFS);
        assert_int_equal(kube_url_escape("0123456789abcde", buf, sizeof buf), 0);
        assert_int_equal(kube_url_escape("0123456789abcd=", buf, sizeof buf), -ENOBUFS);
}

static void test_verbs(void **state) {
        assert_string_equal(kube_verb_to_string(KUBE_VERB_GET), "get");
        assert_string_equal(kube_verb_to_string(KUBE_VERB_WATCH), "watch");
        assert_string_equal(kube_verb_to_string(KUBE_VERB_PATCH), "patch");
        assert_string_equal(kube_verb_to_string(KUBE_VERB_CREATE), "create");
        assert_string_equal(kube_verb_to_string(KUBE_VERB_LIST), "list");
        assert_string_equal(kube_verb_to_string(KUBE_VERB_DELETE), "delete");
        assert_null(kube_verb_to_string(_KUBE_VERB_MAX));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pod_rows),     cmocka_unit_test(test_pod_limits),
                cmocka_unit_test(test_watch_events), cmocka_unit_test(test_status),
                cmocka_unit_test(test_quote),        cmocka_unit_test(test_retry_after),
                cmocka_unit_test(test_backoff),      cmocka_unit_test(test_url_escape),
                cmocka_unit_test(test_verbs),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
