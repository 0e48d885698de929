/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>

#include "slurm-parse.h"
#include "slurm.h"
#include "strbuf.h"
#include "string-table.h"

/* ------------------------------------------------------------------------ */
/* Names */

static const char *const slurm_node_base_table[_SLURM_NODE_BASE_MAX] = {
        [SLURM_NODE_UNKNOWN] = "UNKNOWN", [SLURM_NODE_DOWN] = "DOWN",
        [SLURM_NODE_IDLE] = "IDLE",       [SLURM_NODE_ALLOCATED] = "ALLOCATED",
        [SLURM_NODE_ERROR] = "ERROR",     [SLURM_NODE_MIXED] = "MIXED",
        [SLURM_NODE_FUTURE] = "FUTURE",
};

typedef struct FlagName {
        uint32_t flag;
        const char *name;
} FlagName;

/* Slurm's node_state_flags[] table (src/common/slurm_protocol_defs.c), and
 * the older spellings MAINT and NO_RESPOND. */
static const FlagName node_flag_names[] = {
        {SLURM_NODE_DRAIN, "DRAIN"},
        {SLURM_NODE_COMPLETING, "COMPLETING"},
        {SLURM_NODE_NOT_RESPONDING, "NOT_RESPONDING"},
        {SLURM_NODE_FAIL, "FAIL"},
        {SLURM_NODE_REBOOT_REQUESTED, "REBOOT_REQUESTED"},
        {SLURM_NODE_REBOOT_ISSUED, "REBOOT_ISSUED"},
        {SLURM_NODE_MAINTENANCE, "MAINTENANCE"},
        {SLURM_NODE_RESERVED, "RESERVED"},
        {SLURM_NODE_POWER_DOWN, "POWER_DOWN"},
        {SLURM_NODE_POWER_UP, "POWER_UP"},
        {SLURM_NODE_POWERED_DOWN, "POWERED_DOWN"},
        {SLURM_NODE_POWERING_DOWN, "POWERING_DOWN"},
        {SLURM_NODE_POWERING_UP, "POWERING_UP"},
        {SLURM_NODE_CLOUD, "CLOUD"},
        {SLURM_NODE_INVALID_REG, "INVALID_REG"},
        {SLURM_NODE_DYNAMIC_FUTURE, "DYNAMIC_FUTURE"},
        {SLURM_NODE_DYNAMIC_NORM, "DYNAMIC_NORM"},
        {SLURM_NODE_PLANNED, "PLANNED"},
        {SLURM_NODE_RESUME, "RESUME"},
        {SLURM_NODE_PERFCTRS, "PERFCTRS"},
        {SLURM_NODE_BLOCKED, "BLOCKED"},
        {SLURM_NODE_EXTERNAL, "EXTERNAL"},
        {SLURM_NODE_MAINTENANCE, "MAINT"},
        {SLURM_NODE_NOT_RESPONDING, "NO_RESPOND"},
};

/* Slurm's job_state_string() words, base states and flags. */
static const FlagName job_state_names[] = {
        {SLURM_JOB_PENDING, "PENDING"},       {SLURM_JOB_RUNNING, "RUNNING"},
        {SLURM_JOB_SUSPENDED, "SUSPENDED"},   {SLURM_JOB_COMPLETED, "COMPLETED"},
        {SLURM_JOB_CANCELLED, "CANCELLED"},   {SLURM_JOB_FAILED, "FAILED"},
        {SLURM_JOB_TIMEOUT, "TIMEOUT"},       {SLURM_JOB_NODE_FAIL, "NODE_FAIL"},
        {SLURM_JOB_PREEMPTED, "PREEMPTED"},   {SLURM_JOB_BOOT_FAIL, "BOOT_FAIL"},
        {SLURM_JOB_DEADLINE, "DEADLINE"},     {SLURM_JOB_OUT_OF_MEMORY, "OUT_OF_MEMORY"},
        {SLURM_JOB_COMPLETING, "COMPLETING"}, {SLURM_JOB_CONFIGURING, "CONFIGURING"},
        {SLURM_JOB_STOPPED, "STOPPED"},       {SLURM_JOB_RESIZING, "RESIZING"},
        {SLURM_JOB_REQUEUED, "REQUEUED"},     {SLURM_JOB_SIGNALING, "SIGNALING"},
        {SLURM_JOB_STAGE_OUT, "STAGE_OUT"},   {SLURM_JOB_COMPLETED, "COMPLETE"},
        {SLURM_JOB_OUT_OF_MEMORY, "OOM"},
};

DEFINE_STRING_TABLE_TO_STRING(slurm_node_base, SlurmNodeBase);

static const char *flag_to_string(const FlagName *table, size_t n, uint32_t flag) {
        for (size_t i = 0; i < n; i++)
                if (table[i].flag == flag)
                        return table[i].name;
        return NULL;
}

const char *slurm_node_flag_to_string(SlurmNodeFlag f) {
        return flag_to_string(node_flag_names, ELEMENTSOF(node_flag_names), (uint32_t) f);
}

const char *slurm_job_state_to_string(SlurmJobState s) {
        return flag_to_string(job_state_names, ELEMENTSOF(job_state_names), (uint32_t) s);
}

/* State words are upper-case identifiers; JSON 22.05 writes the base in lower case. */
static bool word_is_valid(const char *w, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) w[i]) && w[i] != '_')
                        return false;
        return n > 0;
}

static bool word_eq(const char *w, size_t n, const char *name) {
        return strlen(name) == n && strncasecmp(w, name, n) == 0;
}

static uint32_t flag_from_word(const FlagName *table, size_t n_table, const char *w, size_t n) {
        for (size_t i = 0; i < n_table; i++)
                if (word_eq(w, n, table[i].name))
                        return table[i].flag;
        return 0;
}

/* Appends one word, upper case, after a '+' unless first. */
static int put_word(StrBuf *b, const char *w, size_t n) {
        int r;

        if (b->len > 0) {
                r = strbuf_putc(b, '+');
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n; i++) {
                r = strbuf_putc(b, (char) toupper((unsigned char) w[i]));
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Parses '+'-separated words; with ret_state, also the normalized text
 * (known base first, then every other word in order). */
static int node_state_parse(const char *s, SlurmNodeBase *ret_base, uint32_t *ret_flags,
                            char **ret_state) {
        /* Room for the base in front of the rest, within SLURM_MAX_TEXT_BYTES. */
        _cleanup_(strbuf_done) StrBuf rest = STRBUF_INIT(SLURM_MAX_TEXT_BYTES - 32);
        _cleanup_(strbuf_done) StrBuf out = STRBUF_INIT(SLURM_MAX_TEXT_BYTES);
        SlurmNodeBase base = _SLURM_NODE_BASE_INVALID;
        uint32_t flags = 0;
        int r;

        if (!s || !*s)
                return -EBADMSG;

        for (const char *p = s;;) {
                size_t n = strcspn(p, "+");
                const char *w = p;
                bool known = false;

                /* Before Slurm 21.08 scontrol wrote "DOWN*" for a node not responding. */
                if (n > 1 && w[n - 1] == '*') {
                        flags |= SLURM_NODE_NOT_RESPONDING;
                        n--;
                        r = put_word(&rest, "NOT_RESPONDING", strlen("NOT_RESPONDING"));
                        if (r < 0 && r != -ENOBUFS)
                                return r;
                }
                if (n == 0 || !word_is_valid(w, n))
                        return -EBADMSG;

                for (SlurmNodeBase b = 0; b < _SLURM_NODE_BASE_MAX; b++)
                        if (word_eq(w, n, slurm_node_base_table[b])) {
                                known = true;
                                if (base < 0)
                                        base = b;
                                else {
                                        /* two bases: keep the second as an unknown flag */
                                        flags |= SLURM_NODE_FLAG_OTHER;
                                        r = put_word(&rest, w, n);
                                        if (r < 0 && r != -ENOBUFS)
                                                return r;
                                }
                        }
                if (!known) {
                        uint32_t f =
                                flag_from_word(node_flag_names, ELEMENTSOF(node_flag_names), w, n);
                        flags |= f ? f : SLURM_NODE_FLAG_OTHER;
                        r = put_word(&rest, f ? slurm_node_flag_to_string(f) : w,
                                     f ? strlen(slurm_node_flag_to_string(f)) : n);
                        if (r < 0 && r != -ENOBUFS)
                                return r;
                }

                p += n;
                if (*p == '*')
                        p++;
                if (!*p)
                        break;
                p++; /* '+' */
                if (!*p)
                        return -EBADMSG;
        }

        if (ret_state) {
                if (base >= 0) {
                        r = strbuf_puts(&out, slurm_node_base_table[base]);
                        if (r < 0)
                                return r;
                }
                if (rest.len > 0) {
                        if (out.len > 0 && (r = strbuf_putc(&out, '+')) < 0 && r != -ENOBUFS)
                                return r;
                        r = strbuf_append(&out, strbuf_str(&rest), rest.len);
                        if (r < 0 && r != -ENOBUFS)
                                return r;
                }
                *ret_state = strbuf_steal(&out);
                if (!*ret_state)
                        return -ENOMEM;
        }
        *ret_base = base < 0 ? SLURM_NODE_UNKNOWN : base;
        *ret_flags = flags;
        return 0;
}

int slurm_node_state_parse(const char *s, SlurmNodeBase *ret_base, uint32_t *ret_flags) {
        return node_state_parse(s, ret_base, ret_flags, NULL);
}

/* ------------------------------------------------------------------------ */
/* Lists and predicates */

static void node_done(SlurmNode *n) {
        free(n->name);
        free(n->state);
        free(n->reason);
        free(n->reason_user);
        *n = (SlurmNode){};
}

SlurmNodeList *slurm_node_list_free(SlurmNodeList *l) {
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n_nodes; i++)
                node_done(&l->nodes[i]);
        free(l->nodes);
        free(l);
        return NULL;
}

const SlurmNode *slurm_node_list_find(const SlurmNodeList *l, const char *name) {
        if (!l || !name)
                return NULL;
        for (size_t i = 0; i < l->n_nodes; i++)
                if (streq(l->nodes[i].name, name))
                        return &l->nodes[i];
        return NULL;
}

static bool node_has_allocation(const SlurmNode *n) {
        return n->base == SLURM_NODE_ALLOCATED || n->base == SLURM_NODE_MIXED ||
               (n->flags & SLURM_NODE_COMPLETING);
}

bool slurm_node_is_drained(const SlurmNode *n) {
        return (n->flags & SLURM_NODE_DRAIN) && !node_has_allocation(n);
}

bool slurm_node_is_draining(const SlurmNode *n) {
        return (n->flags & SLURM_NODE_DRAIN) && node_has_allocation(n);
}

bool slurm_node_is_unavailable(const SlurmNode *n) {
        const uint32_t out_of_service =
                SLURM_NODE_DRAIN | SLURM_NODE_NOT_RESPONDING | SLURM_NODE_FAIL |
                SLURM_NODE_REBOOT_REQUESTED | SLURM_NODE_REBOOT_ISSUED | SLURM_NODE_MAINTENANCE |
                SLURM_NODE_POWER_DOWN | SLURM_NODE_POWERED_DOWN | SLURM_NODE_POWERING_DOWN |
                SLURM_NODE_POWERING_UP | SLURM_NODE_INVALID_REG | SLURM_NODE_FLAG_OTHER;

        if (n->base != SLURM_NODE_IDLE && n->base != SLURM_NODE_ALLOCATED &&
            n->base != SLURM_NODE_MIXED)
                return true;
        return (n->flags & out_of_service) != 0;
}

static void job_done(SlurmJob *j) {
        free(j->state);
        free(j->nodes);
        slurm_hostlist_free(j->node_list);
        *j = (SlurmJob){};
}

SlurmJobList *slurm_job_list_free(SlurmJobList *l) {
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n_jobs; i++)
                job_done(&l->jobs[i]);
        free(l->jobs);
        free(l);
        return NULL;
}

bool slurm_job_is_active(const SlurmJob *j) {
        const uint32_t active = SLURM_JOB_RUNNING | SLURM_JOB_COMPLETING | SLURM_JOB_CONFIGURING |
                                SLURM_JOB_SUSPENDED | SLURM_JOB_STOPPED;
        const uint32_t final = SLURM_JOB_COMPLETED | SLURM_JOB_CANCELLED | SLURM_JOB_FAILED |
                               SLURM_JOB_TIMEOUT | SLURM_JOB_NODE_FAIL | SLURM_JOB_PREEMPTED |
                               SLURM_JOB_BOOT_FAIL | SLURM_JOB_DEADLINE | SLURM_JOB_OUT_OF_MEMORY;

        if (j->states & active)
                return true;
        /* Unknown to us: holding nodes and not finished counts as busy. */
        return (j->states & SLURM_JOB_STATE_OTHER) && j->n_nodes > 0 && !(j->states & final);
}

bool slurm_job_is_pending(const SlurmJob *j) {
        return (j->states & SLURM_JOB_PENDING) && !slurm_job_is_active(j);
}

bool slurm_job_has_node(const SlurmJob *j, const char *name) {
        return slurm_hostlist_contains(j->node_list, name);
}

static int compare_names(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

typedef struct Lookup {
        char **sorted;
        size_t n;
} Lookup;

/* -EEXIST (stop: found) when name is among the sorted names. */
static int on_job_node(const char *name, void *userdata) {
        const Lookup *lk = userdata;

        return bsearch(&name, lk->sorted, lk->n, sizeof(char *), compare_names) ? -EEXIST : 0;
}

static bool job_on_any(const SlurmJob *j, char *const *names, size_t n_names, Lookup *lk) {
        /* Whichever is fewer: the job's nodes, each looked up among the
         * names, or the names, each checked against the job's ranges. */
        if (lk->sorted && j->n_nodes <= n_names)
                return slurm_hostlist_foreach(j->node_list, on_job_node, lk) == -EEXIST;
        for (size_t n = 0; n < n_names; n++)
                if (slurm_job_has_node(j, names[n]))
                        return true;
        return false;
}

void slurm_job_list_keep_nodes(SlurmJobList *l, char *const *names, size_t n_names) {
        _cleanup_free_ char **sorted = NULL;
        Lookup lk = {};
        size_t k = 0;

        if (n_names > 0) {
                sorted = malloc(n_names * sizeof(char *));
                if (sorted) {
                        memcpy(sorted, names, n_names * sizeof(char *));
                        qsort(sorted, n_names, sizeof(char *), compare_names);
                        lk = (Lookup){.sorted = sorted, .n = n_names};
                }
        }
        for (size_t i = 0; i < l->n_jobs; i++) {
                if (job_on_any(&l->jobs[i], names, n_names, &lk))
                        l->jobs[k++] = l->jobs[i];
                else
                        job_done(&l->jobs[i]);
        }
        l->n_jobs = k;
}

/* ------------------------------------------------------------------------ */
/* Small helpers */

static int set_error(char **ret_error, const char *fmt, ...) _printf_(2, 3);
static int set_error(char **ret_error, const char *fmt, ...) {
        va_list ap;
        char *s = NULL;

        if (!ret_error)
                return 0;
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        free(*ret_error);
        *ret_error = s;
        return 0;
}

/* Fails with -EBADMSG and a message. */
static int bad(char **ret_error, const char *fmt, ...) _printf_(2, 3);
static int bad(char **ret_error, const char *fmt, ...) {
        va_list ap;
        char *s = NULL;

        if (ret_error) {
                va_start(ap, fmt);
                if (vasprintf(&s, fmt, ap) < 0)
                        s = NULL;
                va_end(ap);
                free(*ret_error);
                *ret_error = s;
        }
        return -EBADMSG;
}

/* A copy of len bytes, cut at SLURM_MAX_TEXT_BYTES, control characters
 * (NUL included) replaced by '?', so every string read is safe to print. */
char *slurm_text_dup(const char *s, size_t len) {
        char *d;

        if (len > SLURM_MAX_TEXT_BYTES)
                len = SLURM_MAX_TEXT_BYTES;
        d = malloc(len + 1);
        if (!d)
                return NULL;
        for (size_t i = 0; i < len; i++)
                d[i] = (unsigned char) s[i] < ' ' || s[i] == 0x7f ? '?' : s[i];
        d[len] = '\0';
        return d;
}

/* A node name as Slurm prints it: printable, no blanks, bounded. */
bool slurm_name_is_valid(const char *s, size_t len) {
        if (len == 0 || len > SLURM_MAX_NAME_BYTES)
                return false;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) s[i] <= ' ' || s[i] == 0x7f)
                        return false;
        return true;
}

int slurm_parse_number(const char *s, size_t len, uint64_t *ret) {
        uint64_t v = 0;

        if (len == 0 || len > SLURM_MAX_DIGITS)
                return -EBADMSG;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EBADMSG;
                v = v * 10 + (uint64_t) (s[i] - '0');
        }
        *ret = v;
        return 0;
}

int slurm_grow(void **array, size_t *alloc, size_t need, size_t size) {
        size_t n;
        void *p;

        if (need <= *alloc)
                return 0;
        n = *alloc ? *alloc * 2 : 16;
        if (n < need)
                n = need;
        if (n > SIZE_MAX / size)
                return -ENOMEM;
        p = realloc(*array, n * size);
        if (!p)
                return -ENOMEM;
        *array = p;
        *alloc = n;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* JSON */

/* A time: a number, or {"set": true, "infinite": false, "number": N} (v0.0.40 on). */
static int64_t json_time(const json_t *v) {
        double d;

        if (json_is_object(v)) {
                if (json_is_false(json_object_get(v, "set")) ||
                    json_is_true(json_object_get(v, "infinite")))
                        return 0;
                v = json_object_get(v, "number");
        }
        if (json_is_integer(v))
                return json_integer_value(v) > 0 ? json_integer_value(v) : 0;
        if (!json_is_real(v))
                return 0;
        d = json_real_value(v);
        return d > 0 && d < 9.2e18 ? (int64_t) d : 0;
}

/* A string member, "" when absent or null. */
static char *json_text(const json_t *o, const char *key) {
        const json_t *v = json_object_get(o, key);

        if (!json_is_string(v))
                return strdup("");
        return slurm_text_dup(json_string_value(v), json_string_length(v));
}

/* Loads a document and checks its "errors": Slurm 22.05 exits 0 with an
 * error here when the controller does not answer. */
static int json_load_checked(const char *data, size_t len, const char *what, json_t **ret,
                             char **ret_error) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        json_error_t e;
        const json_t *errors;

        root = json_loadb(data, len, 0, &e);
        if (!root)
                return bad(ret_error, "not JSON (line %d: %s)", e.line, e.text);
        if (!json_is_object(root))
                return bad(ret_error, "not a JSON object");

        errors = json_object_get(root, "errors");
        if (json_is_array(errors) && json_array_size(errors) > 0) {
                const json_t *first = json_array_get(errors, 0);
                _cleanup_free_ char *error = json_text(first, "error");
                _cleanup_free_ char *desc = json_text(first, "description");

                set_error(ret_error, "Slurm reported an error: %s%s%s",
                          error && *error ? error : "(no text)", desc && *desc ? ": " : "",
                          desc ? desc : "");
                return -EIO;
        }
        if (!json_is_array(json_object_get(root, what)))
                return bad(ret_error, "no \"%s\" array", what);
        *ret = TAKE_PTR(root);
        return 0;
}

/* The words of "state" (a string or a list) and of "state_flags", joined by '+'. */
static int json_state_words(const json_t *state, const json_t *flags, StrBuf *out) {
        const json_t *lists[2] = {state, flags};
        int r;

        if (json_is_string(state)) {
                r = put_word(out, json_string_value(state), json_string_length(state));
                if (r < 0)
                        return r;
                lists[0] = NULL;
        }
        for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
                size_t i;
                const json_t *w;

                if (!lists[l])
                        continue;
                if (!json_is_array(lists[l]))
                        return -EBADMSG;
                json_array_foreach(lists[l], i, w) {
                        if (!json_is_string(w) || json_string_length(w) == 0 ||
                            memchr(json_string_value(w), '+', json_string_length(w)))
                                return -EBADMSG;
                        r = put_word(out, json_string_value(w), json_string_length(w));
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int node_from_json(const json_t *o, SlurmNode *ret, char **ret_error) {
        _cleanup_(strbuf_done) StrBuf words = STRBUF_INIT(SLURM_MAX_TEXT_BYTES);
        const json_t *name;
        SlurmNode n = {};
        int r;

        if (!json_is_object(o))
                return bad(ret_error, "a node is not an object");
        name = json_object_get(o, "name");
        if (!json_is_string(name) ||
            !slurm_name_is_valid(json_string_value(name), json_string_length(name)) ||
            strlen(json_string_value(name)) != json_string_length(name))
                return bad(ret_error, "a node without a valid \"name\"");

        r = json_state_words(json_object_get(o, "state"), json_object_get(o, "state_flags"),
                             &words);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || words.len == 0)
                return bad(ret_error, "node \"%.64s\": no valid \"state\"",
                           json_string_value(name));

        n.name = strdup(json_string_value(name));
        n.reason = json_text(o, "reason");
        n.reason_user = json_text(o, "reason_set_by_user");
        if (!n.name || !n.reason || !n.reason_user) {
                node_done(&n);
                return -ENOMEM;
        }
        r = node_state_parse(strbuf_str(&words), &n.base, &n.flags, &n.state);
        if (r < 0) {
                if (r != -ENOMEM)
                        r = bad(ret_error, "node \"%.64s\": bad \"state\"", n.name);
                node_done(&n);
                return r;
        }
        n.reason_time_sec = json_time(json_object_get(o, "reason_changed_at"));
        n.boot_time_sec = json_time(json_object_get(o, "boot_time"));
        n.slurmd_start_time_sec = json_time(json_object_get(o, "slurmd_start_time"));
        *ret = n;
        return 0;
}

int slurm_nodes_parse_json(const char *data, size_t len, SlurmNodeList **ret, char **ret_error) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        _cleanup_(slurm_node_list_freep) SlurmNodeList *l = NULL;
        const json_t *nodes, *o;
        size_t i, alloc = 0;
        int r;

        r = json_load_checked(data, len, "nodes", &root, ret_error);
        if (r < 0)
                return r;
        nodes = json_object_get(root, "nodes");
        if (json_array_size(nodes) > SLURM_MAX_NODES)
                return -ENOBUFS;

        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        json_array_foreach(nodes, i, o) {
                r = slurm_grow((void **) &l->nodes, &alloc, l->n_nodes + 1, sizeof(SlurmNode));
                if (r < 0)
                        return r;
                r = node_from_json(o, &l->nodes[l->n_nodes], ret_error);
                if (r < 0)
                        return r;
                l->n_nodes++;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* Fills a job's nodes and their expansion. */
static int job_set_nodes(SlurmJob *j, const char *hostlist, size_t len, char **ret_error) {
        int r;

        j->nodes = slurm_text_dup(hostlist, len);
        if (!j->nodes)
                return -ENOMEM;
        if (strlen(j->nodes) != len)
                return bad(ret_error, "job %" PRIu32 ": bad node list", j->job_id);
        /* Parsed and counted, never expanded: a few bytes can name 65536 nodes. */
        r = slurm_hostlist_parse(j->nodes, &j->node_list);
        if (r >= 0)
                j->n_nodes = slurm_hostlist_count(j->node_list);
        if (r == -EBADMSG)
                return bad(ret_error, "job %" PRIu32 ": bad node list \"%.64s\"", j->job_id,
                           j->nodes);
        return r;
}

/* The state words: bits, and the text joined by '+'. */
static int job_set_state(SlurmJob *j, const char *words) {
        _cleanup_(strbuf_done) StrBuf out = STRBUF_INIT(SLURM_MAX_TEXT_BYTES);
        int r;

        for (const char *p = words; *p;) {
                size_t n = strcspn(p, "+");
                uint32_t s;

                if (n == 0 || !word_is_valid(p, n))
                        return -EBADMSG;
                s = flag_from_word(job_state_names, ELEMENTSOF(job_state_names), p, n);
                j->states |= s ? s : SLURM_JOB_STATE_OTHER;
                r = put_word(&out, p, n);
                if (r < 0 && r != -ENOBUFS)
                        return r;
                p += n;
                if (*p == '+' && !*++p)
                        return -EBADMSG;
        }
        if (out.len == 0)
                return -EBADMSG;
        j->state = strbuf_steal(&out);
        return j->state ? 0 : -ENOMEM;
}

static int job_from_json(const json_t *o, SlurmJob *ret, char **ret_error) {
        _cleanup_(strbuf_done) StrBuf words = STRBUF_INIT(SLURM_MAX_TEXT_BYTES);
        const json_t *id, *nodes;
        SlurmJob j = {};
        int r;

        if (!json_is_object(o))
                return bad(ret_error, "a job is not an object");
        id = json_object_get(o, "job_id");
        if (json_is_object(id)) /* v0.0.40 on may wrap numbers */
                id = json_object_get(id, "number");
        if (!json_is_integer(id) || json_integer_value(id) <= 0 ||
            json_integer_value(id) > UINT32_MAX)
                return bad(ret_error, "a job without a valid \"job_id\"");
        j.job_id = (uint32_t) json_integer_value(id);

        r = json_state_words(json_object_get(o, "job_state"), NULL, &words);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || words.len == 0)
                return bad(ret_error, "job %" PRIu32 ": no valid \"job_state\"", j.job_id);
        r = job_set_state(&j, strbuf_str(&words));
        if (r < 0) {
                if (r != -ENOMEM)
                        r = bad(ret_error, "job %" PRIu32 ": bad state", j.job_id);
                job_done(&j);
                return r;
        }

        nodes = json_object_get(o, "nodes");
        if (nodes && !json_is_string(nodes) && !json_is_null(nodes)) {
                r = bad(ret_error, "job %" PRIu32 ": \"nodes\" is not a string", j.job_id);
                job_done(&j);
                return r;
        }
        r = job_set_nodes(&j, json_is_string(nodes) ? json_string_value(nodes) : "",
                          json_is_string(nodes) ? json_string_length(nodes) : 0, ret_error);
        if (r < 0) {
                job_done(&j);
                return r;
        }
        *ret = j;
        return 0;
}

int slurm_jobs_parse_json(const char *data, size_t len, SlurmJobList **ret, char **ret_error) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        _cleanup_(slurm_job_list_freep) SlurmJobList *l = NULL;
        const json_t *jobs, *o;
        size_t i, alloc = 0;
        int r;

        r = json_load_checked(data, len, "jobs", &root, ret_error);
        if (r < 0)
                return r;
        jobs = json_object_get(root, "jobs");
        if (json_array_size(jobs) > SLURM_MAX_JOBS)
                return -ENOBUFS;

        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        json_array_foreach(jobs, i, o) {
                r = slurm_grow((void **) &l->jobs, &alloc, l->n_jobs + 1, sizeof(SlurmJob));
                if (r < 0)
                        return r;
                r = job_from_json(o, &l->jobs[l->n_jobs], ret_error);
                if (r < 0)
                        return r;
                l->n_jobs++;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Text */

/* Next line of data[*pos..len), without its newline. */
static bool next_line(const char *data, size_t len, size_t *pos, const char **ret_line,
                      size_t *ret_len) {
        const char *nl;

        if (*pos >= len)
                return false;
        *ret_line = data + *pos;
        nl = memchr(*ret_line, '\n', len - *pos);
        *ret_len = nl ? (size_t) (nl - *ret_line) : len - *pos;
        *pos += *ret_len + (nl ? 1 : 0);
        return true;
}

static const char *memmem_str(const char *h, size_t len, const char *needle) {
        return memmem(h, len, needle, strlen(needle));
}

/* The value of " KEY=" in line[0..len): up to the next blank. */
static const char *field(const char *line, size_t len, const char *key, size_t *ret_len) {
        char pattern[64];
        const char *v, *end;

        (void) snprintf(pattern, sizeof(pattern), " %s=", key);
        v = memmem_str(line, len, pattern);
        if (!v)
                return NULL;
        v += strlen(pattern);
        end = memchr(v, ' ', (size_t) (line + len - v));
        *ret_len = (size_t) ((end ? end : line + len) - v);
        return v;
}

static int64_t parse_epoch(const char *s, size_t len) {
        uint64_t v;

        /* "None", or a date when SLURM_TIME_FORMAT was not honoured: unknown. */
        if (slurm_parse_number(s, len, &v) < 0 || v > INT64_MAX)
                return 0;
        return (int64_t) v;
}

/* "Reason=TEXT [USER@TIME]" and what may follow it (Comment=, Extra=, ...). */
static int parse_reason(const char *r, size_t len, SlurmNode *n) {
        static const char *const after[] = {
                " Comment=", " Extra=", " InstanceId=", " InstanceType=", " ReservationName="};
        size_t text_len = len;

        for (const char *p = r; (p = memchr(p, '[', (size_t) (r + len - p)));) {
                const char *close = memchr(p, ']', (size_t) (r + len - p));
                const char *at;

                if (!close)
                        break;
                at = memchr(p, '@', (size_t) (close - p));
                if (p > r && p[-1] == ' ' && at && (close + 1 == r + len || close[1] == ' ')) {
                        text_len = (size_t) (p - 1 - r);
                        n->reason_user = slurm_text_dup(p + 1, (size_t) (at - p - 1));
                        if (!n->reason_user)
                                return -ENOMEM;
                        n->reason_time_sec = parse_epoch(at + 1, (size_t) (close - at - 1));
                        break;
                }
                p = close;
        }
        if (!n->reason_user)
                for (size_t i = 0; i < ELEMENTSOF(after); i++) {
                        const char *a = memmem_str(r, text_len, after[i]);
                        if (a)
                                text_len = (size_t) (a - r);
                }
        n->reason = slurm_text_dup(r, text_len);
        return n->reason ? 0 : -ENOMEM;
}

static int node_from_line(const char *line, size_t len, SlurmNode *ret, char **ret_error) {
        _cleanup_free_ char *state = NULL;
        const char *name, *v, *reason;
        size_t name_len, head_len = len, vlen;
        SlurmNode n = {};
        int r;

        if (len < strlen("NodeName=") || memcmp(line, "NodeName=", strlen("NodeName=")) != 0)
                return bad(ret_error, "a line that does not start with NodeName=");
        name = line + strlen("NodeName=");
        v = memchr(name, ' ', (size_t) (line + len - name));
        name_len = (size_t) ((v ? v : line + len) - name);
        if (!slurm_name_is_valid(name, name_len))
                return bad(ret_error, "a node without a valid name");

        /* Everything after Reason= is free text: look for fields before it. */
        reason = memmem_str(line, len, " Reason=");
        if (reason)
                head_len = (size_t) (reason - line);

        v = field(line, head_len, "State", &vlen);
        if (!v || vlen == 0)
                return bad(ret_error, "node \"%.*s\": no State=", (int) name_len, name);
        state = strndup(v, vlen);
        if (!state)
                return -ENOMEM;

        n.name = strndup(name, name_len);
        if (!n.name)
                return -ENOMEM;
        r = node_state_parse(state, &n.base, &n.flags, &n.state);
        if (r < 0) {
                node_done(&n);
                return r == -ENOMEM
                               ? r
                               : bad(ret_error, "node \"%.*s\": bad State=", (int) name_len, name);
        }
        v = field(line, head_len, "BootTime", &vlen);
        if (v)
                n.boot_time_sec = parse_epoch(v, vlen);
        v = field(line, head_len, "SlurmdStartTime", &vlen);
        if (v)
                n.slurmd_start_time_sec = parse_epoch(v, vlen);

        if (reason) {
                reason += strlen(" Reason=");
                r = parse_reason(reason, (size_t) (line + len - reason), &n);
        } else
                n.reason = strdup("");
        if (r < 0 || !n.reason || (!n.reason_user && !(n.reason_user = strdup("")))) {
                node_done(&n);
                return -ENOMEM;
        }
        *ret = n;
        return 0;
}

int slurm_nodes_parse_scontrol(const char *data, size_t len, SlurmNodeList **ret,
                               char **ret_error) {
        _cleanup_(slurm_node_list_freep) SlurmNodeList *l = NULL;
        const char *line;
        size_t pos = 0, line_len, alloc = 0;
        int r;

        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        while (next_line(data, len, &pos, &line, &line_len)) {
                if (line_len == 0 || (line_len == 1 && line[0] == '\r'))
                        continue;
                /* What scontrol prints for a cluster without nodes. */
                if (line_len >= 8 && memcmp(line, "No nodes", 8) == 0)
                        continue;
                if (memchr(line, '\0', line_len))
                        return bad(ret_error, "a NUL byte in the output");
                if (l->n_nodes >= SLURM_MAX_NODES)
                        return -ENOBUFS;
                r = slurm_grow((void **) &l->nodes, &alloc, l->n_nodes + 1, sizeof(SlurmNode));
                if (r < 0)
                        return r;
                r = node_from_line(line, line_len, &l->nodes[l->n_nodes], ret_error);
                if (r < 0)
                        return r;
                l->n_nodes++;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int slurm_jobs_parse_squeue(const char *data, size_t len, SlurmJobList **ret, char **ret_error) {
        _cleanup_(slurm_job_list_freep) SlurmJobList *l = NULL;
        const char *line;
        size_t pos = 0, line_len, alloc = 0;
        int r;

        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        while (next_line(data, len, &pos, &line, &line_len)) {
                const char *bar1, *bar2;
                _cleanup_free_ char *state = NULL;
                uint64_t id;
                SlurmJob j = {};

                if (line_len == 0)
                        continue;
                if (memchr(line, '\0', line_len))
                        return bad(ret_error, "a NUL byte in the output");
                bar1 = memchr(line, '|', line_len);
                bar2 = bar1 ? memchr(bar1 + 1, '|', (size_t) (line + line_len - bar1 - 1)) : NULL;
                if (!bar2 || slurm_parse_number(line, (size_t) (bar1 - line), &id) < 0 || id == 0 ||
                    id > UINT32_MAX)
                        return bad(ret_error, "a line that is not ID|STATE|NODES: \"%.*s\"",
                                   (int) (line_len < 64 ? line_len : 64), line);
                if (l->n_jobs >= SLURM_MAX_JOBS)
                        return -ENOBUFS;
                j.job_id = (uint32_t) id;
                state = strndup(bar1 + 1, (size_t) (bar2 - bar1 - 1));
                if (!state)
                        return -ENOMEM;
                r = job_set_state(&j, state);
                if (r == 0)
                        r = job_set_nodes(&j, bar2 + 1, (size_t) (line + line_len - bar2 - 1),
                                          ret_error);
                else if (r == -EBADMSG)
                        r = bad(ret_error, "job %" PRIu64 ": bad state", id);
                if (r == 0)
                        r = slurm_grow((void **) &l->jobs, &alloc, l->n_jobs + 1, sizeof(SlurmJob));
                if (r < 0) {
                        job_done(&j);
                        return r;
                }
                l->jobs[l->n_jobs++] = j;
        }
        *ret = TAKE_PTR(l);
        return 0;
}
