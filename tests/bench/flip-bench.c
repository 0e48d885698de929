/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flip-bench: drives kubelet-style ConfigMap updates and times what sees them.
 * The benchmark scripts under tests/bench/ run it; it links nothing but libc
 * and pthreads, so that it measures the agent, not itself.
 *
 *   flip-bench latency --dir DIR --count N --vary KEY --key KEY=FILE...
 *                      [--gap-ms MS] [--warmup N] [--inotifywait PATH]
 *                      [--raw FILE] [--apiserver FILE] -- AGENT ARG...
 *       Starts AGENT ARG... (which must listen on 127.0.0.1:0 and log the
 *       "Serving ... on 127.0.0.1:PORT." line to stderr) and, unless PATH is
 *       empty, "PATH -m" on DIR: the peer. Then, N times, one update exactly as
 *       kubelet's atomic writer makes it (version directory, keys written,
 *       ..data_tmp, rename(2) over ..data, links, old version removed), back
 *       to back, then a pause of MS milliseconds (default 30, longer than the
 *       agent's settle time) so every update starts from a quiet directory.
 *       Each update appends "BENCH_<i>=1" to key KEY (an environ.d key), so
 *       its state is visible as key="BENCH_<i>" in /metrics and as BENCH_<i>
 *       in the agent's change log line. Timed from just before rename(2):
 *         inotifywait  the peer's line for the flip (MOVED_FROM ..data_tmp or
 *                      MOVED_TO ..data), read from its pipe by a thread
 *                      blocked in read(2)
 *         metrics      the first GET /metrics whose body holds the new
 *                      state; a client thread starts asking at the flip and
 *                      asks again and again on one kept connection, as
 *                      Prometheus keeps its (HTTP/1.1 keep-alive)
 *         log          the agent's log line naming BENCH_<i>, read from its
 *                      stderr pipe by a blocked thread (written right after
 *                      the new state is published and the scrapes waiting
 *                      for it are answered)
 *         apiserver    with --apiserver FILE (tests/tools/fake-apiserver's
 *                      --arrivals file, the agent started with --kube on):
 *                      the arrival of the agent's status PATCH whose body
 *                      names BENCH_<i> (the condition's message names the
 *                      drifted key, so every update changes the condition
 *                      and asks for one PATCH). The time is the fake's own
 *                      CLOCK_MONOTONIC stamp for the request's last byte,
 *                      written in the line; a thread follows the file with
 *                      inotify only to learn it.
 *       Prints one line per measure: NAME n=.. p50_us=.. p99_us=.. max_us=..
 *       and the client's request cycle, the CPU each update cost the agent
 *       and the peer, and the host's steal over the measured updates (the
 *       time a hypervisor gave this machine's CPUs to others: it stalls the
 *       agent and the peer alike). --raw FILE: every sample, one line per
 *       update, ending with flip_us, the flip's CLOCK_MONOTONIC time (to
 *       match a trace taken with perf -k CLOCK_MONOTONIC). Exits 0, 1 when
 *       an update was not seen within 5 s (FLIP_BENCH_SEEN_TIMEOUT_S; which
 *       ends the run), 2 on a usage
 *       error.
 *
 *   flip-bench updates --dir DIR --count N --vary KEY --key KEY=FILE...
 *                      --port PORT [--first I] [--alternate] [--pause-ms MS]
 *       N updates against an agent already running on 127.0.0.1:PORT, each
 *       one waited for in /metrics (so each is evaluated). Prints the time.
 *       Updates are numbered from I (default 1). --alternate: odd updates
 *       add the BENCH_<i> line (drifted from a running side that holds the
 *       --key files), even ones publish the files unchanged (current again),
 *       so the pod condition's status flips at every update; an even update
 *       counts as seen when /metrics no longer names BENCH_<i-1>. --pause-ms:
 *       a pause after each update (default 0). --raw FILE: one line per
 *       update, "I flip_us=.. seen_us=.." (CLOCK_MONOTONIC, µs: the rename
 *       and the answer that showed it).
 *
 *   flip-bench storm --dir DIR --count N --vary KEY --key KEY=FILE...
 *                    [--gap-us US] [--first I]
 *       A storm: N updates, one every US microseconds (default 200) on the
 *       writer's own clock, waiting for nobody (numbered as for updates).
 *       Prints "storm n=N seconds=S last=BENCH_<I+N-1>".
 *
 *   flip-bench scrape --port PORT --count N [--threads T]
 *       N GET /metrics of 127.0.0.1:PORT, from T threads (default 4), one
 *       connection per request; each must answer 200. Prints the time.
 *
 *   flip-bench textfile --file PATH --count N --port PORT
 *       The peer's side of "updates": N times, PATH is rewritten (a new
 *       temporary file renamed over it, with a comment line that changes) and
 *       127.0.0.1:PORT/metrics fetched once (node_exporter reads the textfile
 *       at each scrape). Prints the time.
 */
#ifndef _GNU_SOURCE /* config.h defines it in the build */
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_KEYS 8
#define MAX_BODY (1u << 20)
/* How long an update may take to be seen before the run ends: 5 s, or
 * FLIP_BENCH_SEEN_TIMEOUT_S (a test under valgrind on a busy machine). */
static uint64_t seen_timeout_usec(void) {
        const char *e = getenv("FLIP_BENCH_SEEN_TIMEOUT_S");
        unsigned long s = e ? strtoul(e, NULL, 10) : 0;

        return (s > 0 && s < 3600 ? s : 5u) * 1000000ull;
}
/* An update slower than this to reach /metrics: the detection target. */
#define SLOW_USEC 2000u

static const char *prog = "flip-bench";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
        va_list ap;

        fprintf(stderr, "%s: ", prog);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        exit(1);
}

static void usage_error(const char *what) __attribute__((noreturn));
static void usage_error(const char *what) {
        fprintf(stderr,
                "%s: %s\n"
                "usage: %s latency --dir DIR --count N --vary KEY --key KEY=FILE... [--gap-ms MS]\n"
                "                  [--warmup N] [--inotifywait PATH] [--raw FILE] [--apiserver "
                "FILE]\n"
                "                  -- AGENT ARG...\n"
                "       %s updates --dir DIR --count N --vary KEY --key KEY=FILE... --port PORT\n"
                "                  [--first I] [--alternate] [--pause-ms MS] [--raw FILE]\n"
                "       %s storm --dir DIR --count N --vary KEY --key KEY=FILE... [--gap-us US]\n"
                "                  [--first I]\n"
                "       %s scrape --port PORT --count N [--threads T]\n"
                "       %s textfile --file PATH --count N --port PORT\n",
                prog, what, prog, prog, prog, prog, prog);
        exit(2);
}

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

static char *read_file(const char *path, size_t *ret_len) {
        FILE *f = fopen(path, "re");
        char *buf;
        long n;

        if (!f)
                die("cannot open \"%s\": %s", path, strerror(errno));
        if (fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0)
                die("cannot size \"%s\"", path);
        buf = malloc((size_t) n + 1);
        if (!buf || fread(buf, 1, (size_t) n, f) != (size_t) n)
                die("cannot read \"%s\"", path);
        buf[n] = '\0';
        fclose(f);
        *ret_len = (size_t) n;
        return buf;
}

static void write_all_fd(int fd, const char *data, size_t len, const char *what) {
        while (len > 0) {
                ssize_t n = write(fd, data, len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        die("cannot write %s: %s", what, strerror(errno));
                data += n;
                len -= (size_t) n;
        }
}

/* ---------------------------------------------------------------------------
 * HTTP: one request per connection, read to the end. */

/* GETs path; the body (headers included) in buf, NUL-terminated. Returns the
 * number of bytes read, or -1. */
static ssize_t http_get(uint16_t port, const char *path, char *buf, size_t cap) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
        struct timeval tv = {.tv_sec = 2};
        char req[256];
        size_t got = 0;
        int fd, n, one = 1;

        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -1;
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                close(fd);
                return -1;
        }
        n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
        if (send(fd, req, (size_t) n, MSG_NOSIGNAL) != n) {
                close(fd);
                return -1;
        }
        for (;;) {
                ssize_t r;

                if (got + 1 >= cap)
                        break;
                r = recv(fd, buf + got, cap - 1 - got, 0);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break;
                got += (size_t) r;
        }
        close(fd);
        buf[got] = '\0';
        return (ssize_t) got;
}

/* A connection kept between requests (HTTP/1.1 keep-alive), as Prometheus
 * keeps its: the agent keeps /metrics connections for the next request. */
typedef struct Kept {
        uint16_t port;
        int fd; /* -1: none open */
} Kept;

static void kept_close(Kept *k) {
        if (k->fd >= 0)
                close(k->fd);
        k->fd = -1;
}

/* The value of header name (with its colon, any case) in head, or -1. */
static long header_value(const char *head, const char *name) {
        size_t n = strlen(name);

        for (const char *l = strstr(head, "\r\n"); l; l = strstr(l + 2, "\r\n"))
                if (strncasecmp(l + 2, name, n) == 0)
                        return strtol(l + 2 + n, NULL, 10);
        return -1;
}

/* One request on k's connection; 1 answered, 0 the connection was closed
 * before any answer (the agent ends a connection idle past its deadline:
 * ask again on a new one), -1 an error. */
static int kept_exchange(Kept *k, const char *req, size_t req_len, char *buf, size_t cap,
                         size_t *ret_len) {
        size_t got = 0;
        long length = -1;
        char *end = NULL;

        if (send(k->fd, req, req_len, MSG_NOSIGNAL) != (ssize_t) req_len)
                return 0;
        for (;;) {
                ssize_t r;

                if (got + 1 >= cap)
                        return -1;
                r = recv(k->fd, buf + got, cap - 1 - got, 0);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        return got == 0 ? 0 : -1;
                got += (size_t) r;
                buf[got] = '\0';
                if (!end && (end = strstr(buf, "\r\n\r\n"))) {
                        *end = '\0';
                        length = header_value(buf, "Content-Length:");
                        *end = '\r';
                        if (length < 0)
                                return -1;
                }
                if (end && got >= (size_t) (end + 4 - buf) + (size_t) length)
                        break;
        }
        *ret_len = got;
        return 1;
}

/* GETs path on k's connection, opening one when needed; like http_get(). */
static ssize_t http_get_kept(Kept *k, const char *path, char *buf, size_t cap) {
        char req[256];
        int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);

        for (int attempt = 0; attempt < 2; attempt++) {
                size_t len = 0;
                int r;

                if (k->fd < 0) {
                        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(k->port)};
                        struct timeval tv = {.tv_sec = 2};
                        int one = 1;

                        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                        k->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                        if (k->fd < 0)
                                return -1;
                        (void) setsockopt(k->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
                        (void) setsockopt(k->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                        if (connect(k->fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                                kept_close(k);
                                return -1;
                        }
                }
                r = kept_exchange(k, req, (size_t) n, buf, cap, &len);
                if (r == 0) {
                        kept_close(k);
                        continue;
                }
                if (r < 0 || strstr(buf, "\r\nConnection: close\r\n"))
                        kept_close(k);
                if (r < 0)
                        return -1;
                return (ssize_t) len;
        }
        return -1;
}

/* ---------------------------------------------------------------------------
 * The atomic writer, as kubernetes pkg/volume/util/atomic_writer.go does it. */

typedef struct Payload {
        char *key[MAX_KEYS];
        char *data[MAX_KEYS];
        size_t len[MAX_KEYS];
        size_t n;
        int vary; /* index of the key that gets the BENCH_<i> line, -1: none */
} Payload;

static void payload_add(Payload *p, const char *arg) {
        const char *eq = strchr(arg, '=');
        char *key;

        if (!eq || eq == arg)
                usage_error("--key wants KEY=FILE");
        if (p->n >= MAX_KEYS)
                usage_error("too many --key");
        key = strndup(arg, (size_t) (eq - arg));
        if (!key)
                die("out of memory");
        p->key[p->n] = key;
        p->data[p->n] = read_file(eq + 1, &p->len[p->n]);
        p->n++;
}

static void payload_done(Payload *p) {
        for (size_t k = 0; k < p->n; k++) {
                free(p->key[k]);
                free(p->data[k]);
        }
        p->n = 0;
}

typedef struct Writer {
        int dfd;
        const char *dir;
        char current[NAME_MAX + 1]; /* the version ..data points to */
        unsigned seq;
} Writer;

static void writer_init(Writer *w, const char *dir) {
        ssize_t n;

        w->dir = dir;
        w->dfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (w->dfd < 0)
                die("cannot open \"%s\": %s", dir, strerror(errno));
        n = readlinkat(w->dfd, "..data", w->current, sizeof w->current - 1);
        if (n < 0)
                die("\"%s/..data\" is not a link: publish a first version with atomic-writer.sh",
                    dir);
        w->current[n] = '\0';
}

/* Steps 5 to 8: the new version directory with every key, and ..data_tmp.
 * Update i > 0 adds "BENCH_<i>=1" to the varying key; 0 publishes the keys
 * as given. */
static void writer_prepare(Writer *w, const Payload *p, unsigned i, char ret_name[NAME_MAX + 1]) {
        char extra[64];
        struct tm tm;
        time_t t = time(NULL);
        int vfd, n_extra;

        (void) gmtime_r(&t, &tm);
        /* "..2006_01_02_15_04_05." and digits: a name like kubelet's */
        (void) snprintf(ret_name, NAME_MAX + 1, "..%04d_%02d_%02d_%02d_%02d_%02d.%09u",
                        tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                        tm.tm_sec, ++w->seq);
        if (mkdirat(w->dfd, ret_name, 0755) < 0)
                die("mkdir \"%s/%s\": %s", w->dir, ret_name, strerror(errno));
        vfd = openat(w->dfd, ret_name, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (vfd < 0)
                die("open \"%s/%s\": %s", w->dir, ret_name, strerror(errno));
        (void) fchmod(vfd, 0755);
        n_extra = snprintf(extra, sizeof extra, "BENCH_%u=1\n", i);
        for (size_t k = 0; k < p->n; k++) {
                int fd = openat(vfd, p->key[k], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

                if (fd < 0)
                        die("create \"%s\": %s", p->key[k], strerror(errno));
                write_all_fd(fd, p->data[k], p->len[k], p->key[k]);
                if ((int) k == p->vary && i > 0)
                        write_all_fd(fd, extra, (size_t) n_extra, p->key[k]);
                (void) fchmod(fd, 0644);
                close(fd);
        }
        close(vfd);
        (void) unlinkat(w->dfd, "..data_tmp", 0);
        if (symlinkat(ret_name, w->dfd, "..data_tmp") < 0)
                die("symlink ..data_tmp: %s", strerror(errno));
}

/* Step 9: the atomic flip. */
static void writer_flip(Writer *w) {
        if (renameat(w->dfd, "..data_tmp", w->dfd, "..data") < 0)
                die("rename ..data_tmp to ..data: %s", strerror(errno));
}

/* Steps 10 to 12: links for keys that have none, the old version removed. */
static void writer_finish(Writer *w, const Payload *p, const char *name) {
        char target[PATH_MAX];
        int vfd;

        for (size_t k = 0; k < p->n; k++) {
                if (readlinkat(w->dfd, p->key[k], target, sizeof target) >= 0 || errno != ENOENT)
                        continue;
                (void) snprintf(target, sizeof target, "..data/%s", p->key[k]);
                if (symlinkat(target, w->dfd, p->key[k]) < 0)
                        die("symlink \"%s\": %s", p->key[k], strerror(errno));
        }
        vfd = openat(w->dfd, w->current, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (vfd >= 0) {
                for (size_t k = 0; k < p->n; k++)
                        (void) unlinkat(vfd, p->key[k], 0);
                close(vfd);
                if (unlinkat(w->dfd, w->current, AT_REMOVEDIR) < 0)
                        die("cannot remove the old version \"%s\" (files other than the keys in "
                            "it?): %s",
                            w->current, strerror(errno));
        }
        (void) snprintf(w->current, sizeof w->current, "%s", name);
}

/* ---------------------------------------------------------------------------
 * Observers */

typedef struct Observed {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned gen;         /* the update being watched; 0: none */
        uint64_t t_inotify;   /* when the peer printed the flip, 0 until then */
        uint64_t t_log;       /* when the agent logged BENCH_<gen> */
        uint64_t t_metrics;   /* when /metrics showed it */
        uint64_t t_apiserver; /* when the PATCH naming it reached the fake */
        unsigned patches;     /* PATCHes naming BENCH_<gen> */
        unsigned long patches_total;
        unsigned requests; /* GET /metrics made for this update */
        uint64_t request_usec_total;
        bool stop;
        uint16_t port;     /* 0 until the agent said where it listens */
        int inotify_ready; /* 1 when "Watches established." was seen */
} Observed;

static Observed obs = {
        .lock = PTHREAD_MUTEX_INITIALIZER,
        .cond = PTHREAD_COND_INITIALIZER,
};

/* A line reader over a blocking fd: calls fn with each line and the time it
 * was read (taken once per read(2), before the lines in it are looked at). */
typedef void (*LineFn)(const char *line, uint64_t t);

typedef struct Reader {
        int fd;
        LineFn fn;
        FILE *copy; /* every line also goes here, or NULL */
} Reader;

static void *reader_run(void *arg) {
        Reader *r = arg;
        char buf[65536];
        size_t have = 0;

        for (;;) {
                ssize_t n = read(r->fd, buf + have, sizeof buf - 1 - have);
                uint64_t t = now_usec();
                char *start, *nl;

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                have += (size_t) n;
                buf[have] = '\0';
                start = buf;
                while ((nl = strchr(start, '\n'))) {
                        *nl = '\0';
                        if (r->copy)
                                fprintf(r->copy, "%s\n", start);
                        r->fn(start, t);
                        start = nl + 1;
                }
                have -= (size_t) (start - buf);
                memmove(buf, start, have);
                if (have == sizeof buf - 1)
                        have = 0; /* an endless line: drop it */
        }
        if (r->copy)
                fflush(r->copy);
        return NULL;
}

static bool ends_with(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);

        return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

static void on_inotify_line(const char *line, uint64_t t) {
        pthread_mutex_lock(&obs.lock);
        if (strstr(line, "Watches established"))
                obs.inotify_ready = 1;
        else if (obs.gen != 0 && obs.t_inotify == 0 &&
                 ((strstr(line, " MOVED_FROM ") && ends_with(line, " ..data_tmp")) ||
                  (strstr(line, " MOVED_TO ") && ends_with(line, " ..data"))))
                obs.t_inotify = t;
        pthread_cond_broadcast(&obs.cond);
        pthread_mutex_unlock(&obs.lock);
}

/* "BENCH_<gen>" followed by something other than a digit. */
static bool names_gen(const char *s, unsigned gen) {
        char needle[32];
        size_t len;

        len = (size_t) snprintf(needle, sizeof needle, "BENCH_%u", gen);
        for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
                if (p[len] < '0' || p[len] > '9')
                        return true;
        return false;
}

static void on_log_line(const char *line, uint64_t t) {
        const char *on;

        pthread_mutex_lock(&obs.lock);
        if (obs.port == 0 && strstr(line, "Serving ") && (on = strstr(line, " on 127.0.0.1:"))) {
                obs.port = (uint16_t) strtoul(on + strlen(" on 127.0.0.1:"), NULL, 10);
        } else if (obs.gen != 0 && obs.t_log == 0 && names_gen(line, obs.gen))
                obs.t_log = t;
        pthread_cond_broadcast(&obs.cond);
        pthread_mutex_unlock(&obs.lock);
}

/* A line of the fake API server's --arrivals file:
 * "USEC METHOD PATH FAULT BODY". */
static void on_arrival_line(const char *line, uint64_t t) {
        char method[16];
        uint64_t usec;
        int body_at = 0;

        (void) t; /* the fake's own stamp is the arrival */
        if (sscanf(line, "%" SCNu64 " %15s %*s %*s %n", &usec, method, &body_at) < 2 ||
            body_at == 0 || strcmp(method, "PATCH") != 0)
                return;
        pthread_mutex_lock(&obs.lock);
        obs.patches_total++;
        if (obs.gen != 0 && names_gen(line + body_at, obs.gen)) {
                obs.patches++;
                if (obs.t_apiserver == 0)
                        obs.t_apiserver = usec;
        }
        pthread_cond_broadcast(&obs.cond);
        pthread_mutex_unlock(&obs.lock);
}

/* Follows a file another process appends to, line by line, until obs.stop:
 * inotify says when it grew (checked every 100 ms besides, for the stop). */
static const char *follow_path;
static void *follow_run(void *arg) {
        const char *path = follow_path;
        char *buf = malloc(MAX_BODY);
        size_t have = 0;
        int fd, ifd;

        (void) arg;
        if (!buf)
                die("out of memory");
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (fd < 0 || ifd < 0 || inotify_add_watch(ifd, path, IN_MODIFY) < 0)
                die("cannot follow \"%s\": %s", path, strerror(errno));
        for (;;) {
                ssize_t n = read(fd, buf + have, MAX_BODY - 1 - have);
                char *start, *nl;
                bool stop;

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        die("cannot read \"%s\": %s", path, strerror(errno));
                if (n == 0) {
                        struct pollfd pfd = {.fd = ifd, .events = POLLIN};
                        char ev[4096];

                        pthread_mutex_lock(&obs.lock);
                        stop = obs.stop;
                        pthread_mutex_unlock(&obs.lock);
                        if (stop)
                                break;
                        if (poll(&pfd, 1, 100) > 0)
                                while (read(ifd, ev, sizeof ev) > 0)
                                        ;
                        continue;
                }
                have += (size_t) n;
                buf[have] = '\0';
                start = buf;
                while ((nl = strchr(start, '\n'))) {
                        *nl = '\0';
                        on_arrival_line(start, 0);
                        start = nl + 1;
                }
                have -= (size_t) (start - buf);
                memmove(buf, start, have);
                if (have == MAX_BODY - 1)
                        have = 0; /* an endless line: drop it */
        }
        close(ifd);
        close(fd);
        free(buf);
        return NULL;
}

/* Asks /metrics from the moment an update is armed until it shows it. */
static void *spinner_run(void *arg) {
        char *body = malloc(MAX_BODY);
        unsigned seen_gen = 0;
        Kept kept = {.fd = -1};

        (void) arg;
        if (!body)
                die("out of memory");
        for (;;) {
                char needle[48];
                unsigned gen;
                uint16_t port;

                pthread_mutex_lock(&obs.lock);
                while (!obs.stop && (obs.gen == 0 || obs.gen == seen_gen))
                        pthread_cond_wait(&obs.cond, &obs.lock);
                if (obs.stop) {
                        pthread_mutex_unlock(&obs.lock);
                        break;
                }
                gen = obs.gen;
                port = obs.port;
                pthread_mutex_unlock(&obs.lock);

                (void) snprintf(needle, sizeof needle, "key=\"BENCH_%u\"", gen);
                if (kept.port != port) {
                        kept_close(&kept);
                        kept.port = port;
                }
                for (;;) {
                        uint64_t a = now_usec(), b;
                        ssize_t n = http_get_kept(&kept, "/metrics", body, MAX_BODY);
                        bool found = n > 0 && strstr(body, needle);

                        b = now_usec();
                        pthread_mutex_lock(&obs.lock);
                        obs.requests++;
                        obs.request_usec_total += b - a;
                        if (found)
                                obs.t_metrics = b;
                        bool give_up = obs.stop || obs.gen != gen;
                        pthread_cond_broadcast(&obs.cond);
                        pthread_mutex_unlock(&obs.lock);
                        if (found || give_up)
                                break;
                }
                seen_gen = gen;
        }
        kept_close(&kept);
        free(body);
        return NULL;
}

/* ---------------------------------------------------------------------------
 * Processes */

/* Runs argv (searched in PATH) with its stderr, and its stdout too when
 * both, into a pipe whose read end is *ret_read_fd; stdout otherwise goes to
 * /dev/null. */
static pid_t spawn_piped(char *const argv[], bool both, int *ret_read_fd) {
        posix_spawn_file_actions_t fa;
        pid_t pid;
        int p[2], r;

        if (pipe2(p, O_CLOEXEC) < 0)
                die("pipe: %s", strerror(errno));
        posix_spawn_file_actions_init(&fa);
        if (both)
                posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
        else
                posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, p[1], STDERR_FILENO);
        r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (r != 0)
                die("cannot run \"%s\": %s", argv[0], strerror(r));
        close(p[1]);
        *ret_read_fd = p[0];
        return pid;
}

static void stop_process(pid_t pid) {
        if (pid <= 0)
                return;
        (void) kill(pid, SIGTERM);
        (void) waitpid(pid, NULL, 0);
}

/* ---------------------------------------------------------------------------
 * Statistics */

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* The q-quantile by the nearest-rank method. */
static uint64_t quantile(const uint64_t *sorted, size_t n, double q) {
        size_t rank = (size_t) (q * (double) n + 0.999999);

        if (rank < 1)
                rank = 1;
        if (rank > n)
                rank = n;
        return sorted[rank - 1];
}

/* CPU time of every thread of pid so far, in ns (the first field of each
 * /proc/PID/task/TID/schedstat), 0 when it cannot be read. */
static uint64_t cpu_ns(pid_t pid) {
        char path[64];
        struct dirent *de;
        uint64_t sum = 0;
        DIR *d;

        if (pid <= 0)
                return 0;
        (void) snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                char stat_path[sizeof path + NAME_MAX + 16];
                unsigned long long ns;
                FILE *f;

                if (de->d_name[0] == '.')
                        continue;
                (void) snprintf(stat_path, sizeof stat_path, "%s/%s/schedstat", path, de->d_name);
                f = fopen(stat_path, "re");
                if (!f)
                        continue;
                if (fscanf(f, "%llu", &ns) == 1)
                        sum += ns;
                fclose(f);
        }
        closedir(d);
        return sum;
}

/* The time the hypervisor ran something else while this machine's CPUs
 * wanted to run ("steal", the 8th figure of /proc/stat's cpu line), all CPUs
 * together, in ms; 0 on bare metal or when it cannot be read. Counted in
 * clock ticks, so a figure is good to 1000 / CLK_TCK ms. */
static uint64_t steal_ms(void) {
        unsigned long long f[8] = {};
        long hz = sysconf(_SC_CLK_TCK);
        FILE *st = fopen("/proc/stat", "re");
        int n;

        if (!st)
                return 0;
        n = fscanf(st, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3],
                   &f[4], &f[5], &f[6], &f[7]);
        fclose(st);
        if (n < 8 || hz <= 0)
                return 0;
        return (uint64_t) f[7] * 1000u / (uint64_t) hz;
}

static void print_stats(const char *name, uint64_t *v, size_t n) {
        if (n == 0) {
                printf("%s n=0\n", name);
                return;
        }
        qsort(v, n, sizeof *v, cmp_u64);
        printf("%s n=%zu p50_us=%" PRIu64 " p99_us=%" PRIu64 " max_us=%" PRIu64 "\n", name, n,
               quantile(v, n, 0.50), quantile(v, n, 0.99), v[n - 1]);
}

/* ---------------------------------------------------------------------------
 * Modes */

typedef struct Args {
        const char *mode, *dir, *inotifywait, *raw, *vary, *file, *apiserver;
        unsigned long count, gap_ms, gap_us, warmup, threads, first, pause_ms;
        bool alternate;
        uint16_t port;
        Payload payload;
        char **agent_argv;
} Args;

static unsigned long parse_ulong(const char *opt, const char *s) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || *s == '\0' || *end != '\0')
                usage_error(opt);
        return v;
}

static void parse_args(int argc, char **argv, Args *a) {
        *a = (Args){.gap_ms = 30,
                    .gap_us = 200,
                    .warmup = 20,
                    .threads = 4,
                    .inotifywait = "",
                    .first = 1};
        if (argc < 2)
                usage_error("no mode");
        a->mode = argv[1];
        for (int i = 2; i < argc; i++) {
                const char *o = argv[i];
                const char *v = i + 1 < argc ? argv[i + 1] : NULL;

                if (strcmp(o, "--") == 0) {
                        a->agent_argv = argv + i + 1;
                        break;
                }
                if (strcmp(o, "--alternate") == 0) {
                        a->alternate = true;
                        continue;
                }
                if (!v)
                        usage_error(o);
                if (strcmp(o, "--dir") == 0)
                        a->dir = v;
                else if (strcmp(o, "--count") == 0)
                        a->count = parse_ulong(o, v);
                else if (strcmp(o, "--gap-ms") == 0)
                        a->gap_ms = parse_ulong(o, v);
                else if (strcmp(o, "--gap-us") == 0)
                        a->gap_us = parse_ulong(o, v);
                else if (strcmp(o, "--warmup") == 0)
                        a->warmup = parse_ulong(o, v);
                else if (strcmp(o, "--inotifywait") == 0)
                        a->inotifywait = v;
                else if (strcmp(o, "--raw") == 0)
                        a->raw = v;
                else if (strcmp(o, "--apiserver") == 0)
                        a->apiserver = v;
                else if (strcmp(o, "--first") == 0)
                        a->first = parse_ulong(o, v);
                else if (strcmp(o, "--pause-ms") == 0)
                        a->pause_ms = parse_ulong(o, v);
                else if (strcmp(o, "--vary") == 0)
                        a->vary = v;
                else if (strcmp(o, "--key") == 0)
                        payload_add(&a->payload, v);
                else if (strcmp(o, "--file") == 0)
                        a->file = v;
                else if (strcmp(o, "--threads") == 0)
                        a->threads = parse_ulong(o, v);
                else if (strcmp(o, "--port") == 0)
                        a->port = (uint16_t) parse_ulong(o, v);
                else
                        usage_error(o);
                i++;
        }
        if (a->count == 0)
                usage_error("--count N is required");
        a->payload.vary = -1;
        for (size_t k = 0; a->vary && k < a->payload.n; k++)
                if (strcmp(a->payload.key[k], a->vary) == 0)
                        a->payload.vary = (int) k;
}

/* Waits under obs.lock until pred() or the deadline; returns pred(). */
static bool wait_locked(bool (*pred)(void), uint64_t timeout_usec) {
        uint64_t deadline = now_usec() + timeout_usec;

        while (!pred()) {
                struct timespec ts;
                uint64_t now = now_usec();

                if (now >= deadline)
                        return false;
                (void) clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 10 * 1000 * 1000; /* re-check every 10 ms */
                if (ts.tv_nsec >= 1000000000) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000;
                }
                (void) pthread_cond_timedwait(&obs.cond, &obs.lock, &ts);
        }
        return true;
}

static bool have_port(void) {
        return obs.port != 0;
}
static bool have_inotify(void) {
        return obs.inotify_ready != 0;
}
static bool with_peer, with_apiserver;
static bool all_seen(void) {
        return obs.t_metrics != 0 && obs.t_log != 0 && (!with_peer || obs.t_inotify != 0) &&
               (!with_apiserver || obs.t_apiserver != 0);
}

static int run_latency(Args *a) {
        Reader agent_reader = {.fn = on_log_line}, peer_reader = {.fn = on_inotify_line};
        pthread_t agent_thread, peer_thread, spinner, follower;
        uint64_t *s_inotify, *s_metrics, *s_log, *s_cycle, *s_apiserver;
        size_t n_inotify = 0, n_metrics = 0, n_log = 0, n_cycle = 0, n_apiserver = 0;
        unsigned long total_patches = 0, max_patches = 0, patches_before = 0;
        pid_t agent_pid, peer_pid = 0;
        uint64_t agent_cpu0 = 0, peer_cpu0 = 0, agent_cpu, peer_cpu;
        uint64_t steal0 = 0, start_usec = 0, steal, elapsed_usec;
        long cpus;
        /* per counted update, in order; an update not seen in full ends the
         * run and is not among them */
        uint64_t *u_metrics, *u_steal;
        size_t n_counted = 0;
        unsigned long total_requests = 0;
        FILE *raw = NULL;
        Writer w = {};
        int rc = 0;

        if (!a->dir || !a->agent_argv || !a->agent_argv[0] || a->payload.vary < 0)
                usage_error("latency needs --dir, --vary KEY (one of the --key), -- AGENT ARG...");
        writer_init(&w, a->dir);
        with_peer = a->inotifywait[0] != '\0';
        with_apiserver = a->apiserver != NULL;
        follow_path = a->apiserver;
        if (a->raw) {
                raw = fopen(a->raw, "we");
                if (!raw)
                        die("cannot write \"%s\": %s", a->raw, strerror(errno));
                fprintf(raw, "# update inotifywait_us metrics_us log_us requests apiserver_us "
                             "patches flip_us\n");
        }
        s_inotify = calloc(a->count, sizeof *s_inotify);
        s_metrics = calloc(a->count, sizeof *s_metrics);
        s_log = calloc(a->count, sizeof *s_log);
        s_cycle = calloc(a->count, sizeof *s_cycle);
        s_apiserver = calloc(a->count, sizeof *s_apiserver);
        u_metrics = calloc(a->count, sizeof *u_metrics);
        u_steal = calloc(a->count, sizeof *u_steal);
        if (!s_inotify || !s_metrics || !s_log || !s_cycle || !s_apiserver || !u_metrics ||
            !u_steal)
                die("out of memory");

        if (with_peer) {
                /* the agent's mask (agent/io/watcher.c): no open, access, close_nowrite */
                static char opt_m[] = "-m", opt_e[] = "-e",
                            mask[] = "create,delete,moved_from,moved_to,modify,close_write,"
                                     "attrib,delete_self,move_self";
                char *peer_argv[] = {strdup(a->inotifywait), opt_m, opt_e, mask,
                                     strdup(a->dir),         NULL};

                if (!peer_argv[0] || !peer_argv[4])
                        die("out of memory");

                /* events on stdout, "Watches established." on stderr */
                peer_pid = spawn_piped(peer_argv, true, &peer_reader.fd);
                free(peer_argv[0]);
                free(peer_argv[4]);
                pthread_create(&peer_thread, NULL, reader_run, &peer_reader);
        }
        agent_pid = spawn_piped(a->agent_argv, false, &agent_reader.fd);
        pthread_create(&agent_thread, NULL, reader_run, &agent_reader);
        if (with_apiserver)
                pthread_create(&follower, NULL, follow_run, NULL);

        pthread_mutex_lock(&obs.lock);
        if (!wait_locked(have_port, 10u * 1000u * 1000u)) {
                pthread_mutex_unlock(&obs.lock);
                stop_process(agent_pid);
                stop_process(peer_pid);
                die("the agent did not say where it listens within 10 s");
        }
        if (with_peer && !wait_locked(have_inotify, 10u * 1000u * 1000u)) {
                pthread_mutex_unlock(&obs.lock);
                stop_process(agent_pid);
                stop_process(peer_pid);
                die("%s did not establish its watch within 10 s", a->inotifywait);
        }
        pthread_mutex_unlock(&obs.lock);
        {
                /* the first evaluation is done when /readyz answers */
                char buf[4096];
                uint64_t deadline = now_usec() + 10u * 1000u * 1000u;

                while (http_get(obs.port, "/readyz", buf, sizeof buf) <= 0 ||
                       !strstr(buf, "\r\n\r\nready"))
                        if (now_usec() > deadline)
                                die("the agent never became ready: %s", buf);
                        else
                                sleep_usec(10000);
        }
        pthread_create(&spinner, NULL, spinner_run, NULL);

        for (unsigned long i = 1; i <= a->warmup + a->count; i++) {
                char name[NAME_MAX + 1];
                uint64_t t0;
                bool ok;

                if (i == a->warmup + 1) {
                        agent_cpu0 = cpu_ns(agent_pid);
                        peer_cpu0 = cpu_ns(peer_pid);
                        steal0 = steal_ms();
                        start_usec = now_usec();
                }
                writer_prepare(&w, &a->payload, (unsigned) i, name);
                pthread_mutex_lock(&obs.lock);
                obs.gen = (unsigned) i;
                obs.t_inotify = obs.t_log = obs.t_metrics = obs.t_apiserver = 0;
                obs.requests = 0;
                obs.patches = 0;
                patches_before = obs.patches_total;
                obs.request_usec_total = 0;
                t0 = now_usec();
                writer_flip(&w);
                pthread_cond_broadcast(&obs.cond);
                pthread_mutex_unlock(&obs.lock);
                writer_finish(&w, &a->payload, name);

                pthread_mutex_lock(&obs.lock);
                ok = wait_locked(all_seen, seen_timeout_usec());
                if (!ok) {
                        fprintf(stderr,
                                "%s: update %lu not seen within %llu s (inotifywait %s, metrics "
                                "%s, "
                                "log %s, apiserver %s)\n",
                                prog, i, (unsigned long long) (seen_timeout_usec() / 1000000u),
                                obs.t_inotify ? "yes" : "no", obs.t_metrics ? "yes" : "no",
                                obs.t_log ? "yes" : "no",
                                !with_apiserver   ? "not asked"
                                : obs.t_apiserver ? "yes"
                                                  : "no");
                        rc = 1;
                }
                if (i > a->warmup) {
                        uint64_t di = obs.t_inotify ? obs.t_inotify - t0 : 0;
                        uint64_t dm = obs.t_metrics ? obs.t_metrics - t0 : 0;
                        uint64_t dl = obs.t_log ? obs.t_log - t0 : 0;
                        uint64_t da = obs.t_apiserver > t0 ? obs.t_apiserver - t0 : 0;

                        if (obs.t_inotify)
                                s_inotify[n_inotify++] = di;
                        if (obs.t_metrics)
                                s_metrics[n_metrics++] = dm;
                        u_metrics[n_counted] = dm;
                        if (obs.t_log)
                                s_log[n_log++] = dl;
                        if (obs.t_apiserver)
                                s_apiserver[n_apiserver++] = da;
                        if (obs.requests > 0)
                                s_cycle[n_cycle++] = obs.request_usec_total / obs.requests;
                        total_requests += obs.requests;
                        if (raw)
                                fprintf(raw,
                                        "%lu %" PRIu64 " %" PRIu64 " %" PRIu64 " %u %" PRIu64
                                        " %u %" PRIu64 "\n",
                                        i - a->warmup, di, dm, dl, obs.requests, da, obs.patches,
                                        t0);
                }
                /* the spinner moves on only when gen changes: park it */
                pthread_mutex_unlock(&obs.lock);
                if (!ok)
                        break;
                /* after the update was seen, before the pause: off the clock */
                if (i > a->warmup)
                        u_steal[n_counted++] = steal_ms();
                sleep_usec(a->gap_ms * 1000u);
                if (with_apiserver && i > a->warmup) {
                        /* PATCHes of this update, late ones included: the gap
                         * is over, the next update has not started */
                        unsigned long p;

                        pthread_mutex_lock(&obs.lock);
                        p = obs.patches_total - patches_before;
                        pthread_mutex_unlock(&obs.lock);
                        total_patches += p;
                        if (p > max_patches)
                                max_patches = p;
                }
        }

        /* 0 when no update was counted (one in the warm-up was not seen) */
        agent_cpu = start_usec ? cpu_ns(agent_pid) - agent_cpu0 : 0;
        peer_cpu = start_usec && with_peer ? cpu_ns(peer_pid) - peer_cpu0 : 0;
        steal = start_usec ? steal_ms() - steal0 : 0;
        elapsed_usec = start_usec ? now_usec() - start_usec : 0;
        cpus = sysconf(_SC_NPROCESSORS_ONLN);
        pthread_mutex_lock(&obs.lock);
        obs.stop = true;
        pthread_cond_broadcast(&obs.cond);
        pthread_mutex_unlock(&obs.lock);
        pthread_join(spinner, NULL);
        stop_process(agent_pid);
        stop_process(peer_pid);
        pthread_join(agent_thread, NULL);
        if (with_peer)
                pthread_join(peer_thread, NULL);
        if (with_apiserver)
                pthread_join(follower, NULL);
        if (raw)
                fclose(raw);

        printf("updates n=%lu warmup=%lu gap_ms=%lu\n", a->count, a->warmup, a->gap_ms);
        if (with_peer)
                print_stats("inotifywait", s_inotify, n_inotify);
        print_stats("metrics", s_metrics, n_metrics);
        print_stats("log", s_log, n_log);
        if (with_apiserver) {
                print_stats("apiserver", s_apiserver, n_apiserver);
                printf("patches_per_update mean=%.2f max=%lu\n",
                       n_apiserver ? (double) total_patches / (double) a->count : 0.0, max_patches);
        }
        print_stats("request_cycle", s_cycle, n_cycle);
        printf("requests_per_update mean=%.1f\n",
               n_metrics ? (double) total_requests / (double) n_metrics : 0.0);
        /* each update's whole cost: the evaluation, the scrapes that saw it,
         * the PATCH; the peer's, reading and printing its events */
        printf("cpu_per_update agent_us=%.0f peer_us=%.0f\n",
               (double) agent_cpu / 1e3 / (double) a->count,
               (double) peer_cpu / 1e3 / (double) a->count);
        /* what the hypervisor took while the updates ran: it stalls whatever
         * runs on the CPU it takes, the agent and the peer alike */
        printf("host_steal ms=%" PRIu64 " share_pct=%.2f\n", steal,
               elapsed_usec && cpus > 0
                       ? (double) steal * 1e5 / (double) elapsed_usec / (double) cpus
                       : 0.0);
        if (n_counted > 0) {
                /* Which updates slower than the target had the host steal
                 * near them: the steal figure moved in the update's own
                 * stretch (from the read after the last update to the read
                 * after this one: its flip, its observers and the pause
                 * before it, about gap_ms) or the next one. At 10 ms a tick
                 * it cannot say more; the other updates give the base rate. */
                unsigned long slow = 0, slow_near = 0, others = 0, others_near = 0;

                for (size_t k = 0; k < n_counted; k++) {
                        uint64_t before = k > 0 ? u_steal[k - 1] : steal0;
                        bool near = u_steal[k] > before ||
                                    (k + 1 < n_counted && u_steal[k + 1] > u_steal[k]);

                        if (u_metrics[k] > SLOW_USEC) {
                                slow++;
                                slow_near += near;
                        } else {
                                others++;
                                others_near += near;
                        }
                }
                printf("steal_near slow_us=%u slow=%lu slow_near=%lu others=%lu others_near=%lu\n",
                       SLOW_USEC, slow, slow_near, others, others_near);
        }
        free(s_inotify);
        free(s_metrics);
        free(s_log);
        free(s_cycle);
        free(s_apiserver);
        free(u_metrics);
        free(u_steal);
        return rc;
}

static int run_updates(Args *a) {
        char *body = malloc(MAX_BODY);
        uint64_t start = now_usec();
        unsigned long requests = 0;
        FILE *raw = NULL;
        Writer w = {};

        if (!a->dir || !a->port || a->payload.vary < 0)
                usage_error("updates needs --dir, --port, --vary KEY (one of the --key)");
        if (!body)
                die("out of memory");
        if (a->raw && !(raw = fopen(a->raw, "we")))
                die("cannot write \"%s\": %s", a->raw, strerror(errno));
        writer_init(&w, a->dir);
        /* version names stay unique across runs that go on with --first */
        w.seq = (unsigned) a->first;
        for (unsigned long i = a->first; i < a->first + a->count; i++) {
                /* --alternate: even updates undo the previous one */
                bool undo = a->alternate && i % 2 == 0;
                char name[NAME_MAX + 1], needle[48];
                uint64_t deadline, flip_us;

                writer_prepare(&w, &a->payload, undo ? 0 : (unsigned) i, name);
                flip_us = now_usec();
                writer_flip(&w);
                writer_finish(&w, &a->payload, name);
                (void) snprintf(needle, sizeof needle, "key=\"BENCH_%lu\"", undo ? i - 1 : i);
                deadline = now_usec() + seen_timeout_usec();
                for (;;) {
                        ssize_t n = http_get(a->port, "/metrics", body, MAX_BODY);
                        bool ok = n > 0 && strncmp(body, "HTTP/1.1 200 ", 13) == 0;

                        requests++;
                        if (ok && (strstr(body, needle) != NULL) != undo) {
                                if (raw)
                                        fprintf(raw,
                                                "%lu flip_us=%" PRIu64 " seen_us=%" PRIu64 "\n", i,
                                                flip_us, now_usec());
                                break;
                        }
                        if (now_usec() > deadline)
                                die("update %lu not seen in /metrics within %llu s", i,
                                    (unsigned long long) (seen_timeout_usec() / 1000000u));
                }
                if (a->pause_ms > 0)
                        sleep_usec(a->pause_ms * 1000u);
        }
        printf("updates n=%lu seconds=%.3f requests=%lu\n", a->count,
               (double) (now_usec() - start) / 1e6, requests);
        if (raw)
                fclose(raw);
        free(body);
        return 0;
}

static int run_storm(Args *a) {
        uint64_t start = now_usec();
        Writer w = {};

        if (!a->dir || a->payload.vary < 0)
                usage_error("storm needs --dir, --vary KEY (one of the --key)");
        writer_init(&w, a->dir);
        w.seq = (unsigned) a->first;
        for (unsigned long i = 0; i < a->count; i++) {
                char name[NAME_MAX + 1];
                uint64_t due = start + i * a->gap_us, now = now_usec();

                if (now < due)
                        sleep_usec(due - now);
                writer_prepare(&w, &a->payload, (unsigned) (a->first + i), name);
                writer_flip(&w);
                writer_finish(&w, &a->payload, name);
        }
        printf("storm n=%lu seconds=%.3f last=BENCH_%lu\n", a->count,
               (double) (now_usec() - start) / 1e6, a->first + a->count - 1);
        return 0;
}

static int run_textfile(Args *a) {
        char *body = malloc(MAX_BODY), tmp[PATH_MAX];
        uint64_t start = now_usec();
        size_t len;
        char *base;

        if (!a->file || !a->port)
                usage_error("textfile needs --file and --port");
        if (!body)
                die("out of memory");
        base = read_file(a->file, &len);
        /* not *.prom: the textfile collector must not read it half-written */
        (void) snprintf(tmp, sizeof tmp, "%s.tmp", a->file);
        for (unsigned long i = 1; i <= a->count; i++) {
                char extra[64];
                int fd, n;

                fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0)
                        die("cannot write \"%s\": %s", tmp, strerror(errno));
                write_all_fd(fd, base, len, tmp);
                n = snprintf(extra, sizeof extra, "# update %lu\n", i);
                write_all_fd(fd, extra, (size_t) n, tmp);
                close(fd);
                if (rename(tmp, a->file) < 0)
                        die("rename \"%s\": %s", tmp, strerror(errno));
                if (http_get(a->port, "/metrics", body, MAX_BODY) <= 0 || !strstr(body, " 200 OK"))
                        die("scrape %lu of 127.0.0.1:%u failed", i, (unsigned) a->port);
        }
        printf("updates n=%lu seconds=%.3f\n", a->count, (double) (now_usec() - start) / 1e6);
        free(base);
        free(body);
        return 0;
}

typedef struct ScrapeJob {
        uint16_t port;
        unsigned long count, failed;
} ScrapeJob;

static void *scrape_run(void *arg) {
        ScrapeJob *j = arg;
        char *body = malloc(MAX_BODY);

        if (!body)
                die("out of memory");
        for (unsigned long i = 0; i < j->count; i++)
                if (http_get(j->port, "/metrics", body, MAX_BODY) <= 0 ||
                    strncmp(body, "HTTP/1.1 200 ", 13) != 0)
                        j->failed++;
        free(body);
        return NULL;
}

static int run_scrape(Args *a) {
        pthread_t t[64];
        ScrapeJob jobs[64];
        uint64_t start = now_usec();
        unsigned long failed = 0;

        if (!a->port || a->threads == 0 || a->threads > 64)
                usage_error("scrape needs --port and --threads 1 to 64");
        for (unsigned long i = 0; i < a->threads; i++) {
                jobs[i] = (ScrapeJob){.port = a->port,
                                      .count = a->count / a->threads +
                                               (i < a->count % a->threads ? 1 : 0)};
                pthread_create(&t[i], NULL, scrape_run, &jobs[i]);
        }
        for (unsigned long i = 0; i < a->threads; i++) {
                pthread_join(t[i], NULL);
                failed += jobs[i].failed;
        }
        printf("scrapes n=%lu failed=%lu seconds=%.3f\n", a->count, failed,
               (double) (now_usec() - start) / 1e6);
        return failed > 0;
}

int main(int argc, char **argv) {
        int rc;
        Args a;

        (void) signal(SIGPIPE, SIG_IGN);
        setvbuf(stdout, NULL, _IOLBF, 0);
        parse_args(argc, argv, &a);
        if (strcmp(a.mode, "latency") == 0)
                rc = run_latency(&a);
        else if (strcmp(a.mode, "updates") == 0)
                rc = run_updates(&a);
        else if (strcmp(a.mode, "storm") == 0)
                rc = run_storm(&a);
        else if (strcmp(a.mode, "textfile") == 0)
                rc = run_textfile(&a);
        else if (strcmp(a.mode, "scrape") == 0)
                rc = run_scrape(&a);
        else
                usage_error("unknown mode");
        /* a sanitized build checks for leaks at exit */
        payload_done(&a.payload);
        return rc;
}
