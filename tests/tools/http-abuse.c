/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http-abuse: hostile HTTP clients for the daemon's hardening tests, all on
 * loopback. While a scenario runs, a second thread asks GET /healthz every
 * 100 ms from its own source address (kubelet's liveness probe does not share
 * the attacker's address) and records how long each answer took.
 *
 * Usage: http-abuse --port PORT [--source ADDR] [--probe-source ADDR]
 *                   [--deadline SECONDS] [--reconnect] SCENARIO
 *   --source ADDR           the one source address when SOURCES is 1
 *                           (default 127.0.0.1)
 *   --probe-source ADDR     the probe's (default 127.0.0.254)
 *   --deadline SECONDS      how long concurrent and garbage wait for every
 *                           connection to end (default 25)
 *   --reconnect             slowloris opens a new connection for each one the
 *                           server closed, as an attacker would
 *   concurrent N [SOURCES [ROUNDS]]
 *                           N connections opened at once, spread over SOURCES
 *                           loopback addresses (127.0.1.1, 127.0.1.2, ...;
 *                           default 1: all from --source), each sending
 *                           GET /healthz and reading to the end; again, up to
 *                           ROUNDS times (default 1), while every connection
 *                           of the round before ended: answered, or closed by
 *                           the server (refused past its limits), none left
 *                           hanging until the deadline
 *   slowloris N SECONDS [SOURCES]
 *                           N connections, spread as above, each sending a
 *                           request line and then one header byte per second,
 *                           never finishing, for SECONDS. Reports how many
 *                           the server closed and, for the first N, the
 *                           least and most time from connecting to that
 *                           close (closed_min_ms, closed_max_ms; -1: none)
 *   oversized               a 64 KiB header, a 64 KiB URL, 4,000 headers, and
 *                           a 4 MiB header that keeps coming: the status of each
 *   garbage N               N connections from --source sending seeded random
 *                           bytes (binary, NUL, CR/LF runs, a TLS ClientHello
 *                           start), then half-closing and reading to the end
 * Prints key=value lines:
 *   scenario=NAME ... (per scenario)
 *   probe n=.. ok=.. failed=.. max_run_failed=.. p50_ms=.. max_ms=..
 *   (max_run_failed: the longest run of consecutive failures)
 * Exits 0 when it ran (the test judges the figures), 77 when this machine
 * cannot run it (descriptors, loopback aliases), 2 on a usage error.
 */
#ifndef _GNU_SOURCE /* config.h defines it in the build */
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROBES 4096

static uint16_t port;
static const char *probe_source = "127.0.0.254";
static const char *single_source = "127.0.0.1";
static unsigned deadline_sec = 25;
static bool reconnect;

static uint64_t now_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static void sleep_usec(uint64_t usec) {
        struct timespec ts = {.tv_sec = (time_t) (usec / 1000000u),
                              .tv_nsec = (long) (usec % 1000000u) * 1000};

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static void usage(void) __attribute__((noreturn));
static void usage(void) {
        fprintf(stderr,
                "usage: http-abuse --port PORT [--source ADDR] [--probe-source ADDR] "
                "[--deadline SECONDS] [--reconnect] "
                "concurrent N [SOURCES [ROUNDS]] | slowloris N SECONDS [SOURCES] | oversized | "
                "garbage N\n");
        exit(2);
}

static void cannot_run(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void cannot_run(const char *fmt, ...) {
        va_list ap;

        fprintf(stderr, "http-abuse: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        exit(77);
}

/* The i-th source address: 127.0.0.1 for a single source, else 127.0.1.1,
 * 127.0.1.2, ... (all of 127/8 is loopback on Linux). */
static void source_address(unsigned i, unsigned n_sources, char buf[static 16]) {
        if (n_sources <= 1)
                (void) snprintf(buf, 16, "%s", single_source);
        else
                (void) snprintf(buf, 16, "127.0.%u.%u", 1 + (i / 250) % 250, 1 + i % 250);
}

/* A non-blocking socket bound to source (NULL: any), connecting to the agent.
 * Returns the fd, or -errno. */
static int open_conn(const char *source, bool nonblock) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
        int fd, flags = SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0);
        /* a blocking connect gives up after this (SYNs dropped by a full backlog) */
        struct timeval tv = {.tv_sec = 5};

        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        fd = socket(AF_INET, flags, 0);
        if (fd < 0)
                return -errno;
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (source) {
                struct sockaddr_in src = {.sin_family = AF_INET};

                if (inet_pton(AF_INET, source, &src.sin_addr) != 1 ||
                    bind(fd, (struct sockaddr *) &src, sizeof src) < 0) {
                        int r = -errno;

                        close(fd);
                        return r ? r : -EINVAL;
                }
        }
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0 && errno != EINPROGRESS) {
                int r = -errno;

                close(fd);
                return r;
        }
        return fd;
}

static int send_all(int fd, const char *p, size_t len) {
        while (len > 0) {
                ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

/* Reads to EOF (blocking, with a receive timeout); the HTTP status or -1 when
 * the server closed without an answer, -2 on a reset, -3 on the timeout. */
static int read_status(int fd, unsigned timeout_ms) {
        struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
        char buf[4096], head[16] = "";
        size_t head_len = 0;

        (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        for (;;) {
                ssize_t n = recv(fd, buf, sizeof buf, 0);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == ECONNRESET ? -2 : -3;
                if (n == 0)
                        break;
                if (head_len < sizeof head - 1) {
                        size_t take = (size_t) n < sizeof head - 1 - head_len
                                              ? (size_t) n
                                              : sizeof head - 1 - head_len;
                        memcpy(head + head_len, buf, take);
                        head_len += take;
                        head[head_len] = '\0';
                }
        }
        if (strncmp(head, "HTTP/1.", 7) == 0 && head_len >= 12)
                return atoi(head + 9);
        return -1;
}

/* ---------------------------------------------------------------------------
 * The probe: GET /healthz every 100 ms from probe_source. */

static struct {
        pthread_mutex_t lock;
        bool stop;
        unsigned n, ok, failed;
        unsigned run_failed, max_run_failed; /* consecutive failures */
        uint64_t usec[MAX_PROBES];
} probe = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *probe_run(void *arg) {
        (void) arg;
        for (;;) {
                uint64_t start = now_usec(), took;
                int fd, status = -1;
                bool stop;

                fd = open_conn(probe_source, false);
                if (fd >= 0) {
                        static const char req[] = "GET /healthz HTTP/1.1\r\nHost: probe\r\n\r\n";

                        if (send_all(fd, req, sizeof req - 1) == 0)
                                /* kubelet's default probe timeout is 1 s; wait longer to
                                 * measure how late an answer comes */
                                status = read_status(fd, 5000);
                        close(fd);
                }
                took = now_usec() - start;
                pthread_mutex_lock(&probe.lock);
                if (probe.n < MAX_PROBES)
                        probe.usec[probe.n++] = took;
                if (status == 200) {
                        probe.ok++;
                        probe.run_failed = 0;
                } else {
                        probe.failed++;
                        probe.run_failed++;
                        if (probe.run_failed > probe.max_run_failed)
                                probe.max_run_failed = probe.run_failed;
                }
                stop = probe.stop;
                pthread_mutex_unlock(&probe.lock);
                if (stop)
                        break;
                sleep_usec(100u * 1000u);
        }
        return NULL;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

static void probe_report(void) {
        uint64_t p50 = 0, max = 0;

        if (probe.n > 0) {
                qsort(probe.usec, probe.n, sizeof *probe.usec, cmp_u64);
                p50 = probe.usec[(probe.n - 1) / 2];
                max = probe.usec[probe.n - 1];
        }
        printf("probe n=%u ok=%u failed=%u max_run_failed=%u p50_ms=%.1f max_ms=%.1f\n", probe.n,
               probe.ok, probe.failed, probe.max_run_failed, (double) p50 / 1000.0,
               (double) max / 1000.0);
}

/* ---------------------------------------------------------------------------
 * Scenarios */

typedef struct Conn {
        int fd;
        const char *req; /* what to send, or NULL for drive()'s */
        size_t req_len;
        bool sent, done;
        size_t got;
        char head[16];
        int status; /* HTTP status, -1 closed without an answer, -2 reset, -4 connect failed */
} Conn;

/* Drives every connection: sends req once writable, reads to EOF. */
static void drive(Conn *c, size_t n, const char *req, size_t req_len, uint64_t deadline) {
        struct pollfd *pfd = calloc(n, sizeof *pfd);
        size_t open_n = 0;

        if (!pfd)
                cannot_run("out of memory");
        for (size_t i = 0; i < n; i++)
                if (!c[i].done)
                        open_n++;
        while (open_n > 0 && now_usec() < deadline) {
                size_t k = 0;
                int r;

                for (size_t i = 0; i < n; i++) {
                        pfd[i].fd = c[i].done ? -1 : c[i].fd;
                        pfd[i].events = c[i].sent ? POLLIN : POLLOUT;
                        pfd[i].revents = 0;
                }
                r = poll(pfd, n, 100);
                if (r <= 0)
                        continue;
                for (size_t i = 0; i < n && k < (size_t) r; i++) {
                        char buf[4096];
                        ssize_t got;

                        if (!pfd[i].revents)
                                continue;
                        k++;
                        if (!c[i].sent) {
                                int err = 0;
                                socklen_t len = sizeof err;

                                (void) getsockopt(c[i].fd, SOL_SOCKET, SO_ERROR, &err, &len);
                                if (err != 0 || send_all(c[i].fd, c[i].req ? c[i].req : req,
                                                         c[i].req ? c[i].req_len : req_len) < 0) {
                                        /* refused or reset at once: the server closed it */
                                        c[i].status = err == ECONNREFUSED ? -4 : -2;
                                        c[i].done = true;
                                        close(c[i].fd);
                                        open_n--;
                                        continue;
                                }
                                c[i].sent = true;
                                if (c[i].req) /* garbage: nothing more will come */
                                        (void) shutdown(c[i].fd, SHUT_WR);
                                continue;
                        }
                        got = recv(c[i].fd, buf, sizeof buf, 0);
                        if (got < 0 && (errno == EAGAIN || errno == EINTR))
                                continue;
                        if (got > 0) {
                                if (c[i].got < sizeof c[i].head - 1) {
                                        size_t take = sizeof c[i].head - 1 - c[i].got;

                                        if ((size_t) got < take)
                                                take = (size_t) got;
                                        memcpy(c[i].head + c[i].got, buf, take);
                                }
                                c[i].got += (size_t) got;
                                continue;
                        }
                        c[i].status = got < 0 ? -2
                                      : strncmp(c[i].head, "HTTP/1.", 7) == 0 && c[i].got >= 12
                                              ? atoi(c[i].head + 9)
                                              : -1;
                        c[i].done = true;
                        close(c[i].fd);
                        open_n--;
                }
        }
        free(pfd);
}

static void raise_fd_limit(size_t need) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return;
        if (rl.rlim_cur < need + 64) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
        if (rl.rlim_cur < need + 64)
                cannot_run("RLIMIT_NOFILE allows %ju descriptors, %zu are needed",
                           (uintmax_t) rl.rlim_cur, need + 64);
}

static Conn *open_all(size_t n, unsigned n_sources) {
        Conn *c = calloc(n, sizeof *c);

        if (!c)
                cannot_run("out of memory");
        for (size_t i = 0; i < n; i++) {
                char src[16];

                source_address((unsigned) i, n_sources, src);
                c[i].fd = open_conn(src, true);
                if (c[i].fd == -EADDRNOTAVAIL || c[i].fd == -EINVAL)
                        cannot_run("cannot bind the loopback address %s", src);
                if (c[i].fd < 0) {
                        c[i].status = -4;
                        c[i].done = true;
                }
        }
        return c;
}

static void count_statuses(const Conn *c, size_t n) {
        unsigned ok = 0, other = 0, closed = 0, reset = 0, refused = 0, unfinished = 0;

        for (size_t i = 0; i < n; i++) {
                if (!c[i].done)
                        unfinished++;
                else if (c[i].status == 200)
                        ok++;
                else if (c[i].status > 0)
                        other++;
                else if (c[i].status == -1)
                        closed++;
                else if (c[i].status == -2)
                        reset++;
                else
                        refused++;
        }
        printf(" ok=%u other_status=%u closed=%u reset=%u connect_failed=%u unfinished=%u", ok,
               other, closed, reset, refused, unfinished);
}

static void scenario_concurrent(size_t n, unsigned n_sources, unsigned rounds) {
        static const char req[] = "GET /healthz HTTP/1.1\r\nHost: flood\r\n\r\n";
        uint64_t start = now_usec();
        unsigned round = 0;
        Conn *c = NULL;

        raise_fd_limit(n);
        /* another round only while every connection of the last one ended */
        for (bool all_ended = true; all_ended && round < rounds; round++) {
                if (c) {
                        for (size_t i = 0; i < n; i++)
                                if (!c[i].done)
                                        close(c[i].fd);
                        free(c);
                }
                c = open_all(n, n_sources);
                drive(c, n, req, sizeof req - 1, now_usec() + (uint64_t) deadline_sec * 1000000u);
                for (size_t i = 0; i < n; i++)
                        if (!c[i].done ||
                            (c[i].status != 200 && c[i].status != -1 && c[i].status != -2))
                                all_ended = false;
        }
        printf("scenario=concurrent n=%zu sources=%u rounds=%u", n, n_sources, round);
        count_statuses(c, n); /* the last round's */
        printf(" seconds=%.2f\n", (double) (now_usec() - start) / 1e6);
        for (size_t i = 0; i < n; i++)
                if (!c[i].done)
                        close(c[i].fd);
        free(c);
}

/* Opens connection i of a slowloris and sends its request line and part of
 * a header; false when the server refused or closed it at once. */
static bool slow_open(Conn *c, size_t i, unsigned n_sources, uint64_t *opened_usec) {
        static const char line[] = "GET /metrics HTTP/1.1\r\nHost: slow\r\nX-Slow: ";
        struct pollfd p = {.events = POLLOUT};
        char src[16];

        source_address((unsigned) i, n_sources, src);
        c->fd = open_conn(src, true);
        if (c->fd == -EADDRNOTAVAIL || c->fd == -EINVAL)
                cannot_run("cannot bind the loopback address %s", src);
        c->done = c->fd < 0;
        if (c->done)
                return false;
        p.fd = c->fd;
        if (poll(&p, 1, 2000) != 1 || send_all(c->fd, line, sizeof line - 1) < 0) {
                c->done = true;
                close(c->fd);
                return false;
        }
        *opened_usec = now_usec();
        return true;
}

static void scenario_slowloris(size_t n, unsigned seconds, unsigned n_sources) {
        uint64_t start = now_usec(), end = start + (uint64_t) seconds * 1000000u, tick = start;
        uint64_t *opened = calloc(n, sizeof *opened), closed_min = UINT64_MAX, closed_max = 0;
        bool *first = calloc(n, sizeof *first);
        struct pollfd *pfd = calloc(n, sizeof *pfd);
        unsigned alive = 0, closed_by_server = 0, reopened = 0;
        Conn *c = calloc(n, sizeof *c);

        if (!opened || !first || !pfd || !c)
                cannot_run("out of memory");
        raise_fd_limit(n);
        /* connect, then the request line and part of a header */
        for (size_t i = 0; i < n; i++)
                first[i] = slow_open(&c[i], i, n_sources, &opened[i]);
        /* one byte per connection per second, never the end of the headers;
         * in between, watch for the server's close */
        while (now_usec() < end) {
                uint64_t now = now_usec();
                int wait_ms;

                if (now >= tick) {
                        tick += 1000000u;
                        for (size_t i = 0; i < n; i++) {
                                if (c[i].done && reconnect) {
                                        reopened++;
                                        first[i] = false;
                                        (void) slow_open(&c[i], i, n_sources, &opened[i]);
                                }
                                /* a failed send shows as an error in the poll below */
                                if (!c[i].done)
                                        (void) send_all(c[i].fd, "a", 1);
                        }
                }
                for (size_t i = 0; i < n; i++) {
                        pfd[i].fd = c[i].done ? -1 : c[i].fd;
                        pfd[i].events = POLLIN | POLLRDHUP;
                        pfd[i].revents = 0;
                }
                now = now_usec();
                wait_ms = (int) ((tick < end ? tick : end) - (now < tick ? now : tick)) / 1000;
                if (poll(pfd, n, wait_ms > 0 ? wait_ms : 0) <= 0)
                        continue;
                now = now_usec();
                for (size_t i = 0; i < n; i++) {
                        char b;
                        ssize_t got;

                        if (c[i].done || !pfd[i].revents)
                                continue;
                        got = recv(c[i].fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);
                        if (got > 0 || (got < 0 && errno == EAGAIN))
                                continue; /* an answer would be a bug, but not a close */
                        c[i].done = true;
                        close(c[i].fd);
                        closed_by_server++;
                        if (first[i]) {
                                uint64_t took = now - opened[i];

                                closed_min = took < closed_min ? took : closed_min;
                                closed_max = took > closed_max ? took : closed_max;
                        }
                }
        }
        for (size_t i = 0; i < n; i++)
                if (!c[i].done) {
                        alive++;
                        close(c[i].fd);
                }
        printf("scenario=slowloris n=%zu sources=%u seconds=%u still_open=%u closed_by_server=%u "
               "reopened=%u closed_min_ms=%.0f closed_max_ms=%.0f\n",
               n, n_sources, seconds, alive, closed_by_server, reopened,
               closed_min == UINT64_MAX ? -1.0 : (double) closed_min / 1000.0,
               closed_min == UINT64_MAX ? -1.0 : (double) closed_max / 1000.0);
        free(c);
        free(pfd);
        free(first);
        free(opened);
}

/* One request, its status. */
static int one_request(const char *req, size_t len) {
        int fd = open_conn(single_source, false), status;

        if (fd < 0)
                return -4;
        if (send_all(fd, req, len) < 0) {
                /* the server may refuse before it is all sent */
                status = read_status(fd, 3000);
                close(fd);
                return status == -1 ? -2 : status;
        }
        status = read_status(fd, 15000);
        close(fd);
        return status;
}

static char *repeat(const char *head, size_t n, char c, const char *tail) {
        size_t a = strlen(head), b = strlen(tail);
        char *s = malloc(a + n + b + 1);

        if (!s)
                cannot_run("out of memory");
        memcpy(s, head, a);
        memset(s + a, c, n);
        memcpy(s + a + n, tail, b + 1);
        return s;
}

static void scenario_oversized(void) {
        char *big_header =
                repeat("GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: ", 64u * 1024u, 'a', "\r\n\r\n");
        char *big_url = repeat("GET /", 64u * 1024u, 'a', " HTTP/1.1\r\nHost: t\r\n\r\n");
        char *endless =
                repeat("GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: ", 4u << 20, 'b', "\r\n\r\n");
        size_t cap = 64u * 1024u * 4000u, len = 0;
        char *many = malloc(cap);

        if (!many)
                cannot_run("out of memory");
        len += (size_t) snprintf(many, cap, "GET /healthz HTTP/1.1\r\nHost: t\r\n");
        for (int i = 0; i < 4000; i++)
                len += (size_t) snprintf(many + len, cap - len, "X-%d: y\r\n", i);
        len += (size_t) snprintf(many + len, cap - len, "\r\n");

        printf("scenario=oversized header_64k=%d url_64k=%d headers_4000=%d header_4m=%d\n",
               one_request(big_header, strlen(big_header)), one_request(big_url, strlen(big_url)),
               one_request(many, len), one_request(endless, strlen(endless)));
        free(big_header);
        free(big_url);
        free(endless);
        free(many);
}

static void scenario_garbage(size_t n) {
        static const char hello[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
        uint64_t start = now_usec(), seed = 42;
        char *bytes;
        Conn *c;

        raise_fd_limit(n);
        bytes = malloc(n * 2048);
        if (!bytes)
                cannot_run("out of memory");
        c = open_all(n, 1);
        for (size_t i = 0; i < n; i++) {
                char *buf = bytes + i * 2048;
                size_t len;

                if (i % 4 == 0) {
                        memcpy(buf, hello, sizeof hello - 1);
                        len = sizeof hello - 1;
                } else {
                        /* xorshift: the same bytes in every run */
                        len = 1 + (size_t) (seed % 2048);
                        for (size_t k = 0; k < len; k++) {
                                seed ^= seed << 13;
                                seed ^= seed >> 7;
                                seed ^= seed << 17;
                                if (i % 4 == 1)
                                        buf[k] = (char) (seed & 0xff);
                                else if (i % 4 == 2)
                                        buf[k] = "\r\n \t:\0GET/"[seed % 11];
                                else
                                        buf[k] = (char) (0x20 + seed % 95);
                        }
                }
                c[i].req = buf;
                c[i].req_len = len;
        }
        drive(c, n, NULL, 0, start + (uint64_t) deadline_sec * 1000000u);
        printf("scenario=garbage n=%zu", n);
        count_statuses(c, n);
        printf(" seconds=%.2f\n", (double) (now_usec() - start) / 1e6);
        for (size_t i = 0; i < n; i++)
                if (!c[i].done)
                        close(c[i].fd);
        free(c);
        free(bytes);
}

int main(int argc, char **argv) {
        pthread_t t;
        int i = 1;

        (void) signal(SIGPIPE, SIG_IGN);
        setvbuf(stdout, NULL, _IOLBF, 0);
        for (; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
                if (strcmp(argv[i], "--reconnect") == 0) {
                        reconnect = true;
                        i--; /* a flag, no value */
                        continue;
                }
                if (i + 1 >= argc)
                        usage();
                if (strcmp(argv[i], "--port") == 0)
                        port = (uint16_t) atoi(argv[i + 1]);
                else if (strcmp(argv[i], "--source") == 0)
                        single_source = argv[i + 1];
                else if (strcmp(argv[i], "--probe-source") == 0)
                        probe_source = argv[i + 1];
                else if (strcmp(argv[i], "--deadline") == 0)
                        deadline_sec = (unsigned) atoi(argv[i + 1]);
                else
                        usage();
        }
        if (port == 0 || i >= argc)
                usage();
        {
                /* the probe's own address must be usable */
                int fd = open_conn(probe_source, false);

                if (fd == -EADDRNOTAVAIL || fd == -EINVAL)
                        cannot_run("cannot bind the probe's address %s", probe_source);
                if (fd < 0)
                        cannot_run("cannot connect to 127.0.0.1:%u: %s", (unsigned) port,
                                   strerror(-fd));
                close(fd);
        }
        pthread_create(&t, NULL, probe_run, NULL);

        if (strcmp(argv[i], "concurrent") == 0 && i + 1 < argc)
                scenario_concurrent(strtoul(argv[i + 1], NULL, 10),
                                    i + 2 < argc ? (unsigned) atoi(argv[i + 2]) : 1,
                                    i + 3 < argc ? (unsigned) atoi(argv[i + 3]) : 1);
        else if (strcmp(argv[i], "slowloris") == 0 && i + 2 < argc)
                scenario_slowloris(strtoul(argv[i + 1], NULL, 10), (unsigned) atoi(argv[i + 2]),
                                   i + 3 < argc ? (unsigned) atoi(argv[i + 3]) : 1);
        else if (strcmp(argv[i], "oversized") == 0)
                scenario_oversized();
        else if (strcmp(argv[i], "garbage") == 0 && i + 1 < argc)
                scenario_garbage(strtoul(argv[i + 1], NULL, 10));
        else
                usage();

        pthread_mutex_lock(&probe.lock);
        probe.stop = true;
        pthread_mutex_unlock(&probe.lock);
        pthread_join(t, NULL);
        probe_report();
        return 0;
}
