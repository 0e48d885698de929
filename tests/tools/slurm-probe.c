/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test tool: what agent/rollout/slurm-client.c reads from a real Slurm, as JSON lines, and
 * its drain / resume / down. Used by tests/integration/test-slurm-cluster.sh.
 *
 *   slurm-probe [--format auto|json|text] [--timeout-ms N] [--max-output-bytes N]
 *               [--sinfo PATH] [--squeue PATH] [--scontrol PATH] COMMAND [ARG...]
 *
 *   nodes                  one line per node
 *   jobs [NODE...]         one line per job (on those nodes; all without NODE)
 *   drain REASON NODE...   one line: the command, its exit status and stderr
 *   down REASON NODE...
 *   resume NODE...
 *   format                 reads the nodes, then prints the format and version used
 *
 * Exit status 0 on success, 1 with the module's message on stderr otherwise.
 */
#include <getopt.h>
#include <jansson.h>

#include "macro.h"
#include "slurm-client.h"

static int print_json(json_t *o) {
        char *s;

        if (!o)
                return -ENOMEM;
        s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(o);
        if (!s)
                return -ENOMEM;
        puts(s);
        free(s);
        return 0;
}

static json_t *flag_array(uint32_t bits, const char *(*name)(uint32_t)) {
        json_t *a = json_array();

        for (unsigned i = 0; a && i < 32; i++)
                if (bits & (1u << i))
                        json_array_append_new(a,
                                              json_string(name(1u << i) ? name(1u << i) : "OTHER"));
        return a;
}

static const char *node_flag_name(uint32_t f) {
        return slurm_node_flag_to_string((SlurmNodeFlag) f);
}

static const char *job_state_name(uint32_t f) {
        return slurm_job_state_to_string((SlurmJobState) f);
}

static int print_node(const SlurmNode *n) {
        return print_json(json_pack(
                "{s:s, s:s, s:s, s:o, s:b, s:b, s:b, s:s, s:s, s:I, s:I, s:I}", "name", n->name,
                "state", n->state, "base", slurm_node_base_to_string(n->base), "flags",
                flag_array(n->flags, node_flag_name), "drained", slurm_node_is_drained(n),
                "draining", slurm_node_is_draining(n), "unavailable", slurm_node_is_unavailable(n),
                "reason", n->reason, "reason_user", n->reason_user, "reason_time",
                (json_int_t) n->reason_time_sec, "boot_time", (json_int_t) n->boot_time_sec,
                "slurmd_start_time", (json_int_t) n->slurmd_start_time_sec));
}

static int add_name(const char *name, void *userdata) {
        return json_array_append_new(userdata, json_string(name)) < 0 ? -ENOMEM : 0;
}

static int print_job(const SlurmJob *j) {
        json_t *names = json_array();

        (void) slurm_hostlist_foreach(j->node_list, add_name, names);
        return print_json(json_pack("{s:I, s:s, s:o, s:b, s:b, s:s, s:o}", "job_id",
                                    (json_int_t) j->job_id, "state", j->state, "states",
                                    flag_array(j->states, job_state_name), "active",
                                    slurm_job_is_active(j), "pending", slurm_job_is_pending(j),
                                    "nodes", j->nodes, "node_names", names));
}

static int print_report(const SlurmCommandReport *r) {
        return print_json(json_pack("{s:s?, s:i, s:s?}", "command", r->command_line, "exit_status",
                                    r->exit_status, "stderr", r->stderr_text));
}

static int usage(void) {
        fprintf(stderr, "usage: slurm-probe [--format auto|json|text] [--timeout-ms N] "
                        "[--max-output-bytes N] [--sinfo P] [--squeue P] [--scontrol P]\n"
                        "                   nodes | jobs [NODE...] | drain REASON NODE... | "
                        "down REASON NODE... | resume NODE... | format\n");
        return 2;
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                {"format", required_argument, NULL, 'f'},
                {"timeout-ms", required_argument, NULL, 't'},
                {"max-output-bytes", required_argument, NULL, 'm'},
                {"sinfo", required_argument, NULL, 'i'},
                {"squeue", required_argument, NULL, 'q'},
                {"scontrol", required_argument, NULL, 'c'},
                {},
        };
        _cleanup_(slurm_client_freep) SlurmClient *c = NULL;
        SlurmCommandReport report = {};
        SlurmConfig cfg = {};
        const char *cmd;
        int opt, r = 0;

        while ((opt = getopt_long(argc, argv, "+", options, NULL)) >= 0) {
                switch (opt) {
                case 'f':
                        cfg.format = slurm_format_from_string(optarg);
                        if (cfg.format < 0)
                                return usage();
                        break;
                case 't':
                        cfg.timeout_usec = strtoull(optarg, NULL, 10) * 1000u;
                        break;
                case 'm':
                        cfg.max_output_bytes = strtoull(optarg, NULL, 10);
                        break;
                case 'i':
                        cfg.sinfo = optarg;
                        break;
                case 'q':
                        cfg.squeue = optarg;
                        break;
                case 'c':
                        cfg.scontrol = optarg;
                        break;
                default:
                        return usage();
                }
        }
        if (optind >= argc)
                return usage();
        cmd = argv[optind++];

        r = slurm_client_new(&cfg, &c);
        if (r < 0) {
                fprintf(stderr, "slurm-probe: bad configuration: %s\n", strerror(-r));
                return 2;
        }

        if (streq(cmd, "nodes") || streq(cmd, "format")) {
                _cleanup_(slurm_node_list_freep) SlurmNodeList *l = NULL;

                r = slurm_read_nodes(c, &l, &report);
                /* Text needs no version: ask for it to print it. */
                if (r >= 0 && streq(cmd, "format") && !slurm_client_version(c))
                        r = slurm_probe_version(c, &report);
                for (size_t i = 0; r >= 0 && streq(cmd, "nodes") && i < l->n_nodes; i++)
                        r = print_node(&l->nodes[i]);
                if (r >= 0 && streq(cmd, "format"))
                        r = print_json(json_pack("{s:s, s:s?}", "format",
                                                 slurm_format_to_string(slurm_client_format(c)),
                                                 "version", slurm_client_version(c)));
        } else if (streq(cmd, "jobs")) {
                _cleanup_(slurm_job_list_freep) SlurmJobList *l = NULL;

                r = slurm_read_jobs(c, optind < argc ? argv + optind : NULL,
                                    (size_t) (argc - optind), &l, &report);
                for (size_t i = 0; r >= 0 && i < l->n_jobs; i++)
                        r = print_job(&l->jobs[i]);
        } else if ((streq(cmd, "drain") || streq(cmd, "down")) && argc - optind >= 2) {
                const char *reason = argv[optind];

                r = (streq(cmd, "drain") ? slurm_drain_nodes : slurm_down_nodes)(
                        c, argv + optind + 1, (size_t) (argc - optind - 1), reason, &report);
                if (report.command_line)
                        (void) print_report(&report);
        } else if (streq(cmd, "resume") && argc - optind >= 1) {
                r = slurm_resume_nodes(c, argv + optind, (size_t) (argc - optind), &report);
                if (report.command_line)
                        (void) print_report(&report);
        } else {
                slurm_command_report_done(&report);
                return usage();
        }

        if (r < 0)
                fprintf(stderr, "slurm-probe: %s\n", report.error ? report.error : strerror(-r));
        slurm_command_report_done(&report);
        return r < 0 ? 1 : 0;
}
