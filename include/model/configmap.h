/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A ConfigMap as `kubectl get configmap NAME -o json` prints it
 * (or a "List" of them, as `kubectl get configmap -o json` prints), reduced to
 * its data keys. Never logs: errors come back as a message.
 *
 * What is accepted:
 * - an object with "kind": "ConfigMap", or without "kind" when it has "data"
 *   or "binaryData" (a hand-written ConfigMap);
 * - an object with "kind": "List" or "ConfigMapList" (the API's own list, whose
 *   items carry no kind); every item must be an object whose kind is absent or
 *   "ConfigMap". A missing or null "items" is an empty list;
 * - a ConfigMap without "data" (or with "data": null) has zero entries;
 * - "binaryData" keys are validated, counted and skipped (they are not text);
 * - data keys must be valid ConfigMap keys as the API server checks them
 *   (IsConfigMapKey: [-._a-zA-Z0-9]+, at most CONFIGMAP_MAX_KEY_BYTES, not ".",
 *   ".." or starting with ".."), and no key may be in both data and binaryData.
 * Refused: duplicate object keys anywhere, any other kind, invalid UTF-8.
 * Error messages name keys and positions but never quote a value: values may
 * be secrets.
 */
#pragma once

#include <stddef.h>

#include "macro.h"

/* kube-apiserver refuses ConfigMaps over 1 MiB of data; the JSON around it adds
 * escaping and metadata, so accept up to 4 MiB of JSON. */
#define CONFIGMAP_MAX_JSON_BYTES (4u * 1024u * 1024u)
/* More entries than this are refused (a ConfigMap this large is not enroot's).
 * Counted over all data keys of all ConfigMaps in the input; binaryData keys
 * are not entries. */
#define CONFIGMAP_MAX_ENTRIES    4096u
/* The API server's limit on a key (DNS1123SubdomainMaxLength). */
#define CONFIGMAP_MAX_KEY_BYTES  253u

typedef struct ConfigMapEntry {
        char *configmap; /* metadata.name of the ConfigMap ("" when absent) */
        char *key;       /* data key */
        char *value;     /* data value; may contain NUL bytes (JSON \u0000): use len */
        size_t len;      /* bytes in value, without the terminating NUL that always follows */
} ConfigMapEntry;

typedef struct ConfigMapSet {
        ConfigMapEntry *entries; /* in document order */
        size_t n_entries;
        size_t n_binary; /* binaryData keys seen and skipped */
} ConfigMapSet;

/* Parses len bytes of JSON (json need not be NUL-terminated; NULL is allowed
 * when len is 0). Returns 0 with *ret a new ConfigMapSet owned by the caller;
 * -EINVAL (not JSON, not a ConfigMap or List of them, a data value that is not
 * a string, an invalid key), -EFBIG (over CONFIGMAP_MAX_JSON_BYTES), -E2BIG
 * (more than CONFIGMAP_MAX_ENTRIES), -ENOMEM. On -EINVAL/-EFBIG/-E2BIG,
 * *ret_error (when ret_error is not NULL) receives a new string saying what and
 * where ("line 3, column 7: ..." or "items[1].data.foo: value is not a string";
 * keys that are not identifiers are quoted: `data["enroot.conf"]`). *ret is
 * written only on success, *ret_error only on those three errors. */
int configmap_parse(const char *json, size_t len, ConfigMapSet **ret, char **ret_error);
/* Frees the set and every entry; accepts NULL; returns NULL. */
ConfigMapSet *configmap_set_free(ConfigMapSet *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(ConfigMapSet *, configmap_set_free);
