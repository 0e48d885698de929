/* SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>
#include <stdio.h>

#include "strbuf.h"

static int strbuf_reserve(StrBuf *b, size_t extra) {
        size_t need, n;
        char *p;

        if (extra > b->max_len - b->len)
                return -ENOBUFS;
        need = b->len + extra + 1;
        if (need <= b->alloc)
                return 0;

        n = b->alloc ? b->alloc : 64;
        while (n < need)
                n = n > SIZE_MAX / 2 ? need : n * 2;
        if (n > b->max_len + 1)
                n = b->max_len + 1;

        p = realloc(b->data, n);
        if (!p)
                return -ENOMEM;
        b->data = p;
        b->alloc = n;
        return 0;
}

int strbuf_append(StrBuf *b, const char *data, size_t len) {
        int r = strbuf_reserve(b, len);
        if (r < 0)
                return r;
        if (len > 0)
                memcpy(b->data + b->len, data, len);
        b->len += len;
        b->data[b->len] = '\0';
        return 0;
}

int strbuf_puts(StrBuf *b, const char *s) {
        return strbuf_append(b, s, strlen(s));
}

int strbuf_putc(StrBuf *b, char c) {
        return strbuf_append(b, &c, 1);
}

int strbuf_vprintf(StrBuf *b, const char *fmt, va_list ap) {
        va_list aq;
        int n, r;

        va_copy(aq, ap);
        n = vsnprintf(NULL, 0, fmt, aq);
        va_end(aq);
        if (n < 0)
                return -EINVAL;

        r = strbuf_reserve(b, (size_t) n);
        if (r < 0)
                return r;
        (void) vsnprintf(b->data + b->len, (size_t) n + 1, fmt, ap);
        b->len += (size_t) n;
        return 0;
}

int strbuf_printf(StrBuf *b, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = strbuf_vprintf(b, fmt, ap);
        va_end(ap);
        return r;
}

void strbuf_reset(StrBuf *b) {
        b->len = 0;
        if (b->data)
                b->data[0] = '\0';
}

void strbuf_done(StrBuf *b) {
        free(b->data);
        b->data = NULL;
        b->len = b->alloc = 0;
}

char *strbuf_steal(StrBuf *b) {
        char *s = b->data ? b->data : strdup("");
        b->data = NULL;
        b->len = b->alloc = 0;
        return s;
}
