/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A ConfigMap's data keys (configmap.h), checked as the API server checks
 * them (IsConfigMapKey). Duplicate object keys are refused because the API
 * server never prints them and JSON readers disagree on which one wins.
 */
#include <assert.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "configmap.h"
#include "strbuf.h"

/* Error messages are for a terminal: long keys and kinds are cut. */
#define SHOWN_MAX_BYTES 64u
#define ERROR_MAX_BYTES 1024u

#define NO_ITEM         SIZE_MAX

typedef struct Parser {
        ConfigMapSet *set;
        size_t n_alloc;
        size_t item;  /* index in "items" of the ConfigMap being read, NO_ITEM at top level */
        char **error; /* where a failure puts its message; NULL when the caller wants none */
} Parser;

static void entry_done(ConfigMapEntry *e) {
        free(e->configmap);
        free(e->key);
        free(e->value);
}

ConfigMapSet *configmap_set_free(ConfigMapSet *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_entries; i++)
                entry_done(&s->entries[i]);
        free(s->entries);
        free(s);
        return NULL;
}

static bool is_identifier(const char *s) {
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
                return false;
        for (s++; *s; s++)
                if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                      (*s >= '0' && *s <= '9')))
                        return false;
        return true;
}

/* Appends s as a double-quoted string a terminal can show: control bytes and
 * bytes above ASCII escaped, at most SHOWN_MAX_BYTES of it. */
static int put_quoted(StrBuf *b, const char *s, size_t len) {
        size_t n = len > SHOWN_MAX_BYTES ? SHOWN_MAX_BYTES : len;
        int r;

        r = strbuf_putc(b, '"');
        for (size_t i = 0; r >= 0 && i < n; i++) {
                unsigned char c = (unsigned char) s[i];

                if (c == '"' || c == '\\')
                        r = strbuf_printf(b, "\\%c", c);
                else if (c < 0x20 || c >= 0x7f)
                        r = strbuf_printf(b, "\\x%02x", c);
                else
                        r = strbuf_putc(b, (char) c);
        }
        if (r >= 0)
                r = strbuf_puts(b, n < len ? "\"..." : "\"");
        return r;
}

/* Hands the message over to the caller. Returns error, or -ENOMEM when the
 * message could not be built (-ENOBUFS only means it was cut at the cap). */
static int set_error(Parser *p, StrBuf *b, int r, int error) {
        char *s;

        if (r < 0 && r != -ENOBUFS) {
                strbuf_done(b);
                return r;
        }
        s = strbuf_steal(b);
        if (!s)
                return -ENOMEM;
        free(*p->error);
        *p->error = s;
        return error;
}

/* Records a failure of the whole input, without a path. */
static int fail_input(Parser *p, int error, const char *fmt, ...) _printf_(3, 4);
static int fail_input(Parser *p, int error, const char *fmt, ...) {
        StrBuf b = STRBUF_INIT(ERROR_MAX_BYTES);
        va_list ap;
        int r;

        if (!p->error)
                return error;

        va_start(ap, fmt);
        r = strbuf_vprintf(&b, fmt, ap);
        va_end(ap);
        return set_error(p, &b, r, error);
}

/* Records a failure at field (and key inside it) of the ConfigMap being read:
 * "items[1].data.foo: message", or "top level: message" without field and item. */
static int fail(Parser *p, int error, const char *field, const char *key, const char *fmt, ...)
        _printf_(5, 6);
static int fail(Parser *p, int error, const char *field, const char *key, const char *fmt, ...) {
        StrBuf b = STRBUF_INIT(ERROR_MAX_BYTES);
        va_list ap;
        int r = 0;

        if (!p->error)
                return error;

        if (p->item != NO_ITEM)
                r = strbuf_printf(&b, "items[%zu]", p->item);
        if (r >= 0 && field)
                r = strbuf_printf(&b, "%s%s", b.len > 0 ? "." : "", field);
        if (r >= 0 && key) {
                if (is_identifier(key) && strlen(key) <= SHOWN_MAX_BYTES)
                        r = strbuf_printf(&b, ".%s", key);
                else {
                        r = strbuf_putc(&b, '[');
                        if (r >= 0)
                                r = put_quoted(&b, key, strlen(key));
                        if (r >= 0)
                                r = strbuf_putc(&b, ']');
                }
        }
        if (r >= 0)
                r = strbuf_puts(&b, b.len > 0 ? ": " : "top level: ");
        if (r >= 0) {
                va_start(ap, fmt);
                r = strbuf_vprintf(&b, fmt, ap);
                va_end(ap);
        }
        return set_error(p, &b, r, error);
}

/* A failure whose message quotes a string taken from the input (a kind). */
static int fail_quoting(Parser *p, const char *field, const char *prefix, const json_t *s,
                        const char *suffix) {
        StrBuf b = STRBUF_INIT(ERROR_MAX_BYTES);
        int r;

        if (!p->error)
                return -EINVAL;

        r = strbuf_puts(&b, prefix);
        if (r >= 0)
                r = put_quoted(&b, json_string_value(s), json_string_length(s));
        if (r >= 0)
                r = strbuf_puts(&b, suffix);
        if (r < 0) {
                strbuf_done(&b);
                return r;
        }
        r = fail(p, -EINVAL, field, NULL, "%s", strbuf_str(&b));
        strbuf_done(&b);
        return r;
}

/* kube-apiserver's IsConfigMapKey (k8s.io/apimachinery pkg/util/validation):
 * [-._a-zA-Z0-9]+, at most 253 bytes, not ".", ".." or starting with "..".
 * Keys become file names in the volume, so this also keeps paths sane. */
static int check_key(Parser *p, const char *field, const char *key) {
        size_t n = strlen(key);

        if (n == 0)
                return fail(p, -EINVAL, field, key, "empty key");
        if (n > CONFIGMAP_MAX_KEY_BYTES)
                return fail(p, -EINVAL, field, key,
                            "key is %zu bytes, over the API server's limit of %u bytes", n,
                            CONFIGMAP_MAX_KEY_BYTES);
        for (const char *c = key; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.'))
                        return fail(p, -EINVAL, field, key,
                                    "not a valid ConfigMap key: only letters, digits, '-', "
                                    "'_' and '.' are allowed");
        if (streq(key, ".") || startswith(key, ".."))
                return fail(p, -EINVAL, field, key,
                            "not a valid ConfigMap key: it must not be '.', '..' or start "
                            "with '..'");
        return 0;
}

/* A member that is absent or null counts as absent, as in Go's decoder that
 * kubectl and the API server use. */
static json_t *get_member(const json_t *o, const char *name) {
        json_t *v = json_object_get(o, name);
        return json_is_null(v) ? NULL : v;
}

static int add_entry(Parser *p, const char *configmap, const char *key, const json_t *value) {
        ConfigMapSet *s = p->set;
        ConfigMapEntry e = {};
        size_t len = json_string_length(value);

        if (s->n_entries >= CONFIGMAP_MAX_ENTRIES)
                return fail(p, -E2BIG, "data", key,
                            "more than %u entries in all (CONFIGMAP_MAX_ENTRIES): "
                            "this is not an enroot configuration",
                            CONFIGMAP_MAX_ENTRIES);

        if (s->n_entries == p->n_alloc) {
                size_t n = p->n_alloc ? p->n_alloc * 2 : 8;
                ConfigMapEntry *a;

                if (n > CONFIGMAP_MAX_ENTRIES)
                        n = CONFIGMAP_MAX_ENTRIES;
                a = reallocarray(s->entries, n, sizeof(*a));
                if (!a)
                        return -ENOMEM;
                s->entries = a;
                p->n_alloc = n;
        }

        e.configmap = strdup(configmap);
        e.key = strdup(key);
        /* json_string_value() is NUL-terminated even when the value holds NULs. */
        e.value = malloc(len + 1);
        if (!e.configmap || !e.key || !e.value) {
                entry_done(&e);
                return -ENOMEM;
        }
        memcpy(e.value, json_string_value(value), len + 1);
        e.len = len;

        s->entries[s->n_entries++] = e;
        return 0;
}

static int read_name(Parser *p, const json_t *cm, const char **ret) {
        const json_t *metadata, *name;

        metadata = get_member(cm, "metadata");
        if (!metadata) {
                *ret = "";
                return 0;
        }
        if (!json_is_object(metadata))
                return fail(p, -EINVAL, "metadata", NULL, "not an object");

        name = get_member(metadata, "name");
        if (!name) {
                *ret = "";
                return 0;
        }
        if (!json_is_string(name))
                return fail(p, -EINVAL, "metadata.name", NULL, "not a string");
        if (strlen(json_string_value(name)) != json_string_length(name))
                return fail(p, -EINVAL, "metadata.name", NULL, "contains a NUL byte");

        *ret = json_string_value(name);
        return 0;
}

static int read_configmap(Parser *p, const json_t *cm) {
        json_t *data, *binary, *value;
        const char *name = NULL, *key;
        int r;

        r = read_name(p, cm, &name);
        if (r < 0)
                return r;

        data = get_member(cm, "data");
        if (data && !json_is_object(data))
                return fail(p, -EINVAL, "data", NULL, "not an object");
        binary = get_member(cm, "binaryData");
        if (binary && !json_is_object(binary))
                return fail(p, -EINVAL, "binaryData", NULL, "not an object");

        /* jansson keeps object members in document order. */
        json_object_foreach(data, key, value) {
                r = check_key(p, "data", key);
                if (r < 0)
                        return r;
                if (!json_is_string(value))
                        return fail(p, -EINVAL, "data", key, "value is not a string");
                r = add_entry(p, name, key, value);
                if (r < 0)
                        return r;
        }

        json_object_foreach(binary, key, value) {
                r = check_key(p, "binaryData", key);
                if (r < 0)
                        return r;
                /* The API server refuses a key in both; which file would the volume hold? */
                if (data && json_object_get(data, key))
                        return fail(p, -EINVAL, "binaryData", key, "key is also in data");
                p->set->n_binary++;
        }

        return 0;
}

static int read_list(Parser *p, const json_t *list) {
        json_t *items, *item, *kind;
        size_t i;
        int r;

        items = get_member(list, "items");
        if (!items)
                return 0;
        if (!json_is_array(items))
                return fail(p, -EINVAL, "items", NULL, "not an array");

        json_array_foreach(items, i, item) {
                p->item = i;
                if (!json_is_object(item))
                        return fail(p, -EINVAL, NULL, NULL, "not an object");

                /* The API's ConfigMapList leaves kind out of its items; kubectl's List sets it. */
                kind = get_member(item, "kind");
                if (kind && !json_is_string(kind))
                        return fail(p, -EINVAL, "kind", NULL, "not a string");
                if (kind && !streq(json_string_value(kind), "ConfigMap"))
                        return fail_quoting(p, "kind", "", kind, " is not a ConfigMap");

                r = read_configmap(p, item);
                if (r < 0)
                        return r;
        }
        p->item = NO_ITEM;
        return 0;
}

static int read_root(Parser *p, const json_t *root) {
        const json_t *kind;
        const char *k;

        if (!json_is_object(root))
                return fail(p, -EINVAL, NULL, NULL,
                            "an array, not a ConfigMap or a List of ConfigMaps");

        kind = get_member(root, "kind");
        if (!kind) {
                /* A hand-written ConfigMap may leave kind out; anything else is a guess. */
                if (get_member(root, "data") || get_member(root, "binaryData"))
                        return read_configmap(p, root);
                return fail(p, -EINVAL, NULL, NULL,
                            "no \"kind\" and no \"data\": not a ConfigMap or a List of "
                            "ConfigMaps");
        }
        if (!json_is_string(kind))
                return fail(p, -EINVAL, "kind", NULL, "not a string");

        k = json_string_value(kind);
        if (streq(k, "ConfigMap"))
                return read_configmap(p, root);
        if (streq(k, "List") || streq(k, "ConfigMapList"))
                return read_list(p, root);
        return fail_quoting(p, "kind", "", kind,
                            " is neither ConfigMap nor List: pass a ConfigMap "
                            "(kubectl get configmap NAME -o json)");
}

/* jansson's message ends in " near '<token>'", and the token can be part of a
 * value: drop it, the line and column say where. A duplicate's token is a key:
 * keep that one. */
static int fail_syntax(Parser *p, const json_error_t *e) {
        char text[sizeof(e->text)];
        char *near;

        memcpy(text, e->text, sizeof(text));
        text[sizeof(text) - 1] = '\0';
        near = strstr(text, " near '");
        if (near && !startswith(text, "duplicate object key"))
                *near = '\0';

        return fail_input(p, -EINVAL, "line %d, column %d: %s", e->line, e->column, text);
}

static int parse(Parser *p, const char *json, size_t len) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        json_error_t e;

        if (len > CONFIGMAP_MAX_JSON_BYTES)
                return fail_input(p, -EFBIG,
                                  "the JSON is %zu bytes, over the limit of %u bytes "
                                  "(CONFIGMAP_MAX_JSON_BYTES)",
                                  len, CONFIGMAP_MAX_JSON_BYTES);

        /* JSON_ALLOW_NUL: a value may hold \u0000 (json_string_length() counts it).
         * jansson refuses nesting deeper than 2048, so its recursion is bounded. */
        root = json_loadb(json ? json : "", len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &e);
        if (!root) {
                if (json_error_code(&e) == json_error_out_of_memory)
                        return -ENOMEM;
                return fail_syntax(p, &e);
        }

        return read_root(p, root);
}

int configmap_parse(const char *json, size_t len, ConfigMapSet **ret, char **ret_error) {
        _cleanup_(configmap_set_freep) ConfigMapSet *set = NULL;
        _cleanup_free_ char *error = NULL;
        Parser p = {.item = NO_ITEM, .error = ret_error ? &error : NULL};
        int r;

        assert(ret);
        assert(json || len == 0);

        set = calloc(1, sizeof(*set));
        if (!set)
                return -ENOMEM;
        p.set = set;

        r = parse(&p, json, len);
        if (r < 0) {
                /* error is set exactly for the failures that have a message. */
                if (ret_error && error)
                        *ret_error = TAKE_PTR(error);
                return r;
        }

        *ret = TAKE_PTR(set);
        return 0;
}
