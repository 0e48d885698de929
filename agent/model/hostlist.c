/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Slurm's bracket hostlists: "a-[01-03,7],b" names a-01 a-02 a-03 a-7 b,
 * bounded by slurm.h's limits.
 *
 * A hostlist is kept as it was printed, cut into items (top-level commas),
 * each item into segments: literal text, then one bracket group of ranges
 * (none in an item's last segment). Counting multiplies the groups' sizes;
 * membership walks the segments with the set of positions in the name that
 * the segments so far can reach (at most SLURM_MAX_NAME_BYTES + 1 of them),
 * so adjacent groups such as "[1-99][1-99]" cannot make it backtrack.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "macro.h"
#include "slurm-parse.h"
#include "slurm.h"

/* One range of a bracket, "7" or "01-03". */
typedef struct Range {
        uint64_t lo, hi;
        unsigned width; /* zero-padded to this many digits: the lower bound as written */
} Range;

/* Literal text, then a bracket group of n_ranges ranges (none: no group). */
typedef struct Segment {
        size_t text_off, text_len; /* in SlurmHostlist.text */
        size_t first_range, n_ranges;
        unsigned max_digits; /* the longest number the group prints */
} Segment;

typedef struct Item {
        size_t first_seg, n_segs; /* the last segment has no group */
} Item;

struct SlurmHostlist {
        char *text;
        Item *items;
        Segment *segs;
        Range *ranges;
        size_t n_items, n_segs, n_ranges;
        size_t alloc_items, alloc_segs, alloc_ranges;
        size_t count;
};

SlurmHostlist *slurm_hostlist_free(SlurmHostlist *h) {
        if (!h)
                return NULL;
        free(h->text);
        free(h->items);
        free(h->segs);
        free(h->ranges);
        free(h);
        return NULL;
}

char **slurm_names_free(char **names) {
        if (!names)
                return NULL;
        for (char **p = names; *p; p++)
                free(*p);
        free(names);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, slurm_names_free);

size_t slurm_hostlist_count(const SlurmHostlist *h) {
        return h ? h->count : 0;
}

static unsigned digits_of(uint64_t v) {
        unsigned n = 1;

        while (v >= 10) {
                v /= 10;
                n++;
        }
        return n;
}

/* Adds the ranges of "[...]" (open..close, brackets excluded) to h and to seg.
 * Returns the number of values the group gives in *ret_values. */
static int parse_group(SlurmHostlist *h, const char *open, const char *close, Segment *seg,
                       uint64_t *ret_values) {
        uint64_t values = 0;
        int r;

        if (close == open + 1 || memchr(open + 1, '[', (size_t) (close - open - 1)))
                return -EBADMSG;
        seg->first_range = h->n_ranges;
        for (const char *p = open + 1; p < close;) {
                const char *comma = memchr(p, ',', (size_t) (close - p));
                const char *end = comma ? comma : close;
                const char *dash = memchr(p, '-', (size_t) (end - p));
                Range rg = {};
                unsigned longest;

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
                rg.width = (unsigned) ((dash ? dash : end) - p);
                longest = digits_of(rg.hi) > rg.width ? digits_of(rg.hi) : rg.width;
                if (longest > seg->max_digits)
                        seg->max_digits = longest;
                values += rg.hi - rg.lo + 1;
                if (values > SLURM_MAX_NODES)
                        return -ENOBUFS;

                r = slurm_grow((void **) &h->ranges, &h->alloc_ranges, h->n_ranges + 1,
                               sizeof(Range));
                if (r < 0)
                        return r;
                h->ranges[h->n_ranges++] = rg;
                seg->n_ranges++;

                p = comma ? comma + 1 : close;
                if (comma && p == close)
                        return -EBADMSG;
        }
        *ret_values = values;
        return 0;
}

/* Cuts text[start..end) (no top-level comma) into segments and counts the
 * names it gives, before expanding anything. */
static int parse_item(SlurmHostlist *h, size_t start, size_t end, uint64_t *ret_count) {
        const char *t = h->text;
        Item item = {.first_seg = h->n_segs};
        uint64_t count = 1;
        size_t name_max = 0;
        int r;

        for (size_t pos = start;;) {
                const char *open = memchr(t + pos, '[', end - pos);
                size_t text_end = open ? (size_t) (open - t) : end;
                Segment seg = {.text_off = pos, .text_len = text_end - pos};

                /* Digits are valid in a name; the text must be too. */
                for (size_t i = pos; i < text_end; i++)
                        if ((unsigned char) t[i] <= ' ' || t[i] == 0x7f || t[i] == ']')
                                return -EBADMSG;
                name_max += seg.text_len;
                if (name_max > SLURM_MAX_NAME_BYTES)
                        return -ENOBUFS;

                if (open) {
                        const char *close = memchr(open, ']', (size_t) (t + end - open));
                        uint64_t values;

                        if (!close)
                                return -EBADMSG;
                        r = parse_group(h, open, close, &seg, &values);
                        if (r < 0)
                                return r;
                        name_max += seg.max_digits;
                        if (name_max > SLURM_MAX_NAME_BYTES)
                                return -ENOBUFS;
                        /* Counted before expanding: the product of the groups' sizes. */
                        if (count > SLURM_MAX_NODES / values)
                                return -ENOBUFS;
                        count *= values;
                        pos = (size_t) (close - t) + 1;
                }

                r = slurm_grow((void **) &h->segs, &h->alloc_segs, h->n_segs + 1, sizeof(Segment));
                if (r < 0)
                        return r;
                h->segs[h->n_segs++] = seg;
                item.n_segs++;
                if (!open)
                        break;
        }
        if (name_max == 0)
                return -EBADMSG;

        r = slurm_grow((void **) &h->items, &h->alloc_items, h->n_items + 1, sizeof(Item));
        if (r < 0)
                return r;
        h->items[h->n_items++] = item;
        *ret_count = count;
        return 0;
}

int slurm_hostlist_parse(const char *hostlist, SlurmHostlist **ret) {
        _cleanup_(slurm_hostlist_freep) SlurmHostlist *h = NULL;
        const char *t;
        int r;

        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->text = strdup(hostlist);
        if (!h->text)
                return -ENOMEM;
        t = h->text;

        for (const char *p = t; *p;) {
                /* A top-level comma ends an item; commas inside brackets do not. */
                const char *end = p;
                uint64_t count;
                int depth = 0;

                for (; *end; end++) {
                        if (*end == '[')
                                depth++;
                        else if (*end == ']')
                                depth--;
                        else if (*end == ',' && depth == 0)
                                break;
                        if (depth < 0 || depth > 1)
                                return -EBADMSG;
                }
                if (depth != 0 || end == p)
                        return -EBADMSG;
                r = parse_item(h, (size_t) (p - t), (size_t) (end - t), &count);
                if (r < 0)
                        return r;
                if (count > SLURM_MAX_NODES - h->count)
                        return -ENOBUFS;
                h->count += (size_t) count;
                if (end[0] == ',' && !end[1])
                        return -EBADMSG;
                p = *end ? end + 1 : end;
        }
        *ret = TAKE_PTR(h);
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Membership */

/* Positions 0..SLURM_MAX_NAME_BYTES in a name, as bits. */
#define POS_WORDS ((SLURM_MAX_NAME_BYTES + 1 + 63) / 64)
typedef struct Positions {
        uint64_t w[POS_WORDS];
} Positions;

static void pos_set(Positions *s, size_t p) {
        s->w[p / 64] |= UINT64_C(1) << (p % 64);
}

static bool pos_empty(const Positions *s) {
        for (size_t i = 0; i < POS_WORDS; i++)
                if (s->w[i])
                        return false;
        return true;
}

/* Whether len digits print as one of the group's numbers. */
static bool group_has(const SlurmHostlist *h, const Segment *seg, const char *digits, size_t len) {
        uint64_t v;

        if (slurm_parse_number(digits, len, &v) < 0)
                return false;
        for (size_t i = 0; i < seg->n_ranges; i++) {
                const Range *rg = &h->ranges[seg->first_range + i];
                unsigned printed = digits_of(v) > rg->width ? digits_of(v) : rg->width;

                if (v >= rg->lo && v <= rg->hi && printed == len)
                        return true;
        }
        return false;
}

static bool item_contains(const SlurmHostlist *h, const Item *item, const char *name, size_t len) {
        Positions at = {};

        pos_set(&at, 0);
        for (size_t s = 0; s < item->n_segs; s++) {
                const Segment *seg = &h->segs[item->first_seg + s];
                const char *text = h->text + seg->text_off;
                Positions next = {};

                for (size_t w = 0; w < POS_WORDS; w++)
                        for (uint64_t bits = at.w[w]; bits; bits &= bits - 1) {
                                size_t p = w * 64 + (size_t) __builtin_ctzll(bits);

                                if (p + seg->text_len > len ||
                                    memcmp(name + p, text, seg->text_len) != 0)
                                        continue;
                                p += seg->text_len;
                                if (seg->n_ranges == 0) {
                                        /* The last segment: the whole name, or not this item. */
                                        if (p == len)
                                                return true;
                                        continue;
                                }
                                for (size_t d = 1; d <= seg->max_digits && p + d <= len &&
                                                   name[p + d - 1] >= '0' && name[p + d - 1] <= '9';
                                     d++)
                                        if (group_has(h, seg, name + p, d))
                                                pos_set(&next, p + d);
                        }
                if (pos_empty(&next))
                        return false;
                at = next;
        }
        return false;
}

bool slurm_hostlist_contains(const SlurmHostlist *h, const char *name) {
        size_t len = name ? strlen(name) : 0;

        if (!h || len == 0 || len > SLURM_MAX_NAME_BYTES)
                return false;
        for (size_t i = 0; i < h->n_items; i++)
                if (item_contains(h, &h->items[i], name, len))
                        return true;
        return false;
}

/* ------------------------------------------------------------------------ */
/* Expansion */

static int emit(const SlurmHostlist *h, const Item *item, size_t s, char *buf, size_t buf_len,
                int (*f)(const char *name, void *userdata), void *userdata) {
        const Segment *seg = &h->segs[item->first_seg + s];
        int r;

        /* parse_item() bounded text and digits to SLURM_MAX_NAME_BYTES. */
        memcpy(buf + buf_len, h->text + seg->text_off, seg->text_len);
        buf_len += seg->text_len;
        if (seg->n_ranges == 0) {
                buf[buf_len] = '\0';
                return f(buf, userdata);
        }
        for (size_t i = 0; i < seg->n_ranges; i++) {
                const Range *rg = &h->ranges[seg->first_range + i];

                for (uint64_t v = rg->lo; v <= rg->hi; v++) {
                        int n = snprintf(buf + buf_len, SLURM_MAX_DIGITS + 2, "%0*" PRIu64,
                                         (int) rg->width, v);

                        if (n < 0)
                                return -EBADMSG;
                        r = emit(h, item, s + 1, buf, buf_len + (size_t) n, f, userdata);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int slurm_hostlist_foreach(const SlurmHostlist *h, int (*f)(const char *name, void *userdata),
                           void *userdata) {
        /* Room for a number's NUL past the longest name. */
        char buf[SLURM_MAX_NAME_BYTES + SLURM_MAX_DIGITS + 2];
        int r;

        for (size_t i = 0; h && i < h->n_items; i++) {
                r = emit(h, &h->items[i], 0, buf, 0, f, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}

typedef struct Names {
        char **v;
        size_t n;
} Names;

static int names_add(const char *name, void *userdata) {
        Names *names = userdata;

        names->v[names->n] = strdup(name);
        if (!names->v[names->n])
                return -ENOMEM;
        names->n++;
        return 0;
}

int slurm_hostlist_expand(const char *hostlist, char ***ret_names, size_t *ret_n) {
        _cleanup_(slurm_hostlist_freep) SlurmHostlist *h = NULL;
        _cleanup_(slurm_names_freep) char **v = NULL;
        Names names;
        int r;

        r = slurm_hostlist_parse(hostlist, &h);
        if (r < 0)
                return r;
        /* The count is known and bounded: one allocation of the right size. */
        v = calloc(h->count + 1, sizeof(char *));
        if (!v)
                return -ENOMEM;
        names = (Names){.v = v};
        r = slurm_hostlist_foreach(h, names_add, &names);
        if (r < 0)
                return r;
        *ret_names = TAKE_PTR(v);
        *ret_n = names.n;
        return 0;
}
