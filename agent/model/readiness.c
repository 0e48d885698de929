/* SPDX-License-Identifier: Apache-2.0 */
#include "readiness.h"

/* A ConfigMap key in a one-line message: no control characters. */
static void put_key(StrBuf *b, const char *key) {
        for (const char *p = key ? key : ""; *p; p++)
                (void) strbuf_putc(b, (unsigned char) *p < 0x20 || *p == 0x7f ? '?' : *p);
}

bool readiness_is_ready(const Report *r, bool require_current, StrBuf *reason) {
        StrBuf line = STRBUF_INIT(READINESS_MAX_REASON_BYTES);
        StrBuf item = STRBUF_INIT(READINESS_MAX_REASON_BYTES);
        const char *sep = ": ";
        PodState pod;
        bool ready;

        if (!r || !r->evaluated) {
                (void) strbuf_puts(reason, "not ready: the first evaluation has not completed yet");
                return false;
        }
        if (!r->observable[SIDE_DESIRED] || !r->observable[SIDE_RUNNING]) {
                /* The files' detail says why (the manager copies the reason
                 * into every file it could not judge). */
                const char *why = r->n_files > 0 ? r->files[0].detail : NULL;

                if (strbuf_printf(&line, "not ready: the %s cannot be observed%s%s",
                                  !r->observable[SIDE_DESIRED]
                                          ? "desired side (the ConfigMap directory)"
                                          : "running side (the workload's files)",
                                  why ? ": " : "", strempty(why)) < 0)
                        (void) strbuf_puts(&line, "not ready: a side cannot be observed");
                (void) strbuf_append(reason, line.data, line.len);
                strbuf_done(&line);
                return false;
        }

        pod = report_pod_state(r);
        ready = !require_current || pod == POD_CURRENT;
        (void) strbuf_printf(&line, "%s: pod %s%s", ready ? "ready" : "not ready",
                             pod_state_to_string(pod),
                             ready ? "" : " and --require-current is set");
        for (size_t i = 0; i < r->n_files; i++) {
                const FileReport *f = &r->files[i];

                if (f->state == FILE_CURRENT || f->state == FILE_COSMETIC)
                        continue;
                strbuf_reset(&item);
                (void) strbuf_puts(&item, sep);
                put_key(&item, f->key);
                (void) strbuf_printf(&item, " %s", file_state_to_string(f->state) ?: "unknown");
                if (f->state == FILE_DRIFTED && f->format == FILE_FORMAT_RAW)
                        (void) strbuf_puts(&item, " (raw: the bytes differ)");
                else if (f->state == FILE_DRIFTED)
                        (void) strbuf_printf(&item, " (%zu %s)", f->n_drifted_keys,
                                             f->n_drifted_keys == 1 ? "key" : "keys");
                /* keep room for ", ..." so a cut line still says it was cut */
                if (line.len + item.len + 5 > READINESS_MAX_REASON_BYTES) {
                        (void) strbuf_puts(&line, ", ...");
                        break;
                }
                (void) strbuf_append(&line, strbuf_str(&item), item.len);
                sep = ", ";
        }
        (void) strbuf_append(reason, strbuf_str(&line), line.len);
        strbuf_done(&line);
        strbuf_done(&item);
        return ready;
}
