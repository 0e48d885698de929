/* SPDX-License-Identifier: Apache-2.0 */
/* The enroot.conf and .env models: one row per rule of docs/DESIGN.md §5. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "document.h"

#define ABSENT  ((const char *) 1) /* the key is not set at all */
#define DYNAMIC ((const char *) 2) /* set, value compared as text */
#define UNSET   ((const char *) 3) /* set to a false value: enroot unsets it */

typedef struct Row {
        const char *name;
        DocType type;
        const char *input;
        const char *key;
        const char *want; /* the effective value, or ABSENT, DYNAMIC, UNSET */
        unsigned line;    /* the winning line, when set */
} Row;

static const Row rows[] = {
        /* enroot.conf: separators (IFS=$' \t=' read -r key value) */
        {"conf K=V", DOC_CONF, "ENROOT_MOUNT_HOME=yes\n", "ENROOT_MOUNT_HOME", "yes", 1},
        {"conf K V", DOC_CONF, "ENROOT_MOUNT_HOME yes\n", "ENROOT_MOUNT_HOME", "yes", 1},
        {"conf K = V", DOC_CONF, "ENROOT_MOUNT_HOME = yes\n", "ENROOT_MOUNT_HOME", "yes", 1},
        {"conf tab", DOC_CONF, "ENROOT_DATA_PATH\t/d\n", "ENROOT_DATA_PATH", "/d", 1},
        {"conf leading blanks", DOC_CONF, " \t ENROOT_DATA_PATH=/d\n", "ENROOT_DATA_PATH", "/d", 1},
        {"conf trailing blanks", DOC_CONF, "ENROOT_DATA_PATH=/d \t \n", "ENROOT_DATA_PATH", "/d",
         1},
        {"conf K==V keeps one =", DOC_CONF, "ENROOT_DATA_PATH==/d\n", "ENROOT_DATA_PATH", "=/d", 1},
        {"conf trailing = stripped", DOC_CONF, "ENROOT_DATA_PATH=/d=\n", "ENROOT_DATA_PATH", "/d",
         1},
        {"conf trailing = kept after blank", DOC_CONF, "ENROOT_SQUASH_OPTIONS=a b=\n",
         "ENROOT_SQUASH_OPTIONS", "a b=", 1},
        {"conf words joined", DOC_CONF, "ENROOT_SQUASH_OPTIONS -comp   lzo\n",
         "ENROOT_SQUASH_OPTIONS", "-comp lzo", 1},
        /* accepted keys */
        {"conf lowercase ignored", DOC_CONF, "enroot_mount_home=yes\n", "enroot_mount_home", ABSENT,
         0},
        {"conf export ignored", DOC_CONF, "export ENROOT_MOUNT_HOME=yes\n", "ENROOT_MOUNT_HOME",
         ABSENT, 0},
        {"conf digits not accepted", DOC_CONF, "ENROOT_X1=1\n", "ENROOT_X1", ABSENT, 0},
        {"conf other prefix ignored", DOC_CONF, "NCCL_DEBUG=INFO\n", "NCCL_DEBUG", ABSENT, 0},
        /* config::init takes only ENROOT_, SSL_CERT_ and proxy keys; enroot's
         * hooks read MELLANOX_* and NVIDIA_* from the container environment */
        {"conf MELLANOX ignored", DOC_CONF, "MELLANOX_VISIBLE_DEVICES=all\n",
         "MELLANOX_VISIBLE_DEVICES", ABSENT, 0},
        {"conf NVIDIA ignored", DOC_CONF, "NVIDIA_DRIVER_CAPABILITIES all\n",
         "NVIDIA_DRIVER_CAPABILITIES", ABSENT, 0},
        {"conf NVIDIA before ENROOT_", DOC_CONF,
         "NVIDIA_VISIBLE_DEVICES=all\nENROOT_MOUNT_HOME=no\n", "ENROOT_MOUNT_HOME", UNSET, 2},
        {"conf SSL_CERT_FILE", DOC_CONF, "SSL_CERT_FILE /c.pem\n", "SSL_CERT_FILE", "/c.pem", 1},
        {"conf SSL_CERT_PATH ignored", DOC_CONF, "SSL_CERT_PATH /c\n", "SSL_CERT_PATH", ABSENT, 0},
        {"conf https_proxy", DOC_CONF, "https_proxy http://p:3128\n", "https_proxy",
         "http://p:3128", 1},
        {"conf HTTPS_PROXY ignored", DOC_CONF, "HTTPS_PROXY http://p\n", "HTTPS_PROXY", ABSENT, 0},
        {"conf comment", DOC_CONF, "# ENROOT_MOUNT_HOME=yes\n", "ENROOT_MOUNT_HOME", ABSENT, 0},
        /* first definition wins, an empty one does not count */
        {"conf first wins", DOC_CONF, "ENROOT_MOUNT_HOME=yes\nENROOT_MOUNT_HOME=no\n",
         "ENROOT_MOUNT_HOME", "yes", 1},
        {"conf empty then set", DOC_CONF, "ENROOT_DATA_PATH=\nENROOT_DATA_PATH=/d\n",
         "ENROOT_DATA_PATH", "/d", 2},
        {"conf quoted empty then set", DOC_CONF, "ENROOT_DATA_PATH \"\"\nENROOT_DATA_PATH=/d\n",
         "ENROOT_DATA_PATH", "/d", 2},
        /* false values unset ENROOT_ keys only */
        {"conf no", DOC_CONF, "ENROOT_REMAP_ROOT=no\n", "ENROOT_REMAP_ROOT", UNSET, 1},
        {"conf FALSE", DOC_CONF, "ENROOT_REMAP_ROOT=FALSE\n", "ENROOT_REMAP_ROOT", UNSET, 1},
        {"conf quoted n", DOC_CONF, "ENROOT_REMAP_ROOT=\"n\"\n", "ENROOT_REMAP_ROOT", UNSET, 1},
        {"conf nO is yes", DOC_CONF, "ENROOT_REMAP_ROOT=nO\n", "ENROOT_REMAP_ROOT", "nO", 1},
        {"conf 0 is yes", DOC_CONF, "ENROOT_REMAP_ROOT=0\n", "ENROOT_REMAP_ROOT", "0", 1},
        {"conf off is yes", DOC_CONF, "ENROOT_REMAP_ROOT=off\n", "ENROOT_REMAP_ROOT", "off", 1},
        {"conf proxy no stays", DOC_CONF, "no_proxy=no\n", "no_proxy", "no", 1},
        {"conf false wins over later", DOC_CONF, "ENROOT_REMAP_ROOT=no\nENROOT_REMAP_ROOT=yes\n",
         "ENROOT_REMAP_ROOT", UNSET, 1},
        /* eval echo: quotes, comments, options, live shell */
        {"conf double quotes", DOC_CONF, "ENROOT_SQUASH_OPTIONS \"a  b\"\n",
         "ENROOT_SQUASH_OPTIONS", "a  b", 1},
        {"conf single quotes", DOC_CONF, "ENROOT_DATA_PATH='/a b'\n", "ENROOT_DATA_PATH", "/a b",
         1},
        {"conf inline comment", DOC_CONF, "ENROOT_DATA_PATH=/d # where\n", "ENROOT_DATA_PATH", "/d",
         1},
        {"conf quoted hash kept", DOC_CONF, "ENROOT_DATA_PATH=\"/d # x\"\n", "ENROOT_DATA_PATH",
         "/d # x", 1},
        {"conf echo -e newline dropped", DOC_CONF, "ENROOT_DATA_PATH=-e /d\\\\n\n",
         "ENROOT_DATA_PATH", "/d", 1},
        {"conf -n swallowed", DOC_CONF, "ENROOT_DATA_PATH=-n\n", "ENROOT_DATA_PATH", "", 1},
        {"conf $VAR dynamic", DOC_CONF, "ENROOT_DATA_PATH=$HOME/d\n", "ENROOT_DATA_PATH", DYNAMIC,
         1},
        {"conf $(cmd) dynamic", DOC_CONF, "ENROOT_DATA_PATH=$(pwd)\n", "ENROOT_DATA_PATH", DYNAMIC,
         1},
        {"conf glob dynamic", DOC_CONF, "ENROOT_DATA_PATH=/d/*\n", "ENROOT_DATA_PATH", DYNAMIC, 1},
        {"conf ; dynamic", DOC_CONF, "ENROOT_DATA_PATH=a;b\n", "ENROOT_DATA_PATH", DYNAMIC, 1},
        {"conf dynamic wins over later", DOC_CONF, "ENROOT_DATA_PATH=$X\nENROOT_DATA_PATH=/d\n",
         "ENROOT_DATA_PATH", DYNAMIC, 1},
        /* the last line without a newline is never read */
        {"conf unterminated", DOC_CONF, "ENROOT_MOUNT_HOME=yes", "ENROOT_MOUNT_HOME", ABSENT, 0},
        {"conf unterminated after", DOC_CONF, "ENROOT_A=1\nENROOT_MOUNT_HOME=yes",
         "ENROOT_MOUNT_HOME", ABSENT, 0},
        /* carriage returns stay in values */
        {"conf CR kept", DOC_CONF, "ENROOT_DATA_PATH=/d\r\n", "ENROOT_DATA_PATH", "/d\r", 1},

        /* environ.d: kept and dropped lines */
        {"env K=V", DOC_ENV, "NCCL_DEBUG=WARN\n", "NCCL_DEBUG", "WARN", 1},
        {"env leading blanks", DOC_ENV, "  \tNCCL_DEBUG=WARN\n", "NCCL_DEBUG", "WARN", 1},
        {"env last line read", DOC_ENV, "NCCL_DEBUG=WARN", "NCCL_DEBUG", "WARN", 1},
        {"env comment", DOC_ENV, "#NCCL_DEBUG=WARN\n", "NCCL_DEBUG", ABSENT, 0},
        {"env K V dropped", DOC_ENV, "NCCL_DEBUG WARN\n", "NCCL_DEBUG", ABSENT, 0},
        {"env K = V dropped", DOC_ENV, "NCCL_DEBUG = WARN\n", "NCCL_DEBUG", ABSENT, 0},
        {"env export dropped", DOC_ENV, "export NCCL_DEBUG=WARN\n", "NCCL_DEBUG", ABSENT, 0},
        {"env digit first dropped", DOC_ENV, "1X=a\n", "1X", ABSENT, 0},
        {"env ENROOT_ dropped", DOC_ENV, "ENROOT_MOUNT_HOME=yes\n", "ENROOT_MOUNT_HOME", ABSENT, 0},
        {"env lowercase kept", DOC_ENV, "http_proxy=http://p\n", "http_proxy", "http://p", 1},
        {"env later wins", DOC_ENV, "A=1\nA=2\n", "A", "2", 2},
        {"env empty value", DOC_ENV, "A=\n", "A", "", 1},
        /* one pair of quotes */
        {"env double quotes", DOC_ENV, "A=\"x y\"\n", "A", "x y", 1},
        {"env single quotes", DOC_ENV, "A='x y'\n", "A", "x y", 1},
        {"env mismatched quotes", DOC_ENV, "A=\"x'\n", "A", "x", 1},
        {"env quotes then blanks", DOC_ENV, "A=\"x\"  \n", "A", "x", 1},
        {"env one quote kept", DOC_ENV, "A=\"\n", "A", "\"", 1},
        {"env inner quotes kept", DOC_ENV, "A=\"a\" \"b\"\n", "A", "a\" \"b", 1},
        {"env only outer pair", DOC_ENV, "A=\"\"x\"\"\n", "A", "\"x\"", 1},
        {"env no strip after text", DOC_ENV, "A=\"x\" # c\n", "A", "\"x\" # c", 1},
        /* comments and variables */
        {"env inline hash kept", DOC_ENV, "A=x # c\n", "A", "x # c", 1},
        {"env $NAME literal", DOC_ENV, "A=$HOME/x\n", "A", "$HOME/x", 1},
        {"env ${NAME:-x} literal", DOC_ENV, "A=${HOME:-/h}\n", "A", "${HOME:-/h}", 1},
        {"env ${NAME} dynamic", DOC_ENV, "A=${HOME}/x\n", "A", DYNAMIC, 1},
        {"env CR kept", DOC_ENV, "A=x\r\n", "A", "x\r", 1},
        {"env quotes then CR", DOC_ENV, "A=\"x\"\r\n", "A", "x", 1},
};

/* Reports every mismatching row, not only the first. */
#define MISMATCH(...)                     \
        do {                              \
                print_error(__VA_ARGS__); \
                print_error("\n");        \
                failures++;               \
        } while (0)

static void test_rows(void **state) {
        unsigned failures = 0;

        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                const Row *r = &rows[i];
                _cleanup_(document_freep) Document *d = NULL;
                const Setting *s;
                const char *got;

                assert_int_equal(document_parse(r->type, r->input, strlen(r->input), &d), 0);
                s = document_get(d, r->key);

                if (!s)
                        got = "(absent)";
                else if (s->unset)
                        got = "(unset)";
                else if (s->dynamic)
                        got = "(dynamic)";
                else
                        got = s->value;

                if (r->want == ABSENT) {
                        if (s)
                                MISMATCH("%s: %s should be absent, got \"%s\"", r->name, r->key,
                                         got);
                        continue;
                }
                if (!s) {
                        MISMATCH("%s: %s is absent", r->name, r->key);
                        continue;
                }
                if (r->want == UNSET && !s->unset)
                        MISMATCH("%s: %s should be unset, got \"%s\"", r->name, r->key, got);
                else if (r->want == DYNAMIC && !s->dynamic)
                        MISMATCH("%s: %s should be dynamic, got \"%s\"", r->name, r->key, got);
                else if (r->want != UNSET && r->want != DYNAMIC &&
                         (s->unset || s->dynamic || !streq(s->value, r->want)))
                        MISMATCH("%s: %s = \"%s\", want \"%s\"", r->name, r->key, got, r->want);
                if (s->line != r->line)
                        MISMATCH("%s: %s from line %u, want %u", r->name, r->key, s->line, r->line);
        }
        assert_int_equal(failures, 0);
}

static void test_line_kinds(void **state) {
        static const char conf[] = "# c\n\nENROOT_A=1\nexport ENROOT_B=1\nfoo=1\n=x\nENROOT_C=1";
        _cleanup_(document_freep) Document *d = NULL;

        assert_int_equal(document_parse(DOC_CONF, conf, strlen(conf), &d), 0);
        assert_int_equal(d->n_lines, 7);
        assert_int_equal(d->lines[0].kind, LINE_COMMENT);
        assert_int_equal(d->lines[1].kind, LINE_BLANK);
        assert_int_equal(d->lines[2].kind, LINE_SETTING);
        assert_true(d->lines[2].wins);
        assert_int_equal(d->lines[3].why, WHY_EXPORT);
        assert_int_equal(d->lines[4].why, WHY_KEY_NOT_ACCEPTED);
        assert_int_equal(d->lines[5].why, WHY_NO_KEY);
        assert_int_equal(d->lines[6].kind, LINE_UNTERMINATED);
        assert_true(d->missing_final_newline);
        assert_int_equal(d->n_settings, 1);
}

static void test_file_flags(void **state) {
        static const char nul[] = "ENROOT_A=1\nENROOT_B=\0x\n";
        static const char cr[] = "ENROOT_A=1\nENROOT_B=2\r\n";
        static const char bad[] = "ENROOT_A=\"open\n";
        _cleanup_(document_freep) Document *a = NULL, *b = NULL, *c = NULL, *e = NULL;

        assert_int_equal(document_parse(DOC_CONF, nul, sizeof(nul) - 1, &a), 0);
        assert_int_equal(a->nul_line, 2);
        /* bash's read drops the NUL: the value is "x" */
        assert_string_equal(document_get(a, "ENROOT_B")->value, "x");

        assert_int_equal(document_parse(DOC_CONF, cr, sizeof(cr) - 1, &b), 0);
        assert_int_equal(b->cr_line, 2);

        assert_int_equal(document_parse(DOC_CONF, bad, sizeof(bad) - 1, &c), 0);
        assert_true(document_is_refused(c));
        assert_int_equal(c->syntax_line, 1);
        assert_non_null(c->syntax_message);

        /* an empty file is not run through bash -n ([ -s FILE ]) */
        assert_int_equal(document_parse(DOC_CONF, "", 0, &e), 0);
        assert_false(document_is_refused(e));
        assert_int_equal(e->n_lines, 0);
}

static void test_size_cap(void **state) {
        size_t n = DOCUMENT_MAX_BYTES + 1;
        char *big = malloc(n);
        Document *d = NULL;

        assert_non_null(big);
        memset(big, '\n', n);
        assert_int_equal(document_parse(DOC_CONF, big, n, &d), -EFBIG);
        assert_null(d);
        /* exactly at the cap is fine */
        assert_int_equal(document_parse(DOC_ENV, big, n - 1, &d), 0);
        assert_int_equal(d->n_lines, n - 1);
        document_free(d);
        free(big);
}

static void test_sha256(void **state) {
        _cleanup_(document_freep) Document *d = NULL;

        assert_int_equal(document_parse(DOC_ENV, "abc", 3, &d), 0);
        assert_string_equal(d->sha256,
                            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* HMAC-SHA256 of the hex SHA-256 under the key, cut to 16 hex digits, as
 *   printf %s "$sha256" | openssl dgst -sha256 -mac HMAC -macopt hexkey:KEY
 * computes it; another key gives another id. */
static void test_content_id(void **state) {
        _cleanup_(document_freep) Document *d = NULL;
        ContentKey key, other;
        char id[CONTENT_ID_HEX + 1];

        for (unsigned i = 0; i < CONTENT_KEY_BYTES; i++) {
                key.bytes[i] = (unsigned char) i;
                other.bytes[i] = (unsigned char) (i + 1);
        }
        assert_int_equal(document_parse(DOC_ENV, "abc", 3, &d), 0);
        assert_int_equal(document_content_id(d, &key, id), 0);
        assert_string_equal(id, "4632ec1a59eabb3a");
        assert_int_equal(document_content_id(d, &other, id), 0);
        assert_string_equal(id, "b1ecd2aba716d34e");

        /* asked again, from memory, and after many others pushed it out */
        for (int round = 0; round < 2; round++) {
                assert_int_equal(document_content_id(d, &key, id), 0);
                assert_string_equal(id, "4632ec1a59eabb3a");
                assert_int_equal(document_content_id(d, &other, id), 0);
                assert_string_equal(id, "b1ecd2aba716d34e");
                for (unsigned i = 0; i < 20; i++) {
                        char sha[65];

                        (void) snprintf(sha, sizeof sha, "%064u", i);
                        assert_int_equal(content_id_of_sha256(sha, &key, id), 0);
                        assert_int_equal(strlen(id), CONTENT_ID_HEX);
                }
        }
}

static void test_key_helpers(void **state) {
        assert_string_equal(conf_key_suggest("ENROOT_MOUNT_HOM"), "ENROOT_MOUNT_HOME");
        assert_string_equal(conf_key_suggest("enroot_remap_root"), "ENROOT_REMAP_ROOT");
        assert_null(conf_key_suggest("ENROOT_MOUNT_HOME"));
        assert_null(conf_key_suggest("TOTALLY_DIFFERENT_THING"));
        assert_true(conf_key_is_boolean("ENROOT_MOUNT_HOME"));
        assert_false(conf_key_is_boolean("ENROOT_DATA_PATH"));
        assert_int_equal(doc_type_from_name("/etc/enroot/environ.d/99-aicr-defaults.env"), DOC_ENV);
        assert_int_equal(doc_type_from_name("enroot.conf"), DOC_CONF);
        assert_int_equal(doc_type_from_name("enroot.config"), _DOC_TYPE_INVALID);
        for (const char *const *v = (const char *const[]){"n", "no", "N", "NO", "No", "f", "false",
                                                          "F", "False", "FALSE", NULL};
             *v; v++)
                assert_true(conf_value_is_false(*v));
        for (const char *const *v =
                     (const char *const[]){"nO", "0", "off", "fALSE", "", "n ", NULL};
             *v; v++)
                assert_false(conf_value_is_false(*v));

        /* enroot's config::init: ^ENROOT_[[:upper:]_]+$, ^SSL_CERT_(DIR|FILE)$,
         * ^(all|no|http|https)_proxy$, nothing else */
        for (const char *const *v =
                     (const char *const[]){"ENROOT_MOUNT_HOME", "ENROOT_A_", "SSL_CERT_DIR",
                                           "SSL_CERT_FILE", "all_proxy", "no_proxy", "http_proxy",
                                           "https_proxy", NULL};
             *v; v++)
                assert_true(conf_key_is_accepted(*v));
        for (const char *const *v =
                     (const char *const[]){"ENROOT_", "ENROOT_X1", "ENROOT_a", "SSL_CERT_PATH",
                                           "HTTP_PROXY", "ftp_proxy", "MELLANOX_VISIBLE_DEVICES",
                                           "MELLANOX_", "NVIDIA_VISIBLE_DEVICES",
                                           "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_", NULL};
             *v; v++)
                assert_false(conf_key_is_accepted(*v));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows),        cmocka_unit_test(test_line_kinds),
                cmocka_unit_test(test_file_flags),  cmocka_unit_test(test_size_cap),
                cmocka_unit_test(test_sha256),      cmocka_unit_test(test_content_id),
                cmocka_unit_test(test_key_helpers),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
