/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>

#include "lint.h"
#include "shell.h"
#include "string-table.h"

const char *const lint_job_scoped_keys[] = {
        /* Fabric and interface choices belong to a job or partition (docs/DESIGN.md §5). */
        "FI_PROVIDER", "NCCL_SOCKET_IFNAME", "NCCL_NVLS_ENABLE", "NCCL_MNNVL_ENABLE", NULL,
};

/* The keys enroot's config loader takes (docs/DESIGN.md §5), as lint names them. */
#define CONF_ACCEPTED_KEYS "ENROOT_*, SSL_CERT_DIR, SSL_CERT_FILE and all/no/http/https_proxy"

static const char *const severity_table[_SEVERITY_MAX] = {
        [SEVERITY_ERROR] = "error",
        [SEVERITY_WARNING] = "warning",
};

DEFINE_STRING_TABLE_TO_STRING(severity, Severity);

Lint *lint_free(Lint *l) {
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n_findings; i++) {
                free(l->findings[i].key);
                free(l->findings[i].message);
        }
        free(l->findings);
        free(l);
        return NULL;
}

static int add(Lint *l, unsigned line, Severity sev, const char *id, const char *key,
               const char *fmt, ...) _printf_(6, 7);

static int add(Lint *l, unsigned line, Severity sev, const char *id, const char *key,
               const char *fmt, ...) {
        Finding *f, *n;
        va_list ap;
        int r;

        n = reallocarray(l->findings, l->n_findings + 1, sizeof(Finding));
        if (!n)
                return -ENOMEM;
        l->findings = n;
        f = &l->findings[l->n_findings];
        *f = (Finding){.line = line, .severity = sev, .id = id};

        if (key) {
                f->key = strndup(key, LINT_MAX_KEY_BYTES);
                if (!f->key)
                        return -ENOMEM;
        }
        va_start(ap, fmt);
        r = vasprintf(&f->message, fmt, ap);
        va_end(ap);
        if (r < 0) {
                free(f->key);
                return -ENOMEM;
        }
        /* Messages go to a terminal: never a control byte from the file. */
        for (char *p = f->message; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        *p = '?';
        if ((size_t) r > LINT_MAX_MESSAGE_BYTES)
                memcpy(f->message + LINT_MAX_MESSAGE_BYTES - 3, "...", 4);

        l->n_findings++;
        if (sev == SEVERITY_ERROR)
                l->n_errors++;
        else
                l->n_warnings++;
        return 0;
}

static bool is_job_scoped(const LintOptions *o, const char *key) {
        for (const char *const *k = lint_job_scoped_keys; *k; k++)
                if (streq(*k, key))
                        return true;
        if (o && o->job_scoped_extra)
                for (const char *const *k = o->job_scoped_extra; *k; k++)
                        if (streq(*k, key))
                                return true;
        return false;
}

/* A word that can be named in a message: letters, digits and '_', not too
 * long for one (enroot's own keys are under 40 bytes). */
static bool looks_like_key(const char *w) {
        size_t n = strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");

        return n > 0 && n <= LINT_MAX_NAMED_KEY_BYTES && w[n] == '\0';
}

/* Values that read as "off" to a person but mean yes to enroot, which only
 * unsets n, no, N, NO, No, f, false, F, False, FALSE. */
static bool looks_false(const char *v) {
        static const char *const words[] = {
                "0", "off", "disable", "disabled", "none", "null", "nil", "never", "nope", NULL,
        };
        for (const char *const *w = words; *w; w++)
                if (strcasecmp(v, *w) == 0)
                        return true;
        /* Case variants the loader does not know: "nO", "fALSE", "False " ... */
        return (strcasecmp(v, "no") == 0 || strcasecmp(v, "false") == 0) && !conf_value_is_false(v);
}

static const char *live_what(unsigned flags) {
        if (flags & SHELL_LIVE_COMMAND)
                return "runs a command ($(...) or backticks)";
        if (flags & SHELL_LIVE_CONTROL)
                return "holds a shell operator (; & | < > or parentheses) that eval runs";
        if (flags & SHELL_LIVE_VARIABLE)
                return "expands a variable from enroot's environment";
        if (flags & SHELL_LIVE_GLOB)
                return "holds an unquoted glob (* ? [) that matches files";
        if (flags & SHELL_LIVE_BRACE)
                return "holds a brace expansion";
        if (flags & SHELL_LIVE_TILDE)
                return "starts a word with ~, which expands to a home directory";
        if (flags & SHELL_LIVE_ANSI_C)
                return "uses $'...' quoting";
        return "is not valid shell for eval";
}

static int lint_duplicate(Lint *out, const Document *d, const Line *l) {
        const Setting *s;

        if (l->kind != LINE_SETTING || l->wins)
                return 0;
        s = document_get(d, l->key);
        if (!s)
                return 0;
        if (d->type == DOC_CONF)
                return add(out, l->number, SEVERITY_WARNING, "duplicate-key", l->key,
                           "%s is also defined on line %u, which enroot keeps (the first "
                           "non-empty definition): this line has no effect; delete one of them",
                           l->key, s->line);
        return add(out, l->number, SEVERITY_WARNING, "duplicate-key", l->key,
                   "%s is also defined on line %u, which wins (in environ.d the last "
                   "definition wins): this line has no effect; delete one of them",
                   l->key, s->line);
}

static int lint_conf_line(Lint *out, const Document *d, const Line *l) {
        const char *sug;
        int r;

        switch (l->kind) {
        case LINE_UNTERMINATED:
                if (l->key && conf_key_is_accepted(l->key))
                        return add(out, l->number, SEVERITY_ERROR, "no-final-newline", l->key,
                                   "the last line has no newline, so enroot never reads it and "
                                   "%s is not set: end the file with a newline",
                                   l->key);
                return add(out, l->number, SEVERITY_WARNING, "no-final-newline", NULL,
                           "the last line has no newline and enroot never reads it: end the "
                           "file with a newline");

        case LINE_IGNORED:
                switch (l->why) {
                case WHY_EXPORT:
                        return add(out, l->number, SEVERITY_WARNING, "export", NULL,
                                   "enroot ignores \"export KEY=VALUE\" lines (it reads the key "
                                   "\"export\"): write KEY=VALUE");
                case WHY_NO_KEY:
                        return add(out, l->number, SEVERITY_WARNING, "ignored-line", NULL,
                                   "the line starts with a separator, so it has no key and enroot "
                                   "ignores it");
                case WHY_KEY_NOT_ACCEPTED:
                        /* The first word of a line enroot skips is not always a
                         * key: in a value quoted across lines it is part of the
                         * value, perhaps of a password. Name it only when it
                         * looks like a key. */
                        if (!looks_like_key(l->key))
                                return add(out, l->number, SEVERITY_WARNING, "ignored-line", NULL,
                                           "enroot ignores a line that does not start with a key "
                                           "(a value quoted across lines? enroot reads one line "
                                           "at a time)");
                        /* enroot's hooks read these from the container's
                         * environment, where environ.d puts them (docs/DESIGN.md §5). */
                        if (startswith(l->key, "MELLANOX_") || startswith(l->key, "NVIDIA_"))
                                return add(out, l->number, SEVERITY_WARNING, "ignored-key", l->key,
                                           "enroot ignores %s (it reads only " CONF_ACCEPTED_KEYS
                                           "): enroot's hooks read MELLANOX_* and NVIDIA_* from "
                                           "the container environment, so set it in environ.d",
                                           l->key);
                        sug = conf_key_suggest(l->key);
                        if (sug)
                                return add(out, l->number, SEVERITY_WARNING, "ignored-key", l->key,
                                           "enroot ignores %s (it reads only " CONF_ACCEPTED_KEYS
                                           "): did you mean %s?",
                                           l->key, sug);
                        return add(out, l->number, SEVERITY_WARNING, "ignored-key", l->key,
                                   "enroot ignores %s (it reads only " CONF_ACCEPTED_KEYS
                                   "): environment for containers belongs in environ.d",
                                   l->key);
                default:
                        return 0;
                }

        case LINE_SETTING:
                break;

        default:
                return 0;
        }

        if (startswith(l->key, "ENROOT_") && !conf_key_is_known(l->key)) {
                sug = conf_key_suggest(l->key);
                if (sug)
                        r = add(out, l->number, SEVERITY_WARNING, "unknown-key", l->key,
                                "%s is not an enroot setting: did you mean %s?", l->key, sug);
                else
                        r = add(out, l->number, SEVERITY_WARNING, "unknown-key", l->key,
                                "%s is not a known enroot setting: check the spelling", l->key);
                if (r < 0)
                        return r;
        }

        r = lint_duplicate(out, d, l);
        if (r < 0)
                return r;

        /* A value eval cannot parse is the syntax error already reported. */
        if ((l->flags & SHELL_LIVE_MASK) == SHELL_LIVE_SYNTAX && document_is_refused(d))
                ;
        else if (l->flags & SHELL_LIVE_MASK) {
                r = add(out, l->number, SEVERITY_WARNING, "live-shell", l->key,
                        "the value of %s %s when enroot loads the file (eval echo): it is "
                        "compared as text, so any change to it counts as drift; write the "
                        "literal value, quoted",
                        l->key, live_what(l->flags));
                if (r < 0)
                        return r;
        } else if (l->flags & SHELL_NOTE_ECHO_OPTION) {
                r = add(out, l->number, SEVERITY_WARNING, "echo-option", l->key,
                        "the value of %s starts with an echo option (-n, -e or -E) that enroot's "
                        "eval echo swallows instead of keeping: quote it differently",
                        l->key);
                if (r < 0)
                        return r;
        }

        if (l->value && conf_key_is_boolean(l->key) && looks_false(l->value)) {
                r = add(out, l->number, SEVERITY_WARNING, "boolean-value", l->key,
                        "%s is set to a value that reads as off but means yes to enroot: only "
                        "n, no, N, NO, No, f, false, F, False and FALSE turn it off",
                        l->key);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int lint_env_line(Lint *out, const Document *d, const LintOptions *o, const Line *l) {
        int r;

        if (l->kind == LINE_IGNORED) {
                if (l->why == WHY_ENROOT_PREFIX)
                        return add(out, l->number, SEVERITY_WARNING, "enroot-key", l->key,
                                   "enroot drops ENROOT_ lines from environ.d files: set %s in "
                                   "enroot.conf",
                                   l->key);
                if (l->key && startswith(l->key, "export "))
                        return add(out, l->number, SEVERITY_WARNING, "dropped-line", NULL,
                                   "enroot drops this line: environ.d takes NAME=VALUE lines, "
                                   "without \"export\"");
                if (l->raw && strpbrk(l->key, " \t"))
                        return add(out, l->number, SEVERITY_WARNING, "dropped-line", NULL,
                                   "enroot drops this line: it is not NAME=VALUE (no blanks "
                                   "before the '=', a name of letters, digits and _)");
                return add(out, l->number, SEVERITY_WARNING, "dropped-line", NULL,
                           "enroot drops this line: it is not NAME=VALUE (a name of letters, "
                           "digits and _ not starting with a digit, then '=')");
        }
        if (l->kind != LINE_SETTING)
                return 0;

        r = lint_duplicate(out, d, l);
        if (r < 0)
                return r;

        if (l->flags & ENV_SUBST_IN_KEY) {
                r = add(out, l->number, SEVERITY_WARNING, "substituted-key", NULL,
                        "the name before '=' holds ${...}, so the key depends on enroot's "
                        "environment: write the name literally");
                if (r < 0)
                        return r;
        }
        if (l->flags & ENV_DOLLAR_NAME) {
                r = add(out, l->number, SEVERITY_WARNING, "unbraced-variable", l->key,
                        "the value of %s holds $NAME, which environ.d does not substitute (only "
                        "${NAME} is): the job sees the literal text",
                        l->key);
                if (r < 0)
                        return r;
        }
        if (l->flags & ENV_UNSUPPORTED_EXP) {
                r = add(out, l->number, SEVERITY_WARNING, "unsupported-expansion", l->key,
                        "the value of %s holds ${...} with an operator (such as ${NAME:-x}), "
                        "which environ.d does not support: the job sees the literal text",
                        l->key);
                if (r < 0)
                        return r;
        }
        if (l->flags & ENV_INLINE_HASH) {
                r = add(out, l->number, SEVERITY_WARNING, "inline-comment", l->key,
                        "the value of %s holds \" #\": environ.d keeps inline comments as part "
                        "of the value; put comments on their own line",
                        l->key);
                if (r < 0)
                        return r;
        }
        if (!(l->flags & ENV_SUBST_IN_KEY) && is_job_scoped(o, l->key)) {
                r = add(out, l->number, SEVERITY_WARNING, "job-scoped", l->key,
                        "%s usually belongs to a job or partition, not to every container in "
                        "the cluster: set it per job (srun --container-env=%s)",
                        l->key, l->key);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int compare_findings(const void *a, const void *b) {
        const Finding *x = a, *y = b;
        if (x->line != y->line)
                return x->line < y->line ? -1 : 1;
        if (x->severity != y->severity)
                return x->severity < y->severity ? -1 : 1;
        return strcmp(x->id, y->id);
}

int lint_document(const Document *d, const LintOptions *opts, Lint **ret) {
        _cleanup_(lint_freep) Lint *l = NULL;
        int r;

        l = calloc(1, sizeof(Lint));
        if (!l)
                return -ENOMEM;

        if (d->nul_line) {
                r = add(l, d->nul_line, SEVERITY_ERROR, "nul-byte", NULL,
                        "the file holds NUL bytes, which enroot's reader silently drops: this "
                        "is not a text file");
                if (r < 0)
                        return r;
        }
        if (d->cr_line) {
                r = add(l, d->cr_line, SEVERITY_ERROR, "carriage-return", NULL,
                        "the line ends with a carriage return (a CRLF file): enroot keeps the "
                        "\\r as part of values; convert the file to LF line endings");
                if (r < 0)
                        return r;
        }
        if (d->syntax_line) {
                r = add(l, d->syntax_line, SEVERITY_ERROR, "syntax", NULL,
                        "bash -n rejects the file (%s): enroot refuses the whole file and every "
                        "enroot command fails with \"Invalid configuration file\"",
                        d->syntax_message);
                if (r < 0)
                        return r;
        }

        for (size_t i = 0; i < d->n_lines; i++) {
                const Line *line = &d->lines[i];
                r = d->type == DOC_CONF ? lint_conf_line(l, d, line)
                                        : lint_env_line(l, d, opts, line);
                if (r < 0)
                        return r;
        }

        if (l->n_findings > 0)
                qsort(l->findings, l->n_findings, sizeof(Finding), compare_findings);
        *ret = TAKE_PTR(l);
        return 0;
}

int lint_oversized(Lint **ret) {
        _cleanup_(lint_freep) Lint *l = NULL;
        int r;

        l = calloc(1, sizeof(Lint));
        if (!l)
                return -ENOMEM;
        r = add(l, 0, SEVERITY_ERROR, "too-large", NULL,
                "the file is larger than %u bytes (1 MiB, the most a ConfigMap can hold): it "
                "cannot come from the enroot ConfigMap and is not read",
                DOCUMENT_MAX_BYTES);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}
