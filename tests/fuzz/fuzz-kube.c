/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: what the API server sends, on arbitrary bytes. The input
 * is read as a watch stream (one event per line) and, whole, as a GET or
 * PATCH answer and as an error Status; what parses then goes through the
 * condition code that reads pod conditions. Invariants: a pod always has a
 * usable UID and a conditions list; a Status's texts are bounded and free of
 * control bytes; Retry-After never exceeds its cap.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "condition.h"
#include "kubeproto.h"
#include "workload.h"

/* The workload containers of a pod and the record in its condition: never
 * more containers than the bound, a record that reads back the same, a
 * verdict in range. */
static void check_workload(const json_t *pod) {
        static const char *const paths[] = {"/etc/enroot/enroot.conf"};
        static const WorkloadConfig cfg = {
                .agent_container = "aicr-enroot-agent", .paths = paths, .n_paths = 1};
        const json_t *c =
                condition_find(json_object_get(json_object_get(pod, "status"), "conditions"),
                               "EnrootConfigCurrent");
        WorkloadRecord rec = {}, again = {};
        Workload *w = NULL;
        char *text = NULL, *detail = NULL;
        int v;

        if (workload_record_parse(json_string_value(json_object_get(c, "message")), &rec) < 0)
                return;
        if (workload_from_pod(pod, &cfg, &w) == 0) {
                if (w->n_containers > WORKLOAD_MAX_CONTAINERS || (w->problem && w->n_containers))
                        abort();
                if (workload_resolve(w, NULL, &rec, "..2026_01_01_00_00_00.1", 1000000u) == 0 &&
                    workload_record_format(w, &text) == 0 && *text) {
                        if (workload_record_parse(text, &again) == 0 && again.n_entries == 0)
                                abort(); /* what an agent writes, an agent reads */
                        workload_record_done(&again);
                }
                v = workload_check(w, "..2026_01_01_00_00_00.1", "..2026_01_01_00_00_00.1",
                                   &detail);
                if (v >= _WORKLOAD_VERDICT_MAX || (v == WORKLOAD_UNVERIFIABLE && v >= 0 && !detail))
                        abort();
                free(detail);
                free(text);
                workload_free(w);
        }
        workload_record_done(&rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const char *s, size_t max) {
        size_t n = strlen(s);

        if (n >= max)
                abort();
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] < ' ' || s[i] == 0x7f)
                        abort();
}

static void check_status(const KubeStatus *s) {
        if (s->code < 0 || s->code >= 1000)
                abort();
        check_text(s->reason, sizeof s->reason);
        check_text(s->message, sizeof s->message);
}

static void check_pod(const KubePod *pod) {
        static char type[] = "EnrootConfigCurrent", message[] = "enroot.conf current.";
        const Condition want = {
                .type = type,
                .status = CONDITION_TRUE,
                .reason = "ConfigCurrent",
                .message = message,
        };
        json_t *patch;

        if (!pod->uid || !pod->uid[0] || strlen(pod->uid) > KUBE_MAX_ID_BYTES ||
            !json_is_array(pod->conditions))
                abort();
        (void) condition_matches(pod->conditions, &want);
        patch = condition_patch(&want, pod->uid, pod->conditions, 0);
        if (!patch)
                return; /* only out of memory */
        json_decref(patch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *text = (const char *) data, *end = text + size;
        KubeStatus status;
        KubePod pod = {};
        char header[64];
        uint64_t usec;

        /* The whole input as one answer. */
        if (kube_pod_parse(text, size, &pod, NULL) == 0) {
                check_pod(&pod);
                kube_pod_done(&pod);
        }
        kube_status_parse(text, size, &status);
        check_status(&status);

        /* The first bytes as a Retry-After header value. */
        memcpy(header, text, size < sizeof header - 1 ? size : sizeof header - 1);
        header[size < sizeof header - 1 ? size : sizeof header - 1] = '\0';
        if (kube_parse_retry_after(header, &usec) == 0 && usec > KUBE_MAX_RETRY_AFTER_USEC)
                abort();

        /* As a watch stream. */
        for (const char *line = text; line < end;) {
                const char *nl = memchr(line, '\n', (size_t) (end - line));
                size_t len = nl ? (size_t) (nl - line) : (size_t) (end - line);
                KubeWatchEvent ev = {};

                if (kube_watch_event_parse(line, len, &ev, NULL) == 0) {
                        if (!json_is_object(ev.object) || !kube_event_type_to_string(ev.type))
                                abort();
                        if (ev.type == KUBE_EVENT_ERROR) {
                                kube_status_from_json(ev.object, &status);
                                check_status(&status);
                        } else if (kube_pod_from_json(ev.object, &pod, NULL) == 0) {
                                check_pod(&pod);
                                check_workload(ev.object);
                                kube_pod_done(&pod);
                        }
                        kube_watch_event_done(&ev);
                }
                line += len + 1;
        }
        return 0;
}
