/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The readiness probe's client (check.h). The probe runs every few seconds in
 * every pod and must cost a few milliseconds and little memory: hence no
 * libcurl (its global initialisation sets up TLS) and no event loop.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>

#include "check.h"
#include "httpd-listen.h"
#include "timeutil.h"

/* Waits for events on fd until the deadline. Returns 1 ready, 0 timed out, -errno. */
static int wait_fd(int fd, short events, uint64_t deadline_usec) {
        for (;;) {
                struct pollfd p = {.fd = fd, .events = events};
                uint64_t now = now_usec(CLOCK_MONOTONIC), ms;
                int r;

                if (now >= deadline_usec)
                        return 0;
                ms = (deadline_usec - now + 999u) / 1000u;
                r = poll(&p, 1, ms > INT_MAX ? INT_MAX : (int) ms);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return negative_errno();
                if (r > 0)
                        return 1;
        }
}

static int line_printf(char **ret, const char *fmt, ...) _printf_(2, 3);
static int line_printf(char **ret, const char *fmt, ...) {
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vasprintf(ret, fmt, ap);
        va_end(ap);
        return n < 0 ? -ENOMEM : 0;
}

/* The address to ask: a wildcard is asked on loopback, in its family. */
static void local_target(HttpdListen *l) {
        if (l->any || (l->family == AF_INET && l->addr.in.sin_addr.s_addr == htonl(INADDR_ANY))) {
                l->any = false;
                l->family = AF_INET;
                l->addr = (__typeof__(l->addr)){};
                l->addr.in.sin_family = AF_INET;
                l->addr.in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                l->addr.in.sin_port = htons(l->port);
        } else if (l->family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&l->addr.in6.sin6_addr))
                l->addr.in6.sin6_addr = in6addr_loopback;
}

typedef struct Answer {
        char buf[CHECK_MAX_RESPONSE_BYTES + 1];
        size_t len;
} Answer;

/* True once the status line, the headers and the first body line are in. */
static bool answer_complete(const Answer *a) {
        const char *body = strstr(a->buf, "\r\n\r\n");

        return body && strchr(body + 4, '\n');
}

/* Connects, sends, reads. Returns 0, or -errno with *ret_what naming the step. */
static int exchange(const HttpdListen *l, const char *request, uint64_t deadline_usec, Answer *a,
                    const char **ret_what) {
        _cleanup_close_ int fd = -EBADF;
        size_t sent = 0, n = strlen(request);
        socklen_t len;
        int r, err = 0;

        *ret_what = "cannot connect to";
        fd = socket(l->family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return negative_errno();
        if (connect(fd, &l->addr.sa,
                    l->family == AF_INET6 ? sizeof l->addr.in6 : sizeof l->addr.in) < 0) {
                if (errno != EINPROGRESS)
                        return negative_errno();
                r = wait_fd(fd, POLLOUT, deadline_usec);
                if (r <= 0)
                        return r == 0 ? -ETIMEDOUT : r;
                len = sizeof err;
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                        return negative_errno();
                if (err != 0)
                        return -err;
        }

        *ret_what = "cannot send to";
        while (sent < n) {
                /* MSG_NOSIGNAL: a daemon that closes on us must not kill the probe */
                ssize_t k = send(fd, request + sent, n - sent, MSG_NOSIGNAL);

                if (k < 0 && errno == EAGAIN) {
                        r = wait_fd(fd, POLLOUT, deadline_usec);
                        if (r <= 0)
                                return r == 0 ? -ETIMEDOUT : r;
                        continue;
                }
                if (k < 0 && errno != EINTR)
                        return negative_errno();
                if (k > 0)
                        sent += (size_t) k;
        }

        *ret_what = "no complete answer from";
        while (a->len < CHECK_MAX_RESPONSE_BYTES && !answer_complete(a)) {
                ssize_t k = read(fd, a->buf + a->len, CHECK_MAX_RESPONSE_BYTES - a->len);

                if (k < 0 && errno == EAGAIN) {
                        r = wait_fd(fd, POLLIN, deadline_usec);
                        if (r <= 0)
                                return r == 0 ? -ETIMEDOUT : r;
                        continue;
                }
                if (k < 0 && errno != EINTR)
                        return negative_errno();
                if (k == 0)
                        break; /* the daemon closed: judge what came */
                if (k > 0) {
                        a->len += (size_t) k;
                        a->buf[a->len] = '\0';
                }
        }
        return 0;
}

/* Parses "HTTP/1.x NNN ...". Returns the status or -EBADMSG. */
static int status_code(const Answer *a) {
        const char *p = a->buf;

        if (!startswith(p, "HTTP/1.") || a->len < 12 || p[8] != ' ')
                return -EBADMSG;
        for (int i = 9; i < 12; i++)
                if (p[i] < '0' || p[i] > '9')
                        return -EBADMSG;
        if (p[12] != ' ' && p[12] != '\r')
                return -EBADMSG;
        return (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
}

/* The first body line, made printable, as a new string ("" when none). */
static char *first_body_line(const Answer *a) {
        const char *body = strstr(a->buf, "\r\n\r\n");
        size_t n;
        char *s;

        body = body ? body + 4 : "";
        n = strcspn(body, "\r\n");
        s = strndup(body, n);
        if (!s)
                return NULL;
        for (char *p = s; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        *p = '?';
        return s;
}

/* The verdict on a complete (or cut) answer. Returns 0 or -ENOMEM. */
static int verdict(const Answer *a, const char *where, bool *ret_ready, char **ret_line) {
        int status = status_code(a);
        char *body;

        if (status < 0)
                return line_printf(ret_line, "not ready: %s did not answer with HTTP", where);
        if (status != 200 && status != 503)
                return line_printf(ret_line, "not ready: %s answered /readyz with HTTP status %d",
                                   where, status);
        body = first_body_line(a);
        if (!body)
                return -ENOMEM;
        if (body[0] == '\0') {
                free(body);
                if (line_printf(&body, "%s", status == 200 ? "ready" : "not ready") < 0)
                        return -ENOMEM;
        }
        *ret_ready = status == 200;
        *ret_line = body;
        return 0;
}

int check_parse_answer(const char *data, size_t len, const char *where, bool *ret_ready,
                       char **ret_line) {
        Answer a;
        bool ready = false;
        char *line = NULL;
        int r;

        a.len = len < CHECK_MAX_RESPONSE_BYTES ? len : CHECK_MAX_RESPONSE_BYTES;
        memcpy(a.buf, data, a.len);
        a.buf[a.len] = '\0';
        r = verdict(&a, where, &ready, &line);
        if (r < 0)
                return r;
        *ret_ready = ready;
        *ret_line = line;
        return 0;
}

/* Asks l; fills *ret_ready and *ret_line. Returns 0 or -ENOMEM. */
static int ask(HttpdListen *l, bool require_current, uint64_t timeout_usec, bool *ret_ready,
               char **ret_line) {
        char where[HTTPD_LISTEN_STRLEN], request[256 + HTTPD_LISTEN_STRLEN];
        const char *what = NULL;
        uint64_t deadline;
        Answer a;
        int r;

        local_target(l);
        httpd_listen_format(l, where);
        (void) snprintf(request, sizeof request,
                        "GET /readyz%s HTTP/1.1\r\nHost: %s\r\n"
                        "User-Agent: aicr-enroot-agent-check\r\nConnection: close\r\n\r\n",
                        require_current ? "?require=current" : "", where);

        a.len = 0;
        a.buf[0] = '\0';
        /* saturating: a huge timeout means "no deadline", not one in the past */
        deadline = now_usec(CLOCK_MONOTONIC);
        deadline = timeout_usec > UINT64_MAX - deadline ? UINT64_MAX : deadline + timeout_usec;
        r = exchange(l, request, deadline, &a, &what);
        if (r == -ETIMEDOUT)
                return line_printf(ret_line, "not ready: no answer from %s within %" PRIu64 " ms",
                                   where, timeout_usec / 1000u);
        if (r < 0)
                return line_printf(ret_line, "not ready: %s %s: %s", what, where, strerror(-r));
        return verdict(&a, where, ret_ready, ret_line);
}

int check_query(const char *listen, bool require_current, uint64_t timeout_usec, bool *ret_ready,
                char **ret_line) {
        _cleanup_free_ char *error = NULL;
        bool ready = false;
        char *line = NULL;
        HttpdListen l;
        int r;

        r = httpd_parse_listen(listen, &l, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                r = line_printf(&line, "not ready: %s", error ? error : "invalid --listen");
        else
                r = ask(&l, require_current,
                        timeout_usec ? timeout_usec : CHECK_DEFAULT_TIMEOUT_USEC, &ready, &line);
        if (r < 0)
                return r;
        *ret_ready = ready;
        *ret_line = line;
        return 0;
}

int check_run(const char *listen, bool require_current, uint64_t timeout_usec) {
        _cleanup_free_ char *line = NULL;
        bool ready = false;
        int r;

        r = check_query(listen, require_current, timeout_usec, &ready, &line);
        if (r < 0) {
                printf("not ready: %s\n", strerror(-r));
                return 1;
        }
        printf("%s\n", line);
        (void) fflush(stdout);
        return ready ? 0 : 1;
}
