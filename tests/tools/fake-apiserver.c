/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake-apiserver: a loopback stand-in for the Kubernetes API server, for the
 * integration tests of the agent's kube client (docs/DESIGN.md §4 and §6).
 *
 *   fake-apiserver --pods FILE --token-file FILE --tls-cert FILE --tls-key FILE
 *                  [--port N] [--control-port N] [--namespace NS] [--verbose]
 *                  [--arrivals FILE] [--configmaps FILE] [--rbac FILE]... [--user NAME]
 *                  [--max-connections N]
 *
 * --max-connections: connections per port (default 256; a watch holds one),
 * for a fleet benchmark's thousands of agents. The process's file limit
 * (ulimit -n) must allow them.
 *
 * Prints "listening on https://127.0.0.1:PORT" then "control on
 * http://127.0.0.1:PORT" on stdout once both ports accept connections, and
 * runs until SIGTERM or SIGINT (exit 0). Exit 2: bad usage or input files;
 * 1: the server could not start.
 *
 * The API port (TLS, libmicrohttpd over GnuTLS) serves one namespace:
 *   GET    /api/v1/namespaces/NS/pods/NAME[/status]
 *   GET    /api/v1/namespaces/NS/pods?labelSelector=..&fieldSelector=..
 *   GET    /api/v1/namespaces/NS/pods?watch=1&fieldSelector=metadata.name=NAME
 *          &resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=N
 *   PATCH  /api/v1/namespaces/NS/pods/NAME/status  (strategic merge or merge patch)
 *   DELETE /api/v1/namespaces/NS/pods/NAME
 *   POST   /api/v1/namespaces/NS/events, /apis/events.k8s.io/v1/namespaces/NS/events
 *          (201 with the Event, stored for GET /events on the control port;
 *          400 for a body of another kind or apiVersion than the path's, or
 *          a metadata.namespace other than the path's; 409 for a name that
 *          exists; 422 for what the real validation refuses: on core/v1 only
 *          legacyValidateEvent's checks (involvedObject.namespace against the
 *          Event's; with eventTime, reportingComponent, reportingInstance,
 *          action, reason and their lengths); on events.k8s.io/v1 the
 *          regarding object's namespace, type and reason's length)
 *   GET    /api, /api/v1, /apis, /apis/events.k8s.io/v1   (discovery, for kubectl)
 *   GET    /api/v1/namespaces/NS   (the namespace itself, for kubectl)
 *   GET    /api/v1/namespaces/NS/configmaps[/NAME]   (--configmaps FILE, read-only)
 *   GET    /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies[/NAME]
 *   GET    /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings[/NAME]
 *          (cluster-scoped, read-only: the control port creates them; 404
 *          for a name it did not)
 *   GET    /apis/coordination.k8s.io/v1/namespaces/NS/leases[/NAME]
 *   POST   /apis/coordination.k8s.io/v1/namespaces/NS/leases   (201; 409
 *          AlreadyExists for a name that exists; 500 when the body sets a
 *          resourceVersion, as the real storage layer answers)
 *   PUT    /apis/coordination.k8s.io/v1/namespaces/NS/leases/NAME   (404 when
 *          missing, never created by the update; 422 without
 *          metadata.resourceVersion; 409 Conflict when it is not the stored
 *          one; uid and creationTimestamp kept)
 *          Every Lease write takes a new resourceVersion from the one counter;
 *          leaseDurationSeconds must be above 0 and the times RFC 3339 (422,
 *          400), as ValidateLeaseSpec and decoding check.
 * Every request needs "Authorization: Bearer T" where T is the token file's
 * content at that moment (the file is re-read on every request, trailing
 * newlines ignored), so a test rotates the token by rewriting the file.
 * The token authenticates as --user (default
 * system:serviceaccount:NS:aicr-enroot-agent, the agent's service account;
 * one token, one user per server).
 * Errors are Kubernetes Status objects with the real server's reasons and
 * messages.
 *
 * --rbac FILE (YAML as in container/kubernetes/, or kubectl's JSON; may be
 * given more than once) holds Roles, ClusterRoles and their bindings, and
 * the server then authorizes every authenticated request as the real RBAC
 * authorizer does (fake-rbac.h says how far): the user's attributes (verb,
 * API group, resource/subresource, name, namespace; a list or watch with a
 * fieldSelector on metadata.name is checked as that name) against the rules
 * bound to it, before any other answer; a request outside them gets the real
 * server's 403 Forbidden Status, e.g. 'pods "worker-0" is forbidden: User
 * "system:serviceaccount:slurm:aicr-enroot-agent" cannot delete resource
 * "pods" in API group "" in the namespace "slurm"'. Without --rbac the token
 * may do whatever the fake serves in --namespace, and gets that 403 for any
 * other namespace and for PATCH or PUT of a pod (not its status): a rough
 * model of the agent's Role, for tests that do not check authorization.
 *
 * --arrivals FILE appends one line per API request to FILE (created or
 * truncated at start) the moment the request is complete, body included,
 * before any fault's delay and before it is answered; one write(2) each:
 *   USEC METHOD PATH[?QUERY] FAULT BODY
 * USEC is CLOCK_MONOTONIC in microseconds when the last byte of the request
 * was read (the same clock as any other process's on this host, so a
 * benchmark can subtract its own timestamps); FAULT is "-" or the injected
 * fault ("status:500", "retry-after:1", "delay:300", "drop", "body",
 * "grace:5", "watch-event:not-json", joined by ",");
 * BODY is the request body on one line (newlines as spaces) or "-". The
 * request log on the control port is kept only from the answer on and is
 * capped; this file is neither.
 *
 * --configmaps FILE holds a ConfigMapList or a JSON list of ConfigMaps in
 * --namespace, served as they are (a resourceVersion is added where missing)
 * and never changed: `kubectl get configmap NAME -o json` reads them. A GET
 * of a name the file does not hold (every name, without --configmaps) gets
 * the real server's 404 NotFound Status ('configmaps "NAME" not found');
 * with --rbac, the rules decide first (403 without get on that name). The
 * metadata, Helm's annotations included, is the file's: the fake keeps no
 * Helm release history and never prunes a ConfigMap.
 *
 * --pods FILE holds a PodList ({"items": [...]}) or a JSON list of pods; each
 * needs metadata.name; metadata.namespace defaults to --namespace (which
 * defaults to the first pod's namespace, else "default"); a missing uid is
 * generated; resourceVersion is a decimal string or left out.
 *
 * Deviations a client may notice: a get or list from a resourceVersion newer
 * than the server's gets the real server's 504 "Timeout: Too large resource
 * version: N, current: M" (cause ResourceVersionTooLarge, Retry-After: 1) at
 * once, where the real one first waits up to 3 s for its cache; a patch that changes nothing answers 200
 * with no new resourceVersion and no watch event (as etcd skips equal
 * writes); "$setElementOrder" and "$retainKeys" directives are accepted and
 * ignored; application/json-patch+json and apply patches get 415; label
 * selectors are equality, existence and set terms ("k in (a,b)", "k notin
 * (a,b)"), field selectors metadata.name and metadata.namespace only;
 * DELETE removes a pod at once (no grace) unless a fault gives it
 * grace_seconds: then, as the real server does for a pod bound to a node,
 * metadata.deletionTimestamp (the end of the grace period) and
 * deletionGracePeriodSeconds are set (MODIFIED, answered 200 with the pod),
 * the pod stays visible, and it goes (DELETED) when the grace period ends;
 * a DELETE of a terminating pod answers 200 with it unchanged. Of graceful
 * deletion the fake does not model DeleteOptions.gracePeriodSeconds (ignored:
 * the fault decides), the pod's terminationGracePeriodSeconds (the default
 * grace), metadata.generation's increment, kubelet's part (containers
 * stopping, Ready turning False, the phase; the pod goes at the end of the
 * grace period, never earlier) and finalizers.
 *
 * For kubectl (get, wait, proxy) the fake also serves discovery in its
 * plain, unaggregated form and negotiates the answer's type from Accept.
 * Not modelled, so that a client needing them notices: server-side Table
 * output (kubectl get's default and -o wide; a request that also accepts
 * plain JSON gets plain JSON, as from a server without Table conversion,
 * and kubectl then prints NAME and AGE only; one that accepts only Table,
 * YAML or protobuf gets the real server's 406), aggregated discovery (same
 * fallback), list paging (limit is ignored and the whole list answered, as
 * the real server does for resourceVersion=0; no continue tokens),
 * resourceVersionMatch, /version, /openapi, watches and writes of
 * ConfigMaps, discovery of admissionregistration.k8s.io (kubectl cannot
 * get the admission policies, only a client that knows their paths),
 * writes and watches of admission policies and their bindings; of Leases:
 * PATCH, DELETE, watch (405), generateName, managedFields, labels and
 * field selectors on their list, and their history (no watch events: a
 * Lease write is not in the pod history), and every
 * other resource and subresource: RBAC objects,
 * access reviews, logs, exec and port-forward get 404 (after --rbac's check).
 * PATCH and PUT of a pod itself get 405 where --rbac allows them.
 * Of Events: a 422 names only the first invalid field where the real one lists
 * all; events.k8s.io/v1's other checks (name, reportingController,
 * eventTime required, series), their get, list, watch, update, patch and
 * delete, the server's own deduplication and rate limits, and their expiry
 * (one hour, --event-ttl) are not modelled: at most FAKE_MAX_EVENTS are
 * kept, the oldest dropped first.
 * Also not modelled: admission (the ValidatingAdmissionPolicies are stored
 * for clients to read, never evaluated: any status patch the rules allow
 * lands, for any pod), several tokens or users on one server, token
 * audiences, expiry and the pod binding of projected tokens (userInfo.extra),
 * other authentication (client certificates, anonymous requests: all 401),
 * the Node and webhook authorizers, impersonation, API priority and fairness
 * (429 only when injected), watch-list (sendInitialEvents and
 * resourceVersionMatch are ignored), bookmarks on the real server's own
 * schedule (about once a minute, and just before timeoutSeconds): here only
 * on POST /bookmark and as a watch's timeout ends, and other namespaces'
 * objects (with --rbac a request the rules allow in another namespace gets
 * 404 'namespaces "X" not found').
 *
 * Container statuses are the test's to set (the control port's
 * container-statuses, checked the way kubelet writes them), never kubelet's:
 * nothing here starts, restarts or times containers.
 *
 * The control port (plain HTTP, 127.0.0.1) drives the test; its endpoints are
 * listed in the "control port" section below: fault injection, operator-style
 * rewrites, replacement pods, the request log, GET /leases (the stored
 * Leases, as a list). Faults apply before
 * authentication: an injected status answers whatever the token.
 *
 * One thread: both libmicrohttpd daemons run in external epoll mode under
 * one poll() loop, so no state is ever shared between threads. A slow answer
 * or an open watch is a suspended connection, resumed by the loop's timers
 * or by a change: neither ever blocks another request.
 *
 * resourceVersions are one counter for all objects, as etcd's revision. Every
 * change is kept in a history of FAKE_MAX_HISTORY events, so a watch can
 * start from any resourceVersion since the last compaction (POST /compact on
 * the control port, or the history overflowing); older ones get the real
 * server's 410 Expired ERROR event. At start, the oldest resourceVersion in
 * the pods file is the compaction point. A watch from a resourceVersion newer
 * than the server's is accepted, as the real server's watch cache accepts it,
 * and sends no event or bookmark until one is newer than that version (its
 * cacheWatcher sends only events after the version it started from).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <time.h>

#include "fake-rbac.h"
#include "fileio.h"
#include "macro.h"
#include "strbuf.h"

/* A request body (patch, event, control command) larger than this gets 413. */
#define FAKE_MAX_BODY_BYTES            (1024u * 1024u)
/* The pods file, the certificate and the key. */
#define FAKE_MAX_FILE_BYTES            (4u * 1024u * 1024u)
#define FAKE_MAX_TOKEN_BYTES           (64u * 1024u)
/* Changes kept for watches that start from an older resourceVersion. */
#define FAKE_MAX_HISTORY               1024u
/* Request log entries; older ones are dropped (and counted) past it. */
#define FAKE_MAX_LOG_ENTRIES           10000u
/* Request bodies are copied into the log up to this size. */
#define FAKE_MAX_LOGGED_BODY_BYTES     (64u * 1024u)
/* Events stored; the oldest is dropped past it. */
#define FAKE_MAX_EVENTS                1000u
#define FAKE_MAX_FAULTS                64u
#define FAKE_MAX_DELAY_MS              600000u
/* A graceful deletion's grace period (the real server takes any; tests need seconds). */
#define FAKE_MAX_GRACE_SECONDS         3600u
/* An oversized watch event (watch_event "oversized"); the default size. */
#define FAKE_MAX_WATCH_EVENT_BYTES     (12u * 1024u * 1024u)
#define FAKE_DEFAULT_WATCH_EVENT_BYTES (5u * 1024u * 1024u)
/* Events waiting to be sent to one watcher: a watcher that falls this far
 * behind is closed, as the real server closes slow watchers. */
#define FAKE_MAX_WATCH_QUEUE_BYTES     (16u * 1024u * 1024u)
/* The real server picks 30 to 60 min (--min-request-timeout 1800). */
#define FAKE_DEFAULT_WATCH_TIMEOUT_SEC 1800u
#define FAKE_MAX_WATCH_TIMEOUT_SEC     86400u
/* Connections per port unless --max-connections says more; a watch holds one. */
#define FAKE_MAX_CONNECTIONS           256u
/* --max-connections: a fleet benchmark's thousands of agents, each with a
 * watch and a connection for its writes (each one a file descriptor). */
#define FAKE_MAX_CONNECTIONS_LIMIT     65536u
#define FAKE_CONNECTION_TIMEOUT_SEC    30u
#define FAKE_MAX_SELECTOR_TERMS        32u
/* Object names: a DNS subdomain. */
#define FAKE_MAX_NAME_BYTES            253u

#define CONTENT_TYPE_JSON              "application/json"
/* The token's user unless --user names another: the agent's service account. */
#define FAKE_USER_FMT                  "system:serviceaccount:%s:aicr-enroot-agent"
/* The real server waits up to 3 s for its cache to reach a newer
 * resourceVersion, then says to retry after 1 s (watch cache blockTimeout,
 * resourceVersionTooHighRetrySeconds). */
#define FAKE_TOO_LARGE_RV_RETRY_SEC    1

typedef struct Server Server;
typedef struct Request Request;

/* ---------------------------------------------------------------------------
 * Small helpers */

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static double wall_seconds(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* RFC 3339 UTC, as Kubernetes writes creationTimestamp. */
static void format_now(char buf[static 32]) {
        time_t t = time(NULL);
        struct tm tm;

        gmtime_r(&t, &tm);
        strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void random_bytes(uint8_t *b, size_t n) {
        static uint64_t fallback = 0x9e3779b97f4a7c15u;

        if (getrandom(b, n, GRND_NONBLOCK) == (ssize_t) n)
                return;
        /* No entropy yet (early boot): uniqueness is all a test needs. */
        for (size_t i = 0; i < n; i++) {
                fallback = fallback * 6364136223846793005u + 1442695040888963407u;
                b[i] = (uint8_t) (fallback >> 56);
        }
}

static void make_uid(char buf[static 37]) {
        uint8_t b[16];

        random_bytes(b, sizeof b);
        b[6] = (uint8_t) ((b[6] & 0x0f) | 0x40); /* version 4, as Kubernetes' UIDs */
        b[8] = (uint8_t) ((b[8] & 0x3f) | 0x80);
        snprintf(buf, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                 b[13], b[14], b[15]);
}

static int parse_u64(const char *s, uint64_t *ret) {
        uint64_t v = 0;

        if (!s || *s == '\0' || strlen(s) > 20)
                return -EINVAL;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -EINVAL;
                if (v > (UINT64_MAX - (uint64_t) (*s - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*s - '0');
        }
        *ret = v;
        return 0;
}

/* Go's strconv.ParseBool, which the API server uses for query flags. */
static int parse_bool(const char *s, bool *ret) {
        static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
        static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};

        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (streq(s, yes[i])) {
                        *ret = true;
                        return 0;
                }
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (streq(s, no[i])) {
                        *ret = false;
                        return 0;
                }
        return -EINVAL;
}

static char *rv_string(uint64_t rv) {
        char *s;

        return asprintf(&s, "%" PRIu64, rv) < 0 ? NULL : s;
}

static const char *json_str(const json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

static const char *pod_name(const json_t *pod) {
        return json_str(json_object_get(pod, "metadata"), "name");
}

static const char *pod_uid(const json_t *pod) {
        return json_str(json_object_get(pod, "metadata"), "uid");
}

static void set_rv(json_t *obj, uint64_t rv) {
        char buf[24];

        snprintf(buf, sizeof buf, "%" PRIu64, rv);
        json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion", json_string(buf));
}

/* A DNS-1123 label character run, as in names and qualified-name parts. */
static bool is_name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_' || c == '.';
}

static bool is_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* apimachinery's IsQualifiedName: [DNS-subdomain "/"] name, the name part
 * 1-63 characters of [A-Za-z0-9_.-] starting and ending alphanumeric.
 * Returns NULL when valid, else the real validator's complaint. */
static const char *qualified_name_error(const char *s) {
        const char *slash = strchr(s, '/'), *name = s;
        size_t n;

        if (slash) {
                size_t plen = (size_t) (slash - s);

                if (plen == 0)
                        return "prefix part must be non-empty";
                if (plen > 253)
                        return "prefix part must be no more than 253 characters";
                for (size_t i = 0; i < plen; i++)
                        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
                              s[i] == '-' || s[i] == '.'))
                                return "prefix part a lowercase RFC 1123 subdomain must consist "
                                       "of lower case alphanumeric characters, '-' or '.'";
                name = slash + 1;
                if (strchr(name, '/'))
                        return "a qualified name must consist of alphanumeric characters, '-', "
                               "'_' or '.', with an optional DNS subdomain prefix and '/'";
        }
        n = strlen(name);
        if (n == 0)
                return "name part must be non-empty";
        if (n > 63)
                return "name part must be no more than 63 characters";
        for (size_t i = 0; i < n; i++)
                if (!is_name_char(name[i]))
                        return "name part must consist of alphanumeric characters, '-', '_' or "
                               "'.', and must start and end with an alphanumeric character";
        if (!is_alnum(name[0]) || !is_alnum(name[n - 1]))
                return "name part must consist of alphanumeric characters, '-', '_' or '.', and "
                       "must start and end with an alphanumeric character";
        return NULL;
}

/* RFC 3339 as Go's time.Time unmarshals it: "2006-01-02T15:04:05Z" with an
 * optional fraction and a Z or +hh:mm offset. */
static bool is_rfc3339(const char *s) {
        static const char pattern[] = "dddd-dd-ddTdd:dd:dd";
        size_t i;

        for (i = 0; pattern[i]; i++) {
                if (pattern[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != pattern[i])
                        return false;
        }
        s += i;
        if (*s == '.') {
                s++;
                if (!(*s >= '0' && *s <= '9'))
                        return false;
                while (*s >= '0' && *s <= '9')
                        s++;
        }
        if (streq(s, "Z"))
                return true;
        return (s[0] == '+' || s[0] == '-') && s[1] >= '0' && s[1] <= '9' && s[2] >= '0' &&
               s[2] <= '9' && s[3] == ':' && s[4] >= '0' && s[4] <= '9' && s[5] >= '0' &&
               s[5] <= '9' && s[6] == '\0';
}

/* ---------------------------------------------------------------------------
 * Status objects */

static const char *reason_for_code(unsigned code) {
        switch (code) {
        case 400:
                return "BadRequest";
        case 401:
                return "Unauthorized";
        case 403:
                return "Forbidden";
        case 404:
                return "NotFound";
        case 405:
                return "MethodNotAllowed";
        case 406:
                return "NotAcceptable";
        case 409:
                return "Conflict";
        case 410:
                return "Expired";
        case 413:
                return "RequestEntityTooLarge";
        case 415:
                return "UnsupportedMediaType";
        case 422:
                return "Invalid";
        case 429:
                return "TooManyRequests";
        case 500:
                return "InternalError";
        case 503:
                return "ServiceUnavailable";
        case 504:
                return "Timeout";
        default:
                return "";
        }
}

/* {"kind":"Status",...}; details (stolen, may be NULL) is added as is. */
static json_t *status_new(unsigned code, const char *reason, const char *message, json_t *details) {
        json_t *o;

        o = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1",
                      "metadata", "status", code < 400 ? "Success" : "Failure", "message",
                      strempty(message), "reason", reason ? reason : reason_for_code(code), "code",
                      (int) code);
        if (o && details)
                json_object_set_new(o, "details", details);
        else if (details)
                json_decref(details);
        return o;
}

static json_t *status_newf(unsigned code, const char *reason, json_t *details, const char *fmt, ...)
        _printf_(4, 5);
static json_t *status_newf(unsigned code, const char *reason, json_t *details, const char *fmt,
                           ...) {
        _cleanup_free_ char *message = NULL;
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vasprintf(&message, fmt, ap);
        va_end(ap);
        if (n < 0) {
                json_decref(details);
                return NULL;
        }
        return status_new(code, reason, message, details);
}

static json_t *details_new(const char *name, const char *kind) {
        if (!name || *name == '\0')
                return json_pack("{s:s}", "kind", kind);
        return json_pack("{s:s, s:s}", "name", name, "kind", kind);
}

/* ---------------------------------------------------------------------------
 * Selectors: label selectors with equality terms, field selectors on
 * metadata.name and metadata.namespace. Both match a flat string map. */

typedef enum SelectorOp {
        SEL_EQ,
        SEL_NE,
        SEL_EXISTS,
        SEL_NOT_EXISTS,
        SEL_IN,     /* value: the set, "a,b,c" */
        SEL_NOT_IN, /* value: the set; matches objects without the key too */
} SelectorOp;

typedef struct Requirement {
        char *key;
        char *value;
        SelectorOp op;
} Requirement;

/* ---------------------------------------------------------------------------
 * Set-based label selector terms, as kubectl passes them through `-l
 * 'k in (a,b)'` (apimachinery labels.Parse): "KEY in (V,...)" and
 * "KEY notin (V,...)". */

/* The end of the term starting at p: the next comma outside parentheses. */
static const char *selector_term_end(const char *p) {
        int depth = 0;

        for (; *p; p++) {
                if (*p == '(')
                        depth++;
                else if (*p == ')' && depth > 0)
                        depth--;
                else if (*p == ',' && depth == 0)
                        break;
        }
        return p;
}

static bool selector_word_ok(const char *s, bool key);

/* 1 with *r filled when term is a set term, 0 when it is not one, -EINVAL
 * when it is a malformed one, -ENOMEM. */
static int selector_parse_set(const char *term, Requirement *r) {
        const char *sp = strchr(term, ' '), *op, *open, *close;
        _cleanup_free_ char *key = NULL, *values = NULL;
        SelectorOp kind;
        size_t n;

        if (!sp)
                return 0;
        op = sp;
        while (*op == ' ')
                op++;
        if (startswith(op, "in") && (op[2] == ' ' || op[2] == '('))
                kind = SEL_IN;
        else if (startswith(op, "notin") && (op[5] == ' ' || op[5] == '('))
                kind = SEL_NOT_IN;
        else
                return 0;
        open = strchr(op, '(');
        close = open ? strchr(open, ')') : NULL;
        if (!open || !close || close[1] != '\0')
                return -EINVAL;
        for (const char *q = op + (kind == SEL_IN ? 2 : 5); q < open; q++)
                if (*q != ' ')
                        return -EINVAL;
        key = strndup(term, (size_t) (sp - term));
        values = malloc((size_t) (close - open));
        if (!key || !values)
                return -ENOMEM;
        /* the values without blanks, comma-separated; none may be empty */
        n = 0;
        for (const char *q = open + 1; q < close; q++) {
                if (*q == ' ' || *q == '\t')
                        continue;
                if (*q == ',' && (n == 0 || values[n - 1] == ','))
                        return -EINVAL;
                values[n++] = *q;
        }
        values[n] = '\0';
        if (n == 0 || values[n - 1] == ',' || !selector_word_ok(key, true) || *key == '\0')
                return -EINVAL;
        for (char *v = values; *v; v++)
                if (*v != ',' && !is_name_char(*v))
                        return -EINVAL;
        *r = (Requirement){.key = TAKE_PTR(key), .value = TAKE_PTR(values), .op = kind};
        return 1;
}

/* Whether value v is one of set "a,b,c". */
static bool selector_set_has(const char *set, const char *v) {
        size_t n = strlen(v);

        for (const char *p = set; p;) {
                const char *comma = strchr(p, ',');
                size_t len = comma ? (size_t) (comma - p) : strlen(p);

                if (len == n && strncmp(p, v, n) == 0)
                        return true;
                p = comma ? comma + 1 : NULL;
        }
        return false;
}

typedef struct Selector {
        Requirement terms[FAKE_MAX_SELECTOR_TERMS];
        size_t n;
} Selector;

static void selector_done(Selector *s) {
        for (size_t i = 0; i < s->n; i++) {
                free(s->terms[i].key);
                free(s->terms[i].value);
        }
        s->n = 0;
}

static char *strip_dup(const char *s, size_t n) {
        while (n > 0 && (*s == ' ' || *s == '\t')) {
                s++;
                n--;
        }
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
                n--;
        return strndup(s, n);
}

static bool selector_word_ok(const char *s, bool key) {
        for (; *s; s++)
                if (!is_name_char(*s) && !(key && *s == '/'))
                        return false;
        return true;
}

/* Parses "k=v,k2!=v2,k3,!k4". fields: only metadata.name and
 * metadata.namespace, no existence terms (the real server's field selectors).
 * On failure, *ret_error is the message for a 400. */
static int selector_parse(const char *text, bool fields, Selector *ret, char **ret_error) {
        Selector s = {};
        const char *p = text;

        while (p && *p) {
                const char *comma = selector_term_end(p), *eq;
                size_t len = (size_t) (comma - p);
                _cleanup_free_ char *term = strip_dup(p, len);
                Requirement *r;
                int k;

                if (!term)
                        goto oom;
                p = *comma ? comma + 1 : NULL;
                if (*term == '\0')
                        continue;
                if (s.n >= FAKE_MAX_SELECTOR_TERMS) {
                        selector_done(&s);
                        return asprintf(ret_error, "more than %u selector terms",
                                        FAKE_MAX_SELECTOR_TERMS) < 0
                                       ? -ENOMEM
                                       : -EINVAL;
                }
                r = &s.terms[s.n];
                k = fields || strchr(term, '=') ? 0 : selector_parse_set(term, r);
                if (k == -ENOMEM)
                        goto oom;
                if (k > 0) {
                        s.n++;
                        continue;
                }
                if (k < 0 || strpbrk(term, "() ")) {
                        selector_done(&s);
                        return asprintf(ret_error,
                                        "unable to parse requirement: \"%s\": only the terms "
                                        "k=v, k==v, k!=v, k, !k, k in (v,...) and k notin (v,...) "
                                        "are served here",
                                        term) < 0
                                       ? -ENOMEM
                                       : -EINVAL;
                }
                if ((eq = strstr(term, "!="))) {
                        r->op = SEL_NE;
                        r->key = strip_dup(term, (size_t) (eq - term));
                        r->value = strip_dup(eq + 2, strlen(eq + 2));
                } else if ((eq = strstr(term, "=="))) {
                        r->op = SEL_EQ;
                        r->key = strip_dup(term, (size_t) (eq - term));
                        r->value = strip_dup(eq + 2, strlen(eq + 2));
                } else if ((eq = strchr(term, '='))) {
                        r->op = SEL_EQ;
                        r->key = strip_dup(term, (size_t) (eq - term));
                        r->value = strip_dup(eq + 1, strlen(eq + 1));
                } else if (term[0] == '!') {
                        r->op = SEL_NOT_EXISTS;
                        r->key = strip_dup(term + 1, strlen(term + 1));
                } else {
                        r->op = SEL_EXISTS;
                        r->key = strdup(term);
                }
                s.n++;
                if (!r->key || ((r->op == SEL_EQ || r->op == SEL_NE) && !r->value))
                        goto oom;
                if (*r->key == '\0' || !selector_word_ok(r->key, true) ||
                    (r->value && !selector_word_ok(r->value, false))) {
                        selector_done(&s);
                        return asprintf(ret_error, "unable to parse requirement: \"%s\"", term) < 0
                                       ? -ENOMEM
                                       : -EINVAL;
                }
                if (fields) {
                        if (!streq(r->key, "metadata.name") &&
                            !streq(r->key, "metadata.namespace")) {
                                int n = asprintf(ret_error,
                                                 "field label not supported: %s (this fake serves "
                                                 "metadata.name and metadata.namespace)",
                                                 r->key);
                                selector_done(&s);
                                return n < 0 ? -ENOMEM : -EINVAL;
                        }
                        if (r->op != SEL_EQ && r->op != SEL_NE) {
                                selector_done(&s);
                                return asprintf(ret_error, "invalid field selector: \"%s\"", term) <
                                                       0
                                               ? -ENOMEM
                                               : -EINVAL;
                        }
                }
        }
        *ret = s;
        return 0;
oom:
        selector_done(&s);
        return -ENOMEM;
}

/* values: a JSON object of strings (labels, or the field map). */
static bool selector_matches(const Selector *s, const json_t *values) {
        for (size_t i = 0; i < s->n; i++) {
                const Requirement *r = &s->terms[i];
                const char *v = json_str(values, r->key);

                switch (r->op) {
                case SEL_EQ:
                        if (!v || !streq(v, r->value))
                                return false;
                        break;
                case SEL_NE: /* matches objects without the label too */
                        if (v && streq(v, r->value))
                                return false;
                        break;
                case SEL_EXISTS:
                        if (!v)
                                return false;
                        break;
                case SEL_NOT_EXISTS:
                        if (v)
                                return false;
                        break;
                case SEL_IN:
                        if (!v || !selector_set_has(r->value, v))
                                return false;
                        break;
                case SEL_NOT_IN:
                        if (v && selector_set_has(r->value, v))
                                return false;
                        break;
                }
        }
        return true;
}

static bool pod_matches(const json_t *pod, const Selector *labels, const Selector *fields) {
        const json_t *meta = json_object_get(pod, "metadata");
        _cleanup_(json_decrefp) json_t *f = NULL;
        json_t *l = json_object_get(meta, "labels");
        _cleanup_(json_decrefp) json_t *empty = json_object();

        f = json_pack("{s:s?, s:s?}", "metadata.name", json_str(meta, "name"), "metadata.namespace",
                      json_str(meta, "namespace"));
        if (!f || !empty)
                return false;
        return selector_matches(labels, json_is_object(l) ? l : empty) &&
               selector_matches(fields, f);
}

/* ---------------------------------------------------------------------------
 * Patches. Both act on the pod's status only: this is the status
 * subresource, whose strategy keeps the stored spec and metadata. */

typedef struct PatchError {
        unsigned code; /* 400 or 422 */
        char *message;
        char *field; /* for a 422's causes */
} PatchError;

static void patch_error_done(PatchError *e) {
        free(e->message);
        free(e->field);
        *e = (PatchError){};
}

static int patch_fail(PatchError *e, unsigned code, const char *field, const char *fmt, ...)
        _printf_(4, 5);
static int patch_fail(PatchError *e, unsigned code, const char *field, const char *fmt, ...) {
        va_list ap;
        int n;

        patch_error_done(e);
        e->code = code;
        va_start(ap, fmt);
        n = vasprintf(&e->message, fmt, ap);
        va_end(ap);
        if (n < 0)
                e->message = NULL;
        e->field = field ? strdup(field) : NULL;
        return -EINVAL;
}

/* RFC 7386 JSON merge patch. target is borrowed (NULL: absent); returns a
 * new reference. Arrays, the conditions list among them, are replaced. */
static json_t *merge_patch_apply(const json_t *target, json_t *patch) {
        json_t *result, *v;
        const char *key;

        if (!json_is_object(patch))
                return json_deep_copy(patch);
        result = json_is_object(target) ? json_deep_copy(target) : json_object();
        if (!result)
                return NULL;
        json_object_foreach(patch, key, v) {
                if (json_is_null(v))
                        json_object_del(result, key);
                else if (json_object_set_new(result, key,
                                             merge_patch_apply(json_object_get(result, key), v)) <
                         0) {
                        json_decref(result);
                        return NULL;
                }
        }
        return result;
}

static int smp_apply_map(json_t *target, json_t *patch, const char *path, PatchError *e);

static ssize_t find_condition(const json_t *list, const char *type) {
        size_t i;
        json_t *c;

        json_array_foreach(list, i, c) {
                if (streq_ptr(json_str(c, "type"), type))
                        return (ssize_t) i;
        }
        return -1;
}

/* The list strategy of PodStatus.conditions: patchStrategy=merge,
 * patchMergeKey=type (k8s.io/api/core/v1 types.go). target borrowed (NULL:
 * absent); *ret a new reference. */
static int smp_merge_conditions(const json_t *target, json_t *patch, json_t **ret, PatchError *e) {
        _cleanup_(json_decrefp) json_t *result = NULL;
        size_t i;
        json_t *el;

        /* {"$patch":"replace"} in a list: the rest of the patch list is the list */
        json_array_foreach(patch, i, el) {
                if (streq_ptr(json_str(el, "$patch"), "replace")) {
                        result = json_array();
                        break;
                }
        }
        if (!result)
                result = json_is_array(target) ? json_deep_copy(target) : json_array();
        if (!result)
                return -ENOMEM;

        json_array_foreach(patch, i, el) {
                const char *directive, *type;
                _cleanup_(json_decrefp) json_t *merged = NULL;
                char field[64];
                ssize_t at;
                int r;

                snprintf(field, sizeof field, "status.conditions[%zu]", i);
                if (!json_is_object(el))
                        return patch_fail(e, 422, field, "%s: Invalid value: must be an object",
                                          field);
                directive = json_str(el, "$patch");
                if (directive && streq(directive, "replace"))
                        continue;
                type = json_str(el, "type");
                if (!type) {
                        snprintf(field, sizeof field, "status.conditions[%zu].type", i);
                        return patch_fail(e, 422, field, "%s: Required value", field);
                }
                at = find_condition(result, type);
                if (directive && streq(directive, "delete")) {
                        while ((at = find_condition(result, type)) >= 0)
                                json_array_remove(result, (size_t) at);
                        continue;
                }
                if (directive && !streq(directive, "merge"))
                        return patch_fail(e, 400, NULL, "unknown patch type: \"%s\" in %s",
                                          directive, field);
                merged = at >= 0 ? json_deep_copy(json_array_get(result, (size_t) at))
                                 : json_object();
                if (!merged)
                        return -ENOMEM;
                r = smp_apply_map(merged, el, field, e);
                if (r < 0)
                        return r;
                if (at >= 0)
                        r = json_array_set(result, (size_t) at, merged);
                else
                        r = json_array_append(result, merged);
                if (r < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(result);
        return 0;
}

/* Strategic merge patch of one map, in place: maps merge recursively, null
 * deletes, lists are replaced except status.conditions (merged by type).
 * Directives: "$patch": replace|merge|delete (delete returns 1: the caller
 * drops the key); "$setElementOrder/...", "$retainKeys" and
 * "$deleteFromPrimitiveList/..." are accepted and ignored (they reorder or
 * prune fields this fake does not model). */
static int smp_apply_map(json_t *target, json_t *patch, const char *path, PatchError *e) {
        const char *directive = json_str(patch, "$patch"), *key;
        json_t *v;

        if (directive) {
                if (streq(directive, "delete"))
                        return 1;
                if (streq(directive, "replace"))
                        json_object_clear(target);
                else if (!streq(directive, "merge"))
                        return patch_fail(e, 400, NULL, "unknown patch type: \"%s\" in %s",
                                          directive, path);
        }
        json_object_foreach(patch, key, v) {
                _cleanup_free_ char *sub = NULL;

                if (key[0] == '$') {
                        if (streq(key, "$patch") || startswith(key, "$setElementOrder/") ||
                            streq(key, "$retainKeys") ||
                            startswith(key, "$deleteFromPrimitiveList/"))
                                continue;
                        return patch_fail(e, 400, NULL, "unknown directive \"%s\" in %s", key,
                                          path);
                }
                if (asprintf(&sub, "%s.%s", path, key) < 0)
                        return -ENOMEM;
                if (json_is_null(v))
                        json_object_del(target, key);
                else if (json_is_object(v)) {
                        json_t *cur = json_object_get(target, key);
                        _cleanup_(json_decrefp) json_t *n =
                                json_is_object(cur) ? json_incref(cur) : json_object();
                        int r;

                        if (!n)
                                return -ENOMEM;
                        r = smp_apply_map(n, v, sub, e);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                json_object_del(target, key);
                        else if (json_object_set(target, key, n) < 0)
                                return -ENOMEM;
                } else if (json_is_array(v) && streq(sub, "status.conditions")) {
                        json_t *merged = NULL;
                        int r = smp_merge_conditions(json_object_get(target, key), v, &merged, e);

                        if (r < 0)
                                return r;
                        if (json_object_set_new(target, key, merged) < 0)
                                return -ENOMEM;
                } else if (json_object_set_new(target, key, json_deep_copy(v)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* What decoding into v1.PodStatus and ValidatePodStatusUpdate refuse in the
 * conditions: not a list of objects, a string field that is not a string, a
 * time that is not RFC 3339, a type that is not a qualified name. */
static int validate_status(const json_t *status, PatchError *e) {
        static const char *const string_fields[] = {"type", "status", "reason", "message"};
        static const char *const time_fields[] = {"lastProbeTime", "lastTransitionTime"};
        const json_t *conditions;
        size_t i;
        json_t *c;

        if (!status || json_is_null(status))
                return 0;
        if (!json_is_object(status))
                return patch_fail(e, 422, "status", "status: Invalid value: must be an object");
        conditions = json_object_get(status, "conditions");
        if (!conditions || json_is_null(conditions))
                return 0;
        if (!json_is_array(conditions))
                return patch_fail(e, 422, "status.conditions",
                                  "status.conditions: Invalid value: must be a list");
        json_array_foreach(conditions, i, c) {
                char field[96];
                const char *type, *why;

                snprintf(field, sizeof field, "status.conditions[%zu]", i);
                if (!json_is_object(c))
                        return patch_fail(e, 422, field, "%s: Invalid value: must be an object",
                                          field);
                for (size_t k = 0; k < ELEMENTSOF(string_fields); k++) {
                        json_t *v = json_object_get(c, string_fields[k]);

                        if (v && !json_is_string(v) && !json_is_null(v)) {
                                snprintf(field, sizeof field, "status.conditions[%zu].%s", i,
                                         string_fields[k]);
                                return patch_fail(e, 422, field,
                                                  "%s: Invalid value: must be a string", field);
                        }
                }
                for (size_t k = 0; k < ELEMENTSOF(time_fields); k++) {
                        json_t *v = json_object_get(c, time_fields[k]);

                        if (v && !json_is_null(v) &&
                            (!json_is_string(v) || !is_rfc3339(json_string_value(v)))) {
                                snprintf(field, sizeof field, "status.conditions[%zu].%s", i,
                                         time_fields[k]);
                                return patch_fail(e, 422, field,
                                                  "%s: Invalid value: must be an RFC 3339 time "
                                                  "such as \"2006-01-02T15:04:05Z\"",
                                                  field);
                        }
                }
                type = json_str(c, "type");
                snprintf(field, sizeof field, "status.conditions[%zu].type", i);
                if (!type)
                        return patch_fail(e, 422, field, "%s: Required value", field);
                why = qualified_name_error(type);
                if (why)
                        return patch_fail(e, 422, field, "%s: Invalid value: \"%s\": %s", field,
                                          type, why);
        }
        return 0;
}

/* ---------------------------------------------------------------------------
 * Faults */

/* A malformed line a watch sends before its events. */
typedef enum WatchEventFault {
        WATCH_EVENT_NONE,
        WATCH_EVENT_NOT_JSON,     /* a line that is not JSON */
        WATCH_EVENT_UNKNOWN_TYPE, /* {"type":"SURPRISE","object":POD} */
        WATCH_EVENT_OVERSIZED,    /* a MODIFIED pod padded to watch_event_bytes */
        _WATCH_EVENT_MAX,
} WatchEventFault;

static const char *const watch_event_names[_WATCH_EVENT_MAX] = {
        [WATCH_EVENT_NOT_JSON] = "not-json",
        [WATCH_EVENT_UNKNOWN_TYPE] = "unknown-type",
        [WATCH_EVENT_OVERSIZED] = "oversized",
};

typedef struct FaultAction {
        unsigned status;        /* 0: answer normally (after the delay) */
        int retry_after_sec;    /* -1: no Retry-After header */
        unsigned delay_ms;      /* before answering, or dropping */
        bool drop_connection;   /* close without an answer */
        char *reason, *message; /* override the Status's defaults */
        char *body;             /* with status: this body instead of a Status */
        char *content_type;     /* body's Content-Type (default text/plain) */
        unsigned grace_seconds; /* DELETE of a pod: graceful deletion */
        WatchEventFault watch_event;
        unsigned watch_event_bytes; /* WATCH_EVENT_OVERSIZED: the line's size at least */
} FaultAction;

typedef struct Fault {
        char *method, *path, *path_prefix; /* NULL: any */
        int watch;                         /* -1 any, 0 not a watch, 1 a watch */
        FaultAction action;
        unsigned count; /* matching requests still to fault */
        unsigned hits;
} Fault;

static void fault_action_done(FaultAction *a) {
        free(a->reason);
        free(a->message);
        free(a->body);
        free(a->content_type);
        a->reason = a->message = a->body = a->content_type = NULL;
}

static void fault_done(Fault *f) {
        free(f->method);
        free(f->path);
        free(f->path_prefix);
        fault_action_done(&f->action);
        *f = (Fault){};
}

static json_t *fault_to_json(const Fault *f) {
        json_t *o = json_pack("{s:{s:s?, s:s?, s:s?}, s:i, s:i, s:i, s:b, s:i}", "match", "method",
                              f->method, "path", f->path, "path_prefix", f->path_prefix, "status",
                              (int) f->action.status, "delay_ms", (int) f->action.delay_ms, "count",
                              (int) f->count, "drop_connection", f->action.drop_connection, "hits",
                              (int) f->hits);

        if (!o)
                return NULL;
        if (f->watch >= 0)
                json_object_set_new(json_object_get(o, "match"), "watch", json_boolean(f->watch));
        if (f->action.retry_after_sec >= 0)
                json_object_set_new(o, "retry_after", json_integer(f->action.retry_after_sec));
        if (f->action.reason)
                json_object_set_new(o, "reason", json_string(f->action.reason));
        if (f->action.message)
                json_object_set_new(o, "message", json_string(f->action.message));
        if (f->action.body)
                json_object_set_new(o, "body", json_string(f->action.body));
        if (f->action.content_type)
                json_object_set_new(o, "content_type", json_string(f->action.content_type));
        if (f->action.grace_seconds > 0)
                json_object_set_new(o, "grace_seconds", json_integer(f->action.grace_seconds));
        if (f->action.watch_event != WATCH_EVENT_NONE)
                json_object_set_new(o, "watch_event",
                                    json_string(watch_event_names[f->action.watch_event]));
        if (f->action.watch_event_bytes > 0)
                json_object_set_new(o, "watch_event_bytes",
                                    json_integer(f->action.watch_event_bytes));
        return o;
}

static int get_uint(json_t *v, unsigned max, unsigned *ret) {
        json_int_t i;

        if (!json_is_integer(v))
                return -EINVAL;
        i = json_integer_value(v);
        if (i < 0 || (uint64_t) i > max)
                return -ERANGE;
        *ret = (unsigned) i;
        return 0;
}

static int dup_string_field(json_t *v, char **ret) {
        if (!json_is_string(v))
                return -EINVAL;
        *ret = strdup(json_string_value(v));
        return *ret ? 0 : -ENOMEM;
}

/* One fault from its JSON. Unknown keys are refused: a typo in a test must
 * not silently inject nothing. */
static int fault_parse(json_t *o, Fault *ret, char **ret_error) {
        Fault f = {.watch = -1, .action.retry_after_sec = -1, .count = 1};
        const char *key;
        json_t *v;
        int r = 0;

        if (!json_is_object(o))
                return asprintf(ret_error, "a fault must be an object") < 0 ? -ENOMEM : -EINVAL;
        json_object_foreach(o, key, v) {
                unsigned u;

                if (streq(key, "match")) {
                        const char *mk;
                        json_t *mv;

                        if (!json_is_object(v)) {
                                r = -EINVAL;
                                break;
                        }
                        json_object_foreach(v, mk, mv) {
                                if (streq(mk, "method"))
                                        r = dup_string_field(mv, &f.method);
                                else if (streq(mk, "path"))
                                        r = dup_string_field(mv, &f.path);
                                else if (streq(mk, "path_prefix"))
                                        r = dup_string_field(mv, &f.path_prefix);
                                else if (streq(mk, "watch") && json_is_boolean(mv))
                                        f.watch = json_is_true(mv);
                                else
                                        r = -EINVAL;
                                if (r < 0) {
                                        key = mk;
                                        break;
                                }
                        }
                } else if (streq(key, "status")) {
                        r = get_uint(v, 599, &f.action.status);
                        if (r >= 0 && f.action.status != 0 && f.action.status < 400)
                                r = -ERANGE;
                } else if (streq(key, "retry_after")) {
                        r = get_uint(v, 86400, &u);
                        f.action.retry_after_sec = (int) u;
                } else if (streq(key, "count")) {
                        r = get_uint(v, INT_MAX, &f.count);
                        if (r >= 0 && f.count == 0)
                                r = -ERANGE;
                } else if (streq(key, "delay_ms"))
                        r = get_uint(v, FAKE_MAX_DELAY_MS, &f.action.delay_ms);
                else if (streq(key, "drop_connection")) {
                        if (json_is_boolean(v))
                                f.action.drop_connection = json_is_true(v);
                        else
                                r = -EINVAL;
                } else if (streq(key, "reason"))
                        r = dup_string_field(v, &f.action.reason);
                else if (streq(key, "message"))
                        r = dup_string_field(v, &f.action.message);
                else if (streq(key, "body"))
                        r = dup_string_field(v, &f.action.body);
                else if (streq(key, "content_type")) {
                        r = dup_string_field(v, &f.action.content_type);
                        /* a header value: no line breaks or other control bytes */
                        for (const char *c = f.action.content_type; r >= 0 && *c; c++)
                                if ((unsigned char) *c < ' ' || *c == 0x7f)
                                        r = -EINVAL;
                } else if (streq(key, "grace_seconds")) {
                        r = get_uint(v, FAKE_MAX_GRACE_SECONDS, &f.action.grace_seconds);
                        if (r >= 0 && f.action.grace_seconds == 0)
                                r = -ERANGE;
                } else if (streq(key, "watch_event")) {
                        r = -EINVAL;
                        for (unsigned w = 1; json_is_string(v) && w < _WATCH_EVENT_MAX; w++)
                                if (streq(json_string_value(v), watch_event_names[w])) {
                                        f.action.watch_event = (WatchEventFault) w;
                                        r = 0;
                                }
                } else if (streq(key, "watch_event_bytes"))
                        r = get_uint(v, FAKE_MAX_WATCH_EVENT_BYTES, &f.action.watch_event_bytes);
                else
                        r = -EINVAL;
                if (r < 0)
                        break;
        }
        if (r >= 0 && f.action.status == 0 && f.action.delay_ms == 0 && !f.action.drop_connection &&
            f.action.grace_seconds == 0 && f.action.watch_event == WATCH_EVENT_NONE)
                r = -EDOM;
        /* A body replaces the Status of an injected error; the rest go with
         * what they change, so that a fault never silently does nothing. */
        if (r >= 0 &&
            ((f.action.body && f.action.status == 0) || (f.action.content_type && !f.action.body) ||
             ((f.action.grace_seconds || f.action.watch_event) &&
              (f.action.status || f.action.drop_connection)) ||
             (f.action.watch_event_bytes > 0 && f.action.watch_event != WATCH_EVENT_OVERSIZED)))
                r = -ENOTUNIQ;
        if (r < 0) {
                int n = r == -EDOM ? asprintf(ret_error, "a fault needs status, delay_ms, "
                                                         "drop_connection, grace_seconds or "
                                                         "watch_event")
                        : r == -ENOTUNIQ
                                ? asprintf(ret_error,
                                           "body needs status, content_type needs body, "
                                           "grace_seconds and watch_event go without status "
                                           "and drop_connection, watch_event_bytes with "
                                           "watch_event \"oversized\"")
                        : r == -ENOMEM
                                ? -1
                                : asprintf(ret_error,
                                           "fault: bad or unknown key \"%s\" (keys: match {method, "
                                           "path, path_prefix, watch}, status 400-599, "
                                           "retry_after, count >= 1, delay_ms <= %u, "
                                           "drop_connection, reason, message, body, "
                                           "content_type, grace_seconds 1-%u, watch_event "
                                           "not-json|unknown-type|oversized, "
                                           "watch_event_bytes <= %u)",
                                           key, FAKE_MAX_DELAY_MS, FAKE_MAX_GRACE_SECONDS,
                                           FAKE_MAX_WATCH_EVENT_BYTES);
                fault_done(&f);
                return n < 0 ? -ENOMEM : -EINVAL;
        }
        *ret = f;
        return 0;
}

/* ---------------------------------------------------------------------------
 * The server's state */

typedef struct HistoryEntry {
        uint64_t rv;
        const char *type; /* static */
        json_t *object;
} HistoryEntry;

typedef enum Port {
        PORT_API,
        PORT_CONTROL,
} Port;

struct Server {
        struct MHD_Daemon *api, *control;
        char *namespace;
        char *token_path;
        char *user; /* the token's subject (--user), named in 403 messages */
        Rbac *rbac; /* --rbac: the rules enforced; NULL: the token may do all */
        bool verbose;
        bool stopping;
        bool need_run;            /* a connection was resumed: run libmicrohttpd again at once */
        unsigned max_connections; /* per port (--max-connections) */

        json_t *pods;        /* name -> Pod, in insertion order */
        json_t *terminating; /* name -> {"uid", "at"}: graceful deletions under way */
        uint64_t rv;         /* last resourceVersion handed out */
        uint64_t compacted_rv;
        HistoryEntry history[FAKE_MAX_HISTORY];
        size_t history_first, n_history;

        Fault faults[FAKE_MAX_FAULTS];
        size_t n_faults;

        json_t *requests; /* the log */
        uint64_t request_seq;
        uint64_t requests_dropped;
        int arrivals_fd; /* --arrivals, or -1 */

        json_t *events;       /* stored Events */
        json_t *configmaps;   /* --configmaps: name -> ConfigMap, read-only */
        json_t *admission[2]; /* admission_kinds[i]: name -> object (control port) */
        json_t *leases;       /* name -> Lease, in --namespace */

        Request *live; /* requests in progress, both ports */
};

struct Request {
        Request *prev, *next;
        Server *server;
        Port port;
        struct MHD_Connection *connection;
        char *method, *path, *query, *content_type;
        StrBuf body;
        bool too_large, answered_early;
        double wall_start;
        uint64_t start_usec;
        bool logged;

        /* fault */
        bool fault_checked, has_fault;
        FaultAction fault;
        bool delay_pending, delay_done;
        uint64_t resume_usec;
        bool suspended;

        /* watch */
        bool watching, watch_ended, bookmarks;
        uint64_t watch_rv; /* events and bookmarks at or below it are not sent */
        bool watch_broken; /* end it without the last chunk: a broken stream */
        Selector labels, fields;
        uint64_t watch_deadline_usec;
        StrBuf queue;
        size_t queue_off;
};

static void request_wake(Request *r) {
        if (r->suspended) {
                r->suspended = false;
                MHD_resume_connection(r->connection);
                /* In external polling mode libmicrohttpd takes the resumed
                 * connection back only in its next MHD_run(), and its
                 * MHD_get_timeout() does not ask for one: the loop must. */
                r->server->need_run = true;
        }
}

static Request *request_free(Request *r) {
        if (!r)
                return NULL;
        if (r->prev)
                r->prev->next = r->next;
        else if (r->server->live == r)
                r->server->live = r->next;
        if (r->next)
                r->next->prev = r->prev;
        free(r->method);
        free(r->path);
        free(r->query);
        free(r->content_type);
        strbuf_done(&r->body);
        strbuf_done(&r->queue);
        fault_action_done(&r->fault);
        selector_done(&r->labels);
        selector_done(&r->fields);
        free(r);
        return NULL;
}

static enum MHD_Result append_query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                        const char *value) {
        StrBuf *b = cls;

        if (b->len > 0)
                (void) strbuf_putc(b, '&');
        (void) strbuf_puts(b, key);
        if (value) {
                (void) strbuf_putc(b, '=');
                (void) strbuf_puts(b, value);
        }
        return MHD_YES;
}

static Request *request_new(Server *s, Port port, struct MHD_Connection *c, const char *method,
                            const char *url) {
        Request *r = calloc(1, sizeof *r);
        StrBuf q = STRBUF_INIT(8192);
        const char *ct;

        if (!r)
                return NULL;
        r->server = s;
        r->port = port;
        r->connection = c;
        r->body = STRBUF_INIT(FAKE_MAX_BODY_BYTES);
        r->queue = STRBUF_INIT(FAKE_MAX_WATCH_QUEUE_BYTES);
        r->wall_start = wall_seconds();
        r->start_usec = now_usec();
        r->method = strdup(method);
        r->path = strdup(url);
        (void) MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, append_query_arg, &q);
        r->query = q.len > 0 ? strbuf_steal(&q) : NULL;
        strbuf_done(&q);
        ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        r->content_type = ct ? strdup(ct) : NULL;
        r->next = s->live;
        if (s->live)
                s->live->prev = r;
        s->live = r;
        if (!r->method || !r->path || (ct && !r->content_type))
                return request_free(r);
        return r;
}

/* ---------------------------------------------------------------------------
 * The request log (API port only) */

static void log_request(Server *s, Request *r, unsigned status, bool dropped) {
        _cleanup_(json_decrefp) json_t *e = NULL;

        if (r->logged)
                return;
        r->logged = true;
        e = json_pack("{s:I, s:f, s:s, s:s, s:s?, s:s?, s:i, s:b, s:b, s:b, s:f}", "seq",
                      (json_int_t) ++s->request_seq, "time", r->wall_start, "method", r->method,
                      "path", r->path, "query", r->query, "content_type", r->content_type, "status",
                      (int) status, "watch", r->watching, "fault", r->has_fault, "dropped", dropped,
                      "duration_ms", (double) (now_usec() - r->start_usec) / 1000.0);
        if (!e)
                return;
        if (r->body.len > 0 && r->body.len <= FAKE_MAX_LOGGED_BODY_BYTES) {
                json_t *b = json_loadb(r->body.data, r->body.len, 0, NULL);

                if (b)
                        json_object_set_new(e, "body", b);
        }
        if (json_array_size(s->requests) >= FAKE_MAX_LOG_ENTRIES) {
                json_array_remove(s->requests, 0);
                s->requests_dropped++;
        }
        json_array_append(s->requests, e);
        if (s->verbose)
                fprintf(stderr, "fake-apiserver: %s %s%s%s -> %u%s%s\n", r->method, r->path,
                        r->query ? "?" : "", strempty(r->query), status,
                        r->has_fault ? " (fault)" : "", dropped ? " (dropped)" : "");
}

/* ---------------------------------------------------------------------------
 * Answers */

static enum MHD_Result queue_json(struct MHD_Connection *c, unsigned status, json_t *body,
                                  int retry_after_sec) {
        struct MHD_Response *resp;
        enum MHD_Result ret;
        char *text, *t;
        size_t len;

        if (!body)
                return MHD_NO;
        text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        if (!text)
                return MHD_NO;
        len = strlen(text);
        /* the real server ends every JSON body with a newline */
        t = realloc(text, len + 2);
        if (!t) {
                free(text);
                return MHD_NO;
        }
        t[len++] = '\n';
        t[len] = '\0';
        resp = MHD_create_response_from_buffer(len, t, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(t);
                return MHD_NO;
        }
        if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE_JSON) !=
                    MHD_YES ||
            MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, private") !=
                    MHD_YES) {
                MHD_destroy_response(resp);
                return MHD_NO;
        }
        if (retry_after_sec >= 0) {
                char v[16];

                snprintf(v, sizeof v, "%d", retry_after_sec);
                if (MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, v) != MHD_YES) {
                        MHD_destroy_response(resp);
                        return MHD_NO;
                }
        }
        ret = MHD_queue_response(c, status, resp);
        MHD_destroy_response(resp);
        return ret;
}

/* An injected answer with a body of the test's (an HTML page from a proxy,
 * a truncated object): logged, then queued as it is. */
static enum MHD_Result api_answer_raw(Request *r, unsigned status, const char *body,
                                      const char *content_type, int retry_after_sec) {
        struct MHD_Response *resp;
        enum MHD_Result ret;

        log_request(r->server, r, status, false);
        resp = MHD_create_response_from_buffer(strlen(body), (void *) (uintptr_t) body,
                                               MHD_RESPMEM_MUST_COPY);
        if (!resp)
                return MHD_NO;
        if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                    content_type ? content_type : "text/plain; charset=utf-8") !=
            MHD_YES) {
                MHD_destroy_response(resp);
                return MHD_NO;
        }
        if (retry_after_sec >= 0) {
                char v[16];

                snprintf(v, sizeof v, "%d", retry_after_sec);
                if (MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, v) != MHD_YES) {
                        MHD_destroy_response(resp);
                        return MHD_NO;
                }
        }
        ret = MHD_queue_response(r->connection, status, resp);
        MHD_destroy_response(resp);
        return ret;
}

/* An API answer: logged, then queued. body is stolen. */
static enum MHD_Result api_answer(Request *r, unsigned status, json_t *body, int retry_after) {
        log_request(r->server, r, status, false);
        return queue_json(r->connection, status, body, retry_after);
}

/* ---------------------------------------------------------------------------
 * Pods, resourceVersions and watches */

static bool watch_wants(const Request *w, const json_t *pod) {
        return pod_matches(pod, &w->labels, &w->fields);
}

static void watch_queue(Request *w, const char *type, const json_t *object) {
        _cleanup_(json_decrefp) json_t *ev =
                json_pack("{s:s, s:O}", "type", type, "object", object);
        _cleanup_free_ char *line = ev ? json_dumps(ev, JSON_COMPACT) : NULL;

        if (!line || strbuf_puts(&w->queue, line) < 0 || strbuf_putc(&w->queue, '\n') < 0) {
                /* out of memory or a watcher far behind: end its stream */
                w->watch_ended = true;
                if (w->server->verbose)
                        fprintf(stderr, "fake-apiserver: watch queue full, closing a watch\n");
        }
        request_wake(w);
}

static void watch_end(Request *w) {
        if (w->bookmarks && !w->watch_ended && w->server->rv > w->watch_rv) {
                _cleanup_(json_decrefp) json_t *bm = NULL;
                _cleanup_free_ char *rv = rv_string(w->server->rv);

                bm = json_pack("{s:s, s:s, s:{s:s?}}", "kind", "Pod", "apiVersion", "v1",
                               "metadata", "resourceVersion", rv);
                if (bm)
                        watch_queue(w, "BOOKMARK", bm);
        }
        w->watch_ended = true;
        request_wake(w);
}

static void history_add(Server *s, const char *type, const json_t *object) {
        HistoryEntry *h;

        if (s->n_history == FAKE_MAX_HISTORY) {
                /* like etcd compacting: watches from before the oldest kept
                 * change now get 410 */
                h = &s->history[s->history_first];
                s->compacted_rv = h->rv;
                json_decref(h->object);
                s->history_first = (s->history_first + 1) % FAKE_MAX_HISTORY;
                s->n_history--;
        }
        h = &s->history[(s->history_first + s->n_history) % FAKE_MAX_HISTORY];
        *h = (HistoryEntry){.rv = s->rv, .type = type, .object = json_deep_copy(object)};
        s->n_history++;
}

static void history_clear(Server *s) {
        for (size_t i = 0; i < s->n_history; i++)
                json_decref(s->history[(s->history_first + i) % FAKE_MAX_HISTORY].object);
        s->n_history = s->history_first = 0;
}

/* A change at resourceVersion s->rv: into the history and to every watch
 * that started below it (one started from a newer resourceVersion skips it,
 * as the real server's cacheWatcher sends only events newer than its start). */
static void server_emit(Server *s, const char *type, const json_t *pod) {
        history_add(s, type, pod);
        for (Request *w = s->live; w; w = w->next)
                if (w->watching && !w->watch_ended && s->rv > w->watch_rv && watch_wants(w, pod))
                        watch_queue(w, type, pod);
}

static uint64_t pod_rv(const json_t *pod) {
        uint64_t v = 0;

        (void) parse_u64(json_str(json_object_get(pod, "metadata"), "resourceVersion"), &v);
        return v;
}

/* Makes a pod from the file or the control port complete: kind, apiVersion,
 * namespace, uid, status; checks the fields this fake relies on. */
static int pod_normalize(Server *s, json_t *pod, char **ret_error) {
        json_t *meta, *v;
        const char *name, *ns, *key;

        if (!json_is_object(pod) || !json_is_object(meta = json_object_get(pod, "metadata")))
                return asprintf(ret_error, "a pod must be an object with metadata") < 0 ? -ENOMEM
                                                                                        : -EINVAL;
        name = json_str(meta, "name");
        if (!name || *name == '\0' || strlen(name) > FAKE_MAX_NAME_BYTES ||
            !selector_word_ok(name, false))
                return asprintf(ret_error, "metadata.name: missing or not a valid name") < 0
                               ? -ENOMEM
                               : -EINVAL;
        ns = json_str(meta, "namespace");
        if (ns && !streq(ns, s->namespace))
                return asprintf(ret_error,
                                "pod \"%s\" is in namespace \"%s\": this server serves \"%s\" "
                                "only",
                                name, ns, s->namespace) < 0
                               ? -ENOMEM
                               : -EINVAL;
        if (!ns)
                json_object_set_new(meta, "namespace", json_string(s->namespace));
        if (!json_str(meta, "uid")) {
                char uid[37];

                make_uid(uid);
                json_object_set_new(meta, "uid", json_string(uid));
        }
        v = json_object_get(meta, "resourceVersion");
        if (v) {
                uint64_t rv;

                if (parse_u64(json_string_value(v), &rv) < 0 || rv == 0)
                        return asprintf(ret_error,
                                        "pod \"%s\": metadata.resourceVersion must be a decimal "
                                        "string (this fake counts them like etcd)",
                                        name) < 0
                                       ? -ENOMEM
                                       : -EINVAL;
        }
        v = json_object_get(meta, "labels");
        if (v) {
                json_t *lv;

                if (!json_is_object(v))
                        return asprintf(ret_error, "pod \"%s\": labels must be an object", name) < 0
                                       ? -ENOMEM
                                       : -EINVAL;
                json_object_foreach(v, key, lv) {
                        if (!json_is_string(lv))
                                return asprintf(ret_error,
                                                "pod \"%s\": label \"%s\" is not a string", name,
                                                key) < 0
                                               ? -ENOMEM
                                               : -EINVAL;
                }
        }
        if (!json_object_get(pod, "status"))
                json_object_set_new(pod, "status", json_object());
        {
                PatchError e = {};
                int r = validate_status(json_object_get(pod, "status"), &e);

                if (r < 0) {
                        r = asprintf(ret_error, "pod \"%s\": %s", name, strnull(e.message)) < 0
                                    ? -ENOMEM
                                    : -EINVAL;
                        patch_error_done(&e);
                        return r;
                }
        }
        if (!json_object_get(pod, "spec"))
                json_object_set_new(pod, "spec", json_object());
        {
                /* kind and apiVersion first, as the real server writes them */
                _cleanup_(json_decrefp) json_t *head =
                        json_pack("{s:s, s:s}", "kind", "Pod", "apiVersion", "v1");

                if (!head)
                        return -ENOMEM;
                json_object_del(pod, "kind");
                json_object_del(pod, "apiVersion");
                if (json_object_update(head, pod) < 0)
                        return -ENOMEM;
                json_object_clear(pod);
                if (json_object_update(pod, head) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Adds a pod (stolen) at a new resourceVersion; a pod with the same name is
 * deleted first, as a replacement pod comes after its predecessor's
 * deletion. Watches see DELETED then ADDED. */
static void server_put_pod(Server *s, json_t *pod) {
        const char *name = pod_name(pod);
        json_t *old = json_object_get(s->pods, name);

        if (old) {
                _cleanup_(json_decrefp) json_t *gone = json_deep_copy(old);

                json_object_del(s->pods, name);
                s->rv++;
                if (gone) {
                        set_rv(gone, s->rv);
                        server_emit(s, "DELETED", gone);
                }
        }
        s->rv++;
        set_rv(pod, s->rv);
        json_object_set_new(s->pods, pod_name(pod), pod);
        server_emit(s, "ADDED", pod);
}

static void server_delete_pod(Server *s, const char *name) {
        _cleanup_(json_decrefp) json_t *gone = json_deep_copy(json_object_get(s->pods, name));

        json_object_del(s->pods, name);
        s->rv++;
        if (gone) {
                set_rv(gone, s->rv);
                server_emit(s, "DELETED", gone);
        }
}

/* Graceful deletion, as the real server does it for a pod that is bound to a
 * node: metadata.deletionTimestamp (when the grace period ends) and
 * deletionGracePeriodSeconds are set at a new resourceVersion (MODIFIED), and
 * the pod stays visible until then, when kubelet would have removed it
 * (DELETED, run_timers). A terminating pod deleted again keeps its grace
 * period. Returns the pod (borrowed). */
static json_t *server_delete_gracefully(Server *s, json_t *pod, unsigned grace_seconds) {
        json_t *meta = json_object_get(pod, "metadata");
        uint64_t at = now_usec() + (uint64_t) grace_seconds * 1000000u;
        time_t end = time(NULL) + (time_t) grace_seconds;
        struct tm tm;
        char stamp[32];

        if (json_object_get(meta, "deletionTimestamp"))
                return pod;
        if (!gmtime_r(&end, &tm) || strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                stamp[0] = '\0';
        json_object_set_new(meta, "deletionTimestamp", json_string(stamp));
        json_object_set_new(meta, "deletionGracePeriodSeconds", json_integer(grace_seconds));
        json_object_set_new(
                s->terminating, pod_name(pod),
                json_pack("{s:s, s:I}", "uid", strempty(pod_uid(pod)), "at", (json_int_t) at));
        s->rv++;
        set_rv(pod, s->rv);
        server_emit(s, "MODIFIED", pod);
        return pod;
}

/* Replaces a pod's status (stolen, not NULL) at a new resourceVersion: MODIFIED. */
static void server_set_status(Server *s, json_t *pod, json_t *status) {
        json_object_set_new(pod, "status", status);
        s->rv++;
        set_rv(pod, s->rv);
        server_emit(s, "MODIFIED", pod);
}

static int load_pods(Server *s, const char *path, bool namespace_given) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        _cleanup_free_ char *data = NULL;
        json_error_t err;
        json_t *items, *pod;
        uint64_t max_rv = 0, min_rv = UINT64_MAX;
        size_t len, i;
        int r;

        r = read_file_at(AT_FDCWD, path, 0, FAKE_MAX_FILE_BYTES, &data, &len);
        if (r < 0) {
                fprintf(stderr, "fake-apiserver: --pods %s: %s\n", path, strerror(-r));
                return r;
        }
        root = json_loadb(data, len, 0, &err);
        if (!root) {
                fprintf(stderr, "fake-apiserver: --pods %s:%d: %s\n", path, err.line, err.text);
                return -EINVAL;
        }
        items = json_is_array(root) ? root : json_object_get(root, "items");
        if (!json_is_array(items)) {
                fprintf(stderr, "fake-apiserver: --pods %s: expected a PodList or a list of pods\n",
                        path);
                return -EINVAL;
        }
        if (!namespace_given) {
                const char *ns = json_str(json_object_get(json_array_get(items, 0), "metadata"),
                                          "namespace");

                free(s->namespace);
                s->namespace = strdup(ns ? ns : "default");
                if (!s->namespace)
                        return -ENOMEM;
        }
        json_array_foreach(items, i, pod) {
                _cleanup_free_ char *error = NULL;
                uint64_t rv;

                r = pod_normalize(s, pod, &error);
                if (r < 0) {
                        fprintf(stderr, "fake-apiserver: --pods %s: item %zu: %s\n", path, i,
                                strnull(error));
                        return r;
                }
                if (json_object_get(s->pods, pod_name(pod))) {
                        fprintf(stderr, "fake-apiserver: --pods %s: two pods named \"%s\"\n", path,
                                pod_name(pod));
                        return -EINVAL;
                }
                rv = pod_rv(pod);
                if (rv > max_rv)
                        max_rv = rv;
                if (rv > 0 && rv < min_rv)
                        min_rv = rv;
                json_object_set(s->pods, pod_name(pod), pod);
        }
        /* No resourceVersions given: start where a small cluster might be, so
         * "1" is already too old. */
        s->rv = max_rv > 0 ? max_rv : 1000;
        {
                const char *key;
                json_t *p;

                json_object_foreach(s->pods, key, p) {
                        if (pod_rv(p) == 0) {
                                s->rv++;
                                set_rv(p, s->rv);
                                if (s->rv < min_rv)
                                        min_rv = s->rv;
                        }
                }
        }
        /* Every pod's own resourceVersion can start a watch (a client that
         * GETs a pod watches from its version); anything older is gone. */
        s->compacted_rv = min_rv == UINT64_MAX ? s->rv : min_rv;
        return 0;
}

/* ---------------------------------------------------------------------------
 * API routing */

typedef enum Endpoint {
        EP_NONE,
        EP_POD,
        EP_POD_STATUS,
        EP_PODS,
        EP_EVENTS,
} Endpoint;

typedef struct Route {
        Endpoint endpoint;
        bool events_api; /* events.k8s.io/v1 rather than core/v1 */
        bool watch;
        bool bad_watch_flag;
        char ns[FAKE_MAX_NAME_BYTES + 1];
        char name[FAKE_MAX_NAME_BYTES + 1];
} Route;

/* Copies one path segment; false when it is empty or too long. */
static bool take_segment(const char **p, char *buf, size_t size) {
        const char *end = strchrnul(*p, '/');
        size_t n = (size_t) (end - *p);

        if (n == 0 || n >= size)
                return false;
        memcpy(buf, *p, n);
        buf[n] = '\0';
        *p = end;
        return true;
}

static void route_parse(Request *r, Route *ret) {
        Route rt = {};
        const char *p, *w;
        char kind[32];

        if ((p = startswith(r->path, "/api/v1/namespaces/")))
                ;
        else if ((p = startswith(r->path, "/apis/events.k8s.io/v1/namespaces/")))
                rt.events_api = true;
        else
                goto done;
        if (!take_segment(&p, rt.ns, sizeof rt.ns) || *p++ != '/' ||
            !take_segment(&p, kind, sizeof kind))
                goto done;
        if (streq(kind, "events")) {
                if (*p == '\0')
                        rt.endpoint = EP_EVENTS;
                goto done;
        }
        if (rt.events_api || !streq(kind, "pods"))
                goto done;
        if (*p == '\0') {
                bool b = false;

                w = MHD_lookup_connection_value(r->connection, MHD_GET_ARGUMENT_KIND, "watch");
                if (w && parse_bool(w, &b) < 0)
                        rt.bad_watch_flag = true;
                rt.watch = b;
                rt.endpoint = EP_PODS;
                goto done;
        }
        if (*p++ != '/' || !take_segment(&p, rt.name, sizeof rt.name))
                goto done;
        if (*p == '\0')
                rt.endpoint = EP_POD;
        else if (streq(p, "/status"))
                rt.endpoint = EP_POD_STATUS;
done:
        *ret = rt;
}

static void request_attributes_of(const Request *r, RequestAttributes *ret) {
        request_attributes(
                r->method, r->path,
                MHD_lookup_connection_value(r->connection, MHD_GET_ARGUMENT_KIND, "watch"),
                MHD_lookup_connection_value(r->connection, MHD_GET_ARGUMENT_KIND, "fieldSelector"),
                ret);
}

/* The real server's 403 for r, worded by its authorizer. */
static json_t *forbidden_status(Server *s, const Request *r) {
        RequestAttributes a;

        request_attributes_of(r, &a);
        return forbidden_status_new(&a, s->user, NULL);
}

static json_t *not_found_status(const Route *rt) {
        if (rt->endpoint == EP_NONE)
                return status_new(404, NULL, "the server could not find the requested resource",
                                  NULL);
        if (rt->name[0])
                return status_newf(404, NULL, details_new(rt->name, "pods"),
                                   "pods \"%s\" not found", rt->name);
        return status_new(404, NULL, "the server could not find the requested resource", NULL);
}

/* The Status an injected fault answers: the real server's wording for the
 * code and the request, unless the fault gives its own. */
static json_t *fault_status(Server *s, Request *r, const Route *rt) {
        const FaultAction *a = &r->fault;
        unsigned code = a->status;
        json_t *st;

        switch (code) {
        case 401:
                st = status_new(code, NULL, "Unauthorized", NULL);
                break;
        case 403:
                st = forbidden_status(s, r);
                break;
        case 404:
                st = not_found_status(rt);
                break;
        case 409:
                st = status_newf(code, NULL, details_new(rt->name, "pods"),
                                 "Operation cannot be fulfilled on pods \"%s\": the object has "
                                 "been modified; please apply your changes to the latest version "
                                 "and try again",
                                 rt->name);
                break;
        case 422:
                st = status_newf(code, NULL, details_new(rt->name, "Pod"),
                                 "Pod \"%s\" is invalid: status.conditions: Invalid value: "
                                 "injected fault",
                                 rt->name);
                break;
        case 429:
                st = status_new(code, NULL, "Too many requests, please try again later.",
                                json_pack("{s:i}", "retryAfterSeconds",
                                          a->retry_after_sec >= 0 ? a->retry_after_sec : 1));
                break;
        case 500:
                st = status_new(code, NULL, "Internal error occurred: injected fault", NULL);
                break;
        default:
                st = status_newf(code, NULL, NULL, "injected fault: HTTP %u", code);
        }
        if (st && a->reason)
                json_object_set_new(st, "reason", json_string(a->reason));
        if (st && a->message)
                json_object_set_new(st, "message", json_string(a->message));
        return st;
}

/* The first fault matching r, with its count taken. */
static void take_fault(Server *s, Request *r, const Route *rt) {
        for (size_t i = 0; i < s->n_faults; i++) {
                Fault *f = &s->faults[i];

                if ((f->method && strcasecmp(f->method, r->method) != 0) ||
                    (f->path && !streq(f->path, r->path)) ||
                    (f->path_prefix && !startswith(r->path, f->path_prefix)) ||
                    (f->watch >= 0 && f->watch != (int) rt->watch))
                        continue;
                r->has_fault = true;
                r->fault = f->action;
                r->fault.reason = f->action.reason ? strdup(f->action.reason) : NULL;
                r->fault.message = f->action.message ? strdup(f->action.message) : NULL;
                r->fault.body = f->action.body ? strdup(f->action.body) : NULL;
                r->fault.content_type =
                        f->action.content_type ? strdup(f->action.content_type) : NULL;
                f->hits++;
                if (--f->count == 0) {
                        fault_done(f);
                        memmove(f, f + 1, (s->n_faults - i - 1) * sizeof *f);
                        s->n_faults--;
                }
                return;
        }
}

/* Bearer token against the token file as it is now. */
static bool authorized(Server *s, Request *r) {
        _cleanup_free_ char *token = NULL;
        const char *h, *given;
        size_t len;
        int k;

        h = MHD_lookup_connection_value(r->connection, MHD_HEADER_KIND,
                                        MHD_HTTP_HEADER_AUTHORIZATION);
        if (!h || strncasecmp(h, "Bearer ", 7) != 0)
                return false;
        given = h + 7;
        while (*given == ' ')
                given++;
        k = read_file_at(AT_FDCWD, s->token_path, 0, FAKE_MAX_TOKEN_BYTES, &token, &len);
        if (k < 0) {
                fprintf(stderr, "fake-apiserver: --token-file %s: %s: answering 401\n",
                        s->token_path, strerror(-k));
                return false;
        }
        while (len > 0 && (token[len - 1] == '\n' || token[len - 1] == '\r'))
                token[--len] = '\0';
        return len > 0 && strlen(token) == len && streq(token, given);
}

/* --rbac: the token's subject against the rules, after authentication and
 * before anything else, as the real server's filters run. true when r was
 * refused (*ret: its 403). */
static bool rbac_refuses(Server *s, Request *r, enum MHD_Result *ret) {
        _cleanup_free_ char *reason = NULL;
        RequestAttributes a;
        Subject who;

        if (!s->rbac)
                return false;
        request_attributes_of(r, &a);
        subject_init(&who, s->user);
        if (rbac_allows(s->rbac, &who, &a, &reason))
                return false;
        *ret = api_answer(r, 403, forbidden_status_new(&a, s->user, reason), -1);
        return true;
}

static json_t *pod_list(Server *s, const Selector *labels, const Selector *fields) {
        _cleanup_free_ char *rv = rv_string(s->rv);
        json_t *list, *items, *pod;
        const char *key;

        list = json_pack("{s:s, s:s, s:{s:s?}, s:[]}", "kind", "PodList", "apiVersion", "v1",
                         "metadata", "resourceVersion", rv, "items");
        items = json_object_get(list, "items");
        json_object_foreach(s->pods, key, pod) {
                json_t *item;

                if (!pod_matches(pod, labels, fields))
                        continue;
                /* list items carry no kind and apiVersion on the real server */
                item = json_deep_copy(pod);
                json_object_del(item, "kind");
                json_object_del(item, "apiVersion");
                json_array_append_new(items, item);
        }
        return list;
}

static ssize_t watch_read(void *cls, uint64_t pos, char *buf, size_t max) {
        Request *w = cls;
        size_t avail = w->queue.len - w->queue_off;

        if (avail > 0) {
                size_t n = avail < max ? avail : max;

                memcpy(buf, w->queue.data + w->queue_off, n);
                w->queue_off += n;
                if (w->queue_off == w->queue.len) {
                        strbuf_reset(&w->queue);
                        w->queue_off = 0;
                }
                return (ssize_t) n;
        }
        if (w->watch_broken)
                return MHD_CONTENT_READER_END_WITH_ERROR;
        if (w->watch_ended || w->server->stopping)
                return MHD_CONTENT_READER_END_OF_STREAM;
        /* Nothing to send: park until a change, the timeout or a hang-up
         * (the loop polls the socket) resumes it. */
        MHD_suspend_connection(w->connection);
        w->suspended = true;
        return 0;
}

/* A get or list from a resourceVersion newer than the server's: the real
 * server's cache waits for it (3 s), then answers 504 with the cause
 * ResourceVersionTooLarge (storage.NewTooLargeResourceVersionError). The fake
 * answers at once: nothing else could bring its resourceVersion forward
 * while it waits. true when r was answered (*ret). */
static bool too_large_rv(Server *s, Request *r, enum MHD_Result *ret) {
        const char *v = MHD_lookup_connection_value(r->connection, MHD_GET_ARGUMENT_KIND,
                                                    "resourceVersion");
        uint64_t rv;

        if (!v || !*v || parse_u64(v, &rv) < 0 || rv <= s->rv)
                return false;
        *ret = api_answer(r, 504,
                          status_newf(504, NULL,
                                      json_pack("{s:[{s:s, s:s}], s:i}", "causes", "reason",
                                                "ResourceVersionTooLarge", "message",
                                                "Too large resource version", "retryAfterSeconds",
                                                FAKE_TOO_LARGE_RV_RETRY_SEC),
                                      "Timeout: Too large resource version: %" PRIu64
                                      ", current: %" PRIu64,
                                      rv, s->rv),
                          FAKE_TOO_LARGE_RV_RETRY_SEC);
        return true;
}

/* A watch fault's malformed line, first in the stream: a line that is not
 * JSON, an event of a type no server sends, or a MODIFIED event whose pod (the
 * first the watch selects, else a made-up one) carries an annotation that
 * makes the line watch_event_bytes long. */
static void watch_queue_fault(Server *s, Request *r) {
        _cleanup_(json_decrefp) json_t *pod = NULL;
        const char *key;
        json_t *p;

        if (r->fault.watch_event == WATCH_EVENT_NOT_JSON) {
                (void) strbuf_puts(&r->queue, "<html>this is not a watch event</html>\n");
                return;
        }
        json_object_foreach(s->pods, key, p) if (watch_wants(r, p)) {
                pod = json_deep_copy(p);
                break;
        }
        if (!pod)
                pod = json_pack("{s:s, s:s, s:{s:s, s:s}}", "kind", "Pod", "apiVersion", "v1",
                                "metadata", "name", "no-such-pod", "namespace", s->namespace);
        if (!pod)
                return;
        if (r->fault.watch_event == WATCH_EVENT_UNKNOWN_TYPE) {
                watch_queue(r, "SURPRISE", pod);
                return;
        }
        {
                size_t n = r->fault.watch_event_bytes ? r->fault.watch_event_bytes
                                                      : FAKE_DEFAULT_WATCH_EVENT_BYTES;
                _cleanup_free_ char *pad = malloc(n + 1);
                json_t *meta = json_object_get(pod, "metadata"), *ann;

                if (!pad)
                        return;
                memset(pad, 'x', n);
                pad[n] = '\0';
                ann = json_object_get(meta, "annotations");
                if (!json_is_object(ann)) {
                        ann = json_object();
                        json_object_set_new(meta, "annotations", ann);
                }
                json_object_set_new(ann, "fake-apiserver.test/padding", json_string(pad));
                watch_queue(r, "MODIFIED", pod);
        }
}

static enum MHD_Result api_watch(Server *s, Request *r) {
        const char *v;
        uint64_t rv = 0, timeout = FAKE_DEFAULT_WATCH_TIMEOUT_SEC;
        bool have_rv = false;
        struct MHD_Response *resp;
        enum MHD_Result ret;

        v = MHD_lookup_connection_value(r->connection, MHD_GET_ARGUMENT_KIND, "timeoutSeconds");
        if (v && (parse_u64(v, &timeout) < 0 || timeout > FAKE_MAX_WATCH_TIMEOUT_SEC))
                return api_answer(r, 400,
                                  status_newf(400, NULL, NULL,
                                              "timeoutSeconds: Invalid value: \"%s\": must be 0 "
                                              "to %u",
                                              v, FAKE_MAX_WATCH_TIMEOUT_SEC),
                                  -1);
        if (timeout == 0)
                timeout = FAKE_DEFAULT_WATCH_TIMEOUT_SEC;
        v = MHD_lookup_connection_value(r->connection, MHD_GET_ARGUMENT_KIND,
                                        "allowWatchBookmarks");
        if (v && parse_bool(v, &r->bookmarks) < 0)
                return api_answer(r, 400,
                                  status_newf(400, NULL, NULL,
                                              "allowWatchBookmarks: Invalid value: \"%s\"", v),
                                  -1);
        v = MHD_lookup_connection_value(r->connection, MHD_GET_ARGUMENT_KIND, "resourceVersion");
        if (v && *v && !streq(v, "0")) {
                if (parse_u64(v, &rv) < 0)
                        return api_answer(r, 400,
                                          status_newf(400, NULL, NULL,
                                                      "resourceVersion: Invalid value: \"%s\": "
                                                      "must be a decimal resourceVersion",
                                                      v),
                                          -1);
                have_rv = true;
        }

        r->watching = true;
        r->watch_deadline_usec = now_usec() + timeout * 1000000u;
        /* A resourceVersion newer than the server's is accepted: the real
         * server answers 200 and sends what comes after it (only a watch with
         * sendInitialEvents waits for it and may end "Too large resource
         * version"; a list or get says so at once, see too_large_rv). */
        r->watch_rv = have_rv ? rv : s->rv;
        if (r->has_fault && r->fault.watch_event != WATCH_EVENT_NONE)
                watch_queue_fault(s, r);
        if (!have_rv) {
                /* "" and "0": the current state as ADDED events, then changes */
                const char *key;
                json_t *pod;

                json_object_foreach(s->pods, key, pod) if (watch_wants(r, pod))
                        watch_queue(r, "ADDED", pod);
        } else if (rv < s->compacted_rv) {
                /* the real server answers 200, then one ERROR event, then ends */
                json_t *st = status_newf(410, "Expired", NULL,
                                         "too old resource version: %" PRIu64 " (%" PRIu64 ")", rv,
                                         s->compacted_rv);

                if (st)
                        watch_queue(r, "ERROR", st);
                json_decref(st);
                r->watch_ended = true;
        } else {
                for (size_t i = 0; i < s->n_history; i++) {
                        const HistoryEntry *h =
                                &s->history[(s->history_first + i) % FAKE_MAX_HISTORY];

                        if (h->rv > rv && watch_wants(r, h->object))
                                watch_queue(r, h->type, h->object);
                }
        }

        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, watch_read, r, NULL);
        if (!resp)
                return MHD_NO;
        if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE_JSON) !=
                    MHD_YES ||
            MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, private") !=
                    MHD_YES) {
                MHD_destroy_response(resp);
                return MHD_NO;
        }
        log_request(s, r, 200, false);
        ret = MHD_queue_response(r->connection, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        return ret;
}

static enum MHD_Result api_list(Server *s, Request *r, const Route *rt) {
        _cleanup_free_ char *error = NULL;
        Selector labels = {}, fields = {};
        enum MHD_Result answer;
        const char *v;
        int k;

        if (rt->bad_watch_flag)
                return api_answer(
                        r, 400,
                        status_new(400, NULL, "watch: Invalid value: must be a boolean", NULL), -1);
        v = MHD_lookup_connection_value(r->connection, MHD_GET_ARGUMENT_KIND, "labelSelector");
        if (v && (k = selector_parse(v, false, &labels, &error)) < 0)
                return k == -ENOMEM ? MHD_NO
                                    : api_answer(r, 400, status_new(400, NULL, error, NULL), -1);
        v = MHD_lookup_connection_value(r->connection, MHD_GET_ARGUMENT_KIND, "fieldSelector");
        if (v && (k = selector_parse(v, true, &fields, &error)) < 0) {
                selector_done(&labels);
                return k == -ENOMEM ? MHD_NO
                                    : api_answer(r, 400, status_new(400, NULL, error, NULL), -1);
        }
        if (rt->watch) {
                r->labels = labels;
                r->fields = fields;
                return api_watch(s, r);
        }
        if (too_large_rv(s, r, &answer)) {
                selector_done(&labels);
                selector_done(&fields);
                return answer;
        }
        {
                json_t *list = pod_list(s, &labels, &fields);

                selector_done(&labels);
                selector_done(&fields);
                return api_answer(r, 200, list, -1);
        }
}

/* Strips parameters ("; charset=utf-8") and compares case-insensitively. */
static bool media_type_is(const char *content_type, const char *want) {
        size_t n = strlen(want);

        if (!content_type || strncasecmp(content_type, want, n) != 0)
                return false;
        return content_type[n] == '\0' || content_type[n] == ';' || content_type[n] == ' ';
}

static enum MHD_Result api_patch_status(Server *s, Request *r, const Route *rt) {
        _cleanup_(json_decrefp) json_t *patch = NULL, *status = NULL;
        json_t *pod = json_object_get(s->pods, rt->name), *meta, *v;
        PatchError e = {};
        json_error_t err;
        bool strategic;
        int k;

        if (!pod)
                return api_answer(r, 404, not_found_status(rt), -1);
        if (media_type_is(r->content_type, "application/strategic-merge-patch+json"))
                strategic = true;
        else if (media_type_is(r->content_type, "application/merge-patch+json"))
                strategic = false;
        else
                /* application/json-patch+json and apply-patch+yaml are real
                 * patch types the agent does not use: not served here */
                return api_answer(r, 415,
                                  status_newf(415, NULL, NULL,
                                              "the body of the request was in an unknown format "
                                              "- accepted media types include: "
                                              "application/strategic-merge-patch+json, "
                                              "application/merge-patch+json (got \"%s\")",
                                              strempty(r->content_type)),
                                  -1);
        patch = json_loadb(strbuf_str(&r->body), r->body.len, 0, &err);
        if (!patch)
                return api_answer(
                        r, 400, status_newf(400, NULL, NULL, "error decoding patch: %s", err.text),
                        -1);
        if (!json_is_object(patch))
                return api_answer(r, 400,
                                  status_new(400, NULL,
                                             "error decoding patch: the patch is not a JSON object",
                                             NULL),
                                  -1);

        meta = json_object_get(patch, "metadata");
        if (meta && !json_is_object(meta) && !json_is_null(meta))
                return api_answer(r, 400,
                                  status_new(400, NULL, "metadata: must be an object", NULL), -1);
        v = json_object_get(meta, "name");
        if (json_is_string(v) && !streq(json_string_value(v), rt->name))
                return api_answer(r, 400,
                                  status_newf(400, NULL, NULL,
                                              "the name of the object (%s) does not match the "
                                              "name on the URL (%s)",
                                              json_string_value(v), rt->name),
                                  -1);
        v = json_object_get(meta, "uid");
        if (json_is_string(v) && json_string_length(v) > 0 &&
            !streq(json_string_value(v), strempty(pod_uid(pod))))
                /* storage.Preconditions.Check, turned into a Conflict by
                 * InterpretUpdateError: the wording kubelet logs show */
                return api_answer(r, 409,
                                  status_newf(409, NULL, details_new(rt->name, "pods"),
                                              "Operation cannot be fulfilled on pods \"%s\": "
                                              "StorageError: invalid object, Code: 4, Key: "
                                              "/registry/pods/%s/%s, ResourceVersion: 0, "
                                              "AdditionalErrorMsg: Precondition failed: UID in "
                                              "precondition: %s, UID in object meta: %s",
                                              rt->name, s->namespace, rt->name,
                                              json_string_value(v), strempty(pod_uid(pod))),
                                  -1);
        v = json_object_get(meta, "resourceVersion");
        if (json_is_string(v) && json_string_length(v) > 0 &&
            !streq(json_string_value(v),
                   strempty(json_str(json_object_get(pod, "metadata"), "resourceVersion"))))
                return api_answer(r, 409,
                                  status_newf(409, NULL, details_new(rt->name, "pods"),
                                              "Operation cannot be fulfilled on pods \"%s\": the "
                                              "object has been modified; please apply your "
                                              "changes to the latest version and try again",
                                              rt->name),
                                  -1);

        v = json_object_get(patch, "status");
        if (json_is_null(v))
                status = json_object(); /* PodStatus's zero value */
        else if (!v)
                status = json_deep_copy(json_object_get(pod, "status"));
        else if (!strategic)
                status = merge_patch_apply(json_object_get(pod, "status"), v);
        else if (!json_is_object(v)) {
                (void) patch_fail(&e, 422, "status", "status: Invalid value: must be an object");
                status = json_object();
        } else {
                status = json_deep_copy(json_object_get(pod, "status"));
                if (status && !json_is_object(status)) {
                        json_decref(status);
                        status = json_object();
                }
                k = status ? smp_apply_map(status, v, "status", &e) : -ENOMEM;
                if (k == -ENOMEM)
                        return MHD_NO;
                if (k > 0) /* "$patch": "delete" of the whole status */
                        json_object_clear(status);
        }
        if (!status)
                return MHD_NO;
        if (!e.code)
                (void) validate_status(status, &e);
        if (e.code) {
                unsigned code = e.code;
                json_t *st;

                if (code == 422)
                        st = status_newf(code, NULL,
                                         json_pack("{s:s, s:s, s:[{s:s, s:s?, s:s?}]}", "name",
                                                   rt->name, "kind", "Pod", "causes", "reason",
                                                   "FieldValueInvalid", "message", e.message,
                                                   "field", e.field),
                                         "Pod \"%s\" is invalid: %s", rt->name, strnull(e.message));
                else
                        st = status_new(code, NULL, e.message, NULL);
                patch_error_done(&e);
                return api_answer(r, code, st, -1);
        }
        if (json_equal(status, json_object_get(pod, "status")))
                /* etcd3's GuaranteedUpdate skips a write that changes no
                 * byte: same resourceVersion, no watch event */
                return api_answer(r, 200, json_incref(pod), -1);
        server_set_status(s, pod, TAKE_PTR(status));
        return api_answer(r, 200, json_incref(pod), -1);
}

static enum MHD_Result api_delete_pod(Server *s, Request *r, const Route *rt) {
        json_t *pod = json_object_get(s->pods, rt->name);
        _cleanup_(json_decrefp) json_t *opts = NULL, *gone = NULL;
        const char *uid;

        if (!pod)
                return api_answer(r, 404, not_found_status(rt), -1);
        if (r->body.len > 0) {
                json_error_t err;

                opts = json_loadb(r->body.data, r->body.len, 0, &err);
                if (!json_is_object(opts))
                        return api_answer(r, 400,
                                          status_newf(400, NULL, NULL,
                                                      "error decoding DeleteOptions: %s",
                                                      opts ? "not an object" : err.text),
                                          -1);
        }
        uid = json_str(json_object_get(opts, "preconditions"), "uid");
        if (uid && !streq(uid, strempty(pod_uid(pod))))
                return api_answer(r, 409,
                                  status_newf(409, NULL, details_new(rt->name, "pods"),
                                              "Operation cannot be fulfilled on Pod \"%s\": "
                                              "Precondition failed: UID in precondition: %s, "
                                              "UID in object meta: %s",
                                              rt->name, uid, strempty(pod_uid(pod))),
                                  -1);
        if (r->has_fault && r->fault.grace_seconds > 0)
                return api_answer(
                        r, 200,
                        json_incref(server_delete_gracefully(s, pod, r->fault.grace_seconds)), -1);
        if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
                /* terminating already: the real server keeps the running
                 * grace period (only a shorter one would change it) */
                return api_answer(r, 200, json_incref(pod), -1);
        gone = json_incref(pod);
        server_delete_pod(s, rt->name);
        set_rv(gone, s->rv);
        return api_answer(r, 200, TAKE_PTR(gone), -1);
}

/* What a core/v1 Event create is checked for (kubernetes
 * pkg/apis/core/validation/events.go, legacyValidateEvent; a core/v1 create
 * gets no other check of its fields): without eventTime, an Event as
 * kubectl and kubelet post it, whose involvedObject.namespace must be the
 * Event's (or empty, for an Event in "" or "default"); with eventTime, the
 * fields of the newer Events, reportingComponent (named "source" in the
 * message), reportingInstance, action and reason present and bounded, and
 * the message at most 1024 bytes. false with the first error in buf. */
static bool event_legacy_valid(const json_t *ev, const char *ns, char *buf, size_t size) {
        const json_t *inv = json_object_get(ev, "involvedObject");
        const char *ins = strempty(json_str(inv, "namespace")), *et = json_str(ev, "eventTime");
        static const struct {
                const char *key, *field;
                size_t max;
        } required[] = {
                {"reportingComponent", "source", 0},
                {"reportingInstance", "reportingInstance", 128},
                {"action", "action", 128},
                {"reason", "reason", 128},
        };
        const char *msg = json_str(ev, "message");

        if (!et || !*et) {
                if (*ins ? !streq(ins, ns) : *ns && !streq(ns, "default")) {
                        (void) snprintf(buf, size,
                                        "involvedObject.namespace: Invalid value: \"%s\": does "
                                        "not match event.namespace",
                                        ins);
                        return false;
                }
                return true;
        }
        if (!*ins && !streq(ns, "default") && !streq(ns, "kube-system")) {
                (void) snprintf(buf, size,
                                "involvedObject.namespace: Invalid value: \"\": does not match "
                                "event.namespace");
                return false;
        }
        for (size_t i = 0; i < ELEMENTSOF(required); i++) {
                const char *v = json_str(ev, required[i].key);

                if (!v || !*v) {
                        (void) snprintf(buf, size, "%s: Required value", required[i].field);
                        return false;
                }
                if (required[i].max && strlen(v) > required[i].max) {
                        (void) snprintf(buf, size,
                                        "%s: Invalid value: \"\": can have at most %zu characters",
                                        required[i].field, required[i].max);
                        return false;
                }
        }
        if (msg && strlen(msg) > 1024) {
                (void) snprintf(buf, size,
                                "message: Invalid value: \"\": can have at most 1024 characters");
                return false;
        }
        return true;
}

static enum MHD_Result api_create_event(Server *s, Request *r, const Route *rt) {
        _cleanup_(json_decrefp) json_t *ev = NULL;
        const char *name, *generate, *ns, *type, *kind, *reason, *version;
        const char *want_version = rt->events_api ? "events.k8s.io/v1" : "v1";
        json_t *meta, *involved;
        json_error_t err;
        char stamp[32], uid[37];

        ev = json_loadb(strbuf_str(&r->body), r->body.len, 0, &err);
        if (!ev)
                return api_answer(
                        r, 400,
                        status_newf(400, NULL, NULL, "error decoding the Event: %s", err.text), -1);
        if (!json_is_object(ev) || !json_is_object(meta = json_object_get(ev, "metadata")))
                return api_answer(
                        r, 400,
                        status_new(400, NULL, "the Event must be an object with metadata", NULL),
                        -1);
        kind = json_str(ev, "kind");
        version = json_str(ev, "apiVersion");
        /* The decoder reads the body as the kind it names, then converts it
         * to an Event; the handler then checks the group version
         * (apiserver endpoints/handlers/create.go, transformDecodeError). */
        if (kind && !streq(kind, "Event"))
                return api_answer(r, 400,
                                  status_newf(400, NULL, NULL,
                                              "%s in version \"%s\" cannot be handled as a Event: "
                                              "no kind \"%s\" is registered for the Event resource",
                                              kind, version ? version : want_version, kind),
                                  -1);
        if (version && !streq(version, want_version))
                return api_answer(r, 400,
                                  status_newf(400, NULL, NULL,
                                              "the API version in the data (%s) does not match "
                                              "the expected API version (%s)",
                                              version, want_version),
                                  -1);
        ns = json_str(meta, "namespace");
        if (ns && !streq(ns, rt->ns))
                return api_answer(r, 400,
                                  status_new(400, NULL,
                                             "the namespace of the provided object does not "
                                             "match the namespace sent on the request",
                                             NULL),
                                  -1);
        name = json_str(meta, "name");
        generate = json_str(meta, "generateName");
        if ((!name || !*name) && (!generate || !*generate))
                return api_answer(r, 422,
                                  status_new(422, NULL,
                                             "Event \"\" is invalid: metadata.name: Required "
                                             "value: name or generateName is required",
                                             details_new(NULL, "Event")),
                                  -1);
        if (!name || !*name) {
                static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
                char suffix[6];
                uint8_t b[5];

                random_bytes(b, sizeof b);
                for (size_t i = 0; i < 5; i++)
                        suffix[i] = alphabet[b[i] % (sizeof alphabet - 1)];
                suffix[5] = '\0';
                {
                        _cleanup_free_ char *n = NULL;

                        if (asprintf(&n, "%s%s", generate, suffix) < 0)
                                return MHD_NO;
                        json_object_set_new(meta, "name", json_string(n));
                }
                name = json_str(meta, "name");
        }
        {
                size_t i;
                json_t *old;

                json_array_foreach(s->events, i, old) if (
                        streq_ptr(json_str(json_object_get(old, "metadata"), "name"),
                                  name)) return api_answer(r, 409,
                                                           status_newf(
                                                                   409, "AlreadyExists",
                                                                   details_new(name, "events"),
                                                                   "events \"%s\" already exists",
                                                                   name),
                                                           -1);
        }
        involved = json_object_get(ev, rt->events_api ? "regarding" : "involvedObject");
        if (!rt->events_api) {
                char bad[256];

                if (!event_legacy_valid(ev, rt->ns, bad, sizeof bad))
                        return api_answer(r, 422,
                                          status_newf(422, NULL, details_new(name, "Event"),
                                                      "Event \"%s\" is invalid: %s", name, bad),
                                          -1);
        } else if (!json_is_object(involved) || !streq_ptr(json_str(involved, "namespace"), rt->ns))
                return api_answer(r, 422,
                                  status_newf(422, NULL, details_new(name, "Event"),
                                              "Event \"%s\" is invalid: %s.namespace: Invalid "
                                              "value: \"%s\": does not match event.namespace",
                                              name, rt->events_api ? "regarding" : "involvedObject",
                                              strempty(json_str(involved, "namespace"))),
                                  -1);
        type = json_str(ev, "type");
        if (rt->events_api && type && !streq(type, "Normal") && !streq(type, "Warning"))
                return api_answer(r, 422,
                                  status_newf(422, NULL, details_new(name, "Event"),
                                              "Event \"%s\" is invalid: type: Unsupported value: "
                                              "\"%s\": supported values: \"Normal\", \"Warning\"",
                                              name, type),
                                  -1);
        reason = json_str(ev, "reason");
        if (rt->events_api && reason && strlen(reason) > 128)
                return api_answer(r, 422,
                                  status_newf(422, NULL, details_new(name, "Event"),
                                              "Event \"%s\" is invalid: reason: Too long: may not "
                                              "be more than 128 bytes",
                                              name),
                                  -1);
        format_now(stamp);
        make_uid(uid);
        s->rv++;
        json_object_set_new(meta, "namespace", json_string(rt->ns));
        json_object_set_new(meta, "uid", json_string(uid));
        json_object_set_new(meta, "creationTimestamp", json_string(stamp));
        set_rv(ev, s->rv);
        if (!kind)
                json_object_set_new(ev, "kind", json_string("Event"));
        if (json_array_size(s->events) >= FAKE_MAX_EVENTS)
                json_array_remove(s->events, 0);
        json_array_append(s->events, ev);
        return api_answer(r, 201, TAKE_PTR(ev), -1);
}

static enum MHD_Result method_not_allowed(Request *r) {
        return api_answer(r, 405,
                          status_newf(405, NULL, NULL,
                                      "the server does not allow this method on the requested "
                                      "resource (%s %s)",
                                      r->method, r->path),
                          -1);
}

/* --arrivals: one line for a request just read in full (see the header). */
static void log_arrival(Server *s, const Request *r) {
        _cleanup_(strbuf_done) StrBuf b = STRBUF_INIT(FAKE_MAX_BODY_BYTES + 4096);
        const FaultAction *a = &r->fault;
        const char *sep = "";
        int k;

        if (s->arrivals_fd < 0)
                return;
        k = strbuf_printf(&b, "%" PRIu64 " %s %s%s%s ", now_usec(), r->method, r->path,
                          r->query ? "?" : "", strempty(r->query));
        if (k >= 0 && !r->has_fault)
                k = strbuf_puts(&b, "-");
        if (k >= 0 && r->has_fault && a->status) {
                k = strbuf_printf(&b, "status:%u", a->status);
                sep = ",";
        }
        if (k >= 0 && r->has_fault && a->retry_after_sec >= 0) {
                k = strbuf_printf(&b, "%sretry-after:%d", sep, a->retry_after_sec);
                sep = ",";
        }
        if (k >= 0 && r->has_fault && a->delay_ms > 0) {
                k = strbuf_printf(&b, "%sdelay:%u", sep, a->delay_ms);
                sep = ",";
        }
        if (k >= 0 && r->has_fault && a->drop_connection) {
                k = strbuf_printf(&b, "%sdrop", sep);
                sep = ",";
        }
        if (k >= 0 && r->has_fault && a->body) {
                k = strbuf_printf(&b, "%sbody", sep);
                sep = ",";
        }
        if (k >= 0 && r->has_fault && a->grace_seconds > 0) {
                k = strbuf_printf(&b, "%sgrace:%u", sep, a->grace_seconds);
                sep = ",";
        }
        if (k >= 0 && r->has_fault && a->watch_event != WATCH_EVENT_NONE)
                k = strbuf_printf(&b, "%swatch-event:%s", sep, watch_event_names[a->watch_event]);
        if (k >= 0)
                k = strbuf_putc(&b, ' ');
        for (size_t i = 0; k >= 0 && i < r->body.len; i++) {
                char ch = r->body.data[i];

                k = strbuf_putc(&b, ch == '\n' || ch == '\r' ? ' ' : ch);
        }
        if (k >= 0 && r->body.len == 0)
                k = strbuf_puts(&b, "-");
        if (k >= 0)
                k = strbuf_putc(&b, '\n');
        if (k < 0 || write(s->arrivals_fd, b.data, b.len) != (ssize_t) b.len)
                fprintf(stderr, "fake-apiserver: cannot write an --arrivals line for %s %s\n",
                        r->method, r->path);
}

/* ---------------------------------------------------------------------------
 * What kubectl needs besides the resources: discovery and content
 * negotiation. kubectl maps "pod/NAME" and "pods" to a resource through
 * discovery before anything else, and says what it accepts: `get` asks for
 * a Table ("application/json;as=Table;v=v1;g=meta.k8s.io,...,application/
 * json"), discovery for the aggregated form ("...;as=APIGroupDiscoveryList,
 * application/json"). This fake serves neither conversion: a request that
 * also accepts plain JSON gets it, as from a server that has no such
 * conversion (kubectl then reads the plain form), and one that accepts
 * nothing this fake writes gets the real server's 406. */

/* Whether one media range of an Accept header is plain JSON: "application/
 * json", "application/ *" or "* / *" without an "as=" conversion. */
static bool media_range_is_json(const char *range, size_t len) {
        const char *semi = memchr(range, ';', len);
        size_t type_len = semi ? (size_t) (semi - range) : len;

        while (type_len > 0 && range[type_len - 1] == ' ')
                type_len--;
        if (!((type_len == strlen("application/json") &&
               strncasecmp(range, "application/json", type_len) == 0) ||
              (type_len == 13 && strncasecmp(range, "application/*", type_len) == 0) ||
              (type_len == 3 && strncmp(range, "*/*", 3) == 0)))
                return false;
        /* a parameter "as=..." asks for a conversion (Table, discovery) */
        for (const char *p = semi; p && p < range + len;) {
                const char *next = memchr(p + 1, ';', (size_t) (range + len - p - 1));

                p++;
                while (p < range + len && *p == ' ')
                        p++;
                if ((size_t) (range + len - p) >= 3 && strncasecmp(p, "as=", 3) == 0)
                        return false;
                p = next;
        }
        return true;
}

/* No Accept header means anything; else some range must be plain JSON. */
static bool accepts_json(const Request *r) {
        const char *h =
                MHD_lookup_connection_value(r->connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);

        if (!h || *h == '\0')
                return true;
        for (const char *p = h; p;) {
                const char *comma = strchr(p, ',');
                size_t len = comma ? (size_t) (comma - p) : strlen(p);

                while (len > 0 && *p == ' ') {
                        p++;
                        len--;
                }
                if (media_range_is_json(p, len))
                        return true;
                p = comma ? comma + 1 : NULL;
        }
        return false;
}

static enum MHD_Result api_not_acceptable(Request *r) {
        /* apimachinery's NewNotAcceptableError, as runtime.NegotiateOutput... says it */
        return api_answer(r, 406,
                          status_new(406, NULL,
                                     "only the following media types are accepted: "
                                     "application/json, application/yaml, "
                                     "application/vnd.kubernetes.protobuf",
                                     NULL),
                          -1);
}

/* The discovery documents of the resources this fake serves, in the
 * unaggregated form (the real server's answer to a client that asks for
 * plain JSON). NULL for a path that is not discovery. */
static json_t *discovery_document(const char *path) {
        if (streq(path, "/api") || streq(path, "/api/"))
                return json_pack("{s:s, s:[s], s:[{s:s, s:s}]}", "kind", "APIVersions", "versions",
                                 "v1", "serverAddressByClientCIDRs", "clientCIDR", "0.0.0.0/0",
                                 "serverAddress", "127.0.0.1");
        if (streq(path, "/apis") || streq(path, "/apis/"))
                return json_pack("{s:s, s:s, s:[{s:s, s:[{s:s, s:s}], s:{s:s, s:s}}]}", "kind",
                                 "APIGroupList", "apiVersion", "v1", "groups", "name",
                                 "events.k8s.io", "versions", "groupVersion", "events.k8s.io/v1",
                                 "version", "v1", "preferredVersion", "groupVersion",
                                 "events.k8s.io/v1", "version", "v1");
        if (streq(path, "/api/v1"))
                return json_pack(
                        "{s:s, s:s, s:[{s:s, s:s, s:b, s:s, s:[s,s,s,s,s,s,s,s], s:[s], "
                        "s:[s]}, {s:s, s:s, s:b, s:s, s:[s,s,s]}, {s:s, s:s, s:b, s:s, "
                        "s:[s,s,s,s,s,s,s,s], s:[s]}, {s:s, s:s, s:b, s:s, "
                        "s:[s,s,s,s,s,s,s,s], s:[s]}]}",
                        "kind", "APIResourceList", "groupVersion", "v1", "resources", "name",
                        "pods", "singularName", "pod", "namespaced", true, "kind", "Pod", "verbs",
                        "create", "delete", "deletecollection", "get", "list", "patch", "update",
                        "watch", "shortNames", "po", "categories", "all", "name", "pods/status",
                        "singularName", "", "namespaced", true, "kind", "Pod", "verbs", "get",
                        "patch", "update", "name", "events", "singularName", "event", "namespaced",
                        true, "kind", "Event", "verbs", "create", "delete", "deletecollection",
                        "get", "list", "patch", "update", "watch", "shortNames", "ev", "name",
                        "configmaps", "singularName", "configmap", "namespaced", true, "kind",
                        "ConfigMap", "verbs", "create", "delete", "deletecollection", "get", "list",
                        "patch", "update", "watch", "shortNames", "cm");
        if (streq(path, "/apis/events.k8s.io/v1"))
                return json_pack("{s:s, s:s, s:s, s:[{s:s, s:s, s:b, s:s, "
                                 "s:[s,s,s,s,s,s,s,s], s:[s]}]}",
                                 "kind", "APIResourceList", "apiVersion", "v1", "groupVersion",
                                 "events.k8s.io/v1", "resources", "name", "events", "singularName",
                                 "event", "namespaced", true, "kind", "Event", "verbs", "create",
                                 "delete", "deletecollection", "get", "list", "patch", "update",
                                 "watch", "shortNames", "ev");
        return NULL;
}

/* 1 when r was a discovery request and is answered (or failed: *ret). */
static int api_discovery(Request *r, enum MHD_Result *ret) {
        json_t *doc = discovery_document(r->path);

        if (!doc)
                return 0;
        if (!streq(r->method, "GET")) {
                json_decref(doc);
                *ret = method_not_allowed(r);
        } else
                *ret = api_answer(r, 200, doc, -1);
        return 1;
}

/* GET /api/v1/namespaces/NS: kubectl asks it after a 404 on a namespaced
 * object, to tell "pods \"x\" not found" from a missing namespace. 1 when r
 * was such a request and is answered (*ret). */
static int api_namespace(Server *s, Request *r, enum MHD_Result *ret) {
        const char *name = startswith(r->path, "/api/v1/namespaces/");
        char uid[37];

        if (!name || *name == '\0' || strchr(name, '/'))
                return 0;
        if (!streq(r->method, "GET"))
                *ret = method_not_allowed(r);
        else if (!streq(name, s->namespace))
                *ret = api_answer(r, 404,
                                  status_newf(404, NULL, details_new(name, "namespaces"),
                                              "namespaces \"%s\" not found", name),
                                  -1);
        else {
                /* a stable uid: the namespace is as old as the server */
                snprintf(uid, sizeof uid, "00000000-0000-4000-8000-%012x",
                         (unsigned) (strlen(name) * 7919u));
                *ret = api_answer(r, 200,
                                  json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:[s]}, s:{s:s}}",
                                            "kind", "Namespace", "apiVersion", "v1", "metadata",
                                            "name", name, "uid", uid, "resourceVersion", "1",
                                            "spec", "finalizers", "kubernetes", "status", "phase",
                                            "Active"),
                                  -1);
        }
        return 1;
}

/* ConfigMaps, read-only: what `kubectl get configmap` reads. */
static int load_configmaps(Server *s, const char *path) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        _cleanup_free_ char *data = NULL;
        json_error_t err;
        json_t *items, *cm;
        size_t len, i;
        int r;

        r = read_file_at(AT_FDCWD, path, 0, FAKE_MAX_FILE_BYTES, &data, &len);
        if (r < 0) {
                fprintf(stderr, "fake-apiserver: --configmaps %s: %s\n", path, strerror(-r));
                return r;
        }
        root = json_loadb(data, len, 0, &err);
        items = json_is_array(root) ? root : json_object_get(root, "items");
        if (!json_is_array(items)) {
                fprintf(stderr, "fake-apiserver: --configmaps %s:%d: %s\n", path, err.line,
                        root ? "expected a ConfigMapList or a list of ConfigMaps" : err.text);
                return -EINVAL;
        }
        s->configmaps = json_object();
        if (!s->configmaps)
                return -ENOMEM;
        json_array_foreach(items, i, cm) {
                json_t *meta = json_object_get(cm, "metadata");
                const char *name = json_str(meta, "name"), *ns = json_str(meta, "namespace");

                if (!name || !selector_word_ok(name, false) || (ns && !streq(ns, s->namespace))) {
                        fprintf(stderr,
                                "fake-apiserver: --configmaps %s: item %zu: needs metadata.name, "
                                "in namespace \"%s\"\n",
                                path, i, s->namespace);
                        return -EINVAL;
                }
                json_object_set_new(meta, "namespace", json_string(s->namespace));
                if (!json_str(meta, "resourceVersion"))
                        set_rv(cm, ++s->rv);
                json_object_set_new(cm, "kind", json_string("ConfigMap"));
                json_object_set_new(cm, "apiVersion", json_string("v1"));
                json_object_set(s->configmaps, name, cm);
        }
        return 0;
}

/* GET .../configmaps[/NAME] of the served namespace. 1 when r was one and is
 * answered (*ret). */
static int api_configmap(Server *s, Request *r, const Route *rt, enum MHD_Result *ret) {
        const char *p = startswith(r->path, "/api/v1/namespaces/"), *name;
        size_t ns_len;

        if (!p)
                return 0;
        ns_len = strcspn(p, "/");
        name = startswith(p + ns_len, "/configmaps");
        if (!name || (*name != '\0' && (*name != '/' || name[1] == '\0' || strchr(name + 1, '/'))))
                return 0;
        if (!streq(r->method, "GET"))
                *ret = method_not_allowed(r);
        else if (!streq(rt->ns, s->namespace))
                *ret = api_answer(r, 403,
                                  status_newf(403, NULL, details_new(NULL, "configmaps"),
                                              "configmaps is forbidden: User \"%s\" cannot get "
                                              "resource \"configmaps\" in API group \"\" in the "
                                              "namespace \"%s\"",
                                              s->user, rt->ns),
                                  -1);
        else if (*name == '\0') {
                _cleanup_free_ char *rv = rv_string(s->rv);
                json_t *list = json_pack("{s:s, s:s, s:{s:s?}, s:[]}", "kind", "ConfigMapList",
                                         "apiVersion", "v1", "metadata", "resourceVersion", rv,
                                         "items"),
                       *cm;
                const char *key;

                json_object_foreach(s->configmaps, key, cm) {
                        json_t *item = json_deep_copy(cm);

                        json_object_del(item, "kind");
                        json_object_del(item, "apiVersion");
                        json_array_append_new(json_object_get(list, "items"), item);
                }
                *ret = api_answer(r, 200, list, -1);
        } else {
                json_t *cm = json_object_get(s->configmaps, name + 1);

                *ret = cm ? api_answer(r, 200, json_incref(cm), -1)
                          : api_answer(r, 404,
                                       status_newf(404, NULL, details_new(name + 1, "configmaps"),
                                                   "configmaps \"%s\" not found", name + 1),
                                       -1);
        }
        return 1;
}

/* ---------------------------------------------------------------------------
 * ValidatingAdmissionPolicies and their bindings: cluster-scoped, read-only
 * on the API port, created and deleted through the control port. */

#define ADMISSION_GROUP       "admissionregistration.k8s.io"
#define ADMISSION_API_VERSION ADMISSION_GROUP "/v1"

static const struct {
        const char *resource, *kind;
} admission_kinds[] = {
        {"validatingadmissionpolicies", "ValidatingAdmissionPolicy"},
        {"validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding"},
};

static ssize_t admission_kind_of(const char *resource, size_t len) {
        for (size_t i = 0; i < ELEMENTSOF(admission_kinds); i++)
                if (strlen(admission_kinds[i].resource) == len &&
                    strncmp(admission_kinds[i].resource, resource, len) == 0)
                        return (ssize_t) i;
        return -1;
}

/* What the real server's validation refuses in the fields a client reads;
 * NULL when obj is acceptable. */
static const char *admission_invalid(size_t k, const json_t *obj) {
        const json_t *spec = json_object_get(obj, "spec"), *actions, *a;
        const char *name = json_str(json_object_get(obj, "metadata"), "name");
        size_t i, j;

        if (!name || *name == '\0' || strlen(name) > FAKE_MAX_NAME_BYTES ||
            !selector_word_ok(name, false))
                return "metadata.name: missing or not a valid name";
        if (json_object_get(json_object_get(obj, "metadata"), "namespace"))
                return "metadata.namespace: the object is cluster-scoped";
        if (json_str(obj, "apiVersion") &&
            !streq(json_str(obj, "apiVersion"), ADMISSION_API_VERSION))
                return "apiVersion: must be " ADMISSION_API_VERSION;
        if (json_str(obj, "kind") && !streq(json_str(obj, "kind"), admission_kinds[k].kind))
                return "kind: not the kind of this resource";
        if (!json_is_object(spec))
                return "spec: Required value";
        if (k == 0)
                return json_is_array(json_object_get(spec, "validations")) ||
                                       json_is_array(json_object_get(spec, "auditAnnotations"))
                               ? NULL
                               : "spec.validations: Required value";
        if (!json_str(spec, "policyName") || *json_str(spec, "policyName") == '\0')
                return "spec.policyName: Required value";
        actions = json_object_get(spec, "validationActions");
        if (!json_is_array(actions) || json_array_size(actions) == 0)
                return "spec.validationActions: Required value";
        json_array_foreach(actions, i, a) {
                const char *v = json_string_value(a);

                if (!v || (!streq(v, "Deny") && !streq(v, "Warn") && !streq(v, "Audit")))
                        return "spec.validationActions: Unsupported value: supported values: "
                               "\"Audit\", \"Deny\", \"Warn\"";
                for (j = 0; j < i; j++)
                        if (json_equal(json_array_get(actions, j), a))
                                return "spec.validationActions: Duplicate value";
        }
        return NULL;
}

static json_t *admission_list(Server *s, size_t k, bool api) {
        _cleanup_free_ char *rv = rv_string(s->rv), *kind = NULL;
        json_t *list, *obj;
        const char *key;

        if (asprintf(&kind, "%sList", admission_kinds[k].kind) < 0)
                return NULL;
        list = json_pack("{s:s, s:s, s:{s:s?}, s:[]}", "kind", kind, "apiVersion",
                         ADMISSION_API_VERSION, "metadata", "resourceVersion", rv, "items");
        json_object_foreach(s->admission[k], key, obj) {
                json_t *item = json_deep_copy(obj);

                if (api) {
                        json_object_del(item, "kind");
                        json_object_del(item, "apiVersion");
                }
                json_array_append_new(json_object_get(list, "items"), item);
        }
        return list;
}

/* GET /apis/admissionregistration.k8s.io/v1/RESOURCE[/NAME]. 1 when r was
 * one and is answered (*ret). */
static int api_admission(Server *s, Request *r, enum MHD_Result *ret) {
        const char *p = startswith(r->path, "/apis/" ADMISSION_API_VERSION "/"), *name;
        size_t len;
        ssize_t k;

        if (!p)
                return 0;
        len = strcspn(p, "/");
        k = admission_kind_of(p, len);
        name = p + len;
        if (k < 0 || (*name != '\0' && (*name != '/' || name[1] == '\0' || strchr(name + 1, '/'))))
                return 0;
        if (!streq(r->method, "GET"))
                *ret = method_not_allowed(r);
        else if (*name == '\0')
                *ret = api_answer(r, 200, admission_list(s, (size_t) k, true), -1);
        else {
                json_t *obj = json_object_get(s->admission[k], name + 1);

                *ret = obj ? api_answer(r, 200, json_incref(obj), -1)
                           : api_answer(r, 404,
                                        status_newf(404, NULL,
                                                    json_pack("{s:s, s:s, s:s}", "name", name + 1,
                                                              "group", ADMISSION_GROUP, "kind",
                                                              admission_kinds[k].resource),
                                                    "%s." ADMISSION_GROUP " \"%s\" not found",
                                                    admission_kinds[k].resource, name + 1),
                                        -1);
        }
        return 1;
}

/* ---------------------------------------------------------------------------
 * Leases (coordination.k8s.io/v1) in the served namespace: get, list,
 * create, update (PUT), as strictly as the real server: create of an
 * existing name is 409 AlreadyExists, an update needs the resourceVersion
 * read and gets 409 Conflict when it is stale, a missing Lease is 404, and
 * every write takes a new resourceVersion. */

#define LEASE_GROUP "coordination.k8s.io"

/* An RFC 1123 subdomain, as object names are. */
static bool is_dns_subdomain(const char *n) {
        size_t len = strlen(n);

        if (len == 0 || len > 253 || !is_alnum(n[0]) || !is_alnum(n[len - 1]))
                return false;
        for (size_t i = 0; i < len; i++)
                if (!(is_alnum(n[i]) && !(n[i] >= 'A' && n[i] <= 'Z')) && n[i] != '-' &&
                    n[i] != '.')
                        return false;
        return true;
}

static json_t *lease_details(const char *name) {
        return json_pack("{s:s?, s:s, s:s}", "name", name && *name ? name : NULL, "group",
                         LEASE_GROUP, "kind", "leases");
}

static json_t *lease_not_found(const char *name) {
        return status_newf(404, NULL, lease_details(name),
                           "leases." LEASE_GROUP " \"%s\" not found", name);
}

static json_t *lease_invalid(const char *name, const char *fmt, const char *field) {
        return status_newf(422, NULL, lease_details(name),
                           "Lease." LEASE_GROUP " \"%s\" is invalid: %s: %s", name, field, fmt);
}

/* The body of a create or update, checked as the real server does before
 * storage: a Lease of this group, named, in the request's namespace, with a
 * spec it validates (ValidateLeaseSpec). NULL with *ret answered. */
static json_t *lease_body(Server *s, Request *r, const char *url_name, enum MHD_Result *ret) {
        _cleanup_(json_decrefp) json_t *o = NULL;
        json_t *meta, *spec, *d;
        const char *kind, *version, *name, *ns;
        json_error_t err;

        o = json_loadb(r->body.data, r->body.len, 0, &err);
        if (!json_is_object(o)) {
                *ret = api_answer(r, 400,
                                  status_newf(400, NULL, NULL, "error decoding the body: %s",
                                              o ? "not an object" : err.text),
                                  -1);
                return NULL;
        }
        kind = json_str(o, "kind");
        version = json_str(o, "apiVersion");
        if ((kind && !streq(kind, "Lease")) || (version && !streq(version, LEASE_GROUP "/v1"))) {
                *ret = api_answer(r, 400,
                                  status_newf(400, NULL, NULL,
                                              "the object provided is unrecognized (must be of "
                                              "type Lease): %s, %s",
                                              strnull(kind), strnull(version)),
                                  -1);
                return NULL;
        }
        meta = json_object_get(o, "metadata");
        name = json_str(meta, "name");
        ns = json_str(meta, "namespace");
        if (ns && !streq(ns, s->namespace)) {
                *ret = api_answer(r, 400,
                                  status_new(400, NULL,
                                             "the namespace of the provided object does not "
                                             "match the namespace sent on the request",
                                             NULL),
                                  -1);
                return NULL;
        }
        if (url_name && (!name || !streq(name, url_name))) {
                *ret = api_answer(r, 400,
                                  status_newf(400, NULL, NULL,
                                              "the name of the object (%s) does not match the "
                                              "name on the URL (%s)",
                                              strnull(name), url_name),
                                  -1);
                return NULL;
        }
        if (!name || !*name) {
                *ret = api_answer(r, 422,
                                  lease_invalid("", "name or generateName is required",
                                                "metadata.name: Required value"),
                                  -1);
                return NULL;
        }
        if (!is_dns_subdomain(name)) {
                *ret = api_answer(r, 422,
                                  lease_invalid(name, "a lowercase RFC 1123 subdomain",
                                                "metadata.name: Invalid value"),
                                  -1);
                return NULL;
        }
        spec = json_object_get(o, "spec");
        if (spec && !json_is_object(spec)) {
                *ret = api_answer(r, 400, status_new(400, NULL, "spec: not an object", NULL), -1);
                return NULL;
        }
        d = json_object_get(spec, "leaseDurationSeconds");
        if (d && (!json_is_integer(d) || json_integer_value(d) <= 0)) {
                *ret = api_answer(r, 422,
                                  lease_invalid(name, "must be greater than 0",
                                                "spec.leaseDurationSeconds: Invalid value"),
                                  -1);
                return NULL;
        }
        if ((json_object_get(spec, "acquireTime") &&
             !is_rfc3339(strempty(json_str(spec, "acquireTime")))) ||
            (json_object_get(spec, "renewTime") &&
             !is_rfc3339(strempty(json_str(spec, "renewTime"))))) {
                *ret = api_answer(r, 400,
                                  status_new(400, NULL,
                                             "spec.acquireTime or spec.renewTime: not a MicroTime",
                                             NULL),
                                  -1);
                return NULL;
        }
        json_object_set_new(o, "kind", json_string("Lease"));
        json_object_set_new(o, "apiVersion", json_string(LEASE_GROUP "/v1"));
        json_object_set_new(meta, "namespace", json_string(s->namespace));
        return TAKE_PTR(o);
}

/* .../leases[/NAME] under /apis/coordination.k8s.io/v1/namespaces/NS/. 1
 * when r was one and is answered (*ret). */
static int api_lease(Server *s, Request *r, enum MHD_Result *ret) {
        const char *p = startswith(r->path, "/apis/" LEASE_GROUP "/v1/namespaces/"), *name;
        char ns[FAKE_MAX_NAME_BYTES + 1];
        size_t ns_len;

        if (!p)
                return 0;
        ns_len = strcspn(p, "/");
        name = startswith(p + ns_len, "/leases");
        if (ns_len == 0 || ns_len >= sizeof ns || !name ||
            (*name != '\0' && (*name != '/' || name[1] == '\0' || strchr(name + 1, '/'))))
                return 0;
        memcpy(ns, p, ns_len);
        ns[ns_len] = '\0';
        if (*name == '/')
                name++;
        if (!streq(ns, s->namespace)) {
                /* as for pods: without --rbac the token may act in its own
                 * namespace only; with it, another namespace does not exist */
                if (!s->rbac)
                        *ret = api_answer(r, 403, forbidden_status(s, r), -1);
                else
                        *ret = api_answer(r, 404,
                                          status_newf(404, NULL, details_new(ns, "namespaces"),
                                                      "namespaces \"%s\" not found", ns),
                                          -1);
                return 1;
        }
        if (*name == '\0') {
                if (streq(r->method, "GET")) {
                        _cleanup_free_ char *rv = rv_string(s->rv);
                        json_t *list = json_pack("{s:s, s:s, s:{s:s?}, s:[]}", "kind", "LeaseList",
                                                 "apiVersion", LEASE_GROUP "/v1", "metadata",
                                                 "resourceVersion", rv, "items"),
                               *l;
                        const char *key;

                        json_object_foreach(s->leases, key, l)
                                json_array_append(json_object_get(list, "items"), l);
                        *ret = api_answer(r, 200, list, -1);
                } else if (streq(r->method, "POST")) {
                        _cleanup_(json_decrefp) json_t *o = lease_body(s, r, NULL, ret);
                        json_t *meta;
                        const char *n;
                        char uid[37], now[32];

                        if (!o)
                                return 1;
                        meta = json_object_get(o, "metadata");
                        n = json_str(meta, "name");
                        if (json_object_get(s->leases, n)) {
                                *ret = api_answer(
                                        r, 409,
                                        status_newf(409, "AlreadyExists", lease_details(n),
                                                    "leases." LEASE_GROUP " \"%s\" already exists",
                                                    n),
                                        -1);
                                return 1;
                        }
                        if (json_str(meta, "resourceVersion") &&
                            !streq(json_str(meta, "resourceVersion"), "")) {
                                /* the storage layer's refusal, a 500 on
                                 * the real server too */
                                *ret = api_answer(r, 500,
                                                  status_new(500, NULL,
                                                             "resourceVersion should not be set "
                                                             "on objects to be created",
                                                             NULL),
                                                  -1);
                                return 1;
                        }
                        make_uid(uid);
                        format_now(now);
                        json_object_set_new(meta, "uid", json_string(uid));
                        json_object_set_new(meta, "creationTimestamp", json_string(now));
                        set_rv(o, ++s->rv);
                        json_object_set(s->leases, n, o);
                        *ret = api_answer(r, 201, json_incref(o), -1);
                } else
                        *ret = method_not_allowed(r);
                return 1;
        }
        if (streq(r->method, "GET")) {
                json_t *l = json_object_get(s->leases, name);

                *ret = l ? api_answer(r, 200, json_incref(l), -1)
                         : api_answer(r, 404, lease_not_found(name), -1);
        } else if (streq(r->method, "PUT")) {
                _cleanup_(json_decrefp) json_t *o = lease_body(s, r, name, ret);
                json_t *old, *meta, *old_meta;
                const char *rv;

                if (!o)
                        return 1;
                old = json_object_get(s->leases, name);
                if (!old) {
                        /* Leases are not created by an update
                         * (AllowCreateOnUpdate is false for them) */
                        *ret = api_answer(r, 404, lease_not_found(name), -1);
                        return 1;
                }
                meta = json_object_get(o, "metadata");
                old_meta = json_object_get(old, "metadata");
                rv = json_str(meta, "resourceVersion");
                if (!rv || !*rv) {
                        *ret = api_answer(r, 422,
                                          lease_invalid(name, "must be specified for an update",
                                                        "metadata.resourceVersion: Invalid "
                                                        "value: 0x0"),
                                          -1);
                        return 1;
                }
                if (!streq(rv, strempty(json_str(old_meta, "resourceVersion")))) {
                        *ret = api_answer(r, 409,
                                          status_newf(409, "Conflict", lease_details(name),
                                                      "Operation cannot be fulfilled on "
                                                      "leases." LEASE_GROUP
                                                      " \"%s\": the object has been modified; "
                                                      "please apply your changes to the latest "
                                                      "version and try again",
                                                      name),
                                          -1);
                        return 1;
                }
                /* what the client cannot change */
                json_object_set(meta, "uid", json_object_get(old_meta, "uid"));
                json_object_set(meta, "creationTimestamp",
                                json_object_get(old_meta, "creationTimestamp"));
                set_rv(o, ++s->rv);
                json_object_set(s->leases, name, o);
                *ret = api_answer(r, 200, json_incref(o), -1);
        } else
                *ret = method_not_allowed(r);
        return 1;
}

/* The last call for a complete request (and again after a delay). */
static enum MHD_Result api_process(Server *s, Request *r) {
        enum MHD_Result ret;
        Route rt;

        route_parse(r, &rt);
        if (!r->fault_checked) {
                r->fault_checked = true;
                take_fault(s, r, &rt);
                log_arrival(s, r);
        }
        if (r->has_fault && r->fault.delay_ms > 0 && !r->delay_done) {
                if (!r->delay_pending) {
                        /* answer later without holding the loop: the
                         * connection is parked, the loop's timer resumes it */
                        r->delay_pending = true;
                        r->resume_usec = now_usec() + (uint64_t) r->fault.delay_ms * 1000u;
                        MHD_suspend_connection(r->connection);
                        r->suspended = true;
                }
                return MHD_YES;
        }
        if (s->stopping)
                return MHD_NO;
        if (r->has_fault && r->fault.drop_connection) {
                log_request(s, r, 0, true);
                return MHD_NO; /* libmicrohttpd closes the connection, no answer */
        }
        if (r->has_fault && r->fault.status && r->fault.body)
                return api_answer_raw(r, r->fault.status, r->fault.body, r->fault.content_type,
                                      r->fault.retry_after_sec);
        if (r->has_fault && r->fault.status)
                return api_answer(r, r->fault.status, fault_status(s, r, &rt),
                                  r->fault.retry_after_sec);
        if (r->too_large)
                return api_answer(r, 413,
                                  status_newf(413, NULL, NULL,
                                              "Request entity too large: limit is %u",
                                              FAKE_MAX_BODY_BYTES),
                                  -1);
        if (!authorized(s, r))
                return api_answer(r, 401, status_new(401, NULL, "Unauthorized", NULL), -1);
        if (rbac_refuses(s, r, &ret))
                return ret;
        if (!accepts_json(r))
                return api_not_acceptable(r);
        if (api_discovery(r, &ret) || api_namespace(s, r, &ret) || api_configmap(s, r, &rt, &ret) ||
            api_admission(s, r, &ret) || api_lease(s, r, &ret))
                return ret;
        if (rt.endpoint == EP_NONE)
                return api_answer(r, 404, not_found_status(&rt), -1);
        if (!streq(rt.ns, s->namespace)) {
                /* Without --rbac, the agent's Role: in its own namespace
                 * only. With it, the rules allowed this request, and a
                 * namespace this fake does not serve does not exist. */
                if (!s->rbac)
                        return api_answer(r, 403, forbidden_status(s, r), -1);
                return api_answer(r, 404,
                                  status_newf(404, NULL, details_new(rt.ns, "namespaces"),
                                              "namespaces \"%s\" not found", rt.ns),
                                  -1);
        }

        switch (rt.endpoint) {
        case EP_POD:
        case EP_POD_STATUS:
                if (streq(r->method, "GET")) {
                        json_t *pod = json_object_get(s->pods, rt.name);

                        if (too_large_rv(s, r, &ret))
                                return ret;
                        return pod ? api_answer(r, 200, json_incref(pod), -1)
                                   : api_answer(r, 404, not_found_status(&rt), -1);
                }
                if (rt.endpoint == EP_POD_STATUS && streq(r->method, "PATCH"))
                        return api_patch_status(s, r, &rt);
                if (rt.endpoint == EP_POD && streq(r->method, "DELETE"))
                        return api_delete_pod(s, r, &rt);
                if (!s->rbac && (streq(r->method, "PATCH") || streq(r->method, "PUT")))
                        /* without --rbac, the agent's Role: it may patch
                         * pods/status only (docs/DESIGN.md §6) */
                        return api_answer(r, 403, forbidden_status(s, r), -1);
                return method_not_allowed(r);
        case EP_PODS:
                if (streq(r->method, "GET"))
                        return api_list(s, r, &rt);
                return method_not_allowed(r);
        case EP_EVENTS:
                if (streq(r->method, "POST"))
                        return api_create_event(s, r, &rt);
                return method_not_allowed(r);
        case EP_NONE:
                break;
        }
        return api_answer(r, 404, not_found_status(&rt), -1);
}

/* ---------------------------------------------------------------------------
 * libmicrohttpd callbacks, both ports */

static enum MHD_Result on_control_process(Server *s, Request *r);

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls, Port port) {
        Server *s = cls;
        Request *r = *con_cls;

        if (!r) {
                const char *cl;
                uint64_t n;

                r = request_new(s, port, c, method, url);
                if (!r)
                        return MHD_NO;
                *con_cls = r;
                cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
                if (cl && parse_u64(cl, &n) >= 0 && n > FAKE_MAX_BODY_BYTES) {
                        /* refused before the body is read: libmicrohttpd then
                         * closes the connection instead of reading it */
                        r->too_large = true;
                        r->answered_early = true;
                        if (port == PORT_CONTROL)
                                return queue_json(
                                        c, 413, json_pack("{s:s}", "error", "body too large"), -1);
                        return api_answer(r, 413,
                                          status_newf(413, NULL, NULL,
                                                      "Request entity too large: limit is %u",
                                                      FAKE_MAX_BODY_BYTES),
                                          -1);
                }
                return MHD_YES;
        }
        if (*upload_data_size > 0) {
                /* a chunked body past the cap is read and dropped, then 413 */
                if (!r->too_large && strbuf_append(&r->body, upload_data, *upload_data_size) < 0)
                        r->too_large = true;
                *upload_data_size = 0;
                return MHD_YES;
        }
        if (r->answered_early)
                return MHD_YES; /* 413 before the body */
        return port == PORT_API ? api_process(s, r) : on_control_process(s, r);
}

static enum MHD_Result on_api(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls) {
        return on_request(cls, c, url, method, version, upload_data, upload_data_size, con_cls,
                          PORT_API);
}

static enum MHD_Result on_control(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
        return on_request(cls, c, url, method, version, upload_data, upload_data_size, con_cls,
                          PORT_CONTROL);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
        Request *r = *con_cls;

        *con_cls = NULL;
        if (r && r->port == PORT_API && !r->logged)
                log_request(r->server, r, 0, true); /* the client left first */
        request_free(r);
}

/* ---------------------------------------------------------------------------
 * The control port (plain HTTP, loopback): the test's hand on the server.
 *
 *   GET    /state                      resourceVersion, compaction point, counts
 *   GET    /pods, /pods/NAME           the pods as stored now
 *   POST   /pods                       add a pod, or replace the one with its
 *                                      name (watches: DELETED, then ADDED);
 *                                      a missing uid is generated
 *   DELETE /pods/NAME                  delete (watches: DELETED)
 *   POST   /pods/NAME/rewrite-conditions
 *                                      body: [conditions] or {"conditions":[..]};
 *                                      replaces the whole list, as Slinky's
 *                                      operator does from its cache (MODIFIED)
 *   POST   /pods/NAME/container-statuses
 *                                      body: {"containerStatuses":[..],
 *                                      "initContainerStatuses":[..]}, either or
 *                                      both: replaces those lists, as kubelet
 *                                      does when a container (re)starts
 *                                      (MODIFIED); names must be the spec's
 *   POST   /validatingadmissionpolicies, /validatingadmissionpolicybindings
 *                                      body: the object; stored for the API
 *                                      port's GETs, with a new uid and
 *                                      resourceVersion, and creationTimestamp
 *                                      now unless the body gives one (an
 *                                      older object); a binding's
 *                                      policyName and validationActions are
 *                                      validated as the real server does
 *   GET    /validatingadmissionpolicies, /validatingadmissionpolicybindings
 *   DELETE /validatingadmissionpolicies/NAME, /validatingadmissionpolicybindings/NAME
 *   POST   /faults                     body: one fault or a list, appended:
 *                                      {"match":{"method","path","path_prefix",
 *                                      "watch"},"status","retry_after","count",
 *                                      "delay_ms","drop_connection","reason",
 *                                      "message","body","content_type",
 *                                      "grace_seconds","watch_event",
 *                                      "watch_event_bytes"}; the next count
 *                                      matching API requests get it. Unknown
 *                                      keys are refused. status (400-599)
 *                                      answers a Status with the real server's
 *                                      wording (reason, message override it),
 *                                      or with "body" that body as it is, with
 *                                      "content_type" (default text/plain), as
 *                                      a proxy in front of the server answers
 *                                      (a 502 text/html page); grace_seconds
 *                                      makes a DELETE of a pod graceful (see
 *                                      above); watch_event sends one malformed
 *                                      line first in a watch stream, then the
 *                                      stream goes on: "not-json", "unknown-type"
 *                                      (type SURPRISE with a pod), "oversized"
 *                                      (a MODIFIED pod padded by an annotation
 *                                      to watch_event_bytes, default 5 MiB);
 *                                      grace_seconds and watch_event go
 *                                      without status and drop_connection
 *   GET    /faults, DELETE /faults     pending faults; clear them
 *   GET    /requests                   the API request log, oldest first:
 *                                      [{seq,time,method,path,query,
 *                                      content_type,status,watch,fault,dropped,
 *                                      duration_ms,body}]: time in epoch
 *                                      seconds at arrival; seq runs on across
 *                                      resets; status 0 and dropped when no
 *                                      answer was sent (an injected drop, or
 *                                      the client left first); body when JSON
 *                                      of at most FAKE_MAX_LOGGED_BODY_BYTES
 *   POST   /reset-requests             empty it
 *   GET    /events, DELETE /events     Events created through the API
 *   GET    /leases                     the Leases, as a JSON list
 *   POST   /compact                    forget the history: a watch from any
 *                                      older resourceVersion gets 410
 *   POST   /bookmark                   a BOOKMARK to every watch that allows them
 *   POST   /close-watches              end every watch stream (as an API server
 *                                      restart or a load balancer would)
 *   POST   /break-watches              close every watch's connection in the
 *                                      middle of its stream, without the last
 *                                      chunk (a network failure)
 */

static enum MHD_Result control_error(Request *r, unsigned code, const char *fmt, ...)
        _printf_(3, 4);
static enum MHD_Result control_error(Request *r, unsigned code, const char *fmt, ...) {
        _cleanup_free_ char *m = NULL;
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vasprintf(&m, fmt, ap);
        va_end(ap);
        if (n < 0)
                return MHD_NO;
        return queue_json(r->connection, code, json_pack("{s:s}", "error", m), -1);
}

static json_t *control_body(Request *r, char **ret_error) {
        json_error_t err;
        json_t *j = json_loadb(strbuf_str(&r->body), r->body.len, JSON_DECODE_ANY, &err);

        if (!j && asprintf(ret_error, "invalid JSON: %s (line %d)", err.text, err.line) < 0)
                *ret_error = NULL;
        return j;
}

static json_t *faults_json(Server *s) {
        json_t *a = json_array();

        for (size_t i = 0; i < s->n_faults; i++)
                json_array_append_new(a, fault_to_json(&s->faults[i]));
        return json_pack("{s:o}", "faults", a);
}

static enum MHD_Result control_post_faults(Server *s, Request *r) {
        _cleanup_free_ char *error = NULL;
        _cleanup_(json_decrefp) json_t *body = control_body(r, &error);
        Fault parsed[FAKE_MAX_FAULTS];
        size_t n = 0, i;
        json_t *v;
        int k;

        if (!body)
                return control_error(r, 400, "%s", strnull(error));
        if (json_is_object(body) && json_is_array(json_object_get(body, "faults"))) {
                json_t *list = json_incref(json_object_get(body, "faults")); /* {"faults":[..]} */

                json_decref(body);
                body = list;
        }
        if (json_is_object(body)) {
                json_t *a = json_array();

                json_array_append_new(a, TAKE_PTR(body));
                body = a;
        }
        if (!json_is_array(body))
                return control_error(r, 400, "expected a fault object or a list of them");
        if (json_array_size(body) + s->n_faults > FAKE_MAX_FAULTS)
                return control_error(r, 400, "more than %u pending faults", FAKE_MAX_FAULTS);
        json_array_foreach(body, i, v) {
                k = fault_parse(v, &parsed[n], &error);
                if (k < 0) {
                        while (n > 0)
                                fault_done(&parsed[--n]);
                        return k == -ENOMEM
                                       ? MHD_NO
                                       : control_error(r, 400, "fault %zu: %s", i, strnull(error));
                }
                n++;
        }
        memcpy(&s->faults[s->n_faults], parsed, n * sizeof parsed[0]);
        s->n_faults += n;
        return queue_json(r->connection, 200, faults_json(s), -1);
}

static enum MHD_Result control_rewrite(Server *s, Request *r, const char *name) {
        _cleanup_free_ char *error = NULL;
        _cleanup_(json_decrefp) json_t *body = control_body(r, &error);
        json_t *pod = json_object_get(s->pods, name), *list, *status;
        PatchError e = {};

        if (!pod)
                return control_error(r, 404, "no pod \"%s\"", name);
        if (!body)
                return control_error(r, 400, "%s", strnull(error));
        list = json_is_array(body) ? body : json_object_get(body, "conditions");
        if (!json_is_array(list))
                return control_error(r, 400, "expected [conditions] or {\"conditions\": [..]}");
        status = json_deep_copy(json_object_get(pod, "status"));
        if (!json_is_object(status)) {
                json_decref(status);
                status = json_object();
        }
        json_object_set(status, "conditions", list);
        if (validate_status(status, &e) < 0) {
                enum MHD_Result ret = control_error(r, 400, "%s", strnull(e.message));

                patch_error_done(&e);
                json_decref(status);
                return ret;
        }
        /* an operator's write always lands, even when it changes nothing */
        server_set_status(s, pod, status);
        return queue_json(r->connection, 200, json_incref(pod), -1);
}

/* What kubelet checks in the container statuses it writes: a name of the
 * spec's matching list (containers, or initContainers), one state at most,
 * and a start time in RFC 3339 when running. */
static const char *check_container_statuses(const json_t *pod, const char *spec_field,
                                            const json_t *list) {
        const json_t *spec = json_object_get(json_object_get(pod, "spec"), spec_field), *x;
        size_t i;

        if (!json_is_array(list))
                return "must be a list";
        json_array_foreach(list, i, x) {
                const char *name = json_string_value(json_object_get(x, "name"));
                const json_t *state = json_object_get(x, "state"), *running, *c;
                bool known = false;
                size_t k;

                if (!json_is_object(x) || !name)
                        return "each entry must be an object with a name";
                json_array_foreach(spec, k, c) {
                        const char *n = json_string_value(json_object_get(c, "name"));
                        known |= n && streq(n, name);
                }
                if (!known)
                        return "names a container the pod spec does not have";
                if (state && (!json_is_object(state) || json_object_size(state) > 1))
                        return "state must be an object with at most one of waiting, running, "
                               "terminated";
                running = json_object_get(state, "running");
                if (running && json_object_get(running, "startedAt") &&
                    !is_rfc3339(json_string_value(json_object_get(running, "startedAt"))))
                        return "state.running.startedAt must be an RFC 3339 time";
        }
        return NULL;
}

/* POST /pods/NAME/container-statuses: kubelet's status update of the
 * containers (a restart: a new containerID and startedAt). */
static enum MHD_Result control_container_statuses(Server *s, Request *r, const char *name) {
        static const struct {
                const char *field, *spec;
        } lists[] = {
                {"containerStatuses", "containers"},
                {"initContainerStatuses", "initContainers"},
        };
        _cleanup_free_ char *error = NULL;
        _cleanup_(json_decrefp) json_t *body = control_body(r, &error);
        json_t *pod = json_object_get(s->pods, name), *status;
        bool any = false;

        if (!pod)
                return control_error(r, 404, "no pod \"%s\"", name);
        if (!json_is_object(body))
                return control_error(r, 400, "%s",
                                     error ? error
                                           : "expected {\"containerStatuses\": [..], "
                                             "\"initContainerStatuses\": [..]}");
        status = json_deep_copy(json_object_get(pod, "status"));
        if (!json_is_object(status)) {
                json_decref(status);
                status = json_object();
        }
        for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
                json_t *list = json_object_get(body, lists[i].field);
                const char *why;

                if (!list)
                        continue;
                why = check_container_statuses(pod, lists[i].spec, list);
                if (why) {
                        json_decref(status);
                        return control_error(r, 400, "%s: %s", lists[i].field, why);
                }
                json_object_set(status, lists[i].field, list);
                any = true;
        }
        if (!any ||
            json_object_size(body) != (size_t) !!json_object_get(body, lists[0].field) +
                                              (size_t) !!json_object_get(body, lists[1].field)) {
                json_decref(status);
                return control_error(r, 400,
                                     "only containerStatuses and initContainerStatuses "
                                     "are set here");
        }
        server_set_status(s, pod, status);
        return queue_json(r->connection, 200, json_incref(pod), -1);
}

/* POST /validatingadmissionpolicies, /validatingadmissionpolicybindings on
 * the control port: the object as the server would store it. A
 * creationTimestamp given is kept (a test's way to make an older object). */
static enum MHD_Result control_post_admission(Server *s, Request *r, size_t k) {
        _cleanup_free_ char *error = NULL;
        _cleanup_(json_decrefp) json_t *obj = control_body(r, &error), *head = NULL;
        const char *invalid;
        json_t *meta;
        char uid[37], stamp[32];

        if (!obj)
                return control_error(r, 400, "%s", strnull(error));
        if (!json_is_object(obj) || !json_is_object(meta = json_object_get(obj, "metadata")))
                return control_error(r, 400, "a %s must be an object with metadata",
                                     admission_kinds[k].kind);
        invalid = admission_invalid(k, obj);
        if (invalid)
                return control_error(r, 422, "%s: %s", admission_kinds[k].kind, invalid);
        if (json_str(meta, "creationTimestamp") && !is_rfc3339(json_str(meta, "creationTimestamp")))
                return control_error(r, 400, "metadata.creationTimestamp: not RFC 3339");
        make_uid(uid);
        json_object_set_new(meta, "uid", json_string(uid));
        json_object_set_new(meta, "generation", json_integer(1));
        if (!json_str(meta, "creationTimestamp")) {
                format_now(stamp);
                json_object_set_new(meta, "creationTimestamp", json_string(stamp));
        }
        set_rv(obj, ++s->rv);
        /* kind and apiVersion first, as the real server writes them */
        head = json_pack("{s:s, s:s}", "kind", admission_kinds[k].kind, "apiVersion",
                         ADMISSION_API_VERSION);
        json_object_del(obj, "kind");
        json_object_del(obj, "apiVersion");
        if (!head || json_object_update(head, obj) < 0)
                return MHD_NO;
        json_object_set(s->admission[k], json_str(meta, "name"), head);
        return queue_json(r->connection, 201, json_incref(head), -1);
}

static enum MHD_Result control_post_pod(Server *s, Request *r) {
        _cleanup_free_ char *error = NULL;
        _cleanup_(json_decrefp) json_t *pod = control_body(r, &error);

        if (!pod)
                return control_error(r, 400, "%s", strnull(error));
        if (pod_normalize(s, pod, &error) < 0)
                return control_error(r, 400, "%s", strnull(error));
        /* resourceVersion is the server's to give */
        json_object_del(json_object_get(pod, "metadata"), "resourceVersion");
        server_put_pod(s, json_incref(pod));
        return queue_json(r->connection, 201, json_incref(pod), -1);
}

static json_t *state_json(Server *s) {
        _cleanup_free_ char *rv = rv_string(s->rv), *crv = rv_string(s->compacted_rv);
        unsigned watches = 0, suspended = 0;

        for (Request *r = s->live; r; r = r->next) {
                if (r->watching && !r->watch_ended)
                        watches++;
                if (r->suspended)
                        suspended++;
        }
        return json_pack("{s:s?, s:s?, s:s, s:I, s:i, s:i, s:i, s:I, s:I, s:I}", "resourceVersion",
                         rv, "compactedResourceVersion", crv, "namespace", s->namespace, "pods",
                         (json_int_t) json_object_size(s->pods), "watches", (int) watches,
                         "suspended", (int) suspended, "faults", (int) s->n_faults, "requests",
                         (json_int_t) json_array_size(s->requests), "requestsDropped",
                         (json_int_t) s->requests_dropped, "events",
                         (json_int_t) json_array_size(s->events));
}

static enum MHD_Result on_control_process(Server *s, Request *r) {
        const char *m = r->method, *p = r->path, *name;

        if (r->too_large)
                return control_error(r, 413, "body larger than %u bytes", FAKE_MAX_BODY_BYTES);
        if (streq(p, "/state") && streq(m, "GET"))
                return queue_json(r->connection, 200, state_json(s), -1);
        if (streq(p, "/pods")) {
                if (streq(m, "GET")) {
                        Selector none = {};

                        return queue_json(r->connection, 200, pod_list(s, &none, &none), -1);
                }
                if (streq(m, "POST"))
                        return control_post_pod(s, r);
        } else if ((name = startswith(p, "/pods/"))) {
                const char *slash = strchr(name, '/');

                if (slash && streq(slash, "/rewrite-conditions") && streq(m, "POST")) {
                        _cleanup_free_ char *n = strndup(name, (size_t) (slash - name));

                        return n ? control_rewrite(s, r, n) : MHD_NO;
                }
                if (slash && streq(slash, "/container-statuses") && streq(m, "POST")) {
                        _cleanup_free_ char *n = strndup(name, (size_t) (slash - name));

                        return n ? control_container_statuses(s, r, n) : MHD_NO;
                }
                if (!slash && streq(m, "GET")) {
                        json_t *pod = json_object_get(s->pods, name);

                        return pod ? queue_json(r->connection, 200, json_incref(pod), -1)
                                   : control_error(r, 404, "no pod \"%s\"", name);
                }
                if (!slash && streq(m, "DELETE")) {
                        if (!json_object_get(s->pods, name))
                                return control_error(r, 404, "no pod \"%s\"", name);
                        server_delete_pod(s, name);
                        return queue_json(r->connection, 200, state_json(s), -1);
                }
        } else if (admission_kind_of(p + 1, strcspn(p + 1, "/")) >= 0) {
                size_t k = (size_t) admission_kind_of(p + 1, strcspn(p + 1, "/"));

                name = p + 1 + strcspn(p + 1, "/");
                if (*name == '\0' && streq(m, "POST"))
                        return control_post_admission(s, r, k);
                if (*name == '\0' && streq(m, "GET"))
                        return queue_json(r->connection, 200, admission_list(s, k, false), -1);
                if (*name == '/' && name[1] && !strchr(name + 1, '/') && streq(m, "DELETE")) {
                        if (!json_object_get(s->admission[k], name + 1))
                                return control_error(r, 404, "no %s \"%s\"",
                                                     admission_kinds[k].kind, name + 1);
                        json_object_del(s->admission[k], name + 1);
                        s->rv++;
                        return queue_json(r->connection, 200, state_json(s), -1);
                }
        } else if (streq(p, "/faults")) {
                if (streq(m, "POST"))
                        return control_post_faults(s, r);
                if (streq(m, "GET"))
                        return queue_json(r->connection, 200, faults_json(s), -1);
                if (streq(m, "DELETE")) {
                        for (size_t i = 0; i < s->n_faults; i++)
                                fault_done(&s->faults[i]);
                        s->n_faults = 0;
                        return queue_json(r->connection, 200, faults_json(s), -1);
                }
        } else if (streq(p, "/leases") && streq(m, "GET")) {
                const char *key;
                json_t *l, *list = json_array();

                json_object_foreach(s->leases, key, l) json_array_append(list, l);
                return queue_json(r->connection, 200, list, -1);
        } else if (streq(p, "/requests") && streq(m, "GET"))
                return queue_json(r->connection, 200, json_incref(s->requests), -1);
        else if (streq(p, "/reset-requests") && streq(m, "POST")) {
                json_array_clear(s->requests);
                s->requests_dropped = 0;
                return queue_json(r->connection, 200, state_json(s), -1);
        } else if (streq(p, "/events")) {
                if (streq(m, "GET"))
                        return queue_json(r->connection, 200, json_incref(s->events), -1);
                if (streq(m, "DELETE")) {
                        json_array_clear(s->events);
                        return queue_json(r->connection, 200, state_json(s), -1);
                }
        } else if (streq(p, "/compact") && streq(m, "POST")) {
                history_clear(s);
                s->compacted_rv = s->rv;
                return queue_json(r->connection, 200, state_json(s), -1);
        } else if (streq(p, "/bookmark") && streq(m, "POST")) {
                _cleanup_free_ char *rv = rv_string(s->rv);
                _cleanup_(json_decrefp) json_t *bm =
                        json_pack("{s:s, s:s, s:{s:s?}}", "kind", "Pod", "apiVersion", "v1",
                                  "metadata", "resourceVersion", rv);

                for (Request *w = s->live; w && bm; w = w->next)
                        if (w->watching && !w->watch_ended && w->bookmarks && s->rv > w->watch_rv)
                                watch_queue(w, "BOOKMARK", bm);
                return queue_json(r->connection, 200, state_json(s), -1);
        } else if ((streq(p, "/close-watches") || streq(p, "/break-watches")) && streq(m, "POST")) {
                for (Request *w = s->live; w; w = w->next)
                        if (w->watching && !w->watch_ended) {
                                w->watch_ended = true;
                                w->watch_broken = streq(p, "/break-watches");
                                request_wake(w);
                        }
                return queue_json(r->connection, 200, state_json(s), -1);
        } else
                return control_error(r, 404, "no such control endpoint: %s %s", m, p);
        return control_error(r, 405, "method %s not allowed on %s", m, p);
}

/* ---------------------------------------------------------------------------
 * The loop */

static void server_done(Server *s) {
        while (s->live)
                request_free(s->live); /* only after the daemons are stopped */
        json_decref(s->pods);
        json_decref(s->terminating);
        json_decref(s->requests);
        json_decref(s->events);
        json_decref(s->configmaps);
        json_decref(s->leases);
        for (size_t i = 0; i < ELEMENTSOF(s->admission); i++)
                json_decref(s->admission[i]);
        history_clear(s);
        for (size_t i = 0; i < s->n_faults; i++)
                fault_done(&s->faults[i]);
        free(s->namespace);
        free(s->user);
        rbac_free(s->rbac);
        if (s->arrivals_fd >= 0)
                close(s->arrivals_fd);
}

/* Delays that ran out, watches that timed out. Returns the next deadline
 * (UINT64_MAX: none). */
static uint64_t run_timers(Server *s, uint64_t now) {
        uint64_t next = UINT64_MAX;
        const char *name;
        json_t *t, *tmp;

        /* Graceful deletions whose grace period ended: the pod goes, unless
         * the name is another pod's by now. */
        json_object_foreach_safe(s->terminating, tmp, name, t) {
                uint64_t at = (uint64_t) json_integer_value(json_object_get(t, "at"));
                json_t *pod = json_object_get(s->pods, name);

                if (!pod || !streq(strempty(pod_uid(pod)), json_str(t, "uid"))) {
                        json_object_del(s->terminating, name);
                        continue;
                }
                if (now >= at) {
                        server_delete_pod(s, name);
                        json_object_del(s->terminating, name);
                } else if (at < next)
                        next = at;
        }

        for (Request *r = s->live; r; r = r->next) {
                if (r->delay_pending) {
                        if (now >= r->resume_usec) {
                                r->delay_pending = false;
                                r->delay_done = true;
                                request_wake(r);
                        } else if (r->resume_usec < next)
                                next = r->resume_usec;
                }
                if (r->watching && !r->watch_ended) {
                        if (now >= r->watch_deadline_usec)
                                watch_end(r);
                        else if (r->watch_deadline_usec < next)
                                next = r->watch_deadline_usec;
                }
        }
        return next;
}

static int start_daemon(Server *s, Port port, uint16_t want_port, const char *cert, const char *key,
                        struct MHD_Daemon **ret, uint16_t *ret_port) {
        struct sockaddr_in sa = {
                .sin_family = AF_INET,
                .sin_port = htons(want_port),
                .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
        };
        unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
        const union MHD_DaemonInfo *info;
        struct MHD_Daemon *d;

        if (s->verbose)
                flags |= MHD_USE_ERROR_LOG;
        if (port == PORT_API)
                d = MHD_start_daemon(
                        flags | MHD_USE_TLS, 0, NULL, NULL, on_api, s, MHD_OPTION_SOCK_ADDR,
                        (struct sockaddr *) &sa, MHD_OPTION_HTTPS_MEM_CERT, cert,
                        MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                        MHD_OPTION_CONNECTION_LIMIT, s->max_connections,
                        MHD_OPTION_CONNECTION_TIMEOUT, FAKE_CONNECTION_TIMEOUT_SEC, MHD_OPTION_END);
        else
                d = MHD_start_daemon(flags, 0, NULL, NULL, on_control, s, MHD_OPTION_SOCK_ADDR,
                                     (struct sockaddr *) &sa, MHD_OPTION_NOTIFY_COMPLETED,
                                     on_completed, s, MHD_OPTION_CONNECTION_LIMIT,
                                     s->max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
                                     FAKE_CONNECTION_TIMEOUT_SEC, MHD_OPTION_END);
        if (!d)
                return -EADDRNOTAVAIL;
        info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
        if (!info || info->port == 0) {
                MHD_stop_daemon(d);
                return -EADDRNOTAVAIL;
        }
        *ret_port = info->port;
        *ret = d;
        return 0;
}

static int daemon_epoll_fd(struct MHD_Daemon *d) {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);

        return info ? info->epoll_fd : -1;
}

static int run(Server *s, int signal_fd) {
        _cleanup_free_ struct pollfd *pfd = calloc(3u + s->max_connections, sizeof *pfd);
        _cleanup_free_ Request **watched = calloc(s->max_connections, sizeof *watched);

        if (!pfd || !watched)
                return -ENOMEM;
        for (;;) {
                MHD_UNSIGNED_LONG_LONG mhd_ms;
                uint64_t now, next;
                long long timeout_ms = -1;
                size_t n = 3, n_watched = 0;
                int k;

                s->need_run = false;
                if (MHD_run(s->api) != MHD_YES || MHD_run(s->control) != MHD_YES)
                        return -EIO;
                now = now_usec();
                next = run_timers(s, now);
                if (s->need_run)
                        next = now;
                if (next != UINT64_MAX)
                        timeout_ms = (long long) ((next - now + 999) / 1000);
                if (MHD_get_timeout(s->api, &mhd_ms) == MHD_YES &&
                    (timeout_ms < 0 || (long long) mhd_ms < timeout_ms))
                        timeout_ms = (long long) mhd_ms;
                if (MHD_get_timeout(s->control, &mhd_ms) == MHD_YES &&
                    (timeout_ms < 0 || (long long) mhd_ms < timeout_ms))
                        timeout_ms = (long long) mhd_ms;
                if (timeout_ms > INT_MAX)
                        timeout_ms = INT_MAX;

                pfd[0] = (struct pollfd){.fd = daemon_epoll_fd(s->api), .events = POLLIN};
                pfd[1] = (struct pollfd){.fd = daemon_epoll_fd(s->control), .events = POLLIN};
                pfd[2] = (struct pollfd){.fd = signal_fd, .events = POLLIN};
                /* libmicrohttpd does not see a client leave while its
                 * connection is suspended: watch parked watches' sockets */
                for (Request *r = s->live; r && n_watched < s->max_connections; r = r->next) {
                        const union MHD_ConnectionInfo *ci;

                        if (!r->watching || !r->suspended)
                                continue;
                        ci = MHD_get_connection_info(r->connection,
                                                     MHD_CONNECTION_INFO_CONNECTION_FD);
                        if (!ci)
                                continue;
                        pfd[n++] = (struct pollfd){.fd = ci->connect_fd, .events = POLLRDHUP};
                        watched[n_watched++] = r;
                }
                k = poll(pfd, n, (int) timeout_ms);
                if (k < 0 && errno != EINTR)
                        return -errno;
                if (k <= 0)
                        continue;
                if (pfd[2].revents & POLLIN) {
                        struct signalfd_siginfo si;

                        if (read(signal_fd, &si, sizeof si) == (ssize_t) sizeof si)
                                return 0;
                }
                for (size_t i = 0; i < n_watched; i++)
                        if (pfd[3 + i].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
                                watched[i]->watch_ended = true;
                                request_wake(watched[i]);
                        }
        }
}

static void usage(FILE *f) {
        fprintf(f, "usage: fake-apiserver --pods FILE --token-file FILE --tls-cert FILE "
                   "--tls-key FILE\n"
                   "                      [--port N] [--control-port N] [--namespace NS] "
                   "[--verbose]\n"
                   "                      [--arrivals FILE] [--configmaps FILE] [--rbac FILE]... "
                   "[--user NAME]\n"
                   "                      [--max-connections N]\n"
                   "A loopback Kubernetes API server for tests: TLS on 127.0.0.1:N (0: the kernel\n"
                   "chooses), a plain-HTTP control port for fault injection. Prints\n"
                   "\"listening on https://127.0.0.1:PORT\" and \"control on "
                   "http://127.0.0.1:PORT\".\n");
}

static int parse_port_arg(const char *s, uint16_t *ret) {
        uint64_t v;

        if (parse_u64(s, &v) < 0 || v > 65535)
                return -EINVAL;
        *ret = (uint16_t) v;
        return 0;
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                {"pods", required_argument, NULL, 'p'},
                {"token-file", required_argument, NULL, 't'},
                {"tls-cert", required_argument, NULL, 'c'},
                {"tls-key", required_argument, NULL, 'k'},
                {"port", required_argument, NULL, 'P'},
                {"control-port", required_argument, NULL, 'C'},
                {"namespace", required_argument, NULL, 'n'},
                {"verbose", no_argument, NULL, 'v'},
                {"arrivals", required_argument, NULL, 'a'},
                {"configmaps", required_argument, NULL, 'm'},
                {"rbac", required_argument, NULL, 'r'},
                {"user", required_argument, NULL, 'u'},
                {"max-connections", required_argument, NULL, 'M'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        const char *pods = NULL, *cert_path = NULL, *key_path = NULL, *namespace_arg = NULL;
        _cleanup_free_ char *cert = NULL, *key = NULL;
        uint16_t api_port = 0, control_port = 0, got_api, got_control;
        Server s = {.arrivals_fd = -EBADF, .max_connections = FAKE_MAX_CONNECTIONS};
        const char *arrivals = NULL, *configmaps = NULL, *rbac_files[16], *user = NULL;
        size_t n_rbac = 0;
        bool namespace_given = false;
        _cleanup_close_ int signal_fd = -EBADF;
        sigset_t mask;
        size_t len;
        int c, r, ret = 1;

        while ((c = getopt_long(argc, argv, "vh", options, NULL)) >= 0) {
                switch (c) {
                case 'p':
                        pods = optarg;
                        break;
                case 't':
                        s.token_path = optarg;
                        break;
                case 'c':
                        cert_path = optarg;
                        break;
                case 'k':
                        key_path = optarg;
                        break;
                case 'P':
                case 'C':
                        if (parse_port_arg(optarg, c == 'P' ? &api_port : &control_port) < 0) {
                                fprintf(stderr, "fake-apiserver: bad port \"%s\"\n", optarg);
                                return 2;
                        }
                        break;
                case 'n':
                        namespace_arg = optarg;
                        break;
                case 'v':
                        s.verbose = true;
                        break;
                case 'm':
                        configmaps = optarg;
                        break;
                case 'a':
                        arrivals = optarg;
                        break;
                case 'r':
                        if (n_rbac == ELEMENTSOF(rbac_files)) {
                                fprintf(stderr, "fake-apiserver: more than %zu --rbac files\n",
                                        ELEMENTSOF(rbac_files));
                                return 2;
                        }
                        rbac_files[n_rbac++] = optarg;
                        break;
                case 'u':
                        user = optarg;
                        break;
                case 'M': {
                        uint64_t v;

                        if (parse_u64(optarg, &v) < 0 || v < 1 || v > FAKE_MAX_CONNECTIONS_LIMIT) {
                                fprintf(stderr,
                                        "fake-apiserver: --max-connections \"%s\": a number "
                                        "from 1 to %u\n",
                                        optarg, FAKE_MAX_CONNECTIONS_LIMIT);
                                return 2;
                        }
                        s.max_connections = (unsigned) v;
                        break;
                }
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (optind != argc || !pods || !s.token_path || !cert_path || !key_path) {
                usage(stderr);
                return 2;
        }
        namespace_given = namespace_arg;
        if (arrivals) {
                s.arrivals_fd =
                        open(arrivals, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
                if (s.arrivals_fd < 0) {
                        fprintf(stderr, "fake-apiserver: cannot write \"%s\": %s\n", arrivals,
                                strerror(errno));
                        return 2;
                }
        }
        if (namespace_given && !(s.namespace = strdup(namespace_arg)))
                return 1;

        s.pods = json_object();
        s.terminating = json_object();
        s.requests = json_array();
        s.events = json_array();
        s.admission[0] = json_object();
        s.admission[1] = json_object();
        s.leases = json_object();
        if (!s.leases || !s.pods || !s.terminating || !s.requests || !s.events || !s.admission[0] ||
            !s.admission[1])
                goto out;
        if (load_pods(&s, pods, namespace_given) < 0 ||
            (configmaps && load_configmaps(&s, configmaps) < 0)) {
                ret = 2;
                goto out;
        }
        if (user ? !(s.user = strdup(user)) : asprintf(&s.user, FAKE_USER_FMT, s.namespace) < 0) {
                s.user = NULL;
                goto out;
        }
        if (n_rbac > 0 && !(s.rbac = rbac_new()))
                goto out;
        for (size_t i = 0; i < n_rbac; i++) {
                _cleanup_free_ char *error = NULL;

                r = rbac_load(s.rbac, rbac_files[i], s.namespace, &error);
                if (r < 0) {
                        fprintf(stderr, "fake-apiserver: --rbac %s: %s\n", rbac_files[i],
                                error ? error : strerror(-r));
                        ret = 2;
                        goto out;
                }
        }
        r = read_file_at(AT_FDCWD, cert_path, 0, FAKE_MAX_FILE_BYTES, &cert, &len);
        if (r >= 0)
                r = read_file_at(AT_FDCWD, key_path, 0, FAKE_MAX_FILE_BYTES, &key, &len);
        if (r < 0) {
                fprintf(stderr, "fake-apiserver: cannot read the certificate or key: %s\n",
                        strerror(-r));
                ret = 2;
                goto out;
        }

        /* SIGPIPE: a client gone mid-answer is an error return, not a death */
        signal(SIGPIPE, SIG_IGN);
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 ||
            (signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
                perror("fake-apiserver: signalfd");
                goto out;
        }

        if (start_daemon(&s, PORT_API, api_port, cert, key, &s.api, &got_api) < 0) {
                fprintf(stderr,
                        "fake-apiserver: cannot start TLS on 127.0.0.1:%u (port in use, or a bad "
                        "certificate or key)\n",
                        api_port);
                goto out;
        }
        if (start_daemon(&s, PORT_CONTROL, control_port, NULL, NULL, &s.control, &got_control) <
            0) {
                fprintf(stderr, "fake-apiserver: cannot listen on 127.0.0.1:%u\n", control_port);
                goto out;
        }
        printf("listening on https://127.0.0.1:%u\ncontrol on http://127.0.0.1:%u\n", got_api,
               got_control);
        fflush(stdout);

        r = run(&s, signal_fd);
        if (r < 0)
                fprintf(stderr, "fake-apiserver: event loop: %s\n", strerror(-r));
        else
                ret = 0;
out:
        /* libmicrohttpd refuses to stop with suspended connections: resume
         * them all; watch_read() and api_process() then see s.stopping */
        s.stopping = true;
        for (Request *q = s.live; q; q = q->next)
                request_wake(q);
        if (s.api)
                MHD_stop_daemon(s.api);
        if (s.control)
                MHD_stop_daemon(s.control);
        server_done(&s);
        return ret;
}
