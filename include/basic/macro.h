/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small macros shared by every module: cleanup attributes,
 * ownership transfer and string predicates. Nothing here allocates.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f)         __attribute__((cleanup(f)))
#define _unused_             __attribute__((unused))
#define _printf_(a, b)       __attribute__((format(printf, a, b)))
#define _warn_unused_result_ __attribute__((warn_unused_result))
#define _fallthrough_        __attribute__((fallthrough))

#define ELEMENTSOF(x)        (sizeof(x) / sizeof((x)[0]))
/* A macro's value as a string literal: STRINGIFY(5) is "5". */
#define STRINGIFY_(x)        #x
#define STRINGIFY(x)         STRINGIFY_(x)

/* Hand the pointer over: return its value and leave NULL behind. */
#define TAKE_PTR(p)                         \
        ({                                  \
                __typeof__(p) _take_ = (p); \
                (p) = NULL;                 \
                _take_;                     \
        })

#define TAKE_FD(fd)              \
        ({                       \
                int _fd_ = (fd); \
                (fd) = -EBADF;   \
                _fd_;            \
        })

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                (void) close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* For destructors that follow the "accept NULL, return NULL" rule. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
        static inline void func##p(type *p) {   \
                if (*p)                         \
                        *p = func(*p);          \
        }

static inline bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return streq(a, b);
}

/* Returns a pointer just past the prefix, or NULL when s does not start with it. */
static inline const char *startswith(const char *s, const char *prefix) {
        size_t l = strlen(prefix);
        return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}

static inline bool endswith(const char *s, const char *suffix) {
        size_t ls = strlen(s), lx = strlen(suffix);
        return ls >= lx && memcmp(s + ls - lx, suffix, lx) == 0;
}

static inline const char *strnull(const char *s) {
        return s ? s : "(null)";
}

static inline const char *strempty(const char *s) {
        return s ? s : "";
}

/* Negative errno from the current errno, never 0 (a failed call that forgot errno). */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}
