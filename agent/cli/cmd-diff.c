/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aicr-enroot-agent diff [--format text|json] [--show-values] [--type conf|env|raw]
 *                        DESIRED RUNNING
 */
#include <fcntl.h>
#include <getopt.h>

#include "commands.h"
#include "fileio.h"
#include "log.h"
#include "file-format.h"
#include "print.h"

#define DIFF_MAX_OUTPUT_BYTES (64u * 1024u * 1024u)

static void help(void) {
        printf("Usage: aicr-enroot-agent diff [OPTIONS] DESIRED RUNNING\n\n"
               "Compares two enroot.conf or two environ.d .env files as enroot reads them:\n"
               "which keys were added, removed or changed, and whether each difference is\n"
               "effective (drift) or only cosmetic (comments, order, spacing, quoting).\n\n"
               "  --format text|json  output format (default text)\n"
               "  --show-values       print the values too (they may be secrets)\n"
               "  --type conf|env|raw file type (default: from the names); raw compares the\n"
               "                      bytes (SHA-256) and says only same or drift, as the\n"
               "                      agent does for --file KEY=PATH:raw\n"
               "  -h, --help          show this help\n\n"
               "Exit status: 0 same or cosmetic only, 1 drift, 2 could not run.\n");
}

static int read_bytes(const char *path, char **ret_data, size_t *ret_len) {
        int r;

        if (streq(path, "-"))
                r = read_stream_bounded(STDIN_FILENO, DOCUMENT_MAX_BYTES, ret_data, ret_len);
        else
                r = read_file_at(AT_FDCWD, path, 0, DOCUMENT_MAX_BYTES, ret_data, ret_len);
        if (r == -EFBIG)
                return log_error_errno(r,
                                       "Cannot read \"%s\": larger than %u bytes (1 MiB, the most "
                                       "a ConfigMap can hold).",
                                       path, DOCUMENT_MAX_BYTES);
        if (r < 0)
                return log_error_errno(r, "Cannot read \"%s\": %m", path);
        return 0;
}

/* --type raw: the bytes by SHA-256, as the agent judges a raw file. Only
 * same or drift: a raw file has no keys, so nothing is cosmetic. Values are
 * never shown; with --show-values the digests are (they are the user's own
 * files). */
static int diff_raw(const char *a, const char *b, PrintFormat format, bool show_values) {
        _cleanup_free_ char *da = NULL, *db = NULL;
        size_t la = 0, lb = 0;
        char sa[65], sb[65];
        bool same;

        if (read_bytes(a, &da, &la) < 0 || read_bytes(b, &db, &lb) < 0)
                return EXIT_TROUBLE;
        if (content_sha256_hex(da ? da : "", la, sa) < 0 ||
            content_sha256_hex(db ? db : "", lb, sb) < 0) {
                log_error("Cannot compute SHA-256 (libcrypto failed).");
                return EXIT_TROUBLE;
        }
        same = streq(sa, sb);
        if (format == PRINT_JSON) {
                int r = print_json(json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:s?, s:s?}",
                                             "desired", a, "running", b, "format", "raw", "verdict",
                                             same ? "same" : "drift", "desired_bytes",
                                             (json_int_t) la, "running_bytes", (json_int_t) lb,
                                             "desired_sha256", show_values ? sa : NULL,
                                             "running_sha256", show_values ? sb : NULL),
                                   stdout);
                if (r < 0) {
                        log_error_errno(r, "Cannot print the JSON report: %m");
                        return EXIT_TROUBLE;
                }
        } else {
                printf("%s -> %s: %s (raw: %zu and %zu bytes, compared by SHA-256)\n", a, b,
                       same ? "same" : "drift", la, lb);
                if (show_values)
                        printf("  desired sha256 %s\n  running sha256 %s\n", sa, sb);
        }
        return same ? EXIT_CLEAN : EXIT_FINDINGS;
}

static int load(const char *path, DocType type, Document **ret) {
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int r;

        r = read_bytes(path, &data, &len);
        if (r < 0)
                return r;
        r = document_parse(type, data, len, ret);
        if (r < 0)
                return log_error_errno(r, "Cannot parse \"%s\": %m", path);
        return 0;
}

int cmd_diff(int argc, char **argv) {
        static const struct option options[] = {
                {"format", required_argument, NULL, 'f'},
                {"show-values", no_argument, NULL, 'v'},
                {"type", required_argument, NULL, 't'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_(document_freep) Document *desired = NULL, *running = NULL;
        _cleanup_(diff_freep) Diff *d = NULL;
        PrintFormat format = PRINT_TEXT;
        DocType type = _DOC_TYPE_INVALID;
        bool show_values = false, raw = false;
        const char *a, *b;
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'f':
                        format = print_format_from_string(optarg);
                        if (format < 0) {
                                log_error("--format: \"%s\" is not text or json.", optarg);
                                return EXIT_TROUBLE;
                        }
                        break;
                case 'v':
                        show_values = true;
                        break;
                case 't':
                        raw = false;
                        if (file_format_from_string(optarg) >= 0) {
                                FileFormat f = file_format_from_string(optarg);

                                raw = f == FILE_FORMAT_RAW;
                                type = f == FILE_FORMAT_ENROOT_ENV ? DOC_ENV : DOC_CONF;
                                break;
                        }
                        type = doc_type_from_string(optarg);
                        if (type < 0) {
                                log_error("--type: \"%s\" is not conf or env, or raw (bytes "
                                          "only).",
                                          optarg);
                                return EXIT_TROUBLE;
                        }
                        break;
                case 'h':
                        help();
                        return EXIT_CLEAN;
                default:
                        log_error("Try \"aicr-enroot-agent diff --help\".");
                        return EXIT_TROUBLE;
                }
        }
        if (argc - optind != 2) {
                log_error("diff takes two files, DESIRED and RUNNING. Try \"aicr-enroot-agent "
                          "diff --help\".");
                return EXIT_TROUBLE;
        }
        a = argv[optind];
        b = argv[optind + 1];
        if (raw)
                return diff_raw(a, b, format, show_values);

        if (type < 0) {
                DocType ta = doc_type_from_name(a), tb = doc_type_from_name(b);
                type = ta >= 0 ? ta : tb;
                if (type < 0 || (tb >= 0 && tb != type)) {
                        log_error("Cannot tell the file type of \"%s\" and \"%s\" from their "
                                  "names: use --type conf or --type env, or --type raw to "
                                  "compare the bytes.",
                                  a, b);
                        return EXIT_TROUBLE;
                }
        }

        if (load(a, type, &desired) < 0 || load(b, type, &running) < 0)
                return EXIT_TROUBLE;

        r = diff_documents(desired, running, &d);
        if (r < 0) {
                log_error_errno(r, "Cannot compare \"%s\" with \"%s\": %m", a, b);
                return EXIT_TROUBLE;
        }

        if (format == PRINT_JSON) {
                /* the format as the agent's --file names it */
                FileFormat f = type == DOC_ENV ? FILE_FORMAT_ENROOT_ENV : FILE_FORMAT_ENROOT_CONF;
                json_t *o = print_diff_json(a, b, d, show_values);

                if (o &&
                    json_object_set_new(o, "format", json_string(file_format_to_string(f))) < 0)
                        o = (json_decref(o), NULL);
                r = print_json(o, stdout);
                if (r < 0) {
                        log_error_errno(r, "Cannot print the JSON report: %m");
                        return EXIT_TROUBLE;
                }
        } else {
                StrBuf out = STRBUF_INIT(DIFF_MAX_OUTPUT_BYTES);
                r = print_diff_text(&out, a, b, d, show_values);
                if (r < 0) {
                        strbuf_done(&out);
                        log_error_errno(r, "Cannot render the diff: %m");
                        return EXIT_TROUBLE;
                }
                fputs(strbuf_str(&out), stdout);
                strbuf_done(&out);
        }

        return d->verdict == DIFF_DRIFT ? EXIT_FINDINGS : EXIT_CLEAN;
}
