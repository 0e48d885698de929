/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Two checks of a rollout's ground truth (rollout-steps.h): before any pod
 * is replaced, that the enroot ConfigMap the new pods will mount exists and
 * is its release's; after, with --verify-image, that a job on each replaced
 * worker node sees the ConfigMap's environment. What to compare lives in
 * rollout-verify.c (the model layer); this file reads the cluster and runs
 * the jobs.
 */
#include <stdlib.h>
#include <string.h>

#include "configmap.h"
#include "kube.h"
#include "log.h"
#include "rollout-steps.h"
#include "rollout-verify.h"
#include "rollout.h"
#include "slurm-client.h"

/* ---------------------------------------------------------------------------
 * The enroot ConfigMap: it must exist and be its release's (rollout-verify.h)
 * before any pod is replaced, since a pod recreated without it cannot start
 * (the guide: never prune or uninstall that release while slinky-slurm
 * exists). */

static int configmap_refuse(Rollout *r, const char *result, const char *found, const char *fmt, ...)
        _printf_(4, 5);
static int configmap_refuse(Rollout *r, const char *result, const char *found, const char *fmt,
                            ...) {
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&r->configmap_refused, fmt, ap);
        va_end(ap);
        if (k < 0) {
                r->configmap_refused = NULL;
                return log_oom();
        }
        (void) json_object_set_new(
                r->report, "configmap",
                json_pack("{s:s, s:s, s:s, s:s, s:s?, s:s}", "name", r->args->configmap,
                          "namespace", r->namespace, "release", r->args->configmap_release,
                          "result", result, "found", found, "detail", r->configmap_refused));
        return 0;
}

/* Reads the ConfigMap and checks it: 0 with r->configmap_refused NULL when
 * it passed (its ROLLOUT_ENV_KEY kept for --verify-image), set when not;
 * a failure to read it (logged) otherwise. */
int rollout_check_configmap(Rollout *r) {
        const RolloutArgs *a = r->args;
        _cleanup_(kube_result_done) KubeResult res = {};
        _cleanup_(configmap_set_freep) ConfigMapSet *set = NULL;
        _cleanup_(json_decrefp) json_t *cm = NULL;
        _cleanup_free_ char *path = NULL, *error = NULL;
        const char *found = NULL;
        int k;

        if (asprintf(&path, "/api/v1/namespaces/%s/configmaps/%s", r->namespace, a->configmap) < 0)
                return log_oom();
        k = run_kube_request(r, KUBE_VERB_GET, "GET", path, NULL, &res);
        if (k < 0)
                return k;
        if (res.status == 404)
                return configmap_refuse(
                        r, "missing", NULL,
                        "the ConfigMap %s/%s does not exist (GET: 404 NotFound): a pod recreated "
                        "now could not mount it and would not start. Install the release %s "
                        "again (it owns the ConfigMap), or give --configmap",
                        r->namespace, a->configmap, a->configmap_release);
        if (res.status != 200)
                return run_answer_error(r, "GET", path, &res);
        cm = json_loadb(res.body, res.body_len, 0, NULL);
        if (!cm)
                return log_error_errno(-EBADMSG, "GET %s: the answer is not JSON.", path);
        k = rollout_configmap_owner(cm, a->configmap_release, &found);
        if (k == -ENOENT)
                return configmap_refuse(
                        r, "no-release", NULL,
                        "the ConfigMap %s/%s has no annotation " ROLLOUT_HELM_RELEASE_ANNOTATION
                        ": it is not the Helm release %s's, and nothing says it stays while the "
                        "pods need it. Give --configmap-release, or install the ConfigMap with "
                        "its release",
                        r->namespace, a->configmap, a->configmap_release);
        if (k < 0)
                return configmap_refuse(r, "other-release", found,
                                        "the ConfigMap %s/%s belongs to the Helm release \"%s\" "
                                        "(annotation " ROLLOUT_HELM_RELEASE_ANNOTATION
                                        "), not %s: check which release owns it, or give "
                                        "--configmap-release",
                                        r->namespace, a->configmap, found, a->configmap_release);
        k = configmap_parse(res.body, res.body_len, &set, &error);
        if (k == -ENOMEM)
                return log_oom();
        if (k < 0)
                return log_error_errno(k, "GET %s: the ConfigMap cannot be read: %s.", path,
                                       strnull(error));
        for (size_t i = 0; i < set->n_entries; i++)
                if (streq(set->entries[i].key, ROLLOUT_ENV_KEY)) {
                        free(r->desired_env);
                        r->desired_env = malloc(set->entries[i].len + 1);
                        if (!r->desired_env)
                                return log_oom();
                        /* with its terminating NUL (configmap.h) */
                        memcpy(r->desired_env, set->entries[i].value, set->entries[i].len + 1);
                        r->desired_env_len = set->entries[i].len;
                }
        (void) json_object_set_new(r->report, "configmap",
                                   json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", a->configmap,
                                             "namespace", r->namespace, "release",
                                             a->configmap_release, "result", "ok", "found",
                                             a->configmap_release));
        run_say(r, "  configmap %s/%s: present, owned by release %s", r->namespace, a->configmap,
                a->configmap_release);
        return 0;
}

/* ---------------------------------------------------------------------------
 * --verify-image: what a job sees on each replaced node (rollout-verify.h). */

int rollout_note_replaced(Rollout *r, const char *node) {
        char **l;

        for (size_t i = 0; i < r->n_replaced_nodes; i++)
                if (streq(r->replaced_nodes[i], node))
                        return 0;
        l = reallocarray(r->replaced_nodes, r->n_replaced_nodes + 1, sizeof(char *));
        if (!l)
                return log_oom();
        r->replaced_nodes = l;
        l[r->n_replaced_nodes] = strdup(node);
        if (!l[r->n_replaced_nodes])
                return log_oom();
        r->n_replaced_nodes++;
        return 0;
}

static json_t *names_json(char *const *names, size_t n) {
        json_t *a = json_array();

        for (size_t i = 0; a && i < n; i++)
                (void) json_array_append_new(a, json_string(names[i]));
        return a;
}

static char *names_joined(char *const *names, size_t n) {
        _cleanup_free_ char *s = strdup("");

        for (size_t i = 0; s && i < n; i++) {
                char *t = NULL;

                if (asprintf(&t, "%s%s%s", s, i ? ", " : "", names[i]) < 0)
                        return NULL;
                free(s);
                s = t;
        }
        return TAKE_PTR(s);
}

/* One node: "verified", "mismatch", "skipped" or "failed", said and added to
 * results; the keys, never a value. *pyxis_absent is set once srun refused
 * --container-image, and later nodes are skipped for it without running. */
static const char *verify_node(Rollout *r, const char *node, bool *pyxis_absent, json_t *results,
                               char **ret_detail) {
        _cleanup_(slurm_command_report_done) SlurmCommandReport rep = {};
        _cleanup_(rollout_env_check_done) RolloutEnvCheck check = {};
        _cleanup_free_ char *out = NULL, *differ = NULL, *missing = NULL, *dynamic = NULL;
        const char *result;
        size_t len = 0;
        int k;

        if (*pyxis_absent)
                k = -ENOTSUP;
        else if (!r->desired_env)
                k = -ENOENT;
        else
                k = slurm_container_env(r->slurm, node, r->args->verify_image, &out, &len, &rep);
        if (k >= 0)
                k = rollout_env_verify(r->desired_env, r->desired_env_len, out, len, &check);
        if (k == -ENOMEM)
                return log_oom(), NULL;
        differ = names_joined(check.differ, check.n_differ);
        missing = names_joined(check.missing, check.n_missing);
        dynamic = names_joined(check.dynamic, check.n_dynamic);
        if (!differ || !missing || !dynamic)
                return log_oom(), NULL;
        if (k == -ENOTSUP) {
                result = "skipped";
                if (!*pyxis_absent)
                        run_say(r, "  %s", strnull(rep.error));
                *pyxis_absent = true;
                (void) asprintf(ret_detail,
                                "srun does not take --container-image: the pyxis plugin is not "
                                "installed, so no job runs in a container here");
        } else if (k == -ENOENT) {
                result = "skipped";
                (void) asprintf(ret_detail, "the ConfigMap has no " ROLLOUT_ENV_KEY);
        } else if (k < 0) {
                result = "failed";
                (void) asprintf(ret_detail, "%s",
                                rep.error ? rep.error : "the job's environment cannot be read");
        } else if (check.n_differ + check.n_missing > 0) {
                result = "mismatch";
                (void) asprintf(ret_detail, "%s%s%s%s%s", check.n_differ ? "differ: " : "", differ,
                                check.n_differ && check.n_missing ? "; " : "",
                                check.n_missing ? "missing: " : "", missing);
        } else {
                result = "verified";
                (void) asprintf(ret_detail, "%zu key(s) as in " ROLLOUT_ENV_KEY "%s%s%s",
                                check.n_same, check.n_dynamic ? "; not compared (${NAME}): " : "",
                                dynamic, "");
        }
        run_say(r, "verify: node %s: %s: %s", node, result, strnull(*ret_detail));
        (void) json_array_append_new(
                results,
                json_pack("{s:s, s:s, s:o, s:o, s:o, s:s?}", "node", node, "result", result,
                          "differ", names_json(check.differ, check.n_differ), "missing",
                          names_json(check.missing, check.n_missing), "not_compared",
                          names_json(check.dynamic, check.n_dynamic), "detail", *ret_detail));
        return result;
}

/* Runs --verify-image on every node this run replaced, once they are back.
 * Returns how many mismatched or failed (their names and keys said), or
 * -ENOMEM. */
int rollout_verify_nodes(Rollout *r) {
        json_t *v = json_object_get(r->report, "verify"), *results = json_object_get(v, "nodes");
        bool pyxis_absent = false;
        int bad = 0;

        if (!r->args->verify_image)
                return 0;
        if (r->n_replaced_nodes == 0)
                run_say(r, "verify: no worker node was replaced by this run: nothing to verify");
        for (size_t i = 0; i < r->n_replaced_nodes; i++) {
                _cleanup_free_ char *detail = NULL;
                const char *result =
                        verify_node(r, r->replaced_nodes[i], &pyxis_absent, results, &detail);

                if (!result)
                        return -ENOMEM;
                run_step(r, "verify", r->replaced_nodes[i], result, detail);
                if (run_lease_note(r, json_pack("{s:s, s:s, s:s}", "step", "verify", "node",
                                                r->replaced_nodes[i], "result", result)) < 0)
                        bad++;
                if (streq(result, "mismatch") || streq(result, "failed")) {
                        run_say(r, "verify failed: node %s: %s", r->replaced_nodes[i],
                                strnull(detail));
                        bad++;
                }
        }
        return bad;
}

/* What plan says and the report holds before anything runs. */
void rollout_verify_plan(Rollout *r) {
        const RolloutArgs *a = r->args;

        if (!a->verify_image)
                return;
        (void) json_object_set_new(r->report, "verify",
                                   json_pack("{s:s, s:s, s:[]}", "image", a->verify_image, "key",
                                             ROLLOUT_ENV_KEY, "nodes"));
        run_say(r,
                "  verify: once the nodes are back, `srun -w NODE -N1 -n1 --container-image=%s "
                "env` "
                "on each replaced worker node, the keys of " ROLLOUT_ENV_KEY
                " compared by SHA-256%s",
                a->verify_image,
                r->configmap_refused || r->desired_env ? "" : " (the ConfigMap has none: skipped)");
}
