/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP server and the --check client over real sockets. The test's main
 * thread runs a real sd-event loop with the server attached, exactly as the
 * daemon does; clients run in a second thread (raw sockets, so malformed and
 * slow requests are possible) and only record what they saw: every assertion
 * is made on the main thread once the client is done.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <cmocka.h>
#include "unit-skip.h"

#include "check.h"
#include "httpd.h"
#include "metrics.h"
#include "readiness.h"

/* How long a client waits for something the server must do: it only ends a
 * test that hangs (as a failure naming what was awaited), and no check
 * depends on it being short. */
#define HANG_USEC (30u * 1000000u)

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

/* ---------------------------------------------------------------------------
 * Sample reports */

static Report *report_new(size_t n_files) {
        Report *r = calloc(1, sizeof *r);

        assert_non_null(r);
        r->files = calloc(n_files ? n_files : 1, sizeof *r->files);
        assert_non_null(r->files);
        r->n_files = n_files;
        r->evaluated = true;
        r->observable[SIDE_DESIRED] = r->observable[SIDE_RUNNING] = true;
        r->evaluated_usec = UINT64_C(1714564801000000);
        return r;
}

static FileReport *file_init(Report *r, size_t i, const char *key, FileState state) {
        FileReport *f = &r->files[i];

        f->key = strdup(key);
        f->running_path = strdup("/etc/enroot/x");
        f->format = file_format_for_key(key);
        f->state = state;
        for (Side s = 0; s < _SIDE_MAX; s++) {
                memset(f->content_id[s], 'a' + (int) s, CONTENT_ID_HEX);
                f->read[s] = true;
        }
        return f;
}

static void change_add(FileReport *f, const char *key, DiffChange change, bool effective) {
        KeyChange *c = realloc(f->changes, (f->n_changes + 1) * sizeof *c);

        assert_non_null(c);
        f->changes = c;
        c[f->n_changes++] =
                (KeyChange){.key = strdup(key), .change = change, .effective = effective};
        if (effective)
                f->n_drifted_keys++;
}

static Report *sample_drifted(void) {
        Report *r = report_new(2);
        FileReport *f = file_init(r, 0, "enroot.conf", FILE_DRIFTED);

        change_add(f, "ENROOT_MOUNT_HOME", CHANGE_CHANGED, true);
        change_add(f, "ENROOT_ROOTFS_WRITABLE", CHANGE_ADDED, true);
        f->drift_since_usec = UINT64_C(1714564800000000);
        (void) file_init(r, 1, "99-aicr-defaults.env", FILE_CURRENT);
        r->pod = report_pod_state(r);
        return r;
}

static Report *sample_current(void) {
        Report *r = report_new(2);

        (void) file_init(r, 0, "enroot.conf", FILE_CURRENT);
        (void) file_init(r, 1, "99-aicr-defaults.env", FILE_COSMETIC);
        r->pod = report_pod_state(r);
        return r;
}

/* ---------------------------------------------------------------------------
 * The server under test, in this thread's loop */

typedef struct Server {
        sd_event *event;
        Httpd *httpd;
        uint16_t port;
        Report *report; /* what get_report() returns; owned */
        MetricsCounters counters;
        const char *ready_line; /* when set, the is_ready callback answers with it */
        bool ready_value;
        unsigned report_calls;
} Server;

static const Report *on_get_report(void *userdata) {
        Server *s = userdata;

        s->report_calls++;
        return s->report;
}

static void on_get_counters(void *userdata, MetricsCounters *ret) {
        Server *s = userdata;

        *ret = s->counters;
}

static bool on_is_ready(void *userdata, bool require_current, StrBuf *reason) {
        Server *s = userdata;

        (void) strbuf_puts(reason, s->ready_line);
        return s->ready_value;
}

static unsigned count_threads(void) {
        DIR *d = opendir("/proc/self/task");
        struct dirent *de;
        unsigned n = 0;

        assert_non_null(d);
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        (void) closedir(d);
        return n;
}

/* Sockets this process holds: the server's (its listener, the connections it
 * accepted and not yet closed) and the clients'. */
static unsigned count_sockets(void) {
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        unsigned n = 0;

        assert_non_null(d);
        while ((de = readdir(d))) {
                char target[64];
                ssize_t l = readlinkat(dirfd(d), de->d_name, target, sizeof target - 1);

                if (l <= 0)
                        continue;
                target[l] = '\0';
                if (startswith(target, "socket:"))
                        n++;
        }
        (void) closedir(d);
        return n;
}

/* From a client thread while the loop runs: waits until the process holds
 * want sockets (the server accepted or closed what it was expected to).
 * Returns false after HANG_USEC. */
static bool await_sockets(unsigned want) {
        uint64_t end = now_usec() + HANG_USEC;

        while (count_sockets() != want) {
                if (now_usec() > end)
                        return false;
                sleep_usec(1000);
        }
        return true;
}

static int server_start_at(Server *s, const char *listen, const HttpdLimits *limits,
                           bool with_ready_cb, char **ret_error) {
        HttpdSource src = {.get_report = on_get_report,
                           .get_counters = on_get_counters,
                           .is_ready = with_ready_cb ? on_is_ready : NULL,
                           .userdata = s};
        HttpdListen l;
        int r;

        if (!s->event)
                assert_int_equal(sd_event_new(&s->event), 0);
        assert_int_equal(httpd_parse_listen(listen, &l, NULL), 0);
        r = httpd_start(s->event, &l, limits, &src, &s->httpd, ret_error);
        if (r >= 0)
                s->port = httpd_get_port(s->httpd);
        return r;
}

static void server_start(Server *s, const HttpdLimits *limits) {
        _cleanup_free_ char *error = NULL;

        s->counters = (MetricsCounters){.evaluations = {[TRIGGER_STARTUP] = 1},
                                        .watch_mode = "inotify",
                                        .version = "0.1.0"};
        if (server_start_at(s, "127.0.0.1:0", limits, false, &error) < 0)
                fail_msg("cannot start: %s", error);
        assert_int_not_equal(s->port, 0);
}

static void server_stop(Server *s) {
        s->httpd = httpd_free(s->httpd);
        s->event = sd_event_unref(s->event);
        s->report = report_free(s->report);
}

/* Runs fn(arg) in a thread while this thread turns the loop, until fn returns. */
typedef struct Job {
        void (*fn)(void *arg);
        void *arg;
        int efd;
} Job;

static void *job_main(void *p) {
        Job *j = p;
        uint64_t one = 1;

        j->fn(j->arg);
        (void) write(j->efd, &one, sizeof one);
        return NULL;
}

static int on_job_done(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        *(bool *) userdata = true;
        return 0;
}

static void serve_while(Server *s, void (*fn)(void *arg), void *arg) {
        Job j = {.fn = fn, .arg = arg};
        sd_event_source *src = NULL;
        /* only ends a hung test: each wait in a client has its own bound */
        uint64_t deadline = now_usec() + 10u * HANG_USEC;
        bool done = false;
        pthread_t t;

        j.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        assert_true(j.efd >= 0);
        assert_int_equal(sd_event_add_io(s->event, &src, j.efd, EPOLLIN, on_job_done, &done), 0);
        assert_int_equal(pthread_create(&t, NULL, job_main, &j), 0);
        while (!done) {
                if (now_usec() > deadline)
                        fail_msg("the client thread did not finish within %u s",
                                 10u * HANG_USEC / 1000000u);
                assert_true(sd_event_run(s->event, 100000) >= 0);
        }
        assert_int_equal(pthread_join(t, NULL), 0);
        sd_event_source_disable_unref(src);
        (void) close(j.efd);
}

/* ---------------------------------------------------------------------------
 * A raw HTTP client: what was sent, what came back until the server closed */

typedef struct Exchange {
        const char *request; /* sent as is; NULL sends nothing */
        size_t request_len;  /* 0: strlen(request) */
        const char *source;  /* client address to bind, NULL for any */
        /* results */
        int error;      /* -errno of connect/send/recv, 0 */
        char *response; /* everything read, NUL-terminated */
        size_t len;
        int status; /* from the status line, -1 when none */
} Exchange;

static int client_socket(int family, const char *source, const void *addr, socklen_t addr_len,
                         uint64_t recv_timeout_usec) {
        struct timeval tv = {.tv_sec = (time_t) (recv_timeout_usec / 1000000u),
                             .tv_usec = (suseconds_t) (recv_timeout_usec % 1000000u)};
        int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return negative_errno();
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (source) {
                struct sockaddr_in src = {.sin_family = AF_INET};

                (void) inet_pton(AF_INET, source, &src.sin_addr);
                if (bind(fd, (struct sockaddr *) &src, sizeof src) < 0) {
                        int r = negative_errno();
                        (void) close(fd);
                        return r;
                }
        }
        if (connect(fd, addr, addr_len) < 0) {
                int r = negative_errno();
                (void) close(fd);
                return r;
        }
        return fd;
}

static int connect_port(const char *source, uint16_t port, uint64_t recv_timeout_usec) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};

        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return client_socket(AF_INET, source, &a, sizeof a, recv_timeout_usec);
}

static int connect_port6(uint16_t port, uint64_t recv_timeout_usec) {
        struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port)};

        a.sin6_addr = in6addr_loopback;
        return client_socket(AF_INET6, NULL, &a, sizeof a, recv_timeout_usec);
}

static int send_all(int fd, const char *data, size_t len) {
        while (len > 0) {
                ssize_t n = send(fd, data, len, MSG_NOSIGNAL);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                data += n;
                len -= (size_t) n;
        }
        return 0;
}

/* Reads until the peer closes. Returns 0, or -errno (-EAGAIN: the receive timeout). */
static int read_all(int fd, char **ret, size_t *ret_len) {
        StrBuf b = STRBUF_INIT(8u << 20);
        char buf[16384];
        int r = 0;

        for (;;) {
                ssize_t n = recv(fd, buf, sizeof buf, 0);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = negative_errno();
                        break;
                }
                if (n == 0)
                        break;
                assert_int_equal(strbuf_append(&b, buf, (size_t) n), 0);
        }
        *ret_len = b.len;
        *ret = strbuf_steal(&b);
        return r;
}

static int parse_status(const char *response) {
        if (!startswith(response, "HTTP/1.1 ") || strlen(response) < 12)
                return -1;
        return atoi(response + 9);
}

static void exchange_run(uint16_t port, Exchange *x) {
        int fd;

        fd = connect_port(x->source, port, HANG_USEC);
        if (fd < 0) {
                x->error = fd;
                x->response = strdup("");
                x->status = -1;
                return;
        }
        if (x->request)
                x->error = send_all(fd, x->request,
                                    x->request_len ? x->request_len : strlen(x->request));
        {
                int r = read_all(fd, &x->response, &x->len);
                if (x->error == 0)
                        x->error = r;
        }
        x->status = parse_status(x->response);
        (void) close(fd);
}

typedef struct Batch {
        uint16_t port;
        Exchange *x;
        size_t n;
} Batch;

static void batch_run(void *arg) {
        Batch *b = arg;

        for (size_t i = 0; i < b->n; i++)
                exchange_run(b->port, &b->x[i]);
}

static void exchanges_done(Exchange *x, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(x[i].response);
                x[i].response = NULL;
        }
}

/* The value of a response header (case-insensitive name), as a new string or NULL. */
static char *header(const Exchange *x, const char *name) {
        const char *end = strstr(x->response, "\r\n\r\n");
        size_t n = strlen(name);

        for (const char *p = strstr(x->response, "\r\n"); p && p < end; p = strstr(p + 2, "\r\n"))
                if (strncasecmp(p + 2, name, n) == 0 && p[2 + n] == ':') {
                        const char *v = p + 3 + n;
                        while (*v == ' ')
                                v++;
                        return strndup(v, strcspn(v, "\r\n"));
                }
        return NULL;
}

static const char *body(const Exchange *x) {
        const char *p = strstr(x->response, "\r\n\r\n");

        return p ? p + 4 : "";
}

static void expect_exchange(const Exchange *x, int status, const char *content_type,
                            const char *body_text) {
        _cleanup_free_ char *ct = header(x, "Content-Type");

        if (x->status != status)
                fail_msg("%.40s...: status %d, expected %d; response:\n%.300s", x->request,
                         x->status, status, x->response);
        if (content_type && !streq_ptr(ct, content_type))
                fail_msg("%.40s...: Content-Type \"%s\", expected \"%s\"", x->request, ct,
                         content_type);
        if (body_text && !streq(body(x), body_text))
                fail_msg("%.40s...: body \"%s\", expected \"%s\"", x->request, body(x), body_text);
}

#define GET(path) "GET " path " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"

/* ---------------------------------------------------------------------------
 * --listen */

typedef struct ListenRow {
        const char *in;
        int family; /* 0: an error */
        bool any;
        uint16_t port;
        const char *formatted;
} ListenRow;

static void test_parse_listen(void **state) {
        static const ListenRow rows[] = {
                {":9100", AF_INET6, true, 9100, ":9100"},
                {":0", AF_INET6, true, 0, ":0"},
                {"0.0.0.0:9100", AF_INET, false, 9100, "0.0.0.0:9100"},
                {"127.0.0.1:9100", AF_INET, false, 9100, "127.0.0.1:9100"},
                {"10.1.2.3:65535", AF_INET, false, 65535, "10.1.2.3:65535"},
                {"[::1]:9100", AF_INET6, false, 9100, "[::1]:9100"},
                {"[::]:9100", AF_INET6, false, 9100, "[::]:9100"},
                {"[fd00::1:2]:80", AF_INET6, false, 80, "[fd00::1:2]:80"},
                {"[::ffff:127.0.0.1]:80", AF_INET6, false, 80, "[::ffff:127.0.0.1]:80"},
                {"localhost:8080", AF_INET, false, 8080, "127.0.0.1:8080"},
                {"LocalHost:1", AF_INET, false, 1, "127.0.0.1:1"},
                {"", .family = 0},
                {"9100", .family = 0},
                {":", .family = 0},
                {":65536", .family = 0},
                {":123456", .family = 0},
                {":-1", .family = 0},
                {":+80", .family = 0},
                {": 80", .family = 0},
                {":80 ", .family = 0},
                {":0x50", .family = 0},
                {"::1:9100", .family = 0},
                {"[::1]9100", .family = 0},
                {"[::1]", .family = 0},
                {"[::1", .family = 0},
                {"[fe80::1%eth0]:80", .family = 0},
                {"[1.2.3.4]:80", .family = 0},
                {"example.com:80", .family = 0},
                {"1.2.3:80", .family = 0},
                {"256.1.1.1:80", .family = 0},
                {" 127.0.0.1:80", .family = 0},
                {"127.0.0.1:80:80", .family = 0},
        };
        char long_in[HTTPD_MAX_LISTEN_LENGTH + 2];

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_free_ char *error = NULL;
                char buf[HTTPD_LISTEN_STRLEN];
                HttpdListen l;
                int r;

                r = httpd_parse_listen(rows[i].in, &l, &error);
                if (rows[i].family == 0) {
                        if (r != -EINVAL)
                                fail_msg("\"%s\": %d, expected -EINVAL", rows[i].in, r);
                        assert_non_null(error);
                        if (!startswith(error, "--listen: "))
                                fail_msg("\"%s\": error \"%s\" does not name --listen", rows[i].in,
                                         error);
                        continue;
                }
                if (r != 0)
                        fail_msg("\"%s\": %d (%s)", rows[i].in, r, error);
                assert_null(error);
                assert_int_equal(l.family, rows[i].family);
                assert_int_equal(l.any, rows[i].any);
                assert_int_equal(l.port, rows[i].port);
                assert_int_equal(l.addr.sa.sa_family, rows[i].family);
                httpd_listen_format(&l, buf);
                assert_string_equal(buf, rows[i].formatted);
        }

        /* the length cap, crossed by one */
        memset(long_in, '1', sizeof long_in - 1);
        long_in[sizeof long_in - 1] = '\0';
        long_in[0] = ':';
        assert_int_equal(httpd_parse_listen(long_in, &(HttpdListen){}, NULL), -EINVAL);
        assert_int_equal(httpd_parse_listen(NULL, &(HttpdListen){}, NULL), -EINVAL);
}

static void test_error_messages(void **state) {
        HttpdListen l;
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;

        assert_int_equal(httpd_parse_listen(":9100", &l, NULL), 0);
        a = httpd_error_message(-EADDRINUSE, &l);
        assert_string_equal(a, "port 9100 is already in use (node_exporter owns 9100 on many "
                               "nodes): choose another with --listen");
        assert_int_equal(httpd_parse_listen("127.0.0.1:8080", &l, NULL), 0);
        b = httpd_error_message(-EADDRINUSE, &l);
        assert_string_equal(b, "port 8080 is already in use: choose another with --listen");
        assert_int_equal(httpd_parse_listen(":80", &l, NULL), 0);
        c = httpd_error_message(-EACCES, &l);
        assert_string_equal(c, "cannot listen on :80: ports below 1024 need CAP_NET_BIND_SERVICE: "
                               "choose another with --listen");
        assert_int_equal(httpd_parse_listen("[::1]:8080", &l, NULL), 0);
        d = httpd_error_message(-EADDRNOTAVAIL, &l);
        assert_string_equal(d, "cannot listen on [::1]:8080: the address is not one of this "
                               "host's: choose another with --listen");
        e = httpd_error_message(-EMFILE, &l);
        assert_string_equal(e, "cannot listen on [::1]:8080: Too many open files");
}

/* ---------------------------------------------------------------------------
 * Readiness, pure */

static void expect_readiness(const Report *r, bool require_current, bool ready, const char *line) {
        StrBuf b = STRBUF_INIT(4096);

        assert_int_equal(readiness_is_ready(r, require_current, &b), ready);
        assert_string_equal(strbuf_str(&b), line);
        strbuf_done(&b);
}

static void test_readiness(void **state) {
        _cleanup_(report_freep) Report *drifted = sample_drifted(), *current = sample_current(),
                                       *unknown = report_new(2), *many = report_new(40),
                                       *blind = sample_current();
        StrBuf b = STRBUF_INIT(4096);

        expect_readiness(NULL, false, false,
                         "not ready: the first evaluation has not completed yet");
        drifted->evaluated = false;
        expect_readiness(drifted, false, false,
                         "not ready: the first evaluation has not completed yet");
        drifted->evaluated = true;

        blind->observable[SIDE_DESIRED] = false;
        expect_readiness(blind, false, false,
                         "not ready: the desired side (the ConfigMap directory) cannot be "
                         "observed");
        blind->observable[SIDE_DESIRED] = true;
        blind->observable[SIDE_RUNNING] = false;
        expect_readiness(blind, false, false,
                         "not ready: the running side (the workload's files) cannot be observed");

        expect_readiness(current, false, true, "ready: pod current");
        expect_readiness(current, true, true, "ready: pod current");
        /* drift does not pull the pod out of its Service... */
        expect_readiness(drifted, false, true, "ready: pod drifted: enroot.conf drifted (2 keys)");
        /* ...unless asked */
        expect_readiness(drifted, true, false,
                         "not ready: pod drifted and --require-current is set: enroot.conf "
                         "drifted (2 keys)");

        (void) file_init(unknown, 0, "enroot.conf", FILE_MISSING);
        (void) file_init(unknown, 1, "bad\nkey.env", FILE_UNREADABLE);
        expect_readiness(unknown, false, true,
                         "ready: pod unknown: enroot.conf missing, bad?key.env unreadable");
        expect_readiness(unknown, true, false,
                         "not ready: pod unknown and --require-current is set: enroot.conf "
                         "missing, bad?key.env unreadable");

        /* the line is bounded and says it was cut */
        for (size_t i = 0; i < many->n_files; i++) {
                char key[64];

                (void) snprintf(key, sizeof key, "file-with-a-rather-long-name-%02zu.conf", i);
                (void) file_init(many, i, key, FILE_INVALID);
        }
        assert_false(readiness_is_ready(many, true, &b));
        assert_true(b.len <= READINESS_MAX_REASON_BYTES);
        assert_true(endswith(strbuf_str(&b), ", ..."));
        assert_null(strchr(strbuf_str(&b), '\n'));
        strbuf_done(&b);
}

/* ---------------------------------------------------------------------------
 * Endpoints */

static void test_endpoints(void **state) {
        Server s = {};
        Exchange x[] = {
                /* 0 */ {.request = GET("/metrics")},
                /* 1 */
                {.request = "HEAD /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"},
                /* 2 */ {.request = GET("/healthz")},
                /* 3 */ {.request = GET("/readyz")},
                /* 4 */ {.request = GET("/readyz?require=current")},
                /* 5 */ {.request = GET("/readyz?require=bogus")},
                /* 6 */ {.request = GET("/status")},
                /* 7 */
                {.request = "HEAD /status HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"},
                /* 8 */ {.request = GET("/nope")},
                /* 9 */ {.request = GET("/metrics/")},
                /* 10 */ {.request = GET("/METRICS")},
                /* 11 */
                {.request = "POST /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello"},
                /* 12 */ {.request = "DELETE /status HTTP/1.1\r\nHost: t\r\n\r\n"},
                /* 13 */
                {.request = "GET /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello"},
                /* 14 */
                {.request = "GET /healthz HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "5\r\nhello\r\n0\r\n\r\n"},
                /* 15 */ {.request = GET("/readyz?require=")},
                /* 16 */ {.request = "GET /healthz HTTP/1.0\r\n\r\n"},
                /* 17 */
                {.request = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"}, /* keep-alive asked */
        };
        Batch b = {.x = x, .n = ELEMENTSOF(x)};
        _cleanup_(json_decrefp) json_t *status = NULL;
        _cleanup_free_ char *allow11 = NULL, *allow12 = NULL, *len1 = NULL, *len7 = NULL,
                            *conn17 = NULL;
        unsigned threads = count_threads();
        json_error_t err;

        s.report = sample_drifted();
        server_start(&s, NULL);
        /* no thread of its own: libmicrohttpd runs only inside our loop */
        assert_int_equal(count_threads(), threads);
        b.port = s.port;
        serve_while(&s, batch_run, &b);

        expect_exchange(&x[0], 200, "text/plain; version=0.0.4; charset=utf-8", NULL);
        assert_true(startswith(body(&x[0]), "# HELP aicr_enroot_config_current "));
        assert_non_null(
                strstr(body(&x[0]), "\naicr_enroot_config_drift{file=\"enroot.conf\"} 1\n"));
        assert_non_null(strstr(body(&x[0]),
                               "\naicr_enroot_agent_evaluations_total{trigger=\"startup\"} 1\n"));
        assert_non_null(strstr(body(&x[0]), "\nprocess_open_fds "));
        assert_non_null(strstr(body(&x[0]), "\nprocess_resident_memory_bytes "));

        expect_exchange(&x[1], 200, "text/plain; version=0.0.4; charset=utf-8", "");
        len1 = header(&x[1], "Content-Length");
        assert_non_null(len1);
        assert_true(atoi(len1) > 1000);

        expect_exchange(&x[2], 200, "text/plain; charset=utf-8", "ok\n");
        expect_exchange(&x[3], 200, "text/plain; charset=utf-8",
                        "ready: pod drifted: enroot.conf drifted (2 keys)\n");
        expect_exchange(&x[4], 503, "text/plain; charset=utf-8",
                        "not ready: pod drifted and --require-current is set: enroot.conf "
                        "drifted (2 keys)\n");
        expect_exchange(&x[5], 400, "text/plain; charset=utf-8", NULL);

        expect_exchange(&x[6], 200, "application/json", NULL);
        status = json_loads(body(&x[6]), 0, &err);
        if (!status)
                fail_msg("/status is not JSON: %s", err.text);
        assert_string_equal(json_string_value(json_object_get(status, "pod")), "drifted");
        assert_string_equal(json_string_value(json_object_get(
                                    json_array_get(json_object_get(status, "files"), 0), "key")),
                            "enroot.conf");
        /* HEAD: the same headers, no body */
        expect_exchange(&x[7], 200, "application/json", "");
        len7 = header(&x[7], "Content-Length");
        assert_non_null(len7);
        assert_int_equal(strtoul(len7, NULL, 10), strlen(body(&x[6])));

        expect_exchange(&x[8], 404, "text/plain; charset=utf-8", "not found\n");
        expect_exchange(&x[9], 404, NULL, NULL);
        expect_exchange(&x[10], 404, NULL, NULL);

        expect_exchange(&x[11], 405, "text/plain; charset=utf-8", NULL);
        allow11 = header(&x[11], "Allow");
        assert_string_equal(allow11, "GET, HEAD");
        expect_exchange(&x[12], 405, NULL, NULL);
        allow12 = header(&x[12], "Allow");
        assert_string_equal(allow12, "GET, HEAD");

        expect_exchange(&x[13], 413, NULL, "request bodies are not accepted\n");
        expect_exchange(&x[14], 413, NULL, "request bodies are not accepted\n");
        expect_exchange(&x[15], 400, NULL, NULL);
        expect_exchange(&x[16], 200, NULL, "ok\n");
        /* one request per connection: the server closes after every answer */
        expect_exchange(&x[17], 200, NULL, "ok\n");
        conn17 = header(&x[17], "Connection");
        assert_string_equal(conn17, "close");

        exchanges_done(x, ELEMENTSOF(x));
        server_stop(&s);
}

/* Each response renders the Report the source holds at that moment. */
static void test_current_report(void **state) {
        Server s = {};
        Exchange a[] = {{.request = GET("/readyz")}, {.request = GET("/metrics")}};
        Exchange b[] = {{.request = GET("/readyz")},
                        {.request = GET("/readyz?require=current")},
                        {.request = GET("/metrics")}};
        Exchange c[] = {{.request = GET("/readyz")}, {.request = GET("/readyz?require=current")}};
        Batch ba = {.x = a, .n = ELEMENTSOF(a)}, bb = {.x = b, .n = ELEMENTSOF(b)},
              bc = {.x = c, .n = ELEMENTSOF(c)};
        _cleanup_free_ char *error = NULL;

        server_start(&s, NULL);
        ba.port = bb.port = s.port;
        serve_while(&s, batch_run, &ba);
        expect_exchange(&a[0], 503, NULL,
                        "not ready: the first evaluation has not completed yet\n");
        expect_exchange(&a[1], 200, NULL, NULL);
        assert_non_null(strstr(body(&a[1]), "\naicr_enroot_config_current 0\n"));

        s.report = sample_current();
        serve_while(&s, batch_run, &bb);
        expect_exchange(&b[0], 200, NULL, "ready: pod current\n");
        expect_exchange(&b[1], 200, NULL, "ready: pod current\n");
        assert_non_null(strstr(body(&b[2]), "\naicr_enroot_config_current 1\n"));
        assert_true(s.report_calls >= 4);
        server_stop(&s);

        /* the manager's own readiness rule, kept to one line */
        s.ready_line = "not ready: no process named slurmd\nsecond line";
        s.ready_value = false;
        assert_int_equal(server_start_at(&s, "127.0.0.1:0", NULL, true, &error), 0);
        bc.port = s.port;
        serve_while(&s, batch_run, &bc);
        expect_exchange(&c[0], 503, NULL, "not ready: no process named slurmd second line\n");
        expect_exchange(&c[1], 503, NULL, "not ready: no process named slurmd second line\n");

        exchanges_done(a, ELEMENTSOF(a));
        exchanges_done(b, ELEMENTSOF(b));
        exchanges_done(c, ELEMENTSOF(c));
        server_stop(&s);
}

/* ---------------------------------------------------------------------------
 * The hold: a scrape that comes while a new state is worked out gets it */

typedef struct HoldRun {
        uint16_t port;
        Exchange healthz; /* sent first, while the hold is on */
        Exchange metrics;
        _Atomic bool sent;     /* the /metrics request is written */
        uint64_t metrics_usec; /* from its request to its answer */
        uint64_t answered_at;  /* CLOCK_MONOTONIC */
        int fd;                /* hold_and_leave: the connection left open */
} HoldRun;

static void hold_run(void *arg) {
        HoldRun *r = arg;
        uint64_t t0;
        int fd;

        exchange_run(r->port, &r->healthz);
        t0 = now_usec();
        fd = connect_port(NULL, r->port, HANG_USEC);
        if (fd < 0) {
                r->metrics.error = fd;
                r->metrics.response = strdup("");
                return;
        }
        r->metrics.error = send_all(fd, r->metrics.request, strlen(r->metrics.request));
        r->sent = true;
        {
                int e = read_all(fd, &r->metrics.response, &r->metrics.len);
                if (r->metrics.error == 0)
                        r->metrics.error = e;
        }
        r->answered_at = now_usec();
        r->metrics_usec = r->answered_at - t0;
        r->metrics.status = parse_status(r->metrics.response);
        (void) close(fd);
}

/* The owner's side: once the request has been written (and 200 ms more, for
 * the server to take it), a new Report, then httpd_answer_waiting(). */
typedef struct Releaser {
        Server *server;
        HoldRun *run;
        uint64_t sent_seen_usec;
        bool released;
} Releaser;

static int on_release_poll(sd_event_source *src, uint64_t usec, void *userdata) {
        Releaser *rel = userdata;
        uint64_t now = now_usec();

        if (rel->released)
                return 0;
        if (rel->run->sent && rel->sent_seen_usec == 0)
                rel->sent_seen_usec = now;
        if (rel->sent_seen_usec != 0 && now - rel->sent_seen_usec >= 200u * 1000u) {
                report_free(rel->server->report);
                rel->server->report = sample_drifted();
                httpd_answer_waiting(rel->server->httpd);
                rel->released = true;
                return sd_event_source_set_enabled(src, SD_EVENT_OFF);
        }
        assert_int_equal(sd_event_source_set_time_relative(src, 10u * 1000u), 0);
        return sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}

static void test_hold(void **state) {
        HoldRun run = {.healthz = {.request = GET("/healthz")},
                       .metrics = {.request = GET("/metrics")}};
        HttpdLimits lim = HTTPD_LIMITS_DEFAULT;
        Releaser rel = {.run = &run};
        sd_event_source *poll_src = NULL;
        Server s = {};

        /* only the owner ends this hold */
        lim.hold_max_usec = 2u * HANG_USEC;
        s.report = sample_current();
        server_start(&s, &lim);
        rel.server = &s;
        run.port = s.port;
        assert_int_equal(sd_event_add_time_relative(s.event, &poll_src, CLOCK_MONOTONIC,
                                                    10u * 1000u, 0, on_release_poll, &rel),
                         0);
        httpd_hold(s.httpd);
        httpd_hold(s.httpd); /* again: nothing more */
        serve_while(&s, hold_run, &run);
        sd_event_source_disable_unref(poll_src);

        /* other paths are never held */
        expect_exchange(&run.healthz, 200, NULL, "ok\n");
        /* the scrape waited for the new Report: rendered from the current
         * one, it would say the pod is current */
        if (!rel.released)
                fail_msg("the scrape was answered %" PRIu64 " ms after its request, before the "
                         "new Report was published: it was not held",
                         run.metrics_usec / 1000u);
        expect_exchange(&run.metrics, 200, "text/plain; version=0.0.4; charset=utf-8", NULL);
        if (!strstr(body(&run.metrics), "\naicr_enroot_config_drift{file=\"enroot.conf\"} 1\n"))
                fail_msg("the held scrape was not answered with the Report published at its "
                         "release, after %" PRIu64 " ms:\n%s",
                         run.metrics_usec / 1000u, body(&run.metrics));
        exchanges_done(&run.healthz, 1);
        exchanges_done(&run.metrics, 1);
        server_stop(&s);
}

/* Nothing comes: the hold ends by itself, and the scrape gets what is known. */
static void test_hold_limit(void **state) {
        HoldRun run = {.healthz = {.request = GET("/healthz")},
                       .metrics = {.request = GET("/metrics")}};
        HttpdLimits lim = HTTPD_LIMITS_DEFAULT;
        uint64_t held_at;
        Server s = {};

        /* long enough for the client to come within it on a slow machine */
        lim.hold_max_usec = 1000u * 1000u;
        s.report = sample_current();
        server_start(&s, &lim);
        run.port = s.port;
        held_at = now_usec();
        httpd_hold(s.httpd);
        serve_while(&s, hold_run, &run);

        expect_exchange(&run.metrics, 200, NULL, NULL);
        assert_non_null(strstr(body(&run.metrics), "\naicr_enroot_config_current 1\n"));
        /* a lower bound on the monotonic clock: a slow machine only lengthens it */
        if (run.answered_at - held_at < lim.hold_max_usec)
                fail_msg("the scrape was answered %" PRIu64 " us after the hold began, before "
                         "its limit (%" PRIu64 " us)",
                         run.answered_at - held_at, lim.hold_max_usec);
        /* and a hold that ended holds nothing more: a held scrape would
         * take the whole limit again */
        exchanges_done(&run.metrics, 1);
        exchanges_done(&run.healthz, 1);
        run = (HoldRun){.port = s.port,
                        .healthz = {.request = GET("/healthz")},
                        .metrics = {.request = GET("/metrics")}};
        serve_while(&s, hold_run, &run);
        expect_exchange(&run.metrics, 200, NULL, NULL);
        if (run.metrics_usec >= lim.hold_max_usec)
                fail_msg("a scrape after the hold ended took %" PRIu64 " us: held again",
                         run.metrics_usec);
        exchanges_done(&run.healthz, 1);
        exchanges_done(&run.metrics, 1);
        server_stop(&s);
}

static void hold_and_leave_run(void *arg) {
        HoldRun *r = arg;

        r->fd = connect_port(NULL, r->port, HANG_USEC);
        if (r->fd < 0)
                return;
        r->metrics.error = send_all(r->fd, r->metrics.request, strlen(r->metrics.request));
        /* time for the server to take it and hold it */
        sleep_usec(200u * 1000u);
}

/* The server stops while it holds a scrape: the scrape is answered with
 * what is known, the connection closed, and nothing leaks (the sanitizer and
 * valgrind runs check that). */
static void test_hold_stop(void **state) {
        HoldRun run = {.metrics = {.request = GET("/metrics")}};
        HttpdLimits lim = HTTPD_LIMITS_DEFAULT;
        Server s = {};
        char *rest = NULL;
        size_t len = 0;
        int r;

        lim.hold_max_usec = 2u * HANG_USEC;
        s.report = sample_current();
        server_start(&s, &lim);
        run.port = s.port;
        httpd_hold(s.httpd);
        serve_while(&s, hold_and_leave_run, &run);
        assert_true(run.fd >= 0);
        assert_int_equal(run.metrics.error, 0);
        server_stop(&s);
        r = read_all(run.fd, &rest, &len);
        if (r != 0)
                fail_msg("the held connection after the server stopped: %s", strerror(-r));
        assert_int_equal(parse_status(rest), 200);
        assert_non_null(strstr(rest, "\naicr_enroot_config_current 1\n"));
        free(rest);
        (void) close(run.fd);
}

/* ---------------------------------------------------------------------------
 * Hostile requests */

static char *big_request(const char *before, size_t n, char fill, const char *after) {
        size_t lb = strlen(before), la = strlen(after);
        char *s = malloc(lb + n + la + 1);

        assert_non_null(s);
        memcpy(s, before, lb);
        memset(s + lb, fill, n);
        memcpy(s + lb + n, after, la + 1);
        return s;
}

static void test_hostile_requests(void **state) {
        static const char nul_junk[] = "\x00\x01\x02garbage\xff\r\n\r\n";
        static const char nul_header[] = "GET /healthz HTTP/1.1\r\nHo\x00st: t\r\n\r\n";
        HttpdLimits lim = HTTPD_LIMITS_DEFAULT;
        _cleanup_free_ char *big_header = NULL, *big_url = NULL, *many_headers = NULL;
        StrBuf mh = STRBUF_INIT(1u << 20);
        Server s = {};
        Exchange x[8] = {};
        Batch b = {.x = x, .n = ELEMENTSOF(x)};

        lim.idle_timeout_sec = 1;
        /* past the clients' wait: only the idle timeout can close garbage */
        lim.request_deadline_sec = 2u * HANG_USEC / 1000000u;
        big_header = big_request("GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: ", 64u * 1024u, 'a',
                                 "\r\n\r\n");
        big_url = big_request("GET /", 32u * 1024u, 'a', " HTTP/1.1\r\nHost: t\r\n\r\n");
        (void) strbuf_puts(&mh, "GET /healthz HTTP/1.1\r\nHost: t\r\n");
        for (int i = 0; i < 2000; i++)
                (void) strbuf_printf(&mh, "X-%d: y\r\n", i);
        (void) strbuf_puts(&mh, "\r\n");
        many_headers = strbuf_steal(&mh);

        x[0].request = big_header;
        x[1].request = big_url;
        x[2].request = many_headers;
        /* a TLS ClientHello's first bytes: not HTTP at all */
        x[3].request = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n";
        /* NUL bytes and binary junk */
        x[4].request = nul_junk;
        x[4].request_len = sizeof nul_junk - 1;
        x[5].request = "GET /healthz HTTP/9.9\r\nHost: t\r\n\r\n";
        x[6].request = nul_header;
        x[6].request_len = sizeof nul_header - 1;
        /* and still serving */
        x[7].request = GET("/healthz");

        s.report = sample_current();
        server_start(&s, &lim);
        b.port = s.port;
        serve_while(&s, batch_run, &b);

        /* refused within the per-connection memory, never read in full */
        expect_exchange(&x[0], 431, NULL, NULL);
        expect_exchange(&x[1], 414, NULL, NULL);
        expect_exchange(&x[2], 431, NULL, NULL);
        /* not HTTP: closed by the server (by the idle timeout at the
         * latest), not left open until the client gives up */
        for (size_t i = 3; i <= 4; i++) {
                if (x[i].error == -EAGAIN)
                        fail_msg("garbage %zu: waited %u s for the server to close it", i,
                                 HANG_USEC / 1000000u);
                if (x[i].error != 0 && x[i].error != -ECONNRESET)
                        fail_msg("garbage %zu: %s", i, strerror(-x[i].error));
                assert_true(x[i].status == -1 || x[i].status == 400);
        }
        expect_exchange(&x[5], 505, NULL, NULL);
        expect_exchange(&x[6], 400, NULL, NULL);
        expect_exchange(&x[7], 200, NULL, "ok\n");

        exchanges_done(x, ELEMENTSOF(x));
        server_stop(&s);
}

/* ---------------------------------------------------------------------------
 * Slow clients and connection limits */

typedef struct SlowRun {
        uint16_t port;
        bool with_fast;            /* another client meanwhile */
        int slow_error;            /* of the slow client's reads, or -EAGAIN: never closed */
        bool slow_open_after_fast; /* still open once the other client was answered */
        uint64_t slow_closed_usec; /* from before its partial request to the server's close */
        size_t slow_len;
        Exchange fast;
} SlowRun;

static void slow_run(void *arg) {
        SlowRun *r = arg;
        _cleanup_free_ char *got = NULL;
        uint64_t start;
        int fd;

        fd = connect_port(NULL, r->port, HANG_USEC);
        if (fd < 0) {
                r->slow_error = fd;
                return;
        }
        /* a request that never ends */
        start = now_usec();
        r->slow_error = send_all(fd, "GET /metrics HTTP/1.1\r\nHost: t\r\n", 32);

        if (r->with_fast) {
                char b;

                /* meanwhile another client is served, while the slow one
                 * still holds its connection */
                r->fast.request = GET("/healthz");
                exchange_run(r->port, &r->fast);
                r->slow_open_after_fast = recv(fd, &b, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
                (void) close(fd);
                return;
        }
        if (r->slow_error == 0)
                r->slow_error = read_all(fd, &got, &r->slow_len);
        r->slow_closed_usec = now_usec() - start;
        (void) close(fd);
}

static void test_slow_client(void **state) {
        HttpdLimits lim = HTTPD_LIMITS_DEFAULT;
        SlowRun run = {.with_fast = true};
        Server s = {};

        /* A slow client does not hold up another: answered while the slow
         * one is still connected. (An idle timeout of HANG_USEC: the slow
         * one is still there unless the other waited for it.) */
        lim.idle_timeout_sec = HANG_USEC / 1000000u;
        lim.request_deadline_sec = 2u * HANG_USEC / 1000000u;
        s.report = sample_current();
        server_start(&s, &lim);
        run.port = s.port;
        serve_while(&s, slow_run, &run);
        if (run.slow_error != 0)
                fail_msg("slow client: %s", strerror(-run.slow_error));
        expect_exchange(&run.fast, 200, NULL, "ok\n");
        if (!run.slow_open_after_fast)
                fail_msg("the other client was answered only once the slow one was gone");
        free(run.fast.response);
        server_stop(&s);

        /* The idle timeout closes the slow one, without an answer, and not
         * before the timeout (a lower bound: a slow machine only adds; the
         * slack is a tick of the coarse clock libmicrohttpd may read). */
        run = (SlowRun){};
        lim.idle_timeout_sec = 1; /* the request deadline stays past the client's wait */
        s.report = sample_current();
        server_start(&s, &lim);
        run.port = s.port;
        serve_while(&s, slow_run, &run);
        if (run.slow_error == -EAGAIN)
                fail_msg("slow client: waited %u s for the idle timeout to close it",
                         HANG_USEC / 1000000u);
        if (run.slow_error != 0 && run.slow_error != -ECONNRESET)
                fail_msg("slow client: %s", strerror(-run.slow_error));
        assert_int_equal(run.slow_len, 0);
        if (run.slow_closed_usec < 980u * 1000u)
                fail_msg("slow client closed after %" PRIu64 " ms, before the idle timeout (1 s)",
                         run.slow_closed_usec / 1000u);
        server_stop(&s);
}

/* Reads one response with a Content-Length body from a connection that stays
 * open. Returns 0 with *ret new, or -errno (-EAGAIN: the receive timeout,
 * -EPIPE: closed before the end). */
static int read_response(int fd, char **ret) {
        StrBuf b = STRBUF_INIT(8u << 20);
        const char *end, *cl;
        size_t want = SIZE_MAX;
        char buf[16384];
        int r = 0;

        while (b.len < want) {
                ssize_t n = recv(fd, buf, sizeof buf, 0);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = n < 0 ? negative_errno() : -EPIPE;
                        break;
                }
                assert_int_equal(strbuf_append(&b, buf, (size_t) n), 0);
                end = strstr(strbuf_str(&b), "\r\n\r\n");
                if (end && want == SIZE_MAX) {
                        cl = strcasestr(strbuf_str(&b), "\r\nContent-Length: ");
                        if (!cl || cl > end) {
                                r = -EBADMSG;
                                break;
                        }
                        want = (size_t) (end + 4 - b.data) +
                               strtoul(cl + strlen("\r\nContent-Length: "), NULL, 10);
                }
        }
        if (r < 0) {
                strbuf_done(&b);
                return r;
        }
        *ret = strbuf_steal(&b);
        return 0;
}

typedef struct KeepRun {
        uint16_t port;
        int error;
        char *first, *second;      /* two scrapes on one connection */
        uint64_t idle_closed_usec; /* from the second request to the server's close */
        int idle_error;
        Exchange close_asked; /* "Connection: close": closed after the answer */
} KeepRun;

static void keep_run(void *arg) {
        static const char req[] = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
        KeepRun *r = arg;
        uint64_t start;
        char b;
        int fd;

        fd = connect_port(NULL, r->port, HANG_USEC);
        if (fd < 0) {
                r->error = fd;
                return;
        }
        r->error = send_all(fd, req, strlen(req));
        if (r->error == 0)
                r->error = read_response(fd, &r->first);
        /* the server starts the next deadline once it has answered: after this */
        start = now_usec();
        if (r->error == 0)
                r->error = send_all(fd, req, strlen(req));
        if (r->error == 0)
                r->error = read_response(fd, &r->second);
        /* then nothing: the server ends the idle connection at the request deadline */
        if (r->error == 0)
                r->idle_error = recv(fd, &b, 1, 0) < 0 ? negative_errno() : 0;
        r->idle_closed_usec = now_usec() - start;
        (void) close(fd);

        r->close_asked.request = "GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
        exchange_run(r->port, &r->close_asked);
}

/* /metrics keeps the connection for the next scrape (HTTP/1.1 keep-alive),
 * until the request deadline passes without a request. */
static void test_metrics_keep_alive(void **state) {
        HttpdLimits lim = HTTPD_LIMITS_DEFAULT;
        KeepRun run = {};
        Server s = {};

        lim.request_deadline_sec = 1;
        /* past the client's wait: only the request deadline can end it */
        lim.idle_timeout_sec = 2u * HANG_USEC / 1000000u;
        s.report = sample_drifted();
        server_start(&s, &lim);
        run.port = s.port;
        serve_while(&s, keep_run, &run);

        if (run.error != 0)
                fail_msg("keep-alive scrapes: %s", strerror(-run.error));
        assert_int_equal(parse_status(run.first), 200);
        assert_int_equal(parse_status(run.second), 200);
        assert_null(strcasestr(run.first, "\r\nConnection: close"));
        assert_non_null(strstr(run.second, "\naicr_enroot_config_drift{file=\"enroot.conf\"} 1\n"));
        if (run.idle_error == -EAGAIN)
                fail_msg("idle keep-alive connection: waited %u s for the server to close it",
                         HANG_USEC / 1000000u);
        if (run.idle_error != 0 && run.idle_error != -ECONNRESET)
                fail_msg("idle keep-alive connection: %s", strerror(-run.idle_error));
        /* not before the request deadline (1 s): a lower bound on the
         * monotonic clock the deadline is kept on, which a slow machine
         * only lengthens */
        if (run.idle_closed_usec < 1000u * 1000u)
                fail_msg("idle keep-alive connection closed %" PRIu64
                         " ms after its last request, before the request deadline (1 s)",
                         run.idle_closed_usec / 1000u);
        /* asked to close: answered, then closed (read_all saw the end) */
        expect_exchange(&run.close_asked, 200, "text/plain; version=0.0.4; charset=utf-8", NULL);

        free(run.first);
        free(run.second);
        free(run.close_asked.response);
        server_stop(&s);
}

typedef struct TrickleRun {
        uint16_t port;
        int error;
        bool closed;          /* by the server, not by the client giving up */
        uint64_t closed_usec; /* from the connection to the server's close */
        unsigned bytes_sent;
        Exchange fast;
} TrickleRun;

static void trickle_run(void *arg) {
        static const char line[] = "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: ";
        TrickleRun *r = arg;
        uint64_t start = now_usec();
        int fd;

        fd = connect_port(NULL, r->port, HANG_USEC);
        if (fd < 0) {
                r->error = fd;
                return;
        }
        r->error = send_all(fd, line, strlen(line));
        /* a byte every 100 ms, well inside the idle timeout, never the end */
        while (r->error == 0 && now_usec() - start < HANG_USEC) {
                char b;
                ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT);

                if (n == 0 || (n < 0 && errno == ECONNRESET)) {
                        r->closed = true;
                        break;
                }
                if (send_all(fd, "a", 1) < 0)
                        break;
                r->bytes_sent++;
                if (r->bytes_sent == 3) {
                        /* meanwhile another client is served at once */
                        r->fast.request = GET("/healthz");
                        exchange_run(r->port, &r->fast);
                }
                sleep_usec(100u * 1000u);
        }
        r->closed_usec = now_usec() - start;
        (void) close(fd);
}

/* A client that trickles its request, a byte well within the idle timeout,
 * loses its connection at the request deadline. */
static void test_request_deadline(void **state) {
        HttpdLimits lim = HTTPD_LIMITS_DEFAULT;
        TrickleRun run = {};
        Server s = {};

        lim.request_deadline_sec = 1;
        lim.idle_timeout_sec = 10;
        s.report = sample_current();
        server_start(&s, &lim);
        run.port = s.port;
        serve_while(&s, trickle_run, &run);

        if (run.error != 0)
                fail_msg("trickling client: %s", strerror(-run.error));
        expect_exchange(&run.fast, 200, NULL, "ok\n");
        if (!run.closed)
                fail_msg("trickling client: waited %u s (%u bytes) for the server to close it",
                         HANG_USEC / 1000000u, run.bytes_sent);
        /* not before the request deadline (1 s), counted from before the
         * connection: a lower bound a slow machine only lengthens */
        if (run.closed_usec < 1000u * 1000u)
                fail_msg("trickling client closed after %" PRIu64 " ms (%u bytes), before the "
                         "request deadline (1 s)",
                         run.closed_usec / 1000u, run.bytes_sent);

        free(run.fast.response);
        server_stop(&s);
}

/* Once every request is answered and every connection gone, nothing is left
 * to time: the loop of an idle agent must not wake up, the request deadline's
 * timer included (the agent is idle between a scrape and the next). */
static void test_idle_no_wakeups(void **state) {
        HttpdLimits lim = HTTPD_LIMITS_DEFAULT;
        Exchange x[] = {{.request = GET("/healthz")}, {.request = GET("/metrics")}};
        Batch b = {.x = x, .n = ELEMENTSOF(x)};
        uint64_t t0, elapsed;
        unsigned sockets;
        Server s = {};
        int r = 1;

        lim.request_deadline_sec = 1;
        s.report = sample_current();
        server_start(&s, &lim);
        sockets = count_sockets();
        b.port = s.port;
        serve_while(&s, batch_run, &b);
        expect_exchange(&x[0], 200, NULL, "ok\n");
        expect_exchange(&x[1], 200, NULL, NULL);
        /* the clients' closes, and libmicrohttpd's clean-up of them: until
         * the server holds no connection, then until nothing is left to do */
        t0 = now_usec();
        while (count_sockets() != sockets) {
                if (now_usec() - t0 > HANG_USEC)
                        fail_msg("waited %u s for the server to close its side of 2 connections",
                                 HANG_USEC / 1000000u);
                assert_true(sd_event_run(s.event, 10u * 1000u) >= 0);
        }
        while (r > 0)
                r = sd_event_run(s.event, 0);
        assert_int_equal(r, 0);

        /* past the request deadline of both connections */
        t0 = now_usec();
        r = sd_event_run(s.event, 1500u * 1000u);
        elapsed = now_usec() - t0;
        print_message("idle after 2 requests: sd_event_run() returned %d after %" PRIu64 " ms\n", r,
                      elapsed / 1000u);
        assert_int_equal(r, 0);
        assert_true(elapsed >= 1400u * 1000u);

        for (size_t i = 0; i < ELEMENTSOF(x); i++)
                free(x[i].response);
        server_stop(&s);
}

/* A flood of scrapes, each on a connection of its own that the server
 * closes: a run of libmicrohttpd that closes one asks for another run on the
 * loop's next turn. The rest of the loop (here a timer; in the agent the
 * kube client, the watcher's timers, SIGTERM) must not wait behind those. */
typedef struct Flood {
        uint16_t port;
        uint64_t until;
        unsigned answered;
} Flood;

static void *flood_main(void *arg) {
        Flood *f = arg;
        static const char request[] = GET("/healthz");

        while (now_usec() < f->until) {
                char buf[512];
                int fd = connect_port(NULL, f->port, HANG_USEC);

                if (fd < 0)
                        continue;
                if (send_all(fd, request, sizeof request - 1) == 0) {
                        while (recv(fd, buf, sizeof buf, 0) > 0)
                                ;
                        __atomic_fetch_add(&f->answered, 1, __ATOMIC_RELAXED);
                }
                (void) close(fd);
        }
        return NULL;
}

static void flood_run(void *arg) {
        pthread_t t[4];

        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                assert_int_equal(pthread_create(&t[i], NULL, flood_main, arg), 0);
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                assert_int_equal(pthread_join(t[i], NULL), 0);
}

static int on_due(sd_event_source *src, uint64_t usec, void *userdata) {
        *(uint64_t *) userdata = now_usec();
        return 0;
}

static void test_flood_leaves_room(void **state) {
        HttpdLimits lim = HTTPD_LIMITS_DEFAULT;
        sd_event_source *timer = NULL;
        uint64_t due, fired = 0;
        Server s = {};
        Flood f = {};

        s.report = sample_current();
        server_start(&s, &lim);
        f.port = s.port;
        f.until = now_usec() + 1500u * 1000u;
        due = now_usec() + 300u * 1000u;
        assert_int_equal(
                sd_event_add_time(s.event, &timer, CLOCK_MONOTONIC, due, 1, on_due, &fired), 0);
        serve_while(&s, flood_run, &f);
        print_message("flood: %u scrapes answered; the timer ran %" PRIu64 " ms late\n", f.answered,
                      fired ? (fired - due) / 1000u : 0);
        assert_true(f.answered > 0);
        assert_true(fired >= due);
        assert_true(fired - due < 300u * 1000u);

        sd_event_source_disable_unref(timer);
        server_stop(&s);
}

typedef struct EvictRun {
        uint16_t port;
        bool no_alias;          /* 127.0.0.2 and up cannot be bound here */
        const char *hung;       /* what a wait gave up on */
        Exchange first, second; /* newcomers while every other slot is held */
        bool closed[4];         /* which slow connection the server closed */
} EvictRun;

static void evict_run(void *arg) {
        static const char partial[] = "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: a";
        static const char *const sources[4] = {"127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"};
        EvictRun *r = arg;
        int slow[4] = {-1, -1, -1, -1};
        unsigned sockets = count_sockets();

        /* every non-reserved slot, oldest first: each accepted by the server
         * (its socket and ours: two more in this process) before the next */
        for (size_t i = 0; i < ELEMENTSOF(slow); i++) {
                slow[i] = connect_port(sources[i], r->port, HANG_USEC);
                if (slow[i] == -EADDRNOTAVAIL || slow[i] == -EINVAL) {
                        r->no_alias = true;
                        goto out;
                }
                if (slow[i] >= 0)
                        (void) send_all(slow[i], partial, strlen(partial));
                if (!await_sockets(sockets + 2 * ((unsigned) i + 1))) {
                        r->hung = "the server to accept a slow client";
                        goto out;
                }
        }

        r->first.request = GET("/healthz");
        r->first.source = "127.0.0.4";
        exchange_run(r->port, &r->first);
        r->second.request = GET("/healthz");
        r->second.source = "127.0.0.5";
        exchange_run(r->port, &r->second);

        /* the evicted one is closed (it may be told after the newcomer's
         * answer); the others must still be open now, long before their
         * timeouts (10 s) could have closed them */
        if (slow[0] >= 0) {
                char b;
                ssize_t n = recv(slow[0], &b, 1, 0);

                r->closed[0] = n == 0 || (n < 0 && errno == ECONNRESET);
        }
        for (size_t i = 1; i < ELEMENTSOF(slow); i++) {
                char b;
                ssize_t n = slow[i] >= 0 ? recv(slow[i], &b, 1, MSG_DONTWAIT) : 0;

                r->closed[i] = n == 0 || (n < 0 && errno == ECONNRESET);
        }
out:
        for (size_t i = 0; i < ELEMENTSOF(slow); i++)
                if (slow[i] >= 0)
                        (void) close(slow[i]);
}

/* With every non-reserved slot held by clients that have not sent their
 * request, a newcomer from another address takes the slot of the one that
 * has waited longest, and is served at once: while the others still hold
 * theirs, long before a timeout frees any. */
static void test_eviction(void **state) {
        HttpdLimits lim = {.max_connections = 4 + HTTPD_RESERVED_LOCAL_CONNECTIONS,
                           .max_connections_per_ip = 2,
                           .idle_timeout_sec = 10,
                           .connection_memory_bytes = HTTPD_CONNECTION_MEMORY_BYTES,
                           .request_deadline_sec = 10};
        EvictRun run = {};
        Server s = {};

        s.report = sample_current();
        server_start(&s, &lim);
        run.port = s.port;
        serve_while(&s, evict_run, &run);
        if (run.no_alias) {
                server_stop(&s);
                skip_test("eviction-no-127.0.0.2",
                          "127.0.0.2 cannot be bound here: eviction was not tested");
        }
        if (run.hung)
                fail_msg("waited %u s for %s", HANG_USEC / 1000000u, run.hung);

        expect_exchange(&run.first, 200, NULL, "ok\n");
        expect_exchange(&run.second, 200, NULL, "ok\n");
        /* the oldest gave its slot, which the second newcomer found free
         * again after the first; the others kept theirs */
        assert_true(run.closed[0]);
        assert_false(run.closed[1]);
        assert_false(run.closed[2]);
        assert_false(run.closed[3]);

        free(run.first.response);
        free(run.second.response);
        server_stop(&s);
}

typedef struct LimitRun {
        uint16_t port;
        bool no_alias;    /* 127.0.0.2 cannot be bound here */
        const char *hung; /* what a wait gave up on */
        /* over the per-address limit */
        bool over_ip_done;
        int over_ip_error;
        size_t over_ip_len;
        unsigned hogs_open_after_over; /* of the first three */
        /* another address meanwhile */
        Exchange other;
        /* over the total limit */
        int queued_early_error; /* no answer while every slot is taken */
        Exchange queued;        /* then served */
        unsigned hogs_closed;
} LimitRun;

static bool still_open(int fd) {
        char b;
        return fd >= 0 && recv(fd, &b, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

static void limit_run(void *arg) {
        LimitRun *r = arg;
        int hogs[4] = {-1, -1, -1, -1}, over, q;
        _cleanup_free_ char *got = NULL;
        unsigned sockets = count_sockets();
        char buf[64];

        hogs[0] = connect_port("127.0.0.1", r->port, HANG_USEC);
        hogs[1] = connect_port("127.0.0.1", r->port, HANG_USEC);
        hogs[2] = connect_port("127.0.0.2", r->port, HANG_USEC);
        if (hogs[2] == -EADDRNOTAVAIL || hogs[2] == -EINVAL) {
                r->no_alias = true;
                goto out;
        }
        /* the server accepted them: its sockets and ours */
        if (!await_sockets(sockets + 6)) {
                r->hung = "the server to accept 3 connections";
                goto out;
        }

        /* a third connection from 127.0.0.1: closed at once, while the
         * others from that address (older, so their idle timeout comes
         * first) are still open */
        over = connect_port("127.0.0.1", r->port, HANG_USEC);
        r->over_ip_error = over < 0 ? over : read_all(over, &got, &r->over_ip_len);
        for (size_t i = 0; i < 3; i++)
                r->hogs_open_after_over += still_open(hogs[i]);
        r->over_ip_done = true;
        if (over >= 0)
                (void) close(over);

        /* 127.0.0.2 has a slot left */
        r->other.request = GET("/healthz");
        r->other.source = "127.0.0.2";
        exchange_run(r->port, &r->other);

        /* now every slot is taken: 127.0.0.3 waits in the kernel's queue */
        if (!await_sockets(sockets + 6)) { /* the server has forgotten "other" */
                r->hung = "the server to close the other client's connection";
                goto out;
        }
        hogs[3] = connect_port("127.0.0.2", r->port, HANG_USEC);
        if (!await_sockets(sockets + 8)) {
                r->hung = "the server to accept a fourth connection";
                goto out;
        }
        /* a short wait that finds no answer: a lower bound (a slow machine
         * waits longer), far inside the idle timeout that frees the slots */
        q = connect_port("127.0.0.3", r->port, 300u * 1000u);
        if (q < 0) {
                r->queued_early_error = q;
                goto out;
        }
        (void) send_all(q, GET("/healthz"), strlen(GET("/healthz")));
        r->queued_early_error = (int) recv(q, buf, sizeof buf, MSG_PEEK) < 0 ? negative_errno() : 0;
        {
                struct timeval tv = {.tv_sec = HANG_USEC / 1000000u};
                (void) setsockopt(q, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        }
        r->queued.error = read_all(q, &r->queued.response, &r->queued.len);
        r->queued.status = parse_status(r->queued.response);
        r->queued.request = GET("/healthz");
        (void) close(q);

        /* the idle ones were closed by the server */
        for (size_t i = 0; i < ELEMENTSOF(hogs); i++) {
                ssize_t n = hogs[i] >= 0 ? recv(hogs[i], buf, sizeof buf, 0) : -1;
                if (n == 0 || (n < 0 && errno == ECONNRESET))
                        r->hogs_closed++;
        }
out:
        for (size_t i = 0; i < ELEMENTSOF(hogs); i++)
                if (hogs[i] >= 0)
                        (void) close(hogs[i]);
}

static void test_connection_limits(void **state) {
        /* the idle timeout leaves a wide margin over the client's 300 ms wait below */
        HttpdLimits lim = {.max_connections = 4,
                           .max_connections_per_ip = 2,
                           .idle_timeout_sec = 5,
                           .connection_memory_bytes = HTTPD_CONNECTION_MEMORY_BYTES};
        LimitRun run = {};
        Server s = {};

        s.report = sample_current();
        server_start(&s, &lim);
        run.port = s.port;
        serve_while(&s, limit_run, &run);
        if (run.no_alias) {
                server_stop(&s);
                skip_test("connection-limits-no-127.0.0.2",
                          "127.0.0.2 cannot be bound here: the connection limits were not tested");
        }
        if (!run.over_ip_done)
                fail_msg("waited %u s for %s", HANG_USEC / 1000000u, run.hung);

        /* over the per-address limit: closed at once, not after the idle timeout */
        if (run.over_ip_error == -EAGAIN)
                fail_msg("over the per-address limit: waited %u s for the server to close it",
                         HANG_USEC / 1000000u);
        if (run.over_ip_error != 0 && run.over_ip_error != -ECONNRESET)
                fail_msg("over the per-address limit: %s", strerror(-run.over_ip_error));
        assert_int_equal(run.over_ip_len, 0);
        if (run.hogs_open_after_over != 3)
                fail_msg("over the per-address limit: closed after %u of the older connections",
                         3 - run.hogs_open_after_over);
        if (run.hung)
                fail_msg("waited %u s for %s", HANG_USEC / 1000000u, run.hung);
        expect_exchange(&run.other, 200, NULL, "ok\n");

        /* over the total limit: no answer while the slots are held... */
        assert_int_equal(run.queued_early_error, -EAGAIN);
        /* ...then served once the idle timeout frees them */
        expect_exchange(&run.queued, 200, NULL, "ok\n");
        assert_int_equal(run.hogs_closed, 4);

        free(run.other.response);
        free(run.queued.response);
        server_stop(&s);
}

/* ---------------------------------------------------------------------------
 * Binding */

static int listener(int family, uint16_t *ret_port) {
        union {
                struct sockaddr sa;
                struct sockaddr_in in;
                struct sockaddr_in6 in6;
        } a = {};
        socklen_t len = family == AF_INET6 ? sizeof a.in6 : sizeof a.in;
        int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0), zero = 0;

        if (fd < 0)
                return negative_errno();
        if (family == AF_INET6) {
                a.in6.sin6_family = AF_INET6;
                a.in6.sin6_addr = in6addr_any;
                (void) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        } else {
                a.in.sin_family = AF_INET;
                a.in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        }
        assert_int_equal(bind(fd, &a.sa, len), 0);
        assert_int_equal(listen(fd, 4), 0);
        assert_int_equal(getsockname(fd, &a.sa, &len), 0);
        *ret_port = ntohs(family == AF_INET6 ? a.in6.sin6_port : a.in.sin_port);
        return fd;
}

/* An IPv4 socket bound to every address at *port (0: one the kernel picks,
 * written back) and never listening: while it is open no other process can
 * take the port for IPv4, and a connection to it is refused. A port closed
 * after use would not do: another test running beside this one can be given
 * it. -EADDRINUSE where a socket has the port already. */
static int hold_port4(uint16_t *port) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(*port)};
        socklen_t len = sizeof a;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return negative_errno();
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        if (bind(fd, (struct sockaddr *) &a, len) < 0) {
                int r = negative_errno();

                (void) close(fd);
                return r;
        }
        assert_int_equal(getsockname(fd, (struct sockaddr *) &a, &len), 0);
        *port = ntohs(a.sin_port);
        return fd;
}

static void test_port_in_use(void **state) {
        _cleanup_free_ char *error = NULL, *error_any = NULL, *error_na = NULL, *want = NULL;
        _cleanup_close_ int fd = -EBADF, fd6 = -EBADF;
        char listen[64];
        uint16_t port;
        Server s = {};

        fd = listener(AF_INET, &port);
        assert_true(fd >= 0);
        (void) snprintf(listen, sizeof listen, "127.0.0.1:%u", (unsigned) port);
        assert_int_equal(server_start_at(&s, listen, NULL, false, &error), -EADDRINUSE);
        assert_null(s.httpd);
        assert_true(asprintf(&want, "port %u is already in use: choose another with --listen",
                             (unsigned) port) > 0);
        assert_string_equal(error, want);

        /* all addresses, with something on the port */
        fd6 = listener(AF_INET6, &port);
        if (fd6 < 0)
                fd6 = listener(AF_INET, &port);
        (void) snprintf(listen, sizeof listen, ":%u", (unsigned) port);
        assert_int_equal(server_start_at(&s, listen, NULL, false, &error_any), -EADDRINUSE);
        assert_non_null(strstr(error_any, "is already in use"));

        /* TEST-NET-1 (RFC 5737) is nobody's address */
        assert_int_equal(server_start_at(&s, "192.0.2.1:0", NULL, false, &error_na),
                         -EADDRNOTAVAIL);
        assert_string_equal(error_na, "cannot listen on 192.0.2.1:0: the address is not one of "
                                      "this host's: choose another with --listen");
        server_stop(&s);
}

typedef struct FamilyRun {
        uint16_t port;
        bool v6;
        int via4, via6; /* status of GET /healthz over each family, or -errno */
} FamilyRun;

static int healthz_over(int fd) {
        _cleanup_free_ char *got = NULL;
        size_t len;
        int r;

        if (fd < 0)
                return fd;
        r = send_all(fd, GET("/healthz"), strlen(GET("/healthz")));
        if (r >= 0)
                r = read_all(fd, &got, &len);
        (void) close(fd);
        return r < 0 ? r : parse_status(got);
}

static void family_run(void *arg) {
        FamilyRun *r = arg;

        r->via4 = healthz_over(connect_port(NULL, r->port, 5u * 1000000u));
        r->via6 = r->v6 ? healthz_over(connect_port6(r->port, 5u * 1000000u)) : 0;
}

static bool have_ipv6_loopback(void) {
        struct sockaddr_in6 a = {.sin6_family = AF_INET6};
        int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
        bool ok;

        if (fd < 0)
                return false;
        a.sin6_addr = in6addr_loopback;
        ok = bind(fd, (struct sockaddr *) &a, sizeof a) == 0;
        (void) close(fd);
        return ok;
}

static void test_port_zero(void **state) {
        bool v6 = have_ipv6_loopback();
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int fd4 = -EBADF;
        char want[64];
        Server s = {};
        FamilyRun run = {};

        /* one address, IPv4 */
        assert_int_equal(server_start_at(&s, "localhost:0", NULL, false, &error), 0);
        assert_int_not_equal(s.port, 0);
        (void) snprintf(want, sizeof want, "127.0.0.1:%u", (unsigned) s.port);
        assert_string_equal(httpd_get_address(s.httpd), want);
        run = (FamilyRun){.port = s.port};
        serve_while(&s, family_run, &run);
        assert_int_equal(run.via4, 200);
        s.httpd = httpd_free(s.httpd);

        /* all addresses: dual-stack, or IPv4 where the kernel has no IPv6 */
        assert_int_equal(server_start_at(&s, ":0", NULL, false, &error), 0);
        (void) snprintf(want, sizeof want, "%s:%u", v6 ? "[::]" : "0.0.0.0", (unsigned) s.port);
        assert_string_equal(httpd_get_address(s.httpd), want);
        run = (FamilyRun){.port = s.port, .v6 = v6};
        serve_while(&s, family_run, &run);
        assert_int_equal(run.via4, 200);
        if (v6)
                assert_int_equal(run.via6, 200);
        s.httpd = httpd_free(s.httpd);

        if (!v6) {
                server_stop(&s);
                fprintf(stderr, "note: no IPv6 loopback here: the IPv6-only cases were not run\n");
                return;
        }
        /* An explicit IPv6 address is that family only. The port the kernel
         * gives an IPv6-only socket can be one an IPv4 server beside this test
         * listens on, so the test holds the IPv4 side of the port (a new
         * server where it cannot): the IPv4 connection then meets nobody's
         * server, and must be refused. */
        for (unsigned tries = 0;; tries++) {
                assert_int_equal(server_start_at(&s, "[::]:0", NULL, false, &error), 0);
                fd4 = hold_port4(&s.port);
                if (fd4 >= 0)
                        break;
                assert_int_equal(fd4, -EADDRINUSE);
                assert_true(tries < 16);
                s.httpd = httpd_free(s.httpd);
        }
        run = (FamilyRun){.port = s.port, .v6 = true};
        serve_while(&s, family_run, &run);
        assert_int_equal(run.via4, -ECONNREFUSED);
        assert_int_equal(run.via6, 200);
        server_stop(&s);
}

/* ---------------------------------------------------------------------------
 * --check against the real server */

typedef struct CheckRun {
        char listen[64];
        bool require_current;
        uint64_t timeout_usec;
        int r;
        bool ready;
        char *line;
        int exit_status;
} CheckRun;

static void check_job(void *arg) {
        CheckRun *c = arg;

        c->r = check_query(c->listen, c->require_current, c->timeout_usec, &c->ready, &c->line);
        c->exit_status = check_run(c->listen, c->require_current, c->timeout_usec);
}

static void expect_verdict(const CheckRun *c, bool ready, const char *line) {
        assert_int_equal(c->r, 0);
        if (!streq(c->line, line))
                fail_msg("check %s%s: \"%s\", expected \"%s\"", c->listen,
                         c->require_current ? " --require-current" : "", c->line, line);
        assert_int_equal(c->ready, ready);
        assert_int_equal(c->exit_status, ready ? 0 : 1);
}

static void test_check_server(void **state) {
        _cleanup_free_ char *error = NULL, *want = NULL;
        CheckRun c[5] = {};
        uint16_t free_port;
        Server s = {};
        _cleanup_close_ int fd = -EBADF;

        s.report = sample_drifted();
        server_start(&s, NULL);
        (void) snprintf(c[0].listen, sizeof c[0].listen, "127.0.0.1:%u", (unsigned) s.port);
        serve_while(&s, check_job, &c[0]);
        /* the answer, not the timeout's "no answer" line */
        expect_verdict(&c[0], true, "ready: pod drifted: enroot.conf drifted (2 keys)");

        (void) snprintf(c[1].listen, sizeof c[1].listen, "localhost:%u", (unsigned) s.port);
        c[1].require_current = true;
        serve_while(&s, check_job, &c[1]);
        expect_verdict(&c[1], false,
                       "not ready: pod drifted and --require-current is set: enroot.conf drifted "
                       "(2 keys)");

        s.report = report_free(s.report);
        s.report = sample_current();
        memcpy(c[2].listen, c[1].listen, sizeof c[2].listen);
        c[2].require_current = true;
        serve_while(&s, check_job, &c[2]);
        expect_verdict(&c[2], true, "ready: pod current");
        s.httpd = httpd_free(s.httpd);
        s.report = report_free(s.report);

        /* ":PORT" asks loopback */
        assert_int_equal(server_start_at(&s, ":0", NULL, false, &error), 0);
        (void) snprintf(c[3].listen, sizeof c[3].listen, ":%u", (unsigned) s.port);
        serve_while(&s, check_job, &c[3]);
        expect_verdict(&c[3], false, "not ready: the first evaluation has not completed yet");
        server_stop(&s);

        /* nothing listening: the port is held, never listened on */
        free_port = 0;
        fd = hold_port4(&free_port);
        assert_true(fd >= 0);
        (void) snprintf(c[4].listen, sizeof c[4].listen, "0.0.0.0:%u", (unsigned) free_port);
        check_job(&c[4]);
        assert_true(asprintf(&want, "not ready: cannot connect to 127.0.0.1:%u: Connection refused",
                             (unsigned) free_port) > 0);
        expect_verdict(&c[4], false, want);

        for (size_t i = 0; i < ELEMENTSOF(c); i++)
                free(c[i].line);
}

/* A fake daemon: accepts one connection, keeps the request, answers with a
 * canned text in small pieces (so the client sees partial reads), closes. */
typedef struct Fake {
        int fd;
        const char *answer;
        size_t chunk;
        bool silent; /* never accept: the connection waits in the backlog */
        char request[1024];
} Fake;

static void *fake_main(void *arg) {
        Fake *f = arg;
        size_t len, got = 0;
        int c;

        c = accept4(f->fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
                return NULL;
        while (got < sizeof f->request - 1 && !strstr(f->request, "\r\n\r\n")) {
                ssize_t n = recv(c, f->request + got, sizeof f->request - 1 - got, 0);
                if (n <= 0)
                        break;
                got += (size_t) n;
                f->request[got] = '\0';
        }
        len = strlen(f->answer);
        for (size_t i = 0; i < len; i += f->chunk) {
                (void) send_all(c, f->answer + i, len - i < f->chunk ? len - i : f->chunk);
                sleep_usec(2000);
        }
        (void) close(c);
        return NULL;
}

/* line with "PORT" replaced by the port number, as a new string */
static char *with_port(const char *line, uint16_t port) {
        const char *p = strstr(line, "PORT");
        char *s;

        if (!p)
                return strdup(line);
        assert_true(asprintf(&s, "%.*s%u%s", (int) (p - line), line, (unsigned) port, p + 4) > 0);
        return s;
}

static void test_check_answers(void **state) {
        static const struct {
                const char *answer;
                size_t chunk;
                bool require_current;
                bool ready;
                const char *line; /* PORT: the port */
        } rows[] = {
                {"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nready\n", 1, false, true, "ready"},
                {"HTTP/1.0 503 Service Unavailable\r\n\r\nnot ready: because\r\nmore\n", 3, true,
                 false, "not ready: because"},
                {"HTTP/1.1 200 OK\r\n\r\n", 100, false, true, "ready"},
                {"HTTP/1.1 200 OK\r\n\r\n\x1b[31mred\x07 line\n", 7, false, true, "?[31mred? line"},
                {"HTTP/1.1 404 Not Found\r\n\r\nnope\n", 100, false, false,
                 "not ready: 127.0.0.1:PORT answered /readyz with HTTP status 404"},
                {"SSH-2.0-OpenSSH_9.2\r\n", 100, false, false,
                 "not ready: 127.0.0.1:PORT did not answer with HTTP"},
                {"", 1, false, false, "not ready: 127.0.0.1:PORT did not answer with HTTP"},
                {"HTTP/1.1 2000 OK\r\n\r\nready\n", 100, false, false,
                 "not ready: 127.0.0.1:PORT did not answer with HTTP"},
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                Fake f = {.answer = rows[i].answer, .chunk = rows[i].chunk};
                _cleanup_free_ char *line = NULL, *want_line = NULL, *want_request = NULL;
                char listen[64];
                uint16_t port;
                pthread_t t;
                bool ready;

                f.fd = listener(AF_INET, &port);
                assert_true(f.fd >= 0);
                assert_int_equal(pthread_create(&t, NULL, fake_main, &f), 0);
                (void) snprintf(listen, sizeof listen, "127.0.0.1:%u", (unsigned) port);
                assert_int_equal(
                        check_query(listen, rows[i].require_current, 2u * 1000000u, &ready, &line),
                        0);
                assert_int_equal(pthread_join(t, NULL), 0);
                (void) close(f.fd);

                want_line = with_port(rows[i].line, port);
                if (!streq(line, want_line))
                        fail_msg("row %zu: \"%s\", expected \"%s\"", i, line, want_line);
                assert_int_equal(ready, rows[i].ready);
                /* exactly the fixed request */
                assert_true(asprintf(&want_request,
                                     "GET /readyz%s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
                                     "User-Agent: aicr-enroot-agent-check\r\n"
                                     "Connection: close\r\n\r\n",
                                     rows[i].require_current ? "?require=current" : "",
                                     (unsigned) port) > 0);
                assert_string_equal(f.request, want_request);
        }
}

typedef struct TimedQuery {
        char listen[64];
        uint64_t timeout_usec;
        int r;
        bool ready;
        char *line;
        uint64_t elapsed_usec;
} TimedQuery;

static void *timed_query_main(void *arg) {
        TimedQuery *q = arg;
        uint64_t start = now_usec();

        q->r = check_query(q->listen, false, q->timeout_usec, &q->ready, &q->line);
        q->elapsed_usec = now_usec() - start;
        return NULL;
}

static void test_check_timeout_and_bounds(void **state) {
        _cleanup_free_ char *line = NULL, *want = NULL, *line2 = NULL, *line3 = NULL;
        _cleanup_free_ char *huge = NULL;
        char listen[64];
        uint16_t port;
        bool ready = true;
        pthread_t t;
        Fake f = {};
        int fd;

        /* accepted by the kernel, never answered: the probe gives up, and
         * not before its timeout (a lower bound: a slow machine only adds);
         * a probe that never gives up fails once HANG_USEC have passed */
        fd = listener(AF_INET, &port);
        {
                TimedQuery q = {.timeout_usec = 200u * 1000u};
                struct timespec until;

                (void) snprintf(q.listen, sizeof q.listen, "127.0.0.1:%u", (unsigned) port);
                assert_int_equal(clock_gettime(CLOCK_REALTIME, &until), 0);
                /* pthread_timedjoin_np() takes a CLOCK_REALTIME time: used
                 * only to end a hung test, never to measure */
                until.tv_sec += HANG_USEC / 1000000u;
                assert_int_equal(pthread_create(&t, NULL, timed_query_main, &q), 0);
                if (pthread_timedjoin_np(t, NULL, &until) != 0)
                        fail_msg("waited %u s for --check to give up on a server that never "
                                 "answers",
                                 HANG_USEC / 1000000u);
                (void) close(fd);
                assert_int_equal(q.r, 0);
                assert_true(asprintf(&want, "not ready: no answer from 127.0.0.1:%u within 200 ms",
                                     (unsigned) port) > 0);
                assert_string_equal(q.line, want);
                assert_false(q.ready);
                if (q.elapsed_usec < 200u * 1000u)
                        fail_msg("--check gave up after %" PRIu64
                                 " ms, before its timeout (200 ms)",
                                 q.elapsed_usec / 1000u);
                line = q.line;
        }

        /* an answer larger than the buffer: only CHECK_MAX_RESPONSE_BYTES are read */
        huge = big_request("HTTP/1.1 503 Service Unavailable\r\nX-Pad: ",
                           2u * CHECK_MAX_RESPONSE_BYTES, 'p', "\r\n\r\nnot ready: late\n");
        f.answer = huge;
        f.chunk = 512;
        f.fd = listener(AF_INET, &port);
        assert_int_equal(pthread_create(&t, NULL, fake_main, &f), 0);
        (void) snprintf(listen, sizeof listen, "127.0.0.1:%u", (unsigned) port);
        assert_int_equal(check_query(listen, false, 2u * 1000000u, &ready, &line2), 0);
        /* the fake server may now see a reset: it does not matter */
        assert_int_equal(pthread_join(t, NULL), 0);
        (void) close(f.fd);
        assert_false(ready);
        assert_string_equal(line2, "not ready");

        /* an unusable --listen is a "not ready" line too */
        assert_int_equal(check_query("nowhere", false, 0, &ready, &line3), 0);
        assert_false(ready);
        assert_true(startswith(line3, "not ready: --listen: "));
        assert_int_equal(check_run("nowhere", false, 0), 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_listen),
                cmocka_unit_test(test_error_messages),
                cmocka_unit_test(test_readiness),
                cmocka_unit_test(test_endpoints),
                cmocka_unit_test(test_current_report),
                cmocka_unit_test(test_metrics_keep_alive),
                cmocka_unit_test(test_hold),
                cmocka_unit_test(test_hold_limit),
                cmocka_unit_test(test_hold_stop),
                cmocka_unit_test(test_request_deadline),
                cmocka_unit_test(test_idle_no_wakeups),
                cmocka_unit_test(test_eviction),
                cmocka_unit_test(test_hostile_requests),
                cmocka_unit_test(test_slow_client),
                cmocka_unit_test(test_connection_limits),
                cmocka_unit_test(test_flood_leaves_room),
                cmocka_unit_test(test_port_in_use),
                cmocka_unit_test(test_port_zero),
                cmocka_unit_test(test_check_server),
                cmocka_unit_test(test_check_answers),
                cmocka_unit_test(test_check_timeout_and_bounds),
        };

        return unit_skip_status(cmocka_run_group_tests(tests, NULL, NULL));
}
