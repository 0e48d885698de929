/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: what the HTTP side reads from outside. The first byte
 * picks the parser, the rest is its input:
 *   0  --listen [ADDR]:PORT: a parse that succeeds must format and parse back
 *      to the same address;
 *   1  the --check client's judgement of a daemon's answer: always one
 *      printable line, ready only for status 200;
 *   2  a setting name as a metric label and in /status: the exposition stays
 *      one sample per line, valid UTF-8, and the status document is JSON.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "check.h"
#include "httpd.h"
#include "metrics.h"
#include "status-json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *cstring(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);

        if (!s)
                abort();
        memcpy(s, data, size);
        s[size] = '\0';
        return s;
}

static void fuzz_listen(const char *s) {
        char buf[HTTPD_LISTEN_STRLEN], buf2[HTTPD_LISTEN_STRLEN];
        _cleanup_free_ char *error = NULL;
        HttpdListen l, l2;
        int r;

        r = httpd_parse_listen(s, &l, &error);
        if (r < 0) {
                if (r != -EINVAL || !error || !startswith(error, "--listen: "))
                        abort();
                return;
        }
        httpd_listen_format(&l, buf);
        if (httpd_parse_listen(buf, &l2, NULL) < 0)
                abort();
        httpd_listen_format(&l2, buf2);
        if (!streq(buf, buf2) || l.port != l2.port || l.any != l2.any || l.family != l2.family)
                abort();
}

static void fuzz_answer(const uint8_t *data, size_t size) {
        _cleanup_free_ char *line = NULL;
        bool ready;

        if (check_parse_answer((const char *) data, size, "127.0.0.1:9100", &ready, &line) < 0)
                return;
        for (const char *p = line; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        abort();
        if (ready && !(size >= 12 && memcmp(data + 8, " 200", 4) == 0))
                abort();
}

/* An independent UTF-8 check (RFC 3629), byte by byte. */
static bool utf8_valid(const char *str) {
        const unsigned char *s = (const unsigned char *) str;

        while (*s) {
                size_t n;
                uint32_t cp;

                if (*s < 0x80) {
                        s++;
                        continue;
                }
                if ((*s & 0xE0) == 0xC0)
                        n = 1, cp = *s & 0x1F;
                else if ((*s & 0xF0) == 0xE0)
                        n = 2, cp = *s & 0x0F;
                else if ((*s & 0xF8) == 0xF0)
                        n = 3, cp = *s & 0x07;
                else
                        return false;
                for (size_t i = 1; i <= n; i++) {
                        if ((s[i] & 0xC0) != 0x80)
                                return false;
                        cp = (cp << 6) | (s[i] & 0x3F);
                }
                if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
                    cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                        return false;
                s += n + 1;
        }
        return true;
}

static void fuzz_label(char *key) {
        StrBuf b = STRBUF_INIT(METRICS_MAX_BYTES);
        KeyChange change = {.key = key, .change = CHANGE_CHANGED, .effective = true};
        FileReport file = {.key = key,
                           .running_path = key,
                           .state = FILE_DRIFTED,
                           .changes = &change,
                           .n_changes = 1,
                           .n_drifted_keys = 1,
                           .drift_since_usec = 1};
        Report r = {.files = &file, .n_files = 1, .evaluated = true};
        json_t *j;

        if (metrics_render(&b, &r, NULL) < 0) {
                strbuf_done(&b);
                return;
        }
        /* every line is a comment or one sample: an unescaped newline in a
         * label would start a line with a quote or a key fragment */
        for (const char *p = strbuf_str(&b); *p; p = strchr(p, '\n') + 1) {
                if (!startswith(p, "# ") && !startswith(p, "aicr_enroot_"))
                        abort();
                if (!strchr(p, '\n'))
                        abort();
        }
        if (!utf8_valid(strbuf_str(&b)))
                abort();
        strbuf_reset(&b);
        if (status_json_render(&b, &r, NULL) >= 0) {
                j = json_loads(strbuf_str(&b), 0, NULL);
                if (!j)
                        abort();
                json_decref(j);
        }
        strbuf_done(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = NULL;

        if (size < 1 || size > 65536)
                return 0;
        s = cstring(data + 1, size - 1);
        switch (data[0] % 3) {
        case 0:
                fuzz_listen(s);
                break;
        case 1:
                fuzz_answer(data + 1, size - 1);
                break;
        default:
                fuzz_label(s);
        }
        return 0;
}
