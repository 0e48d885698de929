/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which format judges a compared file: as enroot reads enroot.conf, as it
 * reads an environ.d .env file, or byte for byte. Option parsing in every
 * program uses it, the readiness probe's included, which is why it uses
 * libc alone.
 */
#pragma once

#include <stdbool.h>

typedef enum FileFormat {
        FILE_FORMAT_ENROOT_CONF, /* "enroot-conf": enroot's config loader (docs/DESIGN.md §5) */
        FILE_FORMAT_ENROOT_ENV,  /* "enroot-env": enroot's environ.d reader (§5) */
        FILE_FORMAT_RAW,         /* "raw": the bytes (SHA-256); current or drifted, no lint */
        _FILE_FORMAT_MAX,
        _FILE_FORMAT_INVALID = -1,
} FileFormat;

const char *file_format_to_string(FileFormat f);
FileFormat file_format_from_string(const char *s);

/* The format a ConfigMap key gets when --file names none: keys ending in
 * ".env" are enroot-env, the key "enroot.conf" is enroot-conf, any other key
 * is raw. */
FileFormat file_format_for_key(const char *key);

/* True when f reads the file as enroot does (a document with settings). */
bool file_format_is_enroot(FileFormat f);
