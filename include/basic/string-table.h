/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An enum and its names in one table. A module writes
 *
 *     static const char *const side_table[_SIDE_MAX] = {
 *             [SIDE_DESIRED] = "desired",
 *             [SIDE_RUNNING] = "running",
 *     };
 *     DEFINE_STRING_TABLE_LOOKUP(side, Side, _SIDE_INVALID);
 *
 * and gets side_to_string() and side_from_string(). The table is indexed by
 * the enum with designated initializers and sized by the enum's _MAX, so a
 * value and its name stay on one line. Nothing here allocates; the strings
 * returned are the table's own (static, never freed).
 */
#pragma once

#include <stddef.h>

#include "macro.h"

/* name##_to_string(): the table's entry for i; NULL when i is outside the
 * table or names a hole in it. A negative i converts to a size_t past any
 * table, so one comparison bounds both ends. */
#define _DEFINE_STRING_TABLE_TO_STRING(name, type, scope)   \
        scope const char *name##_to_string(type i) {        \
                if ((size_t) i >= ELEMENTSOF(name##_table)) \
                        return NULL;                        \
                return name##_table[i];                     \
        }

/* name##_from_string(): the index whose entry equals s; invalid when s is
 * NULL or names no entry. */
#define _DEFINE_STRING_TABLE_FROM_STRING(name, type, invalid, scope)             \
        scope type name##_from_string(const char *s) {                           \
                for (size_t _i_ = 0; s && _i_ < ELEMENTSOF(name##_table); _i_++) \
                        if (name##_table[_i_] && streq(name##_table[_i_], s))    \
                                return (type) _i_;                               \
                return (invalid);                                                \
        }

#define DEFINE_STRING_TABLE_TO_STRING(name, type) _DEFINE_STRING_TABLE_TO_STRING(name, type, )
#define DEFINE_PRIVATE_STRING_TABLE_TO_STRING(name, type) \
        _DEFINE_STRING_TABLE_TO_STRING(name, type, static)
#define DEFINE_STRING_TABLE_FROM_STRING(name, type, invalid) \
        _DEFINE_STRING_TABLE_FROM_STRING(name, type, invalid, )
#define DEFINE_PRIVATE_STRING_TABLE_FROM_STRING(name, type, invalid) \
        _DEFINE_STRING_TABLE_FROM_STRING(name, type, invalid, static)

/* Both directions, exported: declare name##_to_string() and
 * name##_from_string() in the module's header. */
#define DEFINE_STRING_TABLE_LOOKUP(name, type, invalid) \
        DEFINE_STRING_TABLE_TO_STRING(name, type)       \
        DEFINE_STRING_TABLE_FROM_STRING(name, type, invalid)
