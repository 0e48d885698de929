/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Slurm's bracket hostlists: "a-[01-03,7],b" into a-01 a-02 a-03 a-7 b,
 * bounded by slurm.h's limits.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "macro.h"
#include "slurm-parse.h"
#include "slurm.h"

char **slurm_names_free(char **names) {
        if (!names)
                return NULL;
        for (char **p = names; *p; p++)
                free(*p);
        free(names);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, slurm_names_free);

typedef struct Names {
        char **v;
        size_t n, alloc;
} Names;

static int names_add(Names *names, const char *s, size_t len) {
        char *d;
        int r;

        if (names->n >= SLURM_MAX_NODES || len > SLURM_MAX_NAME_BYTES)
                return -ENOBUFS;
        r = slurm_grow((void **) &names->v, &names->alloc, names->n + 2, sizeof(char *));
        if (r < 0)
                return r;
        d = strndup(s, len);
        if (!d)
                return -ENOMEM;
        names->v[names->n++] = d;
        names->v[names->n] = NULL;
        return 0;
}

/* One range of a bracket, "7" or "01-03". */
typedef struct Range {
        uint64_t lo, hi;
        int width; /* zero-padded to this many digits */
} Range;

/* Expands item[pos..len) (text and brackets, no top-level comma) after the
 * prefix already in buf. */
static int expand_item(const char *item, size_t len, size_t pos, char *buf, size_t buf_len,
                       Names *names) {
        const char *open, *close;
        size_t text;

        open = memchr(item + pos, '[', len - pos);
        text = (open ? (size_t) (open - item) : len) - pos;
        if (buf_len + text > SLURM_MAX_NAME_BYTES)
                return -ENOBUFS;
        if (memchr(item + pos, ']', text))
                return -EBADMSG;
        memcpy(buf + buf_len, item + pos, text);
        buf_len += text;
        if (!open)
                return buf_len == 0 ? -EBADMSG : names_add(names, buf, buf_len);

        close = memchr(open, ']', (size_t) (item + len - open));
        if (!close || close == open + 1 || memchr(open + 1, '[', (size_t) (close - open - 1)))
                return -EBADMSG;

        for (const char *p = open + 1; p < close;) {
                const char *comma = memchr(p, ',', (size_t) (close - p));
                const char *end = comma ? comma : close;
                const char *dash = memchr(p, '-', (size_t) (end - p));
                Range rg = {};
                int r;

                r = slurm_parse_number(p, (size_t) ((dash ? dash : end) - p), &rg.lo);
                if (r < 0)
                        return r;
                rg.hi = rg.lo;
                if (dash) {
                        r = slurm_parse_number(dash + 1, (size_t) (end - dash - 1), &rg.hi);
                        if (r < 0)
                                return r;
                }
                if (rg.hi < rg.lo)
                        return -EBADMSG;
                if (rg.hi - rg.lo >= SLURM_MAX_NODES)
                        return -ENOBUFS;
                /* Slurm pads to the width of the lower bound as written. */
                rg.width = (int) ((dash ? dash : end) - p);

                for (uint64_t v = rg.lo; v <= rg.hi; v++) {
                        char digits[SLURM_MAX_DIGITS + 2];
                        int n = snprintf(digits, sizeof(digits), "%0*" PRIu64, rg.width, v);

                        if (n < 0 || (size_t) n >= sizeof(digits))
                                return -EBADMSG;
                        if (buf_len + (size_t) n > SLURM_MAX_NAME_BYTES)
                                return -ENOBUFS;
                        memcpy(buf + buf_len, digits, (size_t) n);
                        r = expand_item(item, len, (size_t) (close - item) + 1, buf,
                                        buf_len + (size_t) n, names);
                        if (r < 0)
                                return r;
                }
                p = comma ? comma + 1 : close;
                if (comma && p == close)
                        return -EBADMSG;
        }
        return 0;
}

int slurm_hostlist_expand(const char *hostlist, char ***ret_names, size_t *ret_n) {
        _cleanup_(slurm_names_freep) char **v = NULL;
        Names names = {};
        char buf[SLURM_MAX_NAME_BYTES + 1];
        int r = 0;

        for (const char *p = hostlist; *p && r >= 0;) {
                /* A top-level comma ends an item; commas inside brackets do not. */
                const char *end = p;
                int depth = 0;

                for (; *end; end++) {
                        if (*end == '[')
                                depth++;
                        else if (*end == ']')
                                depth--;
                        else if (*end == ',' && depth == 0)
                                break;
                        if (depth < 0 || depth > 1) {
                                r = -EBADMSG;
                                break;
                        }
                }
                if (r < 0)
                        break;
                if (depth != 0 || end == p || (unsigned char) *p <= ' ')
                        r = -EBADMSG;
                else
                        r = expand_item(p, (size_t) (end - p), 0, buf, 0, &names);
                p = *end ? end + 1 : end;
                if (r >= 0 && end[0] == ',' && !end[1])
                        r = -EBADMSG;
        }
        v = names.v;
        if (r < 0)
                return r;
        for (size_t i = 0; i < names.n; i++)
                if (!slurm_name_is_valid(v[i], strlen(v[i])))
                        return -EBADMSG;
        if (!v) {
                v = calloc(1, sizeof(char *));
                if (!v)
                        return -ENOMEM;
        }
        *ret_names = TAKE_PTR(v);
        *ret_n = names.n;
        return 0;
}
