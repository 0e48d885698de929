/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rollout.h"
#include "string-table.h"
#include "workload.h"

static const char *const rollout_role_table[_ROLE_MAX] = {
        [ROLE_WORKER] = "worker",
        [ROLE_LOGIN] = "login",
};

static const char *const pod_verdict_table[_VERDICT_MAX] = {
        [VERDICT_STALE] = "stale",
        [VERDICT_CURRENT] = "current",
        [VERDICT_UNKNOWN] = "unknown",
        [VERDICT_UNVERIFIED] = "unverified",
};

static const char *const node_claim_table[_CLAIM_MAX] = {
        [CLAIM_AVAILABLE] = "available",
        [CLAIM_SETTLING] = "settling",
        [CLAIM_OURS] = "ours",
        [CLAIM_REPLACED] = "replaced",
        [CLAIM_OTHER_ROLLOUT] = "other-rollout",
        [CLAIM_FOREIGN] = "foreign",
};

DEFINE_STRING_TABLE_TO_STRING(rollout_role, RolloutRole);
DEFINE_STRING_TABLE_TO_STRING(pod_verdict, PodVerdict);
DEFINE_STRING_TABLE_TO_STRING(node_claim, NodeClaim);

void rollout_pod_done(RolloutPod *p) {
        free(p->name);
        free(p->uid);
        free(p->node);
        free(p->host);
        free(p->why);
        *p = (RolloutPod){};
}

RolloutPod *rollout_pods_free(RolloutPod *pods, size_t n) {
        for (size_t i = 0; pods && i < n; i++)
                rollout_pod_done(&pods[i]);
        free(pods);
        return NULL;
}

static const char *string_at(const json_t *o, const char *a, const char *b) {
        const json_t *x = json_object_get(o, a);
        return json_string_value(b ? json_object_get(x, b) : x);
}

/* An RFC 3339 time in seconds, or -1. */
static int64_t time_sec(const char *s) {
        uint64_t usec;

        if (!s || workload_parse_time(s, &usec) < 0)
                return -1;
        return (int64_t) (usec / 1000000u);
}

static void format_sec(int64_t sec, char buf[static 32]) {
        time_t t = (time_t) sec;
        struct tm tm;

        if (!gmtime_r(&t, &tm) || strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                (void) snprintf(buf, 32, "%lld", (long long) sec);
}

static bool condition_true(const json_t *conditions, const char *type) {
        const json_t *c = condition_find(conditions, type);
        const char *s = json_string_value(json_object_get(c, "status"));
        return s && streq(s, "True");
}

int rollout_pod_from_json(const json_t *pod, RolloutRole role, const char *condition_type,
                          bool node_from_hostname, RolloutPod *ret, const char **ret_error) {
        _cleanup_(rollout_pod_done) RolloutPod p = {.role = role};
        const char *name = string_at(pod, "metadata", "name"),
                   *uid = string_at(pod, "metadata", "uid"),
                   *label = json_string_value(json_object_get(
                           json_object_get(json_object_get(pod, "metadata"), "labels"),
                           ROLLOUT_HOSTNAME_LABEL)),
                   *hostname = string_at(pod, "spec", "hostname"),
                   *host = string_at(pod, "spec", "nodeName");
        const json_t *conditions = json_object_get(json_object_get(pod, "status"), "conditions");
        const json_t *c = condition_find(conditions, condition_type);
        const char *status = json_string_value(json_object_get(c, "status")),
                   *reason = json_string_value(json_object_get(c, "reason"));

        if (!name || !*name || !uid || !*uid) {
                if (ret_error)
                        *ret_error = "a pod without metadata.name or metadata.uid";
                return -EBADMSG;
        }
        p.name = strdup(name);
        p.uid = strdup(uid);
        if (!p.name || !p.uid)
                return -ENOMEM;
        if (host && *host && !(p.host = strdup(host)))
                return -ENOMEM;
        if (role == ROLE_WORKER) {
                /* The operator's label first: it is the Slurm node name even
                 * where spec.hostname is not (hostNetwork, docs/DESIGN.md §4). */
                p.node = strdup(!node_from_hostname     ? name
                                : label && *label       ? label
                                : hostname && *hostname ? hostname
                                                        : name);
                if (!p.node)
                        return -ENOMEM;
        }
        p.verdict =
                !status                  ? VERDICT_UNKNOWN
                : streq(status, "False") ? VERDICT_STALE
                : streq(status, "True")  ? VERDICT_CURRENT
                /* The agent cannot see what the workload runs (it restarted
                     * after an update): only a new pod runs a known version. */
                : streq(status, "Unknown") && reason && streq(reason, ROLLOUT_UNVERIFIABLE_REASON)
                        ? VERDICT_STALE
                        : VERDICT_UNKNOWN;
        if (c)
                p.why = strdup(reason && *reason ? reason : status);
        else if (asprintf(&p.why, "no %s condition (is the agent running in it?)", condition_type) <
                 0)
                p.why = NULL;
        if (!p.why)
                return -ENOMEM;
        p.has_condition = c != NULL;
        p.written_sec = time_sec(json_string_value(json_object_get(c, "lastProbeTime")));
        p.created_sec = time_sec(string_at(pod, "metadata", "creationTimestamp"));
        p.ready = condition_true(conditions, "Ready");
        p.terminating = json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") &&
                        !json_is_null(json_object_get(json_object_get(pod, "metadata"),
                                                      "deletionTimestamp"));
        *ret = p;
        p = (RolloutPod){};
        return 0;
}

static int compare_pods(const void *a, const void *b) {
        return strcmp(((const RolloutPod *) a)->name, ((const RolloutPod *) b)->name);
}

int rollout_pods_from_list(const json_t *list, RolloutRole role, const char *condition_type,
                           bool node_from_hostname, RolloutPod **ret_pods, size_t *ret_n,
                           const char **ret_error) {
        const json_t *items = json_object_get(list, "items"), *pod;
        RolloutPod *pods;
        size_t n = 0, i;
        int r;

        if (!json_is_array(items)) {
                if (ret_error)
                        *ret_error = "the answer is not a PodList";
                return -EBADMSG;
        }
        if (json_array_size(items) > ROLLOUT_MAX_PODS)
                return -ENOBUFS;
        pods = calloc(json_array_size(items) + 1, sizeof(RolloutPod));
        if (!pods)
                return -ENOMEM;
        json_array_foreach(items, i, pod) {
                r = rollout_pod_from_json(pod, role, condition_type, node_from_hostname, &pods[n],
                                          ret_error);
                if (r < 0) {
                        rollout_pods_free(pods, n);
                        return r;
                }
                n++;
        }
        qsort(pods, n, sizeof(RolloutPod), compare_pods);
        *ret_pods = pods;
        *ret_n = n;
        return 0;
}

json_t *rollout_notice_event(const char *pod_name, const char *pod_namespace, const char *pod_uid,
                             const char *message, const char *instance, uint64_t now_usec) {
        char now[32], name[320], inst[129];

        condition_format_time(now_usec, now);
        (void) snprintf(name, sizeof name, "%.253s.%llx", pod_name, (unsigned long long) now_usec);
        (void) snprintf(inst, sizeof inst, "%s", instance ? instance : "");
        /* No eventTime: an Event without it is validated as the core/v1
         * Events kubectl and kubelet post (firstTimestamp, count). */
        return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s, s:s}, s:s, s:s, s:s, "
                         "s:s, s:s, s:i, s:{s:s, s:s?}, s:s, s:s?}",
                         "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace",
                         pod_namespace, "involvedObject", "apiVersion", "v1", "kind", "Pod", "name",
                         pod_name, "namespace", pod_namespace, "uid", pod_uid, "reason",
                         ROLLOUT_NOTICE_REASON, "message", message, "type", "Normal",
                         "firstTimestamp", now, "lastTimestamp", now, "count", 1, "source",
                         "component", ROLLOUT_NOTICE_COMPONENT, "host", inst[0] ? inst : NULL,
                         "reportingComponent", ROLLOUT_NOTICE_COMPONENT, "reportingInstance",
                         inst[0] ? inst : NULL);
}

void rollout_id_format(uint64_t now_usec, char buf[static ROLLOUT_ID_BYTES]) {
        time_t t = (time_t) (now_usec / 1000000u);
        struct tm tm;

        if (!gmtime_r(&t, &tm) || strftime(buf, ROLLOUT_ID_BYTES, "%Y%m%dT%H%M%SZ", &tm) == 0)
                (void) snprintf(buf, ROLLOUT_ID_BYTES, "19700101T000000Z");
}

bool rollout_id_parse(const char *id, int64_t *ret_sec) {
        struct tm tm = {};
        const char *end;

        if (strlen(id) != ROLLOUT_ID_BYTES - 1)
                return false;
        for (size_t i = 0; i < ROLLOUT_ID_BYTES - 1; i++) {
                bool digit = id[i] >= '0' && id[i] <= '9';
                if ((i == 8 && id[i] != 'T') || (i == 15 && id[i] != 'Z') ||
                    (i != 8 && i != 15 && !digit))
                        return false;
        }
        end = strptime(id, "%Y%m%dT%H%M%SZ", &tm);
        if (!end || *end)
                return false;
        if (ret_sec)
                *ret_sec = (int64_t) timegm(&tm);
        return true;
}

char *rollout_reason(const char *id) {
        char *s;

        if (asprintf(&s, ROLLOUT_REASON_PREFIX "%s: enroot configuration update", id) < 0)
                return NULL;
        return s;
}

bool rollout_reason_id(const char *reason, char buf[static ROLLOUT_ID_BYTES]) {
        const char *p = reason ? startswith(reason, ROLLOUT_REASON_PREFIX) : NULL;

        if (!p || strlen(p) < ROLLOUT_ID_BYTES - 1)
                return false;
        memcpy(buf, p, ROLLOUT_ID_BYTES - 1);
        buf[ROLLOUT_ID_BYTES - 1] = '\0';
        if (p[ROLLOUT_ID_BYTES - 1] != ':' && p[ROLLOUT_ID_BYTES - 1] != '\0')
                return false;
        return rollout_id_parse(buf, NULL);
}

bool rollout_node_is_settling(const SlurmNode *n) {
        const uint32_t transient = SLURM_NODE_NOT_RESPONDING | SLURM_NODE_COMPLETING;
        SlurmNode rest = *n;

        if (!(n->flags & transient) || *n->reason || !slurm_node_is_unavailable(n))
                return false;
        /* What is left once the transient flags clear must be in service.
         * A node Slurm shows only as "COMPLETING" (sinfo's %T) has no base
         * word: its base is idle or allocated, whichever the jobs leave. */
        rest.flags &= ~transient;
        if (rest.base == SLURM_NODE_UNKNOWN && (n->flags & SLURM_NODE_COMPLETING))
                rest.base = SLURM_NODE_IDLE;
        return !slurm_node_is_unavailable(&rest);
}

NodeClaim rollout_node_claim(const SlurmNode *n, const char *id) {
        char other[ROLLOUT_ID_BYTES];
        int64_t start = 0;

        if (rollout_reason_id(n->reason, other))
                return id && streq(other, id) ? CLAIM_OURS : CLAIM_OTHER_ROLLOUT;
        /* The preStop reason, written after this rollout began, on a node
         * that is down: the rollout replaced its pod. */
        if (id && streq(n->reason, ROLLOUT_PRESTOP_REASON) && rollout_id_parse(id, &start) &&
            n->reason_time_sec >= start)
                return CLAIM_REPLACED;
        if (rollout_node_is_settling(n))
                return CLAIM_SETTLING;
        if (slurm_node_is_unavailable(n))
                return CLAIM_FOREIGN;
        return CLAIM_AVAILABLE;
}

void rollout_trust_done(RolloutTrust *t) {
        free(t->why_not);
        *t = (RolloutTrust){};
}

/* True when one of the expressions in list (objects with "expression")
 * quotes word as a CEL string literal. */
static bool expressions_quote(const json_t *list, const char *word) {
        _cleanup_free_ char *single = NULL, *dbl = NULL;
        const json_t *x;
        size_t i;

        if (asprintf(&single, "'%s'", word) < 0 || asprintf(&dbl, "\"%s\"", word) < 0)
                return false;
        json_array_foreach(list, i, x) {
                const char *e = json_string_value(json_object_get(x, "expression"));
                if (e && (strstr(e, single) || strstr(e, dbl)))
                        return true;
        }
        return false;
}

static bool is_admission_object(const json_t *o, const char *kind, const char *name) {
        const char *k = string_at(o, "kind", NULL), *v = string_at(o, "apiVersion", NULL),
                   *n = string_at(o, "metadata", "name");
        return k && streq(k, kind) && v && streq(v, "admissionregistration.k8s.io/v1") && n &&
               streq(n, name);
}

int rollout_policy_check(const json_t *policy, const json_t *binding, const char *name,
                         const char *condition_type, int64_t *ret_since_sec, char **ret_why) {
        const json_t *spec = json_object_get(policy, "spec"),
                     *bspec = json_object_get(binding, "spec"), *a;
        const char *failure = string_at(spec, "failurePolicy", NULL),
                   *target = string_at(bspec, "policyName", NULL);
        int64_t pt = time_sec(string_at(policy, "metadata", "creationTimestamp")),
                bt = time_sec(string_at(binding, "metadata", "creationTimestamp"));
        bool deny = false;
        size_t i;
        int k = 0;

        json_array_foreach(json_object_get(bspec, "validationActions"), i, a) deny =
                deny || (json_is_string(a) && streq(json_string_value(a), "Deny"));
        if (!policy)
                k = asprintf(ret_why, "ValidatingAdmissionPolicy %s does not exist", name);
        else if (!binding)
                k = asprintf(ret_why, "ValidatingAdmissionPolicyBinding %s does not exist", name);
        else if (!is_admission_object(policy, "ValidatingAdmissionPolicy", name) || pt < 0)
                k = asprintf(ret_why,
                             "the answer for ValidatingAdmissionPolicy %s is not that policy "
                             "with a creationTimestamp",
                             name);
        else if (!is_admission_object(binding, "ValidatingAdmissionPolicyBinding", name) || bt < 0)
                k = asprintf(ret_why,
                             "the answer for ValidatingAdmissionPolicyBinding %s is not that "
                             "binding with a creationTimestamp",
                             name);
        else if (failure && streq(failure, "Ignore"))
                k = asprintf(ret_why,
                             "ValidatingAdmissionPolicy %s has failurePolicy Ignore: a failed "
                             "check lets the write through",
                             name);
        else if (condition_type &&
                 !expressions_quote(json_object_get(spec, "validations"), condition_type) &&
                 !expressions_quote(json_object_get(spec, "variables"), condition_type))
                k = asprintf(ret_why,
                             "ValidatingAdmissionPolicy %s does not protect condition type %s "
                             "(no expression names it: edit the policy for --condition-type)",
                             name, condition_type);
        else if (!target || !streq(target, name))
                k = asprintf(ret_why, "ValidatingAdmissionPolicyBinding %s binds policy %s, not %s",
                             name, target ? target : "(none)", name);
        else if (!deny)
                k = asprintf(ret_why,
                             "ValidatingAdmissionPolicyBinding %s does not deny (validationActions "
                             "without Deny)",
                             name);
        else {
                *ret_since_sec = pt > bt ? pt : bt;
                return 0;
        }
        if (k < 0)
                return -ENOMEM;
        return -EPERM;
}

int rollout_pod_verify(RolloutPod *p, const RolloutTrust *t, int64_t now_sec) {
        char written[32], since[32];
        char *why = NULL;
        int k = 0;

        if (t->unchecked || !p->has_condition || p->verdict == VERDICT_UNVERIFIED)
                return 0;
        format_sec(p->written_sec, written);
        format_sec(t->since_sec, since);
        if (t->why_not)
                k = asprintf(&why, "unverified: %s; the condition says %s", t->why_not, p->why);
        else if (p->created_sec > t->since_sec)
                return 0; /* a pod is created without status: every write came later */
        else if (p->written_sec < 0)
                k = asprintf(&why,
                             "unverified: the condition has no lastProbeTime, so nothing shows "
                             "it was written since the admission policies (%s); it says %s",
                             since, p->why);
        else if (p->written_sec > now_sec + ROLLOUT_MAX_CLOCK_AHEAD_SEC)
                k = asprintf(&why,
                             "unverified: the condition's lastProbeTime %s is in the future; it "
                             "says %s",
                             written, p->why);
        else if (p->written_sec <= t->since_sec)
                k = asprintf(&why,
                             "unverified: the condition was written at %s, not after the "
                             "admission policies were bound (%s); it says %s",
                             written, since, p->why);
        else
                return 0;
        if (k < 0)
                return -ENOMEM;
        free(p->why);
        p->why = why;
        p->verdict = VERDICT_UNVERIFIED;
        return 0;
}
