/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rollout's judgements, without I/O: which pods are stale, which Slurm
 * node a worker pod is, and whose a node's state is. A rollout writes its id
 * into every reason it sets, so that a later run finds from the cluster
 * alone where an interrupted one was (the operator
 * guide's maintenance procedure, docs/DESIGN.md §4).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "condition.h"
#include "slurm.h"

/* Every reason a rollout sets starts with this, then the id. */
#define ROLLOUT_REASON_PREFIX       "aicr-enroot-rollout "
/* What the slurmd container's preStop hook writes (docs/DESIGN.md §4). */
#define ROLLOUT_PRESTOP_REASON      "slurm-operator: Pod is terminating"
/* "20261202T180512Z": the rollout's start, UTC, to the second. */
#define ROLLOUT_ID_BYTES            17u
/* The label Slinky's NodeSet controller puts on every worker pod, holding
 * its Slurm node name (slurm-operator api/v1beta1/well_known.go,
 * LabelNodeSetPodHostname): under hostNetwork it follows the Kubernetes
 * node, not spec.hostname (docs/DESIGN.md §4). */
#define ROLLOUT_HOSTNAME_LABEL      "nodeset.slinky.slurm.net/pod-hostname"
/* The agent's condition reason when it cannot see which ConfigMap version the
 * workload runs (workload.h): such a pod is replaced like a drifted one. */
#define ROLLOUT_UNVERIFIABLE_REASON "WorkloadUnverifiable"
/* Pods of one role considered; more is refused. */
#define ROLLOUT_MAX_PODS            65536u
/* The admission policies, each bound by a binding of the same name, that
 * leave a pod's condition to the pod's own agent
 * (container/kubernetes/validatingadmissionpolicy.yaml): the agent writes
 * only its own pod's status; nobody else changes its condition. */
#define ROLLOUT_POLICY_OWN_POD      "aicr-enroot-agent-own-pod-status"
#define ROLLOUT_POLICY_CONDITION    "aicr-enroot-agent-condition-writers"
/* A condition written further ahead of this machine's clock than this is
 * not believed (its time was not the agent's). */
#define ROLLOUT_MAX_CLOCK_AHEAD_SEC 300

typedef enum RolloutRole {
        ROLE_WORKER,
        ROLE_LOGIN,
        _ROLE_MAX,
} RolloutRole;

typedef enum PodVerdict {
        VERDICT_STALE,      /* the agent says False, or Unknown WorkloadUnverifiable: replace it */
        VERDICT_CURRENT,    /* True: never touched */
        VERDICT_UNKNOWN,    /* Unknown, or no condition (no agent): not replaced, reported */
        VERDICT_UNVERIFIED, /* a condition its agent may not have written: not replaced, reported */
        _VERDICT_MAX,
} PodVerdict;

typedef struct RolloutPod {
        char *name;
        char *uid;
        RolloutRole role;
        char *node; /* the Slurm node of a worker (rollout_pod_from_json()); NULL for login */
        char *host; /* spec.nodeName, the Kubernetes node it runs on; NULL when not scheduled */
        PodVerdict verdict;
        char *why;        /* the condition's reason, or "no EnrootConfigCurrent condition" */
        bool ready;       /* condition Ready=True */
        bool terminating; /* metadata.deletionTimestamp is set */
        bool has_condition;
        int64_t written_sec; /* the condition's lastProbeTime (its last write), or -1 */
        int64_t created_sec; /* metadata.creationTimestamp, or -1 */
} RolloutPod;

const char *rollout_role_to_string(RolloutRole r);
const char *pod_verdict_to_string(PodVerdict v);

/* Reads a Pod object. A worker's Slurm node: with node_from_hostname, the
 * ROLLOUT_HOSTNAME_LABEL label when set and not empty, else spec.hostname
 * when set (Slinky's chart sets it), else the pod name; without, always the
 * pod name. Returns 0, -EBADMSG (no name or UID: *ret_error says which),
 * -ENOMEM. */
int rollout_pod_from_json(const json_t *pod, RolloutRole role, const char *condition_type,
                          bool node_from_hostname, RolloutPod *ret, const char **ret_error);
void rollout_pod_done(RolloutPod *p);

/* Reads a PodList's items, sorted by name. Returns 0 with *ret_pods (free
 * with rollout_pods_free()), -EBADMSG, -ENOBUFS (over ROLLOUT_MAX_PODS), -ENOMEM. */
int rollout_pods_from_list(const json_t *list, RolloutRole role, const char *condition_type,
                           bool node_from_hostname, RolloutPod **ret_pods, size_t *ret_n,
                           const char **ret_error);
RolloutPod *rollout_pods_free(RolloutPod *pods, size_t n);

/* Whether the pods' conditions can be believed. */
typedef struct RolloutTrust {
        bool unchecked;    /* --trust-unprotected-conditions: every condition is believed */
        char *why_not;     /* the policies are not in force (why), so no condition is believed */
        int64_t since_sec; /* else: in force since then (the latest creationTimestamp) */
} RolloutTrust;

void rollout_trust_done(RolloutTrust *t);

/* Checks one policy of ROLLOUT_POLICY_* and its binding (the API server's
 * objects; NULL: not found) as the rollout needs them: the policy named name,
 * failurePolicy not Ignore, with condition_type (when not NULL) quoted in one
 * of its expressions; the binding named name, for that policy, with Deny
 * among its validationActions. Returns 0 with *ret_since_sec the later
 * creationTimestamp of the two, -EPERM with *ret_why (free it) saying what
 * is wrong, or -ENOMEM. */
int rollout_policy_check(const json_t *policy, const json_t *binding, const char *name,
                         const char *condition_type, int64_t *ret_since_sec, char **ret_why);

/* Makes p VERDICT_UNVERIFIED, with why it cannot be believed in p->why, when
 * its condition may have been written by anyone but its agent: t says the
 * policies are not in force; or the pod is older than them and its
 * condition's lastProbeTime is missing, not after t->since_sec, or more than
 * ROLLOUT_MAX_CLOCK_AHEAD_SEC after now_sec. A pod without the condition,
 * and every pod under t->unchecked, is left as it is. Returns 0 or -ENOMEM. */
int rollout_pod_verify(RolloutPod *p, const RolloutTrust *t, int64_t now_sec);

/* The reason of the Events the rollout posts on the login pods it is about
 * to replace (a CamelCase word, as Kubernetes reasons are). */
#define ROLLOUT_NOTICE_REASON    "EnrootConfigRollout"
/* Who posts them: source.component and reportingComponent. */
#define ROLLOUT_NOTICE_COMPONENT "aicr-enroot-agent"

/* A core/v1 Event (type Normal, reason ROLLOUT_NOTICE_REASON) on pod
 * (name, namespace, uid) saying message, from ROLLOUT_NOTICE_COMPONENT on
 * instance (a host name, cut to 128 bytes, the API server's limit), named
 * POD.<hex now_usec> as kubectl-made events are. Returns a new reference or
 * NULL when out of memory. */
json_t *rollout_notice_event(const char *pod_name, const char *pod_namespace, const char *pod_uid,
                             const char *message, const char *instance, uint64_t now_usec);

/* A new id for a rollout starting at now_usec (CLOCK_REALTIME). */
void rollout_id_format(uint64_t now_usec, char buf[static ROLLOUT_ID_BYTES]);
/* True for a well-formed id; *ret_sec (may be NULL) its time. */
bool rollout_id_parse(const char *id, int64_t *ret_sec);

/* The drain reason of rollout id. Returns a new string or NULL. */
char *rollout_reason(const char *id);
/* The id a reason of a rollout carries, copied into buf; false when the
 * reason is not a rollout's. */
bool rollout_reason_id(const char *reason, char buf[static ROLLOUT_ID_BYTES]);

typedef enum NodeClaim {
        CLAIM_AVAILABLE,     /* in service, no reason: nobody's */
        CLAIM_SETTLING,      /* out of service only for a moment Slurm ends by itself
                              * (rollout_node_is_settling()): judged again later */
        CLAIM_OURS,          /* drained (or down) with this rollout's reason */
        CLAIM_REPLACED,      /* down with the preStop reason, set after this rollout began:
                            * its pod was replaced by this rollout, so the reason is ours */
        CLAIM_OTHER_ROLLOUT, /* another rollout's reason */
        CLAIM_FOREIGN,       /* out of service for a reason that is not a rollout's */
        _CLAIM_MAX,
} NodeClaim;

const char *node_claim_to_string(NodeClaim c);

/* Whether n is out of service only for a moment that Slurm ends by itself,
 * with no reason set: NOT_RESPONDING on a node that is not DOWN (slurmctld
 * marks a resumed node so until it answers the next ping), or COMPLETING
 * (the epilogs of its last jobs run; Slurm may print "COMPLETING" with no
 * base state). False for a node in service, and whenever anything else takes
 * it out of service: DOWN, DRAIN, FAIL, any other state or flag that
 * slurm_node_is_unavailable() counts, or a reason. Those are judged at once;
 * a settling node only after it has had the time to settle. */
bool rollout_node_is_settling(const SlurmNode *n);

/* Whose the node's state is, for rollout id (NULL: no rollout runs yet, so
 * nothing is ours). A node of no rollout that is only settling is
 * CLAIM_SETTLING, not CLAIM_FOREIGN. */
NodeClaim rollout_node_claim(const SlurmNode *n, const char *id);
