/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Kubernetes client's bearer token, over a real socket: a loopback HTTP
 * server in a second thread records the Authorization header of every
 * request; the main thread makes the requests with kube_call_sync() and
 * rewrites the token file as kubelet does (a new file renamed over the old).
 * A client without a token file (`--kube-api http://127.0.0.1:8001` through
 * kubectl proxy, which adds the credentials) sends no Authorization header.
 * What is checked is what the server received.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
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

#include "kube.h"

#define MAX_SEEN  16
/* What the server records for a request without an Authorization header. */
#define NO_HEADER "(no Authorization header)"

/* ---------------------------------------------------------------------------
 * The server: one request per connection, answered "{}" and closed; a request
 * for /hang is recorded and never answered (its connection is held open until
 * the server stops). One at a time, static, so that a failed assertion
 * (cmocka leaves the test with a longjmp) still finds it to stop in the
 * teardown. */

typedef struct Server {
        int fd;
        uint16_t port;
        pthread_t thread;
        bool running;  /* the thread was started and not joined */
        bool stopping; /* under lock: the listener is being shut down */
        pthread_mutex_t lock;
        char seen[MAX_SEEN][128];  /* Authorization values, or NO_HEADER */
        char lines[MAX_SEEN][128]; /* the request line, and "+type" with a Content-Type */
        size_t n_seen;
        int held[MAX_SEEN]; /* connections of /hang, never answered */
        size_t n_held;
} Server;

static Server server = {.fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

static void record(Server *s, const char *head) {
        const char *a = strcasestr(head, "\r\nAuthorization:");
        char value[128] = NO_HEADER;

        if (a) {
                /* an empty value is recorded as empty: only no header is NO_HEADER */
                a += strlen("\r\nAuthorization:");
                while (*a == ' ')
                        a++;
                (void) snprintf(value, sizeof value, "%.*s", (int) strcspn(a, "\r\n"), a);
        }
        pthread_mutex_lock(&s->lock);
        if (s->n_seen < MAX_SEEN) {
                (void) snprintf(s->lines[s->n_seen], sizeof s->lines[0], "%.*s%s",
                                (int) strcspn(head, "\r\n"), head,
                                strcasestr(head, "\r\nContent-Type:") ? " +type" : "");
                (void) snprintf(s->seen[s->n_seen++], sizeof s->seen[0], "%s", value);
        }
        pthread_mutex_unlock(&s->lock);
}

static void *server_run(void *arg) {
        static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                     "Content-Length: 2\r\nConnection: close\r\n\r\n{}";
        Server *s = arg;

        for (;;) {
                char head[4096];
                size_t got = 0;
                int c = accept(s->fd, NULL, NULL);
                bool stopping;

                if (c < 0) {
                        pthread_mutex_lock(&s->lock);
                        stopping = s->stopping;
                        pthread_mutex_unlock(&s->lock);
                        if (!stopping && (errno == EINTR || errno == ECONNABORTED))
                                continue;
                        return NULL; /* the test shut the listener down */
                }
                while (got + 1 < sizeof head) {
                        ssize_t n = recv(c, head + got, sizeof head - 1 - got, 0);

                        if (n <= 0)
                                break;
                        got += (size_t) n;
                        head[got] = '\0';
                        if (strstr(head, "\r\n\r\n"))
                                break;
                }
                head[got] = '\0';
                if (strstr(head, "\r\n\r\n")) {
                        record(s, head);
                        if (strncmp(head, "GET /hang ", 10) == 0 && s->n_held < MAX_SEEN) {
                                s->held[s->n_held++] = c;
                                continue;
                        }
                        (void) !send(c, answer, sizeof answer - 1, MSG_NOSIGNAL);
                }
                close(c);
        }
}

static Server *server_start(void) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof sa;
        Server *s = &server;

        assert_false(s->running);
        s->n_seen = 0;
        s->stopping = false;
        s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(s->fd >= 0);
        assert_int_equal(bind(s->fd, (struct sockaddr *) &sa, sizeof sa), 0);
        assert_int_equal(listen(s->fd, 8), 0);
        assert_int_equal(getsockname(s->fd, (struct sockaddr *) &sa, &len), 0);
        s->port = ntohs(sa.sin_port);
        assert_int_equal(pthread_create(&s->thread, NULL, server_run, s), 0);
        s->running = true;
        return s;
}

/* Stops the server if it runs; the teardown of every test, too. */
static int server_stop(void **state) {
        Server *s = &server;

        if (s->running) {
                pthread_mutex_lock(&s->lock);
                s->stopping = true;
                pthread_mutex_unlock(&s->lock);
                (void) shutdown(s->fd, SHUT_RDWR); /* accept() returns */
                (void) pthread_join(s->thread, NULL);
                s->running = false;
        }
        while (s->n_held > 0)
                close(s->held[--s->n_held]);
        if (s->fd >= 0)
                close(s->fd);
        s->fd = -1;
        (void) state;
        return 0;
}

/* A copy of what the server recorded of the i-th request, from one of its
 * tables (s->seen or s->lines), valid until the next call. */
static const char *recorded(Server *s, char (*table)[128], size_t i) {
        static char copy[128];
        bool have;

        pthread_mutex_lock(&s->lock);
        have = i < s->n_seen;
        if (have)
                memcpy(copy, table[i], sizeof copy);
        pthread_mutex_unlock(&s->lock);
        assert_true(have);
        return copy;
}

/* What the server saw as the i-th request's Authorization. */
static const char *seen(Server *s, size_t i) {
        return recorded(s, s->seen, i);
}

/* What the server saw as the i-th request's line ("+type": with a Content-Type). */
static const char *seen_line(Server *s, size_t i) {
        return recorded(s, s->lines, i);
}

/* ---------------------------------------------------------------------------
 * Helpers */

static void sleep_usec(uint64_t usec) {
        struct timespec ts = {.tv_sec = (time_t) (usec / 1000000u),
                              .tv_nsec = (long) (usec % 1000000u) * 1000};

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* As kubelet's atomic writer replaces a projected token: never in place. */
static void write_token(const char *dir, const char *value) {
        char path[256], tmp[256];
        FILE *f;

        (void) snprintf(path, sizeof path, "%s/token", dir);
        (void) snprintf(tmp, sizeof tmp, "%s/.token.new", dir);
        f = fopen(tmp, "we");
        assert_non_null(f);
        assert_true(fputs(value, f) >= 0);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(rename(tmp, path), 0);
}

/* One call, which must be answered 200. */
static void call_ok(KubeClient *c, const KubeRequest *req) {
        KubeResult res = {};

        assert_int_equal(kube_call_sync(c, req, &res), 0);
        assert_int_equal(res.error, 0);
        assert_int_equal(res.status, 200);
        kube_result_done(&res);
}

static void get(KubeClient *c) {
        call_ok(c, &(KubeRequest){.verb = KUBE_VERB_GET,
                                  .method = "GET",
                                  .path = "/api/v1/namespaces/ns/pods/p",
                                  .timeout_usec = 5000000u});
}

/* ---------------------------------------------------------------------------
 * Tests */

static uint64_t now_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

#define MAX_AGE_USEC 300000u /* the test's token age: 0.3 s, not a minute */

/* A token file holding "one", the server, and a client of it. */
typedef struct Fixture {
        char dir[sizeof "/tmp/test-kube.XXXXXX"];
        char token_path[sizeof "/tmp/test-kube.XXXXXX/token"];
        sd_event *event;
        KubeClient *client;
        Server *server;
        uint64_t read_after; /* the token was read after this time */
} Fixture;

/* max_age 0: the client's default */
static void fixture_start(Fixture *f, uint64_t max_age) {
        char url[64];

        memcpy(f->dir, "/tmp/test-kube.XXXXXX", sizeof f->dir);
        assert_non_null(mkdtemp(f->dir));
        (void) snprintf(f->token_path, sizeof f->token_path, "%s/token", f->dir);
        write_token(f->dir, "one");
        f->server = server_start();
        (void) snprintf(url, sizeof url, "http://127.0.0.1:%u", (unsigned) f->server->port);
        assert_int_equal(sd_event_new(&f->event), 0);
        f->read_after = now_usec();
        assert_int_equal(kube_client_new(f->event,
                                         &(KubeConfig){.api_url = url,
                                                       .token_file = f->token_path,
                                                       .token_max_age_usec = max_age},
                                         &f->client),
                         0);
}

static void fixture_stop(Fixture *f) {
        f->client = kube_client_free(f->client);
        f->event = sd_event_unref(f->event);
        (void) server_stop(NULL);
        assert_int_equal(unlink(f->token_path), 0);
        assert_int_equal(rmdir(f->dir), 0);
}

/* One pass of test_token_rotation() with tokens older than max_age re-read.
 * false when the machine was too slow to judge it (the first two requests
 * took longer than max_age, under valgrind for one): ask again with more. */
static bool rotation_with(uint64_t max_age) {
        Fixture f;
        KubeClient *c;
        Server *s;
        bool judged;

        fixture_start(&f, max_age);
        c = f.client;
        s = f.server;

        get(c);
        assert_string_equal(seen(s, 0), "Bearer one");

        /* rotated, but the token in use is young: kept */
        write_token(f.dir, "two");
        get(c);
        judged = now_usec() - f.read_after < max_age;
        if (judged) {
                assert_string_equal(seen(s, 1), "Bearer one");

                /* older than the maximum age: read again before this request */
                sleep_usec(max_age + 50000u);
                get(c);
                assert_string_equal(seen(s, 2), "Bearer two");

                /* a token that cannot be used (empty) keeps the last good one */
                write_token(f.dir, "");
                sleep_usec(max_age + 50000u);
                get(c);
                assert_string_equal(seen(s, 3), "Bearer two");

                /* ... and is looked at again at the next request, not a
                 * whole age later */
                write_token(f.dir, "three");
                get(c);
                assert_string_equal(seen(s, 4), "Bearer three");

                /* after a 401 the caller reloads at once, whatever the age */
                write_token(f.dir, "four");
                assert_int_equal(kube_client_reload_token(c), 1);
                assert_int_equal(kube_client_reload_token(c), 0); /* the same again */
                get(c);
                assert_string_equal(seen(s, 5), "Bearer four");
        }

        fixture_stop(&f);
        return judged;
}

/* A rotated token is sent once the one in use is older than the maximum
 * age, not before; a re-read that fails keeps the token in use (and is tried
 * again at the next request); a reload after a 401 takes the new one at once. */
static void test_token_rotation(void **state) {
        uint64_t max_age = MAX_AGE_USEC;

        while (!rotation_with(max_age)) {
                max_age *= 2;
                assert_true(max_age <= 16u * MAX_AGE_USEC); /* 4.8 s: something is wrong */
        }
        (void) state;
}

/* Without a maximum age in the configuration the default (a minute)
 * applies: a rotation older than the other test's age is not picked up. */
static void test_token_default_age(void **state) {
        Fixture f;

        fixture_start(&f, 0);
        get(f.client);
        write_token(f.dir, "two");
        sleep_usec(MAX_AGE_USEC + 50000u);
        get(f.client);
        assert_string_equal(seen(f.server, 0), "Bearer one");
        assert_string_equal(seen(f.server, 1), "Bearer one");

        fixture_stop(&f);
        (void) state;
}

/* A client of s over plain http, with no token file, on a new loop. */
static KubeClient *plain_client(Server *s, sd_event **ret_event) {
        KubeClient *c = NULL;
        char url[64];

        (void) snprintf(url, sizeof url, "http://127.0.0.1:%u", (unsigned) s->port);
        assert_int_equal(sd_event_new(ret_event), 0);
        assert_int_equal(kube_client_new(*ret_event, &(KubeConfig){.api_url = url}, &c), 0);
        return c;
}

/* No token file, as rollout makes its client for `--kube-api
 * http://127.0.0.1:8001` (kubectl proxy adds the credentials): every request
 * goes out, with no Authorization header at all; a reload after a 401 has
 * nothing to read and changes nothing. */
static void test_no_token(void **state) {
        Server *s = server_start();
        sd_event *event = NULL;
        KubeClient *c = plain_client(s, &event);

        get(c);
        assert_int_equal(kube_client_reload_token(c), 0);
        get(c);
        assert_string_equal(seen(s, 0), NO_HEADER);
        assert_string_equal(seen(s, 1), NO_HEADER);

        kube_client_free(c);
        sd_event_unref(event);
        (void) server_stop(NULL);
        (void) state;
}

/* Calls one after the other (the client keeps a finished call's handle for
 * the next): each goes out as asked, nothing of the one before it. */
static void test_calls_in_turn(void **state) {
        Server *s = server_start();
        sd_event *event = NULL;
        KubeClient *c = plain_client(s, &event);

        for (int i = 0; i < 2; i++) {
                call_ok(c, &(KubeRequest){.verb = KUBE_VERB_PATCH,
                                          .method = "PATCH",
                                          .path = "/api/v1/namespaces/ns/pods/p/status",
                                          .body = "{}",
                                          .content_type = "application/merge-patch+json",
                                          .timeout_usec = 5000000u});
                get(c);
        }
        for (size_t i = 0; i < 4; i += 2) {
                assert_string_equal(seen_line(s, i),
                                    "PATCH /api/v1/namespaces/ns/pods/p/status HTTP/1.1 +type");
                assert_string_equal(seen_line(s, i + 1),
                                    "GET /api/v1/namespaces/ns/pods/p HTTP/1.1");
        }

        kube_client_free(c);
        sd_event_unref(event);
        (void) server_stop(NULL);
        (void) state;
}

typedef struct Hung {
        bool done;
        int error;
        long status;
} Hung;

static void on_hung_done(KubeClient *c, const KubeResponse *r, void *userdata) {
        Hung *h = userdata;

        h->done = true;
        h->error = r->error;
        h->status = r->status;
        (void) c;
}

/* A GET of /hang, which the server never answers. */
static void start_hung(KubeClient *c, uint64_t timeout_usec, Hung *h) {
        KubeRequest req = {.verb = KUBE_VERB_GET,
                           .method = "GET",
                           .path = "/hang",
                           .timeout_usec = timeout_usec,
                           .on_done = on_hung_done,
                           .userdata = h};

        assert_int_equal(kube_call_start(c, &req, NULL), 0);
}

/* A call never answered ends at its timeout, earlier than the one before it
 * (libcurl asks for a new deadline, earlier than the timer set), while calls
 * that come and go meanwhile each have libcurl ask for the same deadline
 * again (the client keeps the timer it set for it). */
static void test_timeout_among_calls(void **state) {
        Server *s = server_start();
        sd_event *event = NULL;
        KubeClient *c = plain_client(s, &event);
        Hung first = {}, second = {};
        uint64_t start, took;

        start_hung(c, 4000000u, &first);
        /* until libcurl's own first timeouts are past: the timer is set for
         * the first call's deadline */
        start = now_usec();
        while (now_usec() - start < 400000u)
                assert_true(sd_event_run(event, 100000u) >= 0);
        get(c);
        start = now_usec();
        start_hung(c, 700000u, &second);
        for (int i = 0; i < 5; i++)
                get(c);
        assert_false(second.done);
        while (!second.done && now_usec() - start < 5000000u)
                assert_true(sd_event_run(event, 100000u) >= 0);
        took = now_usec() - start;

        assert_true(second.done);
        assert_int_equal(second.error, -ETIMEDOUT);
        assert_true(took >= 700000u);
        assert_true(took < 2000000u);
        assert_false(first.done);
        assert_string_equal(seen_line(s, 0), "GET /hang HTTP/1.1");

        kube_client_free(c);
        sd_event_unref(event);
        (void) server_stop(NULL);
        (void) state;
}

/* http only to this machine, the host compared whole: a prefix test passed
 * a user name that looks like an address, and names that start like one. */
static void test_api_url(void **state) {
        static const struct {
                const char *url;
                int r;
                bool plain;
        } rows[] = {
                {"https://10.0.0.1:6443", 0, false},
                {"https://kubernetes.default.svc", 0, false},
                {"https://[fd00::1]:6443/prefix", 0, false},
                {"http://127.0.0.1:8001", 0, true},
                {"http://127.0.0.1", 0, true},
                {"http://127.1.2.3:8001/", 0, true},
                {"http://localhost:8001", 0, true},
                {"HTTP://LOCALHOST:8001", 0, true},
                {"http://[::1]:8001", 0, true},
                {"http://127.0.0.1@10.0.0.1:8001", -EINVAL, false},
                {"http://127.0.0.1:8001@10.0.0.1", -EINVAL, false},
                {"http://127.0.0.1.nip.io:8001", -EPROTONOSUPPORT, false},
                {"http://localhost.evil.example", -EPROTONOSUPPORT, false},
                {"http://[::1].evil.example", -EINVAL, false},
                {"http://0.0.0.0:8001", -EPROTONOSUPPORT, false},
                {"http://10.0.0.1:8001", -EPROTONOSUPPORT, false},
                {"http://[::2]:8001", -EPROTONOSUPPORT, false},
                {"https://user:pw@10.0.0.1:6443", -EINVAL, false},
                {"https://10.0.0.1:6443/?x=1", -EINVAL, false},
                {"https://10.0.0.1:6443/#x", -EINVAL, false},
                {"ftp://127.0.0.1/", -EPROTONOSUPPORT, false},
                {"127.0.0.1:8001", -EINVAL, false},
                {"", -EINVAL, false},
        };

        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                bool plain = !rows[i].plain;
                int r = kube_api_url_check(rows[i].url, &plain);

                if (r != rows[i].r || (r == 0 && plain != rows[i].plain))
                        fail_msg("%s: %d plain=%d, want %d plain=%d", rows[i].url, r, plain,
                                 rows[i].r, rows[i].plain);
        }
        (void) state;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_api_url),
                cmocka_unit_test_teardown(test_no_token, server_stop),
                cmocka_unit_test_teardown(test_calls_in_turn, server_stop),
                cmocka_unit_test_teardown(test_timeout_among_calls, server_stop),
                cmocka_unit_test_teardown(test_token_rotation, server_stop),
                cmocka_unit_test_teardown(test_token_default_age, server_stop),
        };

        /* loopback requests must not go to a proxy set for the machine */
        if (setenv("no_proxy", "*", 1) < 0)
                return 1;

        return cmocka_run_group_tests(tests, NULL, NULL);
}
