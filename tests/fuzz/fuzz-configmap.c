/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: configmap_parse() on arbitrary bytes, checking what
 * configmap.h promises about the result.
 */
#include <stddef.h>
#include <stdint.h>

#include "configmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(configmap_set_freep) ConfigMapSet *set = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        r = configmap_parse((const char *) data, size, &set, &error);
        if (r < 0) {
                /* Every refusal but -ENOMEM says why; a failure never hands out a set. */
                if (set || (r != -ENOMEM && !error))
                        abort();
                if (r != -EINVAL && r != -EFBIG && r != -E2BIG && r != -ENOMEM)
                        abort();
                return 0;
        }

        if (error || !set || set->n_entries > CONFIGMAP_MAX_ENTRIES)
                abort();
        for (size_t i = 0; i < set->n_entries; i++) {
                const ConfigMapEntry *e = &set->entries[i];
                size_t n = strlen(e->key);

                /* Keys are valid ConfigMap keys; values are NUL-terminated after len. */
                if (n == 0 || n > CONFIGMAP_MAX_KEY_BYTES || startswith(e->key, "..") ||
                    streq(e->key, ".") ||
                    strspn(e->key, "abcdefghijklmnopqrstuvwxyz"
                                   "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   "0123456789-_.") != n)
                        abort();
                if (!e->configmap || e->value[e->len] != '\0')
                        abort();
        }
        return 0;
}
