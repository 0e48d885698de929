/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The readiness rule, what /readyz (and so --check, which
 * asks it) answers from the manager's Report, with one line saying why.
 */
#pragma once

#include <stdbool.h>

#include "state.h"
#include "strbuf.h"

/* Longest readiness reason line (without the newline). */
#define READINESS_MAX_REASON_BYTES 512u

/* Ready when the first evaluation is done and both sides are observable;
 * with require_current, also only when the pod is current. Appends one line
 * to reason (at most READINESS_MAX_REASON_BYTES, no newline; a line cut
 * there ends in ", ..."), e.g. "ready: pod current",
 * "ready: pod drifted: enroot.conf drifted (2 keys)",
 * "not ready: the first evaluation has not completed yet". r may be NULL. */
bool readiness_is_ready(const Report *r, bool require_current, StrBuf *reason);
