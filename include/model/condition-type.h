/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod condition's type, checked by option parsing in every program, the
 * readiness probe's included, which is why it uses libc alone.
 */
#pragma once

#include <stdbool.h>

#define CONDITION_DEFAULT_TYPE   "EnrootConfigCurrent"
/* A qualified name: [DNS-subdomain prefix "/"] name of at most 63 characters. */
#define CONDITION_MAX_TYPE_BYTES (253u + 1u + 63u)

/* True for a Kubernetes qualified name ([prefix/]name). */
bool condition_type_is_valid(const char *type);
