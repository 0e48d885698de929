/* SPDX-License-Identifier: Apache-2.0 */
/*
 * UTF-8 validation for text from outside (label values, server
 * messages quoted in logs).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 character at s (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF), at most left bytes, or 0 when the
 * bytes are not one. */
static inline size_t utf8_char_len(const unsigned char *s, size_t left) {
        size_t len;
        uint32_t cp;

        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xC2 && s[0] <= 0xDF) {
                len = 2;
                cp = s[0] & 0x1Fu;
        } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
                len = 3;
                cp = s[0] & 0x0Fu;
        } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
                len = 4;
                cp = s[0] & 0x07u;
        } else
                return 0;
        if (left < len)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xC0u) != 0x80u)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3Fu);
        }
        if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)))
                return 0;
        if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))
                return 0;
        return len;
}
