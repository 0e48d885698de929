/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The /status JSON document, rendered from the manager's
 * Report and the agent's counters. Like metrics.h, it borrows everything it
 * is given and never sees a configuration value; strings that come from file
 * contents are made safe with metrics_safe_string() (METRICS_MAX_LABEL_BYTES
 * for keys and names, METRICS_MAX_BYTES for paths and details).
 */
#pragma once

#include "metrics.h"
#include "state.h"
#include "strbuf.h"

/* Appends the /status JSON document (one object, newline-terminated):
 *   {"pod", "evaluated", "evaluated_at", "desired_version",
 *    "observable": {"desired", "running"},
 *    "agent": {"version", "watch_mode", "evaluations": {TRIGGER: n}},
 *    "kube": {"condition_synced", "stopped", "last_success",
 *             "requests": [{"verb", "code", "count"}]},       (only when kept)
 *    "files": [{"key", "running_path", "state", "since", "detail",
 *               "superseded", "mount_version",
 *               "version": {"desired", "running"},  (the ConfigMap version
 *                                                    directory; null: not read, unknown)
 *               "content_id": {"desired", "running"}, (keyed, per process;
 *                                                    null for a side not read)
 *               "lint": {"desired": {"errors", "warnings"}, "running": ...},
 *               "drift_since", "drifted_keys",
 *               "changes": [{"key", "change", "effective"}],
 *               "changes_omitted"}]}
 * Times are RFC 3339 UTC strings, or null. r may be NULL (nothing evaluated
 * yet: rendered like an empty, unevaluated Report); c may be NULL (no "agent"
 * or "kube" member).
 * Returns 0, -ENOBUFS (out's cap crossed), -ENOMEM. */
int status_json_render(StrBuf *out, const Report *r, const MetricsCounters *c);
