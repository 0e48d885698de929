/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent/model/slurm.c and hostlist.c: the parsers on output recorded from
 * Debian 12's Slurm 22.05.8 (tests/data/slurm/, captured from
 * tests/tools/slurm-cluster.sh; data_parser v0.0.38), on the text of later
 * releases up to 26.05 derived from SchedMD/slurm's src/api/node_info.c and
 * src/squeue/opts.c (tests/data/slurm/README.md says which and how: not
 * captured), on the JSON shapes of data_parser v0.0.40 on (inline, also
 * derived), on hostlists, and on their cost in steps (allocations and
 * comparisons, counted through -Wl,--wrap=; never in time);
 * agent/rollout/slurm-client.c: the command runner against fake
 * sinfo/squeue/scontrol scripts (mocks at the process boundary).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include "fileio.h"
#include "macro.h"
#include "slurm-client.h"

#define DATA       TEST_DATA_DIR "/slurm/"
/* A writable copy of a string literal, for the char *const * parameters. */
#define S(literal) ((char[]){literal})

static char *load(const char *name, size_t *ret_len) {
        char *data = NULL;
        size_t len = 0;
        char path[512];

        snprintf(path, sizeof(path), DATA "%s", name);
        assert_int_equal(read_file_at(AT_FDCWD, path, 0, 16u << 20, &data, &len), 0);
        if (ret_len)
                *ret_len = len;
        return data;
}

static SlurmNodeList *nodes_json(const char *name) {
        _cleanup_free_ char *data = NULL, *error = NULL;
        SlurmNodeList *l = NULL;
        size_t len;

        data = load(name, &len);
        assert_int_equal(slurm_nodes_parse_json(data, len, &l, &error), 0);
        assert_null(error);
        return l;
}

static SlurmNodeList *nodes_text(const char *name) {
        _cleanup_free_ char *data = NULL, *error = NULL;
        SlurmNodeList *l = NULL;
        size_t len;

        data = load(name, &len);
        assert_int_equal(slurm_nodes_parse_scontrol(data, len, &l, &error), 0);
        assert_null(error);
        return l;
}

static SlurmJobList *jobs_json(const char *name) {
        _cleanup_free_ char *data = NULL, *error = NULL;
        SlurmJobList *l = NULL;
        size_t len;

        data = load(name, &len);
        assert_int_equal(slurm_jobs_parse_json(data, len, &l, &error), 0);
        assert_null(error);
        return l;
}

static SlurmJobList *jobs_text(const char *name) {
        _cleanup_free_ char *data = NULL, *error = NULL;
        SlurmJobList *l = NULL;
        size_t len;

        data = load(name, &len);
        assert_int_equal(slurm_jobs_parse_squeue(data, len, &l, &error), 0);
        assert_null(error);
        return l;
}

/* ------------------------------------------------------------------------ */
/* Recorded nodes: expected values, and JSON and text agree */

typedef struct NodeCase {
        const char *capture; /* nodes-CAPTURE.{sinfo.json,scontrol.txt} */
        const char *name;
        const char *state;
        SlurmNodeBase base;
        uint32_t flags;
        bool drained, draining, unavailable;
        const char *reason, *reason_user;
        int64_t reason_time;
} NodeCase;

#define PRESTOP "slurm-operator: Pod is terminating"
#define OURS    "aicr-enroot-rollout r-20261202: enroot config"

static const NodeCase node_cases[] = {
        {"idle", "slinky-0", "IDLE", SLURM_NODE_IDLE, 0, false, false, false, "", "", 0},
        {"idle", "slinky-7", "IDLE", SLURM_NODE_IDLE, 0, false, false, false, "", "", 0},
        {"busy", "slinky-0", "MIXED", SLURM_NODE_MIXED, 0, false, false, false, "", "", 0},
        {"busy", "slinky-1", "ALLOCATED+DRAIN", SLURM_NODE_ALLOCATED, SLURM_NODE_DRAIN, false, true,
         true, OURS, "root", 1796233851},
        {"busy", "slinky-2", "ALLOCATED", SLURM_NODE_ALLOCATED, 0, false, false, false, "", "", 0},
        {"busy", "slinky-5", "IDLE+DRAIN", SLURM_NODE_IDLE, SLURM_NODE_DRAIN, true, false, true,
         "bad DIMM, ticket #4711 = open", "root", 1796233851},
        {"busy", "slinky-6", "DOWN", SLURM_NODE_DOWN, 0, false, false, true, PRESTOP, "root",
         1796233851},
        {"busy", "slinky-7", "IDLE+FAIL", SLURM_NODE_IDLE, SLURM_NODE_FAIL, false, false, true,
         "hw check failed", "root", 1796233851},
        {"completing", "slinky-0", "MIXED+DRAIN+REBOOT_REQUESTED", SLURM_NODE_MIXED,
         SLURM_NODE_DRAIN | SLURM_NODE_REBOOT_REQUESTED, false, true, true, "kernel update", "root",
         1796233857},
        {"completing", "slinky-2", "IDLE+COMPLETING", SLURM_NODE_IDLE, SLURM_NODE_COMPLETING, false,
         false, false, "", "", 0},
        {"notresponding", "slinky-2", "DOWN+REBOOT_ISSUED", SLURM_NODE_DOWN,
         SLURM_NODE_REBOOT_ISSUED, false, false, true, "reboot requested : reboot issued", "root",
         1796233883},
        {"notresponding", "slinky-5", "DOWN+DRAIN+NOT_RESPONDING", SLURM_NODE_DOWN,
         SLURM_NODE_DRAIN | SLURM_NODE_NOT_RESPONDING, true, false, true,
         "bad DIMM, ticket #4711 = open", "root", 1796233851},
        {"notresponding", "slinky-6", "DOWN", SLURM_NODE_DOWN, 0, false, false, true, PRESTOP,
         "root", 1796233851},
};

static void check_node(const SlurmNodeList *l, const NodeCase *c) {
        const SlurmNode *n = slurm_node_list_find(l, c->name);

        assert_non_null(n);
        assert_string_equal(n->state, c->state);
        assert_int_equal(n->base, c->base);
        assert_int_equal(n->flags, c->flags);
        assert_int_equal(slurm_node_is_drained(n), c->drained);
        assert_int_equal(slurm_node_is_draining(n), c->draining);
        assert_int_equal(slurm_node_is_unavailable(n), c->unavailable);
        assert_string_equal(n->reason, c->reason);
        assert_string_equal(n->reason_user, c->reason_user);
        assert_true(n->reason_time_sec == c->reason_time);
        assert_true(n->boot_time_sec > 1700000000);
        assert_true(n->slurmd_start_time_sec > 1700000000);
}

static void test_nodes_recorded(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(node_cases); i++) {
                const NodeCase *c = &node_cases[i];
                char name[128];
                _cleanup_(slurm_node_list_freep) SlurmNodeList *json = NULL, *text = NULL;

                print_message("case: %s %s\n", c->capture, c->name);
                snprintf(name, sizeof(name), "nodes-%s.sinfo.json", c->capture);
                json = nodes_json(name);
                snprintf(name, sizeof(name), "nodes-%s.scontrol.txt", c->capture);
                text = nodes_text(name);
                assert_int_equal(json->n_nodes, 8);
                assert_int_equal(text->n_nodes, 8);
                check_node(json, c);
                check_node(text, c);
        }
}

/* Both formats, captured moments apart, say the same of every node. */
static void test_nodes_json_equals_text(void **state) {
        static const char *const captures[] = {"idle", "busy", "completing", "notresponding"};

        for (size_t i = 0; i < ELEMENTSOF(captures); i++) {
                _cleanup_(slurm_node_list_freep) SlurmNodeList *json = NULL, *text = NULL;
                char name[128];

                print_message("capture: %s\n", captures[i]);
                snprintf(name, sizeof(name), "nodes-%s.sinfo.json", captures[i]);
                json = nodes_json(name);
                snprintf(name, sizeof(name), "nodes-%s.scontrol.txt", captures[i]);
                text = nodes_text(name);
                assert_int_equal(json->n_nodes, text->n_nodes);
                for (size_t k = 0; k < json->n_nodes; k++) {
                        const SlurmNode *a = &json->nodes[k], *b = &text->nodes[k];

                        assert_string_equal(a->name, b->name);
                        assert_string_equal(a->state, b->state);
                        assert_int_equal(a->flags, b->flags);
                        assert_string_equal(a->reason, b->reason);
                        assert_string_equal(a->reason_user, b->reason_user);
                        assert_true(a->reason_time_sec == b->reason_time_sec);
                        assert_true(a->boot_time_sec == b->boot_time_sec);
                        assert_true(a->slurmd_start_time_sec == b->slurmd_start_time_sec);
                }
        }
}

/* 22.05 exits 0 and reports the failure inside the document. */
static void test_controller_down(void **state) {
        _cleanup_free_ char *nodes = NULL, *jobs = NULL;
        size_t nodes_len, jobs_len;
        SlurmNodeList *nl = NULL;
        SlurmJobList *jl = NULL;
        char *error = NULL;

        nodes = load("nodes-noctld.sinfo.json", &nodes_len);
        jobs = load("jobs-noctld.squeue.json", &jobs_len);
        assert_int_equal(slurm_nodes_parse_json(nodes, nodes_len, &nl, &error), -EIO);
        assert_null(nl);
        assert_non_null(strstr(error, "Slurm reported an error: Unspecified error"));
        free(error);
        error = NULL;
        assert_int_equal(slurm_jobs_parse_json(jobs, jobs_len, &jl, &error), -EIO);
        assert_non_null(strstr(error, "Failed while looking for jobs"));
        free(error);
}

/* ------------------------------------------------------------------------ */
/* Recorded jobs */

typedef struct JobCase {
        const char *capture;
        uint32_t job_id;
        const char *state;
        uint32_t states;
        bool active, pending;
        const char *nodes;
        size_t n_names;
        const char *first, *last;
} JobCase;

static const JobCase job_cases[] = {
        {"busy", 1, "RUNNING", SLURM_JOB_RUNNING, true, false, "slinky-0", 1, "slinky-0",
         "slinky-0"},
        {"busy", 3, "RUNNING", SLURM_JOB_RUNNING, true, false, "slinky-[2-3]", 2, "slinky-2",
         "slinky-3"},
        {"busy", 4, "SUSPENDED", SLURM_JOB_SUSPENDED, true, false, "slinky-4", 1, "slinky-4",
         "slinky-4"},
        {"busy", 5, "STOPPED", SLURM_JOB_STOPPED, true, false, "slinky-4", 1, "slinky-4",
         "slinky-4"},
        {"busy", 6, "PENDING", SLURM_JOB_PENDING, false, true, "", 0, NULL, NULL},
        {"completing", 3, "COMPLETING", SLURM_JOB_COMPLETING, true, false, "slinky-[2-3]", 2,
         "slinky-2", "slinky-3"},
};

static const SlurmJob *find_job(const SlurmJobList *l, uint32_t id) {
        for (size_t i = 0; i < l->n_jobs; i++)
                if (l->jobs[i].job_id == id)
                        return &l->jobs[i];
        return NULL;
}

static void check_job(const SlurmJobList *l, const JobCase *c) {
        const SlurmJob *j = find_job(l, c->job_id);

        assert_non_null(j);
        assert_string_equal(j->state, c->state);
        assert_int_equal(j->states, c->states);
        assert_int_equal(slurm_job_is_active(j), c->active);
        assert_int_equal(slurm_job_is_pending(j), c->pending);
        assert_string_equal(j->nodes, c->nodes);
        assert_int_equal(j->n_nodes, c->n_names);
        assert_int_equal(slurm_hostlist_count(j->node_list), c->n_names);
        if (c->n_names > 0) {
                assert_true(slurm_job_has_node(j, c->first));
                assert_true(slurm_job_has_node(j, c->last));
        }
        assert_false(slurm_job_has_node(j, "slinky-9"));
}

static void test_jobs_recorded(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(job_cases); i++) {
                const JobCase *c = &job_cases[i];
                _cleanup_(slurm_job_list_freep) SlurmJobList *json = NULL, *text = NULL;
                char name[128];

                print_message("case: %s job %u\n", c->capture, c->job_id);
                snprintf(name, sizeof(name), "jobs-%s.squeue.json", c->capture);
                json = jobs_json(name);
                snprintf(name, sizeof(name), "jobs-%s.squeue.txt", c->capture);
                text = jobs_text(name);
                assert_int_equal(json->n_jobs, 6);
                assert_int_equal(text->n_jobs, 6);
                check_job(json, c);
                check_job(text, c);
        }
}

static void test_jobs_empty(void **state) {
        _cleanup_(slurm_job_list_freep) SlurmJobList *json = jobs_json("jobs-idle.squeue.json");
        _cleanup_(slurm_job_list_freep) SlurmJobList *text = jobs_text("jobs-idle.squeue.txt");

        assert_int_equal(json->n_jobs, 0);
        assert_int_equal(text->n_jobs, 0);
}

/* ------------------------------------------------------------------------ */
/* The JSON of later Slurm versions (data_parser v0.0.40 on): states as lists,
 * times and ids as {"set","infinite","number"}. */

static const char modern_nodes[] =
        "{\"nodes\":[{\"name\":\"compute-0\",\"state\":[\"DOWN\",\"DRAIN\",\"DYNAMIC_NORM\"],"
        "\"reason\":\"Not responding\",\"reason_changed_at\":{\"set\":true,\"infinite\":false,"
        "\"number\":1769096589},\"reason_set_by_user\":\"slurm\",\"boot_time\":{\"set\":true,"
        "\"infinite\":false,\"number\":1769026000},\"slurmd_start_time\":{\"set\":false,"
        "\"infinite\":false,\"number\":5}},"
        "{\"name\":\"compute-1\",\"state\":[\"IDLE\",\"PLANNED\",\"SOMETHING_NEW\"],"
        "\"reason\":\"\",\"reason_changed_at\":{\"set\":true,\"infinite\":true,\"number\":0},"
        "\"boot_time\":1769026000.0}],"
        "\"meta\":{},\"errors\":[],\"warnings\":[]}";

static const char modern_jobs[] =
        "{\"jobs\":[{\"job_id\":17,\"job_state\":[\"RUNNING\",\"COMPLETING\"],"
        "\"nodes\":\"compute-[0-1]\"},"
        "{\"job_id\":{\"set\":true,\"number\":18},\"job_state\":[\"PENDING\"],\"nodes\":\"\"},"
        "{\"job_id\":19,\"job_state\":[\"LAUNCHING_SOON\"],\"nodes\":\"compute-1\"},"
        "{\"job_id\":20,\"job_state\":[\"COMPLETED\",\"SOMETHING_NEW\"],\"nodes\":\"compute-1\"},"
        "{\"job_id\":21,\"job_state\":[\"CONFIGURING\"],\"nodes\":\"compute-0\"}],"
        "\"errors\":[]}";

static void test_modern_json(void **state) {
        _cleanup_(slurm_node_list_freep) SlurmNodeList *nl = NULL;
        _cleanup_(slurm_job_list_freep) SlurmJobList *jl = NULL;
        const SlurmNode *n;
        const SlurmJob *j;
        char *error = NULL;

        assert_int_equal(slurm_nodes_parse_json(modern_nodes, strlen(modern_nodes), &nl, &error),
                         0);
        assert_int_equal(nl->n_nodes, 2);
        n = &nl->nodes[0];
        assert_string_equal(n->state, "DOWN+DRAIN+DYNAMIC_NORM");
        assert_int_equal(n->base, SLURM_NODE_DOWN);
        assert_int_equal(n->flags, SLURM_NODE_DRAIN | SLURM_NODE_DYNAMIC_NORM);
        assert_true(slurm_node_is_drained(n));
        assert_string_equal(n->reason_user, "slurm");
        assert_true(n->reason_time_sec == 1769096589);
        assert_true(n->boot_time_sec == 1769026000);
        assert_true(n->slurmd_start_time_sec == 0); /* "set": false */
        n = &nl->nodes[1];
        assert_string_equal(n->state, "IDLE+PLANNED+SOMETHING_NEW");
        assert_int_equal(n->flags, SLURM_NODE_PLANNED | SLURM_NODE_FLAG_OTHER);
        /* An unknown flag could mean anything: out of service until understood. */
        assert_true(slurm_node_is_unavailable(n));
        assert_true(n->reason_time_sec == 0); /* infinite */
        assert_true(n->boot_time_sec == 1769026000);
        assert_string_equal(n->reason_user, "");

        assert_int_equal(slurm_jobs_parse_json(modern_jobs, strlen(modern_jobs), &jl, &error), 0);
        assert_int_equal(jl->n_jobs, 5);
        j = find_job(jl, 17);
        assert_string_equal(j->state, "RUNNING+COMPLETING");
        assert_true(slurm_job_is_active(j));
        assert_int_equal(j->n_nodes, 2);
        j = find_job(jl, 18);
        assert_true(slurm_job_is_pending(j));
        j = find_job(jl, 19); /* unknown, holds a node, not final: busy */
        assert_int_equal(j->states, SLURM_JOB_STATE_OTHER);
        assert_true(slurm_job_is_active(j));
        j = find_job(jl, 20); /* final */
        assert_false(slurm_job_is_active(j));
        j = find_job(jl, 21);
        assert_true(slurm_job_is_active(j));
        assert_null(error);
}

/* ------------------------------------------------------------------------ */
/* Malformed documents */

typedef struct BadCase {
        const char *name;
        const char *text;
        int error;
} BadCase;

static const BadCase bad_node_json[] = {
        {"not JSON", "{", -EBADMSG},
        {"not an object", "[]", -EBADMSG},
        {"no nodes", "{\"errors\":[]}", -EBADMSG},
        {"nodes not an array", "{\"nodes\":{}}", -EBADMSG},
        {"node not an object", "{\"nodes\":[1]}", -EBADMSG},
        {"no name", "{\"nodes\":[{\"state\":\"idle\"}]}", -EBADMSG},
        {"blank in name", "{\"nodes\":[{\"name\":\"a b\",\"state\":\"idle\"}]}", -EBADMSG},
        {"no state", "{\"nodes\":[{\"name\":\"a\"}]}", -EBADMSG},
        {"state a number", "{\"nodes\":[{\"name\":\"a\",\"state\":1}]}", -EBADMSG},
        {"state word with a blank", "{\"nodes\":[{\"name\":\"a\",\"state\":\"id le\"}]}", -EBADMSG},
        {"flags not a list",
         "{\"nodes\":[{\"name\":\"a\",\"state\":\"idle\",\"state_flags\":\"DRAIN\"}]}", -EBADMSG},
        {"empty flag", "{\"nodes\":[{\"name\":\"a\",\"state\":[\"IDLE\",\"\"]}]}", -EBADMSG},
        {"an error", "{\"nodes\":[],\"errors\":[{\"error\":\"Access denied\"}]}", -EIO},
};

static const BadCase bad_job_json[] = {
        {"no jobs", "{}", -EBADMSG},
        {"no id", "{\"jobs\":[{\"job_state\":\"RUNNING\"}]}", -EBADMSG},
        {"id zero", "{\"jobs\":[{\"job_id\":0,\"job_state\":\"RUNNING\"}]}", -EBADMSG},
        {"id too big", "{\"jobs\":[{\"job_id\":4294967296,\"job_state\":\"RUNNING\"}]}", -EBADMSG},
        {"no state", "{\"jobs\":[{\"job_id\":1}]}", -EBADMSG},
        {"nodes a list", "{\"jobs\":[{\"job_id\":1,\"job_state\":\"RUNNING\",\"nodes\":[]}]}",
         -EBADMSG},
        {"bad hostlist",
         "{\"jobs\":[{\"job_id\":1,\"job_state\":\"RUNNING\",\"nodes\":\"n[2-1]\"}]}", -EBADMSG},
};

static const BadCase bad_node_text[] = {
        {"no NodeName", "State=IDLE\n", -EBADMSG},
        {"no State", "NodeName=a Arch=x86_64\n", -EBADMSG},
        {"empty State", "NodeName=a State= Reason=x\n", -EBADMSG},
        {"bad State", "NodeName=a State=IDLE++DRAIN\n", -EBADMSG},
        {"empty name", "NodeName= State=IDLE\n", -EBADMSG},
        {"NUL", "NodeName=a State=IDLE\0\n", -EBADMSG},
};

static const BadCase bad_job_text[] = {
        {"one field", "12\n", -EBADMSG},
        {"two fields", "12|RUNNING\n", -EBADMSG},
        {"id not a number", "x|RUNNING|a\n", -EBADMSG},
        {"id zero", "0|RUNNING|a\n", -EBADMSG},
        {"empty state", "1||a\n", -EBADMSG},
        {"bad hostlist", "1|RUNNING|a[\n", -EBADMSG},
};

static void test_malformed(void **state) {
        const struct {
                const BadCase *cases;
                size_t n;
                int kind;
        } sets[] = {
                {bad_node_json, ELEMENTSOF(bad_node_json), 0},
                {bad_job_json, ELEMENTSOF(bad_job_json), 1},
                {bad_node_text, ELEMENTSOF(bad_node_text), 2},
                {bad_job_text, ELEMENTSOF(bad_job_text), 3},
        };

        for (size_t s = 0; s < ELEMENTSOF(sets); s++)
                for (size_t i = 0; i < sets[s].n; i++) {
                        const BadCase *c = &sets[s].cases[i];
                        size_t len = strlen(c->text) + (streq(c->name, "NUL") ? 2 : 0);
                        SlurmNodeList *nl = NULL;
                        SlurmJobList *jl = NULL;
                        char *error = NULL;
                        int r;

                        print_message("case: %s\n", c->name);
                        switch (sets[s].kind) {
                        case 0:
                                r = slurm_nodes_parse_json(c->text, len, &nl, &error);
                                break;
                        case 1:
                                r = slurm_jobs_parse_json(c->text, len, &jl, &error);
                                break;
                        case 2:
                                r = slurm_nodes_parse_scontrol(c->text, len, &nl, &error);
                                break;
                        default:
                                r = slurm_jobs_parse_squeue(c->text, len, &jl, &error);
                                break;
                        }
                        assert_int_equal(r, c->error);
                        assert_null(nl);
                        assert_null(jl);
                        assert_non_null(error);
                        free(error);
                }
}

/* ------------------------------------------------------------------------ */
/* scontrol's one-liners: the edges of Reason= */

typedef struct ReasonCase {
        const char *name;
        const char *line;
        const char *reason, *user;
        int64_t time;
        int64_t boot;
} ReasonCase;

static const ReasonCase reason_cases[] = {
        {"none", "NodeName=a State=IDLE BootTime=None SlurmdStartTime=None", "", "", 0, 0},
        {"brackets inside the reason",
         "NodeName=a State=IDLE+DRAIN BootTime=100 Reason=see [ticket 7] now [alice@1796233851]",
         "see [ticket 7] now", "alice", 1796233851, 100},
        {"a reason without user and time, then a comment",
         "NodeName=a State=IDLE+DRAIN Reason=just this Comment=hello", "just this", "", 0, 0},
        {"fields after user and time (24.05)",
         "NodeName=a State=DOWN Reason=x y [root@5] Comment=c Extra=e", "x y", "root", 5, 0},
        {"a time not in seconds (SLURM_TIME_FORMAT ignored)",
         "NodeName=a State=DOWN Reason=r [root@2026-12-02T17:40:59]", "r", "root", 0, 0},
        {"State= inside the reason is not the state",
         "NodeName=a State=IDLE Reason=was State=DOWN [root@1]", "was State=DOWN", "root", 1, 0},
        {"NextState is not State", "NodeName=a NextState=RESUME State=IDLE+DRAIN Reason=k [root@2]",
         "k", "root", 2, 0},
        {"a control character", "NodeName=a State=IDLE Reason=a\tb [root@3]", "a?b", "root", 3, 0},
        {"CRLF", "NodeName=a State=IDLE Reason=r\r", "r?", "", 0, 0},
};

static void test_scontrol_reasons(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(reason_cases); i++) {
                const ReasonCase *c = &reason_cases[i];
                _cleanup_(slurm_node_list_freep) SlurmNodeList *l = NULL;
                char *error = NULL;

                print_message("case: %s\n", c->name);
                assert_int_equal(slurm_nodes_parse_scontrol(c->line, strlen(c->line), &l, &error),
                                 0);
                assert_int_equal(l->n_nodes, 1);
                assert_string_equal(l->nodes[0].name, "a");
                assert_string_equal(l->nodes[0].reason, c->reason);
                assert_string_equal(l->nodes[0].reason_user, c->user);
                assert_true(l->nodes[0].reason_time_sec == c->time);
                assert_true(l->nodes[0].boot_time_sec == c->boot);
        }
}

static void test_scontrol_empty(void **state) {
        static const char *const texts[] = {"", "\n\n", "No nodes in the system\n"};

        for (size_t i = 0; i < ELEMENTSOF(texts); i++) {
                _cleanup_(slurm_node_list_freep) SlurmNodeList *l = NULL;

                assert_int_equal(slurm_nodes_parse_scontrol(texts[i], strlen(texts[i]), &l, NULL),
                                 0);
                assert_int_equal(l->n_nodes, 0);
        }
}

/* ------------------------------------------------------------------------ */
/* States */

typedef struct StateCase {
        const char *text;
        int r;
        SlurmNodeBase base;
        uint32_t flags;
} StateCase;

static const StateCase state_cases[] = {
        {"IDLE", 0, SLURM_NODE_IDLE, 0},
        {"idle", 0, SLURM_NODE_IDLE, 0},
        {"IDLE+DRAIN", 0, SLURM_NODE_IDLE, SLURM_NODE_DRAIN},
        {"DRAIN+IDLE", 0, SLURM_NODE_IDLE, SLURM_NODE_DRAIN},
        {"DOWN*", 0, SLURM_NODE_DOWN, SLURM_NODE_NOT_RESPONDING},
        {"DOWN*+DRAIN", 0, SLURM_NODE_DOWN, SLURM_NODE_NOT_RESPONDING | SLURM_NODE_DRAIN},
        {"MIXED+DRAIN+REBOOT_REQUESTED", 0, SLURM_NODE_MIXED,
         SLURM_NODE_DRAIN | SLURM_NODE_REBOOT_REQUESTED},
        {"IDLE+MAINT", 0, SLURM_NODE_IDLE, SLURM_NODE_MAINTENANCE},
        {"IDLE+NEWFLAG", 0, SLURM_NODE_IDLE, SLURM_NODE_FLAG_OTHER},
        {"IDLE+DOWN", 0, SLURM_NODE_IDLE, SLURM_NODE_FLAG_OTHER},
        {"DRAIN", 0, SLURM_NODE_UNKNOWN, SLURM_NODE_DRAIN},
        {"", -EBADMSG, 0, 0},
        {"IDLE+", -EBADMSG, 0, 0},
        {"+IDLE", -EBADMSG, 0, 0},
        {"IDLE++DRAIN", -EBADMSG, 0, 0},
        {"IDLE DRAIN", -EBADMSG, 0, 0},
        {"IDLE+DR-AIN", -EBADMSG, 0, 0},
};

static void test_state_parse(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(state_cases); i++) {
                const StateCase *c = &state_cases[i];
                SlurmNodeBase base = _SLURM_NODE_BASE_INVALID;
                uint32_t flags = 0;

                print_message("case: \"%s\"\n", c->text);
                assert_int_equal(slurm_node_state_parse(c->text, &base, &flags), c->r);
                if (c->r < 0)
                        continue;
                assert_int_equal(base, c->base);
                assert_int_equal(flags, c->flags);
        }
}

typedef struct PredicateCase {
        SlurmNodeBase base;
        uint32_t flags;
        bool drained, draining, unavailable;
} PredicateCase;

static const PredicateCase predicate_cases[] = {
        {SLURM_NODE_IDLE, 0, false, false, false},
        {SLURM_NODE_MIXED, 0, false, false, false},
        {SLURM_NODE_ALLOCATED, SLURM_NODE_RESERVED, false, false, false},
        {SLURM_NODE_IDLE, SLURM_NODE_DRAIN, true, false, true},
        {SLURM_NODE_DOWN, SLURM_NODE_DRAIN, true, false, true},
        {SLURM_NODE_IDLE, SLURM_NODE_DRAIN | SLURM_NODE_COMPLETING, false, true, true},
        {SLURM_NODE_MIXED, SLURM_NODE_DRAIN, false, true, true},
        {SLURM_NODE_IDLE, SLURM_NODE_COMPLETING, false, false, false},
        {SLURM_NODE_DOWN, 0, false, false, true},
        {SLURM_NODE_IDLE, SLURM_NODE_FAIL, false, false, true},
        {SLURM_NODE_IDLE, SLURM_NODE_NOT_RESPONDING, false, false, true},
        {SLURM_NODE_IDLE, SLURM_NODE_POWERED_DOWN, false, false, true},
        {SLURM_NODE_UNKNOWN, 0, false, false, true},
        {SLURM_NODE_FUTURE, 0, false, false, true},
        {SLURM_NODE_IDLE, SLURM_NODE_CLOUD | SLURM_NODE_DYNAMIC_NORM, false, false, false},
};

static void test_predicates(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(predicate_cases); i++) {
                const PredicateCase *c = &predicate_cases[i];
                SlurmNode n = {.base = c->base, .flags = c->flags};

                print_message("case %zu\n", i);
                assert_int_equal(slurm_node_is_drained(&n), c->drained);
                assert_int_equal(slurm_node_is_draining(&n), c->draining);
                assert_int_equal(slurm_node_is_unavailable(&n), c->unavailable);
        }
}

/* ------------------------------------------------------------------------ */
/* Work, counted in steps: every allocation and every string comparison the
 * code under test makes (the linker sends them here, Makefile.am). */

static size_t n_allocs, n_compares;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_strcmp(const char *a, const char *b);
int __real_memcmp(const void *a, const void *b, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_strcmp(const char *a, const char *b);
int __wrap_memcmp(const void *a, const void *b, size_t n);

void *__wrap_malloc(size_t n) {
        n_allocs++;
        return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size) {
        n_allocs++;
        return __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n) {
        n_allocs++;
        return __real_realloc(p, n);
}
char *__wrap_strdup(const char *s) {
        n_allocs++;
        return __real_strdup(s);
}
char *__wrap_strndup(const char *s, size_t n) {
        n_allocs++;
        return __real_strndup(s, n);
}
int __wrap_strcmp(const char *a, const char *b) {
        n_compares++;
        return __real_strcmp(a, b);
}
int __wrap_memcmp(const void *a, const void *b, size_t n) {
        n_compares++;
        return __real_memcmp(a, b, n);
}

static void work_reset(void) {
        n_allocs = n_compares = 0;
}

static void work_report(const char *what) {
        print_message("%s: %zu allocations, %zu comparisons\n", what, n_allocs, n_compares);
}

/* ------------------------------------------------------------------------ */
/* Hostlists */

typedef struct HostlistCase {
        const char *text;
        int r;
        const char *joined; /* names joined with ' ' */
} HostlistCase;

static const HostlistCase hostlist_cases[] = {
        {"", 0, ""},
        {"a", 0, "a"},
        {"slinky-[0-3]", 0, "slinky-0 slinky-1 slinky-2 slinky-3"},
        {"n[01-03,7]", 0, "n01 n02 n03 n7"},
        {"n[8-11]", 0, "n8 n9 n10 n11"},
        {"n[098-101]", 0, "n098 n099 n100 n101"},
        {"r[1-2]-n[1-2]", 0, "r1-n1 r1-n2 r2-n1 r2-n2"},
        {"a,b[1-2],c", 0, "a b1 b2 c"},
        {"n[1-2]-ib", 0, "n1-ib n2-ib"},
        {"[1-2]", 0, "1 2"},
        {"n[", -EBADMSG, NULL},
        {"n]", -EBADMSG, NULL},
        {"n[]", -EBADMSG, NULL},
        {"n[3-1]", -EBADMSG, NULL},
        {"n[1-]", -EBADMSG, NULL},
        {"n[-1]", -EBADMSG, NULL},
        {"n[a]", -EBADMSG, NULL},
        {"n[1,]", -EBADMSG, NULL},
        {"n[[1]]", -EBADMSG, NULL},
        {"a,,b", -EBADMSG, NULL},
        {",a", -EBADMSG, NULL},
        {"a,", -EBADMSG, NULL},
        {"a b", -EBADMSG, NULL},
        {"n[0-65536]", -ENOBUFS, NULL},
        {"n[0-9999999999]", -ENOBUFS, NULL},
        /* 65536^4 names: 2^64, which wraps to 0 in 64 bits unless checked per group. */
        {"n[1-65536]-[1-65536]-[1-65536]-[1-65536]", -ENOBUFS, NULL},
        {"n[1234567890123456789]", -EBADMSG, NULL},
};

static void test_hostlist(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(hostlist_cases); i++) {
                const HostlistCase *c = &hostlist_cases[i];
                char **names = NULL, joined[256] = "";
                size_t n = 99;

                print_message("case: \"%s\"\n", c->text);
                assert_int_equal(slurm_hostlist_expand(c->text, &names, &n), c->r);
                if (c->r < 0) {
                        assert_null(names);
                        continue;
                }
                for (size_t k = 0; k < n; k++) {
                        if (k > 0)
                                strcat(joined, " ");
                        strcat(joined, names[k]);
                }
                assert_null(names[n]);
                assert_string_equal(joined, c->joined);
                slurm_names_free(names);
        }
}

static void test_hostlist_limits(void **state) {
        char long_name[SLURM_MAX_NAME_BYTES + 2];
        char **names = NULL;
        size_t n;

        /* The largest expansion allowed, and one past it. */
        assert_int_equal(slurm_hostlist_expand("n[1-65536]", &names, &n), 0);
        assert_int_equal(n, SLURM_MAX_NODES);
        assert_string_equal(names[n - 1], "n65536");
        slurm_names_free(names);
        assert_int_equal(slurm_hostlist_expand("n[1-65536],x", &names, &n), -ENOBUFS);
        /* Bracket groups multiply, counted before anything is expanded. */
        {
                _cleanup_(slurm_hostlist_freep) SlurmHostlist *h = NULL;

                assert_int_equal(slurm_hostlist_parse("r[1-256]-n[1-256]", &h), 0);
                assert_int_equal(slurm_hostlist_count(h), SLURM_MAX_NODES);
                assert_int_equal(slurm_hostlist_parse("r[1-257]-n[1-256]", &h), -ENOBUFS);
                assert_int_equal(slurm_hostlist_parse("a[1-2]b[1-2]c[1-2],r[1-128]-n[1-512]", &h),
                                 -ENOBUFS);
                work_reset();
                assert_int_equal(slurm_hostlist_parse(
                                         "a[0-9]b[0-9]c[0-9]d[0-9]e[0-9]f[0-9]g[0-9]h[0-9]", &h),
                                 -ENOBUFS);
                assert_true(n_allocs <= 16);
        }

        memset(long_name, 'a', sizeof(long_name) - 1);
        long_name[sizeof(long_name) - 1] = '\0';
        assert_int_equal(slurm_hostlist_expand(long_name, &names, &n), -ENOBUFS);
        long_name[SLURM_MAX_NAME_BYTES] = '\0';
        assert_int_equal(slurm_hostlist_expand(long_name, &names, &n), 0);
        assert_int_equal(n, 1);
        slurm_names_free(names);
}

/* Membership is decided on the ranges, and agrees with the expansion. */
typedef struct ContainsCase {
        const char *hostlist;
        const char *in, *out; /* names joined with ' ' */
} ContainsCase;

static const ContainsCase contains_cases[] = {
        {"n[01-03,7]", "n01 n02 n03 n7", "n1 n07 n04 n003 n n01x"},
        {"n[8-11]", "n8 n10 n11", "n08 n7 n12 n010"},
        {"n[098-101]", "n098 n099 n100 n101", "n98 n99 n0100 n102"},
        {"r[1-2]-n[1-2],x", "r1-n1 r2-n2 x", "r3-n1 r1-n3 r1-n x1 r1n1"},
        /* Adjacent groups: 112 is 11 then 2, 121 is 12 then 1. */
        {"n[1-12][1-2]", "n11 n112 n121 n122", "n13 n1 n123 n0"},
        {"[1-2]", "1 2", "0 3 12"},
        {"", "", "a"},
};

static void test_hostlist_contains(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(contains_cases); i++) {
                const ContainsCase *c = &contains_cases[i];
                _cleanup_(slurm_hostlist_freep) SlurmHostlist *h = NULL;
                char **names = NULL;
                size_t n;

                print_message("case: \"%s\"\n", c->hostlist);
                assert_int_equal(slurm_hostlist_parse(c->hostlist, &h), 0);
                assert_int_equal(slurm_hostlist_expand(c->hostlist, &names, &n), 0);
                assert_int_equal(slurm_hostlist_count(h), n);
                for (size_t k = 0; k < n; k++)
                        assert_true(slurm_hostlist_contains(h, names[k]));
                slurm_names_free(names);
                for (int want = 1; want >= 0; want--) {
                        char list[128], *save = NULL;

                        snprintf(list, sizeof(list), "%s", want ? c->in : c->out);
                        for (char *w = strtok_r(list, " ", &save); w;
                             w = strtok_r(NULL, " ", &save))
                                assert_int_equal(slurm_hostlist_contains(h, w), want);
                }
        }
        assert_false(slurm_hostlist_contains(NULL, "a"));
}

/* 128 bytes found by fuzz-slurm (tests/fuzz/corpus/slurm/hostlist-cross-product):
 * one squeue line whose node list has eight bracket groups in one name,
 * (3*4*4*4)^2 = 36864 names, and r[1-2]-nK1. Expanding every job's list
 * and matching names against the expansion cost minutes. */
static void test_slow_hostlist_input(void **state) {
        _cleanup_(slurm_job_list_freep) SlurmJobList *l = NULL;
        _cleanup_free_ char *data = NULL, *error = NULL;
        char path[512];
        size_t len;
        /* 0xeb is kept, the control character 0x04 is read as '?'. */
        const char *first = "slkLETING|slkING|slin\xeb"
                            "y-1s-0-nk?sl0-n01ING|slin\xeb"
                            "y-1s-0-nk?sl0-n01";
        const char *last = "slkLETING|slkING|slin\xeb"
                           "y-3s-3-nk?sl3-n7ING|slin\xeb"
                           "y-3s-3-nk?sl3-n7";
        char *wanted[] = {S("r2-nK1")};

        snprintf(path, sizeof(path), "%s",
                 TEST_DATA_DIR "/../fuzz/corpus/slurm/hostlist-cross-product");
        assert_int_equal(read_file_at(AT_FDCWD, path, 0, 4096, &data, &len), 0);
        assert_int_equal(len, 128);
        assert_int_equal(data[0] % 5, 3); /* the fuzz target's squeue-lines parser */

        work_reset();
        assert_int_equal(slurm_jobs_parse_squeue(data + 1, len - 1, &l, &error), 0);
        work_report("parse");
        assert_int_equal(l->n_jobs, 1);
        assert_int_equal(l->jobs[0].n_nodes, 36864 + 2);
        /* Counted, not expanded: a handful of allocations for 128 bytes. */
        assert_true(n_allocs <= 64);

        work_reset();
        assert_true(slurm_job_has_node(&l->jobs[0], first));
        assert_true(slurm_job_has_node(&l->jobs[0], last));
        assert_true(slurm_job_has_node(&l->jobs[0], "r1-nK1"));
        assert_false(slurm_job_has_node(&l->jobs[0], "r3-nK1"));
        work_report("four lookups");
        assert_true(n_compares <= 4 * 64);
        assert_int_equal(n_allocs, 0);

        work_reset();
        slurm_job_list_keep_nodes(l, wanted, ELEMENTSOF(wanted));
        work_report("keep_nodes");
        assert_int_equal(l->n_jobs, 1);
        assert_true(n_compares <= 64);
}

/* Adjacent groups whose numbers run into each other: "[1,11]" sixteen
 * times is 65536 names, and a name of ones can be cut in many ways. */
static void test_hostlist_adjacent_groups(void **state) {
        _cleanup_(slurm_hostlist_freep) SlurmHostlist *h = NULL;
        char list[16 * 6 + 2] = "", ones[40];

        for (size_t i = 0; i < 16; i++)
                strcat(list, "[1,11]");
        strcat(list, "x");
        assert_int_equal(slurm_hostlist_parse(list, &h), 0);
        assert_int_equal(slurm_hostlist_count(h), 65536);

        memset(ones, '1', 32);
        strcpy(ones + 32, "x");
        work_reset();
        assert_true(slurm_hostlist_contains(h, ones));
        strcpy(ones + 32, "y"); /* every cut fails at the end */
        assert_false(slurm_hostlist_contains(h, ones));
        work_report("two lookups");
        /* One comparison per segment and reachable position, at most. */
        assert_true(n_compares <= 2 * 17 * 33);
}

/* A large cluster as Slurm prints it: NODES nodes, JOBS jobs on one to eight
 * of them (some on two racks' worth of bracket groups), a rollout's batch of
 * WANTED nodes. Work stays linear: a bounded number of allocations per line,
 * comparisons per job times log(WANTED). */
#define NODES  8192u
#define JOBS   20000u
#define WANTED 2048u

static void test_large_cluster(void **state) {
        _cleanup_(slurm_node_list_freep) SlurmNodeList *nodes = NULL;
        _cleanup_(slurm_job_list_freep) SlurmJobList *jobs = NULL;
        _cleanup_free_ char *text = NULL, *error = NULL;
        char **wanted;
        size_t size = 0, kept;
        FILE *f;

        f = open_memstream(&text, &size);
        assert_non_null(f);
        for (unsigned i = 0; i < NODES; i++)
                fprintf(f,
                        "NodeName=gpu-%05u Arch=x86_64 CPUTot=64 State=%s BootTime=1796221304 "
                        "SlurmdStartTime=1796233841 Partitions=all%s\n",
                        i, i % 7 ? "MIXED" : "IDLE+DRAIN",
                        i % 7 ? "" : " Reason=kernel update [root@1796233851]");
        assert_int_equal(fclose(f), 0);
        work_reset();
        assert_int_equal(slurm_nodes_parse_scontrol(text, size, &nodes, &error), 0);
        work_report("nodes");
        assert_int_equal(nodes->n_nodes, NODES);
        assert_true(n_allocs <= 16 * NODES);
        free(text);
        text = NULL;

        f = open_memstream(&text, &size);
        assert_non_null(f);
        for (unsigned i = 0; i < JOBS; i++) {
                unsigned first = (i * 7) % (NODES - 8), span = i % 8;

                if (i % 10 == 9)
                        fprintf(f, "%u|PENDING|\n", i + 1);
                else if (i % 10 == 8)
                        fprintf(f, "%u|RUNNING|gpu-[%05u-%05u],r[1-2]-n[01-02]\n", i + 1, first,
                                first + span);
                else
                        fprintf(f, "%u|RUNNING|gpu-[%05u-%05u]\n", i + 1, first, first + span);
        }
        assert_int_equal(fclose(f), 0);
        work_reset();
        assert_int_equal(slurm_jobs_parse_squeue(text, size, &jobs, &error), 0);
        work_report("jobs");
        assert_int_equal(jobs->n_jobs, JOBS);
        assert_true(n_allocs <= 16 * JOBS);

        /* Every fourth node: the jobs on them are kept, the others freed. */
        wanted = calloc(WANTED, sizeof(char *));
        assert_non_null(wanted);
        for (unsigned i = 0; i < WANTED; i++)
                assert_true(asprintf(&wanted[i], "gpu-%05u", i * 4) > 0);
        work_reset();
        slurm_job_list_keep_nodes(jobs, wanted, WANTED);
        work_report("keep_nodes");
        kept = jobs->n_jobs;
        assert_true(kept > 0 && kept < JOBS);
        for (size_t i = 0; i < kept; i++)
                assert_true(slurm_job_is_active(&jobs->jobs[i]));
        /* Per job: its names (at most 12), each looked up among WANTED in
         * about 12 comparisons; per wanted name: the sort. */
        assert_true(n_compares <= 12 * 16 * JOBS + 32 * WANTED);
        for (unsigned i = 0; i < WANTED; i++)
                free(wanted[i]);
        free(wanted);
}

/* ------------------------------------------------------------------------ */
/* The runner, against fake commands */

static char fake_dir[] = "/tmp/test-slurm.XXXXXX";

static char *fake(const char *name, const char *body) {
        char *path = NULL;
        FILE *f;

        assert_true(asprintf(&path, "%s/%s", fake_dir, name) > 0);
        f = fopen(path, "we");
        assert_non_null(f);
        fprintf(f, "#!/bin/sh\n%s\n", body);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(chmod(path, 0755), 0);
        return path;
}

static int setup_fakes(void **state) {
        return mkdtemp(fake_dir) ? 0 : -1;
}

static int teardown_fakes(void **state) {
        char *cmd = NULL;

        if (asprintf(&cmd, "rm -rf '%s'", fake_dir) > 0)
                (void) !system(cmd);
        free(cmd);
        return 0;
}

static SlurmClient *client(const char *sinfo, const char *squeue, const char *scontrol,
                           SlurmFormat format, uint64_t timeout_usec, size_t max_output) {
        SlurmConfig cfg = {
                .sinfo = sinfo,
                .squeue = squeue,
                .scontrol = scontrol,
                .format = format,
                .timeout_usec = timeout_usec,
                .max_output_bytes = max_output,
        };
        SlurmClient *c = NULL;

        assert_int_equal(slurm_client_new(&cfg, &c), 0);
        return c;
}

/* The default reads the field lists whose meaning holds from Slurm 22.05 to
 * 26.05, whatever the version: no `scontrol --version`, no JSON tried. */
static void test_auto_reads_text(void **state) {
        _cleanup_free_ char *scontrol =
                fake("scontrol-text",
                     "case \"$*\" in '--all --oneliner show node') [ \"$SLURM_TIME_FORMAT\" = %s ] "
                     "&& cat " DATA "nodes-busy.scontrol.txt;;\n"
                     "*) echo \"unexpected: $*\" >&2; exit 9;; esac");
        _cleanup_free_ char *squeue =
                fake("squeue-text", "case \"$*\" in '--all --noheader --states=all "
                                    "--format=%A|%T|%N') cat " DATA "jobs-busy.squeue.txt;;\n"
                                    "*) echo \"unexpected: $*\" >&2; exit 9;; esac");
        _cleanup_(slurm_client_freep) SlurmClient *c =
                client("false", squeue, scontrol, SLURM_FORMAT_AUTO, 0, 0);
        _cleanup_(slurm_node_list_freep) SlurmNodeList *nodes = NULL;
        _cleanup_(slurm_job_list_freep) SlurmJobList *all = NULL, *some = NULL;
        SlurmCommandReport report = {};
        char *on[] = {S("slinky-4"), S("slinky-3")};

        assert_int_equal(slurm_client_format(c), SLURM_FORMAT_AUTO);
        assert_int_equal(slurm_read_nodes(c, &nodes, &report), 0);
        assert_null(report.error);
        assert_int_equal(nodes->n_nodes, 8);
        assert_string_equal(slurm_node_list_find(nodes, "slinky-1")->reason, OURS);
        assert_int_equal(slurm_client_format(c), SLURM_FORMAT_TEXT);
        assert_null(slurm_client_version(c));

        assert_int_equal(slurm_read_jobs(c, NULL, 0, &all, &report), 0);
        assert_int_equal(all->n_jobs, 6);
        assert_int_equal(slurm_read_jobs(c, on, ELEMENTSOF(on), &some, &report), 0);
        assert_int_equal(some->n_jobs, 3);
        assert_int_equal(some->jobs[0].job_id, 3);
        assert_int_equal(some->jobs[1].job_id, 4);
        assert_int_equal(some->jobs[2].job_id, 5);
        slurm_command_report_done(&report);
}

/* The same fields as later Slurm prints them (tests/data/slurm/README.md:
 * derived from upstream source, not captured). */
static void test_upstream_text(void **state) {
        _cleanup_(slurm_node_list_freep) SlurmNodeList *nodes =
                nodes_text("nodes-upstream.scontrol.txt");
        _cleanup_(slurm_job_list_freep) SlurmJobList *jobs = jobs_text("jobs-upstream.squeue.txt");
        const SlurmNode *n;
        const SlurmJob *j;

        assert_int_equal(nodes->n_nodes, 4);
        n = slurm_node_list_find(nodes, "slinky-0");
        assert_string_equal(n->state, "IDLE+DYNAMIC_NORM");
        assert_false(slurm_node_is_unavailable(n));
        assert_string_equal(n->reason, "");
        assert_true(n->boot_time_sec == 1796221304);
        assert_true(n->slurmd_start_time_sec == 1796233841);
        n = slurm_node_list_find(nodes, "slinky-1");
        assert_string_equal(n->state, "MIXED+DRAIN+DYNAMIC_NORM");
        assert_true(slurm_node_is_draining(n));
        assert_string_equal(n->reason, OURS);
        assert_string_equal(n->reason_user, "slurm");
        assert_true(n->reason_time_sec == 1796233851);
        n = slurm_node_list_find(nodes, "slinky-2");
        assert_string_equal(n->state, "DOWN+NOT_RESPONDING+DYNAMIC_NORM");
        assert_string_equal(n->reason, PRESTOP);
        assert_string_equal(n->reason_user, "slurm");
        /* A reason without [user@time], then Comment= and Extra=. */
        n = slurm_node_list_find(nodes, "slinky-3");
        assert_string_equal(n->state, "IDLE+DRAIN+DYNAMIC_NORM");
        assert_true(slurm_node_is_drained(n));
        assert_string_equal(n->reason, "bad DIMM");
        assert_string_equal(n->reason_user, "");

        assert_int_equal(jobs->n_jobs, 4);
        j = find_job(jobs, 41);
        assert_true(slurm_job_is_active(j));
        assert_int_equal(j->n_nodes, 2);
        assert_true(slurm_job_has_node(j, "slinky-1"));
        j = find_job(jobs, 42);
        assert_string_equal(j->state, "COMPLETING");
        assert_true(slurm_job_is_active(j));
        j = find_job(jobs, 43);
        assert_true(slurm_job_is_pending(j));
        j = find_job(jobs, 44);
        assert_false(slurm_job_is_active(j));
}

/* JSON, when asked for: 22.05 lists nodes with `sinfo --json`. */
static void test_json_2205(void **state) {
        _cleanup_free_ char *scontrol = fake(
                "scontrol-2205", "case $1 in --version) echo 'slurm 22.05.8';; *) exit 9;; esac");
        _cleanup_free_ char *sinfo =
                fake("sinfo-2205",
                     "[ \"$*\" = '--json --all' ] || exit 8\ncat " DATA "nodes-busy.sinfo.json");
        _cleanup_free_ char *squeue =
                fake("squeue-2205",
                     "[ \"$*\" = '--json --all' ] || exit 8\ncat " DATA "jobs-busy.squeue.json");
        _cleanup_(slurm_client_freep) SlurmClient *c =
                client(sinfo, squeue, scontrol, SLURM_FORMAT_JSON, 0, 0);
        _cleanup_(slurm_node_list_freep) SlurmNodeList *nodes = NULL;
        _cleanup_(slurm_job_list_freep) SlurmJobList *all = NULL, *some = NULL;
        SlurmCommandReport report = {};
        char *on[] = {S("slinky-4"), S("slinky-3")};

        assert_int_equal(slurm_read_nodes(c, &nodes, &report), 0);
        assert_null(report.error);
        assert_int_equal(report.exit_status, 0);
        assert_int_equal(nodes->n_nodes, 8);
        assert_int_equal(slurm_client_format(c), SLURM_FORMAT_JSON);
        assert_string_equal(slurm_client_version(c), "22.05.8");

        assert_int_equal(slurm_read_jobs(c, NULL, 0, &all, &report), 0);
        assert_int_equal(all->n_jobs, 6);
        /* squeue --json ignores node filters: the module filters. */
        assert_int_equal(slurm_read_jobs(c, on, ELEMENTSOF(on), &some, &report), 0);
        assert_int_equal(some->n_jobs, 3);
        assert_int_equal(some->jobs[0].job_id, 3);
        assert_int_equal(some->jobs[1].job_id, 4);
        assert_int_equal(some->jobs[2].job_id, 5);
        slurm_command_report_done(&report);
}

/* JSON from 23.02 on: nodes from `scontrol --json show node`. */
static void test_json_2311(void **state) {
        _cleanup_free_ char *scontrol =
                fake("scontrol-2311", "case \"$*\" in --version) echo 'slurm 23.11.4';;\n"
                                      "'--json --all show node') echo "
                                      "'{\"nodes\":[{\"name\":\"x\",\"state\":[\"IDLE\"]}]}';;\n"
                                      "*) echo \"unexpected: $*\" >&2; exit 9;; esac");
        _cleanup_(slurm_client_freep) SlurmClient *c =
                client("false", "false", scontrol, SLURM_FORMAT_JSON, 0, 0);
        _cleanup_(slurm_node_list_freep) SlurmNodeList *nodes = NULL;
        SlurmCommandReport report = {};

        assert_int_equal(slurm_read_nodes(c, &nodes, &report), 0);
        assert_int_equal(nodes->n_nodes, 1);
        assert_string_equal(nodes->nodes[0].state, "IDLE");
        assert_non_null(strstr(report.command_line, "--json --all show node"));
        slurm_command_report_done(&report);
}

/* JSON forced: a failure is a failure, no fallback. */
static void test_forced_json_fails(void **state) {
        _cleanup_free_ char *scontrol = fake("scontrol-v", "echo 'slurm 22.05.8'");
        _cleanup_free_ char *sinfo =
                fake("sinfo-nj", "echo \"sinfo: unrecognized option '--json'\" >&2\nexit 1");
        _cleanup_(slurm_client_freep) SlurmClient *c =
                client(sinfo, "false", scontrol, SLURM_FORMAT_JSON, 0, 0);
        SlurmNodeList *nodes = NULL;
        SlurmCommandReport report = {};

        assert_int_equal(slurm_read_nodes(c, &nodes, &report), -EIO);
        assert_null(nodes);
        assert_int_equal(slurm_client_format(c), SLURM_FORMAT_JSON);
        assert_non_null(
                strstr(report.error, "exited with status 1: sinfo: unrecognized option '--json'"));
        slurm_command_report_done(&report);
}

static void test_controller_down_exit_0(void **state) {
        _cleanup_free_ char *sinfo = fake("sinfo-down", "cat " DATA "nodes-noctld.sinfo.json");
        _cleanup_free_ char *scontrol = fake("scontrol-down", "echo 'slurm 22.05.8'");
        _cleanup_(slurm_client_freep) SlurmClient *c =
                client(sinfo, "false", scontrol, SLURM_FORMAT_JSON, 0, 0);
        SlurmNodeList *nodes = NULL;
        SlurmCommandReport report = {};

        assert_int_equal(slurm_read_nodes(c, &nodes, &report), -EIO);
        assert_int_equal(report.exit_status, 0);
        assert_non_null(strstr(report.error,
                               "--json --all' failed: Slurm reported an error: Unspecified error"));
        slurm_command_report_done(&report);
}

static void test_failures(void **state) {
        _cleanup_free_ char *sleeper = fake("sleeper", "exec sleep 10");
        _cleanup_free_ char *chatty = fake("chatty", "head -c 1048576 /dev/zero | tr '\\0' x");
        _cleanup_free_ char *failing =
                fake("failing", "echo 'slurm_update error: Invalid node name specified' >&2\necho "
                                "second line >&2\nexit 1");
        _cleanup_free_ char *killed = fake("killed", "kill -TERM $$");
        _cleanup_free_ char *daemonish = fake("daemonish", "exec >/dev/null 2>&1\nsleep 10");
        _cleanup_free_ char *garbage = fake("garbage", "echo '{\"nodes\": 1}'");
        const struct {
                const char *name, *scontrol, *sinfo;
                size_t max_output;
                int r, exit_status;
                const char *error;
        } cases[] = {
                {"timeout", sleeper, NULL, 0, -ETIME, -1, "timed out after 0.3 s"},
                {"closes its output and goes on", daemonish, NULL, 0, -ETIME, -1,
                 "timed out after 0.3 s"},
                {"output over the cap", chatty, NULL, 65536, -EFBIG, -1,
                 "printed more than 65536 bytes"},
                {"exit status and first stderr line", failing, NULL, 0, -EIO, 1,
                 "exited with status 1: slurm_update error: Invalid node name specified"},
                {"killed", killed, NULL, 0, -EIO, 128 + SIGTERM, "was killed by signal 15"},
                {"not found", "/nonexistent/scontrol", NULL, 0, -ENOENT, -1,
                 "could not run: No such file or directory"},
                {"not in PATH", "scontrol-that-does-not-exist", NULL, 0, -ENOENT, -1,
                 "could not run"},
                {"a directory", fake_dir, NULL, 0, -EACCES, -1, "could not run"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(slurm_client_freep) SlurmClient *c =
                        client("false", "false", cases[i].scontrol, SLURM_FORMAT_TEXT, 300000,
                               cases[i].max_output);
                SlurmNodeList *nodes = NULL;
                SlurmCommandReport report = {};
                struct timespec t0, t1;
                double seconds;

                print_message("case: %s\n", cases[i].name);
                clock_gettime(CLOCK_MONOTONIC, &t0);
                assert_int_equal(slurm_read_nodes(c, &nodes, &report), cases[i].r);
                clock_gettime(CLOCK_MONOTONIC, &t1);
                seconds =
                        (double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9;
                assert_true(seconds < 5);
                assert_null(nodes);
                assert_int_equal(report.exit_status, cases[i].exit_status);
                assert_non_null(report.error);
                print_message("error: %s\n", report.error);
                assert_non_null(strstr(report.error, cases[i].error));
                /* Every message names the command line. */
                assert_non_null(strstr(report.error, "--all --oneliner show node"));
                slurm_command_report_done(&report);
        }

        {
                _cleanup_(slurm_client_freep) SlurmClient *c =
                        client(garbage, "false", "false", SLURM_FORMAT_JSON, 0, 0);
                SlurmNodeList *nodes = NULL;
                SlurmCommandReport report = {};

                /* JSON forced without a version: the version probe fails first. */
                assert_int_equal(slurm_read_nodes(c, &nodes, &report), -EIO);
                assert_non_null(strstr(report.error, "'false --version' exited with status 1"));
                slurm_command_report_done(&report);
        }
}

static void test_unparsable_output(void **state) {
        _cleanup_free_ char *scontrol = fake("scontrol-garbage", "echo 'Hello there'");
        _cleanup_(slurm_client_freep) SlurmClient *c =
                client("false", "false", scontrol, SLURM_FORMAT_TEXT, 0, 0);
        SlurmNodeList *nodes = NULL;
        SlurmCommandReport report = {};

        assert_int_equal(slurm_read_nodes(c, &nodes, &report), -EBADMSG);
        assert_int_equal(report.exit_status, 0);
        assert_non_null(strstr(report.error, "printed output that could not be read: a line that "
                                             "does not start with NodeName="));
        slurm_command_report_done(&report);
}

/* The argv scontrol gets, the environment, stdin, and descriptors. */
static void test_update_commands(void **state) {
        _cleanup_free_ char *scontrol =
                fake("scontrol-args", "for a in \"$@\"; do echo \"[$a]\" >&2; done\n"
                                      "echo "
                                      "\"env:$SLURM_TIME_FORMAT|${SQUEUE_FORMAT-unset}|${SINFO_"
                                      "PARTITION-unset}|$SLURM_CONF\" >&2\n"
                                      "cat >/dev/null\n"
                                      "[ -e /proc/$$/fd/$LEAK_FD ] && echo leaked >&2\n"
                                      "exit 0");
        _cleanup_(slurm_client_freep) SlurmClient *c =
                client("false", "false", scontrol, SLURM_FORMAT_AUTO, 5000000, 0);
        char *two[] = {S("slinky-1"), S("slinky-2")};
        char *one[] = {S("slinky-3")};
        SlurmCommandReport report = {};
        char fd_text[16];
        int leak;

        /* A descriptor without O_CLOEXEC must not reach the command. */
        leak = open("/dev/null", O_RDONLY);
        assert_true(leak >= 0);
        snprintf(fd_text, sizeof(fd_text), "%d", leak);
        setenv("LEAK_FD", fd_text, 1);
        setenv("SQUEUE_FORMAT", "%i", 1);
        setenv("SINFO_PARTITION", "debug", 1);
        setenv("SLURM_CONF", "/etc/slurm-test/slurm.conf", 1);
        setenv("SLURM_TIME_FORMAT", "relative", 1);

        assert_int_equal(
                slurm_drain_nodes(c, two, 2, "aicr rollout r1: enroot's config = new", &report), 0);
        assert_null(report.error);
        assert_int_equal(report.exit_status, 0);
        assert_string_equal(report.stderr_text,
                            "[update]\n[NodeName=slinky-1,slinky-2]\n[State=DRAIN]\n"
                            "[Reason=aicr rollout r1: enroot's config = new]\n"
                            "env:%s|unset|unset|/etc/slurm-test/slurm.conf\n");
        assert_non_null(strstr(report.command_line,
                               "scontrol-args update NodeName=slinky-1,slinky-2 State=DRAIN "
                               "'Reason=aicr rollout r1: enroot'\\''s config = new'"));

        assert_int_equal(slurm_resume_nodes(c, one, 1, &report), 0);
        assert_non_null(
                strstr(report.stderr_text, "[update]\n[NodeName=slinky-3]\n[State=RESUME]\nenv:"));
        assert_int_equal(slurm_down_nodes(c, one, 1, "slurm-operator: Pod is terminating", NULL),
                         0);
        assert_int_equal(slurm_down_nodes(c, one, 1, "x", &report), 0);
        assert_non_null(strstr(report.stderr_text, "[State=DOWN]\n[Reason=x]\n"));

        unsetenv("LEAK_FD");
        unsetenv("SQUEUE_FORMAT");
        unsetenv("SINFO_PARTITION");
        unsetenv("SLURM_CONF");
        unsetenv("SLURM_TIME_FORMAT");
        close(leak);
        slurm_command_report_done(&report);
}

static void test_update_refusals(void **state) {
        _cleanup_free_ char *marker = NULL;
        _cleanup_free_ char *scontrol = NULL;
        _cleanup_(slurm_client_freep) SlurmClient *c = NULL;
        char long_reason[SLURM_MAX_REASON_BYTES + 2];
        struct {
                char name[16];
                const char *reason;
        } cases[] = {
                {"ALL", "x"},   {"all", "x"},        {"n[1-2]", "x"},     {"a,b", "x"},
                {"", "x"},      {"a b", "x"},        {"-a", "x"},         {"a=b", "x"},
                {"a", ""},      {"a", "\"quoted\""}, {"a", "two\nlines"}, {"a", long_reason},
                {"a", "end\""},
        };
        SlurmCommandReport report = {};
        char *none[] = {NULL};

        assert_true(asprintf(&marker, "%s/ran", fake_dir) > 0);
        {
                char *body = NULL;
                assert_true(asprintf(&body, "touch '%s'", marker) > 0);
                scontrol = fake("scontrol-marker", body);
                free(body);
        }
        c = client("false", "false", scontrol, SLURM_FORMAT_AUTO, 0, 0);
        memset(long_reason, 'r', sizeof(long_reason) - 1);
        long_reason[sizeof(long_reason) - 1] = '\0';

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *names[] = {S("ok-1"), cases[i].name};

                print_message("case: name \"%s\"\n", cases[i].name);
                assert_int_equal(slurm_drain_nodes(c, names, 2, cases[i].reason, &report), -EINVAL);
                assert_non_null(report.error);
                assert_null(report.command_line);
                assert_int_equal(slurm_down_nodes(c, names, 2, cases[i].reason, NULL), -EINVAL);
        }
        assert_int_equal(slurm_resume_nodes(c, none, 0, &report), -EINVAL);
        assert_non_null(strstr(report.error, "0 nodes named"));
        assert_int_equal(slurm_resume_nodes(c, NULL, 3, &report), -EINVAL);
        assert_int_equal(slurm_drain_nodes(c, (char *[]){S("a")}, 1, NULL, &report), -EINVAL);
        assert_int_equal(access(marker, F_OK), -1);

        /* The longest reason allowed runs. */
        long_reason[SLURM_MAX_REASON_BYTES] = '\0';
        assert_int_equal(slurm_drain_nodes(c, (char *[]){S("a")}, 1, long_reason, &report), 0);
        assert_int_equal(access(marker, F_OK), 0);
        slurm_command_report_done(&report);
}

static void test_client_config(void **state) {
        SlurmClient *c = NULL;

        assert_int_equal(
                slurm_client_new(&(SlurmConfig){.max_output_bytes = SLURM_MAX_OUTPUT_BYTES + 1},
                                 &c),
                -EINVAL);
        assert_int_equal(slurm_client_new(&(SlurmConfig){.format = _SLURM_FORMAT_MAX}, &c),
                         -EINVAL);
        assert_null(c);
        assert_int_equal(slurm_format_from_string("json"), SLURM_FORMAT_JSON);
        assert_int_equal(slurm_format_from_string("yaml"), _SLURM_FORMAT_INVALID);
        assert_string_equal(slurm_format_to_string(SLURM_FORMAT_TEXT), "text");
        assert_null(slurm_client_free(NULL));
        assert_null(slurm_node_list_free(NULL));
        assert_null(slurm_job_list_free(NULL));
        slurm_command_report_done(NULL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_nodes_recorded),
                cmocka_unit_test(test_nodes_json_equals_text),
                cmocka_unit_test(test_controller_down),
                cmocka_unit_test(test_jobs_recorded),
                cmocka_unit_test(test_jobs_empty),
                cmocka_unit_test(test_modern_json),
                cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_scontrol_reasons),
                cmocka_unit_test(test_scontrol_empty),
                cmocka_unit_test(test_state_parse),
                cmocka_unit_test(test_predicates),
                cmocka_unit_test(test_hostlist),
                cmocka_unit_test(test_hostlist_limits),
                cmocka_unit_test(test_hostlist_contains),
                cmocka_unit_test(test_slow_hostlist_input),
                cmocka_unit_test(test_hostlist_adjacent_groups),
                cmocka_unit_test(test_large_cluster),
                cmocka_unit_test(test_auto_reads_text),
                cmocka_unit_test(test_upstream_text),
                cmocka_unit_test(test_json_2205),
                cmocka_unit_test(test_json_2311),
                cmocka_unit_test(test_forced_json_fails),
                cmocka_unit_test(test_controller_down_exit_0),
                cmocka_unit_test(test_failures),
                cmocka_unit_test(test_unparsable_output),
                cmocka_unit_test(test_update_commands),
                cmocka_unit_test(test_update_refusals),
                cmocka_unit_test(test_client_config),
        };

        return cmocka_run_group_tests(tests, setup_fakes, teardown_fakes);
}
