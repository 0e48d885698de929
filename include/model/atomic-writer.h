/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The names kubelet's atomic writer gives the entries of a
 * projected volume (docs/DESIGN.md, "kubelet's atomic writer").
 */
#pragma once

#include <stdbool.h>

/* A ..data target is one directory name: at most NAME_MAX bytes. */
#define VOLUME_MAX_VERSION_LENGTH 255u

/* The data link and the prefix of every name kubelet reserves for itself. */
#define VOLUME_DATA_LINK          "..data"
#define VOLUME_RESERVED_PREFIX    ".."

/* True when name could be a version id: one path component starting with
 * ".." other than "..", at most VOLUME_MAX_VERSION_LENGTH bytes. */
bool volume_version_is_valid(const char *name);
