/* SPDX-License-Identifier: Apache-2.0 */
/* Skips that show. cmocka's skip() marks a test skipped, but the program
 * still exits 0 and automake counts a pass. Here every skip prints one line,
 *   SKIP: <program>/<ID>: <reason>
 * the form the integration tests print too and tests/tools/skip-report.sh
 * reads from the logs (scripts/test.sh fails a CI cell on an ID that
 * tests/skips.allowed does not list), and main returns unit_skip_status(),
 * which is 77, automake's SKIP, when nothing failed and something was skipped.
 * ID names the check, not the machine: [a-z0-9.-], the same wherever it runs.
 * Include after <cmocka.h>; one test program is one translation unit. */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

static unsigned unit_skips;

/* Prints the SKIP line for ID and counts it; the test goes on. */
__attribute__((format(printf, 2, 3))) static inline void skip_part(const char *id, const char *fmt,
                                                                   ...) {
        va_list ap;

        fprintf(stderr, "SKIP: %s/%s: ", program_invocation_short_name, id);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        unit_skips++;
}

/* The rest of this cmocka test cannot run here: the SKIP line, then skip(). */
#define skip_test(id, ...)                    \
        do {                                  \
                skip_part((id), __VA_ARGS__); \
                skip();                       \
        } while (0)

/* What main returns, given cmocka_run_group_tests()'s count of failures. */
static inline int unit_skip_status(int failed) {
        if (failed != 0)
                return failed;
        if (unit_skips > 0) {
                fprintf(stderr, "%s: %u skip(s): exit 77\n", program_invocation_short_name,
                        unit_skips);
                return 77;
        }
        return 0;
}
