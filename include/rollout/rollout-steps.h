/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pieces of one rollout run that its files share. rollout-run.c holds
 * the run loop and these helpers; rollout-check.c the enroot ConfigMap check
 * and --verify-image; rollout-notice.c the login notice. Every function takes
 * the run (rollout-cmd.h) it works for; none is for use outside
 * agent/rollout/.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kube.h"
#include "macro.h"
#include "rollout-cmd.h"

/* rollout-run.c: output. A progress line, stamped with the time, on stdout
 * (stderr with --format json). */
void run_say(const Rollout *r, const char *fmt, ...) _printf_(2, 3);
/* Adds a step to the JSON report; target and detail may be NULL. */
void run_step(Rollout *r, const char *what, const char *target, const char *result,
              const char *detail);
/* Sleeps usec microseconds (an interrupted sleep ends early: the caller
 * looks again either way). */
void run_sleep(uint64_t usec);

/* rollout-run.c: Kubernetes. A synchronous request: 0 with *ret filled (any
 * HTTP status), or a negative errno when no answer came (logged). */
int run_kube_request(Rollout *r, KubeVerb verb, const char *method, const char *path,
                     const char *body, KubeResult *ret);
/* Logs a failed answer: the request, the code, the server's message and, for
 * 401 and 403, what to check. Returns -EIO. */
int run_answer_error(const Rollout *r, const char *method, const char *path, const KubeResult *res);
/* Reads the pods of role into r->pods[role], with their verdicts. */
int run_list_pods(Rollout *r, RolloutRole role);
/* Whether p is to be replaced by this run: stale, not excluded, not this
 * process's own pod, not deleted already. */
bool run_wanted(const Rollout *r, const RolloutPod *p);

/* rollout-run.c: the Lease. The record of the rollout this run works on (the
 * one it writes, else the Lease's when it is this rollout's and not
 * finished); borrowed, may be NULL. */
const json_t *run_record_of(const Rollout *r);
/* Write-ahead: records step s (stolen) in the Lease before it is taken; a
 * no-op when this run does not hold it. */
int run_lease_note(Rollout *r, json_t *s);
/* Renews the Lease when a third of its duration has passed since the last
 * write. */
int run_lease_renew(Rollout *r);

/* rollout-check.c: reads the enroot ConfigMap and checks it: 0 with
 * r->configmap_refused NULL when it passed (its ROLLOUT_ENV_KEY kept for
 * --verify-image), set when not; a failure to read it (logged) otherwise. */
int rollout_check_configmap(Rollout *r);
/* Keeps node in the list of nodes this run replaced. 0 or -ENOMEM. */
int rollout_note_replaced(Rollout *r, const char *node);
/* Runs --verify-image on every node this run replaced, once they are back.
 * Returns how many mismatched or failed (their names and keys said), or
 * -ENOMEM. */
int rollout_verify_nodes(Rollout *r);
/* What plan says and the report holds of --verify-image before anything
 * runs. */
void rollout_verify_plan(Rollout *r);

/* rollout-notice.c: whether --notify-command can run (or is not needed);
 * else says why. A preflight, before anything changes. */
bool rollout_notice_runnable(Rollout *r);
/* The notice for plan and status (and apply's first look): what will be
 * done, or what a run of this rollout did and how long is left. */
void rollout_notice_report(Rollout *r);
/* Before the first login pod goes: the notice (once per pod across runs),
 * then the wait for what is left of the grace. Re-reads the login pods.
 * Returns 0, or a failure to read them or to write the Lease. */
int rollout_notify_logins(Rollout *r);
