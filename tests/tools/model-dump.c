/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model-dump conf|env FILE: prints what the model says enroot ends up with,
 * one "KEY=VALUE" line per key in byte order of the key, for the differential
 * tests to compare with real bash, sed and awk.
 *   REFUSED           enroot.conf that enroot refuses (bash -n fails)
 *   KEY=<dynamic>     the value holds live shell or ${NAME}: only the key is known
 * Keys that enroot unsets (false values) are not printed.
 */
#include <fcntl.h>

#include "document.h"
#include "fileio.h"

/* Backslash and newline escaped, as the test's reference prints them. */
static void print_escaped(const char *v) {
        for (; *v; v++) {
                if (*v == '\\')
                        fputs("\\\\", stdout);
                else if (*v == '\n')
                        fputs("\\n", stdout);
                else
                        putchar(*v);
        }
        putchar('\n');
}

int main(int argc, char **argv) {
        _cleanup_(document_freep) Document *d = NULL;
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        DocType t;
        int r;

        if (argc != 3 || (t = doc_type_from_string(argv[1])) < 0) {
                fprintf(stderr, "usage: model-dump conf|env FILE\n");
                return 2;
        }
        r = read_file_at(AT_FDCWD, argv[2], 0, DOCUMENT_MAX_BYTES, &data, &len);
        if (r < 0) {
                fprintf(stderr, "model-dump: %s: %s\n", argv[2], strerror(-r));
                return 2;
        }
        r = document_parse(t, data, len, &d);
        if (r < 0) {
                fprintf(stderr, "model-dump: %s: %s\n", argv[2], strerror(-r));
                return 2;
        }
        if (document_is_refused(d)) {
                printf("REFUSED\n");
                return 0;
        }
        for (size_t i = 0; i < d->n_settings; i++) {
                const Setting *s = &d->settings[i];
                if (s->unset)
                        continue;
                if (s->dynamic)
                        printf("%s=<dynamic>\n", s->key);
                else {
                        printf("%s=", s->key);
                        print_escaped(s->value);
                }
        }
        return 0;
}
