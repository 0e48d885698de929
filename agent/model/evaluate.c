/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>

#include "diff.h"
#include "evaluate.h"
#include "lint.h"

DocType evaluate_doc_type(FileFormat format) {
        return format == FILE_FORMAT_ENROOT_ENV ? DOC_ENV : DOC_CONF;
}

static int set_detail(FileReport *f, const char *fmt, ...) _printf_(2, 3);
static int set_detail(FileReport *f, const char *fmt, ...) {
        va_list ap;
        int r;

        free(f->detail);
        f->detail = NULL;
        va_start(ap, fmt);
        r = vasprintf(&f->detail, fmt, ap);
        va_end(ap);
        if (r < 0) {
                f->detail = NULL;
                return -ENOMEM;
        }
        return 0;
}

/* What a read error means to the person who has to fix it. */
static const char *error_hint(int error) {
        switch (-error) {
        case EACCES:
        case EPERM:
                return "permission denied: the agent's user cannot read it";
        case EFBIG:
                return "larger than 1 MiB, the most a ConfigMap can hold";
        case EISDIR:
                return "it is a directory";
        case EBADFD:
                return "it is not a regular file (a FIFO, socket or device)";
        case EMEDIUMTYPE:
                return "it is on procfs or sysfs (kernel state, not a file); refusing to read it";
        case ELOOP:
                return "it is a symbolic link where a file was expected, or a link loop";
        case EXDEV:
                return "..data points outside the volume";
        case ETIMEDOUT:
                return "no answer from the file system within " STRINGIFY(
                        RUNNING_READ_DEADLINE_SEC) " s (a hung FUSE or NFS mount?)";
        case EINPROGRESS:
                return "not read: the read of another running file waits for its file system";
        default:
                return NULL;
        }
}

static int side_detail(FileReport *f, const EvalSide *s, FileState *ret_state) {
        const char *hint = error_hint(s->error);

        if (s->error == -ENOENT) {
                *ret_state = FILE_MISSING;
                return set_detail(f, "%s does not exist", s->what);
        }
        *ret_state = FILE_UNREADABLE;
        if (hint)
                return set_detail(f, "%s cannot be read: %s", s->what, hint);
        return set_detail(f, "%s cannot be read: %s", s->what, strerror(-s->error));
}

static int copy_changes(FileReport *f, const Diff *d) {
        if (d->n_keys == 0)
                return 0;
        f->changes = calloc(d->n_keys < REPORT_MAX_KEY_CHANGES ? d->n_keys : REPORT_MAX_KEY_CHANGES,
                            sizeof(KeyChange));
        if (!f->changes)
                return -ENOMEM;

        /* Effective changes first claim the bounded slots: they are what the
         * metrics and the condition name. */
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < d->n_keys; i++) {
                        const KeyDiff *k = &d->keys[i];
                        if (k->effective != (pass == 0))
                                continue;
                        if (f->n_changes >= REPORT_MAX_KEY_CHANGES) {
                                f->n_changes_dropped++;
                                continue;
                        }
                        f->changes[f->n_changes] = (KeyChange){
                                .key = strdup(k->key),
                                .change = k->change,
                                .effective = k->effective,
                        };
                        if (!f->changes[f->n_changes].key)
                                return -ENOMEM;
                        f->n_changes++;
                }
        f->n_drifted_keys = d->n_effective;
        return 0;
}

static int compare_changes(const void *a, const void *b) {
        return strcmp(((const KeyChange *) a)->key, ((const KeyChange *) b)->key);
}

static bool is_superseded(const EvalInput *in) {
        /* kubelet bind-mounts the subPath file of the version directory that was
         * current when the container started; once a newer version replaces it,
         * that inode is unlinked (st_nlink 0) and mountinfo shows its root with
         * the old version id and "//deleted". */
        if (in->nlink_known && in->nlink == 0)
                return true;
        if (in->mount_deleted)
                return true;
        return in->mount_version && in->desired_version &&
               !streq(in->mount_version, in->desired_version);
}

void eval_cache_done(EvalCache *c) {
        free(c->data);
        document_free(c->doc);
        *c = (EvalCache){.hits = c->hits, .misses = c->misses};
}

static bool cache_holds(const EvalCache *c, DocType type, const char *data, size_t len) {
        return c && c->doc && c->type == type && c->len == len &&
               (len == 0 || memcmp(c->data, data, len) == 0);
}

/* Parses and lints one side, or finds both in the cache. *ret_doc is
 * borrowed from the cache, or owned through *ret_owned. */
static int parse_side(const EvalInput *in, int side, const Document **ret_doc, Document **ret_owned,
                      size_t lint[static _SEVERITY_MAX]) {
        const EvalSide *s = &in->side[side];
        EvalCache *c = in->cache[side];
        _cleanup_(lint_freep) Lint *l = NULL;
        Document *doc = NULL;
        int r;

        if (cache_holds(c, in->type, s->data, s->len)) {
                c->hits++;
                memcpy(lint, c->lint, sizeof c->lint);
                *ret_doc = c->doc;
                return 0;
        }

        r = document_parse(in->type, s->data, s->len, &doc);
        if (r < 0)
                return r;
        r = lint_document(doc, NULL, &l);
        if (r < 0) {
                document_free(doc);
                return r;
        }
        memset(lint, 0, sizeof(size_t) * _SEVERITY_MAX);
        lint[SEVERITY_ERROR] = l->n_errors;
        lint[SEVERITY_WARNING] = l->n_warnings;

        if (c) {
                char *copy = NULL;

                c->misses++;
                if (s->len <= EVAL_CACHE_MAX_BYTES && (copy = malloc(s->len ? s->len : 1))) {
                        if (s->len > 0)
                                memcpy(copy, s->data, s->len);
                        eval_cache_done(c);
                        c->data = copy;
                        c->len = s->len;
                        c->type = in->type;
                        c->doc = doc;
                        memcpy(c->lint, lint, sizeof c->lint);
                        *ret_doc = doc;
                        return 0;
                }
                /* too large to keep, or no memory for a copy: what the cache
                 * held is stale either way */
                eval_cache_done(c);
        }
        *ret_doc = doc;
        *ret_owned = doc;
        return 0;
}

static void document_pair_free(Document *(*docs)[_SIDE_MAX]) {
        for (int s = 0; s < _SIDE_MAX; s++)
                document_free((*docs)[s]);
}

/* Side s was read: its version kept for the report. */
static int mark_read(const EvalInput *in, int s, FileReport *f) {
        if (in->side[s].version) {
                f->version[s] = strdup(in->side[s].version);
                if (!f->version[s])
                        return -ENOMEM;
        }
        f->read[s] = true;
        return 0;
}

static int evaluate_content(const EvalInput *in, FileReport *f) {
        _cleanup_(document_pair_free) Document *owned[_SIDE_MAX] = {};
        const Document *doc[_SIDE_MAX] = {};
        _cleanup_(diff_freep) Diff *d = NULL;
        int r;

        for (int s = 0; s < _SIDE_MAX; s++) {
                size_t lint[_SEVERITY_MAX];

                r = parse_side(in, s, &doc[s], &owned[s], lint);
                if (r == -EFBIG) {
                        f->state = FILE_UNREADABLE;
                        return set_detail(f, "%s cannot be read: %s", in->side[s].what,
                                          error_hint(r));
                }
                if (r < 0)
                        return r;
                if (in->content_key) {
                        r = document_content_id(doc[s], in->content_key, f->content_id[s]);
                        if (r < 0)
                                return r;
                }
                r = mark_read(in, s, f);
                if (r < 0)
                        return r;
                f->lint[s][SEVERITY_ERROR] = lint[SEVERITY_ERROR];
                f->lint[s][SEVERITY_WARNING] = lint[SEVERITY_WARNING];
        }

        r = diff_documents(doc[SIDE_DESIRED], doc[SIDE_RUNNING], &d);
        if (r < 0)
                return r;
        r = copy_changes(f, d);
        if (r < 0)
                return r;
        if (f->n_changes > 0)
                qsort(f->changes, f->n_changes, sizeof(KeyChange), compare_changes);

        /* The ConfigMap itself is broken: enroot would refuse or misread it
         * whatever the pod runs. That is the operator's problem to fix first. */
        if (f->lint[SIDE_DESIRED][SEVERITY_ERROR] > 0) {
                f->state = FILE_INVALID;
                return set_detail(f,
                                  "%s has %zu lint error(s): run \"aicr-enroot-agent lint\" on "
                                  "it",
                                  in->side[SIDE_DESIRED].what,
                                  f->lint[SIDE_DESIRED][SEVERITY_ERROR]);
        }
        switch (d->verdict) {
        case DIFF_SAME:
                f->state = FILE_CURRENT;
                break;
        case DIFF_COSMETIC:
                f->state = FILE_COSMETIC;
                break;
        default:
                f->state = FILE_DRIFTED;
        }
        return 0;
}

/* A raw file: its bytes, by SHA-256, and nothing else. No document, no
 * lint, no key changes: what the bytes mean is the workload's business. */
static int evaluate_raw(const EvalInput *in, FileReport *f) {
        char sha[_SIDE_MAX][65];
        int r;

        for (int s = 0; s < _SIDE_MAX; s++) {
                /* The readers stop at DOCUMENT_MAX_BYTES already; a caller
                 * handing more gets the same answer. */
                if (in->side[s].len > DOCUMENT_MAX_BYTES) {
                        f->state = FILE_UNREADABLE;
                        return set_detail(f, "%s cannot be read: %s", in->side[s].what,
                                          error_hint(-EFBIG));
                }
                r = content_sha256_hex(in->side[s].data ? in->side[s].data : "", in->side[s].len,
                                       sha[s]);
                if (r < 0)
                        return r;
                if (in->content_key) {
                        r = content_id_of_sha256(sha[s], in->content_key, f->content_id[s]);
                        if (r < 0)
                                return r;
                }
                r = mark_read(in, s, f);
                if (r < 0)
                        return r;
        }
        f->state = streq(sha[SIDE_DESIRED], sha[SIDE_RUNNING]) ? FILE_CURRENT : FILE_DRIFTED;
        return 0;
}

int evaluate_file(const EvalInput *in, const FileReport *prev, uint64_t now_usec, FileReport *ret) {
        _cleanup_(file_report_done) FileReport f = {};
        int r;

        f.key = strdup(in->key);
        f.running_path = strdup(in->running_path);
        f.format = in->format;
        if (!f.key || !f.running_path)
                return -ENOMEM;
        if (in->mount_version) {
                f.mount_version = strdup(in->mount_version);
                if (!f.mount_version)
                        return -ENOMEM;
        }
        /* The agent's own mount says nothing about the workload's then. */
        f.superseded = !in->unverifiable && is_superseded(in);

        /* A side that cannot be read decides the state; the desired side first:
         * without it nothing can be judged. */
        if (in->running_unobservable) {
                f.state = FILE_UNKNOWN;
                r = set_detail(&f, "%s", in->running_unobservable);
        } else if (in->side[SIDE_DESIRED].error < 0)
                r = side_detail(&f, &in->side[SIDE_DESIRED], &f.state);
        else if (in->unverifiable) {
                f.state = FILE_UNVERIFIABLE;
                r = set_detail(&f, "%s", in->unverifiable);
        } else if (in->side[SIDE_RUNNING].error < 0)
                r = side_detail(&f, &in->side[SIDE_RUNNING], &f.state);
        else if (in->format == FILE_FORMAT_RAW)
                r = evaluate_raw(in, &f);
        else
                r = evaluate_content(in, &f);
        if (r < 0)
                return r;

        if (prev && prev->state == f.state) {
                f.state_since_usec = prev->state_since_usec;
                f.drift_since_usec = prev->drift_since_usec;
        } else {
                f.state_since_usec = now_usec;
                f.drift_since_usec = f.state == FILE_DRIFTED ? now_usec : 0;
        }

        *ret = f;
        f = (FileReport){};
        return 0;
}

int evaluate_describe(const FileReport *f, StrBuf *out) {
        int r;

        r = strbuf_printf(out, "%s: %s", f->key, file_state_to_string(f->state));
        if (r < 0)
                return r;
        if (f->state == FILE_DRIFTED || f->state == FILE_INVALID) {
                for (DiffChange c = 0; c < _CHANGE_MAX; c++) {
                        size_t n = 0;
                        for (size_t i = 0; i < f->n_changes; i++)
                                n += f->changes[i].effective && f->changes[i].change == c;
                        if (n == 0)
                                continue;
                        r = strbuf_printf(out, "; %zu %s:", n, diff_change_to_string(c));
                        for (size_t i = 0; r >= 0 && i < f->n_changes; i++)
                                if (f->changes[i].effective && f->changes[i].change == c)
                                        r = strbuf_printf(out, " %s", f->changes[i].key);
                        if (r < 0)
                                return r;
                }
                if (f->n_changes_dropped > 0) {
                        r = strbuf_printf(out, "; %zu more", f->n_changes_dropped);
                        if (r < 0)
                                return r;
                }
        }
        if (f->detail) {
                r = strbuf_printf(out, " (%s)", f->detail);
                if (r < 0)
                        return r;
        }
        if (f->superseded)
                r = strbuf_printf(out, "; the running mount is from a superseded version%s%s",
                                  f->mount_version ? " " : "",
                                  f->mount_version ? f->mount_version : "");
        return r;
}
