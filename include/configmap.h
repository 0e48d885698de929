/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Layer 1 (pure): a ConfigMap as `kubectl get configmap NAME -o json` prints it
 * (or a "List" of them, as `kubectl get configmap -o json` prints), reduced to
 * its data keys. Never logs: errors come back as a message.
 */
#pragma once

#include <stddef.h>

#include "macro.h"

/* kube-apiserver refuses ConfigMaps over 1 MiB of data; the JSON around it adds
 * escaping and metadata, so accept up to 4 MiB of JSON. */
#define CONFIGMAP_MAX_JSON_BYTES (4u * 1024u * 1024u)
/* More entries than this are refused (a ConfigMap this large is not enroot's). */
#define CONFIGMAP_MAX_ENTRIES    4096u

typedef struct ConfigMapEntry {
        char *configmap; /* metadata.name of the ConfigMap ("" when absent) */
        char *key;       /* data key */
        char *value;     /* data value; may contain NUL bytes (JSON \u0000): use len */
        size_t len;
} ConfigMapEntry;

typedef struct ConfigMapSet {
        ConfigMapEntry *entries; /* in document order */
        size_t n_entries;
        size_t n_binary; /* binaryData keys seen and skipped */
} ConfigMapSet;

/* Parses len bytes of JSON. Returns 0 with *ret a new ConfigMapSet owned by the
 * caller; -EINVAL (not JSON, not a ConfigMap or List of them, a data value that
 * is not a string), -EFBIG (over CONFIGMAP_MAX_JSON_BYTES), -E2BIG (more than
 * CONFIGMAP_MAX_ENTRIES), -ENOMEM. On -EINVAL/-EFBIG/-E2BIG, *ret_error (when
 * ret_error is not NULL) receives a new string saying what and where
 * ("line 3, column 7: ..." or "items[1].data.foo: value is not a string"). */
int configmap_parse(const char *json, size_t len, ConfigMapSet **ret, char **ret_error);
ConfigMapSet *configmap_set_free(ConfigMapSet *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(ConfigMapSet *, configmap_set_free);
