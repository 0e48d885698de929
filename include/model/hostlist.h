/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Slurm's bracket hostlist syntax, as sinfo, squeue and
 * scontrol print node lists. Outside input: bounded by slurm.h's
 * SLURM_MAX_NODES and SLURM_MAX_NAME_BYTES. Never logs.
 *
 * A few bytes can name many nodes ("r[1-256]-n[1-256]" is 65536 names), so
 * a hostlist is parsed once into its ranges and counted by multiplying the
 * sizes of its bracket groups, never by expanding; membership is decided on
 * the ranges, in time linear in the hostlist's length, whatever it expands
 * to. Only slurm_hostlist_expand() and slurm_hostlist_foreach() produce
 * names, at most SLURM_MAX_NODES of them.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

typedef struct SlurmHostlist SlurmHostlist;

/* Parses a Slurm hostlist ("a-[01-03,7],b", "r[1-2]-n[1-2]"). "" gives
 * none. Returns 0 with *ret new, -EBADMSG (unbalanced brackets, a reversed
 * or malformed range, a blank or control character), -ENOBUFS (more than
 * SLURM_MAX_NODES names, counted before expanding, or a name over
 * SLURM_MAX_NAME_BYTES), -ENOMEM. Costs time and memory linear in its length. */
int slurm_hostlist_parse(const char *hostlist, SlurmHostlist **ret);
SlurmHostlist *slurm_hostlist_free(SlurmHostlist *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(SlurmHostlist *, slurm_hostlist_free);

/* The names it expands to, duplicates included; at most SLURM_MAX_NODES. */
size_t slurm_hostlist_count(const SlurmHostlist *h);
/* Whether name is one of them, without expanding. */
bool slurm_hostlist_contains(const SlurmHostlist *h, const char *name);
/* Calls f for each name in order, with a NUL-terminated name valid during
 * the call only; stops at and returns f's first negative return, else 0. */
int slurm_hostlist_foreach(const SlurmHostlist *h, int (*f)(const char *name, void *userdata),
                           void *userdata);

/* Parses and expands into names, in order. Returns 0 with *ret_names a new
 * NULL-terminated array of *ret_n new strings (free it with
 * slurm_names_free()), or the errors of slurm_hostlist_parse(). */
int slurm_hostlist_expand(const char *hostlist, char ***ret_names, size_t *ret_n);
char **slurm_names_free(char **names);
