/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aicr-enroot-agent lint [--format text|json] [--strict] [--type conf|env]
 *                        (--type raw is refused: raw files have no rules)
 *                        [--job-scoped KEY[,KEY...]] [--configmap FILE|-] [FILE...]
 */
#include <fcntl.h>
#include <getopt.h>

#include "commands.h"
#include "configmap.h"
#include "fileio.h"
#include "log.h"
#include "file-format.h"
#include "print.h"

/* Rendered output is bounded: a 1 MiB file yields at most a few findings per line. */
#define LINT_MAX_OUTPUT_BYTES (64u * 1024u * 1024u)

typedef struct LintRun {
        PrintFormat format;
        bool strict;
        DocType type;      /* forced by --type, else _DOC_TYPE_INVALID */
        char **job_scoped; /* NULL-terminated, owned */
        size_t n_job_scoped;

        size_t n_errors, n_warnings;
        bool trouble;  /* something could not be read or parsed */
        json_t *files; /* JSON output collects here */
        StrBuf text;
} LintRun;

static void help(void) {
        printf("Usage: aicr-enroot-agent lint [OPTIONS] FILE...\n"
               "       aicr-enroot-agent lint [OPTIONS] --configmap FILE|-\n\n"
               "Reports what enroot would refuse, ignore or misread in enroot.conf and\n"
               "environ.d/*.env files, as FILE:LINE: error|warning[ID]: message.\n\n"
               "  --format text|json      output format (default text)\n"
               "  --strict                exit 1 on warnings too\n"
               "  --type conf|env         file type (default: from the name, *.env or *.conf);\n"
               "                          raw files (the agent's --file KEY=PATH:raw) have no\n"
               "                          rules, and --type raw is refused\n"
               "  --job-scoped KEY[,KEY]  more keys that belong to a job, not to every container\n"
               "  --configmap FILE|-      lint each data key of a ConfigMap in JSON\n"
               "                          (kubectl get configmap NAME -o json)\n"
               "  -h, --help              show this help\n\n"
               "Exit status: 0 no errors, 1 errors (or warnings with --strict), 2 could not "
               "run.\n");
}

static int add_job_scoped(LintRun *run, const char *list) {
        _cleanup_free_ char *copy = strdup(list);
        char *save = NULL;

        if (!copy)
                return log_oom();
        for (char *k = strtok_r(copy, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
                char **n;

                if (run->n_job_scoped >= LINT_MAX_EXTRA_JOB_KEYS)
                        return log_error_errno(-E2BIG, "--job-scoped: more than %u keys.",
                                               LINT_MAX_EXTRA_JOB_KEYS);
                n = reallocarray(run->job_scoped, run->n_job_scoped + 2, sizeof(char *));
                if (!n)
                        return log_oom();
                run->job_scoped = n;
                n[run->n_job_scoped] = strdup(k);
                if (!n[run->n_job_scoped])
                        return log_oom();
                n[++run->n_job_scoped] = NULL;
        }
        return 0;
}

/* Lints one file's bytes under a display name; type comes from --type or key_name. */
static int lint_one(LintRun *run, const char *display, const char *key_name, const char *data,
                    size_t len, bool oversized) {
        _cleanup_(document_freep) Document *doc = NULL;
        _cleanup_(lint_freep) Lint *l = NULL;
        LintOptions opts = {.job_scoped_extra = (const char *const *) run->job_scoped};
        DocType t = run->type >= 0 ? run->type : doc_type_from_name(key_name);
        int r;

        if (t < 0) {
                run->trouble = true;
                return log_error_errno(-EINVAL,
                                       "Cannot tell whether \"%s\" is an enroot.conf or an .env "
                                       "file from its name: use --type conf or --type env (a file "
                                       "enroot does not read is raw to the agent, with nothing "
                                       "to lint).",
                                       display);
        }

        if (oversized)
                r = lint_oversized(&l);
        else {
                r = document_parse(t, data, len, &doc);
                if (r == -EFBIG)
                        r = lint_oversized(&l);
                else if (r >= 0)
                        r = lint_document(doc, &opts, &l);
        }
        if (r < 0) {
                run->trouble = true;
                return log_error_errno(r, "Cannot lint \"%s\": %m", display);
        }

        run->n_errors += l->n_errors;
        run->n_warnings += l->n_warnings;
        if (run->format == PRINT_JSON) {
                /* the format as the agent's --file names it */
                FileFormat f = t == DOC_ENV ? FILE_FORMAT_ENROOT_ENV : FILE_FORMAT_ENROOT_CONF;
                json_t *o = print_lint_json(display, doc_type_to_string(t), l);

                if (!o ||
                    json_object_set_new(o, "format", json_string(file_format_to_string(f))) < 0 ||
                    json_array_append_new(run->files, o) < 0)
                        return log_oom();
                return 0;
        }
        r = print_lint_text(&run->text, display, l);
        if (r < 0)
                return log_error_errno(r, "Cannot render the findings for \"%s\": %m", display);
        return 0;
}

static int read_input(const char *path, size_t max, char **ret_data, size_t *ret_len) {
        if (streq(path, "-"))
                return read_stream_bounded(STDIN_FILENO, max, ret_data, ret_len);
        return read_file_at(AT_FDCWD, path, 0, max, ret_data, ret_len);
}

static int lint_path(LintRun *run, const char *path) {
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int r;

        r = read_input(path, DOCUMENT_MAX_BYTES, &data, &len);
        if (r == -EFBIG)
                return lint_one(run, path, path, NULL, 0, true);
        if (r < 0) {
                run->trouble = true;
                return log_error_errno(r, "Cannot read \"%s\": %m", path);
        }
        return lint_one(run, path, path, data, len, false);
}

static int lint_configmap(LintRun *run, const char *path) {
        _cleanup_(configmap_set_freep) ConfigMapSet *set = NULL;
        _cleanup_free_ char *data = NULL, *error = NULL;
        size_t len = 0;
        int r;

        r = read_input(path, CONFIGMAP_MAX_JSON_BYTES, &data, &len);
        if (r < 0) {
                run->trouble = true;
                if (r == -EFBIG)
                        return log_error_errno(r, "Cannot read \"%s\": larger than %u bytes.", path,
                                               CONFIGMAP_MAX_JSON_BYTES);
                return log_error_errno(r, "Cannot read \"%s\": %m", path);
        }
        r = configmap_parse(data, len, &set, &error);
        if (r < 0) {
                run->trouble = true;
                return log_error_errno(r, "\"%s\" is not a usable ConfigMap: %s", path,
                                       error ? error : strerror(-r));
        }
        if (set->n_binary > 0)
                log_warning("\"%s\": %zu binaryData key(s) skipped: enroot files are text.", path,
                            set->n_binary);

        for (size_t i = 0; i < set->n_entries; i++) {
                const ConfigMapEntry *e = &set->entries[i];
                _cleanup_free_ char *display = NULL;

                if (asprintf(&display, "%s%s%s", e->configmap, *e->configmap ? "/" : "", e->key) <
                    0)
                        return log_oom();
                if (run->type < 0 && doc_type_from_name(e->key) < 0) {
                        log_warning("Skipping \"%s\": neither *.conf nor *.env (use --type to "
                                    "lint it anyway).",
                                    display);
                        continue;
                }
                (void) lint_one(run, display, e->key, e->value, e->len,
                                e->len > DOCUMENT_MAX_BYTES);
        }
        return 0;
}

static void lint_run_done(LintRun *run) {
        json_decref(run->files);
        strbuf_done(&run->text);
        for (size_t i = 0; i < run->n_job_scoped; i++)
                free(run->job_scoped[i]);
        free(run->job_scoped);
}

int cmd_lint(int argc, char **argv) {
        static const struct option options[] = {
                {"format", required_argument, NULL, 'f'},
                {"strict", no_argument, NULL, 's'},
                {"type", required_argument, NULL, 't'},
                {"job-scoped", required_argument, NULL, 'j'},
                {"configmap", required_argument, NULL, 'c'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_(lint_run_done) LintRun run = {
                .type = _DOC_TYPE_INVALID,
                .text = STRBUF_INIT(LINT_MAX_OUTPUT_BYTES),
        };
        const char *configmap = NULL;
        int c;

        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'f':
                        run.format = print_format_from_string(optarg);
                        if (run.format < 0) {
                                log_error("--format: \"%s\" is not text or json.", optarg);
                                return EXIT_TROUBLE;
                        }
                        break;
                case 's':
                        run.strict = true;
                        break;
                case 't':
                        if (streq(optarg, "raw") || streq(optarg, "enroot-conf") ||
                            streq(optarg, "enroot-env")) {
                                FileFormat f = file_format_from_string(optarg);

                                if (f == FILE_FORMAT_RAW) {
                                        /* Pretending would be worse: enroot's rules say
                                         * nothing about a file enroot never reads. */
                                        log_error("--type raw: lint has rules only for enroot.conf "
                                                  "and environ.d .env files; a raw file is "
                                                  "compared byte for byte and never linted (\"diff "
                                                  "--type raw\" compares two of them).");
                                        return EXIT_TROUBLE;
                                }
                                run.type = f == FILE_FORMAT_ENROOT_ENV ? DOC_ENV : DOC_CONF;
                                break;
                        }
                        run.type = doc_type_from_string(optarg);
                        if (run.type < 0) {
                                log_error("--type: \"%s\" is not conf or env.", optarg);
                                return EXIT_TROUBLE;
                        }
                        break;
                case 'j':
                        if (add_job_scoped(&run, optarg) < 0)
                                return EXIT_TROUBLE;
                        break;
                case 'c':
                        configmap = optarg;
                        break;
                case 'h':
                        help();
                        return EXIT_CLEAN;
                default:
                        log_error("Try \"aicr-enroot-agent lint --help\".");
                        return EXIT_TROUBLE;
                }
        }
        if (!configmap && optind >= argc) {
                log_error("lint: no file given. Try \"aicr-enroot-agent lint --help\".");
                return EXIT_TROUBLE;
        }

        run.files = json_array();
        if (!run.files) {
                (void) log_oom();
                return EXIT_TROUBLE;
        }

        if (configmap)
                (void) lint_configmap(&run, configmap);
        for (int i = optind; i < argc; i++)
                (void) lint_path(&run, argv[i]);

        if (run.format == PRINT_JSON) {
                int r = print_json(json_pack("{s:O, s:I, s:I}", "files", run.files, "errors",
                                             (json_int_t) run.n_errors, "warnings",
                                             (json_int_t) run.n_warnings),
                                   stdout);
                if (r < 0) {
                        log_error_errno(r, "Cannot print the JSON report: %m");
                        return EXIT_TROUBLE;
                }
        } else
                fputs(strbuf_str(&run.text), stdout);

        if (run.trouble)
                return EXIT_TROUBLE;
        if (run.n_errors > 0 || (run.strict && run.n_warnings > 0))
                return EXIT_FINDINGS;
        return EXIT_CLEAN;
}
