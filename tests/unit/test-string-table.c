/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "string-table.h"

/* A table with a hole (COLOR_UNNAMED) to show that a hole reads as NULL and
 * matches nothing. */
typedef enum Color {
        COLOR_RED,
        COLOR_UNNAMED,
        COLOR_BLUE,
        _COLOR_MAX,
        _COLOR_INVALID = -1,
} Color;

static const char *const color_table[_COLOR_MAX] = {
        [COLOR_RED] = "red",
        [COLOR_BLUE] = "blue",
};

DEFINE_PRIVATE_STRING_TABLE_TO_STRING(color, Color);
DEFINE_PRIVATE_STRING_TABLE_FROM_STRING(color, Color, _COLOR_INVALID);

static void test_to_string(void **state) {
        static const struct {
                int value;
                const char *name;
        } cases[] = {
                {COLOR_RED, "red"}, {COLOR_UNNAMED, NULL},  {COLOR_BLUE, "blue"},
                {_COLOR_MAX, NULL}, {_COLOR_INVALID, NULL}, {-1000, NULL},
                {1000, NULL},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const char *s = color_to_string((Color) cases[i].value);

                if (cases[i].name)
                        assert_string_equal(s, cases[i].name);
                else
                        assert_null(s);
        }
}

static void test_from_string(void **state) {
        static const struct {
                const char *name;
                int value;
        } cases[] = {
                {"red", COLOR_RED},   {"blue", COLOR_BLUE},      {"Red", _COLOR_INVALID},
                {"", _COLOR_INVALID}, {"green", _COLOR_INVALID}, {NULL, _COLOR_INVALID},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                assert_int_equal(color_from_string(cases[i].name), cases[i].value);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_to_string),
                cmocka_unit_test(test_from_string),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
