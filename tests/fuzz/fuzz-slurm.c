/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the parsers of what sinfo, squeue and scontrol print.
 * The first byte picks the parser (mod 5: nodes JSON, scontrol node lines,
 * jobs JSON, squeue lines, a hostlist); the rest is its input, not
 * NUL-terminated. Invariants: failures are only the documented errors and
 * come with a message; every node and job has a valid name, state and node
 * list; lookups find every node, and every name a node list of at most
 * MAX_NAMES_CHECKED names expands to (larger ones are counted only, so that
 * one input costs a bounded time); the predicates agree with the flags.
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

/* Names checked one by one against a job's list; more are counted only. */
#define MAX_NAMES_CHECKED 4096u

typedef struct NameCheck {
        const SlurmJob *job;
        size_t n;
} NameCheck;

static int on_name(const char *name, void *userdata) {
        NameCheck *c = userdata;

        if (!valid_name(name) || !slurm_job_has_node(c->job, name))
                abort();
        c->n++;
        return 0;
}

static void check_jobs(const SlurmJobList *l) {
        if (l->n_jobs > SLURM_MAX_JOBS)
                abort();
        for (size_t i = 0; i < l->n_jobs; i++) {
                const SlurmJob *j = &l->jobs[i];

                if (j->job_id == 0 || j->states == 0 || !j->state[0] || !printable(j->state) ||
                    !printable(j->nodes) || j->n_nodes > SLURM_MAX_NODES ||
                    j->n_nodes != slurm_hostlist_count(j->node_list))
                        abort();
                if (slurm_job_is_active(j) && slurm_job_is_pending(j))
                        abort();
                /* Every name the list expands to is on the job, and the count is right. */
                if (j->n_nodes <= MAX_NAMES_CHECKED) {
                        NameCheck c = {.job = j};

                        if (slurm_hostlist_foreach(j->node_list, on_name, &c) < 0 ||
                            c.n != j->n_nodes)
                                abort();
                }
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
                        _cleanup_(slurm_hostlist_freep) SlurmHostlist *h = NULL;

                        if (n > SLURM_MAX_NODES || names[n])
                                abort();
                        if (slurm_hostlist_parse(s, &h) < 0 || slurm_hostlist_count(h) != n)
                                abort();
                        for (size_t i = 0; i < n; i++)
                                if (!valid_name(names[i]) ||
                                    (i < MAX_NAMES_CHECKED &&
                                     !slurm_hostlist_contains(h, names[i])))
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
