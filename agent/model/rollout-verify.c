/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rollout's checks of the enroot ConfigMap and of a job's environment
 * (rollout-verify.h).
 */
#include <ctype.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "document.h"
#include "rollout-verify.h"

int rollout_configmap_owner(const json_t *cm, const char *release, const char **ret_found) {
        const json_t *a = json_object_get(json_object_get(cm, "metadata"), "annotations");
        const char *v = json_string_value(json_object_get(a, ROLLOUT_HELM_RELEASE_ANNOTATION));

        if (!v)
                return -ENOENT;
        if (!streq(v, release)) {
                if (ret_found)
                        *ret_found = v;
                return -EPERM;
        }
        return 0;
}

void rollout_env_check_done(RolloutEnvCheck *c) {
        char **lists[] = {c->differ, c->missing, c->dynamic};
        size_t ns[] = {c->n_differ, c->n_missing, c->n_dynamic};

        for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
                for (size_t i = 0; i < ns[l]; i++)
                        free(lists[l][i]);
                free(lists[l]);
        }
        *c = (RolloutEnvCheck){};
}

static int digest(const char *data, size_t len, unsigned char ret[static 32]) {
        unsigned int n = 0;

        if (EVP_Digest(data, len, ret, &n, EVP_sha256(), NULL) != 1 || n != 32)
                return -EIO;
        return 0;
}

static int push(char ***list, size_t *n, const char *key) {
        char **l = realloc(*list, (*n + 1) * sizeof(char *));

        if (!l)
                return -ENOMEM;
        *list = l;
        l[*n] = strdup(key);
        if (!l[*n])
                return -ENOMEM;
        (*n)++;
        return 0;
}

/* The length of NAME in "NAME=..." at line, or 0 when line does not start so. */
static size_t name_len(const char *line, size_t len) {
        size_t i = 0;

        if (len == 0 || !(isalpha((unsigned char) line[0]) || line[0] == '_'))
                return 0;
        while (i < len && (isalnum((unsigned char) line[i]) || line[i] == '_'))
                i++;
        return i < len && line[i] == '=' ? i : 0;
}

/* The value of key in the job's environment: *ret_value, *ret_len point into
 * env (a value continued over lines keeps its newlines). Returns true when
 * found; the last definition wins. */
static bool job_value(const char *env, size_t len, const char *key, const char **ret_value,
                      size_t *ret_len) {
        size_t klen = strlen(key), pos = 0;
        const char *value = NULL;
        size_t vlen = 0;
        bool in = false;

        while (pos < len) {
                const char *line = env + pos, *nl = memchr(line, '\n', len - pos);
                size_t llen = nl ? (size_t) (nl - line) : len - pos, n = name_len(line, llen);

                if (n > 0) {
                        in = n == klen && memcmp(line, key, klen) == 0;
                        if (in) {
                                value = line + n + 1;
                                vlen = llen - n - 1;
                        }
                } else if (in)
                        vlen = (size_t) (line + llen - value); /* continued: keep the newline */
                pos += llen + 1;
        }
        if (!value)
                return false;
        *ret_value = value;
        *ret_len = vlen;
        return true;
}

int rollout_env_verify(const char *desired, size_t desired_len, const char *job_env, size_t job_len,
                       RolloutEnvCheck *ret) {
        _cleanup_(document_freep) Document *d = NULL;
        RolloutEnvCheck c = {};
        int k;

        if (job_len > ROLLOUT_VERIFY_MAX_ENV_BYTES)
                return -EFBIG;
        k = document_parse(DOC_ENV, desired, desired_len, &d);
        if (k < 0)
                return k;
        for (size_t i = 0; i < d->n_settings; i++) {
                const Setting *s = &d->settings[i];
                unsigned char want[32], got[32];
                const char *v;
                size_t vlen;

                if (s->dynamic)
                        k = push(&c.dynamic, &c.n_dynamic, s->key);
                else if (!job_value(job_env, job_len, s->key, &v, &vlen))
                        k = push(&c.missing, &c.n_missing, s->key);
                else if ((k = digest(s->value, strlen(s->value), want)) >= 0 &&
                         (k = digest(v, vlen, got)) >= 0) {
                        if (memcmp(want, got, sizeof want) != 0)
                                k = push(&c.differ, &c.n_differ, s->key);
                        else
                                c.n_same++;
                }
                if (k < 0) {
                        rollout_env_check_done(&c);
                        return k;
                }
        }
        *ret = c;
        return 0;
}
