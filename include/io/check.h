/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `aicr-enroot-agent --check`, the exec readiness probe: a small blocking
 * client of our own /readyz. One connection, one fixed request, the status
 * line and the first body line read back, all within one deadline and a
 * fixed buffer. No libcurl and no event loop: it links into the front door,
 * which uses libc alone (docs/DESIGN.md §8).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most of the daemon's answer read: status line, headers, first body line. */
#define CHECK_MAX_RESPONSE_BYTES   4096u
/* Used when the caller passes a timeout of 0. */
#define CHECK_DEFAULT_TIMEOUT_USEC (1000u * 1000u)

/* Asks the daemon listening at listen (as --listen gives it: ":9100" and
 * "0.0.0.0:9100" are asked at 127.0.0.1, "[::]:9100" at ::1) for /readyz,
 * with "?require=current" when require_current.
 * On success *ret_ready says whether the daemon answered 200, and *ret_line is
 * a new single line (no newline) for the user: the daemon's reason, or why
 * there was no usable answer, e.g.
 * "not ready: cannot connect to 127.0.0.1:9100: Connection refused".
 * Returns 0 (a verdict was reached, ready or not) or -ENOMEM. Never logs. */
int check_query(const char *listen, bool require_current, uint64_t timeout_usec, bool *ret_ready,
                char **ret_line);

/* Judges a daemon's answer to the /readyz request, as check_query() does:
 * ready only for HTTP status 200; the line is the first body line with
 * control characters replaced by '?', or says what was wrong ("not ready: WHERE
 * did not answer with HTTP", "... answered /readyz with HTTP status 404").
 * Only the first CHECK_MAX_RESPONSE_BYTES of data are looked at; data may hold
 * any bytes. where names the daemon in messages (borrowed).
 * Returns 0 with *ret_ready and a new *ret_line, or -ENOMEM. Pure. */
int check_parse_answer(const char *data, size_t len, const char *where, bool *ret_ready,
                       char **ret_line);

/* check_query(), then prints the line on stdout. Returns the process exit
 * status: 0 ready, 1 not ready (or any failure, an invalid listen included). */
int check_run(const char *listen, bool require_current, uint64_t timeout_usec);
