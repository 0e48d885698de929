/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aicr-enroot-agent rollout [plan|apply|status|abort] [OPTIONS]
 *
 * The guide's maintenance procedure for an enroot configuration change,
 * applied to the pods that need it: drain the Slurm nodes of stale worker
 * pods (never with NodeName=ALL, never over another reason), wait for their
 * allocations to end, replace the worker pods one at a time, then the login
 * pods, and only then resume what this rollout drained. Every reason it sets
 * carries the rollout id, so an interrupted rollout is found again from the
 * cluster itself. A command-line program: it blocks, and talks to Slurm
 * through its commands and to Kubernetes through the agent's client.
 * It acts on a pod's condition only when the pod's own agent wrote it: the
 * admission policies that ensure it are bound, and the condition was written
 * since (rollout_pod_verify()); other pods are reported unverified.
 *
 * This file is the run loop: what plan, apply, status and abort do once the
 * command (cmd-rollout.c) has connected to the API server and Slurm, and the
 * helpers its other files share (rollout-steps.h): the ConfigMap check and
 * --verify-image (rollout-check.c), the login notice (rollout-notice.c).
 */
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "kube.h"
#include "log.h"
#include "options.h"
#include "configmap.h"
#include "print.h"
#include "rollout-cmd.h"
#include "rollout-lease.h"
#include "rollout-steps.h"
#include "rollout-verify.h"
#include "rollout.h"
#include "shell.h"
#include "slurm-client.h"
#include "spawn-run.h"
#include "timeutil.h"

/* ---------------------------------------------------------------------------
 * Output: progress lines on stdout (stderr with --format json), and steps in
 * the JSON report. */

void run_say(const Rollout *r, const char *fmt, ...) {
        FILE *f = r->args->json ? stderr : stdout;
        time_t t = time(NULL);
        struct tm tm;
        char stamp[16] = "";
        va_list ap;

        /* A maintenance runs for hours: every line says when. */
        if (localtime_r(&t, &tm))
                (void) strftime(stamp, sizeof stamp, "%H:%M:%S ", &tm);
        (void) fputs(stamp, f);
        va_start(ap, fmt);
        (void) vfprintf(f, fmt, ap);
        va_end(ap);
        (void) fputc('\n', f);
        (void) fflush(f);
}

void run_step(Rollout *r, const char *what, const char *target, const char *result,
              const char *detail) {
        json_t *s = json_pack("{s:s, s:s?, s:s, s:s?}", "step", what, "target", target, "result",
                              result, "detail", detail);
        if (s)
                (void) json_array_append_new(r->steps, s);
}

void run_sleep(uint64_t usec) {
        struct timespec ts = {.tv_sec = (time_t) (usec / 1000000u),
                              .tv_nsec = (long) (usec % 1000000u) * 1000};
        (void) nanosleep(&ts, NULL);
}

static bool excluded(const Rollout *r, const char *node) {
        for (size_t i = 0; node && i < r->args->n_excludes; i++)
                if (streq(r->args->excludes[i], node))
                        return true;
        return false;
}

/* ---------------------------------------------------------------------------
 * Kubernetes */

int run_kube_request(Rollout *r, KubeVerb verb, const char *method, const char *path,
                     const char *body, KubeResult *ret) {
        int k = kube_call_sync(r->kube,
                               &(KubeRequest){.verb = verb,
                                              .method = method,
                                              .path = path,
                                              .body = body,
                                              .content_type = body ? "application/json" : NULL,
                                              .timeout_usec = 30u * 1000000u},
                               ret);
        if (k < 0)
                return log_error_errno(k, "%s %s: cannot send the request: %m", method, path);
        if (ret->status == 0) {
                const char *hint = kube_error_hint(ret->error);

                /* the daemon's hint after a refused TLS handshake, else a word
                 * on the network */
                log_error("%s %s%s: no answer: %s%s.%s", method, r->api_url, path,
                          strnull(ret->error_detail), hint,
                          *hint ? "" : " Is the API server reachable from here?");
                kube_result_done(ret);
                return -EIO;
        }
        return 0;
}

/* Logs a failed answer: the request, the code, the server's message and,
 * for 401 and 403, what to check. */
int run_answer_error(const Rollout *r, const char *method, const char *path,
                     const KubeResult *res) {
        KubeStatus st;

        kube_status_parse(res->body, res->body_len, &st);
        return log_error_errno(
                -EIO, "%s %s%s: %ld %s: %s%s%s%s%s", method, r->api_url, path, res->status,
                st.reason[0] ? st.reason : "error", st.message[0] ? st.message : "no message",
                res->status == 401   ? ". The API server does not accept the credentials: the "
                                       "token in --serviceaccount-dir, or kubectl proxy's "
                                       "own login"
                : res->status == 403 ? ". The rollout needs list, get and delete on pods, get, "
                                       "create and update on the Lease " ROLLOUT_LEASE_NAME
                                       ", and get on the ConfigMap "
                                     : "",
                res->status == 403 ? r->args->configmap : "",
                res->status == 403 ? ", in namespace " : "",
                res->status == 403 ? r->namespace : "");
}

int run_list_pods(Rollout *r, RolloutRole role) {
        _cleanup_(kube_result_done) KubeResult res = {};
        _cleanup_free_ char *path = NULL;
        char sel[2048];
        json_t *list;
        const char *error = NULL;
        int k;

        if (kube_url_escape(r->args->selector[role], sel, sizeof sel) < 0 ||
            asprintf(&path, "/api/v1/namespaces/%s/pods?labelSelector=%s", r->namespace, sel) < 0)
                return log_oom();
        k = run_kube_request(r, KUBE_VERB_LIST, "GET", path, NULL, &res);
        if (k < 0)
                return k;
        if (res.status != 200)
                return run_answer_error(r, "GET", path, &res);
        list = json_loadb(res.body, res.body_len, 0, NULL);
        if (!list)
                return log_error_errno(-EBADMSG, "GET %s: the answer is not JSON.", path);
        r->pods[role] = rollout_pods_free(r->pods[role], r->n_pods[role]);
        r->n_pods[role] = 0;
        k = rollout_pods_from_list(list, role, r->args->condition_type, r->args->node_from_hostname,
                                   &r->pods[role], &r->n_pods[role], &error);
        json_decref(list);
        if (k == -ENOMEM)
                return log_oom();
        if (k < 0)
                return log_error_errno(k, "GET %s: %s.", path, error ? error : "too many pods");
        for (size_t i = 0; i < r->n_pods[role]; i++)
                if (rollout_pod_verify(&r->pods[role][i], &r->trust,
                                       (int64_t) (now_usec(CLOCK_REALTIME) / 1000000u)) < 0)
                        return log_oom();
        return 0;
}

/* One pod by name: 1 with *ret, 0 when it does not exist. */
static int get_pod(Rollout *r, const char *name, RolloutRole role, RolloutPod *ret) {
        _cleanup_(kube_result_done) KubeResult res = {};
        _cleanup_free_ char *path = NULL;
        json_t *pod;
        int k;

        if (asprintf(&path, "/api/v1/namespaces/%s/pods/%s", r->namespace, name) < 0)
                return log_oom();
        k = run_kube_request(r, KUBE_VERB_GET, "GET", path, NULL, &res);
        if (k < 0)
                return k;
        if (res.status == 404)
                return 0;
        if (res.status != 200)
                return run_answer_error(r, "GET", path, &res);
        pod = json_loadb(res.body, res.body_len, 0, NULL);
        k = pod ? rollout_pod_from_json(pod, role, r->args->condition_type,
                                        r->args->node_from_hostname, ret, NULL)
                : -EBADMSG;
        json_decref(pod);
        if (k < 0)
                return log_error_errno(k, "GET %s: the answer is not a usable pod.", path);
        if (rollout_pod_verify(ret, &r->trust, (int64_t) (now_usec(CLOCK_REALTIME) / 1000000u)) <
            0) {
                rollout_pod_done(ret);
                return log_oom();
        }
        return 1;
}

/* GET of a cluster-scoped admission object: 1 with *ret, 0 when it does not
 * exist, -EACCES when the rollout may not read it (*ret_why says so), else
 * a failure (logged). */
static int get_admission(Rollout *r, const char *resource, const char *name, json_t **ret,
                         char **ret_why) {
        _cleanup_(kube_result_done) KubeResult res = {};
        _cleanup_free_ char *path = NULL;
        KubeStatus st;
        int k;

        if (asprintf(&path, "/apis/admissionregistration.k8s.io/v1/%s/%s", resource, name) < 0)
                return log_oom();
        k = run_kube_request(r, KUBE_VERB_GET, "GET", path, NULL, &res);
        if (k < 0)
                return k;
        if (res.status == 404)
                return 0;
        if (res.status == 401 || res.status == 403) {
                kube_status_parse(res.body, res.body_len, &st);
                if (asprintf(ret_why,
                             "GET %s: %ld %s (the rollout needs get on validatingadmissionpolicies "
                             "and validatingadmissionpolicybindings, cluster-wide)",
                             path, res.status, st.reason[0] ? st.reason : "Forbidden") < 0)
                        return log_oom();
                return -EACCES;
        }
        if (res.status != 200)
                return run_answer_error(r, "GET", path, &res);
        *ret = json_loadb(res.body, res.body_len, 0, NULL);
        if (!*ret)
                return log_error_errno(-EBADMSG, "GET %s: the answer is not JSON.", path);
        return 1;
}

/* Whether the admission policies that leave each pod's condition to its own
 * agent are in force, and since when: r->trust. */
static int read_trust(Rollout *r) {
        static const char *const names[] = {ROLLOUT_POLICY_OWN_POD, ROLLOUT_POLICY_CONDITION};
        int64_t since = 0;

        rollout_trust_done(&r->trust);
        r->trust.unchecked = r->args->trust_unprotected;
        if (r->trust.unchecked)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_(json_decrefp) json_t *policy = NULL, *binding = NULL;
                int64_t t = 0;
                int k;

                k = get_admission(r, "validatingadmissionpolicies", names[i], &policy,
                                  &r->trust.why_not);
                if (k >= 0)
                        k = get_admission(r, "validatingadmissionpolicybindings", names[i],
                                          &binding, &r->trust.why_not);
                if (k == -EACCES)
                        return 0;
                if (k < 0)
                        return k;
                k = rollout_policy_check(
                        policy, binding, names[i],
                        streq(names[i], ROLLOUT_POLICY_CONDITION) ? r->args->condition_type : NULL,
                        &t, &r->trust.why_not);
                if (k == -ENOMEM)
                        return log_oom();
                if (k < 0)
                        return 0;
                since = t > since ? t : since;
        }
        r->trust.since_sec = since;
        return 0;
}

static int delete_pod(Rollout *r, const RolloutPod *p) {
        _cleanup_(kube_result_done) KubeResult res = {};
        _cleanup_free_ char *path = NULL, *body = NULL;
        int k;

        /* The UID precondition: only the pod that was judged stale goes. */
        if (asprintf(&path, "/api/v1/namespaces/%s/pods/%s", r->namespace, p->name) < 0 ||
            asprintf(&body,
                     "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"preconditions\":"
                     "{\"uid\":\"%s\"}}",
                     p->uid) < 0)
                return log_oom();
        k = run_kube_request(r, KUBE_VERB_DELETE, "DELETE", path, body, &res);
        if (k < 0)
                return k;
        if (res.status == 404)
                return 0; /* gone already: its replacement is what we wait for */
        if (res.status == 409) {
                KubeStatus st;

                kube_status_parse(res.body, res.body_len, &st);
                /* The name is another pod's now: the stale one was deleted
                 * and replaced meanwhile (its controller, an operator). That
                 * one is what we wait for, as after our own delete; it is
                 * never deleted in its place. */
                if (kube_status_is_uid_conflict(&st)) {
                        run_say(r,
                                "  pod %s was replaced meanwhile (the UID precondition failed: "
                                "%s): "
                                "waiting for the new pod",
                                p->name, st.message);
                        return 0;
                }
        }
        if (res.status != 200 && res.status != 202)
                return run_answer_error(r, "DELETE", path, &res);
        return 0;
}

/* ---------------------------------------------------------------------------
 * The Lease: the rollout's record and its lock (rollout-lease.h). Every step
 * is written to it before it is taken; a run renews it while it waits. */

static char *lease_path(const Rollout *r, bool named) {
        char *p = NULL;

        if (asprintf(&p, "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s", r->namespace,
                     named ? "/" ROLLOUT_LEASE_NAME : "") < 0)
                return NULL;
        return p;
}

static int lease_take_answer(Rollout *r, const char *method, const char *path,
                             const KubeResult *res) {
        _cleanup_(json_decrefp) json_t *o = json_loadb(res->body, res->body_len, 0, NULL);
        RolloutLease l = {};
        const char *error = "not JSON";
        int k = o ? rollout_lease_parse(o, &l, &error) : -EBADMSG;

        if (k == -ENOMEM)
                return log_oom();
        if (k < 0)
                return log_error_errno(k,
                                       "%s %s%s: the Lease is not a rollout's record: %s. Look at "
                                       "it with `kubectl get lease -n %s " ROLLOUT_LEASE_NAME
                                       " -o yaml`; delete it only when no rollout is under way.",
                                       method, r->api_url, path, error, r->namespace);
        rollout_lease_done(&r->lease);
        r->lease = l;
        r->lease_exists = true;
        return 0;
}

/* Reads the Lease into r->lease (r->lease_exists false when there is none). */
static int read_lease(Rollout *r) {
        _cleanup_(kube_result_done) KubeResult res = {};
        _cleanup_free_ char *path = lease_path(r, true);
        int k;

        if (!path)
                return log_oom();
        k = run_kube_request(r, KUBE_VERB_GET, "GET", path, NULL, &res);
        if (k < 0)
                return k;
        if (res.status == 404) {
                rollout_lease_done(&r->lease);
                r->lease_exists = false;
                return 0;
        }
        if (res.status != 200)
                return run_answer_error(r, "GET", path, &res);
        return lease_take_answer(r, "GET", path, &res);
}

/* Writes the Lease, held by holder (NULL: released) with record: a create
 * when there is none, else an update from the resourceVersion last read, so
 * that a writer in between makes it fail. Returns 1, 0 when another wrote
 * first (409: AlreadyExists or Conflict), or a failure (logged). */
static int write_lease(Rollout *r, const char *holder, const json_t *record) {
        _cleanup_(kube_result_done) KubeResult res = {};
        _cleanup_(json_decrefp) json_t *o = NULL;
        _cleanup_free_ char *path = lease_path(r, r->lease_exists), *body = NULL;
        const char *method = r->lease_exists ? "PUT" : "POST";
        int k;

        o = rollout_lease_object(r->namespace, holder, r->args->lease_duration_sec,
                                 r->lease_held ? r->lease.acquire_time : NULL,
                                 now_usec(CLOCK_REALTIME),
                                 r->lease_exists ? r->lease.resource_version : NULL, record);
        body = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (!path || !body)
                return log_oom();
        /* an update counts with the other in-place writes */
        k = run_kube_request(r, r->lease_exists ? KUBE_VERB_PATCH : KUBE_VERB_CREATE, method, path,
                             body, &res);
        if (k < 0)
                return k;
        if (res.status == 409)
                return 0;
        if (res.status != 200 && res.status != 201)
                return run_answer_error(r, method, path, &res);
        k = lease_take_answer(r, method, path, &res);
        if (k < 0)
                return k;
        r->lease_written_usec = now_usec(CLOCK_MONOTONIC);
        return 1;
}

/* The record of the rollout this run works on: the one it writes, else the
 * Lease's when it is this rollout's and not finished. Borrowed; may be NULL. */
const json_t *run_record_of(const Rollout *r) {
        if (r->record)
                return r->record;
        if (r->lease_exists && rollout_record_running(r->lease.record) &&
            streq_ptr(rollout_record_id(r->lease.record), r->id))
                return r->lease.record;
        return NULL;
}

static LeaseOwner lease_owner(const Rollout *r) {
        return r->lease_exists ? rollout_lease_owner(&r->lease, r->holder,
                                                     (int64_t) now_usec(CLOCK_REALTIME))
                               : LEASE_FREE;
}

/* When another live process holds the Lease: says so, returns true. */
static bool lease_busy(Rollout *r) {
        if (lease_owner(r) != LEASE_HELD)
                return false;
        run_say(r,
                "busy: the Lease %s/" ROLLOUT_LEASE_NAME " is held by %s (rollout %s, renewed %s, "
                "for %llds): another rollout runs. Nothing was changed.",
                r->namespace, r->lease.holder, strnull(rollout_record_id(r->lease.record)),
                strnull(r->lease.renew_time), (long long) r->lease.duration_sec);
        run_step(r, "lease", ROLLOUT_LEASE_NAME, "busy", r->lease.holder);
        return true;
}

/* Takes the Lease for this run: a free or expired one (taken over: its
 * record goes on), never one another live process holds. Returns 0,
 * -EBUSY (said), or a failure. */
static int lease_acquire(Rollout *r) {
        const json_t *rec = r->lease_exists ? r->lease.record : NULL;
        _cleanup_(json_decrefp) json_t *record = NULL;
        LeaseOwner o = lease_owner(r);
        int k;

        if (lease_busy(r))
                return -EBUSY;
        if (rollout_record_running(rec) && !streq_ptr(rollout_record_id(rec), r->id)) {
                run_say(r,
                        "busy: the Lease records rollout %s, not finished: continue it (`rollout "
                        "apply` without --rollout-id) or abort it first. Nothing was changed.",
                        rollout_record_id(rec));
                return -EBUSY;
        }
        if (o == LEASE_EXPIRED)
                run_say(r,
                        "lease: taking over from %s, which stopped renewing it at %s (more than "
                        "%llds "
                        "ago)",
                        r->lease.holder, strnull(r->lease.renew_time),
                        (long long) r->lease.duration_sec);
        record = rollout_record_running(rec) ? json_deep_copy(rec) : rollout_record_new(r->id);
        if (!record)
                return log_oom();
        k = write_lease(r, r->holder, record);
        if (k < 0)
                return k;
        if (k == 0) {
                run_say(r,
                        "busy: another rollout took the Lease %s/" ROLLOUT_LEASE_NAME
                        " first (409). Nothing was changed.",
                        r->namespace);
                run_step(r, "lease", ROLLOUT_LEASE_NAME, "busy", NULL);
                return -EBUSY;
        }
        json_decref(r->record);
        r->record = TAKE_PTR(record);
        r->lease_held = true;
        run_step(r, "lease", ROLLOUT_LEASE_NAME, "acquired", r->holder);
        return 0;
}

static int lease_lost(Rollout *r) {
        r->lease_held = false;
        return log_error_errno(-EBUSY,
                               "Lost the Lease %s/" ROLLOUT_LEASE_NAME
                               ": another process wrote it (this run stopped renewing it for "
                               "longer than --lease-duration). Stopping here.",
                               r->namespace);
}

/* Write-ahead: records step (stolen) in the Lease before it is taken. A
 * no-op when this run does not hold it. */
int run_lease_note(Rollout *r, json_t *s) {
        int k;

        if (!r->lease_held) {
                json_decref(s);
                return 0;
        }
        k = rollout_record_add(r->record, s);
        if (k == -E2BIG)
                return log_error_errno(k,
                                       "The Lease's record is full (%u steps, %u bytes): finish "
                                       "this rollout in parts (--exclude).",
                                       ROLLOUT_LEASE_MAX_STEPS, ROLLOUT_LEASE_MAX_BYTES);
        if (k < 0)
                return log_oom();
        k = write_lease(r, r->holder, r->record);
        return k < 0 ? k : k == 0 ? lease_lost(r) : 0;
}

/* Renews the Lease at a third of its duration. */
int run_lease_renew(Rollout *r) {
        int k;

        if (!r->lease_held || now_usec(CLOCK_MONOTONIC) - r->lease_written_usec <
                                      (uint64_t) r->args->lease_duration_sec * 1000000u / 3u)
                return 0;
        k = write_lease(r, r->holder, r->record);
        return k < 0 ? k : k == 0 ? lease_lost(r) : 0;
}

/* Releases the Lease: no holder, the record kept with state (NULL: as it is,
 * running, for a later run to continue). */
static int lease_release(Rollout *r, const char *state) {
        int k;

        if (!r->lease_held)
                return 0;
        if (state && rollout_record_set_state(r->record, state) < 0)
                return log_oom();
        k = write_lease(r, NULL, r->record);
        r->lease_held = false;
        return k < 0 ? k : k == 0 ? lease_lost(r) : 0;
}

/* Between two looks while waiting: the Lease renewed, then the poll interval. */
static int poll_wait(Rollout *r) {
        int k = run_lease_renew(r);

        if (k < 0)
                return k;
        run_sleep(r->args->poll_usec);
        return 0;
}

static void lease_report(Rollout *r) {
        if (!r->lease_exists) {
                (void) json_object_set_new(r->report, "lease", json_null());
                return;
        }
        (void) json_object_set_new(r->report, "lease",
                                   json_pack("{s:s, s:s?, s:s?, s:s?, s:I, s:s, s:O?}", "name",
                                             ROLLOUT_LEASE_NAME, "holder", r->lease.holder,
                                             "acquire_time", r->lease.acquire_time, "renew_time",
                                             r->lease.renew_time, "duration_seconds",
                                             (json_int_t) r->lease.duration_sec, "owner",
                                             lease_owner_to_string(lease_owner(r)), "record",
                                             r->record ? r->record : r->lease.record));
}

/* ---------------------------------------------------------------------------
 * Slurm */

static int read_nodes(Rollout *r) {
        _cleanup_(slurm_command_report_done) SlurmCommandReport rep = {};
        int k;

        r->nodes = slurm_node_list_free(r->nodes);
        k = slurm_read_nodes(r->slurm, &r->nodes, &rep);
        if (k < 0)
                return log_error_errno(k, "Cannot read the Slurm nodes: %s",
                                       rep.error ? rep.error : "failed");
        return 0;
}

static int set_nodes(Rollout *r, char **names, size_t n, bool drain) {
        _cleanup_(slurm_command_report_done) SlurmCommandReport rep = {};
        _cleanup_free_ char *reason = rollout_reason(r->id);
        int k;

        if (n == 0)
                return 0;
        if (!reason)
                return log_oom();
        k = drain ? slurm_drain_nodes(r->slurm, names, n, reason, &rep)
                  : slurm_resume_nodes(r->slurm, names, n, &rep);
        if (k < 0)
                return log_error_errno(k, "Cannot %s the nodes: %s", drain ? "drain" : "resume",
                                       rep.error ? rep.error : "failed");
        return 0;
}

/* ---------------------------------------------------------------------------
 * The state of the cluster */

static const RolloutPod *worker_of_node(const Rollout *r, const char *node) {
        for (size_t i = 0; i < r->n_pods[ROLE_WORKER]; i++)
                if (streq(r->pods[ROLE_WORKER][i].node, node))
                        return &r->pods[ROLE_WORKER][i];
        return NULL;
}

/* Reads pods and nodes; finds the id of a rollout in progress. */
static int load(Rollout *r) {
        char found[ROLLOUT_ID_BYTES] = "";
        int k;

        k = read_lease(r);
        if (k < 0)
                return k;
        /* The Lease knows an interrupted rollout even where the preStop
         * hook has overwritten every reason it set. */
        if (r->lease_exists && rollout_record_running(r->lease.record))
                (void) snprintf(found, sizeof found, "%s", rollout_record_id(r->lease.record));
        k = read_trust(r);
        if (k < 0)
                return k;
        for (RolloutRole role = 0; role < _ROLE_MAX; role++) {
                k = run_list_pods(r, role);
                if (k < 0)
                        return k;
        }
        k = read_nodes(r);
        if (k < 0)
                return k;

        for (size_t i = 0; i < r->nodes->n_nodes; i++) {
                char id[ROLLOUT_ID_BYTES];

                if (!rollout_reason_id(r->nodes->nodes[i].reason, id))
                        continue;
                if (found[0] && !streq(found, id))
                        return log_error_errno(-EBUSY,
                                               "The Lease and the nodes' reasons name two "
                                               "rollouts, %s and %s: finish or abort one with "
                                               "--rollout-id.",
                                               found, id);
                memcpy(found, id, sizeof found);
        }
        if (r->args->rollout_id)
                memcpy(r->id, r->args->rollout_id, ROLLOUT_ID_BYTES);
        else if (found[0])
                memcpy(r->id, found, sizeof found);
        else
                rollout_id_format(now_usec(CLOCK_REALTIME), r->id);
        r->id_found = found[0] && streq(found, r->id);
        return 0;
}

static NodeClaim claim_of(const Rollout *r, const SlurmNode *n) {
        return rollout_node_claim(n,
                                  r->id_found || r->applying || r->args->rollout_id ? r->id : NULL);
}

/* What a node only settling is, for the messages. */
#define SETTLING_WHY                                                                  \
        "Slurm ends that by itself (NOT_RESPONDING: a resumed node until it answers " \
        "slurmctld's next ping; COMPLETING: until the epilogs of its last jobs end)"

/* Nodes out of service for someone else's reasons: the guide says stop. A
 * node only settling is said, and blocks only once --settle-timeout has
 * passed (settle()). */
static size_t report_blockers(Rollout *r) {
        size_t n = 0;

        for (size_t i = 0; i < r->nodes->n_nodes; i++) {
                const SlurmNode *node = &r->nodes->nodes[i];
                NodeClaim c = claim_of(r, node);
                _cleanup_free_ char *why = NULL;

                if (excluded(r, node->name))
                        continue;
                if (c == CLAIM_SETTLING && r->settle_expired) {
                        run_say(r,
                                "blocked: node %s is still %s after %llu s (--settle-timeout), "
                                "with "
                                "no reason: it did not settle.",
                                node->name, node->state,
                                (unsigned long long) (r->args->settle_usec / 1000000u));
                        run_step(r, "preflight", node->name, "blocked", node->state);
                        n++;
                        continue;
                }
                if (c == CLAIM_SETTLING) {
                        run_say(r,
                                "settling: node %s is %s, with no reason: " SETTLING_WHY
                                "; apply reads it again for up to %llu s (--settle-timeout) before "
                                "it counts as blocking.",
                                node->name, node->state,
                                (unsigned long long) (r->args->settle_usec / 1000000u));
                        run_step(r, "preflight", node->name, "settling", node->state);
                        continue;
                }
                if (c != CLAIM_FOREIGN && c != CLAIM_OTHER_ROLLOUT)
                        continue;
                if (asprintf(&why, "%s, reason \"%s\"%s%s", node->state, node->reason,
                             node->reason_user[0] ? " set by " : "", node->reason_user) < 0)
                        why = NULL;
                run_say(r,
                        "blocked: node %s is out of service for a reason that is not this "
                        "rollout's: %s.",
                        node->name, strnull(why));
                run_step(r, "preflight", node->name, "blocked", why);
                n++;
        }
        for (size_t i = 0; i < r->n_pods[ROLE_WORKER]; i++) {
                const RolloutPod *p = &r->pods[ROLE_WORKER][i];

                if (p->verdict != VERDICT_STALE || excluded(r, p->node) ||
                    slurm_node_list_find(r->nodes, p->node))
                        continue;
                run_say(r,
                        "blocked: worker pod %s maps to Slurm node %s, which Slurm does not know "
                        "(see --node-name).",
                        p->name, p->node);
                run_step(r, "preflight", p->node, "blocked", "unknown to Slurm");
                n++;
        }
        if (n > 0)
                run_say(r, "Nothing was changed. Return those nodes to service, or leave them out "
                           "with --exclude NODE.");
        return n;
}

/* A pod this rollout has deleted (its Lease says), whatever it looks like
 * now: it is never deleted again. */
static bool deleted_already(const Rollout *r, const RolloutPod *p) {
        const json_t *rec = run_record_of(r);
        return rec && rollout_record_has(rec, "delete", "pod", p->name, p->uid);
}

bool run_wanted(const Rollout *r, const RolloutPod *p) {
        return p->verdict == VERDICT_STALE && !excluded(r, p->node) &&
               !(r->args->self && streq(r->args->self, p->name)) && !deleted_already(r, p);
}

/* The nodes this rollout holds (drained with its reason, or replaced). */
static bool held(const Rollout *r, const SlurmNode *n) {
        NodeClaim c = claim_of(r, n);
        return c == CLAIM_OURS || c == CLAIM_REPLACED;
}

static size_t count_unverified(const Rollout *r) {
        size_t n = 0;

        for (RolloutRole role = 0; role < _ROLE_MAX; role++)
                for (size_t i = 0; i < r->n_pods[role]; i++)
                        n += r->pods[role][i].verdict == VERDICT_UNVERIFIED &&
                             !excluded(r, r->pods[role][i].node);
        return n;
}

static size_t count_work(const Rollout *r) {
        size_t n = 0;

        for (RolloutRole role = 0; role < _ROLE_MAX; role++)
                for (size_t i = 0; i < r->n_pods[role]; i++)
                        n += run_wanted(r, &r->pods[role][i]);
        for (size_t i = 0; i < r->nodes->n_nodes; i++)
                n += held(r, &r->nodes->nodes[i]);
        if (run_record_of(r)) {
                json_t *pending = rollout_record_pending(run_record_of(r));
                n += json_array_size(pending);
                json_decref(pending);
        }
        return n;
}

static void describe(Rollout *r) {
        json_t *pods = json_array(), *nodes = json_array();

        for (RolloutRole role = 0; role < _ROLE_MAX; role++)
                for (size_t i = 0; i < r->n_pods[role]; i++) {
                        const RolloutPod *p = &r->pods[role][i];
                        const char *action =
                                run_wanted(r, p)                ? "replace"
                                : deleted_already(r, p)         ? "wait (deleted by this rollout)"
                                : p->verdict == VERDICT_CURRENT ? "keep"
                                : r->args->self && streq(r->args->self, p->name)
                                        ? "skip (runs this rollout)"
                                : excluded(r, p->node)             ? "skip (excluded)"
                                : p->verdict == VERDICT_UNVERIFIED ? "skip (unverified)"
                                                                   : "skip (unknown)";

                        run_say(r, "  %-6s %-32s %-20s %-10s %s (%s)", rollout_role_to_string(role),
                                p->name, strempty(p->node), pod_verdict_to_string(p->verdict),
                                action, p->why);
                        (void) json_array_append_new(
                                pods, json_pack("{s:s, s:s, s:s, s:s?, s:s, s:s, s:b, s:s}", "name",
                                                p->name, "uid", p->uid, "role",
                                                rollout_role_to_string(role), "node", p->node,
                                                "verdict", pod_verdict_to_string(p->verdict), "why",
                                                p->why, "ready", p->ready, "action", action));
                }
        for (size_t i = 0; i < r->nodes->n_nodes; i++) {
                const SlurmNode *n = &r->nodes->nodes[i];
                (void) json_array_append_new(
                        nodes, json_pack("{s:s, s:s, s:s, s:s}", "name", n->name, "state", n->state,
                                         "reason", n->reason, "claim",
                                         node_claim_to_string(claim_of(r, n))));
        }
        (void) json_object_set_new(r->report, "pods", pods);
        (void) json_object_set_new(r->report, "nodes", nodes);
        (void) json_object_set_new(r->report, "conditions_protected",
                                   r->trust.unchecked ? json_null()
                                                      : json_boolean(!r->trust.why_not));
        if (r->trust.unchecked)
                run_say(r, "--trust-unprotected-conditions: every pod's condition is believed, "
                           "whoever wrote it.");
        else if (r->trust.why_not && count_unverified(r) > 0)
                run_say(r,
                        "unverified: no condition is believed: %s. Apply "
                        "container/kubernetes/validatingadmissionpolicy.yaml (Kubernetes 1.30 and "
                        "later), or see --trust-unprotected-conditions.",
                        r->trust.why_not);
        else if (count_unverified(r) > 0)
                run_say(r,
                        "unverified: %zu pod(s) whose condition was not written since the "
                        "admission "
                        "policies were bound: left alone until their agent writes it again or they "
                        "are replaced.",
                        count_unverified(r));
}

/* ---------------------------------------------------------------------------
 * Waiting */

static bool named(char *const *names, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (streq(names[i], name))
                        return true;
        return false;
}

/* Slurm's transient states: while one of the nodes (names[0..n), or every
 * node not excluded when names is NULL) is only settling and none of them is
 * blocked for good, reads the nodes again every --poll-interval (the Lease
 * renewed in between, poll_wait()), for at most
 * --settle-timeout. Nodes still settling then count as blocking
 * (r->settle_expired). Returns 0, or the failure to read the nodes. */
static int settle(Rollout *r, char *const *names, size_t n) {
        uint64_t start = now_usec(CLOCK_MONOTONIC), deadline = start + r->args->settle_usec;
        bool waited = false;

        for (;;) {
                const SlurmNode *first = NULL;
                size_t settling = 0, blocked = 0;
                int k;

                for (size_t i = 0; i < r->nodes->n_nodes; i++) {
                        const SlurmNode *node = &r->nodes->nodes[i];
                        NodeClaim c = claim_of(r, node);

                        if (names ? !named(names, n, node->name) : excluded(r, node->name))
                                continue;
                        if (c == CLAIM_SETTLING && !first)
                                first = node;
                        settling += c == CLAIM_SETTLING;
                        blocked += c == CLAIM_FOREIGN || c == CLAIM_OTHER_ROLLOUT;
                }
                /* Blocked anyway: waiting would only delay saying so. */
                if (settling == 0 || blocked > 0) {
                        if (waited)
                                run_step(r, "settle", NULL, "done", NULL);
                        if (waited && settling == 0)
                                run_say(r, "  settled after %.1f s.",
                                        (double) (now_usec(CLOCK_MONOTONIC) - start) / 1e6);
                        return 0;
                }
                if (now_usec(CLOCK_MONOTONIC) >= deadline) {
                        r->settle_expired = true;
                        run_step(r, "settle", NULL, "timeout", NULL);
                        return 0;
                }
                if (!waited)
                        run_say(r,
                                "settling: %zu node(s) out of service only for a moment (node %s "
                                "is %s, with no reason): reading them again for up to %llu s "
                                "(--settle-timeout).",
                                settling, first->name, first->state,
                                (unsigned long long) (r->args->settle_usec / 1000000u));
                waited = true;
                k = poll_wait(r);
                if (k >= 0)
                        k = read_nodes(r);
                if (k < 0)
                        return k;
        }
}

static int wait_jobs(Rollout *r, char **names, size_t n) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + r->args->jobs_timeout_usec, said = 0;

        for (;;) {
                _cleanup_(slurm_command_report_done) SlurmCommandReport rep = {};
                _cleanup_(slurm_job_list_freep) SlurmJobList *jobs = NULL;
                size_t active = 0;
                int k = slurm_read_jobs(r->slurm, names, n, &jobs, &rep);

                if (k < 0)
                        return log_error_errno(k, "Cannot read the jobs: %s",
                                               rep.error ? rep.error : "failed");
                for (size_t i = 0; i < jobs->n_jobs; i++)
                        active += slurm_job_is_active(&jobs->jobs[i]);
                if (active == 0) {
                        run_step(r, "wait-jobs", NULL, "done", NULL);
                        return 0;
                }
                if (now_usec(CLOCK_MONOTONIC) >= deadline) {
                        run_say(r, "Timed out: %zu job(s) still hold the drained nodes.", active);
                        run_step(r, "wait-jobs", NULL, "timeout", NULL);
                        return -ETIME;
                }
                if (now_usec(CLOCK_MONOTONIC) - said >= 30u * 1000000u) {
                        run_say(r,
                                "waiting for %zu job(s) to end on the drained nodes (job %u: %s on "
                                "%s)...",
                                active, jobs->jobs[0].job_id, jobs->jobs[0].state,
                                jobs->jobs[0].nodes);
                        said = now_usec(CLOCK_MONOTONIC);
                }
                k = poll_wait(r);
                if (k < 0)
                        return k;
        }
}

/* A worker's replacement: a new UID, Ready, current, and its node back in
 * Slurm's view (responding). */
static int wait_replacement(Rollout *r, const RolloutPod *old, const SlurmNode *before) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + r->args->pod_timeout_usec;
        int64_t boot = before ? before->boot_time_sec : 0,
                start = before ? before->slurmd_start_time_sec : 0;
        const char *missing = "the pod"; /* what it still waits for */

        for (;;) {
                _cleanup_(rollout_pod_done) RolloutPod p = {};
                int k = get_pod(r, old->name, old->role, &p);

                if (k < 0)
                        return k;
                if (k == 0 || streq(p.uid, old->uid) || p.terminating)
                        missing = "a new pod";
                else if (!p.ready)
                        missing = "the new pod to be Ready";
                else if (p.verdict != VERDICT_CURRENT)
                        missing = "the new pod to say EnrootConfigCurrent=True";
                else {
                        const SlurmNode *n;

                        k = read_nodes(r);
                        if (k < 0)
                                return k;
                        /* Registered again: slurmd started anew (or the node
                         * rebooted) since the delete, and it answers. */
                        n = slurm_node_list_find(r->nodes, old->node);
                        if (!n || (n->flags & SLURM_NODE_NOT_RESPONDING) ||
                            ((start || boot) && n->slurmd_start_time_sec == start &&
                             n->boot_time_sec == boot))
                                missing = "its Slurm node to register again";
                        else
                                return 0;
                }
                if (now_usec(CLOCK_MONOTONIC) >= deadline) {
                        run_say(r,
                                "Timed out waiting for the replacement of pod %s: still waiting "
                                "for %s.",
                                old->name, missing);
                        return -ETIME;
                }
                k = poll_wait(r);
                if (k < 0)
                        return k;
        }
}

/* A login pod's replacement: the old one gone, and as many Ready, current
 * login pods as were Ready before. */
static int wait_login(Rollout *r, const RolloutPod *old, size_t ready_before) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + r->args->pod_timeout_usec;

        for (;;) {
                size_t ready = 0;
                bool old_seen = false;
                int k = run_list_pods(r, ROLE_LOGIN);

                if (k < 0)
                        return k;
                for (size_t i = 0; i < r->n_pods[ROLE_LOGIN]; i++) {
                        const RolloutPod *p = &r->pods[ROLE_LOGIN][i];
                        old_seen |= streq(p->uid, old->uid);
                        ready += p->ready && !p->terminating && p->verdict == VERDICT_CURRENT;
                }
                if (!old_seen && ready >= ready_before)
                        return 0;
                if (now_usec(CLOCK_MONOTONIC) >= deadline) {
                        run_say(r, "Timed out waiting for the replacement of login pod %s.",
                                old->name);
                        return -ETIME;
                }
                k = poll_wait(r);
                if (k < 0)
                        return k;
        }
}

/* ---------------------------------------------------------------------------
 * The actions */

static int replace_worker(Rollout *r, const RolloutPod *p) {
        char *name = p->node;
        SlurmNode before = {};
        const SlurmNode *n;
        int k;

        run_say(r, "replace: worker pod %s (node %s)", p->name, p->node);
        k = read_nodes(r);
        if (k < 0)
                return k;
        n = slurm_node_list_find(r->nodes, p->node);
        if (n)
                before = (SlurmNode){.boot_time_sec = n->boot_time_sec,
                                     .slurmd_start_time_sec = n->slurmd_start_time_sec};
        k = run_lease_note(r, json_pack("{s:s, s:s, s:s, s:s, s:s}", "step", "delete", "pod",
                                        p->name, "uid", p->uid, "node", p->node, "role", "worker"));
        if (k < 0)
                return k;
        k = delete_pod(r, p);
        if (k >= 0)
                k = wait_replacement(r, p, n ? &before : NULL);
        if (k < 0) {
                run_step(r, "replace", p->name, k == -ETIME ? "timeout" : "failed", p->node);
                return k;
        }
        /* The preStop hook left it DOWN with its own reason: hold it with ours
         * until the resume, so a later run knows it. */
        k = set_nodes(r, &name, 1, true);
        if (k >= 0)
                k = run_lease_note(r, json_pack("{s:s, s:s, s:s}", "step", "ready", "pod", p->name,
                                                "uid", p->uid));
        if (k < 0)
                return k;
        run_step(r, "replace", p->name, "done", p->node);
        k = rollout_note_replaced(r, p->node);
        if (k < 0)
                return k;
        run_say(r, "  pod %s replaced: Ready, %s=True, node %s registered", p->name,
                r->args->condition_type, p->node);
        return 0;
}

/* Drains the nodes of a batch of stale workers, waits for their jobs, and
 * replaces the pods one at a time. */
static int do_workers(Rollout *r, RolloutPod *const *batch, size_t n) {
        _cleanup_free_ char **names = calloc(n + 1, sizeof(char *));
        size_t m = 0;
        int k;

        if (!names)
                return log_oom();
        for (size_t i = 0; i < n; i++)
                names[m++] = batch[i]->node;
        if (m == 0)
                return 0;
        run_say(r, "drain: %zu node(s), reason \"" ROLLOUT_REASON_PREFIX "%s: ...\"", m, r->id);
        k = read_nodes(r);
        if (k >= 0)
                k = settle(r, names, m);
        if (k < 0)
                return k;
        for (size_t i = 0; i < m; i++) {
                const SlurmNode *node = slurm_node_list_find(r->nodes, names[i]);
                NodeClaim c = node ? claim_of(r, node) : CLAIM_FOREIGN;

                /* Held already (an earlier run): nothing to do. */
                if (c == CLAIM_OURS)
                        continue;
                /* Someone took it out of service since the plan: never overwrite
                 * that. Still settling after settle(): it did not. */
                if (c == CLAIM_FOREIGN || c == CLAIM_OTHER_ROLLOUT || c == CLAIM_SETTLING) {
                        run_say(r, "blocked: node %s is now %s, reason \"%s\": not draining it.",
                                names[i], node ? node->state : "unknown to Slurm",
                                node ? node->reason : "");
                        run_step(r, "drain", names[i], "blocked", node ? node->reason : NULL);
                        return -EBUSY;
                }
                k = run_lease_note(r, json_pack("{s:s, s:s}", "step", "drain", "node", names[i]));
                if (k >= 0)
                        k = set_nodes(r, &names[i], 1, true);
                if (k < 0) {
                        run_step(r, "drain", names[i], "failed", NULL);
                        return k;
                }
                run_step(r, "drain", names[i], "done", NULL);
        }
        k = wait_jobs(r, names, m);
        if (k < 0)
                return k;
        for (size_t i = 0; i < n; i++) {
                k = replace_worker(r, batch[i]);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* slurmctld marks a resumed node not responding until its next ping: wait
 * for that, so "back in service" is what the summary says. Not an error
 * when it takes longer: the summary shows the state. */
static int wait_responding(Rollout *r, char **names, size_t n) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + ROLLOUT_RESPONDING_USEC;

        for (;;) {
                size_t waiting = 0;
                int k = read_nodes(r);

                if (k < 0)
                        return k;
                for (size_t i = 0; i < n; i++) {
                        const SlurmNode *node = slurm_node_list_find(r->nodes, names[i]);
                        waiting += !node || (node->flags & SLURM_NODE_NOT_RESPONDING);
                }
                if (waiting == 0)
                        return 0;
                if (now_usec(CLOCK_MONOTONIC) >= deadline) {
                        run_say(r, "  %zu resumed node(s) still not responding to slurmctld.",
                                waiting);
                        return 0;
                }
                k = poll_wait(r);
                if (k < 0)
                        return k;
        }
}

static int resume_held(Rollout *r, bool only_unreplaced) {
        char **names = NULL;
        size_t m = 0;
        int k;

        /* Fresh views: which pods were replaced, which nodes are held. */
        k = run_list_pods(r, ROLE_WORKER);
        if (k >= 0)
                k = read_nodes(r);
        if (k < 0)
                return k;
        names = calloc(r->nodes->n_nodes + 1, sizeof(char *));
        if (!names)
                return log_oom();
        for (size_t i = 0; i < r->nodes->n_nodes; i++) {
                SlurmNode *n = &r->nodes->nodes[i];
                const RolloutPod *p = worker_of_node(r, n->name);
                bool replaced =
                        claim_of(r, n) == CLAIM_REPLACED || (p && p->verdict == VERDICT_CURRENT);

                if (!held(r, n))
                        continue;
                if (only_unreplaced && replaced) {
                        run_say(r,
                                "  node %s was replaced and stays out of service: check it, then "
                                "`scontrol update nodename=%s state=resume`",
                                n->name, n->name);
                        run_step(r, "keep", n->name, "replaced", NULL);
                        continue;
                }
                if (!only_unreplaced && p && p->verdict != VERDICT_CURRENT)
                        continue; /* not replaced yet: apply goes on with it */
                /* copies: reading the nodes again frees r->nodes */
                names[m] = strdup(n->name);
                if (!names[m]) {
                        slurm_names_free(names);
                        return log_oom();
                }
                m++;
        }
        if (m == 0) {
                free(names);
                return 0;
        }
        for (size_t i = 0; i < m; i++) {
                run_say(r, "resume: node %s", names[i]);
                k = run_lease_note(r, json_pack("{s:s, s:s}", "step", "resume", "node", names[i]));
                if (k < 0) {
                        slurm_names_free(names);
                        return k;
                }
        }
        k = set_nodes(r, names, m, false);
        for (size_t i = 0; i < m; i++)
                run_step(r, "resume", names[i], k < 0 ? "failed" : "done", NULL);
        if (k >= 0)
                k = wait_responding(r, names, m);
        slurm_names_free(names);
        return k;
}

/* The end of the replacement of p, k how it went: when well, the Lease
 * notes p's replacement ready. Reports the step; returns k, or the failure
 * to write the Lease. */
static int replace_done(Rollout *r, const RolloutPod *p, int k) {
        if (k >= 0)
                k = run_lease_note(r, json_pack("{s:s, s:s, s:s}", "step", "ready", "pod", p->name,
                                                "uid", p->uid));
        run_step(r, "replace", p->name,
                 k == -ETIME ? "timeout"
                 : k < 0     ? "failed"
                             : "done",
                 p->node);
        return k;
}

/* The steps an interrupted run began and did not finish: each pod it deleted
 * (its Lease says) whose replacement it did not see. Waits for each
 * replacement as the run would have; deletes again only a pod that still has
 * the recorded UID and is not terminating (the DELETE never landed), under
 * the same UID precondition, never a replacement. */
static int finish_pending(Rollout *r) {
        _cleanup_(json_decrefp) json_t *pending = rollout_record_pending(r->record);
        json_t *s;
        size_t i;

        if (!pending)
                return log_oom();
        json_array_foreach(pending, i, s) {
                const char *role_name = json_string_value(json_object_get(s, "role"));
                RolloutRole role = streq_ptr(role_name, "login") ? ROLE_LOGIN : ROLE_WORKER;
                _cleanup_(rollout_pod_done) RolloutPod old = {.role = role};
                _cleanup_(rollout_pod_done) RolloutPod now = {};
                const char *node = json_string_value(json_object_get(s, "node"));
                int k;

                old.name = strdup(json_string_value(json_object_get(s, "pod")));
                old.uid = strdup(json_string_value(json_object_get(s, "uid")));
                old.node = node ? strdup(node) : NULL;
                if (!old.name || !old.uid || (node && !old.node))
                        return log_oom();
                if (role == ROLE_WORKER && !old.node)
                        return log_error_errno(-EBADMSG,
                                               "The Lease records worker pod %s without its "
                                               "node.",
                                               old.name);
                run_say(r,
                        "continue: pod %s (uid %s) was deleted by this rollout; waiting for its "
                        "replacement",
                        old.name, old.uid);
                k = get_pod(r, old.name, role, &now);
                if (k > 0 && streq(now.uid, old.uid) && !now.terminating)
                        k = delete_pod(r, &old);
                if (k >= 0 && role == ROLE_WORKER)
                        k = wait_replacement(r, &old, NULL);
                else if (k >= 0)
                        k = wait_login(
                                r, &old,
                                (size_t) json_integer_value(json_object_get(s, "ready_before")));
                /* hold the node with this rollout's reason until the resume */
                if (k >= 0 && role == ROLE_WORKER)
                        k = set_nodes(r, &old.node, 1, true);
                k = replace_done(r, &old, k);
                if (k >= 0 && role == ROLE_WORKER)
                        k = rollout_note_replaced(r, old.node);
                if (k < 0)
                        return k;
                run_say(r, "  pod %s replaced", old.name);
        }
        return 0;
}

static int apply(Rollout *r) {
        RolloutPod *copies = NULL;
        _cleanup_free_ RolloutPod **workers = NULL;
        size_t n = 0, ready_logins = 0;
        int k;

        /* First what an interrupted run began, then a fresh view of what
         * finishing it changed. */
        k = finish_pending(r);
        if (k >= 0)
                k = run_list_pods(r, ROLE_WORKER);
        if (k >= 0)
                k = run_list_pods(r, ROLE_LOGIN);
        if (k < 0)
                return k;
        copies = calloc(r->n_pods[ROLE_WORKER] + 1, sizeof(RolloutPod));
        workers = calloc(r->n_pods[ROLE_WORKER] + 1, sizeof(RolloutPod *));

        if (!copies || !workers) {
                free(copies);
                return log_oom();
        }

        /* Copies: waiting reads the pods again, which replaces r->pods. */
        for (size_t i = 0; i < r->n_pods[ROLE_WORKER] && k >= 0; i++) {
                const RolloutPod *p = &r->pods[ROLE_WORKER][i];

                if (!run_wanted(r, p))
                        continue;
                copies[n] = (RolloutPod){.name = strdup(p->name),
                                         .uid = strdup(p->uid),
                                         .node = strdup(p->node),
                                         .role = ROLE_WORKER};
                workers[n] = &copies[n];
                if (!copies[n].name || !copies[n].uid || !copies[n++].node)
                        k = log_oom();
        }

        if (k >= 0 && !r->args->rolling)
                k = do_workers(r, workers, n);
        else
                for (size_t i = 0; k >= 0 && i < n; i += r->args->batch) {
                        size_t m = n - i < r->args->batch ? n - i : r->args->batch;

                        k = do_workers(r, workers + i, m);
                        if (k >= 0)
                                k = resume_held(r, false);
                }
        rollout_pods_free(copies, n);
        if (k < 0)
                return k;

        /* Tell the login pods' users, and give them the grace. */
        k = rollout_notify_logins(r);
        if (k < 0)
                return k;
        for (size_t i = 0; i < r->n_pods[ROLE_LOGIN]; i++) {
                _cleanup_(rollout_pod_done) RolloutPod p = {};
                const RolloutPod *q = &r->pods[ROLE_LOGIN][i];

                if (!run_wanted(r, q))
                        continue;
                /* What its replacement must give back: the Ready, current
                 * login pods there are now, and one more when it is Ready
                 * (wait_login() counts only current ones: a drifted login
                 * pod still to be replaced after it is not counted). */
                ready_logins = q->ready;
                for (size_t j = 0; j < r->n_pods[ROLE_LOGIN]; j++) {
                        const RolloutPod *o = &r->pods[ROLE_LOGIN][j];
                        ready_logins +=
                                o->ready && !o->terminating && o->verdict == VERDICT_CURRENT;
                }
                /* a copy: waiting lists the login pods again */
                p = (RolloutPod){
                        .name = strdup(q->name), .uid = strdup(q->uid), .role = ROLE_LOGIN};
                if (!p.name || !p.uid)
                        return log_oom();
                run_say(r, "replace: login pod %s", p.name);
                k = run_lease_note(r, json_pack("{s:s, s:s, s:s, s:s, s:I}", "step", "delete",
                                                "pod", p.name, "uid", p.uid, "role", "login",
                                                "ready_before", (json_int_t) ready_logins));
                if (k >= 0)
                        k = delete_pod(r, &p);
                if (k >= 0)
                        k = wait_login(r, &p, ready_logins);
                k = replace_done(r, &p, k);
                if (k < 0)
                        return k;
                i = (size_t) -1; /* the list changed: start over, skipping the current */
        }

        /* Only now, with every worker and login pod healthy (the guide). */
        return resume_held(r, false);
}

void rollout_done(Rollout *r) {
        kube_client_free(r->kube);
        sd_event_unref(r->event);
        slurm_client_free(r->slurm);
        for (RolloutRole role = 0; role < _ROLE_MAX; role++)
                rollout_pods_free(r->pods[role], r->n_pods[role]);
        slurm_node_list_free(r->nodes);
        json_decref(r->report);
        json_decref(r->steps);
        rollout_trust_done(&r->trust);
        rollout_lease_done(&r->lease);
        json_decref(r->record);
        free(r->configmap_refused);
        free(r->desired_env);
        for (size_t i = 0; i < r->n_replaced_nodes; i++)
                free(r->replaced_nodes[i]);
        free(r->replaced_nodes);
        free(r->holder);
        free(r->namespace);
        free(r->api_url);
}

static int finish(Rollout *r, int status, const char *result) {
        run_say(r, "%s", result);
        if (r->args->json) {
                lease_report(r);
                (void) json_object_set_new(r->report, "result", json_string(result));
                (void) json_object_set(r->report, "steps", r->steps);
                (void) json_object_set_new(r->report, "exit_status", json_integer(status));
                if (print_json(json_incref(r->report), stdout) < 0)
                        return EXIT_ROLLOUT_FAILED;
        }
        return status;
}

int rollout_run(Rollout *r) {
        const RolloutArgs *a = r->args;
        size_t work, blockers, unverified;
        char host[256] = "";
        int k;

        /* Who holds the Lease: this host and process, and when it began,
         * so that no two runs share an identity. */
        (void) gethostname(host, sizeof host - 1);
        if (asprintf(&r->holder, "%s_%d_%llu", host[0] ? host : "localhost", (int) getpid(),
                     (unsigned long long) now_usec(CLOCK_REALTIME)) < 0)
                return finish(r, EXIT_ROLLOUT_FAILED, "failed: out of memory");
        if (load(r) < 0)
                return finish(r, EXIT_ROLLOUT_FAILED, "failed: could not read the cluster");

        (void) json_object_set_new(r->report, "rollout_id", json_string(r->id));
        (void) json_object_set_new(r->report, "action",
                                   json_string(rollout_action_to_string(a->action)));
        (void) json_object_set_new(r->report, "strategy",
                                   json_string(a->rolling ? "rolling" : "window"));
        (void) json_object_set_new(r->report, "in_progress", json_boolean(r->id_found));

        (void) json_object_set_new(r->report, "settle_timeout_sec",
                                   json_integer((json_int_t) (a->settle_usec / 1000000u)));

        run_say(r, "rollout %s%s (%s), namespace %s:", r->id, r->id_found ? " (in progress)" : "",
                a->rolling ? "rolling" : "window", r->namespace);
        if (r->lease_exists)
                run_say(r, "  lease %s: %s%s%s, rollout %s %s, renewed %s", ROLLOUT_LEASE_NAME,
                        lease_owner_to_string(lease_owner(r)), r->lease.holder ? " by " : "",
                        strempty(r->lease.holder), strnull(rollout_record_id(r->lease.record)),
                        strnull(rollout_record_state(r->lease.record)),
                        strnull(r->lease.renew_time));
        /* apply judges the nodes once they settled; plan and status say which
         * are settling. While another live run holds the Lease, apply says
         * busy at once: that run is the one to wait for them. */
        if (a->action == ACTION_APPLY && lease_owner(r) != LEASE_HELD && settle(r, NULL, 0) < 0)
                return finish(r, EXIT_ROLLOUT_FAILED, "failed: could not read the cluster");
        describe(r);
        rollout_notice_report(r);
        work = count_work(r);
        blockers = report_blockers(r) + !rollout_notice_runnable(r);

        unverified = count_unverified(r);
        /* Before any pod is replaced, a continued rollout's too. */
        if (a->action == ACTION_PLAN || a->action == ACTION_APPLY) {
                if (rollout_check_configmap(r) < 0)
                        return finish(r, EXIT_ROLLOUT_FAILED,
                                      "failed: could not read the ConfigMap");
                rollout_verify_plan(r);
                if (r->configmap_refused) {
                        run_say(r, "refused: %s.", r->configmap_refused);
                        run_step(r, "configmap", a->configmap, "refused", r->configmap_refused);
                        return finish(r, EXIT_ROLLOUT_BLOCKED,
                                      "refused: no pod is replaced while the ConfigMap check "
                                      "fails; nothing was changed");
                }
        }
        switch (a->action) {
        case ACTION_PLAN:
        case ACTION_STATUS:
                if (blockers > 0)
                        return finish(r, EXIT_ROLLOUT_BLOCKED, "blocked");
                if (work == 0 && unverified > 0)
                        return finish(r, EXIT_ROLLOUT_BLOCKED,
                                      "unverified: nothing to do for the pods whose condition "
                                      "is believed; the unverified ones are left alone");
                if (work == 0)
                        return finish(r, EXIT_ROLLOUT_DONE, "nothing to do: every pod is current");
                return finish(r, EXIT_ROLLOUT_BLOCKED,
                              a->action == ACTION_PLAN
                                      ? "planned: run `rollout apply` to do it"
                                      : "in progress: `rollout apply` continues, "
                                        "`rollout abort` returns the drained nodes");
        case ACTION_ABORT:
                if (!r->id_found && !a->rollout_id)
                        return finish(r, EXIT_ROLLOUT_DONE, "nothing to abort");
                k = lease_acquire(r);
                if (k == -EBUSY)
                        return finish(r, EXIT_ROLLOUT_BLOCKED, "busy: nothing was changed");
                if (k < 0)
                        return finish(r, EXIT_ROLLOUT_FAILED, "failed: could not take the Lease");
                k = resume_held(r, true);
                if (lease_release(r, k < 0 ? NULL : "aborted") < 0)
                        k = -EIO;
                return finish(r, k < 0 ? EXIT_ROLLOUT_FAILED : EXIT_ROLLOUT_DONE,
                              k < 0 ? "failed: see the messages above" : "aborted");
        case ACTION_APPLY:
                /* Another live run holds the Lease: change nothing, not
                 * even what would look like ours. */
                if (lease_busy(r))
                        return finish(r, EXIT_ROLLOUT_BLOCKED, "busy: nothing was changed");
                if (blockers > 0)
                        return finish(r, EXIT_ROLLOUT_BLOCKED, "blocked: nothing was changed");
                if (work == 0 && unverified > 0)
                        return finish(r, EXIT_ROLLOUT_BLOCKED,
                                      "unverified: nothing was changed; the unverified pods are "
                                      "left alone");
                if (work == 0) {
                        /* a run that stopped after its last step: its
                         * record is closed */
                        if (run_record_of(r) && lease_acquire(r) >= 0)
                                (void) lease_release(r, "done");
                        return finish(r, EXIT_ROLLOUT_DONE, "nothing to do: every pod is current");
                }
                r->applying = true;
                k = lease_acquire(r);
                if (k == -EBUSY)
                        return finish(r, EXIT_ROLLOUT_BLOCKED, "busy: nothing was changed");
                if (k < 0)
                        return finish(r, EXIT_ROLLOUT_FAILED, "failed: could not take the Lease");
                k = apply(r);
                if (k < 0) {
                        /* released, the record kept running: a plain apply
                         * continues at once, without waiting for expiry */
                        (void) lease_release(r, NULL);
                        /* The Lease keeps the record, so the plain commands
                         * find the rollout again, also where the preStop hook
                         * replaced every reason it set. */
                        run_say(r,
                                "Stopped. The Lease " ROLLOUT_LEASE_NAME " keeps this rollout's "
                                "record: `rollout status` shows it, `rollout apply` continues it, "
                                "`rollout abort` returns the nodes it drained and did not replace. "
                                "Those nodes carry reasons starting with \"" ROLLOUT_REASON_PREFIX
                                "%s\", or the preStop hook's.",
                                r->id);
                        return finish(r, EXIT_ROLLOUT_FAILED, k == -ETIME ? "timed out" : "failed");
                }
                /* Verify: read everything again. */
                if (load(r) < 0) {
                        (void) lease_release(r, NULL);
                        return finish(r, EXIT_ROLLOUT_FAILED, "failed: could not verify");
                }
                describe(r);
                if (count_work(r) > 0) {
                        (void) lease_release(r, NULL);
                        return finish(r, EXIT_ROLLOUT_FAILED, "incomplete: see the pods above");
                }
                k = rollout_verify_nodes(r);
                if (lease_release(r, "done") < 0)
                        return finish(
                                r, EXIT_ROLLOUT_FAILED,
                                "failed: the rollout is done, but its Lease was not released");
                if (k != 0)
                        return finish(r, EXIT_ROLLOUT_FAILED,
                                      "verify failed: the replaced pods are current, but a job on "
                                      "the nodes named above does not see the ConfigMap's "
                                      "environment (or the check could not run)");
                if (count_unverified(r) > 0)
                        return finish(r, EXIT_ROLLOUT_FAILED,
                                      "incomplete: the unverified pods above were left alone");
                return finish(r, EXIT_ROLLOUT_DONE,
                              "done: every pod is current and every node this rollout drained is "
                              "back in service");
        }
        return EXIT_ROLLOUT_FAILED;
}
