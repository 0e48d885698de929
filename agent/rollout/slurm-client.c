/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Slurm's commands run for the rollout (slurm-client.h).
 *
 * SLURM_TIME_FORMAT=%s makes times read as seconds since the epoch.
 *
 * Output formats. By default (SLURM_FORMAT_AUTO) the text of
 * `scontrol --all --oneliner show node` (KEY=VALUE fields found by name,
 * Reason last but for Comment=, Extra=, InstanceId=, InstanceType= and
 * ReservationName=) and `squeue --format=%A|%T|%N` (job id, state, node
 * list): their meaning has not changed from Slurm 22.05 to 26.05
 * (src/api/node_info.c slurm_sprint_node_table(), src/squeue/opts.c), while
 * the JSON of `sinfo --json`, `squeue --json` and `scontrol --json` moved
 * with each data_parser version (v0.0.38 in 22.05; upstream's
 * src/plugins/data_parser holds v0.0.39 to v0.0.46 for the releases since:
 * states became lists, numbers became {"set","infinite","number"}, and from
 * 23.02 `sinfo --json` groups nodes, so they come from
 * `scontrol --json show node`). SLURM_FORMAT_JSON still reads those, when
 * asked for, and never falls back to text.
 */
#include <ctype.h>
#include <stdarg.h>
#include <sys/wait.h>

#include "log.h"
#include "slurm-client.h"
#include "spawn-run.h"
#include "strbuf.h"
#include "string-table.h"

extern char **environ;

/* ------------------------------------------------------------------------ */
/* Names */

static const char *const slurm_format_table[_SLURM_FORMAT_MAX] = {
        [SLURM_FORMAT_AUTO] = "auto",
        [SLURM_FORMAT_JSON] = "json",
        [SLURM_FORMAT_TEXT] = "text",
};

DEFINE_STRING_TABLE_LOOKUP(slurm_format, SlurmFormat, _SLURM_FORMAT_INVALID);

/* ------------------------------------------------------------------------ */
/* Running a command */

struct SlurmClient {
        char *sinfo, *squeue, *scontrol, *srun;
        uint64_t timeout_usec;
        size_t max_output_bytes;
        SlurmFormat format;
        char *version;
        unsigned version_major, version_minor;
        char **prefix; /* NULL-terminated; NULL: none */
        size_t n_prefix;
        bool relay_checked;
};

void slurm_command_report_done(SlurmCommandReport *r) {
        if (!r)
                return;
        free(r->command_line);
        free(r->stderr_text);
        free(r->error);
        *r = (SlurmCommandReport){.exit_status = -1};
}

static bool arg_needs_quotes(const char *a) {
        if (!*a)
                return true;
        for (const char *p = a; *p; p++)
                if (!isalnum((unsigned char) *p) && !strchr("_@%+=:,./-", *p))
                        return true;
        return false;
}

static char *command_line(const char *const *argv) {
        _cleanup_(strbuf_done) StrBuf b = STRBUF_INIT(SIZE_MAX - 1);

        for (size_t i = 0; argv[i]; i++) {
                if (i > 0)
                        (void) strbuf_putc(&b, ' ');
                if (!arg_needs_quotes(argv[i])) {
                        (void) strbuf_puts(&b, argv[i]);
                        continue;
                }
                (void) strbuf_putc(&b, '\'');
                for (const char *p = argv[i]; *p; p++)
                        (void) (*p == '\'' ? strbuf_puts(&b, "'\\''") : strbuf_putc(&b, *p));
                (void) strbuf_putc(&b, '\'');
        }
        if (b.len > SLURM_MAX_TEXT_BYTES) {
                /* a drain of thousands of nodes: enough to recognise it */
                b.len = SLURM_MAX_TEXT_BYTES - 3;
                memcpy(b.data + b.len, "...", 4);
                b.len += 3;
        }
        return strbuf_steal(&b);
}

/* environ predates const: the strings are never written through this. */
static char *unconst(const char *s) {
        union {
                const char *c;
                char *m;
        } u = {.c = s};
        return u.m;
}

/* The environment for the command: ours without variables that change what
 * sinfo/squeue/scontrol print or select, with times as epoch seconds. */
static char **child_environment(void) {
        static const char *const drop[] = {"SINFO_", "SQUEUE_", "SCONTROL_", "SLURM_TIME_FORMAT="};
        size_t n = 0, k = 0;
        char **env;

        while (environ && environ[n])
                n++;
        env = calloc(n + 2, sizeof(char *));
        if (!env)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                bool keep = true;
                for (size_t d = 0; d < ELEMENTSOF(drop); d++)
                        if (startswith(environ[i], drop[d]))
                                keep = false;
                if (keep)
                        env[k++] = environ[i];
        }
        /* scontrol prints times through strftime(SLURM_TIME_FORMAT). */
        env[k++] = unconst("SLURM_TIME_FORMAT=%s");
        env[k] = NULL;
        return env;
}

/* stderr for messages: lines kept, other control characters and NUL as '?'. */
static char *stderr_dup(const char *s, size_t len) {
        char *d = malloc(len + 1);

        if (!d)
                return NULL;
        for (size_t i = 0; i < len; i++)
                d[i] = ((unsigned char) s[i] < ' ' && s[i] != '\n' && s[i] != '\t') || s[i] == 0x7f
                               ? '?'
                               : s[i];
        d[len] = '\0';
        return d;
}

typedef struct RunResult {
        char *out;
        size_t out_len;
} RunResult;

/* Fills report->error from what happened. */
static void report_failure(SlurmCommandReport *report, const char *fmt, ...) _printf_(2, 3);
static void report_failure(SlurmCommandReport *report, const char *fmt, ...) {
        _cleanup_free_ char *what = NULL;
        const char *err = report->stderr_text ? report->stderr_text : "";
        size_t first = strcspn(err, "\n");
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&what, fmt, ap) < 0)
                what = NULL;
        va_end(ap);

        free(report->error);
        report->error = NULL;
        if (asprintf(&report->error, "'%s' %s%s%.*s", strnull(report->command_line),
                     what ? what : "failed", first > 0 ? ": " : "", (int) first, err) < 0)
                report->error = NULL;
}

/* Runs argv[0] (resolved in PATH) with argv, stdout into *ret (capped),
 * stderr into report. Returns 0 only for exit status 0. */
static int run_argv(SlurmClient *c, const char *const *argv, RunResult *ret,
                    SlurmCommandReport *report) {
        const SpawnLimits limits = {
                .timeout_usec = c->timeout_usec,
                .max_stdout_bytes = c->max_output_bytes,
                .max_stderr_bytes = SLURM_MAX_STDERR_BYTES,
        };
        _cleanup_(spawn_result_done) SpawnResult res = {};
        _cleanup_free_ char **env = NULL;
        int r, status;

        report->command_line = command_line(argv);
        if (!report->command_line)
                return -ENOMEM;
        env = child_environment();
        if (!env)
                return -ENOMEM;

        log_debug("Running %s", report->command_line);
        r = spawn_run(argv, env, &limits, &res);
        if (res.err) {
                report->stderr_text = stderr_dup(res.err, res.err_len);
                if (!report->stderr_text)
                        return -ENOMEM;
        }
        if (res.exec_errno > 0) {
                if (c->prefix)
                        report_failure(report,
                                       "could not run \"%s\", the first word of --slurm-exec: %s",
                                       argv[0], strerror(res.exec_errno));
                else
                        report_failure(report, "could not run: %s", strerror(res.exec_errno));
                return r;
        }
        if (r == -ETIME) {
                report_failure(report, "timed out after %.1f s",
                               (double) c->timeout_usec / 1000000.0);
                return r;
        }
        if (r == -EFBIG) {
                report_failure(report, "printed more than %zu bytes", c->max_output_bytes);
                return r;
        }
        if (r < 0) {
                report_failure(report, "failed: %s", strerror(-r));
                return r;
        }
        status = res.wait_status;
        if (WIFSIGNALED(status)) {
                report->exit_status = 128 + WTERMSIG(status);
                report_failure(report, "was killed by signal %d (%s)", WTERMSIG(status),
                               strsignal(WTERMSIG(status)));
                return -EIO;
        }
        report->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (report->exit_status != 0) {
                report_failure(report, "exited with status %d", report->exit_status);
                return -EIO;
        }

        ret->out_len = res.out_len;
        ret->out = TAKE_PTR(res.out);
        return 0;
}

/* Variables that change what sinfo, squeue or scontrol print or select
 * (ENVIRONMENT VARIABLES in sinfo(1), squeue(1), scontrol(1), Slurm 22.05):
 * child_environment() drops them by prefix; across a relay, env(1) on the far
 * side unsets each by name. */
static const char *const far_unset[] = {
        "SINFO_ALL",       "SINFO_FEDERATION",  "SINFO_FORMAT",     "SINFO_LOCAL",
        "SINFO_PARTITION", "SINFO_SORT",        "SQUEUE_ACCOUNT",   "SQUEUE_ALL",
        "SQUEUE_ARRAY",    "SQUEUE_FEDERATION", "SQUEUE_FORMAT",    "SQUEUE_FORMAT2",
        "SQUEUE_LICENSES", "SQUEUE_LOCAL",      "SQUEUE_NAMES",     "SQUEUE_PARTITION",
        "SQUEUE_PRIORITY", "SQUEUE_QOS",        "SQUEUE_SIBLING",   "SQUEUE_SORT",
        "SQUEUE_STATES",   "SQUEUE_USERS",      "SCONTROL_ALL",     "SCONTROL_FEDERATION",
        "SCONTROL_FUTURE", "SCONTROL_LOCAL",    "SCONTROL_SIBLING",
};

/* What the relay check sends: a joining relay hands the far shell two
 * assignments, with the quotes removed, and env prints two lines. */
#define RELAY_CHECK "AICR_ENROOT_RELAY_CHECK=1  AICR_ENROOT_RELAY_CHECK2='2 \"3\"'"

/* Does PREFIX env -i RELAY_CHECK env print RELAY_CHECK back? */
static int relay_check(SlurmClient *c, SlurmCommandReport *report) {
        _cleanup_free_ const char **argv = NULL;
        _cleanup_free_ char *out = NULL;
        RunResult res = {};
        size_t n = 0;
        int r;

        argv = calloc(c->n_prefix + 5, sizeof(char *));
        if (!argv)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_prefix; i++)
                argv[n++] = c->prefix[i];
        argv[n++] = "env";
        argv[n++] = "-i";
        argv[n++] = RELAY_CHECK;
        argv[n++] = "env";
        r = run_argv(c, argv, &res, report);
        out = res.out;
        if (r < 0)
                return r;
        if (res.out_len != strlen(RELAY_CHECK "\n") ||
            memcmp(out, RELAY_CHECK "\n", res.out_len) != 0) {
                report_failure(report, "did not pass its arguments on as they are: --slurm-exec "
                                       "needs a relay that does (kubectl exec does; ssh joins them "
                                       "into one shell line)");
                return -EPROTO;
        }
        c->relay_checked = true;
        return 0;
}

/* Runs argv, through the prefix when there is one. */
static int run(SlurmClient *c, const char *const *argv, RunResult *ret,
               SlurmCommandReport *report) {
        _cleanup_free_ const char **full = NULL;
        size_t n = 0, k = 0;
        int r;

        if (!c->prefix)
                return run_argv(c, argv, ret, report);
        if (!c->relay_checked) {
                r = relay_check(c, report);
                if (r < 0)
                        return r;
                slurm_command_report_done(report);
        }
        while (argv[k])
                k++;
        full = calloc(c->n_prefix + 2 + 2 * ELEMENTSOF(far_unset) + k + 1, sizeof(char *));
        if (!full)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_prefix; i++)
                full[n++] = c->prefix[i];
        full[n++] = "env";
        for (size_t i = 0; i < ELEMENTSOF(far_unset); i++) {
                full[n++] = "-u";
                full[n++] = far_unset[i];
        }
        /* scontrol prints times through strftime(SLURM_TIME_FORMAT). */
        full[n++] = "SLURM_TIME_FORMAT=%s";
        for (size_t i = 0; i < k; i++)
                full[n++] = argv[i];
        return run_argv(c, full, ret, report);
}

/* ------------------------------------------------------------------------ */
/* The client */

int slurm_client_new(const SlurmConfig *cfg, SlurmClient **ret) {
        _cleanup_(slurm_client_freep) SlurmClient *c = NULL;

        if (cfg->max_output_bytes > SLURM_MAX_OUTPUT_BYTES || cfg->format < 0 ||
            cfg->format >= _SLURM_FORMAT_MAX)
                return -EINVAL;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->sinfo = strdup(cfg->sinfo ? cfg->sinfo : "sinfo");
        c->squeue = strdup(cfg->squeue ? cfg->squeue : "squeue");
        c->scontrol = strdup(cfg->scontrol ? cfg->scontrol : "scontrol");
        c->srun = strdup(cfg->srun ? cfg->srun : "srun");
        if (!c->sinfo || !c->squeue || !c->scontrol || !c->srun)
                return -ENOMEM;
        c->timeout_usec = cfg->timeout_usec ? cfg->timeout_usec : SLURM_DEFAULT_TIMEOUT_USEC;
        c->max_output_bytes =
                cfg->max_output_bytes ? cfg->max_output_bytes : SLURM_DEFAULT_MAX_OUTPUT_BYTES;
        c->format = cfg->format;
        if (cfg->exec_prefix && cfg->exec_prefix[0]) {
                while (cfg->exec_prefix[c->n_prefix])
                        c->n_prefix++;
                c->prefix = calloc(c->n_prefix + 1, sizeof(char *));
                if (!c->prefix)
                        return -ENOMEM;
                for (size_t i = 0; i < c->n_prefix; i++) {
                        c->prefix[i] = strdup(cfg->exec_prefix[i]);
                        if (!c->prefix[i])
                                return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(c);
        return 0;
}

SlurmClient *slurm_client_free(SlurmClient *c) {
        if (!c)
                return NULL;
        free(c->sinfo);
        free(c->squeue);
        free(c->scontrol);
        free(c->srun);
        free(c->version);
        for (size_t i = 0; c->prefix && c->prefix[i]; i++)
                free(c->prefix[i]);
        free(c->prefix);
        free(c);
        return NULL;
}

SlurmFormat slurm_client_format(const SlurmClient *c) {
        return c->format;
}

const char *slurm_client_version(const SlurmClient *c) {
        return c->version;
}

static SlurmCommandReport *report_reset(SlurmCommandReport *report, SlurmCommandReport *scratch) {
        if (!report)
                report = scratch;
        slurm_command_report_done(report);
        return report;
}

int slurm_probe_version(SlurmClient *c, SlurmCommandReport *report) {
        SlurmCommandReport scratch = {};
        const char *argv[] = {c->scontrol, "--version", NULL};
        _cleanup_free_ char *out = NULL;
        RunResult res = {};
        unsigned major, minor, micro;
        const char *v;
        int r;

        report = report_reset(report, &scratch);
        r = run(c, argv, &res, report);
        out = res.out;
        if (r >= 0) {
                /* "slurm 22.05.8", "slurm-wlm 22.05.8", "slurm 24.11.0-0rc1" */
                v = strchr(out, ' ');
                if (!v || sscanf(v + 1, "%u.%u.%u", &major, &minor, &micro) < 2) {
                        report_failure(report, "printed no version");
                        r = -EBADMSG;
                } else {
                        free(c->version);
                        c->version = slurm_text_dup(v + 1, strcspn(v + 1, "\n"));
                        if (!c->version)
                                r = -ENOMEM;
                        c->version_major = major;
                        c->version_minor = minor;
                }
        }
        slurm_command_report_done(&scratch);
        return r;
}

static bool version_at_least(const SlurmClient *c, unsigned major, unsigned minor) {
        return c->version_major > major || (c->version_major == major && c->version_minor >= minor);
}

/* AUTO reads text, which needs no version; JSON needs it to pick the node command. */
static int resolve_format(SlurmClient *c, SlurmCommandReport *report) {
        int r;

        if (c->format == SLURM_FORMAT_AUTO)
                c->format = SLURM_FORMAT_TEXT;
        if (c->format == SLURM_FORMAT_TEXT || c->version)
                return 0;
        r = slurm_probe_version(c, report);
        if (r < 0)
                return r;
        log_debug("Slurm %s: reading its JSON output", c->version);
        return 0;
}

typedef int (*parse_t)(const char *data, size_t len, void **ret, char **ret_error);

/* Runs argv and parses its output; on a parse failure, the report says why. */
static int run_and_parse(SlurmClient *c, const char *const *argv, parse_t parse, void **ret,
                         SlurmCommandReport *report) {
        _cleanup_free_ char *out = NULL, *why = NULL;
        RunResult res = {};
        int r;

        slurm_command_report_done(report);
        r = run(c, argv, &res, report);
        out = res.out;
        if (r < 0)
                return r;
        r = parse(out, res.out_len, ret, &why);
        if (r < 0) {
                if (r == -EIO)
                        report_failure(report, "failed: %s", why ? why : "Slurm reported an error");
                else if (r == -ENOBUFS)
                        report_failure(report, "listed more than this program reads");
                else
                        report_failure(report, "printed output that could not be read: %s",
                                       why ? why : strerror(-r));
        }
        return r;
}

static int parse_nodes_json(const char *d, size_t n, void **ret, char **e) {
        return slurm_nodes_parse_json(d, n, (SlurmNodeList **) ret, e);
}
static int parse_nodes_text(const char *d, size_t n, void **ret, char **e) {
        return slurm_nodes_parse_scontrol(d, n, (SlurmNodeList **) ret, e);
}
static int parse_jobs_json(const char *d, size_t n, void **ret, char **e) {
        return slurm_jobs_parse_json(d, n, (SlurmJobList **) ret, e);
}
static int parse_jobs_text(const char *d, size_t n, void **ret, char **e) {
        return slurm_jobs_parse_squeue(d, n, (SlurmJobList **) ret, e);
}

int slurm_read_nodes(SlurmClient *c, SlurmNodeList **ret, SlurmCommandReport *report) {
        SlurmCommandReport scratch = {};
        const char *json_new[] = {c->scontrol, "--json", "--all", "show", "node", NULL};
        const char *json_old[] = {c->sinfo, "--json", "--all", NULL};
        const char *text[] = {c->scontrol, "--all", "--oneliner", "show", "node", NULL};
        void *l = NULL;
        int r;

        report = report_reset(report, &scratch);
        r = resolve_format(c, report);
        if (r < 0)
                goto finish;
        if (c->format == SLURM_FORMAT_JSON) {
                /* 23.02 made `sinfo --json` group nodes; scontrol lists them from then on. */
                r = run_and_parse(c, version_at_least(c, 23, 2) ? json_new : json_old,
                                  parse_nodes_json, &l, report);
                goto finish;
        }
        r = run_and_parse(c, text, parse_nodes_text, &l, report);
finish:
        slurm_command_report_done(&scratch);
        if (r < 0)
                return r;
        *ret = l;
        return 0;
}

int slurm_read_jobs(SlurmClient *c, char *const *names, size_t n_names, SlurmJobList **ret,
                    SlurmCommandReport *report) {
        SlurmCommandReport scratch = {};
        const char *json[] = {c->squeue, "--json", "--all", NULL};
        const char *text[] = {c->squeue,           "--all", "--noheader", "--states=all",
                              "--format=%A|%T|%N", NULL};
        _cleanup_(slurm_job_list_freep) SlurmJobList *l = NULL;
        int r;

        report = report_reset(report, &scratch);
        r = resolve_format(c, report);
        if (r < 0)
                goto finish;
        if (c->format == SLURM_FORMAT_JSON) {
                r = run_and_parse(c, json, parse_jobs_json, (void **) &l, report);
                goto finish;
        }
        r = run_and_parse(c, text, parse_jobs_text, (void **) &l, report);
finish:
        slurm_command_report_done(&scratch);
        if (r < 0)
                return r;

        /* squeue --json ignores --nodelist before 23.02: filter here, always
         * (slurm_job_list_keep_nodes() never expands a job's node list). */
        if (names)
                slurm_job_list_keep_nodes(l, names, n_names);
        *ret = TAKE_PTR(l);
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Updates */

static bool update_name_is_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;

        if (!slurm_name_is_valid(s ? s : "", n) || strcasecmp(s, "ALL") == 0 || s[0] == '-')
                return false;
        return !strpbrk(s, ",[]=\"'");
}

static bool reason_is_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;

        if (n == 0 || n > SLURM_MAX_REASON_BYTES || s[0] == '"' || s[n - 1] == '"')
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] < ' ' || s[i] == 0x7f)
                        return false;
        return true;
}

/* Nothing ran: the report says why. Returns -EINVAL. */
static int refuse(SlurmCommandReport *report, const char *fmt, ...) _printf_(2, 3);
static int refuse(SlurmCommandReport *report, const char *fmt, ...) {
        va_list ap;

        free(report->error);
        va_start(ap, fmt);
        if (vasprintf(&report->error, fmt, ap) < 0)
                report->error = NULL;
        va_end(ap);
        return -EINVAL;
}

static int update_nodes(SlurmClient *c, char *const *names, size_t n_names, const char *state,
                        const char *reason, SlurmCommandReport *report) {
        _cleanup_(strbuf_done) StrBuf list = STRBUF_INIT(SIZE_MAX - 1);
        _cleanup_free_ char *node_arg = NULL, *state_arg = NULL, *reason_arg = NULL;
        RunResult res = {};
        int r;

        slurm_command_report_done(report);
        if (!names || n_names == 0 || n_names > SLURM_MAX_NODES)
                return refuse(report, "scontrol update State=%s: %zu nodes named (1 to %u allowed)",
                              state, names ? n_names : 0, SLURM_MAX_NODES);
        for (size_t i = 0; i < n_names; i++) {
                if (!update_name_is_valid(names[i]))
                        return refuse(report,
                                      "scontrol update State=%s: refusing node name \"%.64s\" "
                                      "(ALL, a hostlist or an invalid name)",
                                      state, strnull(names[i]));
                r = strbuf_printf(&list, "%s%s", i ? "," : "", names[i]);
                if (r < 0)
                        return r;
        }
        if (reason && !reason_is_valid(reason))
                return refuse(report,
                              "scontrol update State=%s: refusing the reason (empty, over %u "
                              "bytes, control characters, or quotes at an end)",
                              state, SLURM_MAX_REASON_BYTES);

        if (asprintf(&node_arg, "NodeName=%s", strbuf_str(&list)) < 0 ||
            asprintf(&state_arg, "State=%s", state) < 0 ||
            (reason && asprintf(&reason_arg, "Reason=%s", reason) < 0))
                return -ENOMEM;

        const char *argv[] = {c->scontrol, "update", node_arg, state_arg, reason_arg, NULL};
        r = run(c, argv, &res, report);
        free(res.out);
        return r;
}

static int update(SlurmClient *c, char *const *names, size_t n_names, const char *state,
                  const char *reason, SlurmCommandReport *report) {
        SlurmCommandReport scratch = {};
        int r;

        r = update_nodes(c, names, n_names, state, reason, report ? report : &scratch);
        slurm_command_report_done(&scratch);
        return r;
}

int slurm_drain_nodes(SlurmClient *c, char *const *names, size_t n_names, const char *reason,
                      SlurmCommandReport *report) {
        return update(c, names, n_names, "DRAIN", strempty(reason), report);
}

int slurm_resume_nodes(SlurmClient *c, char *const *names, size_t n_names,
                       SlurmCommandReport *report) {
        return update(c, names, n_names, "RESUME", NULL, report);
}

int slurm_down_nodes(SlurmClient *c, char *const *names, size_t n_names, const char *reason,
                     SlurmCommandReport *report) {
        return update(c, names, n_names, "DOWN", strempty(reason), report);
}

/* ------------------------------------------------------------------------ */
/* A job's environment */

static bool image_is_valid(const char *s) {
        if (!s || !*s || s[0] == '-')
                return false;
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p <= ' ' || *p == 0x7f)
                        return false;
        return true;
}

int slurm_container_env(SlurmClient *c, const char *node, const char *image, char **ret_out,
                        size_t *ret_len, SlurmCommandReport *report) {
        SlurmCommandReport scratch = {};
        _cleanup_free_ char *img = NULL, *t = NULL;
        uint64_t timeout = c->timeout_usec;
        size_t max = c->max_output_bytes;
        RunResult res = {};
        int r;

        report = report_reset(report, &scratch);
        if (!update_name_is_valid(node))
                r = refuse(report, "not a single Slurm node name: \"%s\"", strnull(node));
        else if (!image_is_valid(image))
                r = refuse(report, "not an image for --container-image: \"%s\"", strnull(image));
        else if (asprintf(&img, "--container-image=%s", image) < 0 ||
                 asprintf(&t, "--time=%u", SLURM_VERIFY_TIME_LIMIT_MIN) < 0)
                r = -ENOMEM;
        else {
                const char *argv[] = {
                        c->srun, "-w",  node, "-N1", "-n1", t, "--job-name=aicr-enroot-verify",
                        img,     "env", NULL};

                /* an allocation and an image import take longer than a query */
                c->timeout_usec = SLURM_VERIFY_TIMEOUT_USEC;
                c->max_output_bytes = SLURM_VERIFY_MAX_ENV_BYTES;
                r = run(c, argv, &res, report);
                c->timeout_usec = timeout;
                c->max_output_bytes = max;
                /* getopt's words for an option srun does not know: pyxis
                 * adds --container-image as a SPANK option */
                if (r == -EIO && report->stderr_text &&
                    strstr(report->stderr_text, "unrecognized option") &&
                    strstr(report->stderr_text, "--container-image"))
                        r = -ENOTSUP;
        }
        if (r >= 0) {
                *ret_out = res.out;
                *ret_len = res.out_len;
        } else
                free(res.out);
        slurm_command_report_done(&scratch);
        return r;
}
