/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The login notice of a rollout (rollout-steps.h): --notify-command, an
 * Event on each login pod to be replaced, then --login-grace, recorded in the
 * Lease so that a continued rollout tells nobody twice.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "condition.h"
#include "kube.h"
#include "log.h"
#include "rollout-lease.h"
#include "rollout-steps.h"
#include "rollout.h"
#include "shell.h"
#include "spawn-run.h"
#include "timeutil.h"

/* ---------------------------------------------------------------------------
 * The login notice: the operator guide's "notify connected users and replace
 * the login pods". Before the first login pod goes, --notify-command runs
 * once, each login pod to be replaced gets an Event, and the rollout waits
 * --login-grace. The notice is a step of the Lease's record, written before
 * anyone is told: a run that continues the rollout tells nobody twice and
 * waits only what is left of the grace. */

/* The login pods this run replaces, in r->pods[ROLE_LOGIN]. */
static size_t notice_pods(const Rollout *r, const RolloutPod **ret, size_t max) {
        size_t n = 0;

        for (size_t i = 0; i < r->n_pods[ROLE_LOGIN]; i++)
                if (run_wanted(r, &r->pods[ROLE_LOGIN][i])) {
                        if (ret && n < max)
                                ret[n] = &r->pods[ROLE_LOGIN][i];
                        n++;
                }
        return n;
}

/* Whether argv0 names a file this process could execute: itself when it
 * holds a '/', else looked up in PATH as execvp() does. */
static bool executable_found(const char *argv0) {
        const char *path = getenv("PATH");

        if (strchr(argv0, '/'))
                return access(argv0, X_OK) == 0;
        for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; p;) {
                const char *end = strchrnul(p, ':');
                _cleanup_free_ char *f = NULL;

                if (asprintf(&f, "%.*s%s%s", (int) (end - p), p, end == p ? "" : "/", argv0) >= 0 &&
                    access(f, X_OK) == 0)
                        return true;
                p = *end ? end + 1 : NULL;
        }
        return false;
}

/* Preflight: a --notify-command that cannot run at all is a mistake caught
 * before anything changes, where login pods are to be replaced. Returns
 * true when it can run (or is not needed), else says why. */
bool rollout_notice_runnable(Rollout *r) {
        _cleanup_(shell_words_freep) char **words = NULL;

        if (!r->args->notify_command || notice_pods(r, NULL, 0) == 0)
                return true;
        if (shell_split_words(r->args->notify_command, &words, NULL) < 0)
                return log_oom(), false;
        if (executable_found(words[0]))
                return true;
        run_say(r,
                "blocked: --notify-command: \"%s\" is not an executable file%s: the users of the "
                "login pods could not be told.",
                words[0], strchr(words[0], '/') ? "" : " in PATH");
        run_step(r, "preflight", "--notify-command", "blocked", words[0]);
        return false;
}

/* The notice for plan and status (and apply's first look): what will be
 * done, or what a run of this rollout did and how long is left. */
void rollout_notice_report(Rollout *r) {
        const json_t *rec = run_record_of(r);
        int64_t given = 0, deadline = 0, left;
        size_t n = notice_pods(r, NULL, 0);
        bool recorded = rec && rollout_record_notice(rec, &given, &deadline);
        char at[ROLLOUT_MICROTIME_BYTES], end[ROLLOUT_MICROTIME_BYTES];
        json_t *o, *pods = json_array();
        _cleanup_free_ const RolloutPod **p = calloc(n + 1, sizeof *p);

        if (!pods || !p) {
                json_decref(pods);
                return;
        }
        if (n == 0 && !recorded) {
                json_decref(pods);
                (void) json_object_set_new(r->report, "login_notice", json_null());
                return;
        }
        notice_pods(r, p, n);
        for (size_t i = 0; i < n; i++)
                (void) json_array_append_new(pods, json_string(p[i]->name));
        o = json_pack("{s:o, s:s?, s:I}", "pods", pods, "command", r->args->notify_command,
                      "grace_seconds", (json_int_t) (r->args->login_grace_usec / 1000000u));
        if (!recorded) {
                run_say(r,
                        "login notice: before the first of %zu login pod(s) goes, %s%s%s an Event "
                        "on "
                        "each (reason " ROLLOUT_NOTICE_REASON "), then a wait of %llu s "
                        "(--login-grace)",
                        n, r->args->notify_command ? "run `" : "",
                        r->args->notify_command ? r->args->notify_command : "no --notify-command:",
                        r->args->notify_command ? "`," : "",
                        (unsigned long long) (r->args->login_grace_usec / 1000000u));
                (void) json_object_set_new(r->report, "login_notice", o);
                return;
        }
        rollout_microtime_format((uint64_t) given, at);
        rollout_microtime_format((uint64_t) deadline, end);
        left = (deadline - (int64_t) now_usec(CLOCK_REALTIME)) / 1000000;
        left = left > 0 ? left : 0;
        if (left > 0)
                run_say(r, "login notice: given at %s; the login pods go from %s (%lld s left)", at,
                        end, (long long) left);
        else
                run_say(r, "login notice: given at %s; its grace ended at %s", at, end);
        (void) json_object_set_new(o, "given_at", json_string(at));
        (void) json_object_set_new(o, "delete_at", json_string(end));
        (void) json_object_set_new(o, "seconds_left", json_integer(left));
        (void) json_object_set_new(r->report, "login_notice", o);
}

/* The environment of --notify-command: ours, less any AICR_ROLLOUT_*
 * inherited, plus what it is to say. Returns a new array of new strings
 * (shell_words_free()), or NULL when out of memory. */
static char **notice_environment(const Rollout *r, const RolloutPod *const *pods, size_t n,
                                 uint64_t grace_usec, int64_t deadline_usec) {
        _cleanup_(shell_words_freep) char **env = NULL;
        _cleanup_free_ char *names = NULL, *nodes = NULL;
        char end[32];
        size_t m = 0, k = 0, len_names = 0, len_nodes = 0;

        condition_format_time((uint64_t) deadline_usec, end);
        for (size_t i = 0; i < n; i++) {
                len_names += strlen(pods[i]->name) + 1;
                len_nodes += strlen(pods[i]->host ? pods[i]->host : "-") + 1;
        }
        names = calloc(len_names + 1, 1);
        nodes = calloc(len_nodes + 1, 1);
        while (environ && environ[m])
                m++;
        env = calloc(m + 8, sizeof(char *));
        if (!names || !nodes || !env)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                strcat(strcat(names, i ? " " : ""), pods[i]->name);
                strcat(strcat(nodes, i ? " " : ""), pods[i]->host ? pods[i]->host : "-");
        }
        for (size_t i = 0; i < m; i++) {
                if (startswith(environ[i], "AICR_ROLLOUT_"))
                        continue;
                if (!(env[k++] = strdup(environ[i])))
                        return NULL;
        }
        if (asprintf(&env[k++], "AICR_ROLLOUT_ID=%s", r->id) < 0 ||
            asprintf(&env[k++], "AICR_ROLLOUT_NAMESPACE=%s", r->namespace) < 0 ||
            asprintf(&env[k++], "AICR_ROLLOUT_LOGIN_PODS=%s", names) < 0 ||
            asprintf(&env[k++], "AICR_ROLLOUT_LOGIN_NODES=%s", nodes) < 0 ||
            asprintf(&env[k++], "AICR_ROLLOUT_GRACE_SECONDS=%llu",
                     (unsigned long long) (grace_usec / 1000000u)) < 0 ||
            asprintf(&env[k++], "AICR_ROLLOUT_DELETE_AT=%s", end) < 0 ||
            asprintf(&env[k++], "AICR_ROLLOUT_DELETE_AT_EPOCH=%lld",
                     (long long) (deadline_usec / 1000000)) < 0) {
                env[k - 1] = NULL;
                return NULL;
        }
        return TAKE_PTR(env);
}

/* The last line of a command's stderr that holds anything, in buf. */
static const char *last_line(const char *text, char *buf, size_t size) {
        const char *end = text + strlen(text), *start;

        while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
                end--;
        for (start = end; start > text && start[-1] != '\n';)
                start--;
        (void) snprintf(buf, size, "%.*s", (int) (end - start), start);
        return buf;
}

/* Runs --notify-command. Its failure is reported, never returned: by now
 * every worker is replaced and the drained nodes wait for the login pods,
 * so stopping here would keep the cluster out of service to spare the login
 * sessions; the Events and the full grace still come. Returns 0, -ENOMEM. */
static int notice_command(Rollout *r, const RolloutPod *const *pods, size_t n, uint64_t grace_usec,
                          int64_t deadline_usec) {
        _cleanup_(shell_words_freep) char **argv = NULL, **env = NULL;
        _cleanup_(spawn_result_done) SpawnResult res = {};
        const char *cmd = r->args->notify_command;
        char line[512] = "", why[640];
        int k;

        if (!cmd)
                return 0;
        if (shell_split_words(cmd, &argv, NULL) < 0)
                return log_oom();
        env = notice_environment(r, pods, n, grace_usec, deadline_usec);
        if (!env)
                return log_oom();
        k = spawn_run((const char *const *) argv, env,
                      &(SpawnLimits){.timeout_usec = ROLLOUT_NOTIFY_RUN_USEC,
                                     .max_stdout_bytes = ROLLOUT_NOTIFY_MAX_STDOUT,
                                     .max_stderr_bytes = ROLLOUT_NOTIFY_MAX_STDERR},
                      &res);
        if (k == -ENOMEM)
                return log_oom();
        if (res.err)
                last_line(res.err, line, sizeof line);
        if (k == 0 && WIFEXITED(res.wait_status) && WEXITSTATUS(res.wait_status) == 0) {
                run_say(r, "  notify: `%s` done", cmd);
                run_step(r, "notify", "--notify-command", "done", NULL);
                return 0;
        }
        if (k == -ETIME)
                (void) snprintf(why, sizeof why, "killed after %u s",
                                ROLLOUT_NOTIFY_RUN_USEC / 1000000u);
        else if (k == -EFBIG)
                (void) snprintf(why, sizeof why, "killed for printing more than %u bytes",
                                ROLLOUT_NOTIFY_MAX_STDOUT);
        else if (k < 0)
                (void) snprintf(why, sizeof why, "cannot run: %s", strerror(-k));
        else if (WIFSIGNALED(res.wait_status))
                (void) snprintf(why, sizeof why, "killed by signal %d", WTERMSIG(res.wait_status));
        else
                (void) snprintf(why, sizeof why, "exit status %d", WEXITSTATUS(res.wait_status));
        if (line[0])
                (void) snprintf(why + strlen(why), sizeof why - strlen(why), ": %s", line);
        run_say(r,
                "  notify: `%s` failed (%s). Going on: the users may not have been told, the "
                "Events "
                "and the grace still come.",
                cmd, why);
        run_step(r, "notify", "--notify-command", "failed", why);
        return 0;
}

/* Posts the notice Event on pod p. A failure is reported, never returned:
 * the Events tell, they do not guard. */
static void notice_event(Rollout *r, const RolloutPod *p, const char *message) {
        _cleanup_(kube_result_done) KubeResult res = {};
        _cleanup_(json_decrefp) json_t *ev = NULL;
        _cleanup_free_ char *path = NULL, *body = NULL;
        char host[256] = "";
        KubeStatus st;

        (void) gethostname(host, sizeof host - 1);
        ev = rollout_notice_event(p->name, r->namespace, p->uid, message, host,
                                  now_usec(CLOCK_REALTIME));
        body = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
        if (!body || asprintf(&path, "/api/v1/namespaces/%s/events", r->namespace) < 0) {
                (void) log_oom();
                return;
        }
        if (run_kube_request(r, KUBE_VERB_CREATE, "POST", path, body, &res) < 0) {
                run_say(r, "  event: not posted on pod %s (no answer); going on", p->name);
                run_step(r, "event", p->name, "failed", "no answer");
                return;
        }
        if (res.status == 201 || res.status == 200) {
                run_step(r, "event", p->name, "done", NULL);
                return;
        }
        kube_status_parse(res.body, res.body_len, &st);
        run_say(r, "  event: not posted on pod %s: POST %s%s: %ld %s: %s%s%s; going on", p->name,
                r->api_url, path, res.status, st.reason[0] ? st.reason : "error",
                st.message[0] ? st.message : "no message",
                res.status == 403 ? ". The rollout needs create on events in namespace " : "",
                res.status == 403 ? r->namespace : "");
        run_step(r, "event", p->name, "failed", st.reason[0] ? st.reason : "error");
}

/* Until deadline_usec (CLOCK_REALTIME), the Lease renewed. */
static int notice_wait(Rollout *r, int64_t deadline_usec) {
        for (;;) {
                int64_t left = deadline_usec - (int64_t) now_usec(CLOCK_REALTIME);
                int k;

                if (left <= 0)
                        return 0;
                k = run_lease_renew(r);
                if (k < 0)
                        return k;
                run_sleep((uint64_t) left < r->args->poll_usec ? (uint64_t) left
                                                               : r->args->poll_usec);
        }
}

/* Before the first login pod goes: the notice (once per pod across runs),
 * then the wait for what is left of the grace. Re-reads the login pods.
 * Returns 0, or a failure to read them or to write the Lease. */
int rollout_notify_logins(Rollout *r) {
        _cleanup_free_ const RolloutPod **pods = NULL;
        _cleanup_free_ const RolloutPod **fresh = NULL;
        const json_t *rec;
        uint64_t grace = r->args->login_grace_usec;
        int64_t given = 0, deadline = 0;
        char at[ROLLOUT_MICROTIME_BYTES], end[32];
        size_t n, m = 0;
        json_t *names;
        int k;

        k = run_list_pods(r, ROLE_LOGIN);
        if (k < 0)
                return k;
        n = notice_pods(r, NULL, 0);
        if (n == 0)
                return 0; /* no login pod to replace: nobody to tell */
        pods = calloc(n, sizeof *pods);
        fresh = calloc(n, sizeof *fresh);
        if (!pods || !fresh)
                return log_oom();
        notice_pods(r, pods, n);
        rec = run_record_of(r);
        /* A run before this one told the users of these pods already. */
        for (size_t i = 0; i < n; i++)
                if (!rec || !rollout_record_noticed(rec, pods[i]->name))
                        fresh[m++] = pods[i];
        if (m < n && rollout_record_notice(rec, &given, &deadline)) {
                rollout_microtime_format((uint64_t) given, at);
                condition_format_time((uint64_t) deadline, end);
                run_say(r,
                        "login notice: given at %s by an earlier run of this rollout: not again; "
                        "the login pods go at %s",
                        at, end);
                run_step(r, "notify", NULL, "given-earlier", at);
        }
        if (m > 0) {
                int64_t now = (int64_t) now_usec(CLOCK_REALTIME), until = now + (int64_t) grace;
                _cleanup_free_ char *message = NULL;

                names = json_array();
                if (!names)
                        return log_oom();
                for (size_t i = 0; i < m; i++)
                        if (json_array_append_new(names, json_string(fresh[i]->name)) < 0) {
                                json_decref(names);
                                return log_oom();
                        }
                rollout_microtime_format((uint64_t) now, at);
                condition_format_time((uint64_t) until, end);
                /* write-ahead: recorded before anyone is told */
                k = run_lease_note(r, json_pack("{s:s, s:s, s:I, s:o}", "step", "notify", "time",
                                                at, "grace_seconds",
                                                (json_int_t) (grace / 1000000u), "pods", names));
                if (k < 0)
                        return k;
                run_say(r, "login notice: %zu login pod(s) go at %s, in %llu s (--login-grace)", m,
                        end, (unsigned long long) (grace / 1000000u));
                k = notice_command(r, fresh, m, grace, until);
                if (k < 0)
                        return k;
                if (asprintf(&message,
                             "Rollout %s replaces this login pod for an enroot configuration "
                             "change at %s (in %llu s): save your work and log out; log in "
                             "again once a new login pod is Ready.",
                             r->id, end, (unsigned long long) (grace / 1000000u)) < 0)
                        return log_oom();
                for (size_t i = 0; i < m; i++)
                        notice_event(r, fresh[i], message);
                deadline = deadline > until ? deadline : until;
        }
        if (deadline > (int64_t) now_usec(CLOCK_REALTIME)) {
                condition_format_time((uint64_t) deadline, end);
                run_say(r, "login grace: waiting %.0f s, until %s, before the first login pod goes",
                        (double) (deadline - (int64_t) now_usec(CLOCK_REALTIME)) / 1e6, end);
                k = notice_wait(r, deadline);
                if (k < 0)
                        return k;
                run_step(r, "login-grace", NULL, "done", end);
        }
        return 0;
}
