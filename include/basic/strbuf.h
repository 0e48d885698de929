/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A growable text buffer with a hard cap. Once an append would
 * cross the cap, the buffer refuses it with -ENOBUFS and keeps what it had,
 * so a caller can always render a bounded, well-formed prefix.
 * The buffer owns its memory; strbuf_steal() hands it over.
 */
#pragma once

#include <stdarg.h>
#include <stddef.h>

#include "macro.h"

typedef struct StrBuf {
        char *data;     /* always NUL-terminated once anything was appended */
        size_t len;     /* bytes used, without the terminating NUL */
        size_t alloc;   /* bytes allocated */
        size_t max_len; /* hard cap on len */
} StrBuf;

#define STRBUF_INIT(max) ((StrBuf){.max_len = (max)})

/* Appends len bytes. Returns 0, -ENOBUFS past the cap, -ENOMEM. */
int strbuf_append(StrBuf *b, const char *data, size_t len);
int strbuf_puts(StrBuf *b, const char *s);
int strbuf_putc(StrBuf *b, char c);
int strbuf_printf(StrBuf *b, const char *fmt, ...) _printf_(2, 3);
int strbuf_vprintf(StrBuf *b, const char *fmt, va_list ap) _printf_(2, 0);

/* Forgets the contents but keeps the allocation. */
void strbuf_reset(StrBuf *b);
/* Frees the contents; the buffer can be reused. */
void strbuf_done(StrBuf *b);
/* Returns the contents (a new string, "" when empty) and empties the buffer; NULL on -ENOMEM. */
char *strbuf_steal(StrBuf *b);

static inline const char *strbuf_str(const StrBuf *b) {
        return b->data ? b->data : "";
}
