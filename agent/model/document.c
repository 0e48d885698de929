/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The enroot.conf and environ.d/NAME.env models. Every rule cites what enroot
 * does; docs/DESIGN.md §5 has the full list.
 */
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdint.h>

#include "document.h"
#include "shell.h"
#include "string-table.h"

const char *const conf_known_keys[] = {
        "ENROOT_LIBRARY_PATH",
        "ENROOT_SYSCONF_PATH",
        "ENROOT_RUNTIME_PATH",
        "ENROOT_CONFIG_PATH",
        "ENROOT_CACHE_PATH",
        "ENROOT_DATA_PATH",
        "ENROOT_TEMP_PATH",
        "ENROOT_GZIP_PROGRAM",
        "ENROOT_ZSTD_OPTIONS",
        "ENROOT_SQUASH_OPTIONS",
        "ENROOT_ROOTFS_WRITABLE",
        "ENROOT_NATIVE_OVERLAYFS",
        "ENROOT_REMAP_ROOT",
        "ENROOT_UNSHARE_NET",
        "ENROOT_UNSHARE_PID",
        "ENROOT_UNSHARE_IPC",
        "ENROOT_UNSHARE_UTS",
        "ENROOT_MAX_PROCESSORS",
        "ENROOT_MAX_CONNECTIONS",
        "ENROOT_CONNECT_TIMEOUT",
        "ENROOT_TRANSFER_TIMEOUT",
        "ENROOT_TRANSFER_RETRIES",
        "ENROOT_LOGIN_SHELL",
        "ENROOT_ALLOW_SUPERUSER",
        "ENROOT_ALLOW_HTTP",
        "ENROOT_BUNDLE_ALL",
        "ENROOT_BUNDLE_CHECKSUM",
        "ENROOT_MOUNT_HOME",
        "ENROOT_RESTRICT_DEV",
        "ENROOT_FORCE_OVERRIDE",
        NULL,
};

/* Settings enroot only tests for being set: any value that survives the
 * loader's false-value pass means yes. */
static const char *const conf_boolean_keys[] = {
        "ENROOT_ROOTFS_WRITABLE", "ENROOT_NATIVE_OVERLAYFS", "ENROOT_REMAP_ROOT",
        "ENROOT_UNSHARE_NET",     "ENROOT_UNSHARE_PID",      "ENROOT_UNSHARE_IPC",
        "ENROOT_UNSHARE_UTS",     "ENROOT_ALLOW_SUPERUSER",  "ENROOT_ALLOW_HTTP",
        "ENROOT_BUNDLE_ALL",      "ENROOT_BUNDLE_CHECKSUM",  "ENROOT_MOUNT_HOME",
        "ENROOT_RESTRICT_DEV",    "ENROOT_FORCE_OVERRIDE",   NULL,
};

static bool strv_contains(const char *const *v, const char *s) {
        for (; *v; v++)
                if (streq(*v, s))
                        return true;
        return false;
}

static bool is_upper(char c) {
        return c >= 'A' && c <= 'Z';
}

static bool is_alpha(char c) {
        return is_upper(c) || (c >= 'a' && c <= 'z');
}

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static bool is_name_char(char c) {
        return is_alpha(c) || is_digit(c) || c == '_';
}

/* bash's read: IFS=$' \t=' makes space and tab "IFS whitespace" and '=' a
 * single-character delimiter. */
static bool is_ifs_space(char c) {
        return c == ' ' || c == '\t';
}

static bool is_ifs(char c) {
        return is_ifs_space(c) || c == '=';
}

/* sed's [[:space:]] in the C locale. */
static bool is_posix_space(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool conf_key_is_accepted(const char *key) {
        const char *p;

        /* enroot's loader: ^ENROOT_[[:upper:]_]+$ */
        p = startswith(key, "ENROOT_");
        if (p) {
                if (!*p)
                        return false;
                for (; *p; p++)
                        if (!is_upper(*p) && *p != '_')
                                return false;
                return true;
        }

        /* ^SSL_CERT_(DIR|FILE)$ and ^(all|no|http|https)_proxy$, and nothing
         * else: MELLANOX_* and NVIDIA_* lines are skipped like any other key
         * (enroot's hooks read those from the container environment, docs/DESIGN.md §5). */
        return streq(key, "SSL_CERT_DIR") || streq(key, "SSL_CERT_FILE") ||
               streq(key, "all_proxy") || streq(key, "no_proxy") || streq(key, "http_proxy") ||
               streq(key, "https_proxy");
}

bool conf_key_is_known(const char *key) {
        return strv_contains(conf_known_keys, key);
}

bool conf_key_is_boolean(const char *key) {
        return strv_contains(conf_boolean_keys, key);
}

bool conf_value_is_false(const char *v) {
        /* enroot's config::fini: ^(no?|N[oO]?|[fF](alse)?|FALSE)$ */
        static const char *const falsy[] = {
                "n", "no", "N", "NO", "No", "f", "false", "F", "False", "FALSE", NULL,
        };
        return strv_contains(falsy, v);
}

static size_t edit_distance(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];

        if (lb >= ELEMENTSOF(prev))
                return SIZE_MAX;
        for (size_t j = 0; j <= lb; j++)
                prev[j] = j;
        for (size_t i = 1; i <= la; i++) {
                cur[0] = i;
                for (size_t j = 1; j <= lb; j++) {
                        size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
                        size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
                        size_t m = del < ins ? del : ins;
                        cur[j] = m < sub ? m : sub;
                }
                memcpy(prev, cur, sizeof(size_t) * (lb + 1));
        }
        return prev[lb];
}

const char *conf_key_suggest(const char *key) {
        char upper[64];
        const char *best = NULL;
        size_t best_d = SIZE_MAX, n = strlen(key);

        /* Compare case-insensitively: "enroot_mount_home" means ENROOT_MOUNT_HOME. */
        if (n >= sizeof upper)
                return NULL;
        for (size_t i = 0; i <= n; i++)
                upper[i] = (key[i] >= 'a' && key[i] <= 'z') ? (char) (key[i] - 'a' + 'A') : key[i];

        for (const char *const *k = conf_known_keys; *k; k++) {
                size_t lk = strlen(*k), d;

                /* The distance is at least the difference in length. */
                if (lk > n + 3 || n > lk + 3)
                        continue;
                d = edit_distance(upper, *k);
                if (d < best_d) {
                        best_d = d;
                        best = *k;
                }
        }
        /* Close enough to be a typo: a few edits, and never the key itself. */
        if (best && best_d <= 3 && !streq(best, key))
                return best;
        return NULL;
}

DocType doc_type_from_name(const char *name) {
        const char *base = strrchr(name, '/');

        base = base ? base + 1 : name;
        if (endswith(base, ".env"))
                return DOC_ENV;
        if (endswith(base, ".conf"))
                return DOC_CONF;
        return _DOC_TYPE_INVALID;
}

static const char *const doc_type_table[_DOC_TYPE_MAX] = {
        [DOC_CONF] = "conf",
        [DOC_ENV] = "env",
};

DEFINE_STRING_TABLE_LOOKUP(doc_type, DocType, _DOC_TYPE_INVALID);

Document *document_free(Document *d) {
        if (!d)
                return NULL;
        for (size_t i = 0; i < d->n_lines; i++) {
                free(d->lines[i].key);
                free(d->lines[i].raw);
                free(d->lines[i].value);
        }
        for (size_t i = 0; i < d->n_settings; i++)
                free(d->settings[i].canon);
        free(d->lines);
        free(d->settings);
        free(d);
        return NULL;
}

int content_sha256_hex(const char *data, size_t len, char ret[static 65]) {
        /* Fetched and allocated once, for the life of the process: with
         * EVP_sha256(), EVP_Digest() looks the algorithm up in the provider
         * store and allocates a context at every call, which costs more than
         * hashing a small file. */
        static EVP_MD *sha256;
        static EVP_MD_CTX *ctx;
        static const char hex[] = "0123456789abcdef";
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int md_len = 0;

        if (!sha256)
                sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
        if (!ctx)
                ctx = EVP_MD_CTX_new();
        if (!sha256 || !ctx || EVP_DigestInit_ex2(ctx, sha256, NULL) != 1 ||
            EVP_DigestUpdate(ctx, data, len) != 1 || EVP_DigestFinal_ex(ctx, md, &md_len) != 1 ||
            md_len != 32)
                return -EIO;
        for (unsigned i = 0; i < md_len; i++) {
                ret[2 * i] = hex[md[i] >> 4];
                ret[2 * i + 1] = hex[md[i] & 0xf];
        }
        ret[2 * md_len] = '\0';
        return 0;
}

int document_content_id(const Document *d, const ContentKey *key,
                        char ret[static CONTENT_ID_HEX + 1]) {
        return content_id_of_sha256(d->sha256, key, ret);
}

/* The ids last worked out: each update asks again for every file's two
 * sides, of which one at most changed. An HMAC costs a key schedule. */
#define CONTENT_ID_MEMO 8u
typedef struct ContentIdMemo {
        bool used;
        char sha256[65];
        ContentKey key;
        char id[CONTENT_ID_HEX + 1];
} ContentIdMemo;

static int content_id_compute(const char *sha256, const ContentKey *key,
                              char ret[static CONTENT_ID_HEX + 1]) {
        /* Fetched, allocated and set to SHA-256 once, as in content_sha256_hex(): the
         * one-shot HMAC() looks the algorithm up at every call (3 times the
         * cost). */
        static EVP_MAC *hmac;
        static EVP_MAC_CTX *ctx;
        static const char hex[] = "0123456789abcdef";
        static char digest[] = "SHA256"; /* OSSL_PARAM takes a char * */
        static ContentKey last_key;
        static bool have_key;
        unsigned char md[EVP_MAX_MD_SIZE];
        size_t md_len = 0;

        if (!hmac)
                hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
        if (hmac && !ctx) {
                OSSL_PARAM params[] = {
                        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                        OSSL_PARAM_construct_end(),
                };

                ctx = EVP_MAC_CTX_new(hmac);
                if (ctx && EVP_MAC_CTX_set_params(ctx, params) != 1) {
                        EVP_MAC_CTX_free(ctx);
                        ctx = NULL;
                }
        }
        /* The key is the same at every call but the first (one per process):
         * an init without it starts again from the pads of the last one. */
        if (ctx && (!have_key || memcmp(&last_key, key, sizeof *key) != 0)) {
                have_key = EVP_MAC_init(ctx, key->bytes, sizeof key->bytes, NULL) == 1;
                if (!have_key)
                        return -EIO;
                last_key = *key;
        } else if (ctx && EVP_MAC_init(ctx, NULL, 0, NULL) != 1)
                return -EIO;
        if (!ctx || EVP_MAC_update(ctx, (const unsigned char *) sha256, strlen(sha256)) != 1 ||
            EVP_MAC_final(ctx, md, &md_len, sizeof md) != 1 || md_len < CONTENT_ID_HEX / 2)
                return -EIO;
        for (unsigned i = 0; i < CONTENT_ID_HEX / 2; i++) {
                ret[2 * i] = hex[md[i] >> 4];
                ret[2 * i + 1] = hex[md[i] & 0xf];
        }
        ret[CONTENT_ID_HEX] = '\0';
        return 0;
}

int content_id_of_sha256(const char *sha256, const ContentKey *key,
                         char ret[static CONTENT_ID_HEX + 1]) {
        static ContentIdMemo memo[CONTENT_ID_MEMO];
        static unsigned next;
        ContentIdMemo *m;
        int r;

        for (unsigned i = 0; i < CONTENT_ID_MEMO; i++)
                if (memo[i].used && streq(memo[i].sha256, sha256) &&
                    memcmp(&memo[i].key, key, sizeof *key) == 0) {
                        memcpy(ret, memo[i].id, sizeof memo[i].id);
                        return 0;
                }
        r = content_id_compute(sha256, key, ret);
        if (r < 0 || strlen(sha256) >= sizeof memo[0].sha256)
                return r;
        m = &memo[next++ % CONTENT_ID_MEMO];
        *m = (ContentIdMemo){.used = true, .key = *key};
        memcpy(m->sha256, sha256, strlen(sha256) + 1);
        memcpy(m->id, ret, sizeof m->id);
        return 0;
}

static char *strndup_or_null(const char *s, size_t n, bool *oom) {
        char *r = strndup(s, n);
        if (!r)
                *oom = true;
        return r;
}

/* One enroot.conf line, as `IFS=$' \t=' read -r key value` splits it.
 * text has no newline and no NUL. */
static int parse_conf_line(Line *l, const char *text) {
        const char *p = text, *key, *rest, *end;
        bool oom = false;

        while (is_ifs_space(*p))
                p++;
        if (!*p) {
                l->kind = LINE_BLANK;
                return 0;
        }
        if (*p == '#') {
                l->kind = LINE_COMMENT;
                return 0;
        }

        key = p;
        while (*p && !is_ifs(*p))
                p++;
        l->key = strndup_or_null(key, (size_t) (p - key), &oom);

        /* The delimiter: IFS whitespace, at most one '=', IFS whitespace. */
        while (is_ifs_space(*p))
                p++;
        if (*p == '=') {
                p++;
                while (is_ifs_space(*p))
                        p++;
        }
        rest = p;
        end = rest + strlen(rest);
        while (end > rest && is_ifs_space(end[-1]))
                end--;

        /* bash strips one trailing delimiter when the rest is a single field
         * followed by it: "b=" and "b =" read as "b", "b c=" stays "b c=". */
        if (end > rest && end[-1] == '=') {
                const char *f = end - 1, *q = rest;
                while (f > rest && is_ifs_space(f[-1]))
                        f--;
                while (q < f && !is_ifs(*q))
                        q++;
                if (q == f)
                        end = f;
        }
        l->raw = strndup_or_null(rest, (size_t) (end - rest), &oom);
        if (oom)
                return -ENOMEM;

        if (!*l->key) {
                l->kind = LINE_IGNORED;
                l->why = WHY_NO_KEY;
        } else if (streq(l->key, "export")) {
                l->kind = LINE_IGNORED;
                l->why = WHY_EXPORT;
        } else if (!conf_key_is_accepted(l->key)) {
                l->kind = LINE_IGNORED;
                l->why = WHY_KEY_NOT_ACCEPTED;
        } else
                l->kind = LINE_SETTING;

        if (l->kind == LINE_SETTING || l->why == WHY_EXPORT) {
                /* export "$key=$(eval echo "${value}")" */
                int r = shell_eval_echo(l->raw, &l->value, &l->flags);
                if (r < 0)
                        return r;
                /* $(...) drops every trailing newline ("echo -e 'a\n'" gives "a"). */
                if (l->value) {
                        size_t n = strlen(l->value);
                        while (n > 0 && l->value[n - 1] == '\n')
                                l->value[--n] = '\0';
                }
        }
        return 0;
}

static bool env_has_subst(const char *s, const char *end) {
        /* awk in enroot's envsubst: \${[A-Za-z_][A-Za-z0-9_]*} */
        for (const char *p = s; p + 3 < end; p++) {
                const char *q;
                if (p[0] != '$' || p[1] != '{' || !(is_alpha(p[2]) || p[2] == '_'))
                        continue;
                for (q = p + 3; q < end && is_name_char(*q); q++)
                        ;
                if (q < end && *q == '}')
                        return true;
        }
        return false;
}

static unsigned env_value_notes(const char *v) {
        unsigned f = 0;

        for (const char *p = v; *p; p++) {
                if (p[0] == '$' && (is_alpha(p[1]) || p[1] == '_'))
                        f |= ENV_DOLLAR_NAME;
                else if (p[0] == '$' && p[1] == '{') {
                        const char *q = p + 2;
                        if (is_alpha(*q) || *q == '_') {
                                while (is_name_char(*q))
                                        q++;
                                if (*q != '}' && *q)
                                        f |= ENV_UNSUPPORTED_EXP;
                        } else
                                f |= ENV_UNSUPPORTED_EXP;
                } else if (p[0] == '#' && p > v && is_posix_space(p[-1]))
                        f |= ENV_INLINE_HASH;
        }
        if (env_has_subst(v, v + strlen(v)))
                f |= ENV_SUBST;
        return f;
}

/* One environ.d line, as enroot's envsubst (awk) and envfmt (sed) leave it. */
static int parse_env_line(Line *l, const char *text) {
        const char *p = text, *eq, *v, *end;
        bool oom = false;

        /* s/^[[:space:]]\+// */
        while (is_posix_space(*p))
                p++;
        /* /^#\|^$/d */
        if (!*p) {
                l->kind = LINE_BLANK;
                return 0;
        }
        if (*p == '#') {
                l->kind = LINE_COMMENT;
                return 0;
        }

        eq = strchr(p, '=');
        l->key = strndup_or_null(p, eq ? (size_t) (eq - p) : strlen(p), &oom);
        if (oom)
                return -ENOMEM;

        /* ${NAME} before the '=' is substituted before any other rule: the key
         * itself depends on the environment. Keep the line, compared as text. */
        if (eq && env_has_subst(p, eq)) {
                l->kind = LINE_SETTING;
                l->flags |= ENV_SUBST_IN_KEY | ENV_SUBST;
                l->raw = strdup(eq + 1);
                return l->raw ? 0 : -ENOMEM;
        }

        /* /^[[:alpha:]_][[:alnum:]_]*=/!d */
        {
                const char *q = p;
                bool ok = is_alpha(*q) || *q == '_';
                if (ok)
                        while (is_name_char(*q))
                                q++;
                if (!ok || *q != '=') {
                        l->kind = LINE_IGNORED;
                        l->why = WHY_MALFORMED;
                        if (eq) {
                                l->raw = strdup(eq + 1);
                                if (!l->raw)
                                        return -ENOMEM;
                        }
                        return 0;
                }
        }

        /* /^ENROOT_/d */
        if (startswith(p, "ENROOT_")) {
                l->kind = LINE_IGNORED;
                l->why = WHY_ENROOT_PREFIX;
                return 0;
        }

        l->kind = LINE_SETTING;
        v = eq + 1;
        l->raw = strdup(v);
        if (!l->raw)
                return -ENOMEM;
        l->flags = env_value_notes(v);

        /* s/^NAME=["'](.*)["'][[:space:]]*$/NAME=\1/: one pair of quotes,
         * not necessarily matching, the greedy middle kept. */
        end = v + strlen(v);
        while (end > v && is_posix_space(end[-1]))
                end--;
        if (end - v >= 2 && (v[0] == '"' || v[0] == '\'') && (end[-1] == '"' || end[-1] == '\'')) {
                l->value = strndup(v + 1, (size_t) (end - v - 2));
                l->flags |= ENV_QUOTES_STRIPPED;
        } else
                l->value = strdup(v);
        if (!l->value)
                return -ENOMEM;

        if (l->flags & ENV_SUBST) {
                /* The value depends on enroot's environment: only the text is known. */
                free(l->value);
                l->value = NULL;
        }
        return 0;
}

static int split_lines(Document *d, const char *data, size_t len) {
        size_t n = 0, cap = 0;
        const char *p = data, *end = data + len;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *stop = nl ? nl : end;
                _cleanup_free_ char *text = NULL;
                size_t tl = 0;
                Line *l;
                int r;

                if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 64;
                        Line *nl_ = reallocarray(d->lines, ncap, sizeof(Line));
                        if (!nl_)
                                return -ENOMEM;
                        d->lines = nl_;
                        cap = ncap;
                }
                l = &d->lines[n];
                *l = (Line){.number = (unsigned) n + 1};
                d->n_lines = ++n;

                /* bash's read and awk both skip NUL bytes; lint reports them. */
                text = malloc((size_t) (stop - p) + 1);
                if (!text)
                        return -ENOMEM;
                for (const char *q = p; q < stop; q++) {
                        if (*q == '\0') {
                                if (!d->nul_line)
                                        d->nul_line = l->number;
                                continue;
                        }
                        text[tl++] = *q;
                }
                text[tl] = '\0';
                if (tl > 0 && text[tl - 1] == '\r' && !d->cr_line)
                        d->cr_line = l->number;

                r = d->type == DOC_CONF ? parse_conf_line(l, text) : parse_env_line(l, text);
                if (r < 0)
                        return r;

                if (!nl) {
                        d->missing_final_newline = true;
                        /* enroot's `while read` loop never runs its body for a
                         * last line without a newline; awk (environ.d) reads it. */
                        if (d->type == DOC_CONF && l->kind != LINE_BLANK)
                                l->kind = LINE_UNTERMINATED;
                }
                p = nl ? nl + 1 : end;
        }
        return 0;
}

static int compare_settings(const void *a, const void *b) {
        return strcmp(((const Setting *) a)->key, ((const Setting *) b)->key);
}

static int compare_line_ptr_key(const void *a, const void *b) {
        const Line *x = *(Line *const *) a, *y = *(Line *const *) b;
        int c = strcmp(x->key, y->key);
        if (c)
                return c;
        return x->number < y->number ? -1 : x->number > y->number;
}

static bool line_value_empty(const Line *l) {
        return l->value && !*l->value;
}

static char *prefixed(const char *prefix, const char *s) {
        size_t a = strlen(prefix), b = strlen(s);
        char *r = malloc(a + b + 1);
        if (!r)
                return NULL;
        memcpy(r, prefix, a);
        memcpy(r + a, s, b + 1);
        return r;
}

/* The comparison text of a setting (Setting.canon). Two settings with equal
 * canon give enroot the same value; different canon is drift. */
static char *conf_canon(Line *const *defs, size_t n, size_t w, bool *ret_dynamic) {
        const Line *l = defs[w];

        *ret_dynamic = false;
        if (!l->value) {
                /* Live shell: only the text is comparable, and when it evaluates
                 * empty the next definition wins, so the rest of the chain counts. */
                size_t total = 2;
                char *s, *p;

                for (size_t i = w; i < n; i++)
                        total += strlen(defs[i]->raw) + 1;
                s = malloc(total);
                if (!s)
                        return NULL;
                s[0] = '$'; /* never equal to a known value, which starts with '=' or '!' */
                p = s + 1;
                for (size_t i = w; i < n; i++) {
                        size_t k = strlen(defs[i]->raw);
                        memcpy(p, defs[i]->raw, k);
                        p += k;
                        *p++ = '\n';
                }
                *p = '\0';
                *ret_dynamic = true;
                return s;
        }
        /* config::fini unsets an ENROOT_ key whose value is false. */
        if (startswith(l->key, "ENROOT_") && conf_value_is_false(l->value))
                return strdup("!unset");
        /* An empty value leaves the key to the environment or enroot's default,
         * exactly as if the line were absent (${!1:-$2}). */
        if (!*l->value)
                return strdup("!empty");
        /* enroot tests boolean settings with [ -n "$VAR" ]: every true value is alike. */
        if (conf_key_is_boolean(l->key))
                return strdup("!yes");
        return prefixed("=", l->value);
}

static int build_settings(Document *d) {
        _cleanup_free_ Line **defs = NULL;
        size_t n = 0;

        for (size_t i = 0; i < d->n_lines; i++)
                if (d->lines[i].kind == LINE_SETTING)
                        n++;
        if (n == 0)
                return 0;

        defs = calloc(n, sizeof(Line *));
        d->settings = calloc(n, sizeof(Setting));
        if (!defs || !d->settings)
                return -ENOMEM;
        n = 0;
        for (size_t i = 0; i < d->n_lines; i++)
                if (d->lines[i].kind == LINE_SETTING)
                        defs[n++] = &d->lines[i];
        qsort(defs, n, sizeof(Line *), compare_line_ptr_key);

        for (size_t a = 0; a < n;) {
                size_t b = a, w;
                Setting *s = &d->settings[d->n_settings];
                bool dynamic = false;

                while (b < n && streq(defs[b]->key, defs[a]->key))
                        b++;

                if (d->type == DOC_CONF) {
                        /* export "$1=${!1:-$2}": the first definition that is not
                         * empty wins; an unknown (live) value counts as not empty. */
                        w = b - 1;
                        for (size_t i = a; i < b; i++)
                                if (!line_value_empty(defs[i])) {
                                        w = i;
                                        break;
                                }
                        s->canon = conf_canon(defs + a, b - a, w - a, &dynamic);
                } else {
                        /* environ.d: later lines override earlier ones. */
                        w = b - 1;
                        dynamic = !defs[w]->value;
                        s->canon = dynamic ? prefixed("$", defs[w]->raw)
                                           : prefixed("=", defs[w]->value);
                }
                if (!s->canon)
                        return -ENOMEM;

                defs[w]->wins = true;
                s->key = defs[w]->key;
                s->value = defs[w]->value ? defs[w]->value : defs[w]->raw;
                s->line = defs[w]->number;
                s->n_lines = (unsigned) (b - a);
                s->dynamic = dynamic;
                /* In environ.d an empty value is a real one: the job sees NAME="". */
                s->empty = d->type == DOC_CONF && !dynamic && !*s->value;
                s->unset = d->type == DOC_CONF && !dynamic && startswith(s->key, "ENROOT_") &&
                           conf_value_is_false(s->value);
                d->n_settings++;
                a = b;
        }

        if (d->n_settings > 0)
                qsort(d->settings, d->n_settings, sizeof(Setting), compare_settings);
        return 0;
}

int document_parse(DocType type, const char *data, size_t len, Document **ret) {
        _cleanup_(document_freep) Document *d = NULL;
        int r;

        if (type < 0 || type >= _DOC_TYPE_MAX)
                return -EINVAL;
        if (len > DOCUMENT_MAX_BYTES)
                return -EFBIG;

        d = calloc(1, sizeof(Document));
        if (!d)
                return -ENOMEM;
        d->type = type;
        d->size = len;

        r = content_sha256_hex(data, len, d->sha256);
        if (r < 0)
                return r;

        r = split_lines(d, data, len);
        if (r < 0)
                return r;

        /* enroot runs `bash -n` on a non-empty enroot.conf before reading it. */
        if (type == DOC_CONF && len > 0) {
                unsigned line = 0;
                const char *msg = NULL;

                if (shell_check_syntax(data, len, &line, &msg) < 0) {
                        d->syntax_line = line ? line : 1;
                        d->syntax_message = msg ? msg : "syntax error";
                }
        }

        r = build_settings(d);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(d);
        return 0;
}

const Setting *document_get(const Document *d, const char *key) {
        Setting k = {.key = key};
        if (d->n_settings == 0)
                return NULL;
        return bsearch(&k, d->settings, d->n_settings, sizeof(Setting), compare_settings);
}

bool document_is_refused(const Document *d) {
        return d->type == DOC_CONF && d->syntax_line > 0;
}
