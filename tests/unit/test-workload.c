/* SPDX-License-Identifier: Apache-2.0 */
/* Which ConfigMap version the workload runs: the pod's containers, the
 * record in the condition message, the three rules, and the verdict per file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "condition.h"
#include "workload.h"

#define V1  "..2026_12_02_14_00_00.123456789"
#define V2  "..2026_12_02_14_05_00.987654321"
#define ID1 "containerd://1111111111111111111111111111111111111111111111111111111111111111"
#define ID2 "containerd://2222222222222222222222222222222222222222222222222222222222222222"

static const char *const paths[] = {"/etc/enroot/enroot.conf",
                                    "/etc/enroot/environ.d/99-aicr-defaults.env"};
static const WorkloadConfig auto_cfg = {
        .agent_container = "aicr-enroot-agent", .paths = paths, .n_paths = 2};

/* A worker pod as Slinky 1.2 and the sidecar variant make it: slurmd with the
 * bundle's subPath mounts, the agent as a native sidecar with its own, and a
 * sidecar that mounts nothing of ours. */
static const char *worker_pod =
        "{\"metadata\":{\"name\":\"worker-0\",\"uid\":\"u\"},"
        " \"spec\":{\"containers\":[{\"name\":\"slurmd\",\"volumeMounts\":["
        "    {\"name\":\"enroot-config\",\"mountPath\":\"/etc/enroot/enroot.conf\","
        "     \"subPath\":\"enroot.conf\"},"
        "    {\"name\":\"shared-home\",\"mountPath\":\"/home\"}]}],"
        "  \"initContainers\":["
        "   {\"name\":\"logfile\",\"restartPolicy\":\"Always\",\"volumeMounts\":["
        "    {\"name\":\"slurm-logs\",\"mountPath\":\"/var/log/slurm\"}]},"
        "   {\"name\":\"setup\",\"volumeMounts\":[{\"name\":\"enroot-config\","
        "    \"mountPath\":\"/etc/enroot/enroot.conf\",\"subPath\":\"enroot.conf\"}]},"
        "   {\"name\":\"aicr-enroot-agent\",\"restartPolicy\":\"Always\",\"volumeMounts\":["
        "    {\"name\":\"enroot-config\","
        "     \"mountPath\":\"/run/aicr-enroot/running/etc/enroot/enroot.conf\","
        "     \"subPath\":\"enroot.conf\"},"
        "    {\"name\":\"enroot-config\",\"mountPath\":\"/etc/enroot/enroot.conf\","
        "     \"subPath\":\"enroot.conf\"}]}]},"
        " \"status\":{\"containerStatuses\":[{\"name\":\"slurmd\",\"containerID\":\"" ID1 "\","
        "   \"restartCount\":0,\"state\":{\"running\":{\"startedAt\":\"2026-12-02T14:02:00Z\"}}}],"
        "  \"initContainerStatuses\":[{\"name\":\"aicr-enroot-agent\",\"containerID\":"
        "   "
        "\"containerd://"
        "aaaa\",\"state\":{\"running\":{\"startedAt\":\"2026-12-02T14:01:59Z\"}}}]}}";

static json_t *parse(const char *text) {
        json_error_t e;
        json_t *j = json_loads(text, 0, &e);

        if (!j)
                fail_msg("bad test JSON: %s at %d", e.text, e.position);
        return j;
}

static uint64_t at(const char *rfc3339) {
        uint64_t usec = 0;

        assert_int_equal(workload_parse_time(rfc3339, &usec), 0);
        return usec;
}

static void test_from_pod_auto(void **state) {
        _cleanup_(json_decrefp) json_t *pod = parse(worker_pod);
        _cleanup_(workload_freep) Workload *w = NULL;

        assert_int_equal(workload_from_pod(pod, &auto_cfg, &w), 0);
        assert_null(w->problem);
        /* slurmd only: not the agent, not a sidecar without our mounts, not
         * an init container that is done before slurmd starts */
        assert_int_equal(w->n_containers, 1);
        assert_string_equal(w->containers[0].name, "slurmd");
        assert_true(w->containers[0].running);
        assert_string_equal(w->containers[0].container_id, ID1);
        assert_int_equal(w->containers[0].started_usec, at("2026-12-02T14:02:00Z"));
        assert_null(w->containers[0].version);
}

static void test_from_pod_sidecar_workload(void **state) {
        /* a restartable init container that mounts the files is workload too */
        _cleanup_(json_decrefp) json_t *pod = parse(
                "{\"spec\":{\"initContainers\":[{\"name\":\"login\",\"restartPolicy\":\"Always\","
                "\"volumeMounts\":[{\"mountPath\":\"/etc/enroot/environ.d/99-aicr-defaults.env\","
                "\"subPath\":\"99-aicr-defaults.env\"}]}]},\"status\":{}}");
        _cleanup_(workload_freep) Workload *w = NULL;

        assert_int_equal(workload_from_pod(pod, &auto_cfg, &w), 0);
        assert_null(w->problem);
        assert_int_equal(w->n_containers, 1);
        assert_string_equal(w->containers[0].name, "login");
        assert_false(w->containers[0].running); /* no status yet */
}

static void test_from_pod_problems(void **state) {
        static const char *const login[] = {"login", NULL};
        static const char *const slurmd[] = {"slurmd", NULL};
        WorkloadConfig named = auto_cfg;
        _cleanup_(json_decrefp) json_t *pod = parse(worker_pod);
        _cleanup_(json_decrefp) json_t *bare =
                parse("{\"spec\":{\"containers\":[{\"name\":\"slurmd\",\"volumeMounts\":"
                      "[{\"mountPath\":\"/etc/enroot\",\"name\":\"x\"}]}]}}");
        _cleanup_(json_decrefp) json_t *junk =
                parse("{\"spec\":{\"containers\":[{\"name\":7},{\"name\":\"Bad_Name\"},[],"
                      "{\"name\":\"slurmd\",\"volumeMounts\":{}}],\"initContainers\":\"x\"},"
                      "\"status\":[]}");
        Workload *w = NULL;

        /* a directory mount is not a subPath mount: nothing to check */
        assert_int_equal(workload_from_pod(bare, &auto_cfg, &w), 0);
        assert_non_null(w->problem);
        assert_non_null(strstr(w->problem, "--workload-container"));
        assert_int_equal(w->n_containers, 0);
        w = workload_free(w);

        assert_int_equal(workload_from_pod(junk, &auto_cfg, &w), 0);
        assert_non_null(w->problem);
        w = workload_free(w);

        named.names = login;
        assert_int_equal(workload_from_pod(pod, &named, &w), 0);
        assert_non_null(strstr(w->problem, "no container \"login\""));
        w = workload_free(w);

        /* named: taken even without a subPath mount at our paths */
        named.names = slurmd;
        assert_int_equal(workload_from_pod(bare, &named, &w), 0);
        assert_null(w->problem);
        assert_int_equal(w->n_containers, 1);
        w = workload_free(w);

        /* the agent is never its own workload, even when named */
        named.agent_container = "slurmd";
        assert_int_equal(workload_from_pod(bare, &named, &w), 0);
        assert_non_null(w->problem);
        w = workload_free(w);
}

static void test_not_running(void **state) {
        static const char *const states[] = {
                "{\"waiting\":{\"reason\":\"CrashLoopBackOff\"}}",
                "{\"terminated\":{\"exitCode\":1}}",
                "{\"running\":{}}",
                "{\"running\":{\"startedAt\":\"yesterday\"}}",
                "{\"running\":{\"startedAt\":\"2026-12-02T14:02:00+01:00\"}}",
        };

        for (size_t i = 0; i < ELEMENTSOF(states); i++) {
                _cleanup_free_ char *text = NULL;
                _cleanup_(json_decrefp) json_t *pod = NULL;
                _cleanup_(workload_freep) Workload *w = NULL;
                _cleanup_free_ char *detail = NULL;

                assert_true(asprintf(&text,
                                     "{\"spec\":{\"containers\":[{\"name\":\"slurmd\","
                                     "\"volumeMounts\":[{\"mountPath\":\"/etc/enroot/enroot.conf\","
                                     "\"subPath\":\"enroot.conf\"}]}]},\"status\":{"
                                     "\"containerStatuses\":[{\"name\":\"slurmd\",\"containerID\":"
                                     "\"" ID1 "\",\"state\":%s}]}}",
                                     states[i]) > 0);
                pod = parse(text);
                assert_int_equal(workload_from_pod(pod, &auto_cfg, &w), 0);
                assert_int_equal(w->n_containers, 1);
                assert_false(w->containers[0].running);
                assert_int_equal(workload_resolve(w, NULL, NULL, V1, at("2026-12-02T14:00:00Z")),
                                 0);
                assert_null(w->containers[0].version);
                assert_int_equal(workload_check(w, V1, V1, &detail), WORKLOAD_UNVERIFIABLE);
                assert_non_null(strstr(detail, "slurmd is not running"));
        }
}

static void test_parse_time(void **state) {
        uint64_t t = 1;

        assert_int_equal(workload_parse_time("1970-01-01T00:00:01Z", &t), 0);
        assert_int_equal(t, 1000000u);
        assert_int_equal(workload_parse_time("2026-12-02T14:02:00.999999Z", &t), 0);
        assert_int_equal(t, at("2026-12-02T14:02:00Z"));
        assert_int_equal(workload_parse_time("2026-12-02T14:02:00", &t), -EINVAL);
        assert_int_equal(workload_parse_time("2026-12-02T14:02:00.Z", &t), -EINVAL);
        assert_int_equal(workload_parse_time("2026-12-02 14:02:00Z", &t), -EINVAL);
        assert_int_equal(workload_parse_time("", &t), -EINVAL);
        assert_int_equal(workload_parse_time(NULL, &t), -EINVAL);
}

/* The record an agent writes reads back the same; anything else reads as none. */
static void test_record(void **state) {
        static const char *const bad[] = {
                "x [workload: slurmd " ID1 " runs " V1,       /* cut */
                "x [workload: slurmd " ID1 " runs " V1 "] .", /* not at the end */
                "x [workload: slurmd " ID1 " walks " V1 "]",
                "x [workload: slurmd " ID1 " runs data]", /* not a version id */
                "x [workload: slurmd " ID1 " runs ../etc]",
                "x [workload: Slurmd " ID1 " runs " V1 "]", /* not a container name */
                "x [workload: slurmd 1111 runs " V1 "]",    /* not RUNTIME://ID */
                "x [workload: slurmd " ID1 " runs " V1 " extra]",
                "x [workload: slurmd " ID1 " runs " V1 "; login]",
                "x [workload: ]",
                "x [workload: a " ID1 " runs " V1 "; b " ID1 " runs " V1 "; c " ID1 " runs " V1
                "; d " ID1 " runs " V1 "; e " ID1 " runs " V1 "; f " ID1 " runs " V1 "; g " ID1
                " runs " V1 "; h " ID1 " runs " V1 "; i " ID1 " runs " V1 "]", /* > 8 */
                "",
        };
        _cleanup_(workload_record_done) WorkloadRecord rec = {};
        _cleanup_(json_decrefp) json_t *pod = parse(worker_pod);
        _cleanup_(workload_freep) Workload *w = NULL;
        _cleanup_free_ char *text = NULL, *message = NULL;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_int_equal(workload_record_parse(bad[i], &rec), 0);
                if (rec.n_entries != 0)
                        fail_msg("\"%s\" was read as a record", bad[i]);
        }
        assert_int_equal(workload_record_parse(NULL, &rec), 0);
        assert_int_equal(rec.n_entries, 0);

        /* the last record counts: a key never holds a bracket, but be sure */
        assert_int_equal(workload_record_parse("a [workload: x " ID2 " runs " V2
                                               "] b [workload: slurmd " ID1 " runs " V1 "]",
                                               &rec),
                         0);
        assert_int_equal(rec.n_entries, 1);
        assert_string_equal(rec.entries[0].name, "slurmd");
        workload_record_done(&rec);

        assert_int_equal(workload_from_pod(pod, &auto_cfg, &w), 0);
        assert_int_equal(workload_record_format(w, &text), 0);
        assert_string_equal(text, ""); /* nothing known: nothing written */
        text = (free(text), NULL);
        assert_int_equal(workload_resolve(w, NULL, NULL, V1, at("2026-12-02T14:00:00Z")), 0);
        assert_int_equal(workload_record_format(w, &text), 0);
        assert_string_equal(text, " [workload: slurmd " ID1 " runs " V1 "]");
        assert_true(asprintf(&message, "enroot.conf current.%s", text) > 0);
        assert_int_equal(workload_record_parse(message, &rec), 0);
        assert_int_equal(rec.n_entries, 1);
        assert_string_equal(rec.entries[0].container_id, ID1);
        assert_string_equal(rec.entries[0].version, V1);
}

/* The three rules, in their order, and that a known version never moves. */
static void test_resolve(void **state) {
        _cleanup_(json_decrefp) json_t *pod = parse(worker_pod); /* slurmd started 14:02:00 */
        _cleanup_(workload_record_done) WorkloadRecord rec = {}, other = {};
        Workload *w = NULL, *old = NULL;

        assert_int_equal(workload_record_parse("x [workload: slurmd " ID1 " runs " V1 "]", &rec),
                         0);
        assert_int_equal(workload_record_parse("x [workload: slurmd " ID2 " runs " V1 "]", &other),
                         0);

        /* start time: kubelet flipped ..data before slurmd started */
        assert_int_equal(workload_from_pod(pod, &auto_cfg, &w), 0);
        assert_int_equal(workload_resolve(w, NULL, NULL, V2, at("2026-12-02T14:01:00Z")), 0);
        assert_string_equal(w->containers[0].version, V2);
        assert_int_equal(w->containers[0].source, WORKLOAD_SOURCE_START_TIME);
        /* remembered: a later flip changes nothing for the same instance */
        assert_int_equal(workload_from_pod(pod, &auto_cfg, &old), 0);
        assert_int_equal(workload_resolve(old, w, &rec, V1, at("2026-12-02T14:00:00Z")), 0);
        assert_string_equal(old->containers[0].version, V2);
        assert_int_equal(old->containers[0].source, WORKLOAD_SOURCE_REMEMBERED);
        assert_true(workload_equal(w, old)); /* the source is not compared */
        w = workload_free(w);
        old = workload_free(old);

        /* the flip in the same second as the start: counts as before it */
        assert_int_equal(workload_from_pod(pod, &auto_cfg, &w), 0);
        assert_int_equal(workload_resolve(w, NULL, NULL, V2, at("2026-12-02T14:02:00Z") + 999999u),
                         0);
        assert_string_equal(w->containers[0].version, V2);
        w = workload_free(w);

        /* the flip after the start: not known without a record */
        assert_int_equal(workload_from_pod(pod, &auto_cfg, &w), 0);
        assert_int_equal(workload_resolve(w, NULL, NULL, V2, at("2026-12-02T14:02:01Z")), 0);
        assert_null(w->containers[0].version);
        /* ...nor with a record of another instance */
        assert_int_equal(workload_resolve(w, NULL, &other, V2, at("2026-12-02T14:02:01Z")), 0);
        assert_null(w->containers[0].version);
        /* ...nor without the flip's time */
        assert_int_equal(workload_resolve(w, NULL, NULL, V2, 0), 0);
        assert_null(w->containers[0].version);
        /* the record of this instance, written by an earlier agent process */
        assert_int_equal(workload_resolve(w, NULL, &rec, V2, at("2026-12-02T14:02:01Z")), 0);
        assert_string_equal(w->containers[0].version, V1);
        assert_int_equal(w->containers[0].source, WORKLOAD_SOURCE_RECORD);
        w = workload_free(w);

        /* the record wins over the start time */
        assert_int_equal(workload_from_pod(pod, &auto_cfg, &w), 0);
        assert_int_equal(workload_resolve(w, NULL, &rec, V2, at("2026-12-02T14:00:00Z")), 0);
        assert_string_equal(w->containers[0].version, V1);
        w = workload_free(w);
}

typedef struct CheckRow {
        const char *name;
        const char *runs; /* slurmd's version, NULL unknown */
        const char *mount, *desired;
        int verdict;
        const char *detail; /* a substring, for unverifiable */
} CheckRow;

static void test_check(void **state) {
        static const CheckRow rows[] = {
                {"all one version", V1, V1, V1, WORKLOAD_RUNS_MOUNT, NULL},
                {"ConfigMap updated, nobody restarted", V1, V1, V2, WORKLOAD_RUNS_MOUNT, NULL},
                {"agent restarted after the update", V1, V2, V2, WORKLOAD_UNVERIFIABLE,
                 "runs ConfigMap version " V1 ", which the agent cannot read"},
                {"slurmd restarted after the update", V2, V1, V2, WORKLOAD_RUNS_DESIRED, NULL},
                {"slurmd's version unknown", NULL, V2, V2, WORKLOAD_UNVERIFIABLE,
                 "no record says which version it runs"},
                {"a third version", "..2026_01_01_00_00_00.1", V1, V2, WORKLOAD_UNVERIFIABLE,
                 "cannot read"},
        };
        _cleanup_(json_decrefp) json_t *pod = parse(worker_pod);

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_(workload_freep) Workload *w = NULL;
                _cleanup_free_ char *detail = NULL;
                int v;

                assert_int_equal(workload_from_pod(pod, &auto_cfg, &w), 0);
                if (rows[i].runs)
                        w->containers[0].version = strdup(rows[i].runs);
                v = workload_check(w, rows[i].mount, rows[i].desired, &detail);
                if (v != rows[i].verdict)
                        fail_msg("%s: verdict %d, expected %d", rows[i].name, v, rows[i].verdict);
                if (rows[i].detail && (!detail || !strstr(detail, rows[i].detail)))
                        fail_msg("%s: detail \"%s\"", rows[i].name, detail ? detail : "(null)");
                if (!rows[i].detail && detail)
                        fail_msg("%s: unexpected detail \"%s\"", rows[i].name, detail);
        }
}

static void test_check_unread_pod(void **state) {
        _cleanup_free_ char *detail = NULL;

        assert_int_equal(workload_check(NULL, V1, V1, &detail), WORKLOAD_UNVERIFIABLE);
        assert_non_null(strstr(detail, "has not read its pod"));
}

/* The condition carries the record after its sentence, and an unverifiable
 * file makes it Unknown with its own reason. */
static void test_condition(void **state) {
        _cleanup_(json_decrefp) json_t *pod = parse(worker_pod);
        _cleanup_(condition_done) Condition c = {};
        _cleanup_(workload_record_done) WorkloadRecord rec = {};
        char key[] = "enroot.conf", detail[] = "container slurmd runs ...";
        FileReport files[1] = {{.key = key, .state = FILE_UNVERIFIABLE, .detail = detail}};
        Report r = {.evaluated = true,
                    .observable = {true, true},
                    .files = files,
                    .n_files = 1,
                    .workload_checked = true};

        assert_int_equal(workload_from_pod(pod, &auto_cfg, &r.workload), 0);
        assert_int_equal(workload_resolve(r.workload, NULL, NULL, V1, at("2026-12-02T14:00:00Z")),
                         0);
        assert_int_equal(condition_from_report(&r, "EnrootConfigCurrent", &c), 0);
        assert_int_equal(c.status, CONDITION_UNKNOWN);
        assert_string_equal(c.reason, "WorkloadUnverifiable");
        assert_string_equal(c.message, "enroot.conf unverifiable: container slurmd runs .... "
                                       "[workload: slurmd " ID1 " runs " V1 "]");
        assert_int_equal(workload_record_parse(c.message, &rec), 0);
        assert_int_equal(rec.n_entries, 1);
        condition_done(&c);

        /* not checked (plain files, --target-process): no record */
        r.workload_checked = false;
        files[0].state = FILE_CURRENT;
        files[0].detail = NULL;
        assert_int_equal(condition_from_report(&r, "EnrootConfigCurrent", &c), 0);
        assert_string_equal(c.message, "enroot.conf current.");
        r.workload = workload_free(r.workload);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_from_pod_auto),
                cmocka_unit_test(test_from_pod_sidecar_workload),
                cmocka_unit_test(test_from_pod_problems),
                cmocka_unit_test(test_not_running),
                cmocka_unit_test(test_parse_time),
                cmocka_unit_test(test_record),
                cmocka_unit_test(test_resolve),
                cmocka_unit_test(test_check),
                cmocka_unit_test(test_check_unread_pod),
                cmocka_unit_test(test_condition),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
