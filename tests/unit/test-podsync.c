/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod sync state machine against a fake Kubernetes API server on a real
 * loopback socket: one test per class of answer (success, 401, 403, 404, 409,
 * 422, 429, 5xx, a connection the server drops mid-answer, a watch that
 * expires or ends). Each test checks what a user can see: the requests the
 * server received (method, path, the PATCH's condition), when a retry came
 * (after a backoff, at once, or not at all), podsync_status(), and the log
 * lines (log_internal() is replaced with -Wl,--wrap so each line keeps its
 * level). Time is real: the test runs the sd-event loop until the expected
 * request arrives or a deadline passes; a first backoff is 0.5 to 1 s.
 *
 * The fake speaks HTTP/1.1 as the API server does for these requests: a
 * request line, headers and a Content-Length body (an "Expect: 100-continue"
 * gets its interim answer), keep-alive connections, one thread per
 * connection; answers with Content-Length, watches as a chunked stream of
 * newline-terminated events. It holds one pod whose resourceVersion grows with
 * every change, answers GET with it, applies a strategic merge patch of
 * status.conditions (merged by type) after checking the metadata.uid
 * precondition as the API server does (409 with its message), and sends a
 * MODIFIED event to every open watch when the pod changes. A test scripts
 * other answers per request kind.
 * Not covered: TLS and HTTP/2 (the client is given plain http to 127.0.0.1,
 * which it allows for kubectl proxy), authentication (the bearer token is
 * recorded, never checked), authorization, field selectors other than
 * metadata.name, label selectors, list calls, watch bookmarks the test does
 * not script, chunked request bodies (recorded as a violation),
 * resourceVersion semantics beyond "events newer than the one asked for",
 * a Status's details (429 carries Retry-After in the header only), the
 * closing of idle keep-alive connections, server-side apply, admission, and
 * any object but the one pod and Events (an Event is answered 201 with
 * itself, not stored).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "condition.h"
#include "kube.h"
#include "log.h"
#include "podsync.h"

#define POD_NAME       "p"
#define POD_NAMESPACE  "ns"
#define POD_UID        "0b8e3c52-1f0c-4a57-9d2b-5c1d7e0a9f11"
#define CONDITION_TYPE "example.com/EnrootConfigCurrent"
#define POD_PATH       "/api/v1/namespaces/" POD_NAMESPACE "/pods/" POD_NAME
#define WATCH_PREFIX   "/api/v1/namespaces/" POD_NAMESPACE "/pods?watch=1"
#define EVENTS_PATH    "/api/v1/namespaces/" POD_NAMESPACE "/events"

#define MAX_REQUESTS   64
#define MAX_ANSWERS    8
#define MAX_CONNS      32
#define MAX_BODY       8192
#define MAX_EVENTS     3

/* A first retry comes after PODSYNC_BACKOFF_BASE_USEC/2 .. BASE; the loop
 * and the fake's threads may add a little. "At once" is well under that. */
#define MSEC           1000u
#define BACKOFF_MIN    (PODSYNC_BACKOFF_BASE_USEC / 2u - 20u * MSEC)
#define BACKOFF_MAX    (PODSYNC_BACKOFF_BASE_USEC + 300u * MSEC)
#define AT_ONCE        (250u * MSEC)
/* Long enough that a retry after a first backoff would have come. */
#define QUIET_WINDOW   (PODSYNC_BACKOFF_BASE_USEC + 150u * MSEC)
#define WAIT_DEADLINE  (3u * 1000000u)
/* After a stop, which cancels every call and timer at once: a short look. */
#define STOP_WINDOW    (200u * MSEC)

static uint64_t mono_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

/* ---------------------------------------------------------------------------
 * The log: every line podsync writes, with its level. */

#define MAX_LOG 64

typedef struct LogLine {
        int level;
        char text[1024];
} LogLine;

static LogLine logged[MAX_LOG];
static size_t n_logged;

int __wrap_log_internal(int level, int error, const char *file, int line, const char *fmt, ...)
        _printf_(5, 6);

int __wrap_log_internal(int level, int error, const char *file, int line, const char *fmt, ...) {
        int saved = errno;
        va_list ap;

        (void) file;
        (void) line;
        if (error < 0)
                error = -error;
        if (n_logged < MAX_LOG) {
                errno = error; /* for %m */
                va_start(ap, fmt);
                (void) vsnprintf(logged[n_logged].text, sizeof logged[0].text, fmt, ap);
                va_end(ap);
                logged[n_logged].level = level;
                if (getenv("TEST_PODSYNC_VERBOSE"))
                        fprintf(stderr, "log <%d> %s\n", level, logged[n_logged].text);
                n_logged++;
        }
        errno = saved;
        return -error;
}

/* How many lines at level hold text. */
static size_t log_count(int level, const char *text) {
        size_t n = 0;

        for (size_t i = 0; i < n_logged; i++)
                if (logged[i].level == level && strstr(logged[i].text, text))
                        n++;
        return n;
}

/* How many lines above debug were logged. */
static size_t log_count_visible(void) {
        size_t n = 0;

        for (size_t i = 0; i < n_logged; i++)
                n += logged[i].level < LOG_DEBUG;
        return n;
}

/* The one line at level holding text, or a failed test. */
static const char *log_line(int level, const char *text) {
        for (size_t i = 0; i < n_logged; i++)
                if (logged[i].level == level && strstr(logged[i].text, text))
                        return logged[i].text;
        for (size_t i = 0; i < n_logged; i++)
                print_message("logged <%d> %s\n", logged[i].level, logged[i].text);
        fail_msg("no log line <%d> with \"%s\"", level, text);
        return NULL;
}

/* ---------------------------------------------------------------------------
 * The fake API server */

typedef enum Route {
        ROUTE_GET,   /* GET pods/NAME */
        ROUTE_WATCH, /* GET pods?watch=1&fieldSelector=metadata.name=NAME */
        ROUTE_PATCH, /* PATCH pods/NAME/status */
        ROUTE_EVENT, /* POST events */
        _ROUTE_MAX,
} Route;

typedef enum AnswerKind {
        ANSWER_DEFAULT, /* as the API server: the pod, the patched pod, the Event,
                         * a watch held open with MODIFIED events */
        ANSWER_STATUS,  /* code, a Status body, Retry-After when set */
        ANSWER_DROP,    /* 200, Content-Length, half the body, then the connection closes */
        ANSWER_STREAM,  /* a watch: 200, chunked, the events, then the end */
} AnswerKind;

typedef struct Answer {
        AnswerKind kind;
        long code;
        const char *reason;
        const char *message;
        const char *retry_after;
        const char *events[MAX_EVENTS];
        unsigned hold_ms; /* stream: after the events, before the end */
        bool drop;        /* stream: close without the last chunk */
} Answer;

typedef struct Request {
        char method[16];
        char target[512];
        char authorization[128];
        char content_type[128];
        char body[MAX_BODY];
        uint64_t usec;     /* when its headers were read */
        uint64_t end_usec; /* a stream: when it ended or broke */
} Request;

typedef struct Server {
        int fd;
        uint16_t port;
        pthread_t thread;
        bool running;
        bool stopping;
        pthread_mutex_t lock;
        pthread_t conn_thread[MAX_CONNS];
        int conn_fd[MAX_CONNS];
        size_t n_conns;
        Answer answers[_ROUTE_MAX][MAX_ANSWERS];
        size_t n_answers[_ROUTE_MAX], next_answer[_ROUTE_MAX];
        Request requests[_ROUTE_MAX][MAX_REQUESTS];
        size_t n_requests[_ROUTE_MAX];
        char violation[512]; /* the first thing the real API server would not take */
        char uid[64];
        unsigned long rv;
        unsigned events; /* watch events sent */
        json_t *conditions;
} Server;

static Server server = {.fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

static void violate(Server *s, const char *what, const char *detail) {
        pthread_mutex_lock(&s->lock);
        if (!s->violation[0])
                (void) snprintf(s->violation, sizeof s->violation, "%s: %.300s", what, detail);
        pthread_mutex_unlock(&s->lock);
}

static bool stopping(Server *s) {
        bool b;

        pthread_mutex_lock(&s->lock);
        b = s->stopping;
        pthread_mutex_unlock(&s->lock);
        return b;
}

static bool send_all(int c, const char *data, size_t len) {
        while (len > 0) {
                ssize_t n = send(c, data, len, MSG_NOSIGNAL);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return false;
                data += n;
                len -= (size_t) n;
        }
        return true;
}

static const char *reason_phrase(long code) {
        switch (code) {
        case 200:
                return "OK";
        case 201:
                return "Created";
        case 401:
                return "Unauthorized";
        case 403:
                return "Forbidden";
        case 404:
                return "Not Found";
        case 409:
                return "Conflict";
        case 410:
                return "Gone";
        case 422:
                return "Unprocessable Entity";
        case 429:
                return "Too Many Requests";
        case 500:
                return "Internal Server Error";
        case 503:
                return "Service Unavailable";
        default:
                return "Status";
        }
}

static bool send_answer(int c, long code, const char *body, size_t len, const char *retry_after) {
        char head[512];
        int n;

        n = snprintf(head, sizeof head,
                     "HTTP/1.1 %ld %s\r\nAudit-Id: 1\r\nCache-Control: no-cache, private\r\n"
                     "Content-Type: application/json\r\n%s%s%sContent-Length: %zu\r\n\r\n",
                     code, reason_phrase(code), retry_after ? "Retry-After: " : "",
                     retry_after ?: "", retry_after ? "\r\n" : "", len);
        return n > 0 && (size_t) n < sizeof head && send_all(c, head, (size_t) n) &&
               send_all(c, body, len);
}

static bool send_status(int c, long code, const char *reason, const char *message,
                        const char *retry_after) {
        json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status",
                               "apiVersion", "v1", "metadata", "status", "Failure", "message",
                               message ?: "", "reason", reason ?: "", "code", (int) code);
        char *body = st ? json_dumps(st, JSON_COMPACT) : NULL;
        bool ok = body && send_answer(c, code, body, strlen(body), retry_after);

        json_decref(st);
        free(body);
        return ok;
}

/* The pod as the server holds it; called with the lock held. New reference. */
static json_t *pod_json(Server *s) {
        char rv[32];

        (void) snprintf(rv, sizeof rv, "%lu", s->rv);
        return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{}, s:{s:s, s:O}}", "kind", "Pod",
                         "apiVersion", "v1", "metadata", "name", POD_NAME, "namespace",
                         POD_NAMESPACE, "uid", s->uid, "resourceVersion", rv, "spec", "status",
                         "phase", "Running", "conditions", s->conditions);
}

static char *pod_dump(Server *s) {
        json_t *pod;
        char *text;

        pthread_mutex_lock(&s->lock);
        pod = pod_json(s);
        pthread_mutex_unlock(&s->lock);
        text = pod ? json_dumps(pod, JSON_COMPACT) : NULL;
        json_decref(pod);
        return text;
}

/* A strategic merge patch of status.conditions, keyed by type, under the
 * metadata.uid precondition. Returns the HTTP code; 200 with *ret_pod. */
static long apply_patch(Server *s, const char *body, char **ret_pod, char *why, size_t why_size) {
        json_t *patch = json_loads(body, 0, NULL), *list, *c;
        const char *uid;
        size_t i;
        long code = 200;

        list = json_object_get(json_object_get(patch, "status"), "conditions");
        uid = json_string_value(json_object_get(json_object_get(patch, "metadata"), "uid"));
        pthread_mutex_lock(&s->lock);
        if (!json_is_array(list)) {
                code = 422;
                (void) snprintf(why, why_size, "status.conditions is not a list");
        } else if (uid && strcmp(uid, s->uid) != 0) {
                code = 409;
                (void) snprintf(why, why_size,
                                "Operation cannot be fulfilled on pods \"%s\": Precondition "
                                "failed: UID in precondition: %s, UID in object meta: %s",
                                POD_NAME, uid, s->uid);
        } else {
                json_array_foreach(list, i, c) {
                        const char *type = json_string_value(json_object_get(c, "type"));
                        size_t j;
                        json_t *old;
                        bool replaced = false;

                        if (!type) {
                                code = 422;
                                (void) snprintf(why, why_size, "a condition without a type");
                                break;
                        }
                        json_array_foreach(s->conditions, j, old) {
                                const char *t = json_string_value(json_object_get(old, "type"));
                                if (t && strcmp(t, type) == 0) {
                                        (void) json_object_update(old, c);
                                        replaced = true;
                                }
                        }
                        if (!replaced)
                                (void) json_array_append(s->conditions, c);
                }
                if (code == 200)
                        s->rv++;
        }
        pthread_mutex_unlock(&s->lock);
        json_decref(patch);
        if (code == 200)
                *ret_pod = pod_dump(s);
        return code;
}

/* Waits up to ms (UINT32_MAX: no limit) or until the client closes or the
 * server stops; sends MODIFIED events when watch_rv is not NULL. Returns
 * false when the connection is over. */
static bool hold(Server *s, int c, unsigned ms, unsigned long *watch_rv) {
        uint64_t until = ms == UINT32_MAX ? UINT64_MAX : mono_usec() + (uint64_t) ms * MSEC;

        for (;;) {
                struct pollfd p = {.fd = c, .events = POLLIN};
                char buf[256];

                if (stopping(s))
                        return false;
                if (watch_rv) {
                        unsigned long rv;

                        pthread_mutex_lock(&s->lock);
                        rv = s->rv;
                        pthread_mutex_unlock(&s->lock);
                        if (rv > *watch_rv) {
                                char *pod = pod_dump(s), *event = NULL, *chunk = NULL;
                                int n = -1;

                                if (pod &&
                                    asprintf(&event, "{\"type\":\"MODIFIED\",\"object\":%s}\n",
                                             pod) > 0)
                                        n = asprintf(&chunk, "%zx\r\n%s\r\n", strlen(event), event);
                                else
                                        event = NULL;
                                free(pod);
                                free(event);
                                if (n <= 0) {
                                        violate(s, "out of memory", "");
                                        return false;
                                }
                                if (!send_all(c, chunk, (size_t) n)) {
                                        free(chunk);
                                        return false;
                                }
                                free(chunk);
                                *watch_rv = rv;
                                pthread_mutex_lock(&s->lock);
                                s->events++;
                                pthread_mutex_unlock(&s->lock);
                        }
                }
                if (mono_usec() >= until)
                        return true;
                if (poll(&p, 1, 10) > 0) {
                        ssize_t n = recv(c, buf, sizeof buf, MSG_DONTWAIT);
                        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                                return false;
                        if (n > 0)
                                violate(s, "data sent on a watch connection", "");
                }
        }
}

static bool send_stream_head(int c) {
        static const char head[] = "HTTP/1.1 200 OK\r\nAudit-Id: 1\r\nCache-Control: no-cache, "
                                   "private\r\nContent-Type: application/json\r\n"
                                   "Transfer-Encoding: chunked\r\n\r\n";
        return send_all(c, head, sizeof head - 1);
}

/* Finds header name (with its colon) in the head; copies its value. */
static bool header(const char *head, const char *name, char *buf, size_t size) {
        size_t len = strlen(name);

        for (const char *p = strstr(head, "\r\n"); p && p[2] != '\r'; p = strstr(p + 2, "\r\n"))
                if (strncasecmp(p + 2, name, len) == 0) {
                        const char *v = p + 2 + len;
                        while (*v == ' ')
                                v++;
                        (void) snprintf(buf, size, "%.*s", (int) strcspn(v, "\r\n"), v);
                        return true;
                }
        return false;
}

static Request *record(Server *s, Route route, const Request *req, Answer *ret_answer) {
        Request *r = NULL;

        pthread_mutex_lock(&s->lock);
        if (s->n_requests[route] < MAX_REQUESTS) {
                r = &s->requests[route][s->n_requests[route]++];
                *r = *req;
        }
        if (s->next_answer[route] < s->n_answers[route])
                *ret_answer = s->answers[route][s->next_answer[route]++];
        else
                *ret_answer = (Answer){.kind = ANSWER_DEFAULT};
        pthread_mutex_unlock(&s->lock);
        return r;
}

/* Answers one request; false when the connection is over. */
static bool answer(Server *s, int c, Route route, const Request *req) {
        Answer a;
        Request *rec = record(s, route, req, &a);
        char why[512];
        long code;
        bool ok;

        if (!rec) {
                violate(s, "too many requests", req->target);
                return false;
        }
        switch (a.kind) {
        case ANSWER_STATUS:
                return send_status(c, a.code, a.reason, a.message, a.retry_after);
        case ANSWER_DROP: {
                char *pod = pod_dump(s), head[256];
                int n = pod ? snprintf(head, sizeof head,
                                       "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                       "Content-Length: %zu\r\n\r\n",
                                       strlen(pod))
                            : -1;

                if (n > 0 && send_all(c, head, (size_t) n))
                        (void) send_all(c, pod, strlen(pod) / 2);
                free(pod);
                return false;
        }
        case ANSWER_STREAM:
                ok = send_stream_head(c);
                for (size_t i = 0; ok && i < MAX_EVENTS && a.events[i]; i++) {
                        char chunk[MAX_BODY];
                        int n = snprintf(chunk, sizeof chunk, "%zx\r\n%s\n\r\n",
                                         strlen(a.events[i]) + 1, a.events[i]);
                        ok = n > 0 && (size_t) n < sizeof chunk && send_all(c, chunk, (size_t) n);
                }
                ok = ok && hold(s, c, a.hold_ms, NULL);
                if (ok && !a.drop)
                        ok = send_all(c, "0\r\n\r\n", 5);
                pthread_mutex_lock(&s->lock);
                rec->end_usec = mono_usec();
                pthread_mutex_unlock(&s->lock);
                return ok && !a.drop;
        case ANSWER_DEFAULT:
                break;
        }

        switch (route) {
        case ROUTE_GET: {
                char *pod = pod_dump(s);
                ok = pod && send_answer(c, 200, pod, strlen(pod), NULL);
                free(pod);
                return ok;
        }
        case ROUTE_WATCH: {
                /* events newer than the resourceVersion asked for */
                const char *v = strstr(req->target, "&resourceVersion=");
                unsigned long rv = v ? strtoul(v + strlen("&resourceVersion="), NULL, 10) : 0;

                if (!v)
                        violate(s, "a watch without a resourceVersion", req->target);
                (void) (send_stream_head(c) && hold(s, c, UINT32_MAX, &rv));
                pthread_mutex_lock(&s->lock);
                rec->end_usec = mono_usec();
                pthread_mutex_unlock(&s->lock);
                return false;
        }
        case ROUTE_PATCH: {
                char *pod = NULL;

                code = apply_patch(s, req->body, &pod, why, sizeof why);
                if (code != 200)
                        return send_status(c, code, code == 409 ? "Conflict" : "Invalid", why,
                                           NULL);
                ok = send_answer(c, 200, pod, strlen(pod), NULL);
                free(pod);
                return ok;
        }
        case ROUTE_EVENT:
                return send_answer(c, 201, req->body, strlen(req->body), NULL);
        default:
                return false;
        }
}

/* Reads one request into req; false at the end of the connection. */
static bool read_request(Server *s, int c, char *buf, size_t *have, Request *req,
                         Route *ret_route) {
        char line[16], value[128], *end;
        size_t head_len, body_len = 0;

        for (;;) {
                end = memmem(buf, *have, "\r\n\r\n", 4);
                if (end)
                        break;
                if (*have >= MAX_BODY) {
                        violate(s, "request head too long", "");
                        return false;
                }
                ssize_t n = recv(c, buf + *have, MAX_BODY - *have, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return false;
                *have += (size_t) n;
        }
        *end = '\0';
        head_len = (size_t) (end - buf) + 4;
        *req = (Request){.usec = mono_usec()};
        if (sscanf(buf, "%15s %511s %15s", req->method, req->target, line) != 3 ||
            strcmp(line, "HTTP/1.1") != 0) {
                violate(s, "not an HTTP/1.1 request line", buf);
                return false;
        }
        if (!header(buf, "Host:", value, sizeof value))
                violate(s, "no Host header", req->target);
        if (!header(buf, "Accept:", value, sizeof value) || strcmp(value, "application/json") != 0)
                violate(s, "not Accept: application/json", req->target);
        if (header(buf, "Transfer-Encoding:", value, sizeof value))
                violate(s, "a chunked request body (not read by this fake)", req->target);
        (void) header(buf, "Authorization:", req->authorization, sizeof req->authorization);
        (void) header(buf, "Content-Type:", req->content_type, sizeof req->content_type);
        if (header(buf, "Content-Length:", value, sizeof value))
                body_len = strtoul(value, NULL, 10);
        if (body_len >= sizeof req->body) {
                violate(s, "request body too large for this fake", req->target);
                return false;
        }
        if (body_len > 0 && header(buf, "Expect:", value, sizeof value) &&
            strcasecmp(value, "100-continue") == 0 &&
            !send_all(c, "HTTP/1.1 100 Continue\r\n\r\n", 25))
                return false;
        /* the body: what came with the head, then the rest */
        memmove(buf, buf + head_len, *have - head_len);
        *have -= head_len;
        while (*have < body_len) {
                ssize_t n = recv(c, buf + *have, MAX_BODY - *have, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return false;
                *have += (size_t) n;
        }
        memcpy(req->body, buf, body_len);
        req->body[body_len] = '\0';
        memmove(buf, buf + body_len, *have - body_len);
        *have -= body_len;

        if (strcmp(req->method, "GET") == 0 && strcmp(req->target, POD_PATH) == 0)
                *ret_route = ROUTE_GET;
        else if (strcmp(req->method, "GET") == 0 &&
                 strncmp(req->target, WATCH_PREFIX, strlen(WATCH_PREFIX)) == 0) {
                *ret_route = ROUTE_WATCH;
                if (!strstr(req->target, "&fieldSelector=metadata.name%3D" POD_NAME "&"))
                        violate(s, "a watch not selected to the pod", req->target);
        } else if (strcmp(req->method, "PATCH") == 0 &&
                   strcmp(req->target, POD_PATH "/status") == 0) {
                *ret_route = ROUTE_PATCH;
                if (strcmp(req->content_type, "application/strategic-merge-patch+json") != 0)
                        violate(s, "a PATCH not as a strategic merge patch", req->content_type);
        } else if (strcmp(req->method, "POST") == 0 && strcmp(req->target, EVENTS_PATH) == 0) {
                *ret_route = ROUTE_EVENT;
                if (strcmp(req->content_type, "application/json") != 0)
                        violate(s, "an Event not as JSON", req->content_type);
        } else {
                violate(s, "a request this fake does not serve", req->target);
                return false;
        }
        if (*ret_route == ROUTE_PATCH || *ret_route == ROUTE_EVENT) {
                json_t *j = json_loads(req->body, 0, NULL);
                if (!json_is_object(j))
                        violate(s, "a body that is not a JSON object", req->body);
                json_decref(j);
        }
        return true;
}

static void *conn_run(void *arg) {
        Server *s = &server;
        int c = (int) (intptr_t) arg;
        char *buf = malloc(MAX_BODY + 1);
        size_t have = 0;
        Request *req = malloc(sizeof(Request));
        Route route;

        while (buf && req && !stopping(s) && read_request(s, c, buf, &have, req, &route) &&
               answer(s, c, route, req))
                ;
        (void) shutdown(c, SHUT_RDWR); /* the fd is closed when the server stops */
        free(buf);
        free(req);
        return NULL;
}

static void *server_run(void *arg) {
        Server *s = arg;

        for (;;) {
                int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);

                if (c < 0) {
                        if (!stopping(s) && (errno == EINTR || errno == ECONNABORTED))
                                continue;
                        return NULL;
                }
                pthread_mutex_lock(&s->lock);
                if (s->n_conns < MAX_CONNS && !s->stopping &&
                    pthread_create(&s->conn_thread[s->n_conns], NULL, conn_run,
                                   (void *) (intptr_t) c) == 0)
                        s->conn_fd[s->n_conns++] = c;
                else {
                        (void) close(c);
                        if (!s->violation[0])
                                (void) snprintf(s->violation, sizeof s->violation,
                                                "more than %u connections", MAX_CONNS);
                }
                pthread_mutex_unlock(&s->lock);
        }
}

static void server_start(json_t *conditions) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof sa;
        Server *s = &server;

        assert_false(s->running);
        s->stopping = false;
        s->n_conns = 0;
        s->violation[0] = '\0';
        memset(s->n_answers, 0, sizeof s->n_answers);
        memset(s->next_answer, 0, sizeof s->next_answer);
        memset(s->n_requests, 0, sizeof s->n_requests);
        (void) snprintf(s->uid, sizeof s->uid, "%s", POD_UID);
        s->rv = 10;
        s->events = 0;
        s->conditions = conditions ?: json_array();
        assert_non_null(s->conditions);
        s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(s->fd >= 0);
        assert_int_equal(bind(s->fd, (struct sockaddr *) &sa, sizeof sa), 0);
        assert_int_equal(listen(s->fd, 16), 0);
        assert_int_equal(getsockname(s->fd, (struct sockaddr *) &sa, &len), 0);
        s->port = ntohs(sa.sin_port);
        assert_int_equal(pthread_create(&s->thread, NULL, server_run, s), 0);
        s->running = true;
}

static void server_stop(void) {
        Server *s = &server;

        if (s->running) {
                pthread_mutex_lock(&s->lock);
                s->stopping = true;
                pthread_mutex_unlock(&s->lock);
                (void) shutdown(s->fd, SHUT_RDWR);
                (void) pthread_join(s->thread, NULL);
                for (size_t i = 0; i < s->n_conns; i++) {
                        (void) shutdown(s->conn_fd[i], SHUT_RDWR);
                        (void) pthread_join(s->conn_thread[i], NULL);
                        (void) close(s->conn_fd[i]);
                }
                s->n_conns = 0;
                s->running = false;
        }
        if (s->fd >= 0)
                (void) close(s->fd);
        s->fd = -1;
        json_decref(s->conditions);
        s->conditions = NULL;
}

/* The next answer to a request of this kind (the ones after: the default). */
static void script(Route route, Answer a) {
        Server *s = &server;

        pthread_mutex_lock(&s->lock);
        assert_true(s->n_answers[route] < MAX_ANSWERS);
        s->answers[route][s->n_answers[route]++] = a;
        pthread_mutex_unlock(&s->lock);
}

static size_t requests(Route route) {
        size_t n;

        pthread_mutex_lock(&server.lock);
        n = server.n_requests[route];
        pthread_mutex_unlock(&server.lock);
        return n;
}

/* A copy of the i-th request of this kind. */
static Request request(Route route, size_t i) {
        Request r = {};
        bool have;

        pthread_mutex_lock(&server.lock);
        have = i < server.n_requests[route];
        if (have)
                r = server.requests[route][i];
        pthread_mutex_unlock(&server.lock);
        assert_true(have);
        return r;
}

static void server_check(void) {
        char v[sizeof server.violation];

        pthread_mutex_lock(&server.lock);
        memcpy(v, server.violation, sizeof v);
        pthread_mutex_unlock(&server.lock);
        if (v[0])
                fail_msg("the fake API server saw %s", v);
}

/* ---------------------------------------------------------------------------
 * The agent's side */

typedef struct Fixture {
        char dir[sizeof "/tmp/test-podsync.XXXXXX"];
        char token_path[sizeof "/tmp/test-podsync.XXXXXX/token"];
        sd_event *event;
        PodSync *sync;
        unsigned pods; /* states of the pod handed to on_pod */
} Fixture;

static Fixture fixture;

static void count_pod(const json_t *pod, void *userdata) {
        (void) pod;
        (void) userdata;
        fixture.pods++;
}

static void write_token(const char *value) {
        char tmp[sizeof fixture.token_path + 8];
        FILE *f;

        (void) snprintf(tmp, sizeof tmp, "%s.new", fixture.token_path);
        f = fopen(tmp, "we");
        assert_non_null(f);
        assert_true(fputs(value, f) >= 0);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(rename(tmp, fixture.token_path), 0); /* as kubelet replaces it */
}

/* The condition of a report: NULL, Unknown (not evaluated); else True. */
static Condition condition_of(bool evaluated) {
        Report r = {.evaluated = true,
                    .observable = {[SIDE_DESIRED] = true, [SIDE_RUNNING] = true}};
        Condition c = {};

        assert_int_equal(condition_from_report(evaluated ? &r : NULL, CONDITION_TYPE, &c), 0);
        return c;
}

static int update(bool evaluated) {
        Report r = {.evaluated = true,
                    .observable = {[SIDE_DESIRED] = true, [SIDE_RUNNING] = true}};

        return podsync_update(fixture.sync, evaluated ? &r : NULL);
}

/* A pod condition list holding what the agent asks for (Unknown). */
static json_t *conditions_already_right(void) {
        Condition c = condition_of(false);
        json_t *list = json_pack(
                "[{s:s, s:s}, {s:s, s:s, s:s, s:s, s:s}]", "type", "Ready", "status", "True",
                "type", CONDITION_TYPE, "status", condition_status_to_string(c.status), "reason",
                c.reason, "message", c.message, "lastTransitionTime", "2026-01-01T00:00:00Z");
        condition_done(&c);
        return list;
}

/* The fake serves conditions (NULL: kubelet's Ready only); podsync asks for
 * Unknown (nothing evaluated yet), with the token "token-1". */
static void start(json_t *conditions) {
        char url[64];
        KubeClient *client = NULL;

        n_logged = 0;
        fixture.pods = 0;
        memcpy(fixture.dir, "/tmp/test-podsync.XXXXXX", sizeof fixture.dir);
        assert_non_null(mkdtemp(fixture.dir));
        (void) snprintf(fixture.token_path, sizeof fixture.token_path, "%s/token", fixture.dir);
        write_token("token-1");
        if (!conditions)
                conditions = json_pack("[{s:s, s:s}]", "type", "Ready", "status", "True");
        server_start(conditions);
        (void) snprintf(url, sizeof url, "http://127.0.0.1:%u", (unsigned) server.port);
        assert_int_equal(sd_event_new(&fixture.event), 0);
        assert_int_equal(kube_client_new(fixture.event,
                                         &(KubeConfig){.api_url = url,
                                                       .token_file = fixture.token_path,
                                                       .user_agent = "test-podsync"},
                                         &client),
                         0);
        assert_int_equal(podsync_new(fixture.event, client,
                                     &(PodSyncConfig){.pod_name = POD_NAME,
                                                      .pod_namespace = POD_NAMESPACE,
                                                      .condition_type = CONDITION_TYPE,
                                                      .component = "aicr-enroot-agent",
                                                      .on_pod = count_pod},
                                     &fixture.sync),
                         0);
        assert_int_equal(update(false), 0);
}

/* The teardown of every test, also after a failed assertion. */
static int stop(void **state) {
        fixture.sync = podsync_free(fixture.sync);
        fixture.event = sd_event_unref(fixture.event);
        server_stop();
        if (fixture.dir[0]) {
                (void) unlink(fixture.token_path);
                (void) rmdir(fixture.dir);
                fixture.dir[0] = '\0';
        }
        (void) state;
        return 0;
}

/* Runs the loop until the server has seen n requests of this kind; false
 * after max_usec. */
static bool run_until(Route route, size_t n, uint64_t max_usec) {
        uint64_t deadline = mono_usec() + max_usec;

        while (requests(route) < n) {
                if (mono_usec() >= deadline)
                        return false;
                assert_true(sd_event_run(fixture.event, 10 * MSEC) >= 0);
        }
        return true;
}

/* Runs the loop for usec, whatever comes. */
static void run_for(uint64_t usec) {
        uint64_t deadline = mono_usec() + usec;

        while (mono_usec() < deadline)
                assert_true(sd_event_run(fixture.event, 10 * MSEC) >= 0);
}

static void wait_requests(Route route, size_t n) {
        if (!run_until(route, n, WAIT_DEADLINE))
                fail_msg("the server saw %zu requests of kind %d, not %zu", requests(route),
                         (int) route, n);
}

/* Runs the loop until podsync_status() says synced, or fails. */
static void wait_synced(void) {
        uint64_t deadline = mono_usec() + WAIT_DEADLINE;
        PodSyncStatus st;

        for (;;) {
                podsync_status(fixture.sync, &st);
                if (st.synced)
                        return;
                if (mono_usec() >= deadline)
                        fail_msg("podsync never says synced");
                assert_true(sd_event_run(fixture.event, 10 * MSEC) >= 0);
        }
}

static uint64_t stat_count(KubeVerb verb, long code) {
        PodSyncStatus st;

        podsync_status(fixture.sync, &st);
        for (size_t i = 0; i < st.requests->n_series; i++)
                if (st.requests->series[i].verb == verb && st.requests->series[i].code == code)
                        return st.requests->series[i].count;
        return 0;
}

/* Runs the loop until the client has n answers of (verb, code), or fails:
 * the watch may tell of a write before its own answer comes. */
static void wait_answers(KubeVerb verb, long code, uint64_t n) {
        uint64_t deadline = mono_usec() + WAIT_DEADLINE;

        while (stat_count(verb, code) < n) {
                if (mono_usec() >= deadline)
                        fail_msg("%" PRIu64 " answers %ld to %s, not %" PRIu64,
                                 stat_count(verb, code), code, kube_verb_to_string(verb), n);
                assert_true(sd_event_run(fixture.event, 10 * MSEC) >= 0);
        }
}

/* The gap between two requests, from when the first was answered (or began,
 * for requests answered at once). */
static uint64_t gap(Route a, size_t i, Route b, size_t j) {
        Request x = request(a, i), y = request(b, j);

        assert_true(y.usec >= x.usec);
        return y.usec - (x.end_usec ? x.end_usec : x.usec);
}

static void assert_after_backoff(uint64_t usec) {
        if (usec < BACKOFF_MIN || usec > BACKOFF_MAX)
                fail_msg("retried after %.3f s, not after a first backoff (%.1f .. %.1f s)",
                         (double) usec / 1e6, (double) PODSYNC_BACKOFF_BASE_USEC / 2e6,
                         (double) PODSYNC_BACKOFF_BASE_USEC / 1e6);
}

static void assert_at_once(uint64_t usec) {
        if (usec > AT_ONCE)
                fail_msg("retried after %.3f s, not at once", (double) usec / 1e6);
}

/* The condition a PATCH sent: its status, reason, and the UID precondition. */
static void assert_patch(size_t i, const char *status, const char *reason) {
        Request r = request(ROUTE_PATCH, i);
        json_t *patch = json_loads(r.body, 0, NULL), *list, *c;

        assert_non_null(patch);
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(patch, "metadata"), "uid")),
                POD_UID);
        list = json_object_get(json_object_get(patch, "status"), "conditions");
        assert_int_equal(json_array_size(list), 1);
        c = json_array_get(list, 0);
        assert_string_equal(json_string_value(json_object_get(c, "type")), CONDITION_TYPE);
        assert_string_equal(json_string_value(json_object_get(c, "status")), status);
        assert_string_equal(json_string_value(json_object_get(c, "reason")), reason);
        json_decref(patch);
}

static void assert_status(bool synced, bool stopped) {
        PodSyncStatus st;

        podsync_status(fixture.sync, &st);
        assert_int_equal(st.synced, synced);
        assert_int_equal(st.stopped, stopped);
}

/* ---------------------------------------------------------------------------
 * Success */

/* GET, a watch from the pod's resourceVersion, one PATCH; the watch's
 * MODIFIED event for the agent's own write changes nothing, and is not
 * taken again (two states of the pod: the GET's, the PATCH's answer). */
static void test_sync_patches_once(void **state) {
        unsigned events;

        start(NULL);
        wait_synced();
        wait_answers(KUBE_VERB_PATCH, 200, 1);
        assert_int_equal(requests(ROUTE_GET), 1);
        assert_string_equal(request(ROUTE_GET, 0).authorization, "Bearer token-1");
        wait_requests(ROUTE_WATCH, 1);
        assert_non_null(strstr(request(ROUTE_WATCH, 0).target, "&resourceVersion=10&"));
        assert_int_equal(requests(ROUTE_PATCH), 1);
        assert_patch(0, "Unknown", "NotYetEvaluated");
        assert_int_equal(stat_count(KUBE_VERB_GET, 200), 1);
        assert_int_equal(stat_count(KUBE_VERB_PATCH, 200), 1);

        run_for(300 * MSEC);
        assert_int_equal(requests(ROUTE_PATCH), 1);
        assert_int_equal(requests(ROUTE_GET), 1);
        assert_int_equal(requests(ROUTE_WATCH), 1);
        assert_int_equal(requests(ROUTE_EVENT), 0); /* Unknown at start is no news */
        assert_status(true, false);
        assert_int_equal(log_count_visible(), 0);
        /* the echo came (in either order with the answer), and was not taken */
        pthread_mutex_lock(&server.lock);
        events = server.events;
        pthread_mutex_unlock(&server.lock);
        assert_int_equal(events, 1);
        assert_int_equal(fixture.pods, 2);

        /* a new condition: one more PATCH */
        assert_int_equal(update(true), 0);
        wait_requests(ROUTE_PATCH, 2);
        assert_patch(1, "True", "ConfigCurrent");
        wait_synced();
        server_check();
        (void) state;
}

/* The pod already says it: no write at all. */
static void test_sync_already_right(void **state) {
        start(conditions_already_right());
        wait_requests(ROUTE_WATCH, 1);
        run_for(300 * MSEC);
        assert_int_equal(requests(ROUTE_GET), 1);
        assert_int_equal(requests(ROUTE_PATCH), 0);
        assert_int_equal(requests(ROUTE_WATCH), 1);
        assert_status(true, false);
        assert_int_equal(log_count_visible(), 0);
        server_check();
        (void) state;
}

/* ---------------------------------------------------------------------------
 * Answers */

/* 401: the token is read again and the request repeated at once; a second
 * 401 with the fresh token waits a backoff and says what to check. */
static void test_401_rereads_token(void **state) {
        start(NULL);
        script(ROUTE_GET, (Answer){.kind = ANSWER_STATUS,
                                   .code = 401,
                                   .reason = "Unauthorized",
                                   .message = "Unauthorized"});
        script(ROUTE_GET, (Answer){.kind = ANSWER_STATUS,
                                   .code = 401,
                                   .reason = "Unauthorized",
                                   .message = "Unauthorized"});
        write_token("token-2"); /* kubelet rotated it */

        wait_requests(ROUTE_GET, 2);
        assert_string_equal(request(ROUTE_GET, 0).authorization, "Bearer token-1");
        assert_string_equal(request(ROUTE_GET, 1).authorization, "Bearer token-2");
        assert_at_once(gap(ROUTE_GET, 0, ROUTE_GET, 1));

        wait_requests(ROUTE_GET, 3);
        assert_after_backoff(gap(ROUTE_GET, 1, ROUTE_GET, 2));
        assert_non_null(log_line(LOG_WARNING, "Kubernetes API: reading the pod: 401 Unauthorized "
                                              "with a freshly read token (Unauthorized); is the "
                                              "projected service account token mounted"));
        wait_synced();
        assert_non_null(log_line(LOG_INFO, "Kubernetes API: reading the pod works again."));
        /* the first 401, cured by the fresh token as far as the agent knew,
         * said nothing above debug */
        assert_int_equal(log_count_visible(), 2);
        assert_int_equal(stat_count(KUBE_VERB_GET, 401), 2);
        assert_int_equal(stat_count(KUBE_VERB_GET, 200), 1);
        server_check();
        (void) state;
}

/* 403: the missing RBAC rule, logged once; retried only at the slow pace or
 * when asked (SIGHUP), not after a backoff. */
static void test_403_rbac_hint(void **state) {
        static const Answer forbidden = {
                .kind = ANSWER_STATUS,
                .code = 403,
                .reason = "Forbidden",
                .message = "pods \"p\" is forbidden: User \"system:serviceaccount:ns:agent\" "
                           "cannot patch resource \"pods/status\" in API group \"\" in the "
                           "namespace \"ns\""};

        start(NULL);
        script(ROUTE_PATCH, forbidden);
        script(ROUTE_PATCH, forbidden);
        wait_requests(ROUTE_PATCH, 1);
        run_for(QUIET_WINDOW);
        assert_int_equal(requests(ROUTE_PATCH), 1);
        assert_status(false, false);
        assert_int_equal(log_count(LOG_ERR, "403"), 1);
        assert_non_null(log_line(LOG_ERR, "Kubernetes API: writing the condition: 403 Forbidden: "
                                          "the agent's service account needs RBAC \"patch on "
                                          "pods/status\" in namespace ns (pods \"p\" is "
                                          "forbidden"));
        assert_non_null(log_line(LOG_ERR, "Retrying every 300 s."));

        /* the operator fixed nothing yet: the same answer is not logged again */
        podsync_retry_now(fixture.sync);
        wait_requests(ROUTE_PATCH, 2);
        run_for(100 * MSEC);
        assert_int_equal(log_count(LOG_ERR, "403"), 1);
        /* now it is fixed */
        podsync_retry_now(fixture.sync);
        wait_requests(ROUTE_PATCH, 3);
        wait_synced();
        wait_answers(KUBE_VERB_PATCH, 200, 1);
        assert_patch(2, "Unknown", "NotYetEvaluated");
        assert_non_null(log_line(LOG_INFO, "Kubernetes API: writing the condition works again."));
        assert_int_equal(stat_count(KUBE_VERB_PATCH, 403), 2);
        server_check();
        (void) state;
}

/* 404 on the pod: it is gone; nothing is asked or written again. */
static void test_404_stops(void **state) {
        start(NULL);
        script(ROUTE_GET, (Answer){.kind = ANSWER_STATUS,
                                   .code = 404,
                                   .reason = "NotFound",
                                   .message = "pods \"p\" not found"});
        wait_requests(ROUTE_GET, 1);
        run_for(STOP_WINDOW);
        assert_status(false, true);
        assert_non_null(log_line(LOG_NOTICE, "Pod ns/p is gone (404 Not Found): the agent stops "
                                             "writing its condition."));
        assert_int_equal(update(true), 0);
        podsync_retry_now(fixture.sync);
        run_for(200 * MSEC);
        assert_int_equal(requests(ROUTE_GET), 1);
        assert_int_equal(requests(ROUTE_WATCH), 0);
        assert_int_equal(requests(ROUTE_PATCH), 0);
        assert_status(false, true);
        server_check();
        (void) state;
}

/* 409 (not the UID precondition) and 422: the condition is refused as it is;
 * not sent again until it changes. */
static void refused(long code, const char *reason, const char *message) {
        start(NULL);
        script(ROUTE_PATCH,
               (Answer){.kind = ANSWER_STATUS, .code = code, .reason = reason, .message = message});
        wait_requests(ROUTE_PATCH, 1);
        run_for(QUIET_WINDOW);
        assert_int_equal(requests(ROUTE_PATCH), 1);
        assert_int_equal(requests(ROUTE_GET), 1); /* the pod is not read again */
        assert_status(false, false);
        {
                char want[512];
                (void) snprintf(want, sizeof want,
                                "Kubernetes API: writing the condition: %ld %s (%s); not retrying "
                                "until the condition changes.",
                                code, reason, message);
                assert_string_equal(log_line(LOG_WARNING, "not retrying"), want);
        }
        assert_int_equal(stat_count(KUBE_VERB_PATCH, code), 1);

        /* another condition goes out at once */
        assert_int_equal(update(true), 0);
        wait_requests(ROUTE_PATCH, 2);
        assert_patch(1, "True", "ConfigCurrent");
        wait_synced();
        server_check();
}

static void test_409_refused(void **state) {
        refused(409, "Conflict",
                "Operation cannot be fulfilled on pods \"p\": the object has been modified; "
                "please apply your changes to the latest version and try again");
        (void) state;
}

static void test_422_refused(void **state) {
        refused(422, "Invalid",
                "Pod \"p\" is invalid: status.conditions[1].reason: Invalid value: \"x y\"");
        (void) state;
}

/* 409 for the UID precondition: the pod of that name is another pod now
 * (deleted and made again, and the watch has not told yet). */
static void test_409_uid_precondition_stops(void **state) {
        start(NULL);
        script(ROUTE_PATCH,
               (Answer){.kind = ANSWER_STATUS,
                        .code = 409,
                        .reason = "Conflict",
                        .message = "Operation cannot be fulfilled on pods \"p\": Precondition "
                                   "failed: UID in precondition: " POD_UID
                                   ", UID in object meta: 5e1d0c7a-new-pod"});
        wait_requests(ROUTE_PATCH, 1);
        run_for(STOP_WINDOW);
        assert_status(false, true);
        assert_non_null(log_line(LOG_NOTICE, "Pod ns/p was replaced (the UID precondition "
                                             "failed): the agent stops writing its condition."));
        assert_int_equal(log_count_visible(), 1);
        assert_int_equal(update(true), 0);
        podsync_retry_now(fixture.sync);
        run_for(200 * MSEC);
        assert_int_equal(requests(ROUTE_PATCH), 1);
        assert_int_equal(requests(ROUTE_GET), 1);
        assert_int_equal(stat_count(KUBE_VERB_PATCH, 409), 1);
        server_check();
        (void) state;
}

/* 429 with Retry-After: retried when the server said; without: a backoff. */
static void test_429_retry_after(void **state) {
        start(NULL);
        script(ROUTE_PATCH, (Answer){.kind = ANSWER_STATUS,
                                     .code = 429,
                                     .reason = "TooManyRequests",
                                     .message = "Too many requests, please try again later.",
                                     .retry_after = "0"});
        wait_requests(ROUTE_PATCH, 2);
        assert_at_once(gap(ROUTE_PATCH, 0, ROUTE_PATCH, 1));
        assert_string_equal(log_line(LOG_NOTICE, "429"),
                            "Kubernetes API: writing the condition: 429 Too Many Requests; "
                            "retrying in 0.0 s.");
        wait_synced();
        wait_answers(KUBE_VERB_PATCH, 200, 1);
        assert_non_null(log_line(LOG_INFO, "Kubernetes API: writing the condition works again."));
        assert_int_equal(stat_count(KUBE_VERB_PATCH, 429), 1);
        server_check();
        (void) state;
}

static void test_429_without_retry_after(void **state) {
        start(NULL);
        script(ROUTE_PATCH, (Answer){.kind = ANSWER_STATUS,
                                     .code = 429,
                                     .reason = "TooManyRequests",
                                     .message = "Too many requests, please try again later."});
        wait_requests(ROUTE_PATCH, 2);
        assert_after_backoff(gap(ROUTE_PATCH, 0, ROUTE_PATCH, 1));
        assert_non_null(log_line(LOG_NOTICE, "Kubernetes API: writing the condition: 429 Too "
                                             "Many Requests; retrying in "));
        assert_int_equal(log_count(LOG_NOTICE, "retrying in 0.0 s."), 0);
        wait_synced();
        wait_answers(KUBE_VERB_PATCH, 200, 1);
        assert_non_null(log_line(LOG_INFO, "Kubernetes API: writing the condition works again."));
        server_check();
        (void) state;
}

/* 5xx: a backoff, logged once, then "works again". */
static void test_5xx_backoff(void **state) {
        start(NULL);
        script(ROUTE_GET, (Answer){.kind = ANSWER_STATUS,
                                   .code = 503,
                                   .reason = "ServiceUnavailable",
                                   .message = "etcd is down"});
        wait_requests(ROUTE_GET, 2);
        assert_after_backoff(gap(ROUTE_GET, 0, ROUTE_GET, 1));
        assert_non_null(log_line(LOG_WARNING, "Kubernetes API: reading the pod: 503 "
                                              "ServiceUnavailable (etcd is down); retrying in "));
        wait_synced();
        assert_non_null(log_line(LOG_INFO, "Kubernetes API: reading the pod works again."));
        assert_int_equal(stat_count(KUBE_VERB_GET, 503), 1);
        assert_patch(0, "Unknown", "NotYetEvaluated");
        server_check();
        (void) state;
}

/* The server closes the connection in the middle of the pod: a transport
 * failure, retried after a backoff. */
static void test_get_dropped(void **state) {
        char want[128];

        start(NULL);
        script(ROUTE_GET, (Answer){.kind = ANSWER_DROP});
        wait_requests(ROUTE_GET, 2);
        assert_after_backoff(gap(ROUTE_GET, 0, ROUTE_GET, 1));
        (void) snprintf(want, sizeof want,
                        "Kubernetes API http://127.0.0.1:%u: reading the pod "
                        "failed: ",
                        (unsigned) server.port);
        assert_non_null(log_line(LOG_WARNING, want));
        assert_int_equal(stat_count(KUBE_VERB_GET, 0), 1);
        wait_synced();
        server_check();
        (void) state;
}

/* A watch stream that breaks (no last chunk): watched again after a backoff
 * from the same resourceVersion, without reading the pod. */
static void test_watch_dropped(void **state) {
        start(conditions_already_right());
        script(ROUTE_WATCH, (Answer){.kind = ANSWER_STREAM, .drop = true});
        wait_requests(ROUTE_WATCH, 2);
        assert_after_backoff(gap(ROUTE_WATCH, 0, ROUTE_WATCH, 1));
        assert_non_null(strstr(request(ROUTE_WATCH, 1).target, "&resourceVersion=10&"));
        assert_int_equal(requests(ROUTE_GET), 1);
        assert_non_null(log_line(LOG_WARNING, "watching the pod failed: "));
        assert_status(true, false);
        server_check();
        (void) state;
}

/* ---------------------------------------------------------------------------
 * Watch expiry */

#define EXPIRED_EVENT                                                                        \
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","         \
        "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: 10 " \
        "(25)\",\"reason\":\"Expired\",\"code\":410}}"

static void bump_rv(unsigned long rv) {
        pthread_mutex_lock(&server.lock);
        server.rv = rv;
        pthread_mutex_unlock(&server.lock);
}

/* An ERROR event with 410 in the stream: the pod is read again (after a
 * backoff: the watch lasted no time), and watched from its new version. */
static void test_watch_410_event(void **state) {
        start(conditions_already_right());
        script(ROUTE_WATCH, (Answer){.kind = ANSWER_STREAM, .events = {EXPIRED_EVENT}});
        wait_requests(ROUTE_WATCH, 1);
        bump_rv(25);
        wait_requests(ROUTE_GET, 2);
        assert_after_backoff(gap(ROUTE_WATCH, 0, ROUTE_GET, 1));
        wait_requests(ROUTE_WATCH, 2);
        assert_non_null(strstr(request(ROUTE_WATCH, 1).target, "&resourceVersion=25&"));
        assert_int_equal(log_count_visible(), 0);
        assert_int_equal(requests(ROUTE_PATCH), 0);
        assert_status(true, false);
        server_check();
        (void) state;
}

/* 410 Gone as the answer to the watch request itself: the same. */
static void test_watch_410_answer(void **state) {
        start(conditions_already_right());
        script(ROUTE_WATCH, (Answer){.kind = ANSWER_STATUS,
                                     .code = 410,
                                     .reason = "Expired",
                                     .message = "too old resource version: 10 (25)"});
        wait_requests(ROUTE_WATCH, 1);
        bump_rv(25);
        wait_requests(ROUTE_GET, 2);
        assert_after_backoff(gap(ROUTE_WATCH, 0, ROUTE_GET, 1));
        wait_requests(ROUTE_WATCH, 2);
        assert_non_null(strstr(request(ROUTE_WATCH, 1).target, "&resourceVersion=25&"));
        assert_int_equal(log_count_visible(), 0);
        assert_status(true, false);
        server_check();
        (void) state;
}

/* A watch the server ends after its timeoutSeconds: watched again at once
 * from the last bookmark's resourceVersion, without reading the pod. */
static void test_watch_ends(void **state) {
        start(conditions_already_right());
        script(ROUTE_WATCH,
               (Answer){.kind = ANSWER_STREAM,
                        .events = {"{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\","
                                   "\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
                                   "\"17\"}}}"},
                        /* longer than PODSYNC_BACKOFF_BASE_USEC: a watch that ran a while */
                        .hold_ms = PODSYNC_BACKOFF_BASE_USEC / MSEC + 100u});
        wait_requests(ROUTE_WATCH, 2);
        assert_at_once(gap(ROUTE_WATCH, 0, ROUTE_WATCH, 1));
        assert_non_null(strstr(request(ROUTE_WATCH, 1).target, "&resourceVersion=17&"));
        assert_int_equal(requests(ROUTE_GET), 1);
        assert_int_equal(requests(ROUTE_PATCH), 0);
        assert_int_equal(log_count_visible(), 0);
        assert_status(true, false);
        server_check();
        (void) state;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_teardown(test_sync_patches_once, stop),
                cmocka_unit_test_teardown(test_sync_already_right, stop),
                cmocka_unit_test_teardown(test_401_rereads_token, stop),
                cmocka_unit_test_teardown(test_403_rbac_hint, stop),
                cmocka_unit_test_teardown(test_404_stops, stop),
                cmocka_unit_test_teardown(test_409_refused, stop),
                cmocka_unit_test_teardown(test_409_uid_precondition_stops, stop),
                cmocka_unit_test_teardown(test_422_refused, stop),
                cmocka_unit_test_teardown(test_429_retry_after, stop),
                cmocka_unit_test_teardown(test_429_without_retry_after, stop),
                cmocka_unit_test_teardown(test_5xx_backoff, stop),
                cmocka_unit_test_teardown(test_get_dropped, stop),
                cmocka_unit_test_teardown(test_watch_dropped, stop),
                cmocka_unit_test_teardown(test_watch_410_event, stop),
                cmocka_unit_test_teardown(test_watch_410_answer, stop),
                cmocka_unit_test_teardown(test_watch_ends, stop),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
