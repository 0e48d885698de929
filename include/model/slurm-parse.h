/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the Slurm parsers (slurm.c, hostlist.c)
 * and by nothing else.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Digits in a number Slurm prints: 18 always fit in a uint64_t. */
#define SLURM_MAX_DIGITS 18

/* Parses len bytes of decimal digits, 1 to SLURM_MAX_DIGITS of them,
 * leading zeros allowed, nothing else. Returns 0 with *ret, or -EBADMSG. */
int slurm_parse_number(const char *s, size_t len, uint64_t *ret);

/* Makes room for need elements of size bytes in *array, which holds *alloc:
 * doubles (16 at first) or grows to need, updating *array and *alloc.
 * Returns 0, or -ENOMEM with *array and *alloc unchanged. */
int slurm_grow(void **array, size_t *alloc, size_t need, size_t size);
