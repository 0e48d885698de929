/* SPDX-License-Identifier: Apache-2.0 */
/* The rollout's judgements: pods, ids, reasons, and whose a node's state is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "rollout.h"

typedef struct PodRow {
        const char *name;
        const char *json;
        RolloutRole role;
        bool hostname;
        int ret;
        const char *node;
        PodVerdict verdict;
        const char *why; /* substring */
        bool ready, terminating;
} PodRow;

#define COND(status, reason) \
        "{\"type\":\"EnrootConfigCurrent\",\"status\":\"" status "\",\"reason\":\"" reason "\"}"
#define READY "{\"type\":\"Ready\",\"status\":\"True\"}"

static const PodRow pod_rows[] = {
        {"stale worker with a hostname",
         "{\"metadata\":{\"name\":\"w-0\",\"uid\":\"u0\"},\"spec\":{\"hostname\":\"slinky-0\"},"
         "\"status\":{\"conditions\":[" READY "," COND("False", "ConfigDrifted") "]}}",
         ROLE_WORKER, true, 0, "slinky-0", VERDICT_STALE, "ConfigDrifted", true, false},
        /* the agent cannot see what the workload runs: only a new pod does */
        {"unverifiable worker is replaced",
         "{\"metadata\":{\"name\":\"w-0\",\"uid\":\"u0\"},\"status\":{\"conditions\":[" COND(
                 "Unknown", "WorkloadUnverifiable") "]}}",
         ROLE_WORKER, true, 0, "w-0", VERDICT_STALE, "WorkloadUnverifiable", false, false},
        {"other Unknown reasons are not",
         "{\"metadata\":{\"name\":\"w-0\",\"uid\":\"u0\"},\"status\":{\"conditions\":[" COND(
                 "Unknown", "FileMissing") "]}}",
         ROLE_WORKER, true, 0, "w-0", VERDICT_UNKNOWN, "FileMissing", false, false},
        {"hostname ignored with --node-name pod",
         "{\"metadata\":{\"name\":\"w-0\",\"uid\":\"u0\"},\"spec\":{\"hostname\":\"slinky-0\"}}",
         ROLE_WORKER, false, 0, "w-0", VERDICT_UNKNOWN, "no EnrootConfigCurrent", false, false},
        {"no hostname: the pod name",
         "{\"metadata\":{\"name\":\"w-1\",\"uid\":\"u1\"},\"status\":{\"conditions\":[" COND(
                 "True", "ConfigCurrent") "]}}",
         ROLE_WORKER, true, 0, "w-1", VERDICT_CURRENT, "ConfigCurrent", false, false},
        /* Slinky's label names the Slurm node (docs/DESIGN.md §4); under
         * hostNetwork it is the Kubernetes node's name, not spec.hostname */
        {"label beats spec.hostname (hostNetwork)",
         "{\"metadata\":{\"name\":\"slurm-worker-slinky-0\",\"uid\":\"u0\",\"labels\":{"
         "\"" ROLLOUT_HOSTNAME_LABEL "\":\"gpu-node-7\"}},\"spec\":{\"hostname\":\"slinky-0\","
         "\"hostNetwork\":true}}",
         ROLE_WORKER, true, 0, "gpu-node-7", VERDICT_UNKNOWN, "no EnrootConfigCurrent", false,
         false},
        {"label without spec.hostname",
         "{\"metadata\":{\"name\":\"w-2\",\"uid\":\"u2\",\"labels\":{\"" ROLLOUT_HOSTNAME_LABEL
         "\":\"slinky-2\"}}}",
         ROLE_WORKER, true, 0, "slinky-2", VERDICT_UNKNOWN, "", false, false},
        {"label equal to spec.hostname, as the chart's pods have it",
         "{\"metadata\":{\"name\":\"slurm-worker-slinky-3\",\"uid\":\"u3\",\"labels\":{\""
         "app.kubernetes.io/instance\":\"slinky-slurm-worker-slinky\",\"" ROLLOUT_HOSTNAME_LABEL
         "\":\"slinky-3\"}},\"spec\":{\"hostname\":\"slinky-3\"}}",
         ROLE_WORKER, true, 0, "slinky-3", VERDICT_UNKNOWN, "", false, false},
        {"empty label: spec.hostname",
         "{\"metadata\":{\"name\":\"w-4\",\"uid\":\"u4\",\"labels\":{\"" ROLLOUT_HOSTNAME_LABEL
         "\":\"\"}},\"spec\":{\"hostname\":\"slinky-4\"}}",
         ROLE_WORKER, true, 0, "slinky-4", VERDICT_UNKNOWN, "", false, false},
        {"label that is not a string: spec.hostname",
         "{\"metadata\":{\"name\":\"w-5\",\"uid\":\"u5\",\"labels\":{\"" ROLLOUT_HOSTNAME_LABEL
         "\":5}},\"spec\":{\"hostname\":\"slinky-5\"}}",
         ROLE_WORKER, true, 0, "slinky-5", VERDICT_UNKNOWN, "", false, false},
        {"labels that are not an object: the pod name",
         "{\"metadata\":{\"name\":\"w-6\",\"uid\":\"u6\",\"labels\":[]}}", ROLE_WORKER, true, 0,
         "w-6", VERDICT_UNKNOWN, "", false, false},
        {"another label of the same prefix is not it",
         "{\"metadata\":{\"name\":\"w-7\",\"uid\":\"u7\",\"labels\":{"
         "\"nodeset.slinky.slurm.net/pod-name\":\"x\"}},\"spec\":{\"hostname\":\"slinky-7\"}}",
         ROLE_WORKER, true, 0, "slinky-7", VERDICT_UNKNOWN, "", false, false},
        {"label ignored with --node-name pod",
         "{\"metadata\":{\"name\":\"w-8\",\"uid\":\"u8\",\"labels\":{\"" ROLLOUT_HOSTNAME_LABEL
         "\":\"gpu-node-8\"}},\"spec\":{\"hostname\":\"slinky-8\"}}",
         ROLE_WORKER, false, 0, "w-8", VERDICT_UNKNOWN, "", false, false},
        {"a login pod has no Slurm node, label or not",
         "{\"metadata\":{\"name\":\"l-1\",\"uid\":\"u\",\"labels\":{\"" ROLLOUT_HOSTNAME_LABEL
         "\":\"login-1\"}},\"spec\":{\"hostname\":\"login-1\"}}",
         ROLE_LOGIN, true, 0, NULL, VERDICT_UNKNOWN, "", false, false},
        {"unknown condition",
         "{\"metadata\":{\"name\":\"l-0\",\"uid\":\"u\"},\"status\":{\"conditions\":[" COND(
                 "Unknown", "FileUnreadable") "]}}",
         ROLE_LOGIN, true, 0, NULL, VERDICT_UNKNOWN, "FileUnreadable", false, false},
        {"terminating",
         "{\"metadata\":{\"name\":\"l-0\",\"uid\":\"u\",\"deletionTimestamp\":\"2026-01-01T00:00:"
         "00Z\"}}",
         ROLE_LOGIN, true, 0, NULL, VERDICT_UNKNOWN, "", false, true},
        {"no uid", "{\"metadata\":{\"name\":\"x\"}}", ROLE_WORKER, true, -EBADMSG},
        {"no name", "{\"metadata\":{\"uid\":\"x\"}}", ROLE_WORKER, true, -EBADMSG},
        {"not an object", "[]", ROLE_WORKER, true, -EBADMSG},
};

static void test_pods(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(pod_rows); i++) {
                const PodRow *row = &pod_rows[i];
                json_t *j = json_loads(row->json, 0, NULL);
                RolloutPod p = {};
                int r;

                print_message("%s\n", row->name);
                assert_non_null(j);
                r = rollout_pod_from_json(j, row->role, CONDITION_DEFAULT_TYPE, row->hostname, &p,
                                          NULL);
                json_decref(j);
                assert_int_equal(r, row->ret);
                if (r < 0)
                        continue;
                if (row->node)
                        assert_string_equal(p.node, row->node);
                else
                        assert_null(p.node);
                assert_int_equal(p.verdict, row->verdict);
                assert_non_null(strstr(p.why, row->why));
                assert_int_equal(p.ready, row->ready);
                assert_int_equal(p.terminating, row->terminating);
                rollout_pod_done(&p);
        }
}

static void test_list(void **state) {
        json_t *j = json_loads("{\"items\":[{\"metadata\":{\"name\":\"b\",\"uid\":\"1\"}},"
                               "{\"metadata\":{\"name\":\"a\",\"uid\":\"2\"}}]}",
                               0, NULL);
        RolloutPod *pods = NULL;
        size_t n = 0;

        assert_int_equal(rollout_pods_from_list(j, ROLE_WORKER, CONDITION_DEFAULT_TYPE, true, &pods,
                                                &n, NULL),
                         0);
        assert_int_equal(n, 2);
        assert_string_equal(pods[0].name, "a"); /* sorted */
        rollout_pods_free(pods, n);
        json_decref(j);

        j = json_loads("{\"items\":[{\"metadata\":{\"name\":\"a\",\"uid\":\"1\"}},{}]}", 0, NULL);
        assert_int_equal(rollout_pods_from_list(j, ROLE_WORKER, CONDITION_DEFAULT_TYPE, true, &pods,
                                                &n, NULL),
                         -EBADMSG);
        json_decref(j);
        j = json_loads("{\"kind\":\"Status\"}", 0, NULL);
        assert_int_equal(rollout_pods_from_list(j, ROLE_WORKER, CONDITION_DEFAULT_TYPE, true, &pods,
                                                &n, NULL),
                         -EBADMSG);
        json_decref(j);
}

static void test_ids(void **state) {
        char id[ROLLOUT_ID_BYTES], got[ROLLOUT_ID_BYTES];
        int64_t sec = 0;
        char *reason;

        rollout_id_format(1796232152000000ull, id); /* 2026-12-02T17:22:32Z */
        assert_string_equal(id, "20261202T172232Z");
        assert_true(rollout_id_parse(id, &sec));
        assert_int_equal(sec, 1796232152);
        assert_false(rollout_id_parse("20261202T172232", NULL));
        assert_false(rollout_id_parse("20261202X172232Z", NULL));
        assert_false(rollout_id_parse("2026120aT172232Z", NULL));
        assert_false(rollout_id_parse("20261302T172232Z", NULL)); /* month 13 */
        assert_false(rollout_id_parse("", NULL));

        reason = rollout_reason(id);
        assert_non_null(reason);
        assert_string_equal(reason,
                            "aicr-enroot-rollout 20261202T172232Z: enroot configuration update");
        assert_true(rollout_reason_id(reason, got));
        assert_string_equal(got, id);
        free(reason);
        assert_true(rollout_reason_id("aicr-enroot-rollout 20261202T172232Z", got));
        assert_false(rollout_reason_id("aicr-enroot-rollout 20261202T172232Zx", got));
        assert_false(rollout_reason_id("aicr-enroot-rollout nonsense", got));
        assert_false(rollout_reason_id("Enroot configuration rollout", got));
        assert_false(rollout_reason_id("", got));
        assert_false(rollout_reason_id(NULL, got));
}

static SlurmNode node(const char *state, const char *reason, int64_t reason_time) {
        SlurmNode n = {.name = (char *) (uintptr_t) "n",
                       .reason = (char *) (uintptr_t) reason,
                       .state = (char *) (uintptr_t) state,
                       .reason_time_sec = reason_time};
        assert_int_equal(slurm_node_state_parse(state, &n.base, &n.flags), 0);
        return n;
}

static void test_claims(void **state) {
        static const struct {
                const char *state, *reason;
                int64_t time;
                const char *id;
                NodeClaim claim;
        } rows[] = {
                {"IDLE", "", 0, NULL, CLAIM_AVAILABLE},
                {"ALLOCATED", "", 0, "20261202T172232Z", CLAIM_AVAILABLE},
                {"IDLE+DRAIN", "aicr-enroot-rollout 20261202T172232Z: x", 0, "20261202T172232Z",
                 CLAIM_OURS},
                {"IDLE+DRAIN", "aicr-enroot-rollout 20261202T172232Z: x", 0, NULL,
                 CLAIM_OTHER_ROLLOUT},
                {"IDLE+DRAIN", "aicr-enroot-rollout 20251202T172232Z: x", 0, "20261202T172232Z",
                 CLAIM_OTHER_ROLLOUT},
                {"DOWN", ROLLOUT_PRESTOP_REASON, 1796232152, "20261202T172232Z", CLAIM_REPLACED},
                {"DOWN", ROLLOUT_PRESTOP_REASON, 1796232151, "20261202T172232Z", CLAIM_FOREIGN},
                {"DOWN", ROLLOUT_PRESTOP_REASON, 1796232199, NULL, CLAIM_FOREIGN},
                {"IDLE+DRAIN", "disk replacement", 0, "20261202T172232Z", CLAIM_FOREIGN},
                {"DOWN+NOT_RESPONDING", "Not responding", 0, NULL, CLAIM_FOREIGN},
                {"IDLE+FAIL", "ecc", 0, NULL, CLAIM_FOREIGN},
                /* settling: judged again, not at once */
                {"IDLE+NOT_RESPONDING", "", 0, NULL, CLAIM_SETTLING},
                {"IDLE+NOT_RESPONDING", "", 0, "20261202T172232Z", CLAIM_SETTLING},
                {"COMPLETING", "", 0, NULL, CLAIM_SETTLING},
                {"IDLE+COMPLETING", "", 0, NULL, CLAIM_AVAILABLE},
                /* a reason, ours or not, is judged before the state */
                {"IDLE+NOT_RESPONDING", "maintenance", 0, NULL, CLAIM_FOREIGN},
                {"DOWN+NOT_RESPONDING", "aicr-enroot-rollout 20261202T172232Z: x", 0,
                 "20261202T172232Z", CLAIM_OURS},
                {"DOWN+NOT_RESPONDING", "", 0, NULL, CLAIM_FOREIGN},
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                SlurmNode n = node(rows[i].state, rows[i].reason, rows[i].time);

                print_message("%s \"%s\"\n", rows[i].state, rows[i].reason);
                assert_int_equal(rollout_node_claim(&n, rows[i].id), rows[i].claim);
        }
        assert_string_equal(node_claim_to_string(CLAIM_REPLACED), "replaced");
        assert_null(node_claim_to_string(_CLAIM_MAX));
}

static void test_settling(void **state) {
        static const struct {
                const char *state, *reason;
                bool settling;
        } rows[] = {
                /* slurmctld after a RESUME, until the node answers its ping (idle*) */
                {"IDLE+NOT_RESPONDING", "", true},
                {"MIXED+NOT_RESPONDING", "", true},
                {"ALLOCATED+NOT_RESPONDING", "", true},
                /* the epilogs of the last jobs; sinfo's %T prints no base */
                {"COMPLETING", "", true},
                {"ALLOCATED+COMPLETING+NOT_RESPONDING", "", true},
                {"IDLE+COMPLETING+NOT_RESPONDING", "", true},
                /* flags that take nothing out of service do not change it */
                {"IDLE+NOT_RESPONDING+RESERVED", "", true},
                /* in service: nothing to wait for */
                {"IDLE", "", false},
                {"IDLE+COMPLETING", "", false},
                {"ALLOCATED+COMPLETING", "", false},
                /* out of service for more than the moment: at once */
                {"DOWN", "", false},
                {"DOWN+NOT_RESPONDING", "", false},
                {"DOWN+COMPLETING", "", false},
                {"IDLE+DRAIN+NOT_RESPONDING", "", false},
                {"IDLE+DRAIN+COMPLETING", "", false},
                {"IDLE+FAIL+NOT_RESPONDING", "", false},
                {"IDLE+NOT_RESPONDING+MAINTENANCE", "", false},
                {"IDLE+NOT_RESPONDING+POWERING_UP", "", false},
                {"IDLE+NOT_RESPONDING+SOMETHING_NEW", "", false},
                {"UNKNOWN+NOT_RESPONDING", "", false},
                {"FUTURE+NOT_RESPONDING", "", false},
                {"ERROR+COMPLETING", "", false},
                /* a reason: someone's, judged at once */
                {"IDLE+NOT_RESPONDING", "Not responding", false},
                {"COMPLETING", "epilog error", false},
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                SlurmNode n = node(rows[i].state, rows[i].reason, 0);

                print_message("%s \"%s\"\n", rows[i].state, rows[i].reason);
                assert_int_equal(rollout_node_is_settling(&n), rows[i].settling);
        }
        assert_string_equal(node_claim_to_string(CLAIM_SETTLING), "settling");
}

/* --- whether a condition is believed ----------------------------------------------------- */

#define POLICY(name, extra)                                                                     \
        "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":"                         \
        "\"ValidatingAdmissionPolicy\",\"metadata\":{\"name\":\"" name "\","                    \
        "\"creationTimestamp\":\"2026-12-01T10:00:00Z\"},\"spec\":{\"failurePolicy\":\"Fail\"," \
        "\"variables\":[{\"name\":\"t\",\"expression\":\"'EnrootConfigCurrent'\"}]," extra      \
        "\"validations\":[{\"expression\":\"variables.after == variables.before\"}]}}"
#define BINDING(name, policy, actions, created)                                           \
        "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":"                   \
        "\"ValidatingAdmissionPolicyBinding\",\"metadata\":{\"name\":\"" name "\","       \
        "\"creationTimestamp\":\"" created "\"},\"spec\":{\"policyName\":\"" policy "\"," \
        "\"validationActions\":" actions "}}"
#define CP ROLLOUT_POLICY_CONDITION

static void test_policy_check(void **state) {
        static const struct {
                const char *what, *policy, *binding, *type;
                int ret;
                int64_t since;
                const char *why; /* substring */
        } rows[] = {
                {"in force: the later creationTimestamp", POLICY(CP, ""),
                 BINDING(CP, CP, "[\"Deny\"]", "2026-12-01T11:00:00Z"), CONDITION_DEFAULT_TYPE, 0,
                 1796122800},
                {"a binding older than its policy: the policy's", POLICY(CP, ""),
                 BINDING(CP, CP, "[\"Audit\",\"Deny\"]", "2026-11-01T00:00:00Z"),
                 CONDITION_DEFAULT_TYPE, 0, 1796119200},
                {"no type to look for", POLICY(CP, ""),
                 BINDING(CP, CP, "[\"Deny\"]", "2026-12-01T11:00:00Z"), NULL, 0, 1796122800},
                {"no policy", NULL, BINDING(CP, CP, "[\"Deny\"]", "2026-12-01T11:00:00Z"),
                 CONDITION_DEFAULT_TYPE, -EPERM, 0,
                 "ValidatingAdmissionPolicy " CP " does not exist"},
                {"no binding", POLICY(CP, ""), NULL, CONDITION_DEFAULT_TYPE, -EPERM, 0,
                 "ValidatingAdmissionPolicyBinding " CP " does not exist"},
                {"a binding that warns", POLICY(CP, ""),
                 BINDING(CP, CP, "[\"Warn\",\"Audit\"]", "2026-12-01T11:00:00Z"),
                 CONDITION_DEFAULT_TYPE, -EPERM, 0, "does not deny"},
                {"a binding of another policy", POLICY(CP, ""),
                 BINDING(CP, "other", "[\"Deny\"]", "2026-12-01T11:00:00Z"), CONDITION_DEFAULT_TYPE,
                 -EPERM, 0, "binds policy other, not " CP},
                {"another condition type", POLICY(CP, ""),
                 BINDING(CP, CP, "[\"Deny\"]", "2026-12-01T11:00:00Z"), "example.com/Other", -EPERM,
                 0, "does not protect condition type example.com/Other"},
                {"the type only as part of another word", POLICY(CP, ""),
                 BINDING(CP, CP, "[\"Deny\"]", "2026-12-01T11:00:00Z"), "ConfigCurrent", -EPERM, 0,
                 "does not protect condition type ConfigCurrent"},
                {"failurePolicy Ignore",
                 "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":"
                 "\"ValidatingAdmissionPolicy\",\"metadata\":{\"name\":\"" CP "\","
                 "\"creationTimestamp\":\"2026-12-01T10:00:00Z\"},\"spec\":{\"failurePolicy\":"
                 "\"Ignore\",\"validations\":[{\"expression\":\"'EnrootConfigCurrent' != ''\"}]}}",
                 BINDING(CP, CP, "[\"Deny\"]", "2026-12-01T11:00:00Z"), CONDITION_DEFAULT_TYPE,
                 -EPERM, 0, "failurePolicy Ignore"},
                {"an answer of another name", POLICY("other", ""),
                 BINDING(CP, CP, "[\"Deny\"]", "2026-12-01T11:00:00Z"), CONDITION_DEFAULT_TYPE,
                 -EPERM, 0, "is not that policy"},
                {"a binding without creationTimestamp", POLICY(CP, ""),
                 BINDING(CP, CP, "[\"Deny\"]", "yesterday"), CONDITION_DEFAULT_TYPE, -EPERM, 0,
                 "is not that binding with a creationTimestamp"},
                {"a Status instead of a policy", "{\"kind\":\"Status\",\"code\":404}",
                 BINDING(CP, CP, "[\"Deny\"]", "2026-12-01T11:00:00Z"), CONDITION_DEFAULT_TYPE,
                 -EPERM, 0, "is not that policy"},
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                json_t *policy = rows[i].policy ? json_loads(rows[i].policy, 0, NULL) : NULL,
                       *binding = rows[i].binding ? json_loads(rows[i].binding, 0, NULL) : NULL;
                int64_t since = 0;
                char *why = NULL;

                print_message("%s\n", rows[i].what);
                assert_true(!rows[i].policy || policy);
                assert_true(!rows[i].binding || binding);
                assert_int_equal(
                        rollout_policy_check(policy, binding, CP, rows[i].type, &since, &why),
                        rows[i].ret);
                if (rows[i].ret == 0) {
                        assert_int_equal(since, rows[i].since);
                        assert_null(why);
                } else {
                        assert_non_null(why);
                        print_message("  %s\n", why);
                        assert_non_null(strstr(why, rows[i].why));
                }
                free(why);
                json_decref(policy);
                json_decref(binding);
        }
}

#define TIMED_COND(status, reason, probed)                                                       \
        "{\"type\":\"EnrootConfigCurrent\",\"status\":\"" status "\",\"reason\":\"" reason "\"," \
        "\"lastTransitionTime\":\"2020-01-01T00:00:00Z\",\"lastProbeTime\":\"" probed "\"}"

static void test_pod_verify(void **state) {
        /* the policies were bound at 2026-12-01T11:00:00Z; now is 2026-12-05T00:00:00Z */
        const int64_t since = 1796122800, now = 1796428800;
        static const struct {
                const char *what, *json;
                int trust; /* 0: in force, 1: not (why_not), 2: unchecked */
                PodVerdict verdict;
                const char *why;
        } rows[] = {
                {"written after the binding: believed",
                 "{\"metadata\":{\"name\":\"w\",\"uid\":\"u\"},\"status\":{\"conditions\":"
                 "[" TIMED_COND("False", "ConfigDrifted", "2026-12-01T11:00:01Z") "]}}",
                 0, VERDICT_STALE, "ConfigDrifted"},
                {"written in the binding's second: not",
                 "{\"metadata\":{\"name\":\"w\",\"uid\":\"u\"},\"status\":{\"conditions\":"
                 "[" TIMED_COND("False", "ConfigDrifted", "2026-12-01T11:00:00Z") "]}}",
                 0, VERDICT_UNVERIFIED,
                 "unverified: the condition was written at 2026-12-01T11:00:00Z, not after the "
                 "admission policies were bound (2026-12-01T11:00:00Z); it says ConfigDrifted"},
                {"a current pod written before: unverified too",
                 "{\"metadata\":{\"name\":\"w\",\"uid\":\"u\"},\"status\":{\"conditions\":"
                 "[" TIMED_COND("True", "ConfigCurrent", "2026-11-30T00:00:00.5Z") "]}}",
                 0, VERDICT_UNVERIFIED, "it says ConfigCurrent"},
                {"no lastProbeTime",
                 "{\"metadata\":{\"name\":\"w\",\"uid\":\"u\"},\"status\":{\"conditions\":[" COND(
                         "False", "ConfigDrifted") "]}}",
                 0, VERDICT_UNVERIFIED, "the condition has no lastProbeTime"},
                {"a lastProbeTime in the future",
                 "{\"metadata\":{\"name\":\"w\",\"uid\":\"u\"},\"status\":{\"conditions\":"
                 "[" TIMED_COND("False", "ConfigDrifted", "2099-01-01T00:00:00Z") "]}}",
                 0, VERDICT_UNVERIFIED, "lastProbeTime 2099-01-01T00:00:00Z is in the future"},
                {"a little ahead of this clock: believed",
                 "{\"metadata\":{\"name\":\"w\",\"uid\":\"u\"},\"status\":{\"conditions\":"
                 "[" TIMED_COND("False", "ConfigDrifted", "2026-12-05T00:04:00Z") "]}}",
                 0, VERDICT_STALE, "ConfigDrifted"},
                {"a pod created after the binding: believed, whatever the time says",
                 "{\"metadata\":{\"name\":\"w\",\"uid\":\"u\",\"creationTimestamp\":"
                 "\"2026-12-02T00:00:00Z\"},\"status\":{\"conditions\":[" COND(
                         "False", "ConfigDrifted") "]}}",
                 0, VERDICT_STALE, "ConfigDrifted"},
                {"a pod created before, condition old",
                 "{\"metadata\":{\"name\":\"w\",\"uid\":\"u\",\"creationTimestamp\":"
                 "\"2026-11-02T00:00:00Z\"},\"status\":{\"conditions\":[" TIMED_COND(
                         "False", "ConfigDrifted", "2026-11-02T00:01:00Z") "]}}",
                 0, VERDICT_UNVERIFIED, "written at 2026-11-02T00:01:00Z"},
                {"no policies",
                 "{\"metadata\":{\"name\":\"w\",\"uid\":\"u\"},\"status\":{\"conditions\":"
                 "[" TIMED_COND("False", "ConfigDrifted", "2026-12-04T00:00:00Z") "]}}",
                 1, VERDICT_UNVERIFIED,
                 "unverified: no policy here; the condition says ConfigDrifted"},
                {"no policies, no condition: unknown as before",
                 "{\"metadata\":{\"name\":\"w\",\"uid\":\"u\"}}", 1, VERDICT_UNKNOWN,
                 "no EnrootConfigCurrent condition"},
                {"--trust-unprotected-conditions",
                 "{\"metadata\":{\"name\":\"w\",\"uid\":\"u\"},\"status\":{\"conditions\":[" COND(
                         "False", "ConfigDrifted") "]}}",
                 2, VERDICT_STALE, "ConfigDrifted"},
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                RolloutTrust t = {.unchecked = rows[i].trust == 2,
                                  .why_not = rows[i].trust == 1 ? strdup("no policy here") : NULL,
                                  .since_sec = since};
                json_t *j = json_loads(rows[i].json, 0, NULL);
                RolloutPod p = {};

                print_message("%s\n", rows[i].what);
                assert_non_null(j);
                assert_int_equal(rollout_pod_from_json(j, ROLE_WORKER, CONDITION_DEFAULT_TYPE, true,
                                                       &p, NULL),
                                 0);
                assert_int_equal(rollout_pod_verify(&p, &t, now), 0);
                assert_int_equal(p.verdict, rows[i].verdict);
                print_message("  %s\n", p.why);
                assert_non_null(strstr(p.why, rows[i].why));
                /* twice: the same */
                assert_int_equal(rollout_pod_verify(&p, &t, now), 0);
                assert_int_equal(p.verdict, rows[i].verdict);
                rollout_pod_done(&p);
                rollout_trust_done(&t);
                json_decref(j);
        }
        assert_string_equal(pod_verdict_to_string(VERDICT_UNVERIFIED), "unverified");
}

/* The login notice's Event: a core/v1 Event on the pod, with its UID, and
 * spec.nodeName kept for the notice's environment. */
static void test_notice_event(void **state) {
        char inst[200];
        json_t *ev, *pod;
        RolloutPod p = {};

        (void) state;
        memset(inst, 'h', sizeof inst - 1);
        inst[sizeof inst - 1] = '\0';
        ev = rollout_notice_event("login-a", "slurm", "uid-a", "goes at T", inst,
                                  UINT64_C(1796234712) * 1000000u + 255u);
        assert_non_null(ev);
        assert_string_equal(json_string_value(json_object_get(ev, "apiVersion")), "v1");
        assert_string_equal(json_string_value(json_object_get(ev, "kind")), "Event");
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(ev, "metadata"), "name")),
                "login-a.661aa7bf126ff");
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(ev, "metadata"), "namespace")),
                "slurm");
        pod = json_object_get(ev, "involvedObject");
        assert_string_equal(json_string_value(json_object_get(pod, "kind")), "Pod");
        assert_string_equal(json_string_value(json_object_get(pod, "apiVersion")), "v1");
        assert_string_equal(json_string_value(json_object_get(pod, "name")), "login-a");
        assert_string_equal(json_string_value(json_object_get(pod, "namespace")), "slurm");
        assert_string_equal(json_string_value(json_object_get(pod, "uid")), "uid-a");
        assert_string_equal(json_string_value(json_object_get(ev, "type")), "Normal");
        assert_string_equal(json_string_value(json_object_get(ev, "reason")),
                            ROLLOUT_NOTICE_REASON);
        assert_string_equal(json_string_value(json_object_get(ev, "message")), "goes at T");
        assert_string_equal(json_string_value(json_object_get(ev, "firstTimestamp")),
                            "2026-12-02T18:05:12Z");
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(ev, "source"), "component")),
                "aicr-enroot-agent");
        assert_string_equal(json_string_value(json_object_get(ev, "reportingComponent")),
                            "aicr-enroot-agent");
        /* the API server's limit on reportingInstance */
        assert_int_equal(strlen(json_string_value(json_object_get(ev, "reportingInstance"))), 128);
        assert_null(json_object_get(ev, "eventTime"));
        json_decref(ev);

        pod = json_loads("{\"metadata\":{\"name\":\"login-a\",\"uid\":\"u\"},"
                         "\"spec\":{\"nodeName\":\"k8s-7\"}}",
                         0, NULL);
        assert_int_equal(
                rollout_pod_from_json(pod, ROLE_LOGIN, "EnrootConfigCurrent", true, &p, NULL), 0);
        assert_string_equal(p.host, "k8s-7");
        assert_null(p.node);
        rollout_pod_done(&p);
        json_decref(pod);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_notice_event), cmocka_unit_test(test_pods),
                cmocka_unit_test(test_list),         cmocka_unit_test(test_ids),
                cmocka_unit_test(test_claims),       cmocka_unit_test(test_settling),
                cmocka_unit_test(test_policy_check), cmocka_unit_test(test_pod_verify),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
