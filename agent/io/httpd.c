/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP server (httpd.h) inside the caller's sd-event loop.
 *
 * libmicrohttpd runs with MHD_USE_EPOLL and no internal thread: MHD's epoll
 * descriptor is one sd-event I/O source and its timeout one timer, so every
 * callback runs on the loop's thread.
 *
 * Every answer but /metrics' is queued as soon as the headers are in, which
 * makes libmicrohttpd close the connection after it. /metrics is answered once
 * the request is complete, so HTTP/1.1 keep-alive works for a scraper; during
 * a hold (httpd_hold()) the complete request is suspended until the hold
 * ends (libmicrohttpd's suspend and resume).
 * Connection bounds: one connection more than HTTPD_MAX_CONNECTIONS_PER_IP
 * from an address is closed at once; past HTTPD_MAX_CONNECTIONS more wait in
 * the kernel's accept queue until a slot frees. HTTPD_REQUEST_DEADLINE_SEC
 * counts from the connection's start or its previous answer, so a client that
 * trickles its request, or keeps an idle connection, loses it then;
 * HTTPD_IDLE_TIMEOUT_SEC catches a client that does not read its answer. When
 * every slot but the reserved ones is taken, a newcomer takes the slot of the
 * connection that has waited longest for its request.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>
#include <sys/socket.h>

#include "httpd.h"
#include "log.h"
#include "process-stats.h"
#include "readiness.h"
#include "status-json.h"
#include "timeutil.h"

#ifndef MHD_HTTP_CONTENT_TOO_LARGE /* named so since libmicrohttpd 0.9.74 */
#define MHD_HTTP_CONTENT_TOO_LARGE 413
#endif

typedef struct Conn Conn;

/* A list of connections, oldest first. A connection is on one at most. */
typedef struct ConnList {
        Conn *head, *tail;
} ConnList;

/* One open connection, from libmicrohttpd's "started" notification to its
 * "closed" one (its socket context). */
struct Conn {
        Httpd *httpd;
        struct MHD_Connection *connection;
        int fd;
        bool counted;           /* counted in Httpd.others */
        bool evicted;           /* shut down for a newcomer, counted in Httpd.evicting */
        uint64_t deadline_usec; /* CLOCK_MONOTONIC: a complete request by then */
        ConnList *list;         /* Httpd's waiting or held list, or NULL */
        Conn *prev, *next;      /* on it */
};

struct Httpd {
        sd_event *event;
        sd_event_source *io;       /* libmicrohttpd's epoll descriptor */
        sd_event_source *timer;    /* libmicrohttpd's next timeout */
        sd_event_source *again;    /* runs libmicrohttpd once more on the loop's next turn */
        sd_event_source *deadline; /* the first request deadline of the waiting list */
        sd_event_source *hold_end; /* a hold's limit (HTTPD_HOLD_MAX_USEC) */
        struct MHD_Daemon *mhd;
        HttpdSource source;
        unsigned max_others; /* connections not from 127.0.0.1 or ::1 allowed at once */
        unsigned others;     /* such connections open now */
        unsigned evicting;   /* of those, shut down for a newcomer, not closed yet */
        bool closed_in_run;  /* a connection closed during the last MHD_run() */
        bool in_run;         /* inside MHD_run(): its callbacks are on the stack */
        bool stopping;       /* httpd_free() runs: the event sources are gone */
        bool deadline_armed; /* the deadline timer is on */
        uint64_t request_deadline_usec;
        uint64_t hold_max_usec;
        /* Connections without a complete request yet, earliest deadline
         * first: every deadline is "now" plus the same delay, so appending
         * keeps the order. */
        ConnList waiting;
        bool holding;         /* httpd_hold() */
        uint64_t hold_until;  /* CLOCK_MONOTONIC: its limit (armed once a scrape is held) */
        ConnList held;        /* the scrapes it holds, suspended */
        MetricsCache metrics; /* the Report's part of /metrics */
        uint16_t port;
        char address[HTTPD_LISTEN_STRLEN];
};

char *httpd_error_message(int error, const HttpdListen *listen) {
        char where[HTTPD_LISTEN_STRLEN];
        char *s = NULL;
        int n;

        httpd_listen_format(listen, where);
        switch (abs(error)) {
        case EADDRINUSE:
                /* prometheus-node-exporter's default port is 9100, and it runs on most nodes */
                n = asprintf(&s, "port %u is already in use%s: choose another with --listen",
                             (unsigned) listen->port,
                             listen->port == 9100 ? " (node_exporter owns 9100 on many nodes)"
                                                  : "");
                break;
        case EACCES:
                n = listen->port < 1024
                            ? asprintf(&s,
                                       "cannot listen on %s: ports below 1024 need "
                                       "CAP_NET_BIND_SERVICE: choose another with --listen",
                                       where)
                            : asprintf(&s, "cannot listen on %s: permission denied", where);
                break;
        case EADDRNOTAVAIL:
                n = asprintf(&s,
                             "cannot listen on %s: the address is not one of this host's: "
                             "choose another with --listen",
                             where);
                break;
        default:
                n = asprintf(&s, "cannot listen on %s: %s", where, strerror(abs(error)));
        }
        return n < 0 ? NULL : s;
}

/* ---------------------------------------------------------------------------
 * The request deadline: a connection must bring a complete request (line and
 * headers) within request_deadline_usec of opening, or of its previous
 * answer when kept alive. libmicrohttpd's own timeout restarts at every byte,
 * so on its own a client trickling a byte a second keeps its slot for ever. */

static void list_remove(Conn *conn) {
        ConnList *l = conn->list;

        if (!l)
                return;
        if (conn->prev)
                conn->prev->next = conn->next;
        else
                l->head = conn->next;
        if (conn->next)
                conn->next->prev = conn->prev;
        else
                l->tail = conn->prev;
        conn->prev = conn->next = NULL;
        conn->list = NULL;
}

static void list_append(ConnList *l, Conn *conn) {
        list_remove(conn);
        conn->prev = l->tail;
        if (l->tail)
                l->tail->next = conn;
        else
                l->head = conn;
        l->tail = conn;
        conn->list = l;
}

/* Arms the timer for the first deadline of the waiting list. It is not moved
 * when that connection's request comes in while others still wait (that would
 * reprogram the kernel's timer at every request): it fires, finds a later
 * deadline first, and is armed again for that one. When no connection waits
 * any more it is turned off, so an idle agent is never woken. */
static void arm_deadline(Httpd *h) {
        int r;

        if (h->stopping || h->deadline_armed || !h->waiting.head)
                return;
        r = sd_event_source_set_time(h->deadline, h->waiting.head->deadline_usec);
        if (r >= 0)
                r = sd_event_source_set_enabled(h->deadline, SD_EVENT_ONESHOT);
        if (r < 0) {
                log_debug_errno(r, "Cannot arm the HTTP request deadline timer: %m");
                return;
        }
        h->deadline_armed = true;
}

/* Takes conn off whichever list it is on. */
static void conn_unwait(Conn *conn) {
        Httpd *h = conn->httpd;
        bool was_waiting = conn->list == &h->waiting;

        list_remove(conn);
        /* Nothing left to wait for: the timer must not wake an idle agent. */
        if (was_waiting && !h->waiting.head && h->deadline_armed && !h->stopping) {
                (void) sd_event_source_set_enabled(h->deadline, SD_EVENT_OFF);
                h->deadline_armed = false;
        }
}

/* Starts the clock for conn's next request. */
static void conn_wait(Conn *conn) {
        Httpd *h = conn->httpd;

        conn->deadline_usec = now_usec(CLOCK_MONOTONIC) + h->request_deadline_usec;
        list_append(&h->waiting, conn);
        arm_deadline(h);
}

static Conn *conn_of(struct MHD_Connection *c) {
        const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

        return info ? info->socket_context : NULL;
}

/* ---------------------------------------------------------------------------
 * The hold (httpd_hold()): a complete /metrics request that comes in while
 * the owner works out a new Report is suspended (libmicrohttpd neither reads
 * from it nor times it out) and answered when the hold ends. */

/* From the request's handler, the one place libmicrohttpd allows a suspend.
 * The hold's limit is armed with its first scrape: a look that nobody
 * scrapes during costs no timer. Returns false when the hold is over. */
static bool conn_hold(Conn *conn) {
        Httpd *h = conn->httpd;
        int r = 0;

        if (now_usec(CLOCK_MONOTONIC) >= h->hold_until) {
                h->holding = false;
                return false;
        }
        if (!h->held.head) {
                r = sd_event_source_set_time(h->hold_end, h->hold_until);
                if (r >= 0)
                        r = sd_event_source_set_enabled(h->hold_end, SD_EVENT_ONESHOT);
        }
        if (r < 0) {
                /* a hold without its limit could last: answer at once instead */
                log_debug_errno(r, "Cannot arm the HTTP hold timer: %m");
                return false;
        }
        MHD_suspend_connection(conn->connection);
        list_append(&h->held, conn);
        return true;
}

/* Ends the hold: every held request is resumed, and answered on
 * libmicrohttpd's next run, which the caller must bring about: in this
 * mode libmicrohttpd has no eventfd of its own to wake the loop, and a
 * resumed connection makes its epoll descriptor no more readable. */
static void release(Httpd *h) {
        if (h->held.head && !h->stopping)
                (void) sd_event_source_set_enabled(h->hold_end, SD_EVENT_OFF);
        h->holding = false;
        while (h->held.head) {
                Conn *conn = h->held.head;

                list_remove(conn);
                MHD_resume_connection(conn->connection);
        }
}

/* ---------------------------------------------------------------------------
 * Requests */

typedef enum Route {
        ROUTE_METRICS,
        ROUTE_HEALTHZ,
        ROUTE_READYZ,
        ROUTE_STATUS,
        _ROUTE_MAX,
        _ROUTE_INVALID = -1,
} Route;

static const char *const route_paths[_ROUTE_MAX] = {
        [ROUTE_METRICS] = "/metrics",
        [ROUTE_HEALTHZ] = "/healthz",
        [ROUTE_READYZ] = "/readyz",
        [ROUTE_STATUS] = "/status",
};

#define CONTENT_TYPE_TEXT "text/plain; charset=utf-8"
#define CONTENT_TYPE_JSON "application/json"

static Route route_from_path(const char *url) {
        for (Route r = 0; r < _ROUTE_MAX; r++)
                if (streq(url, route_paths[r]))
                        return r;
        return _ROUTE_INVALID;
}

/* Queues a response. body is stolen when owned, else static. */
static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *content_type,
                               char *body, size_t len, bool owned, const char *allow) {
        struct MHD_Response *resp;
        enum MHD_Result ret;

        resp = MHD_create_response_from_buffer(
                len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
        if (!resp) {
                if (owned)
                        free(body);
                return MHD_NO;
        }
        if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type) != MHD_YES ||
            MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store") != MHD_YES ||
            (allow && MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow) != MHD_YES)) {
                MHD_destroy_response(resp);
                return MHD_NO;
        }
        ret = MHD_queue_response(c, status, resp);
        MHD_destroy_response(resp);
        return ret;
}

static enum MHD_Result respond_text(struct MHD_Connection *c, unsigned status, const char *text) {
        /* cast: MHD_RESPMEM_PERSISTENT never writes or frees the buffer */
        return respond(c, status, CONTENT_TYPE_TEXT, (char *) (uintptr_t) text, strlen(text), false,
                       NULL);
}

static enum MHD_Result respond_strbuf(struct MHD_Connection *c, unsigned status,
                                      const char *content_type, StrBuf *b) {
        size_t len = b->len;
        char *body = strbuf_steal(b);

        if (!body)
                return MHD_NO;
        return respond(c, status, content_type, body, len, true, NULL);
}

static const Report *current_report(Httpd *h) {
        return h->source.get_report(h->source.userdata);
}

/* Changes whenever the manager may have published a new Report: it counts
 * every evaluation before it publishes the evaluation's Report. */
static uint64_t report_generation(const MetricsCounters *c) {
        uint64_t n = 0;

        for (EvalTrigger t = 0; t < _TRIGGER_MAX; t++)
                n += c->evaluations[t];
        return n;
}

static void current_counters(Httpd *h, MetricsCounters *ret) {
        MetricsCounters c = {};
        int r;

        if (h->source.get_counters)
                h->source.get_counters(h->source.userdata, &c);
        r = process_stats_read(&c.process);
        c.has_process = r >= 0;
        if (r < 0)
                log_debug_errno(r, "Cannot read process statistics, leaving them out: %m");
        *ret = c;
}

static enum MHD_Result serve_metrics(Httpd *h, struct MHD_Connection *c) {
        StrBuf b = STRBUF_INIT(METRICS_MAX_BYTES);
        MetricsCounters counters;
        int r;

        current_counters(h, &counters);
        r = metrics_render_cached(&b, &h->metrics, current_report(h), report_generation(&counters),
                                  &counters);
        if (r < 0) {
                strbuf_done(&b);
                log_debug_errno(r, "Cannot render metrics: %m");
                return respond_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                                    "cannot render the metrics\n");
        }
        return respond_strbuf(c, MHD_HTTP_OK, METRICS_CONTENT_TYPE, &b);
}

static enum MHD_Result serve_status(Httpd *h, struct MHD_Connection *c) {
        StrBuf b = STRBUF_INIT(METRICS_MAX_BYTES);
        MetricsCounters counters = {};
        int r;

        if (h->source.get_counters)
                h->source.get_counters(h->source.userdata, &counters);
        r = status_json_render(&b, current_report(h), &counters);
        if (r < 0) {
                strbuf_done(&b);
                log_debug_errno(r, "Cannot render the status: %m");
                return respond_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                                    "cannot render the status\n");
        }
        return respond_strbuf(c, MHD_HTTP_OK, CONTENT_TYPE_JSON, &b);
}

static enum MHD_Result serve_readyz(Httpd *h, struct MHD_Connection *c) {
        StrBuf b = STRBUF_INIT(READINESS_MAX_REASON_BYTES + 1);
        const char *require;
        bool require_current = false, ready;

        require = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "require");
        if (require) {
                if (!streq(require, "current"))
                        return respond_text(c, MHD_HTTP_BAD_REQUEST,
                                            "unknown value for require: the only one is "
                                            "\"current\"\n");
                require_current = true;
        }

        if (h->source.is_ready)
                ready = h->source.is_ready(h->source.userdata, require_current, &b);
        else
                ready = readiness_is_ready(current_report(h), require_current, &b);
        /* one line, whatever the callback wrote */
        for (size_t i = 0; i < b.len; i++)
                if (b.data[i] == '\n' || b.data[i] == '\r')
                        b.data[i] = ' ';
        if (b.len == 0)
                (void) strbuf_puts(&b, ready ? "ready" : "not ready");
        if (strbuf_putc(&b, '\n') < 0 && b.len > 0)
                b.data[b.len - 1] = '\n'; /* full: end the line on the last byte */
        return respond_strbuf(c, ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE,
                              CONTENT_TYPE_TEXT, &b);
}

/* libmicrohttpd calls this once the request line and headers are in, and
 * again once the request is complete (no body: at once) while the first call
 * queued no answer. An answer queued on the first call closes the connection
 * afterwards (libmicrohttpd cannot know what the rest of the request would
 * have been), so a body is never read: every refusal and every probe is
 * answered that way. /metrics is answered on the second call, so that a
 * scraper may keep its connection for the next scrape (HTTP/1.1 keep-alive,
 * as Prometheus does): a TCP connection per scrape cost more than the scrape. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls) {
        static char answer_when_complete; /* *req_cls of a /metrics request */
        static char answer_when_released; /* *req_cls of a held one */
        Httpd *h = cls;
        const char *length, *encoding;
        Conn *conn;
        Route route;

        if (*req_cls == &answer_when_released)
                return serve_metrics(h, c);
        if (*req_cls == &answer_when_complete) {
                if (*upload_data_size > 0)
                        return MHD_NO; /* a body after all: close */
                if (h->holding && (conn = conn_of(c)) && conn_hold(conn)) {
                        /* held once at most: resumed into the next hold, it is answered */
                        *req_cls = &answer_when_released;
                        return MHD_YES;
                }
                return serve_metrics(h, c);
        }

        /* the request is in: its deadline no longer applies */
        conn = conn_of(c);
        if (conn)
                conn_unwait(conn);

        route = route_from_path(url);
        if (route < 0)
                return respond_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
        if (!streq(method, MHD_HTTP_METHOD_GET) && !streq(method, MHD_HTTP_METHOD_HEAD))
                return respond(c, MHD_HTTP_METHOD_NOT_ALLOWED, CONTENT_TYPE_TEXT,
                               (char *) (uintptr_t) "method not allowed\n",
                               strlen("method not allowed\n"), false, "GET, HEAD");

        length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        encoding =
                MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
        if (encoding || (length && !streq(length, "0")) || *upload_data_size > 0)
                return respond_text(c, MHD_HTTP_CONTENT_TOO_LARGE,
                                    "request bodies are not accepted\n");

        switch (route) {
        case ROUTE_METRICS:
                *req_cls = &answer_when_complete;
                return MHD_YES;
        case ROUTE_HEALTHZ:
                /* answering at all proves the event loop turns */
                return respond_text(c, MHD_HTTP_OK, "ok\n");
        case ROUTE_READYZ:
                return serve_readyz(h, c);
        case ROUTE_STATUS:
                return serve_status(h, c);
        default:
                return MHD_NO;
        }
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) _printf_(2, 0);
static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
        char buf[256];
        size_t n;

        (void) vsnprintf(buf, sizeof buf, fmt, ap);
        n = strlen(buf);
        while (n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';
        /* connection-level trouble (a client that sent garbage) is not ours to shout about */
        log_debug("libmicrohttpd: %s", buf);
}

/* ---------------------------------------------------------------------------
 * sd-event glue */

static void rearm_timer(Httpd *h) {
        MHD_UNSIGNED_LONG_LONG ms;
        int r;

        if (MHD_get_timeout(h->mhd, &ms) != MHD_YES) {
                (void) sd_event_source_set_enabled(h->timer, SD_EVENT_OFF);
                return;
        }
        if (ms > UINT64_MAX / 1000u)
                ms = UINT64_MAX / 1000u;
        r = sd_event_source_set_time_relative(h->timer, (uint64_t) ms * 1000u);
        if (r >= 0)
                r = sd_event_source_set_enabled(h->timer, SD_EVENT_ONESHOT);
        if (r < 0)
                log_debug_errno(r, "Cannot arm the HTTP timer: %m");
}

/* A defer source, not a timer due now: no kernel timer to set and reset. */
static bool run_again(Httpd *h) {
        int r = sd_event_source_set_enabled(h->again, SD_EVENT_ONESHOT);

        if (r < 0)
                log_debug_errno(r, "Cannot run libmicrohttpd again: %m");
        return r >= 0;
}

static void run_mhd(Httpd *h) {
        h->closed_in_run = false;
        h->in_run = true;
        if (MHD_run(h->mhd) != MHD_YES)
                log_debug("libmicrohttpd: MHD_run() failed");
        h->in_run = false;
        /* At its connection limit libmicrohttpd takes the listening socket out
         * of its epoll set, and puts it back only at the start of a later
         * MHD_run(). When the connections that filled the limit all closed
         * within this run, nothing would wake the loop again (no connection,
         * no timeout), and the agent would never accept again: run once more
         * on the next turn. */
        if (!h->closed_in_run || !run_again(h))
                rearm_timer(h);
}

static bool address_is_local(const struct sockaddr *sa) {
        static const struct in6_addr v6_loopback = IN6ADDR_LOOPBACK_INIT;

        if (!sa)
                return false;
        if (sa->sa_family == AF_INET)
                return ((const struct sockaddr_in *) (const void *) sa)->sin_addr.s_addr ==
                       htonl(INADDR_LOOPBACK);
        if (sa->sa_family == AF_INET6) {
                const struct in6_addr *a =
                        &((const struct sockaddr_in6 *) (const void *) sa)->sin6_addr;
                /* ::1, or 127.0.0.1 mapped into IPv6 on a dual-stack socket */
                return memcmp(a, &v6_loopback, sizeof *a) == 0 ||
                       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127 && a->s6_addr[13] == 0 &&
                        a->s6_addr[14] == 0 && a->s6_addr[15] == 1);
        }
        return false;
}

static int connection_fd(struct MHD_Connection *c) {
        const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

        return info ? info->connect_fd : -EBADF;
}

/* The client's address for a debug line: "192.0.2.7", "2001:db8::7" or "?". */
static void client_address(struct MHD_Connection *c, char buf[static INET6_ADDRSTRLEN]) {
        const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        const struct sockaddr *sa = info ? info->client_addr : NULL;

        strcpy(buf, "?");
        if (sa && sa->sa_family == AF_INET)
                (void) inet_ntop(AF_INET,
                                 &((const struct sockaddr_in *) (const void *) sa)->sin_addr, buf,
                                 INET6_ADDRSTRLEN);
        else if (sa && sa->sa_family == AF_INET6)
                (void) inet_ntop(AF_INET6,
                                 &((const struct sockaddr_in6 *) (const void *) sa)->sin6_addr, buf,
                                 INET6_ADDRSTRLEN);
}

/* Frees the slot of the non-local connection that has waited longest for its
 * request, for a newcomer when every non-local slot is taken. A scrape's or
 * probe's request comes whole right after its connection, so the connection
 * that has waited longest belongs to a client that trickles or idles: without
 * this, enough such clients from enough addresses (HTTPD_MAX_CONNECTIONS_PER_IP
 * each) would have every other address refused, deadline after deadline.
 * At most HTTPD_MAX_EVICTING at a time, so the slots the evicted connections
 * hold until libmicrohttpd closes them are never the loopback-reserved ones.
 * Returns true when one was shut down. */
static bool evict_oldest_waiting(Httpd *h) {
        if (h->evicting >= HTTPD_MAX_EVICTING)
                return false;
        for (Conn *conn = h->waiting.head; conn; conn = conn->next) {
                char a[INET6_ADDRSTRLEN];

                if (!conn->counted || conn->fd < 0)
                        continue;
                client_address(conn->connection, a);
                log_debug("HTTP: every slot is taken: closing the connection from %s that has "
                          "waited longest for its request.",
                          a);
                (void) shutdown(conn->fd, SHUT_RDWR);
                conn_unwait(conn);
                conn->evicted = true;
                h->evicting++;
                return true;
        }
        return false;
}

/* Keeps HTTPD_RESERVED_LOCAL_CONNECTIONS slots for the readiness probe. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
        Httpd *h = cls;

        if (address_is_local(addr) || h->others < h->max_others || evict_oldest_waiting(h))
                return MHD_YES;
        log_debug("HTTP: refusing a connection: %u non-local connections are open.", h->others);
        return MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
        Httpd *h = cls;
        Conn *conn;

        if (code == MHD_CONNECTION_NOTIFY_STARTED) {
                const union MHD_ConnectionInfo *info =
                        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

                conn = calloc(1, sizeof *conn);
                if (!conn) {
                        /* untracked, it would escape the deadline: end it now
                         * (libmicrohttpd closes it on its next read) */
                        int fd = connection_fd(c);

                        if (fd >= 0)
                                (void) shutdown(fd, SHUT_RDWR);
                        log_debug("HTTP: out of memory: closing a new connection.");
                        return;
                }
                *conn = (Conn){.httpd = h, .connection = c, .fd = connection_fd(c)};
                if (!info || !address_is_local(info->client_addr)) {
                        h->others++;
                        conn->counted = true;
                }
                *socket_context = conn;
                conn_wait(conn);
        } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
                conn = *socket_context;
                if (conn) {
                        if (conn->counted && h->others > 0)
                                h->others--;
                        if (conn->evicted && h->evicting > 0)
                                h->evicting--;
                        conn_unwait(conn);
                        free(conn);
                }
                *socket_context = NULL;
                h->closed_in_run = true;
        }
}

/* A request was answered (or given up). A connection kept alive waits for
 * its next request, under a new deadline. */
static void on_request_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                                 enum MHD_RequestTerminationCode toe) {
        Conn *conn = conn_of(c);

        *req_cls = NULL;
        if (conn && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
                conn_wait(conn);
}

/* Ends every connection past its request deadline. shutdown(2), not close:
 * the descriptor stays libmicrohttpd's, which sees the end on its next read
 * and closes the connection (its "closed" notification frees ours). */
static void expire_waiting(Httpd *h) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        bool any = false;

        while (h->waiting.head && h->waiting.head->deadline_usec <= now) {
                Conn *conn = h->waiting.head;
                char a[INET6_ADDRSTRLEN];

                client_address(conn->connection, a);
                /* a client's failure, not ours: debug only, as libmicrohttpd's own */
                log_debug("HTTP: closing a connection from %s: no complete request within %" PRIu64
                          " ms.",
                          a, h->request_deadline_usec / 1000u);
                if (conn->fd >= 0)
                        (void) shutdown(conn->fd, SHUT_RDWR);
                conn_unwait(conn);
                any = true;
        }
        if (any)
                run_mhd(h);
        arm_deadline(h);
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        Httpd *h = userdata;

        h->deadline_armed = false; /* a oneshot source is off once it fired */
        expire_waiting(h);
        return 0;
}

static int on_hold_end(sd_event_source *s, uint64_t usec, void *userdata) {
        Httpd *h = userdata;

        log_debug("HTTP: no new state within %" PRIu64 " ms: answering the scrapes held for it.",
                  h->hold_max_usec / 1000u);
        h->holding = false; /* a oneshot source is off once it fired */
        release(h);
        run_mhd(h);
        return 0;
}

static int on_mhd_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        run_mhd(userdata);
        return 0;
}

static int on_mhd_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        run_mhd(userdata);
        return 0;
}

static int on_again(sd_event_source *s, void *userdata) {
        run_mhd(userdata);
        return 0;
}

void httpd_hold(Httpd *h) {
        if (!h || h->stopping || h->holding)
                return;
        h->hold_until = now_usec(CLOCK_MONOTONIC) + h->hold_max_usec;
        h->holding = true;
}

void httpd_answer_waiting(Httpd *h) {
        if (!h || h->stopping)
                return;
        release(h);
        if (!h->in_run)
                run_mhd(h);
        else
                /* inside MHD_run(): the held requests are answered on the next turn */
                (void) run_again(h);
}

void httpd_release(Httpd *h) {
        if (!h || !h->holding)
                return;
        if (h->held.head)
                httpd_answer_waiting(h);
        h->holding = false;
}

/* ---------------------------------------------------------------------------
 * Start and stop */

static int bind_listen(int family, const struct sockaddr *sa, socklen_t sa_len, int v6only,
                       int *ret_fd) {
        _cleanup_close_ int fd = -EBADF;
        int one = 1;

        fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_TCP);
        if (fd < 0)
                return negative_errno();
        /* a restarted agent must not wait for the old connections' TIME_WAIT;
         * on Linux this never lets two listeners share a port */
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
                return negative_errno();
        if (family == AF_INET6 &&
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only) < 0)
                return negative_errno();
        if (bind(fd, sa, sa_len) < 0)
                return negative_errno();
        if (listen(fd, HTTPD_LISTEN_BACKLOG) < 0)
                return negative_errno();
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int open_listener(const HttpdListen *l, int *ret_fd, HttpdListen *ret_bound) {
        HttpdListen b = *l;
        union {
                struct sockaddr sa;
                struct sockaddr_in in;
                struct sockaddr_in6 in6;
        } got = {};
        socklen_t got_len = sizeof got;
        int fd = -EBADF, r;

        if (l->family == AF_INET6)
                /* ":PORT" is dual-stack; an explicit IPv6 address is IPv6 only */
                r = bind_listen(AF_INET6, &l->addr.sa, sizeof l->addr.in6, l->any ? 0 : 1, &fd);
        else
                r = bind_listen(AF_INET, &l->addr.sa, sizeof l->addr.in, 0, &fd);

        if (l->any && (r == -EAFNOSUPPORT || r == -EADDRNOTAVAIL)) {
                /* a kernel without IPv6 (ipv6.disable=1): all IPv4 addresses instead */
                b.family = AF_INET;
                b.addr = (__typeof__(b.addr)){};
                b.addr.in.sin_family = AF_INET;
                b.addr.in.sin_addr.s_addr = htonl(INADDR_ANY);
                b.addr.in.sin_port = htons(l->port);
                r = bind_listen(AF_INET, &b.addr.sa, sizeof b.addr.in, 0, &fd);
        }
        if (r < 0)
                return r;

        if (getsockname(fd, &got.sa, &got_len) < 0) {
                r = negative_errno();
                (void) close(fd);
                return r;
        }
        if (got.sa.sa_family == AF_INET6)
                b.port = ntohs(got.in6.sin6_port);
        else
                b.port = ntohs(got.in.sin_port);
        if (b.family == AF_INET6)
                b.addr.in6.sin6_port = htons(b.port);
        else
                b.addr.in.sin_port = htons(b.port);
        *ret_fd = fd;
        *ret_bound = b;
        return 0;
}

Httpd *httpd_free(Httpd *h) {
        if (!h)
                return NULL;
        h->stopping = true;
        sd_event_source_disable_unref(h->io);
        sd_event_source_disable_unref(h->timer);
        sd_event_source_disable_unref(h->again);
        sd_event_source_disable_unref(h->deadline);
        sd_event_source_disable_unref(h->hold_end);
        /* libmicrohttpd must not be stopped with a connection suspended;
         * a scrape held for a look that will not end now gets what is known */
        if (h->held.head) {
                release(h);
                if (h->mhd && !h->in_run)
                        (void) MHD_run(h->mhd);
        }
        /* closes the listening socket and every connection, each with its
         * "closed" notification, which frees our part */
        if (h->mhd)
                MHD_stop_daemon(h->mhd);
        metrics_cache_done(&h->metrics);
        sd_event_unref(h->event);
        free(h);
        return NULL;
}

static int fail(int r, const HttpdListen *l, char **ret_error) {
        if (ret_error)
                *ret_error = httpd_error_message(r, l);
        return r;
}

int httpd_start(sd_event *e, const HttpdListen *listen, const HttpdLimits *limits,
                const HttpdSource *source, Httpd **ret, char **ret_error) {
        _cleanup_(httpd_freep) Httpd *h = NULL;
        HttpdLimits lim = limits ? *limits : HTTPD_LIMITS_DEFAULT;
        const union MHD_DaemonInfo *info;
        HttpdListen bound;
        int fd, r;

        if (!e || !listen || !source || !source->get_report || !ret)
                return -EINVAL;

        h = calloc(1, sizeof *h);
        if (!h)
                return fail(-ENOMEM, listen, ret_error);
        h->event = sd_event_ref(e);
        h->source = *source;
        h->metrics = METRICS_CACHE_INIT;
        h->request_deadline_usec =
                (uint64_t) (lim.request_deadline_sec > 0 ? lim.request_deadline_sec
                                                         : HTTPD_REQUEST_DEADLINE_SEC) *
                1000000u;
        h->hold_max_usec = lim.hold_max_usec > 0 ? lim.hold_max_usec : HTTPD_HOLD_MAX_USEC;
        /* before libmicrohttpd: its first connection arms it */
        r = sd_event_add_time(e, &h->deadline, CLOCK_MONOTONIC, 0, HTTPD_DEADLINE_ACCURACY_USEC,
                              on_deadline, h);
        if (r >= 0)
                r = sd_event_source_set_enabled(h->deadline, SD_EVENT_OFF);
        if (r < 0)
                return fail(r, listen, ret_error);
        (void) sd_event_source_set_description(h->deadline, "httpd-deadline");
        r = sd_event_add_time(e, &h->hold_end, CLOCK_MONOTONIC, 0, HTTPD_HOLD_ACCURACY_USEC,
                              on_hold_end, h);
        if (r >= 0)
                r = sd_event_source_set_enabled(h->hold_end, SD_EVENT_OFF);
        if (r < 0)
                return fail(r, listen, ret_error);
        (void) sd_event_source_set_description(h->hold_end, "httpd-hold");

        r = open_listener(listen, &fd, &bound);
        if (r < 0)
                return fail(r, listen, ret_error);
        h->port = bound.port;
        bound.any = false; /* show what was bound: "[::]:PORT" or "0.0.0.0:PORT" */
        httpd_listen_format(&bound, h->address);

        /* No internal thread: MHD_USE_EPOLL alone is the "external" epoll mode,
         * driven by MHD_run() from our loop. The logger must come first to
         * catch messages from the start itself. */
        h->max_others = lim.max_connections > HTTPD_RESERVED_LOCAL_CONNECTIONS
                                ? lim.max_connections - HTTPD_RESERVED_LOCAL_CONNECTIONS
                                : lim.max_connections;
        h->mhd = MHD_start_daemon(
                MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, on_accept, h,
                on_request, h, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h,
                MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_NOTIFY_COMPLETED,
                on_request_completed, h, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
                lim.max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT, lim.max_connections_per_ip,
                MHD_OPTION_CONNECTION_TIMEOUT, lim.idle_timeout_sec,
                MHD_OPTION_CONNECTION_MEMORY_LIMIT, lim.connection_memory_bytes, MHD_OPTION_END);
        if (!h->mhd)
                /* fd is not closed here: libmicrohttpd closes a socket it was given on
                 * some failure paths (after its flag checks, which our fixed flags pass),
                 * and a descriptor closed twice may be someone else's by then. */
                return fail(-EIO, listen, ret_error);

        info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
        if (!info)
                return fail(-EIO, listen, ret_error);
        r = sd_event_add_io(e, &h->io, info->epoll_fd, EPOLLIN, on_mhd_io, h);
        if (r < 0)
                return fail(r, listen, ret_error);
        (void) sd_event_source_set_description(h->io, "httpd");
        r = sd_event_add_time_relative(e, &h->timer, CLOCK_MONOTONIC, 0, 1000, on_mhd_timer, h);
        if (r < 0)
                return fail(r, listen, ret_error);
        (void) sd_event_source_set_description(h->timer, "httpd-timer");
        r = sd_event_add_defer(e, &h->again, on_again, h);
        if (r < 0)
                return fail(r, listen, ret_error);
        (void) sd_event_source_set_enabled(h->again, SD_EVENT_OFF);
        /* A defer source stays pending with the turn it was made on, so at
         * the priority of the rest it would come before all of them, turn
         * after turn, while every run closes a connection (a flood of
         * scrapes): one step lower, it waits for what is ready. */
        (void) sd_event_source_set_priority(h->again, SD_EVENT_PRIORITY_NORMAL + 1);
        (void) sd_event_source_set_description(h->again, "httpd-again");
        rearm_timer(h);

        *ret = TAKE_PTR(h);
        return 0;
}

uint16_t httpd_get_port(const Httpd *h) {
        return h->port;
}

const char *httpd_get_address(const Httpd *h) {
        return h->address;
}
