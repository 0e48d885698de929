/* SPDX-License-Identifier: Apache-2.0 */
/*
 * configmap_parse(): one row per rule.
 * - file rows: tests/data/configmap/NAME.json parsed and rendered as text,
 *   compared with NAME.expected beside it;
 * - limit rows: inputs built here, just under and just over each limit of
 *   configmap.h;
 * - contract rows: what the header promises about ret and ret_error.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "configmap.h"
#include "fileio.h"
#include "strbuf.h"

#define DATA_DIR    TEST_DATA_DIR "/configmap"
#define FIXTURE_MAX (64u * 1024u)
#define RENDER_MAX  (64u * 1024u)
#define BUILD_MAX   (CONFIGMAP_MAX_JSON_BYTES + 1024u)

/* ------------------------------------------------------------------------ */
/* Rendering a result as the .expected files spell it. */

static const char *errno_name(int r) {
        switch (r) {
        case 0:
                return "0";
        case -EINVAL:
                return "-EINVAL";
        case -EFBIG:
                return "-EFBIG";
        case -E2BIG:
                return "-E2BIG";
        case -ENOMEM:
                return "-ENOMEM";
        default:
                return "other";
        }
}

static void put_escaped(StrBuf *b, const char *s, size_t len) {
        assert_int_equal(strbuf_putc(b, '"'), 0);
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char) s[i];
                int r;

                if (c == '"' || c == '\\')
                        r = strbuf_printf(b, "\\%c", c);
                else if (c == '\n')
                        r = strbuf_puts(b, "\\n");
                else if (c == '\t')
                        r = strbuf_puts(b, "\\t");
                else if (c == '\0')
                        r = strbuf_puts(b, "\\0");
                else if (c < 0x20 || c >= 0x7f)
                        r = strbuf_printf(b, "\\x%02x", c);
                else
                        r = strbuf_putc(b, (char) c);
                assert_int_equal(r, 0);
        }
        assert_int_equal(strbuf_putc(b, '"'), 0);
}

static char *render(int r, const ConfigMapSet *set, const char *error) {
        StrBuf b = STRBUF_INIT(RENDER_MAX);

        assert_int_equal(strbuf_printf(&b, "result: %s\n", errno_name(r)), 0);
        if (r < 0) {
                assert_non_null(error);
                assert_int_equal(strbuf_printf(&b, "error: %s\n", error), 0);
        } else {
                assert_int_equal(strbuf_printf(&b, "binary: %zu\n", set->n_binary), 0);
                for (size_t i = 0; i < set->n_entries; i++) {
                        const ConfigMapEntry *e = &set->entries[i];

                        /* value is NUL-terminated after len bytes, as the header says */
                        assert_int_equal(e->value[e->len], '\0');
                        assert_int_equal(strbuf_puts(&b, "entry: "), 0);
                        put_escaped(&b, e->configmap, strlen(e->configmap));
                        assert_int_equal(strbuf_putc(&b, ' '), 0);
                        put_escaped(&b, e->key, strlen(e->key));
                        assert_int_equal(strbuf_printf(&b, " %zu ", e->len), 0);
                        put_escaped(&b, e->value, e->len);
                        assert_int_equal(strbuf_putc(&b, '\n'), 0);
                }
        }
        return strbuf_steal(&b);
}

static char *read_fixture(const char *name, const char *suffix, size_t *ret_len) {
        _cleanup_free_ char *path = NULL;
        char *data = NULL;
        size_t len = 0;

        assert_true(asprintf(&path, "%s/%s%s", DATA_DIR, name, suffix) >= 0);
        if (read_file_at(AT_FDCWD, path, 0, FIXTURE_MAX, &data, &len) < 0)
                fail_msg("cannot read fixture '%s'", path);
        if (ret_len)
                *ret_len = len;
        return data;
}

/* ------------------------------------------------------------------------ */
/* File rows: NAME.json against NAME.expected. */

typedef struct FileCase {
        const char *name;
        const char *rule;
} FileCase;

static FileCase file_cases[] = {
        /* accepted shapes */
        {"configmap", "a ConfigMap as `kubectl get configmap NAME -o json` prints it"},
        {"list", "a List as `kubectl get configmap -o json` prints it: every item's data"},
        {"configmaplist", "the API's ConfigMapList, whose items carry no kind"},
        {"list-empty", "a List with no items has no entries"},
        {"list-no-items", "a List without items is empty"},
        {"no-data", "a ConfigMap without data has zero entries, not an error"},
        {"data-null", "data: null and binaryData: null count as absent"},
        {"no-kind-with-data", "an object without kind is a ConfigMap when it has data"},
        {"no-metadata", "no metadata: the ConfigMap name is \"\""},
        {"document-order", "entries keep document order"},
        /* values */
        {"nul-in-value", "\\u0000 stays in the value and counts in len"},
        {"unicode", "escapes and surrogate pairs decode to UTF-8 bytes"},
        {"binary-data", "binaryData keys are skipped and counted"},
        /* refused shapes */
        {"no-kind-no-data", "an object with neither kind nor data is refused"},
        {"wrong-kind", "another kind is refused, naming it"},
        {"kind-not-string", "a kind that is not a string is refused"},
        {"top-level-array", "a top-level array is refused"},
        {"list-wrong-kind-item", "a List item of another kind is refused, naming item and kind"},
        {"list-nested-list", "a List inside a List is refused"},
        {"list-item-kind-not-string", "a List item whose kind is not a string is refused"},
        {"list-item-not-object", "a List item that is not an object is refused"},
        {"list-items-not-array", "items that is not an array is refused"},
        {"value-not-string", "a data value that is not a string: error names items[i].data.key"},
        {"value-not-string-quoted-key", "a key that is not an identifier is quoted in the path"},
        {"data-not-object", "data that is not an object is refused"},
        {"binary-data-not-object", "binaryData that is not an object is refused"},
        {"metadata-not-object", "metadata that is not an object is refused"},
        {"name-not-string", "metadata.name that is not a string is refused"},
        {"name-nul", "metadata.name with a NUL byte is refused"},
        /* keys, as the API server validates them */
        {"key-invalid-chars", "a key with characters outside [-._a-zA-Z0-9] is refused"},
        {"key-dotdot-prefix", "a key starting with '..' is refused"},
        {"key-dot", "the key '.' is refused"},
        {"key-empty", "the empty key is refused"},
        {"binary-key-invalid", "binaryData keys are validated too"},
        {"key-in-data-and-binary", "a key in both data and binaryData is refused"},
        {"duplicate-key", "a duplicate key is refused with its line and column"},
        /* not JSON: line and column, never a value */
        {"syntax-error", "a syntax error names line and column and does not quote the value"},
        {"empty", "empty input is refused"},
        {"concatenated", "two documents back to back are refused"},
        {"invalid-utf8", "invalid UTF-8 is refused"},
        {"control-char", "a raw control character in a string is refused"},
};

static void test_file_case(void **state) {
        const FileCase *c = *state;
        _cleanup_(configmap_set_freep) ConfigMapSet *set = NULL;
        _cleanup_free_ char *json = NULL, *expected = NULL, *actual = NULL, *error = NULL;
        size_t len;
        int r;

        json = read_fixture(c->name, ".json", &len);
        expected = read_fixture(c->name, ".expected", NULL);

        r = configmap_parse(json, len, &set, &error);
        actual = render(r, set, error);
        assert_non_null(actual);
        if (!streq(expected, actual))
                fail_msg("%s (%s)\n--- expected\n%s--- actual\n%s", c->name, c->rule, expected,
                         actual);
}

/* ------------------------------------------------------------------------ */
/* Limit rows: each limit of configmap.h, just under and just over. */

static void build_configmap(StrBuf *b, const char *name, unsigned n_keys, size_t key_len) {
        assert_int_equal(strbuf_printf(b,
                                       "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},"
                                       "\"data\":{",
                                       name),
                         0);
        for (unsigned i = 0; i < n_keys; i++) {
                if (key_len > 0) {
                        assert_int_equal(strbuf_puts(b, i > 0 ? ",\"" : "\""), 0);
                        for (size_t j = 0; j < key_len; j++)
                                assert_int_equal(strbuf_putc(b, 'k'), 0);
                        assert_int_equal(strbuf_puts(b, "\":\"V=1\\n\""), 0);
                } else
                        assert_int_equal(
                                strbuf_printf(b, "%s\"k%u\":\"V=1\\n\"", i > 0 ? "," : "", i), 0);
        }
        assert_int_equal(strbuf_puts(b, "}}"), 0);
}

/* A List of ConfigMaps with n_keys[i] keys each, or a bare ConfigMap when n == 0. */
static char *build_entries(const unsigned *n_keys, size_t n, unsigned bare_keys) {
        StrBuf b = STRBUF_INIT(BUILD_MAX);

        if (n == 0)
                build_configmap(&b, "bare", bare_keys, 0);
        else {
                assert_int_equal(strbuf_puts(&b, "{\"kind\":\"List\",\"items\":["), 0);
                for (size_t i = 0; i < n; i++) {
                        char name[32];

                        snprintf(name, sizeof(name), "cm%zu", i);
                        if (i > 0)
                                assert_int_equal(strbuf_putc(&b, ','), 0);
                        build_configmap(&b, name, n_keys[i], 0);
                }
                assert_int_equal(strbuf_puts(&b, "]}"), 0);
        }
        return strbuf_steal(&b);
}

/* A valid ConfigMap of exactly total bytes: one value padded to fit. */
static char *build_sized(size_t total, size_t *ret_len) {
        static const char head[] = "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"big\"},"
                                   "\"data\":{\"enroot.conf\":\"";
        static const char tail[] = "\"}}";
        size_t fixed = sizeof(head) - 1 + sizeof(tail) - 1;
        char *s;

        assert_true(total > fixed);
        s = malloc(total + 1);
        assert_non_null(s);
        memcpy(s, head, sizeof(head) - 1);
        memset(s + sizeof(head) - 1, 'x', total - fixed);
        memcpy(s + total - (sizeof(tail) - 1), tail, sizeof(tail));
        *ret_len = total;
        return s;
}

typedef struct LimitCase {
        const char *rule;
        enum { BY_SIZE, BY_ENTRIES, BY_KEY_LEN, BY_DEPTH, BY_KIND_LEN } kind;
        size_t amount;        /* bytes, entries in a bare ConfigMap, key bytes, depth */
        unsigned per_item[2]; /* BY_ENTRIES in a List of two ConfigMaps, when amount is 0 */
        int result;
        size_t n_entries;  /* on success */
        const char *error; /* on failure: the message contains this */
} LimitCase;

static LimitCase limit_cases[] = {
        {.rule = "JSON of exactly CONFIGMAP_MAX_JSON_BYTES is read",
         .kind = BY_SIZE,
         .amount = CONFIGMAP_MAX_JSON_BYTES,
         .n_entries = 1},
        {.rule = "JSON one byte over CONFIGMAP_MAX_JSON_BYTES is refused",
         .kind = BY_SIZE,
         .amount = CONFIGMAP_MAX_JSON_BYTES + 1,
         .result = -EFBIG,
         .error = "the JSON is 4194305 bytes, over the limit of 4194304 bytes "
                  "(CONFIGMAP_MAX_JSON_BYTES)"},
        {.rule = "CONFIGMAP_MAX_ENTRIES entries are read",
         .kind = BY_ENTRIES,
         .amount = CONFIGMAP_MAX_ENTRIES,
         .n_entries = CONFIGMAP_MAX_ENTRIES},
        {.rule = "one entry over CONFIGMAP_MAX_ENTRIES is refused at that key",
         .kind = BY_ENTRIES,
         .amount = CONFIGMAP_MAX_ENTRIES + 1,
         .result = -E2BIG,
         .error = "data.k4096: more than 4096 entries in all (CONFIGMAP_MAX_ENTRIES)"},
        {.rule = "CONFIGMAP_MAX_ENTRIES over a List are read",
         .kind = BY_ENTRIES,
         .per_item = {2048, 2048},
         .n_entries = CONFIGMAP_MAX_ENTRIES},
        {.rule = "CONFIGMAP_MAX_ENTRIES counts over all items of a List",
         .kind = BY_ENTRIES,
         .per_item = {2048, 2049},
         .result = -E2BIG,
         .error = "items[1].data.k2048: more than 4096 entries in all"},
        {.rule = "a key of CONFIGMAP_MAX_KEY_BYTES is read",
         .kind = BY_KEY_LEN,
         .amount = CONFIGMAP_MAX_KEY_BYTES,
         .n_entries = 1},
        {.rule = "a key over CONFIGMAP_MAX_KEY_BYTES is refused, its name cut in the message",
         .kind = BY_KEY_LEN,
         .amount = CONFIGMAP_MAX_KEY_BYTES + 1,
         .result = -EINVAL,
         .error = "data[\"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk\"...]: "
                  "key is 254 bytes, over the API server's limit of 253 bytes"},
        {.rule = "nesting deeper than jansson's limit is refused, not a stack overflow",
         .kind = BY_DEPTH,
         .amount = 100000,
         .result = -EINVAL,
         .error = "maximum parsing depth reached"},
        {.rule = "a huge kind is cut in the message",
         .kind = BY_KIND_LEN,
         .amount = 100000,
         .result = -EINVAL,
         .error =
                 "kind: \"SSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSS\"... is "
                 "neither"},
};

static char *build_limit_input(const LimitCase *c, size_t *ret_len) {
        StrBuf b = STRBUF_INIT(BUILD_MAX);
        char *s = NULL;

        switch (c->kind) {
        case BY_SIZE:
                return build_sized(c->amount, ret_len);
        case BY_ENTRIES:
                s = c->amount > 0 ? build_entries(NULL, 0, (unsigned) c->amount)
                                  : build_entries(c->per_item, ELEMENTSOF(c->per_item), 0);
                break;
        case BY_KEY_LEN:
                build_configmap(&b, "long-key", 1, c->amount);
                s = strbuf_steal(&b);
                break;
        case BY_DEPTH:
                assert_int_equal(strbuf_puts(&b, "{\"kind\":\"ConfigMap\",\"metadata\":"), 0);
                for (size_t i = 0; i < c->amount; i++)
                        assert_int_equal(strbuf_putc(&b, '['), 0);
                s = strbuf_steal(&b);
                break;
        case BY_KIND_LEN:
                assert_int_equal(strbuf_puts(&b, "{\"kind\":\""), 0);
                for (size_t i = 0; i < c->amount; i++)
                        assert_int_equal(strbuf_putc(&b, 'S'), 0);
                assert_int_equal(strbuf_puts(&b, "\",\"data\":{}}"), 0);
                s = strbuf_steal(&b);
                break;
        default:
                fail();
        }
        assert_non_null(s);
        *ret_len = strlen(s);
        return s;
}

static void test_limit_case(void **state) {
        const LimitCase *c = *state;
        _cleanup_(configmap_set_freep) ConfigMapSet *set = NULL;
        _cleanup_free_ char *json = NULL, *error = NULL;
        size_t len;
        int r;

        json = build_limit_input(c, &len);
        r = configmap_parse(json, len, &set, &error);
        if (r != c->result)
                fail_msg("%s: got %s, expected %s (%s)", c->rule, errno_name(r),
                         errno_name(c->result), error ? error : "no message");
        if (r == 0) {
                assert_null(error);
                assert_int_equal(set->n_entries, c->n_entries);
        } else {
                assert_null(set);
                assert_non_null(error);
                if (!strstr(error, c->error))
                        fail_msg("%s:\n  got      '%s'\n  expected '...%s...'", c->rule, error,
                                 c->error);
        }
}

/* ------------------------------------------------------------------------ */
/* Contract rows: configmap.h's promises about ret, ret_error and len. */

static const char good[] = "{\"kind\":\"ConfigMap\",\"data\":{\"enroot.conf\":\"A=1\\n\"}}";
static const char bad[] = "{\"kind\":\"Secret\"}";

static void test_ret_untouched_on_failure(void **state) {
        ConfigMapSet *sentinel = (ConfigMapSet *) (uintptr_t) 1, *set = sentinel;
        _cleanup_free_ char *error = NULL;

        assert_int_equal(configmap_parse(bad, strlen(bad), &set, &error), -EINVAL);
        assert_ptr_equal(set, sentinel);
        assert_non_null(error);
}

static void test_error_untouched_on_success(void **state) {
        _cleanup_(configmap_set_freep) ConfigMapSet *set = NULL;
        char *sentinel = (char *) (uintptr_t) 1, *error = sentinel;

        assert_int_equal(configmap_parse(good, strlen(good), &set, &error), 0);
        assert_ptr_equal(error, sentinel);
        assert_int_equal(set->n_entries, 1);
}

static void test_error_may_be_null(void **state) {
        ConfigMapSet *set = NULL;
        _cleanup_free_ char *big = NULL;
        size_t len;

        assert_int_equal(configmap_parse(bad, strlen(bad), &set, NULL), -EINVAL);
        assert_int_equal(configmap_parse("{", 1, &set, NULL), -EINVAL);
        big = build_sized(CONFIGMAP_MAX_JSON_BYTES + 1, &len);
        assert_int_equal(configmap_parse(big, len, &set, NULL), -EFBIG);
        assert_null(set);
}

static void test_null_input(void **state) {
        ConfigMapSet *set = NULL;
        _cleanup_free_ char *error = NULL;

        assert_int_equal(configmap_parse(NULL, 0, &set, &error), -EINVAL);
        assert_null(set);
        assert_string_equal(error, "line 1, column 0: '[' or '{' expected near end of file");
}

static void test_reads_only_len_bytes(void **state) {
        _cleanup_(configmap_set_freep) ConfigMapSet *set = NULL;
        /* Bytes past len (here not even JSON, and no NUL) are never read. */
        char buf[sizeof(good) - 1 + 4];

        memcpy(buf, good, sizeof(good) - 1);
        memcpy(buf + sizeof(good) - 1, "}}}}", 4);
        assert_int_equal(configmap_parse(buf, sizeof(good) - 1, &set, NULL), 0);
        assert_int_equal(set->n_entries, 1);
        assert_string_equal(set->entries[0].value, "A=1\n");
}

static void test_free_null(void **state) {
        assert_null(configmap_set_free(NULL));
}

int main(void) {
        struct CMUnitTest tests[ELEMENTSOF(file_cases) + ELEMENTSOF(limit_cases) + 6];
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(file_cases); i++)
                tests[n++] = (struct CMUnitTest){
                        .name = file_cases[i].name,
                        .test_func = test_file_case,
                        .initial_state = &file_cases[i],
                };
        for (size_t i = 0; i < ELEMENTSOF(limit_cases); i++)
                tests[n++] = (struct CMUnitTest){
                        .name = limit_cases[i].rule,
                        .test_func = test_limit_case,
                        .initial_state = &limit_cases[i],
                };
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_ret_untouched_on_failure);
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_error_untouched_on_success);
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_error_may_be_null);
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_null_input);
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_reads_only_len_bytes);
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_free_null);

        return _cmocka_run_group_tests("configmap", tests, n, NULL, NULL);
}
