/* SPDX-License-Identifier: Apache-2.0 */
/* The YAML subset of mini-yaml.h: lines first (indentation, comments), then a
 * recursive descent over the lines of one document. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "mini-yaml.h"

typedef struct Line {
        unsigned no;   /* 1-based, for errors */
        size_t indent; /* columns before text */
        char *text;    /* no indentation, no comment, no trailing blanks */
} Line;

typedef struct Parser {
        Line *lines;
        size_t n, i;
        char *error;
} Parser;

static int fail(Parser *p, unsigned no, const char *fmt, ...) _printf_(3, 4);
static int fail(Parser *p, unsigned no, const char *fmt, ...) {
        _cleanup_free_ char *m = NULL;
        va_list ap;
        int k;

        if (p->error)
                return -EINVAL; /* the first error is the one to report */
        va_start(ap, fmt);
        k = vasprintf(&m, fmt, ap);
        va_end(ap);
        if (k < 0 || asprintf(&p->error, "line %u: %s", no, m) < 0) {
                p->error = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}

/* The end of a quoted scalar starting at s (at the quote), or NULL. */
static const char *quote_end(const char *s) {
        char q = *s;

        for (s++; *s; s++) {
                if (q == '"' && *s == '\\' && s[1])
                        s++;
                else if (*s == q) {
                        if (q == '\'' && s[1] == '\'')
                                s++; /* '' is a quote inside '...' */
                        else
                                return s;
                }
        }
        return NULL;
}

/* Cuts a comment ("#" at the start or after a blank, outside quotes) and
 * trailing blanks, in place. */
static void strip_comment(char *s) {
        char *end;

        for (char *c = s; *c; c++) {
                if ((*c == '"' || *c == '\'') && (c == s || strchr(" [,:-", c[-1]))) {
                        const char *e = quote_end(c);

                        if (!e)
                                break; /* the scalar reader reports it */
                        c += e - c;    /* the closing quote */
                } else if (*c == '#' && (c == s || c[-1] == ' ')) {
                        *c = '\0';
                        break;
                }
        }
        end = s + strlen(s);
        while (end > s && (end[-1] == ' ' || end[-1] == '\r'))
                *--end = '\0';
}

/* A scalar from s[0..n) (already trimmed) as a new JSON string. */
static int scalar(Parser *p, unsigned no, const char *s, size_t n, json_t **ret) {
        _cleanup_free_ char *out = malloc(n + 1);
        size_t o = 0;

        if (!out)
                return -ENOMEM;
        if (n > 0 && (*s == '"' || *s == '\'')) {
                const char *e = quote_end(s);

                if (!e || (size_t) (e - s) != n - 1)
                        return fail(p, no, "a quoted scalar must end where the value ends");
                for (const char *c = s + 1; c < e; c++) {
                        if (*s == '\'' && *c == '\'')
                                c++;
                        else if (*s == '"' && *c == '\\') {
                                c++;
                                switch (*c) {
                                case '"':
                                case '\\':
                                case '/':
                                        break;
                                case 'n':
                                        out[o++] = '\n';
                                        continue;
                                case 't':
                                        out[o++] = '\t';
                                        continue;
                                default:
                                        return fail(p, no, "escape \\%c is not supported", *c);
                                }
                        }
                        out[o++] = *c;
                }
        } else {
                if (n > 0 && strchr("&*!|>{%@`", *s))
                        return fail(p, no,
                                    "\"%c\" (anchor, alias, tag, block scalar, flow "
                                    "mapping or reserved) is not supported",
                                    *s);
                for (size_t i = 0; i < n; i++)
                        if ((s[i] == ':' && (i + 1 == n || s[i + 1] == ' ')) ||
                            (s[i] == '#' && i > 0 && s[i - 1] == ' '))
                                return fail(p, no, "a plain scalar cannot hold \": \"; quote it");
                memcpy(out, s, n);
                o = n;
        }
        out[o] = '\0';
        *ret = json_string(out);
        return *ret ? 0 : -ENOMEM;
}

/* A flow sequence of scalars on one line: "[a, 'b', \"c\"]". */
static int flow_sequence(Parser *p, unsigned no, const char *s, json_t **ret) {
        _cleanup_(json_decrefp) json_t *a = json_array();
        const char *c = s + 1;

        if (!a)
                return -ENOMEM;
        for (;;) {
                const char *start, *end;
                json_t *v;
                int k;

                while (*c == ' ')
                        c++;
                if (*c == ']' && json_array_size(a) == 0)
                        break;
                start = c;
                if (*c == '"' || *c == '\'') {
                        end = quote_end(c);
                        if (!end)
                                return fail(p, no, "unterminated quoted scalar");
                        c = end + 1;
                } else {
                        if (*c == '[' || *c == '{')
                                return fail(p, no, "nested flow collections are not supported");
                        while (*c && *c != ',' && *c != ']')
                                c++;
                }
                end = c;
                while (end > start && end[-1] == ' ')
                        end--;
                if (end == start)
                        return fail(p, no, "an empty entry in a flow sequence");
                k = scalar(p, no, start, (size_t) (end - start), &v);
                if (k < 0)
                        return k;
                if (json_array_append_new(a, v) < 0)
                        return -ENOMEM;
                while (*c == ' ')
                        c++;
                if (*c == ',') {
                        c++;
                        continue;
                }
                if (*c == ']')
                        break;
                return fail(p, no, "a flow sequence must end with \"]\" on its line");
        }
        if (c[1] != '\0')
                return fail(p, no, "text after a flow sequence");
        *ret = TAKE_PTR(a);
        return 0;
}

/* A value written after "key:" or "- ": a flow sequence or a scalar. */
static int inline_value(Parser *p, unsigned no, const char *s, json_t **ret) {
        if (*s == '[')
                return flow_sequence(p, no, s, ret);
        return scalar(p, no, s, strlen(s), ret);
}

static bool is_dash(const char *t) {
        return t[0] == '-' && (t[1] == '\0' || t[1] == ' ');
}

/* The length of the key of a "key: value" or "key:" line, or 0 when t is not
 * one. */
static size_t key_length(const char *t) {
        if (*t == '"' || *t == '\'') {
                const char *e = quote_end(t);

                return e && e[1] == ':' && (e[2] == '\0' || e[2] == ' ') ? (size_t) (e + 1 - t) : 0;
        }
        if (*t == '[' || *t == '-' || *t == '?')
                return 0;
        for (const char *c = t; *c; c++)
                if (*c == ':' && (c[1] == '\0' || c[1] == ' '))
                        return (size_t) (c - t);
        return 0;
}

static int node(Parser *p, json_t **ret);

static int sequence(Parser *p, size_t indent, json_t **ret) {
        _cleanup_(json_decrefp) json_t *a = json_array();

        if (!a)
                return -ENOMEM;
        while (p->i < p->n && p->lines[p->i].indent == indent && is_dash(p->lines[p->i].text)) {
                Line *l = &p->lines[p->i];
                size_t skip = 1;
                json_t *v = NULL;
                int k;

                while (l->text[skip] == ' ')
                        skip++;
                if (l->text[skip] == '\0') {
                        p->i++;
                        if (p->i < p->n && p->lines[p->i].indent > indent)
                                k = node(p, &v);
                        else
                                k = (v = json_null()) ? 0 : -ENOMEM;
                } else if (key_length(l->text + skip) > 0 || is_dash(l->text + skip)) {
                        /* "- key: value": a mapping whose first entry shares the
                         * dash's line, the others below at the key's column */
                        l->indent += skip;
                        l->text += skip;
                        k = node(p, &v);
                } else {
                        k = inline_value(p, l->no, l->text + skip, &v);
                        p->i++;
                }
                if (k < 0)
                        return k;
                if (json_array_append_new(a, v) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(a);
        return 0;
}

static int mapping(Parser *p, size_t indent, json_t **ret) {
        _cleanup_(json_decrefp) json_t *o = json_object();

        if (!o)
                return -ENOMEM;
        while (p->i < p->n && p->lines[p->i].indent == indent && !is_dash(p->lines[p->i].text)) {
                Line *l = &p->lines[p->i];
                size_t klen = key_length(l->text);
                const char *rest;
                json_t *key = NULL, *v = NULL;
                int k;

                if (klen == 0)
                        return fail(p, l->no, "expected \"key: value\"");
                k = scalar(p, l->no, l->text, klen, &key);
                if (k < 0)
                        return k;
                if (json_object_get(o, json_string_value(key))) {
                        k = fail(p, l->no, "duplicate key \"%s\"", json_string_value(key));
                        json_decref(key);
                        return k;
                }
                rest = l->text + klen + 1;
                while (*rest == ' ')
                        rest++;
                p->i++;
                if (*rest)
                        k = inline_value(p, l->no, rest, &v);
                else if (p->i < p->n &&
                         (p->lines[p->i].indent > indent ||
                          (p->lines[p->i].indent == indent && is_dash(p->lines[p->i].text))))
                        k = node(p, &v); /* a nested block, or a sequence at the key's column */
                else
                        k = (v = json_null()) ? 0 : -ENOMEM;
                if (k >= 0 && json_object_set_new(o, json_string_value(key), v) < 0)
                        k = -ENOMEM;
                json_decref(key);
                if (k < 0)
                        return k;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

/* The block that starts at the current line, which sets its indentation. */
static int node(Parser *p, json_t **ret) {
        const Line *l = &p->lines[p->i];
        size_t indent = l->indent;
        int k;

        if (is_dash(l->text))
                k = sequence(p, indent, ret);
        else if (key_length(l->text) > 0)
                k = mapping(p, indent, ret);
        else
                return fail(p, l->no, "a bare scalar where a mapping or sequence belongs");
        if (k < 0)
                return k;
        /* what follows must close this block: back to an outer indentation */
        if (p->i < p->n && p->lines[p->i].indent > indent) {
                json_decref(*ret);
                *ret = NULL;
                return fail(p, p->lines[p->i].no, "unexpected indentation");
        }
        return 0;
}

/* One document: lines [from, to) of all. */
static int document(Parser *p, Line *lines, size_t n, json_t *docs) {
        json_t *v = NULL;
        int k;

        if (n == 0)
                return 0;
        p->lines = lines;
        p->n = n;
        p->i = 0;
        k = node(p, &v);
        if (k < 0)
                return k;
        if (p->i < p->n) {
                json_decref(v);
                return fail(p, p->lines[p->i].no, "unexpected indentation");
        }
        return json_array_append_new(docs, v) < 0 ? -ENOMEM : 0;
}

int mini_yaml_parse(const char *data, size_t len, json_t **ret_docs, char **ret_error) {
        _cleanup_(json_decrefp) json_t *docs = json_array();
        _cleanup_free_ char *copy = NULL;
        _cleanup_free_ Line *lines = NULL;
        Parser p = {};
        size_t n = 0, cap = 0, doc_start = 0;
        unsigned no = 0;
        char *save = NULL;
        int k = 0;

        if (!docs || !(copy = strndup(data, len)))
                return -ENOMEM;
        if (strlen(copy) != len) {
                *ret_error = strdup("line 1: a NUL byte in the file");
                return *ret_error ? -EINVAL : -ENOMEM;
        }
        /* strsep, not strtok: empty lines count for the line numbers */
        save = copy;
        for (char *line; (line = strsep(&save, "\n"));) {
                size_t indent = 0;

                no++;
                while (line[indent] == ' ')
                        indent++;
                if (line[indent] == '\t') {
                        k = fail(&p, no, "a tab in the indentation");
                        break;
                }
                strip_comment(line + indent);
                if (line[indent] == '\0')
                        continue;
                if (indent == 0 && (streq(line, "---") || streq(line, "..."))) {
                        k = document(&p, lines + doc_start, n - doc_start, docs);
                        if (k < 0)
                                break;
                        doc_start = n;
                        continue;
                }
                if (indent == 0 && (line[0] == '%' || startswith(line, "--- "))) {
                        k = fail(&p, no,
                                 "directives and content on a \"---\" line are not "
                                 "supported");
                        break;
                }
                if (n == cap) {
                        Line *bigger = realloc(lines, (cap = cap ? 2 * cap : 64) * sizeof *lines);

                        if (!bigger) {
                                k = -ENOMEM;
                                break;
                        }
                        lines = bigger;
                }
                lines[n++] = (Line){.no = no, .indent = indent, .text = line + indent};
        }
        if (k >= 0)
                k = document(&p, lines + doc_start, n - doc_start, docs);
        if (k < 0) {
                if (k == -EINVAL)
                        *ret_error = TAKE_PTR(p.error);
                free(p.error);
                return k;
        }
        *ret_docs = TAKE_PTR(docs);
        return 0;
}
