/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the parsers of what sinfo, squeue and scontrol print.
 * The first byte picks the parser (mod 5: nodes JSON, scontrol node lines,
 * jobs JSON, squeue lines, a hostlist); the rest is its input, not
 * NUL-terminated. Invariants: failures are only the documented errors and
 * come with a message; every node and job has a valid name, state and node
 * list; lookups find every node; the predicates agree with the flags.
 */
#include <stddef.h>
#include <stdint.h>

#include "slurm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool valid_name(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > SLURM_MAX_NAME_BYTES)
                return false;
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p <= ' ' || *p == 0x7f)
                        return false;
        return true;
}

static bool printable(const char *s) {
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p < ' ' || *p == 0x7f)
                        return false;
        return strlen(s) <= SLURM_MAX_TEXT_BYTES;
}

static void check_failure(int r, char *error) {
        if (r != -EBADMSG && r != -EIO && r != -ENOBUFS && r != -ENOMEM)
                abort();
        /* Content errors explain themselves. */
        if ((r == -EBADMSG || r == -EIO) && !error)
                abort();
        free(error);
}

static void check_nodes(const SlurmNodeList *l) {
        if (l->n_nodes > SLURM_MAX_NODES)
                abort();
        for (size_t i = 0; i < l->n_nodes; i++) {
                const SlurmNode *n = &l->nodes[i];
                SlurmNodeBase base;
                uint32_t flags;

                if (!valid_name(n->name) || !slurm_node_base_to_string(n->base) || !n->state[0] ||
                    !printable(n->state) || !printable(n->reason) || !printable(n->reason_user))
                        abort();
                if (n->reason_time_sec < 0 || n->boot_time_sec < 0 || n->slurmd_start_time_sec < 0)
                        abort();
                if (!slurm_node_list_find(l, n->name))
                        abort();
                if (slurm_node_is_drained(n) && slurm_node_is_draining(n))
                        abort();
                if ((slurm_node_is_drained(n) || slurm_node_is_draining(n)) &&
                    (!(n->flags & SLURM_NODE_DRAIN) || !slurm_node_is_unavailable(n)))
                        abort();
                /* The normalized state reads back the same, unless it was cut. */
                if (strlen(n->state) < SLURM_MAX_TEXT_BYTES - 64) {
                        if (slurm_node_state_parse(n->state, &base, &flags) < 0)
                                abort();
                        if (flags != n->flags || (base != n->base && base != SLURM_NODE_UNKNOWN))
                                abort();
                }
        }
}

static void check_jobs(const SlurmJobList *l) {
        if (l->n_jobs > SLURM_MAX_JOBS)
                abort();
        for (size_t i = 0; i < l->n_jobs; i++) {
                const SlurmJob *j = &l->jobs[i];

                if (j->job_id == 0 || j->states == 0 || !j->state[0] || !printable(j->state) ||
                    !printable(j->nodes) || j->n_node_names > SLURM_MAX_NODES)
                        abort();
                if (slurm_job_is_active(j) && slurm_job_is_pending(j))
                        abort();
                for (size_t k = 0; k < j->n_node_names; k++)
                        if (!valid_name(j->node_names[k]) ||
                            !slurm_job_has_node(j, j->node_names[k]))
                                abort();
                if (j->node_names[j->n_node_names])
                        abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *text = (const char *) data + 1;
        size_t len = size - 1;
        char *error = NULL;
        int r;

        if (size < 1)
                return 0;

        switch (data[0] % 5) {
        case 0:
        case 1: {
                _cleanup_(slurm_node_list_freep) SlurmNodeList *l = NULL;

                r = data[0] % 5 == 0 ? slurm_nodes_parse_json(text, len, &l, &error)
                                     : slurm_nodes_parse_scontrol(text, len, &l, &error);
                if (r < 0) {
                        check_failure(r, error);
                        return 0;
                }
                check_nodes(l);
                break;
        }
        case 2:
        case 3: {
                _cleanup_(slurm_job_list_freep) SlurmJobList *l = NULL;

                r = data[0] % 5 == 2 ? slurm_jobs_parse_json(text, len, &l, &error)
                                     : slurm_jobs_parse_squeue(text, len, &l, &error);
                if (r < 0) {
                        check_failure(r, error);
                        return 0;
                }
                check_jobs(l);
                break;
        }
        default: {
                char *s = strndup(text, len), **names = NULL;
                size_t n = 0;

                if (!s)
                        return 0;
                r = slurm_hostlist_expand(s, &names, &n);
                if (r < 0) {
                        if (r != -EBADMSG && r != -ENOBUFS && r != -ENOMEM)
                                abort();
                } else {
                        if (n > SLURM_MAX_NODES || names[n])
                                abort();
                        for (size_t i = 0; i < n; i++)
                                if (!valid_name(names[i]))
                                        abort();
                        slurm_names_free(names);
                }
                free(s);
                break;
        }
        }
        free(error);
        return 0;
}
