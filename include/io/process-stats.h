/* SPDX-License-Identifier: Apache-2.0 */
/*
 * This process's statistics for the process_* metrics, read from
 * /proc/self and the kernel's accounting. The renderer (metrics.h) takes them
 * as a plain ProcessStats and does no I/O itself.
 */
#pragma once

#include "metrics.h"

/* Reads this process's statistics: CPU time from getrusage(), memory from
 * /proc/self/statm, the descriptors from /proc/self/fd, the limits from
 * getrlimit(), the start time from /proc/self/stat (once: it never changes).
 * Fills *ret only when every field was read. Never logs. Keeps two
 * descriptors open (close-on-exec) for the next call; open_fds leaves them
 * out.
 * Returns 0, or -errno from the reads, -EBADMSG when a /proc file does not
 * parse. */
int process_stats_read(ProcessStats *ret);
