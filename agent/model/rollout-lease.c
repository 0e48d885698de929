/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rollout-lease.h"
#include "string-table.h"

static const char *const lease_owner_table[_LEASE_OWNER_MAX] = {
        [LEASE_FREE] = "free",
        [LEASE_OURS] = "ours",
        [LEASE_HELD] = "held",
        [LEASE_EXPIRED] = "expired",
};

DEFINE_STRING_TABLE_TO_STRING(lease_owner, LeaseOwner);

void rollout_lease_done(RolloutLease *l) {
        free(l->holder);
        free(l->renew_time);
        free(l->acquire_time);
        free(l->resource_version);
        json_decref(l->record);
        *l = (RolloutLease){};
}

static const char *str(const json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

/* A MicroTime or Time, "2026-12-02T18:05:12[.ffffff]Z": microseconds since
 * the epoch (digits past the sixth are dropped). */
static bool parse_time(const char *s, int64_t *ret) {
        struct tm tm = {};
        const char *end;
        int64_t frac = 0, scale = 100000;

        if (!s)
                return false;
        end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!end)
                return false;
        if (*end == '.') {
                end++;
                if (*end < '0' || *end > '9')
                        return false;
                for (; *end >= '0' && *end <= '9'; end++, scale /= 10)
                        frac += scale > 0 ? (*end - '0') * scale : 0;
        }
        if (!streq(end, "Z"))
                return false;
        *ret = (int64_t) timegm(&tm) * 1000000 + frac;
        return true;
}

/* A step as the record holds it: its name, and the fields it needs. */
static bool step_valid(const json_t *s) {
        const char *name = str(s, "step");

        if (!json_is_object(s) || !name)
                return false;
        if (streq(name, "drain") || streq(name, "resume"))
                return str(s, "node");
        if (streq(name, "delete"))
                return str(s, "pod") && str(s, "uid") && str(s, "role");
        if (streq(name, "ready"))
                return str(s, "pod") && str(s, "uid");
        if (streq(name, "verify"))
                return str(s, "node") && str(s, "result");
        if (streq(name, "notify")) {
                const json_t *g = json_object_get(s, "grace_seconds"),
                             *pods = json_object_get(s, "pods"), *p;
                int64_t t;
                size_t i;

                if (!parse_time(str(s, "time"), &t) || !json_is_integer(g) ||
                    json_integer_value(g) < 0 || json_integer_value(g) > ROLLOUT_NOTICE_MAX_SEC ||
                    !json_is_array(pods))
                        return false;
                json_array_foreach(pods, i, p) {
                        if (!json_is_string(p))
                                return false;
                }
                return true;
        }
        return false;
}

static int record_check(const json_t *record, const char **ret_error) {
        const json_t *steps = json_object_get(record, "steps"), *s;
        const char *id = str(record, "id"), *state = str(record, "state");
        size_t i;

        if (!id || !*id)
                return *ret_error = "the record has no id", -EBADMSG;
        if (!state || !(streq(state, "running") || streq(state, "done") || streq(state, "aborted")))
                return *ret_error = "the record's state is not running, done or aborted", -EBADMSG;
        if (!json_is_array(steps))
                return *ret_error = "the record has no steps", -EBADMSG;
        if (json_array_size(steps) > ROLLOUT_LEASE_MAX_STEPS)
                return *ret_error = "the record has too many steps", -EBADMSG;
        json_array_foreach(steps, i, s) {
                if (!step_valid(s))
                        return *ret_error = "a step of the record lacks its fields", -EBADMSG;
        }
        return 0;
}

int rollout_lease_parse(const json_t *lease, RolloutLease *ret, const char **ret_error) {
        _cleanup_(rollout_lease_done) RolloutLease l = {};
        const json_t *meta = json_object_get(lease, "metadata"),
                     *spec = json_object_get(lease, "spec"), *dur;
        const char *holder = str(spec, "holderIdentity"), *rv = str(meta, "resourceVersion"),
                   *text = str(json_object_get(meta, "annotations"), ROLLOUT_LEASE_ANNOTATION),
                   *dummy;
        int k;

        if (!ret_error)
                ret_error = &dummy;
        if (!json_is_object(lease) || !json_is_object(meta) || !rv)
                return *ret_error = "not a Lease with a resourceVersion", -EBADMSG;
        if (holder && (strlen(holder) > ROLLOUT_LEASE_MAX_HOLDER))
                return *ret_error = "the holder identity is too long", -EBADMSG;
        l.resource_version = strdup(rv);
        if (!l.resource_version)
                return -ENOMEM;
        if (holder && *holder && !(l.holder = strdup(holder)))
                return -ENOMEM;
        dur = json_object_get(spec, "leaseDurationSeconds");
        if (dur && (!json_is_integer(dur) || json_integer_value(dur) < 0))
                return *ret_error = "leaseDurationSeconds is not a number of seconds", -EBADMSG;
        l.duration_sec = dur ? (int64_t) json_integer_value(dur) : 0;
        if (str(spec, "renewTime") && !(l.renew_time = strdup(str(spec, "renewTime"))))
                return -ENOMEM;
        if (str(spec, "acquireTime") && !(l.acquire_time = strdup(str(spec, "acquireTime"))))
                return -ENOMEM;
        if (!parse_time(l.renew_time, &l.renew_usec) && !parse_time(l.acquire_time, &l.renew_usec))
                l.renew_usec = 0;
        if (text) {
                json_error_t err;

                if (strlen(text) > ROLLOUT_LEASE_MAX_BYTES)
                        return *ret_error = "the record is too large", -EBADMSG;
                l.record = json_loads(text, JSON_REJECT_DUPLICATES, &err);
                if (!json_is_object(l.record))
                        return *ret_error = "the record is not a JSON object", -EBADMSG;
                k = record_check(l.record, ret_error);
                if (k < 0)
                        return k;
        }
        *ret = l;
        l = (RolloutLease){};
        return 0;
}

LeaseOwner rollout_lease_owner(const RolloutLease *l, const char *me, int64_t now_usec) {
        if (!l->holder)
                return LEASE_FREE;
        if (me && streq(l->holder, me))
                return LEASE_OURS;
        /* Without a duration or a renewal time it never expires: a holder
         * that wrote neither is not judged dead (client-go's leaderelection
         * reads them the same way). */
        if (l->duration_sec > 0 && l->renew_usec > 0 &&
            now_usec > l->renew_usec + l->duration_sec * 1000000)
                return LEASE_EXPIRED;
        return LEASE_HELD;
}

void rollout_microtime_format(uint64_t realtime_usec, char buf[static ROLLOUT_MICROTIME_BYTES]) {
        time_t t = (time_t) (realtime_usec / 1000000u);
        struct tm tm;

        if (!gmtime_r(&t, &tm) || strftime(buf, 20, "%Y-%m-%dT%H:%M:%S", &tm) != 19) {
                snprintf(buf, ROLLOUT_MICROTIME_BYTES, "1970-01-01T00:00:00.000000Z");
                return;
        }
        snprintf(buf + 19, ROLLOUT_MICROTIME_BYTES - 19, ".%06uZ",
                 (unsigned) (realtime_usec % 1000000u));
}

json_t *rollout_lease_object(const char *namespace, const char *holder, int64_t duration_sec,
                             const char *acquire_time, uint64_t now_usec,
                             const char *resource_version, const json_t *record) {
        _cleanup_free_ char *text = record ? json_dumps(record, JSON_COMPACT) : NULL;
        char now[ROLLOUT_MICROTIME_BYTES];
        json_t *o;

        if (record && !text)
                return NULL;
        rollout_microtime_format(now_usec, now);
        o = json_pack("{s:s, s:s, s:{s:s, s:s, s:s?, s:{s:s?}}, s:{s:s?, s:I, s:s, s:s}}",
                      "apiVersion", "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name",
                      ROLLOUT_LEASE_NAME, "namespace", namespace, "resourceVersion",
                      resource_version, "annotations", ROLLOUT_LEASE_ANNOTATION, text, "spec",
                      "holderIdentity", holder, "leaseDurationSeconds", (json_int_t) duration_sec,
                      "acquireTime", acquire_time ? acquire_time : now, "renewTime", now);
        return o;
}

json_t *rollout_record_new(const char *id) {
        return json_pack("{s:s, s:s, s:[]}", "id", id, "state", "running", "steps");
}

const char *rollout_record_id(const json_t *record) {
        return str(record, "id");
}

const char *rollout_record_state(const json_t *record) {
        return str(record, "state");
}

bool rollout_record_running(const json_t *record) {
        const char *s = rollout_record_state(record);
        return streq_ptr(s, "running");
}

int rollout_record_add(json_t *record, json_t *step) {
        json_t *steps = json_object_get(record, "steps");
        _cleanup_free_ char *text = NULL;

        if (!step || !json_is_array(steps)) {
                json_decref(step);
                return -ENOMEM;
        }
        if (json_array_size(steps) >= ROLLOUT_LEASE_MAX_STEPS) {
                json_decref(step);
                return -E2BIG;
        }
        if (json_array_append_new(steps, step) < 0)
                return -ENOMEM;
        text = json_dumps(record, JSON_COMPACT);
        if (!text || strlen(text) > ROLLOUT_LEASE_MAX_BYTES) {
                (void) json_array_remove(steps, json_array_size(steps) - 1);
                return text ? -E2BIG : -ENOMEM;
        }
        return 0;
}

int rollout_record_set_state(json_t *record, const char *state) {
        return json_object_set_new(record, "state", json_string(state)) < 0 ? -ENOMEM : 0;
}

bool rollout_record_has(const json_t *record, const char *step, const char *key, const char *value,
                        const char *uid) {
        const json_t *s;
        size_t i;

        json_array_foreach(json_object_get(record, "steps"), i, s) {
                const char *v = str(s, key), *u = str(s, "uid");

                if (streq_ptr(str(s, "step"), step) && v && streq(v, value) &&
                    (!uid || (u && streq(u, uid))))
                        return true;
        }
        return false;
}

bool rollout_record_notice(const json_t *record, int64_t *ret_time_usec,
                           int64_t *ret_deadline_usec) {
        int64_t first = 0, deadline = 0;
        bool found = false;
        const json_t *s;
        size_t i;

        json_array_foreach(json_object_get(record, "steps"), i, s) {
                int64_t t, end;

                if (!streq_ptr(str(s, "step"), "notify") || !parse_time(str(s, "time"), &t))
                        continue;
                end = t + json_integer_value(json_object_get(s, "grace_seconds")) * 1000000;
                first = found && first < t ? first : t;
                deadline = found && deadline > end ? deadline : end;
                found = true;
        }
        if (found && ret_time_usec)
                *ret_time_usec = first;
        if (found && ret_deadline_usec)
                *ret_deadline_usec = deadline;
        return found;
}

bool rollout_record_noticed(const json_t *record, const char *pod) {
        const json_t *s, *p;
        size_t i, j;

        json_array_foreach(json_object_get(record, "steps"), i, s) {
                if (!streq_ptr(str(s, "step"), "notify"))
                        continue;
                json_array_foreach(json_object_get(s, "pods"), j, p) {
                        if (streq_ptr(json_string_value(p), pod))
                                return true;
                }
        }
        return false;
}

json_t *rollout_record_pending(const json_t *record) {
        json_t *pending = json_array();
        const json_t *s;
        size_t i;

        if (!pending)
                return NULL;
        json_array_foreach(json_object_get(record, "steps"), i, s) {
                if (!streq_ptr(str(s, "step"), "delete") ||
                    rollout_record_has(record, "ready", "pod", str(s, "pod"), str(s, "uid")))
                        continue;
                if (json_array_append_new(pending, json_deep_copy(s)) < 0) {
                        json_decref(pending);
                        return NULL;
                }
        }
        return pending;
}
