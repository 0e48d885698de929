/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test tool: runs the shell module on its input so that a script can compare
 * it with bash.
 *
 *   shell-probe check FILE...   one line per FILE: "ok", or "error LINE MESSAGE"
 *   shell-probe eval            one line per stdin line: "FLAGS OUTPUT", FLAGS
 *                               in hex, OUTPUT hex-encoded ("-" when live)
 *   shell-probe eval VALUE...   the same for each argument
 *
 * Exits 0 when it could answer every question, 1 otherwise.
 */
#include <stdio.h>

#include "macro.h"
#include "shell.h"

/* enroot.conf files are small; the probe reads at most this much. */
#define PROBE_MAX_FILE_BYTES (4u * 1024u * 1024u)

static int probe_check(const char *path) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *data = NULL;
        const char *message = NULL;
        unsigned line = 0;
        size_t n;

        f = fopen(path, "re");
        if (!f) {
                fprintf(stderr, "shell-probe: cannot open \"%s\": %m\n", path);
                return -errno;
        }
        data = malloc(PROBE_MAX_FILE_BYTES);
        if (!data)
                return -ENOMEM;
        n = fread(data, 1, PROBE_MAX_FILE_BYTES, f);
        if (ferror(f)) {
                fprintf(stderr, "shell-probe: cannot read \"%s\"\n", path);
                return -EIO;
        }

        if (shell_check_syntax(data, n, &line, &message) < 0)
                printf("error %u %s\n", line, message);
        else
                printf("ok\n");
        return 0;
}

static int probe_eval(const char *value) {
        _cleanup_free_ char *out = NULL;
        unsigned flags = 0;
        int r;

        r = shell_eval_echo(value, &out, &flags);
        if (r < 0)
                return r;

        printf("%x ", flags);
        if (!out)
                printf("-");
        for (const char *p = out; p && *p; p++)
                printf("%02x", (unsigned char) *p);
        printf("\n");
        return 0;
}

int main(int argc, char *argv[]) {
        int ret = 0;

        if (argc >= 3 && streq(argv[1], "check")) {
                for (int i = 2; i < argc; i++)
                        if (probe_check(argv[i]) < 0)
                                ret = 1;
                return ret;
        }

        if (argc >= 2 && streq(argv[1], "eval")) {
                _cleanup_free_ char *line = NULL;
                size_t size = 0;
                ssize_t n;

                for (int i = 2; i < argc; i++)
                        if (probe_eval(argv[i]) < 0)
                                ret = 1;
                if (argc > 2)
                        return ret;

                while ((n = getline(&line, &size, stdin)) >= 0) {
                        if (n > 0 && line[n - 1] == '\n')
                                line[n - 1] = '\0';
                        if (probe_eval(line) < 0)
                                ret = 1;
                }
                return ret;
        }

        fprintf(stderr, "usage: shell-probe check FILE... | shell-probe eval [VALUE...]\n");
        return 1;
}
