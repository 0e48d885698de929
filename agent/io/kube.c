/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <strings.h>
#include <sys/epoll.h>
#include <time.h>

#include "fileio.h"
#include "kube.h"
#include "timeutil.h"
#include "strbuf.h"

struct KubeCall {
        KubeClient *client;
        KubeCall *prev, *next;
        CURL *easy;
        struct curl_slist *headers;
        KubeVerb verb;
        char *body_out; /* the request body (curl reads it in place) */
        kube_line_t on_line;
        kube_done_t on_done;
        void *userdata;
        StrBuf body;       /* the response, or the unread part of a stream */
        size_t line_start; /* streaming: bytes of body already delivered */
        char *retry_after; /* of the last header block */
        bool too_large;    /* the response crossed KUBE_MAX_OBJECT_BYTES */
        bool in_callback;  /* a callback of this call is running */
        bool cancelled;    /* cancelled from inside its own callback */
        char error[CURL_ERROR_SIZE];
};

struct KubeClient {
        sd_event *event;
        CURLM *multi;
        sd_event_source *timer; /* libcurl's timeout, when it is not 0 */
        sd_event_source *now;   /* libcurl's timeout of 0: the next turn of the loop */
        CURL *spare;            /* an easy handle a finished call left, reset, for the next */
        KubeCall *calls;        /* in flight */
        char *api_url, *ca_file, *token_file, *user_agent;
        char *auth_header; /* "Authorization: Bearer ...", NULL without a token file */
        bool plain_http;   /* http://localhost: kubectl proxy */
        uint64_t token_read_usec;
        uint64_t token_max_age_usec;
        KubeStats stats;
};

/* ---------------------------------------------------------------------------
 * The token */

static int load_token(KubeClient *c) {
        _cleanup_free_ char *data = NULL, *header = NULL;
        size_t len;
        int r;

        r = read_file_at(AT_FDCWD, c->token_file, 0, KUBE_MAX_TOKEN_BYTES, &data, &len);
        if (r < 0)
                return r;
        /* kubelet writes the token without a newline; a hand-made file may have one. */
        while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r'))
                data[--len] = '\0';
        if (len == 0)
                return -EBADMSG;
        /* A header must not carry a line break or any other control byte. */
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) data[i] <= ' ' || data[i] == 0x7f)
                        return -EBADMSG;

        if (asprintf(&header, "Authorization: Bearer %s", data) < 0)
                return -ENOMEM;
        c->token_read_usec = now_usec(CLOCK_MONOTONIC);
        r = !c->auth_header || !streq(c->auth_header, header);
        free(c->auth_header);
        c->auth_header = TAKE_PTR(header);
        return r;
}

int kube_client_reload_token(KubeClient *c) {
        return c->token_file ? load_token(c) : 0;
}

/* ---------------------------------------------------------------------------
 * Statistics */

static void count(KubeClient *c, KubeVerb verb, long code) {
        KubeStats *s = &c->stats;

        for (size_t i = 0; i < s->n_series; i++)
                if (s->series[i].verb == verb && s->series[i].code == code) {
                        s->series[i].count++;
                        return;
                }
        if (s->n_series >= KUBE_MAX_STAT_SERIES) {
                /* the last slot is the "other" bucket of every verb */
                s->series[KUBE_MAX_STAT_SERIES] = (KubeStatSeries){
                        .verb = verb,
                        .code = -1,
                        .count = s->series[KUBE_MAX_STAT_SERIES].count + 1,
                };
                s->n_series = KUBE_MAX_STAT_SERIES + 1;
                return;
        }
        s->series[s->n_series++] = (KubeStatSeries){.verb = verb, .code = code, .count = 1};
}

const KubeStats *kube_client_stats(const KubeClient *c) {
        return &c->stats;
}

const char *kube_client_api_url(const KubeClient *c) {
        return c->api_url;
}

const char *kube_error_hint(int error) {
        /* a failed TLS handshake (a refused certificate) is -EPROTO (error_from_curl()) */
        return error == -EPROTO ? " (TLS: is the service account's ca.crt the cluster's CA, and "
                                  "does the API server's certificate name the host in the URL?)"
                                : "";
}

/* ---------------------------------------------------------------------------
 * Calls */

static void call_unlink(KubeCall *call) {
        KubeClient *c = call->client;

        if (call->prev)
                call->prev->next = call->next;
        else if (c->calls == call)
                c->calls = call->next;
        if (call->next)
                call->next->prev = call->prev;
        call->prev = call->next = NULL;
}

static void call_free(KubeCall *call) {
        KubeClient *c;

        if (!call)
                return;
        c = call->client;
        if (call->easy) {
                (void) curl_multi_remove_handle(c->multi, call->easy);
                /* Kept for the next call (a PATCH per update): a handle is
                 * several KiB to allocate and set up. curl_easy_reset() drops
                 * every option, this call's headers and body included; the
                 * connections live in the multi handle either way. */
                if (!c->spare) {
                        curl_easy_reset(call->easy);
                        c->spare = call->easy;
                } else
                        curl_easy_cleanup(call->easy);
        }
        call_unlink(call);
        curl_slist_free_all(call->headers);
        free(call->body_out);
        free(call->retry_after);
        strbuf_done(&call->body);
        free(call);
}

KubeCall *kube_call_cancel(KubeCall *call) {
        if (!call)
                return NULL;
        if (call->in_callback) {
                call->cancelled = true;
                return NULL;
        }
        call_free(call);
        return NULL;
}

static size_t on_curl_write(char *data, size_t size, size_t n, void *userdata) {
        KubeCall *call = userdata;
        size_t len = size * n;

        /* A stream keeps only its undelivered tail: one event is capped, not the stream. */
        if (call->body.len - call->line_start + len > KUBE_MAX_OBJECT_BYTES ||
            strbuf_append(&call->body, data, len) < 0) {
                call->too_large = true;
                return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
        }
        return len;
}

static size_t on_curl_header(char *data, size_t size, size_t n, void *userdata) {
        KubeCall *call = userdata;
        size_t len = size * n;
        static const char name[] = "retry-after:";

        /* A new status line (after a 100 Continue or a redirect) starts a new block. */
        if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) {
                free(call->retry_after);
                call->retry_after = NULL;
        } else if (len > sizeof name - 1 && len < 256 &&
                   strncasecmp(data, name, sizeof name - 1) == 0) {
                free(call->retry_after);
                call->retry_after = strndup(data + sizeof name - 1, len - (sizeof name - 1));
        }
        return len;
}

/* A stream's lines are events only in a 2xx answer: an error answer (a watch
 * refused with 403, 410 or 500) is one Status object, which goes to on_done
 * as the body of any other call does. */
static bool streams_lines(KubeCall *call) {
        long status = 0;

        if (!call->on_line)
                return false;
        (void) curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &status);
        return status >= 200 && status < 300;
}

/* Delivers the complete lines of a stream; the call may be cancelled meanwhile. */
static void deliver_lines(KubeCall *call) {
        KubeClient *c = call->client;

        if (!streams_lines(call))
                return;
        while (!call->cancelled) {
                const char *start = strbuf_str(&call->body) + call->line_start;
                const char *nl = memchr(start, '\n', call->body.len - call->line_start);
                size_t len;

                if (!nl)
                        break;
                len = (size_t) (nl - start);
                call->line_start += len + 1;
                if (len == 0)
                        continue;
                /* a streaming answer is a working server, long before it ends */
                c->stats.last_success_usec = now_usec(CLOCK_REALTIME);
                call->in_callback = true;
                call->on_line(c, start, len, call->userdata);
                call->in_callback = false;
        }
        if (call->cancelled)
                return;
        /* Keep the buffer small: drop what was delivered. */
        if (call->line_start > 0 && call->line_start == call->body.len) {
                strbuf_reset(&call->body);
                call->line_start = 0;
        } else if (call->line_start > 64u * 1024u) {
                memmove(call->body.data, call->body.data + call->line_start,
                        call->body.len - call->line_start + 1);
                call->body.len -= call->line_start;
                call->line_start = 0;
        }
}

static int error_from_curl(CURLcode code) {
        switch (code) {
        case CURLE_OPERATION_TIMEDOUT:
                return -ETIMEDOUT;
        case CURLE_COULDNT_RESOLVE_HOST:
                return -EHOSTUNREACH;
        case CURLE_COULDNT_CONNECT:
                return -ECONNREFUSED;
        case CURLE_WRITE_ERROR:
                return -EFBIG; /* only on_curl_write refuses */
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CONNECT_ERROR:
                return -EPROTO;
        case CURLE_GOT_NOTHING:
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_PARTIAL_FILE:
                return -ECONNRESET;
        default:
                return -EIO;
        }
}

static void call_finish(KubeCall *call, CURLcode result) {
        KubeClient *c = call->client;
        KubeResponse r = {.error_detail = ""};
        long status = 0;

        (void) curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &status);
        deliver_lines(call);
        if (call->cancelled) {
                call_free(call);
                return;
        }
        if (result != CURLE_OK) {
                /* A stream the server ended mid-line, or any transport failure. */
                r.error = call->too_large ? -EFBIG : error_from_curl(result);
                /* libcurl would say "Failure writing output to destination" */
                r.error_detail = call->too_large  ? "the answer holds an object larger than "
                                                    "KUBE_MAX_OBJECT_BYTES (4 MiB)"
                                 : call->error[0] ? call->error
                                                  : curl_easy_strerror(result);
                /* a stream that got its status line still counts under its code */
                r.status = call->on_line ? status : 0;
        } else
                r.status = status;
        count(c, call->verb, r.error < 0 && r.status == 0 ? 0 : r.status);
        if (r.error == 0 && r.status >= 200 && r.status < 300)
                c->stats.last_success_usec = now_usec(CLOCK_REALTIME);
        r.body = streams_lines(call) ? "" : strbuf_str(&call->body);
        r.body_len = streams_lines(call) ? 0 : call->body.len;
        r.retry_after = call->retry_after;

        call_unlink(call);
        call->in_callback = true;
        if (call->on_done)
                call->on_done(c, &r, call->userdata);
        call->in_callback = false;
        call_free(call);
}

/* Runs after every curl_multi_socket_action(), outside libcurl. */
static void dispatch(KubeClient *c) {
        CURLMsg *msg;
        int left;

        /* Lines first: each dispatch may cancel any call, so restart the scan. */
        for (bool again = true; again;) {
                again = false;
                for (KubeCall *call = c->calls; call; call = call->next) {
                        bool pending = streams_lines(call) &&
                                       memchr(strbuf_str(&call->body) + call->line_start, '\n',
                                              call->body.len - call->line_start);
                        if (!pending)
                                continue;
                        deliver_lines(call);
                        if (call->cancelled) {
                                call->cancelled = false;
                                call_free(call);
                        }
                        again = true;
                        break;
                }
        }

        while ((msg = curl_multi_info_read(c->multi, &left))) {
                KubeCall *call = NULL;

                if (msg->msg != CURLMSG_DONE)
                        continue;
                if (curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **) &call) !=
                            CURLE_OK ||
                    !call)
                        continue;
                call_finish(call, msg->data.result);
        }
}

/* ---------------------------------------------------------------------------
 * libcurl inside sd-event */

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        KubeClient *c = userdata;
        int action = 0, running;

        if (revents & (EPOLLIN | EPOLLHUP))
                action |= CURL_CSELECT_IN;
        if (revents & EPOLLOUT)
                action |= CURL_CSELECT_OUT;
        if (revents & EPOLLERR)
                action |= CURL_CSELECT_ERR;
        (void) curl_multi_socket_action(c->multi, fd, action, &running);
        dispatch(c);
        return 0;
}

static int on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userdata, void *socketp) {
        KubeClient *c = userdata;
        sd_event_source *s = socketp;
        uint32_t events = 0;
        int r;

        if (what == CURL_POLL_REMOVE) {
                (void) sd_event_source_disable_unref(s);
                (void) curl_multi_assign(c->multi, fd, NULL);
                return 0;
        }
        if (what & CURL_POLL_IN)
                events |= EPOLLIN;
        if (what & CURL_POLL_OUT)
                events |= EPOLLOUT;
        if (s) {
                r = sd_event_source_set_io_events(s, events);
                if (r >= 0)
                        r = sd_event_source_set_enabled(s, SD_EVENT_ON);
        } else {
                r = sd_event_add_io(c->event, &s, fd, events, on_io, c);
                if (r >= 0) {
                        (void) sd_event_source_set_description(s, "kube-socket");
                        if (curl_multi_assign(c->multi, fd, s) != CURLM_OK) {
                                (void) sd_event_source_disable_unref(s);
                                r = -EIO;
                        }
                }
        }
        return r < 0 ? -1 : 0;
}

static void run_timeout(KubeClient *c) {
        int running;

        (void) curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        dispatch(c);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        run_timeout(userdata);
        return 0;
}

static int on_now(sd_event_source *s, void *userdata) {
        run_timeout(userdata);
        return 0;
}

/* curl counts in milliseconds, and after each run for a timeout (every
 * request it is handed starts with one, c->now) it announces its next
 * deadline again: often the one it announced before (another transfer's),
 * rounded to the millisecond from a later now. A timer already set within a
 * millisecond of it is that deadline: leaving it spares the kernel timer a
 * reprogramming per request. Late, curl is called under a millisecond late;
 * early, it finds nothing due and announces the deadline again. */
static bool timer_holds(sd_event_source *timer, uint64_t usec) {
        uint64_t at, now, want;
        int enabled;

        if (sd_event_source_get_enabled(timer, &enabled) < 0 || enabled == SD_EVENT_OFF)
                return false;
        if (sd_event_source_get_time(timer, &at) < 0 ||
            sd_event_now(sd_event_source_get_event(timer), CLOCK_MONOTONIC, &now) < 0)
                return false;
        want = usec > UINT64_MAX - now ? UINT64_MAX : now + usec;
        return at <= want ? want - at < 1000u : at - want < 1000u;
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userdata) {
        KubeClient *c = userdata;
        int r;

        /* One timeout at a time: each call replaces the last. */
        (void) sd_event_source_set_enabled(c->now, SD_EVENT_OFF);
        if (timeout_ms < 0)
                return sd_event_source_set_enabled(c->timer, SD_EVENT_OFF) < 0 ? -1 : 0;
        /* curl asks not to be called back from inside this callback: the loop
         * runs it on its next turn. 0 ms (every request handed to libcurl)
         * needs no kernel timer for that. The timer is left as it is: curl
         * asks for its deadline again after the run (timer_holds()), and one
         * that fires meanwhile only has curl look. */
        if (timeout_ms == 0)
                return sd_event_source_set_enabled(c->now, SD_EVENT_ONESHOT) < 0 ? -1 : 0;
        if (timer_holds(c->timer, (uint64_t) timeout_ms * 1000u))
                return 0;
        r = sd_event_source_set_time_relative(c->timer, (uint64_t) timeout_ms * 1000u);
        if (r >= 0)
                r = sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
        return r < 0 ? -1 : 0;
}

/* ---------------------------------------------------------------------------
 * Life cycle */

KubeClient *kube_client_free(KubeClient *c) {
        if (!c)
                return NULL;
        while (c->calls)
                call_free(c->calls);
        if (c->spare)
                curl_easy_cleanup(c->spare);
        if (c->multi)
                (void) curl_multi_cleanup(c->multi);
        sd_event_source_disable_unref(c->timer);
        sd_event_source_disable_unref(c->now);
        sd_event_unref(c->event);
        free(c->api_url);
        free(c->ca_file);
        free(c->token_file);
        free(c->user_agent);
        free(c->auth_header);
        free(c);
        return NULL;
}

static void curl_url_cleanupp(CURLU **u) {
        if (*u)
                curl_url_cleanup(*u);
}

static void curl_freep(char **p) {
        curl_free(*p);
}

/* An IPv4 loopback address (127.0.0.0/8), written the one way inet_pton()
 * accepts: no "127.1", no octal, no hex. */
static bool host_is_loopback_ipv4(const char *host) {
        struct in_addr a;

        return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

int kube_api_url_check(const char *url, bool *ret_plain_http) {
        _cleanup_(curl_url_cleanupp) CURLU *u = curl_url();
        _cleanup_(curl_freep) char *scheme = NULL, *host = NULL, *user = NULL, *query = NULL,
                                   *fragment = NULL;
        bool plain;

        if (!u)
                return -ENOMEM;
        /* The URL as typed: no guessed scheme, no scheme other than these two. */
        if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
                return -EINVAL;
        if (streq(scheme, "http"))
                plain = true;
        else if (streq(scheme, "https"))
                plain = false;
        else
                return -EPROTONOSUPPORT;
        /* Credentials, a query or a fragment: the request paths are appended
         * to the URL, and a name before '@' is how "http://127.0.0.1@host"
         * hides the real host. */
        if (curl_url_get(u, CURLUPART_USER, &user, 0) != CURLUE_NO_USER ||
            curl_url_get(u, CURLUPART_QUERY, &query, 0) != CURLUE_NO_QUERY ||
            curl_url_get(u, CURLUPART_FRAGMENT, &fragment, 0) != CURLUE_NO_FRAGMENT)
                return -EINVAL;
        /* http only to this machine (kubectl proxy, which adds the
         * credentials): the host exactly, never a name that starts like one. */
        if (plain && strcasecmp(host, "localhost") != 0 && !streq(host, "[::1]") &&
            !host_is_loopback_ipv4(host))
                return -EPROTONOSUPPORT;
        if (ret_plain_http)
                *ret_plain_http = plain;
        return 0;
}

int kube_client_new(sd_event *e, const KubeConfig *cfg, KubeClient **ret) {
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        int r;

        /* Once per process; libcurl documents it as not thread-safe, and the
         * agent has one thread. */
        static bool curl_ready;
        if (!curl_ready) {
                if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                        return -EIO;
                curl_ready = true;
        }

        c = calloc(1, sizeof(KubeClient));
        if (!c)
                return -ENOMEM;
        c->event = sd_event_ref(e);
        c->api_url = strdup(cfg->api_url);
        c->ca_file = cfg->ca_file ? strdup(cfg->ca_file) : NULL;
        c->token_file = cfg->token_file ? strdup(cfg->token_file) : NULL;
        c->user_agent = strdup(cfg->user_agent ? cfg->user_agent : "aicr-enroot-agent");
        c->token_max_age_usec = cfg->token_max_age_usec ?: KUBE_TOKEN_MAX_AGE_USEC;
        if (!c->api_url || (cfg->ca_file && !c->ca_file) || (cfg->token_file && !c->token_file) ||
            !c->user_agent)
                return -ENOMEM;

        r = kube_api_url_check(cfg->api_url, &c->plain_http);
        if (r < 0)
                return r;

        if (c->token_file) {
                r = load_token(c);
                if (r < 0)
                        return r;
        }

        /* Accuracy 1 µs, not 0: 0 is sd-event's default of 250 ms, within
         * which the loop may put off the wake-up to batch it with others, and
         * a timeout of libcurl's is a step of a request under way. (Its 0 ms,
         * to start a request it was just handed, is c->now.) */
        r = sd_event_add_time_relative(e, &c->timer, CLOCK_MONOTONIC, 0, 1, on_timer, c);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
        (void) sd_event_source_set_description(c->timer, "kube-timer");
        r = sd_event_add_defer(e, &c->now, on_now, c);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(c->now, SD_EVENT_OFF);
        (void) sd_event_source_set_description(c->now, "kube-now");

        c->multi = curl_multi_init();
        if (!c->multi)
                return -EIO;
        if (curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket) != CURLM_OK ||
            curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c) != CURLM_OK ||
            curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer) != CURLM_OK ||
            curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c) != CURLM_OK)
                return -EIO;

        *ret = TAKE_PTR(c);
        return 0;
}

/* curl_slist_append() returns NULL on failure and leaves the list as it was. */
static bool add_header(KubeCall *call, const char *header) {
        struct curl_slist *l = curl_slist_append(call->headers, header);

        if (!l)
                return false;
        call->headers = l;
        return true;
}

int kube_call_start(KubeClient *c, const KubeRequest *req, KubeCall **ret) {
        _cleanup_free_ char *url = NULL, *content_type = NULL;
        KubeCall *call;
        bool ok = true;

        /* Bound tokens rotate: never send one older than the maximum age (a
         * minute unless configured). A failed re-read keeps the old token,
         * and is tried again at the next request; a 401 will tell. */
        if (c->token_file &&
            now_usec(CLOCK_MONOTONIC) - c->token_read_usec >= c->token_max_age_usec)
                (void) load_token(c);

        if (asprintf(&url, "%s%s", c->api_url, req->path) < 0)
                return -ENOMEM;
        call = calloc(1, sizeof(KubeCall));
        if (!call)
                return -ENOMEM;
        *call = (KubeCall){
                .client = c,
                .verb = req->verb,
                .on_line = req->on_line,
                .on_done = req->on_done,
                .userdata = req->userdata,
                .body = STRBUF_INIT(req->on_line ? KUBE_MAX_OBJECT_BYTES * 2u
                                                 : KUBE_MAX_OBJECT_BYTES),
        };
        call->easy = TAKE_PTR(c->spare) ?: curl_easy_init();
        if (!call->easy) {
                call_free(call);
                return -EIO;
        }
        if (req->body) {
                call->body_out = strdup(req->body);
                if (!call->body_out ||
                    asprintf(&content_type, "Content-Type: %s", strnull(req->content_type)) < 0) {
                        call_free(call);
                        return -ENOMEM;
                }
        }

#define SET(opt, val) ok = ok && curl_easy_setopt(call->easy, opt, val) == CURLE_OK
        SET(CURLOPT_URL, url);
        SET(CURLOPT_PROTOCOLS_STR, c->plain_http ? "http" : "https");
        /* The pod's CA, and only it: libcurl would also trust every CA of
         * its built-in directory (/etc/ssl/certs on Debian), any of which
         * could then vouch for a server and be sent the token. */
        if (c->ca_file) {
                SET(CURLOPT_CAINFO, c->ca_file);
                SET(CURLOPT_CAPATH, NULL);
        }
        SET(CURLOPT_SSL_VERIFYPEER, 1L);
        SET(CURLOPT_SSL_VERIFYHOST, 2L);
        /* HTTP/1.1, though libcurl would take the h2 the API server offers
         * in ALPN. Over h2 the multi handle puts the watch and every PATCH
         * and Event on one multiplexed TCP connection, and libcurl sends no
         * HTTP/2 PING unless asked (curl_easy_upkeep()): a connection that
         * dies without a FIN or RST (a load balancer or NAT forgetting it)
         * would stall the watch and every write with it until each times
         * out. client-go met this (kubernetes#65012, #87615) and answered
         * with PING health checks (#95981). Over HTTP/1.1 the open watch
         * holds a connection of its own and a write takes another, so a
         * dead watch never holds a write back; and the agent speaks the HTTP
         * its tests speak. */
        SET(CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_1_1);
        SET(CURLOPT_NOSIGNAL, 1L);
        SET(CURLOPT_TCP_KEEPALIVE, 1L);
        SET(CURLOPT_CONNECTTIMEOUT_MS, (long) KUBE_CONNECT_TIMEOUT_MS);
        SET(CURLOPT_TIMEOUT_MS, (long) (req->timeout_usec / 1000u));
        SET(CURLOPT_USERAGENT, c->user_agent);
        SET(CURLOPT_CUSTOMREQUEST, req->method);
        SET(CURLOPT_WRITEFUNCTION, on_curl_write);
        SET(CURLOPT_WRITEDATA, call);
        SET(CURLOPT_HEADERFUNCTION, on_curl_header);
        SET(CURLOPT_HEADERDATA, call);
        SET(CURLOPT_ERRORBUFFER, call->error);
        SET(CURLOPT_PRIVATE, (char *) call);
        if (call->body_out) {
                SET(CURLOPT_POSTFIELDS, call->body_out);
                SET(CURLOPT_POSTFIELDSIZE, (long) strlen(call->body_out));
        }
#undef SET
        /* No token file (kubectl proxy adds the credentials): no Authorization
         * header at all, rather than an empty one. */
        ok = ok && (!c->auth_header || add_header(call, c->auth_header)) &&
             add_header(call, "Accept: application/json") &&
             (!content_type || add_header(call, content_type)) &&
             curl_easy_setopt(call->easy, CURLOPT_HTTPHEADER, call->headers) == CURLE_OK;
        if (!ok) {
                call_free(call);
                return -ENOMEM;
        }

        if (curl_multi_add_handle(c->multi, call->easy) != CURLM_OK) {
                call_free(call);
                return -EIO;
        }
        call->next = c->calls;
        if (c->calls)
                c->calls->prev = call;
        c->calls = call;
        if (ret)
                *ret = call;
        return 0;
}

/* ---------------------------------------------------------------------------
 * Blocking calls, for command-line programs */

typedef struct SyncState {
        KubeResult *result;
        int error;
        bool done;
} SyncState;

static char *dup_or_null(const char *s, bool *ok) {
        char *c;

        if (!s)
                return NULL;
        c = strdup(s);
        *ok = *ok && c;
        return c;
}

static void on_sync_done(KubeClient *c, const KubeResponse *r, void *userdata) {
        SyncState *st = userdata;
        KubeResult *res = st->result;
        bool ok = true;

        *res = (KubeResult){.status = r->status, .error = r->error, .body_len = r->body_len};
        res->error_detail = dup_or_null(r->error_detail, &ok);
        res->retry_after = dup_or_null(r->retry_after, &ok);
        res->body = malloc(r->body_len + 1);
        if (res->body) {
                memcpy(res->body, r->body, r->body_len);
                res->body[r->body_len] = '\0';
        }
        if (!ok || !res->body)
                st->error = -ENOMEM;
        st->done = true;
}

void kube_result_done(KubeResult *r) {
        free(r->error_detail);
        free(r->body);
        free(r->retry_after);
        *r = (KubeResult){};
}

int kube_call_sync(KubeClient *c, const KubeRequest *req, KubeResult *ret) {
        KubeResult res = {};
        SyncState st = {.result = &res};
        KubeRequest r = *req;
        int k;

        r.on_line = NULL;
        r.on_done = on_sync_done;
        r.userdata = &st;
        k = kube_call_start(c, &r, NULL);
        if (k < 0)
                return k;
        while (!st.done) {
                k = sd_event_run(c->event, UINT64_MAX);
                if (k < 0) {
                        kube_result_done(&res);
                        return k;
                }
        }
        if (st.error < 0) {
                kube_result_done(&res);
                return st.error;
        }
        *ret = res;
        return 0;
}
