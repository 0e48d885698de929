/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Slurm's bracket hostlist syntax, as sinfo, squeue and
 * scontrol print node lists. Outside input: bounded by slurm.h's
 * SLURM_MAX_NODES and SLURM_MAX_NAME_BYTES. Never logs.
 */
#pragma once

#include <stddef.h>

/* Expands a Slurm hostlist ("a-[01-03,7],b", "r[1-2]-n[1-2]") into names,
 * in order. "" gives none. Returns 0 with *ret_names a new NULL-terminated
 * array of *ret_n new strings (free it with slurm_names_free()), -EBADMSG (unbalanced
 * brackets, a reversed or malformed range), -ENOBUFS (more than
 * SLURM_MAX_NODES names or a name over SLURM_MAX_NAME_BYTES), -ENOMEM. */
int slurm_hostlist_expand(const char *hostlist, char ***ret_names, size_t *ret_n);
char **slurm_names_free(char **names);
