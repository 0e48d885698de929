/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "log.h"

static int max_level = LOG_INFO;
static bool to_journal = false;

void log_setup(void) {
        /* systemd sets JOURNAL_STREAM=<dev>:<ino> for the stream it connected;
         * compare with fd 2 so a redirected stderr is not mistaken for it. */
        const char *e = getenv("JOURNAL_STREAM");
        struct stat st;
        unsigned long long dev, ino;

        to_journal = false;
        if (e && sscanf(e, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0)
                to_journal = (unsigned long long) st.st_dev == dev &&
                             (unsigned long long) st.st_ino == ino;
}

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) {
        int saved = errno;
        va_list ap;

        if (error < 0)
                error = -error;

        if (level <= max_level) {
                char msg[2048];

                /* %m in the format must print the error we were given. */
                errno = error;
                va_start(ap, fmt);
                (void) vsnprintf(msg, sizeof msg, fmt, ap);
                va_end(ap);
                /* Messages quote paths, keys and answers from outside: a
                 * line break would forge a log line, an escape sequence
                 * would drive the reader's terminal. */
                for (char *p = msg; *p; p++)
                        if ((unsigned char) *p < 0x20 || *p == 0x7f)
                                *p = '?';

                if (to_journal)
                        (void) fprintf(stderr, "<%d>%s\n", level, msg);
                else if (max_level >= LOG_DEBUG)
                        (void) fprintf(stderr, "aicr-enroot-agent: %s:%d: %s\n", file, line, msg);
                else
                        (void) fprintf(stderr, "aicr-enroot-agent: %s\n", msg);
        }

        errno = saved;
        return -error;
}
