/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one way to read a clock, in microseconds. CLOCK_MONOTONIC for
 * delays and deadlines, CLOCK_REALTIME for what is shown or written (times in
 * logs, metrics, conditions).
 */
#pragma once

#include <stdint.h>
#include <time.h>

static inline uint64_t now_usec(clockid_t clock) {
        struct timespec ts;

        (void) clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}
