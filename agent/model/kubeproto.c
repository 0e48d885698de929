/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kubeproto.h"
#include "macro.h"
#include "string-table.h"
#include "utf8.h"

static const char *const kube_verb_table[_KUBE_VERB_MAX] = {
        [KUBE_VERB_GET] = "get",       [KUBE_VERB_WATCH] = "watch", [KUBE_VERB_PATCH] = "patch",
        [KUBE_VERB_CREATE] = "create", [KUBE_VERB_LIST] = "list",   [KUBE_VERB_DELETE] = "delete",
};

DEFINE_STRING_TABLE_TO_STRING(kube_verb, KubeVerb);

static const char *const kube_event_type_table[_KUBE_EVENT_TYPE_MAX] = {
        [KUBE_EVENT_ADDED] = "ADDED",     [KUBE_EVENT_MODIFIED] = "MODIFIED",
        [KUBE_EVENT_DELETED] = "DELETED", [KUBE_EVENT_BOOKMARK] = "BOOKMARK",
        [KUBE_EVENT_ERROR] = "ERROR",
};

DEFINE_STRING_TABLE_TO_STRING(kube_event_type, KubeEventType);
DEFINE_PRIVATE_STRING_TABLE_FROM_STRING(kube_event_type, KubeEventType, _KUBE_EVENT_TYPE_INVALID);

static int fail(const char **ret_error, const char *why) {
        if (ret_error)
                *ret_error = why;
        return -EBADMSG;
}

/* A UID or resourceVersion: short, printable ASCII, no spaces. */
static bool id_is_valid(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > KUBE_MAX_ID_BYTES)
                return false;
        for (const char *p = s; *p; p++)
                if (*p <= ' ' || *p > '~')
                        return false;
        return true;
}

void kube_pod_done(KubePod *p) {
        free(p->uid);
        free(p->resource_version);
        json_decref(p->conditions);
        json_decref(p->object);
        *p = (KubePod){};
}

int kube_pod_from_json(json_t *pod, KubePod *ret, const char **ret_error) {
        _cleanup_free_ char *uid = NULL, *rv = NULL;
        const json_t *meta, *status, *conditions, *v;
        json_t *list;

        if (!json_is_object(pod))
                return fail(ret_error, "the pod is not a JSON object");
        meta = json_object_get(pod, "metadata");
        if (!json_is_object(meta))
                return fail(ret_error, "the pod has no metadata");
        v = json_object_get(meta, "uid");
        if (!json_is_string(v) || !id_is_valid(json_string_value(v)))
                return fail(ret_error, "the pod has no valid metadata.uid");
        uid = strdup(json_string_value(v));
        if (!uid)
                return -ENOMEM;
        v = json_object_get(meta, "resourceVersion");
        if (v) {
                if (!json_is_string(v) || !id_is_valid(json_string_value(v)))
                        return fail(ret_error, "the pod's metadata.resourceVersion is not valid");
                rv = strdup(json_string_value(v));
                if (!rv)
                        return -ENOMEM;
        }

        status = json_object_get(pod, "status");
        if (status && !json_is_object(status) && !json_is_null(status))
                return fail(ret_error, "the pod's status is not an object");
        conditions = json_is_object(status) ? json_object_get(status, "conditions") : NULL;
        if (conditions && !json_is_array(conditions) && !json_is_null(conditions))
                return fail(ret_error, "the pod's status.conditions is not a list");
        /* A deep copy: the pod object may be large, and only this is kept
         * (the caller drops .object once it has looked at it). */
        list = json_is_array(conditions) ? json_deep_copy(conditions) : json_array();
        if (!list)
                return -ENOMEM;

        *ret = (KubePod){.uid = TAKE_PTR(uid),
                         .resource_version = TAKE_PTR(rv),
                         .conditions = list,
                         .object = json_incref(pod)};
        return 0;
}

static json_t *parse_json(const char *data, size_t len, const char **ret_error) {
        json_error_t error;
        json_t *o;

        if (len > KUBE_MAX_OBJECT_BYTES) {
                if (ret_error)
                        *ret_error = "the response is too large";
                return NULL;
        }
        o = json_loadb(data, len, JSON_REJECT_DUPLICATES, &error);
        if (!o && ret_error)
                *ret_error = "the response is not valid JSON";
        return o;
}

int kube_pod_parse(const char *data, size_t len, KubePod *ret, const char **ret_error) {
        json_t *o = parse_json(data, len, ret_error);
        int r;

        if (!o)
                return -EBADMSG;
        r = kube_pod_from_json(o, ret, ret_error);
        json_decref(o);
        return r;
}

void kube_watch_event_done(KubeWatchEvent *e) {
        json_decref(e->object);
        *e = (KubeWatchEvent){.type = _KUBE_EVENT_TYPE_INVALID};
}

int kube_watch_event_parse(const char *line, size_t len, KubeWatchEvent *ret,
                           const char **ret_error) {
        json_t *o = parse_json(line, len, ret_error), *type, *object;
        KubeEventType t;

        if (!o)
                return -EBADMSG;
        type = json_object_get(o, "type");
        object = json_object_get(o, "object");
        t = json_is_string(type) ? kube_event_type_from_string(json_string_value(type))
                                 : _KUBE_EVENT_TYPE_INVALID;
        if (!json_is_object(o) || t < 0 || !json_is_object(object)) {
                json_decref(o);
                return fail(ret_error, t < 0 ? "the watch event has no known type"
                                             : "the watch event has no object");
        }
        json_incref(object);
        json_decref(o);
        *ret = (KubeWatchEvent){.type = t, .object = object};
        return 0;
}

void kube_quote(const char *s, size_t len, char *buf, size_t size) {
        const unsigned char *p = (const unsigned char *) s;
        size_t o = 0, i = 0, cut = 0; /* cut: a character boundary with room for "..." */

        if (size == 0)
                return;
        while (i < len) {
                size_t n = utf8_char_len(p + i, len - i);
                bool replace = n == 0 || (n == 1 && (p[i] < ' ' || p[i] == 0x7f));
                size_t out = replace ? 1 : n;

                if (o + out > size - 1) {
                        if (size >= 4) {
                                memcpy(buf + cut, "...", 3);
                                o = cut + 3;
                        }
                        break;
                }
                if (replace)
                        buf[o] = '?';
                else
                        memcpy(buf + o, p + i, n);
                o += out;
                i += replace ? 1 : n;
                if (size >= 4 && o <= size - 4)
                        cut = o;
        }
        buf[o] = '\0';
}

void kube_status_from_json(const json_t *o, KubeStatus *ret) {
        const json_t *code = json_object_get(o, "code"), *reason = json_object_get(o, "reason"),
                     *message = json_object_get(o, "message");
        KubeStatus s = {};

        if (json_is_integer(code) && json_integer_value(code) >= 0 &&
            json_integer_value(code) < 1000)
                s.code = (long) json_integer_value(code);
        if (json_is_string(reason))
                kube_quote(json_string_value(reason), json_string_length(reason), s.reason,
                           sizeof s.reason);
        if (json_is_string(message))
                kube_quote(json_string_value(message), json_string_length(message), s.message,
                           sizeof s.message);
        *ret = s;
}

void kube_status_parse(const char *data, size_t len, KubeStatus *ret) {
        static const char prefix[] = "not a Kubernetes Status: ";
        json_t *o = data && len > 0 ? parse_json(data, len, NULL) : NULL;
        char start[KUBE_MAX_QUOTE_BYTES];
        size_t n = 0;

        kube_status_from_json(o, ret);
        if (o || !data || len == 0) {
                json_decref(o);
                return;
        }
        /* Not JSON: a proxy or load balancer in front of the API server
         * answered (an HTML error page). Its start, on one line, says more
         * than "no message"; whitespace runs become one space. */
        for (size_t i = 0; i < len && n < sizeof start - sizeof prefix; i++) {
                bool space =
                        data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t';

                if (space && (n == 0 || start[n - 1] == ' '))
                        continue;
                start[n++] = space ? ' ' : data[i];
        }
        while (n > 0 && start[n - 1] == ' ')
                n--;
        memcpy(ret->message, prefix, sizeof prefix - 1);
        kube_quote(start, n, ret->message + sizeof prefix - 1,
                   sizeof ret->message - (sizeof prefix - 1));
}

bool kube_status_is_uid_conflict(const KubeStatus *s) {
        /* The API server answers a failed metadata.uid precondition with 409
         * Conflict and "Precondition failed: UID in precondition: A, UID in
         * object meta: B" (apimachinery's Preconditions.Check). */
        return strstr(s->message, "Precondition failed") && strstr(s->message, "UID");
}

int kube_parse_retry_after(const char *value, uint64_t *ret_usec) {
        uint64_t seconds = 0;
        const char *p = value;

        while (*p == ' ' || *p == '\t')
                p++;
        if (*p < '0' || *p > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++)
                if (seconds < KUBE_MAX_RETRY_AFTER_USEC / 1000000u)
                        seconds = seconds * 10 + (uint64_t) (*p - '0');
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
                p++;
        if (*p)
                return -EINVAL;
        *ret_usec = seconds >= KUBE_MAX_RETRY_AFTER_USEC / 1000000u ? KUBE_MAX_RETRY_AFTER_USEC
                                                                    : seconds * 1000000u;
        return 0;
}

uint64_t kube_backoff_usec(unsigned attempt, uint64_t base_usec, uint64_t cap_usec,
                           uint64_t random) {
        uint64_t d = base_usec;

        for (unsigned i = 0; i < attempt && d < cap_usec; i++)
                d *= 2;
        if (d > cap_usec)
                d = cap_usec;
        return d / 2 + random % (d / 2 + 1);
}

int kube_url_escape(const char *s, char *buf, size_t size) {
        static const char hex[] = "0123456789ABCDEF";
        size_t o = 0;

        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                             (*p >= '0' && *p <= '9') || strchr("-._~", *p);

                if (o + (plain ? 1 : 3) >= size)
                        return -ENOBUFS;
                if (plain)
                        buf[o++] = (char) *p;
                else {
                        buf[o++] = '%';
                        buf[o++] = hex[*p >> 4];
                        buf[o++] = hex[*p & 15];
                }
        }
        if (o >= size)
                return -ENOBUFS;
        buf[o] = '\0';
        return 0;
}
