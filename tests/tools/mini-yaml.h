/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mini-yaml: the subset of YAML that Kubernetes manifests written by hand use,
 * read into jansson values, for the test tools (the fake API server reads
 * container/kubernetes/rbac.yaml with it). Never logs.
 *
 * Read: documents separated by "---"; block mappings and block sequences
 * (also a sequence at its key's indentation, and "- key: value" items);
 * one-line flow sequences of scalars ("[get, watch]", "[\"\"]"); plain,
 * single-quoted and double-quoted scalars (\" \\ \n \t escapes); comments.
 * Every scalar becomes a JSON string (no true/false/number/null typing: a
 * caller reads the strings it expects) and an empty value null.
 *
 * Refused, with the line: tabs in indentation, anchors and aliases, tags,
 * block scalars (| and >), flow mappings, flow sequences over several lines
 * or nested, complex keys, duplicate keys, directives, a plain scalar with
 * ": " in it, and any indentation that does not fit the structure. A file
 * outside the subset is an error, never a different reading.
 */
#pragma once

#include <jansson.h>
#include <stddef.h>

/* The documents of data[0..len) as a new JSON array, one element per
 * document (a document with no content is left out). 0, or -EINVAL with
 * *ret_error a new string "line N: what", or -ENOMEM. */
int mini_yaml_parse(const char *data, size_t len, json_t **ret_docs, char **ret_error);
