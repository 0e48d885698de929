/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "strbuf.h"

static void test_append_and_cap(void **state) {
        StrBuf b = STRBUF_INIT(10);

        assert_string_equal(strbuf_str(&b), "");
        assert_int_equal(strbuf_puts(&b, "hello"), 0);
        assert_int_equal(strbuf_printf(&b, " %d", 42), 0);
        assert_string_equal(strbuf_str(&b), "hello 42");
        /* crossing the cap is refused and leaves the contents intact */
        assert_int_equal(strbuf_puts(&b, "abc"), -ENOBUFS);
        assert_string_equal(strbuf_str(&b), "hello 42");
        assert_int_equal(strbuf_printf(&b, "%s", "xyz"), -ENOBUFS);
        assert_int_equal(b.len, 8);
        /* exactly up to the cap is fine */
        assert_int_equal(strbuf_puts(&b, "!!"), 0);
        assert_int_equal(b.len, 10);
        assert_int_equal(strbuf_putc(&b, '!'), -ENOBUFS);
        strbuf_done(&b);
}

static void test_reset_steal(void **state) {
        StrBuf b = STRBUF_INIT(1u << 20);
        char *s;

        for (int i = 0; i < 10000; i++)
                assert_int_equal(strbuf_putc(&b, 'x'), 0);
        assert_int_equal(b.len, 10000);
        strbuf_reset(&b);
        assert_string_equal(strbuf_str(&b), "");
        assert_int_equal(strbuf_append(&b, "a\0b", 3), 0);
        assert_int_equal(b.len, 3);
        s = strbuf_steal(&b);
        assert_memory_equal(s, "a\0b", 4);
        assert_null(b.data);
        free(s);
        s = strbuf_steal(&b);
        assert_string_equal(s, "");
        free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_append_and_cap),
                cmocka_unit_test(test_reset_steal),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
