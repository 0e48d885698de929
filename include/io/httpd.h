/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP server: libmicrohttpd driven by the caller's sd-event loop on the
 * caller's thread. Every response is rendered inside the loop from what
 * HttpdSource returns at that moment, so it is always one consistent Report,
 * with no locking.
 *
 *   GET|HEAD /metrics  Prometheus text format 0.0.4 (METRICS_CONTENT_TYPE)
 *   GET|HEAD /healthz  200 "ok": the loop is alive
 *   GET|HEAD /readyz   200 when ready, else 503; the body is one line saying
 *                      why (readiness.h). "?require=current": also 503 unless
 *                      the pod is current
 *   GET|HEAD /status   application/json: status_json_render()
 *   other paths 404; other methods 405 with "Allow: GET, HEAD"; a request
 *   announcing a body (Content-Length, Transfer-Encoding) 413, body unread;
 *   oversized headers 431 and request lines 414 (within
 *   HTTPD_CONNECTION_MEMORY_BYTES); malformed requests 400 or a close.
 *
 * Every answer but /metrics' closes the connection (a probe is one request);
 * /metrics keeps it for the scraper's next scrape unless it asked
 * "Connection: close". Bounds: HTTPD_MAX_CONNECTIONS_PER_IP per client
 * address, HTTPD_MAX_CONNECTIONS in all, HTTPD_REQUEST_DEADLINE_SEC for a
 * complete request line and headers, HTTPD_IDLE_TIMEOUT_SEC without progress,
 * and eviction of the longest-waiting connection when slots run out
 * (HTTPD_MAX_EVICTING); see the constants below.
 *
 * The server never logs above debug: errors are returned, with a sentence
 * for the caller to log.
 */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <systemd/sd-event.h>

#include "httpd-listen.h"
#include "metrics.h"
#include "state.h"
#include "strbuf.h"

/* Concurrent connections in all; more wait in the kernel's accept queue.
 * Each may take a pool of HTTPD_CONNECTION_MEMORY_BYTES: 4 MiB in all. */
#define HTTPD_MAX_CONNECTIONS            256u
/* Of HTTPD_MAX_CONNECTIONS, this many only 127.0.0.1 and ::1 may use: the
 * exec readiness probe (--check) connects from there, and must be answered
 * even while other clients hold every other slot. */
#define HTTPD_RESERVED_LOCAL_CONNECTIONS 4u
/* When every slot but the reserved ones is taken, a newcomer from another
 * address takes the slot of the connection that has waited longest for its
 * request (shut down), at most this many at a time: they hold their slots
 * until libmicrohttpd closes them, and must leave reserved ones free. */
#define HTTPD_MAX_EVICTING               2u
/* Concurrent connections from one address; more are closed at once. */
#define HTTPD_MAX_CONNECTIONS_PER_IP     8u
/* A connection must bring a complete request (line and headers) this long
 * after it opened, or after its previous answer when kept alive, or it is
 * shut down. A scrape or probe request is one segment; this only ends
 * clients that trickle (libmicrohttpd's idle timeout restarts at every byte)
 * and idle keep-alive connections, so that slots come back. */
#define HTTPD_REQUEST_DEADLINE_SEC       3u
/* How late the deadline may be enforced (the timer's accuracy). */
#define HTTPD_DEADLINE_ACCURACY_USEC     (100u * 1000u)
/* A connection that makes no progress this long is closed (a client that
 * does not read its answer). */
#define HTTPD_IDLE_TIMEOUT_SEC           3u
/* libmicrohttpd's per-connection memory pool: the request line and headers
 * must fit in about half of it, or the request is refused. */
#define HTTPD_CONNECTION_MEMORY_BYTES    (16u * 1024u)
/* The longest a scrape waits for a new state being worked out (httpd_hold()):
 * a look at both sides takes well under a millisecond on a responsive file
 * system; a slower one does not hold scrapes back for longer than this. */
#define HTTPD_HOLD_MAX_USEC              (50u * 1000u)
#define HTTPD_HOLD_ACCURACY_USEC         1000u
/* listen(2) backlog: the kernel caps it at net.core.somaxconn. A full
 * backlog drops a probe's SYN, which is resent only after a second. */
#define HTTPD_LISTEN_BACKLOG             SOMAXCONN

/* Resource bounds; tests shrink them. */
typedef struct HttpdLimits {
        unsigned max_connections;
        unsigned max_connections_per_ip;
        unsigned idle_timeout_sec;
        size_t connection_memory_bytes;
        unsigned request_deadline_sec; /* 0: HTTPD_REQUEST_DEADLINE_SEC */
        uint64_t hold_max_usec;        /* 0: HTTPD_HOLD_MAX_USEC */
} HttpdLimits;

#define HTTPD_LIMITS_DEFAULT                                                     \
        ((HttpdLimits){.max_connections = HTTPD_MAX_CONNECTIONS,                 \
                       .max_connections_per_ip = HTTPD_MAX_CONNECTIONS_PER_IP,   \
                       .idle_timeout_sec = HTTPD_IDLE_TIMEOUT_SEC,               \
                       .connection_memory_bytes = HTTPD_CONNECTION_MEMORY_BYTES, \
                       .request_deadline_sec = HTTPD_REQUEST_DEADLINE_SEC,       \
                       .hold_max_usec = HTTPD_HOLD_MAX_USEC})

/* Where the server gets what it serves: called from the event loop, during a
 * request, never kept. The server has no other tie to the manager. */
typedef struct HttpdSource {
        /* Required. The current Report (borrowed; NULL before the first evaluation). */
        const Report *(*get_report)(void *userdata);
        /* Optional. Fills *ret with the agent's counters; the server adds the
         * process statistics itself (process_stats_read()). NULL: no agent metrics. */
        void (*get_counters)(void *userdata, MetricsCounters *ret);
        /* Optional. Decides readiness: appends one line (no newline) saying
         * why to reason and returns true when ready. NULL: readiness_is_ready()
         * on get_report(). */
        bool (*is_ready)(void *userdata, bool require_current, StrBuf *reason);
        void *userdata;
} HttpdSource;

typedef struct Httpd Httpd;

/* Binds the address (SO_REUSEADDR, close-on-exec, non-blocking), starts
 * libmicrohttpd on it and attaches it to e. limits may be NULL (defaults).
 * source is copied; its userdata must outlive the server.
 * On failure, when ret_error is not NULL, *ret_error is a new sentence for
 * the caller to log, e.g. for -EADDRINUSE on 9100: "port 9100 is already in use
 * (node_exporter owns 9100 on many nodes): choose another with --listen".
 * Returns 0 with *ret new, -EADDRINUSE, -EADDRNOTAVAIL, -EACCES, other -errno. */
int httpd_start(sd_event *e, const HttpdListen *listen, const HttpdLimits *limits,
                const HttpdSource *source, Httpd **ret, char **ret_error);

/* Answers, now, the requests that are ready (their bytes arrived): the owner
 * calls it right after it publishes a new Report, so a scrape that arrived
 * during the evaluation gets the new state before the loop turns to anything
 * else (the pod condition's PATCH). Costs one epoll_wait() when nothing is
 * ready, and ends a hold (httpd_hold()). From inside the server's own
 * callbacks it ends the hold and answers on the loop's next turn. Nothing
 * with NULL. */
void httpd_answer_waiting(Httpd *h);

/* Holds scrapes: from now until httpd_answer_waiting() or httpd_release(),
 * HTTPD_HOLD_MAX_USEC at most (HttpdLimits), a complete GET or HEAD /metrics request waits
 * for its answer. The owner calls it when it starts working out a new Report
 * because something changed, so that a scrape meanwhile shows the new state,
 * not the one about to be replaced. Other paths are never held. Nothing when
 * already holding (the first call's limit stands), or with NULL. */
void httpd_hold(Httpd *h);
/* Ends a hold that brought no new Report (the look failed): the held scrapes
 * get the current one now. Nothing when not holding, or with NULL. */
void httpd_release(Httpd *h);

/* Closes every connection and the listening socket, detaches from the loop.
 * Scrapes held (httpd_hold()) are answered first, with the current Report. */
Httpd *httpd_free(Httpd *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(Httpd *, httpd_free);

/* The port actually bound (the kernel's choice for port 0). */
uint16_t httpd_get_port(const Httpd *h);
/* The address actually bound, as httpd_listen_format() writes it (a dual-stack
 * ":PORT" shows as "[::]:PORT", the IPv4 fallback as "0.0.0.0:PORT"). */
const char *httpd_get_address(const Httpd *h);

/* The sentence httpd_start() gives for an error (a new string, NULL on -ENOMEM). */
char *httpd_error_message(int error, const HttpdListen *listen);
