/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logging to stderr. When stderr is the journal (JOURNAL_STREAM
 * names our stderr), each line carries a "<N>" syslog level prefix so
 * journald keeps the severity; otherwise lines read "aicr-enroot-agent: ...".
 * Logging never changes errno.
 */
#pragma once

#include <stdbool.h>
#include <syslog.h>

#include "macro.h"

/* Decide once whether stderr is the journal; call again after dup2() on fd 2. */
void log_setup(void);
void log_set_max_level(int level);
int log_get_max_level(void);

/* Logs and returns -abs(error), so callers can write "return log_error_errno(r, ...)".
 * When error != 0 and the format has no "%m", nothing is appended: say it yourself. */
int log_internal(int level, int error, const char *file, int line, const char *fmt, ...)
        _printf_(5, 6);

#define log_full_errno(level, error, ...) \
        log_internal((level), (error), __FILE__, __LINE__, __VA_ARGS__)

#define log_debug(...)            log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...)             log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...)           log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...)          log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...)            log_full_errno(LOG_ERR, 0, __VA_ARGS__)

#define log_debug_errno(e, ...)   log_full_errno(LOG_DEBUG, (e), __VA_ARGS__)
#define log_info_errno(e, ...)    log_full_errno(LOG_INFO, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...)   log_full_errno(LOG_ERR, (e), __VA_ARGS__)

#define log_oom()                 log_error_errno(-ENOMEM, "Out of memory.")
