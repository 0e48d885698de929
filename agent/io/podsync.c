/* SPDX-License-Identifier: Apache-2.0 */
#include <inttypes.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "condition.h"
#include "log.h"
#include "podsync.h"
#include "timeutil.h"

/* Which request a failure came from: each has its own retry state. */
typedef enum Channel {
        CHANNEL_POD,   /* GET and WATCH of the pod */
        CHANNEL_PATCH, /* PATCH pods/NAME/status */
        CHANNEL_EVENT, /* POST events */
        _CHANNEL_MAX,
} Channel;

typedef struct Retry {
        sd_event_source *timer;
        unsigned attempt;  /* failures in a row */
        bool auth_retried; /* the one immediate retry after a 401 was spent */
        bool troubled;     /* a failure was logged; the next success says so */
        bool throttled;    /* the timer waits as a 429 asked: a new condition waits too */
} Retry;

/* A token bucket: a burst, then one per interval. */
typedef struct Bucket {
        double tokens;
        uint64_t usec; /* CLOCK_MONOTONIC of the last refill */
} Bucket;

struct PodSync {
        sd_event *event;
        KubeClient *client;
        char *name, *namespace, *uid, *type, *component;
        bool counts_only; /* the condition names no key (condition.h) */
        char *pods_path;  /* /api/v1/namespaces/NS/pods */
        void (*on_pod)(const json_t *pod, void *userdata);
        void *userdata;

        KubePod pod; /* the last state of the pod seen, when have_pod */
        bool have_pod;
        bool relist; /* the watch said 410: read the pod again */
        uint64_t watch_started_usec;

        Condition want; /* what the agent says, when have_want */
        bool have_want;
        Condition rejected; /* refused with 409/422: not sent again until want changes */
        bool have_rejected;
        Condition sent; /* what the patch in flight asks for: want may move on meanwhile */

        ConditionStatus announced; /* the status of the last Event, when have_announced */
        bool have_announced;
        ConditionStatus announcing; /* the status of the Event in flight */
        bool announce_checked;      /* announced was initialised from the pod */
        Bucket event_tokens;

        Bucket patch_tokens;
        uint64_t last_write_usec; /* when the agent's last patch succeeded */
        unsigned fights;

        sd_event_source *update_source; /* sends what podsync_update() took in */
        bool stopped;
        bool rbac_logged[_KUBE_VERB_MAX];
        KubeCall *get_call, *watch_call, *patch_call, *event_call;
        Retry retry[_CHANNEL_MAX];
};

static uint64_t random_u64(void) {
        uint64_t v;

        if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t) sizeof v)
                return v;
        return now_usec(CLOCK_MONOTONIC) ^ ((uint64_t) getpid() << 32);
}

/* Refills b; 0 when a token is there to take, else how long until one is. */
static uint64_t bucket_wait(Bucket *b, unsigned burst, uint64_t interval_usec) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        b->tokens += (double) (now - b->usec) / (double) interval_usec;
        if (b->tokens > burst)
                b->tokens = burst;
        b->usec = now;
        if (b->tokens >= 1.0)
                return 0;
        return (uint64_t) ((1.0 - b->tokens) * (double) interval_usec) + 1000u;
}

static void start_get(PodSync *s);
static void start_watch(PodSync *s);
static void start_patch(PodSync *s);
static void start_event(PodSync *s);

/* ---------------------------------------------------------------------------
 * Retries */

static int on_retry(sd_event_source *src, uint64_t usec, void *userdata);

static void schedule(PodSync *s, Channel ch, uint64_t delay_usec) {
        Retry *t = &s->retry[ch];
        int r;

        if (!t->timer) {
                r = sd_event_add_time_relative(s->event, &t->timer, CLOCK_MONOTONIC, delay_usec,
                                               10 * 1000, on_retry, s);
                if (r < 0) {
                        log_error_errno(r, "Cannot arm a Kubernetes retry timer: %m");
                        return;
                }
                (void) sd_event_source_set_description(t->timer, "kube-retry");
                return;
        }
        r = sd_event_source_set_time_relative(t->timer, delay_usec);
        if (r >= 0)
                r = sd_event_source_set_enabled(t->timer, SD_EVENT_ONESHOT);
        if (r < 0)
                log_error_errno(r, "Cannot arm a Kubernetes retry timer: %m");
}

static bool scheduled(const PodSync *s, Channel ch) {
        int enabled = SD_EVENT_OFF;

        return s->retry[ch].timer &&
               sd_event_source_get_enabled(s->retry[ch].timer, &enabled) >= 0 &&
               enabled != SD_EVENT_OFF;
}

static int on_retry(sd_event_source *src, uint64_t usec, void *userdata) {
        PodSync *s = userdata;

        if (s->stopped)
                return 0;
        for (Channel ch = 0; ch < _CHANNEL_MAX; ch++)
                if (src == s->retry[ch].timer)
                        s->retry[ch].throttled = false;
        if (src == s->retry[CHANNEL_POD].timer) {
                if (s->have_pod && !s->relist)
                        start_watch(s);
                else
                        start_get(s);
        } else if (src == s->retry[CHANNEL_PATCH].timer)
                start_patch(s);
        else if (src == s->retry[CHANNEL_EVENT].timer)
                start_event(s);
        return 0;
}

static uint64_t backoff(Retry *t) {
        return kube_backoff_usec(t->attempt++, PODSYNC_BACKOFF_BASE_USEC, PODSYNC_BACKOFF_CAP_USEC,
                                 random_u64());
}

static void succeeded(PodSync *s, Channel ch, const char *what) {
        Retry *t = &s->retry[ch];

        if (t->troubled)
                log_info("Kubernetes API: %s works again.", what);
        t->attempt = 0;
        t->auth_retried = false;
        t->troubled = false;
}

static void stop(PodSync *s, const char *why) {
        if (s->stopped)
                return;
        log_notice("Pod %s/%s %s: the agent stops writing its condition.", s->namespace, s->name,
                   why);
        s->stopped = true;
        s->get_call = kube_call_cancel(s->get_call);
        s->watch_call = kube_call_cancel(s->watch_call);
        s->patch_call = kube_call_cancel(s->patch_call);
        s->event_call = kube_call_cancel(s->event_call);
        for (Channel ch = 0; ch < _CHANNEL_MAX; ch++)
                (void) sd_event_source_set_enabled(s->retry[ch].timer, SD_EVENT_OFF);
}

static const char *rbac_rule(KubeVerb verb) {
        switch (verb) {
        case KUBE_VERB_GET:
                return "get on pods";
        case KUBE_VERB_WATCH:
                return "watch on pods";
        case KUBE_VERB_PATCH:
                return "patch on pods/status";
        default:
                return "create on events";
        }
}

typedef enum Outcome {
        OUTCOME_RETRY,  /* try again after the delay */
        OUTCOME_GONE,   /* the pod is gone: stop */
        OUTCOME_REFUSE, /* the server refuses this request as it is: do not repeat it */
} Outcome;

/* Decides what a failed answer means, logs it, and returns the delay before
 * the next try in *ret_delay (0: at once). */
static Outcome classify(PodSync *s, Channel ch, KubeVerb verb, const char *what,
                        const KubeResponse *r, uint64_t *ret_delay) {
        Retry *t = &s->retry[ch];
        KubeStatus st;
        uint64_t delay;
        bool first = !t->troubled;

        kube_status_parse(r->body, r->body_len, &st);
        t->troubled = true;

        if (r->status == 0) {
                delay = backoff(t);
                /* The URL, and after a TLS failure what to look at: no request
                 * was sent, so nothing on the server's side tells. */
                log_full_errno(first ? LOG_WARNING : LOG_DEBUG, r->error,
                               "Kubernetes API %s: %s failed: %s%s; retrying in %.1f s.",
                               kube_client_api_url(s->client), what, r->error_detail,
                               kube_error_hint(r->error), (double) delay / 1e6);
                *ret_delay = delay;
                return OUTCOME_RETRY;
        }

        switch (r->status) {
        case 401:
                if (!t->auth_retried) {
                        int k = kube_client_reload_token(s->client);
                        if (k < 0)
                                log_warning_errno(k,
                                                  "Cannot re-read the service account token: %m");
                        t->auth_retried = true;
                        /* No trouble yet: the retry with the fresh token tells.
                         * Counted as trouble, it would make the 401 that follows
                         * a repeat, logged at debug only. */
                        t->troubled = !first;
                        log_debug("Kubernetes API: %s: 401, token re-read, retrying once.", what);
                        *ret_delay = 0;
                        return OUTCOME_RETRY;
                }
                delay = backoff(t);
                log_full_errno(
                        first ? LOG_WARNING : LOG_DEBUG, 0,
                        "Kubernetes API: %s: 401 Unauthorized with a freshly read token (%s); "
                        "is the projected service account token mounted and current? "
                        "Retrying in %.1f s.",
                        what, st.message[0] ? st.message : "no message", (double) delay / 1e6);
                *ret_delay = delay;
                return OUTCOME_RETRY;
        case 403:
                if (!s->rbac_logged[verb])
                        log_error("Kubernetes API: %s: 403 Forbidden: the agent's service account "
                                  "needs RBAC \"%s\" in namespace %s (%s). Retrying every %u s.",
                                  what, rbac_rule(verb), s->namespace,
                                  st.message[0] ? st.message : "no message",
                                  PODSYNC_SLOW_RETRY_USEC / 1000000u);
                s->rbac_logged[verb] = true;
                *ret_delay = PODSYNC_SLOW_RETRY_USEC / 2 +
                             random_u64() % (PODSYNC_SLOW_RETRY_USEC / 2 + 1);
                return OUTCOME_RETRY;
        case 404:
                if (ch == CHANNEL_EVENT) {
                        log_warning("Kubernetes API: %s: 404 Not Found (%s); the Event is dropped.",
                                    what, st.message);
                        return OUTCOME_REFUSE;
                }
                return OUTCOME_GONE;
        case 409:
                if (ch != CHANNEL_EVENT && kube_status_is_uid_conflict(&st))
                        return OUTCOME_GONE;
                _fallthrough_;
        case 400:
        case 415:
        case 422:
                log_warning("Kubernetes API: %s: %ld %s (%s); not retrying until the condition "
                            "changes.",
                            what, r->status, st.reason[0] ? st.reason : "refused",
                            st.message[0] ? st.message : "no message");
                return OUTCOME_REFUSE;
        case 429:
                if (!r->retry_after || kube_parse_retry_after(r->retry_after, &delay) < 0)
                        delay = backoff(t);
                t->throttled = true;
                log_full_errno(first ? LOG_NOTICE : LOG_DEBUG, 0,
                               "Kubernetes API: %s: 429 Too Many Requests; retrying in %.1f s.",
                               what, (double) delay / 1e6);
                *ret_delay = delay;
                return OUTCOME_RETRY;
        default:
                delay = backoff(t);
                log_full_errno(first ? LOG_WARNING : LOG_DEBUG, 0,
                               "Kubernetes API: %s: %ld %s (%s); retrying in %.1f s.", what,
                               r->status, st.reason[0] ? st.reason : "error",
                               st.message[0] ? st.message : "no message", (double) delay / 1e6);
                *ret_delay = delay;
                return OUTCOME_RETRY;
        }
}

/* ---------------------------------------------------------------------------
 * The pod: read, watch */

static bool conditions_equal(const Condition *a, const Condition *b) {
        return a->status == b->status && streq_ptr(a->reason, b->reason) &&
               streq_ptr(a->message, b->message);
}

/* resourceVersions are opaque, but etcd's are increasing decimals: an older
 * one (an event from before the agent's own write) must not replace the
 * newer state the write answered with. */
static bool is_older(const char *a, const char *b) {
        char *end_a, *end_b;
        unsigned long long x, y;

        if (!a || !b)
                return false;
        x = strtoull(a, &end_a, 10);
        y = strtoull(b, &end_b, 10);
        return *end_a == '\0' && *end_b == '\0' && x < y;
}

static void maybe_patch(PodSync *s);
static void maybe_announce(PodSync *s);

/* Takes the pod's new state; false when it is not the pod the agent runs in. */
static bool take_pod(PodSync *s, KubePod *pod) {
        if (s->uid && !streq(s->uid, pod->uid)) {
                char why[256];
                (void) snprintf(why, sizeof why, "was replaced (UID %s, the agent's is %s)",
                                pod->uid, s->uid);
                stop(s, why);
                return false;
        }
        if (!s->uid) {
                s->uid = strdup(pod->uid);
                if (!s->uid) {
                        (void) log_oom();
                        return false;
                }
        }
        /* An older state, or the very one held: the watch's echo of the
         * agent's write and the write's answer come on two connections, in
         * either order. */
        if (s->have_pod &&
            (is_older(pod->resource_version, s->pod.resource_version) ||
             (pod->resource_version && streq_ptr(pod->resource_version, s->pod.resource_version))))
                return true;
        kube_pod_done(&s->pod);
        s->pod = *pod;
        *pod = (KubePod){};
        s->have_pod = true;
        if (s->on_pod)
                s->on_pod(s->pod.object, s->userdata);
        /* Only the conditions are kept: a pod object may be large. */
        json_decref(s->pod.object);
        s->pod.object = NULL;
        return true;
}

static void on_get_done(KubeClient *c, const KubeResponse *r, void *userdata) {
        _cleanup_(kube_pod_done) KubePod pod = {};
        PodSync *s = userdata;
        const char *error = NULL;
        uint64_t delay = 0;
        int k;

        s->get_call = NULL;
        if (r->status != 200) {
                switch (classify(s, CHANNEL_POD, KUBE_VERB_GET, "reading the pod", r, &delay)) {
                case OUTCOME_GONE:
                        stop(s, "is gone (404 Not Found)");
                        return;
                case OUTCOME_REFUSE:
                        delay = PODSYNC_SLOW_RETRY_USEC;
                        break;
                case OUTCOME_RETRY:
                        break;
                }
                schedule(s, CHANNEL_POD, delay);
                return;
        }

        k = kube_pod_parse(r->body, r->body_len, &pod, &error);
        if (k < 0) {
                if (k == -ENOMEM)
                        (void) log_oom();
                else
                        log_warning("Kubernetes API: the pod read from the API server is not "
                                    "usable: %s.",
                                    error);
                schedule(s, CHANNEL_POD, backoff(&s->retry[CHANNEL_POD]));
                return;
        }
        if (!take_pod(s, &pod))
                return;
        s->relist = false;
        succeeded(s, CHANNEL_POD, "reading the pod");
        start_watch(s);
        maybe_announce(s);
        maybe_patch(s);
}

static void start_get(PodSync *s) {
        _cleanup_free_ char *path = NULL;
        char name[3 * 253 + 1];
        int r;

        if (s->stopped || s->get_call)
                return;
        s->watch_call = kube_call_cancel(s->watch_call);
        if (kube_url_escape(s->name, name, sizeof name) < 0 ||
            asprintf(&path, "%s/%s", s->pods_path, name) < 0) {
                (void) log_oom();
                return;
        }
        r = kube_call_start(s->client,
                            &(KubeRequest){.verb = KUBE_VERB_GET,
                                           .method = "GET",
                                           .path = path,
                                           .timeout_usec = PODSYNC_REQUEST_TIMEOUT_USEC,
                                           .on_done = on_get_done,
                                           .userdata = s},
                            &s->get_call);
        if (r < 0) {
                log_error_errno(r, "Cannot start a request to the Kubernetes API: %m");
                schedule(s, CHANNEL_POD, backoff(&s->retry[CHANNEL_POD]));
        }
}

static void on_watch_line(KubeClient *c, const char *line, size_t len, void *userdata) {
        _cleanup_(kube_watch_event_done) KubeWatchEvent ev = {};
        _cleanup_(kube_pod_done) KubePod pod = {};
        PodSync *s = userdata;
        const char *error = NULL;
        KubeStatus st;
        int k;

        k = kube_watch_event_parse(line, len, &ev, &error);
        if (k < 0) {
                if (k == -ENOMEM)
                        (void) log_oom();
                else
                        log_warning("Kubernetes API: a watch event is not usable (%s); reading "
                                    "the pod again.",
                                    error);
                s->relist = true;
                s->watch_call = kube_call_cancel(s->watch_call);
                schedule(s, CHANNEL_POD, backoff(&s->retry[CHANNEL_POD]));
                return;
        }

        switch (ev.type) {
        case KUBE_EVENT_ERROR:
                kube_status_from_json(ev.object, &st);
                /* 410 Gone: the resourceVersion was compacted away; read the pod again. */
                if (st.code != 410)
                        log_warning("Kubernetes API: the watch ended with %ld %s (%s).", st.code,
                                    st.reason, st.message);
                else
                        log_debug("Kubernetes API: watch resourceVersion expired; reading the "
                                  "pod again.");
                s->relist = true;
                return; /* the server ends the stream; on_watch_done goes on */
        case KUBE_EVENT_BOOKMARK: {
                const char *rv = json_string_value(
                        json_object_get(json_object_get(ev.object, "metadata"), "resourceVersion"));
                char *copy;

                if (!rv || !s->have_pod || is_older(rv, s->pod.resource_version))
                        return;
                copy = strdup(rv);
                if (!copy) {
                        (void) log_oom();
                        return;
                }
                free(s->pod.resource_version);
                s->pod.resource_version = copy;
                return;
        }
        case KUBE_EVENT_MODIFIED: {
                /* The echo of the agent's own write, whose answer was taken
                 * (on_patch_done()): one resourceVersion is one state of the
                 * object, nothing new to look at, not even converted
                 * (take_pod() drops it too, in the other order). */
                const char *rv = json_string_value(
                        json_object_get(json_object_get(ev.object, "metadata"), "resourceVersion"));

                if (rv && s->have_pod && streq_ptr(rv, s->pod.resource_version))
                        return;
                break;
        }
        default:
                break;
        }

        k = kube_pod_from_json(ev.object, &pod, &error);
        if (k < 0) {
                if (k == -ENOMEM)
                        (void) log_oom();
                else
                        log_warning("Kubernetes API: a watch event's pod is not usable: %s.",
                                    error);
                return;
        }
        if (ev.type == KUBE_EVENT_DELETED) {
                if (!s->uid || streq(s->uid, pod.uid))
                        stop(s, "was deleted");
                return;
        }
        if (!take_pod(s, &pod))
                return;
        maybe_announce(s);
        maybe_patch(s);
}

static void on_watch_done(KubeClient *c, const KubeResponse *r, void *userdata) {
        PodSync *s = userdata;
        uint64_t delay = 0, lasted = now_usec(CLOCK_MONOTONIC) - s->watch_started_usec;

        s->watch_call = NULL;
        if (s->stopped)
                return;
        if (r->status == 200 && (r->error == 0 || r->error == -ETIMEDOUT)) {
                /* The server ended the watch (timeoutSeconds) or said 410: go on.
                 * A watch that ends at once every time is a problem, not a rhythm. */
                if (lasted >= PODSYNC_BACKOFF_BASE_USEC)
                        succeeded(s, CHANNEL_POD, "watching the pod");
                else
                        delay = backoff(&s->retry[CHANNEL_POD]);
                schedule(s, CHANNEL_POD, delay);
                return;
        }
        if (r->status == 200) {
                /* The stream broke after it started: a network failure. One
                 * that had run for a while (an API server restarted, a load
                 * balancer's idle timeout) is a new failure, not the next of
                 * a series: it starts the backoff again, or a few such breaks
                 * a day would leave the agent minutes without a watch. */
                KubeResponse broken = *r;
                broken.status = 0;
                if (lasted >= PODSYNC_BACKOFF_BASE_USEC)
                        s->retry[CHANNEL_POD].attempt = 0;
                (void) classify(s, CHANNEL_POD, KUBE_VERB_WATCH, "watching the pod", &broken,
                                &delay);
                schedule(s, CHANNEL_POD, delay);
                return;
        }
        if (r->status == 410) {
                /* 410 Gone before the stream starts: the resourceVersion is too
                 * old to watch from, as the in-stream ERROR event says it; only
                 * reading the pod again gives a newer one (client-go relists too). */
                log_debug("Kubernetes API: watch resourceVersion expired (410 Gone); reading "
                          "the pod again.");
                s->relist = true;
                schedule(s, CHANNEL_POD,
                         lasted >= PODSYNC_BACKOFF_BASE_USEC ? 0 : backoff(&s->retry[CHANNEL_POD]));
                return;
        }
        switch (classify(s, CHANNEL_POD, KUBE_VERB_WATCH, "watching the pod", r, &delay)) {
        case OUTCOME_GONE:
                /* A watch's 404 is about the namespace; read the pod to be sure. */
                s->relist = true;
                delay = 0;
                break;
        case OUTCOME_REFUSE:
                s->relist = true;
                delay = PODSYNC_SLOW_RETRY_USEC;
                break;
        case OUTCOME_RETRY:
                break;
        }
        schedule(s, CHANNEL_POD, delay);
}

static void start_watch(PodSync *s) {
        _cleanup_free_ char *path = NULL;
        char name[3 * 253 + 1], rv[3 * KUBE_MAX_ID_BYTES + 1];
        unsigned seconds =
                PODSYNC_WATCH_MIN_SECONDS +
                (unsigned) (random_u64() % (PODSYNC_WATCH_MAX_SECONDS - PODSYNC_WATCH_MIN_SECONDS));
        int r;

        if (s->stopped || s->watch_call)
                return;
        if (!s->have_pod || s->relist || !s->pod.resource_version) {
                start_get(s);
                return;
        }
        if (kube_url_escape(s->name, name, sizeof name) < 0 ||
            kube_url_escape(s->pod.resource_version, rv, sizeof rv) < 0 ||
            asprintf(&path,
                     "%s?watch=1&fieldSelector=metadata.name%%3D%s&resourceVersion=%s"
                     "&allowWatchBookmarks=true&timeoutSeconds=%u",
                     s->pods_path, name, rv, seconds) < 0) {
                (void) log_oom();
                return;
        }
        s->watch_started_usec = now_usec(CLOCK_MONOTONIC);
        r = kube_call_start(s->client,
                            &(KubeRequest){.verb = KUBE_VERB_WATCH,
                                           .method = "GET",
                                           .path = path,
                                           /* the server ends it; this catches a dead one */
                                           .timeout_usec = (seconds + 60u) * 1000000ull,
                                           .on_line = on_watch_line,
                                           .on_done = on_watch_done,
                                           .userdata = s},
                            &s->watch_call);
        if (r < 0) {
                log_error_errno(r, "Cannot start a request to the Kubernetes API: %m");
                schedule(s, CHANNEL_POD, backoff(&s->retry[CHANNEL_POD]));
        }
}

/* ---------------------------------------------------------------------------
 * The condition */

static bool pod_is_synced(const PodSync *s) {
        return s->have_pod && s->have_want && condition_matches(s->pod.conditions, &s->want);
}

static void on_patch_done(KubeClient *c, const KubeResponse *r, void *userdata) {
        _cleanup_(kube_pod_done) KubePod pod = {};
        PodSync *s = userdata;
        uint64_t delay = 0;

        s->patch_call = NULL;
        if (r->status == 200) {
                succeeded(s, CHANNEL_PATCH, "writing the condition");
                s->last_write_usec = now_usec(CLOCK_MONOTONIC);
                /* The answer is the pod as written: take it, so the write is not
                 * repeated before the watch catches up. */
                if (kube_pod_parse(r->body, r->body_len, &pod, NULL) >= 0 && !take_pod(s, &pod))
                        return;
                log_debug("Kubernetes API: condition %s=%s written.", s->type,
                          condition_status_to_string(s->want.status));
                maybe_patch(s);
                return;
        }
        switch (classify(s, CHANNEL_PATCH, KUBE_VERB_PATCH, "writing the condition", r, &delay)) {
        case OUTCOME_GONE:
                stop(s, r->status == 404 ? "is gone (404 Not Found)"
                                         : "was replaced (the UID precondition failed)");
                return;
        case OUTCOME_REFUSE:
                /* The refused condition is the one sent: a newer want was never
                 * asked for, and goes out now. */
                condition_done(&s->rejected);
                s->rejected = s->sent;
                s->sent = (Condition){};
                s->have_rejected = s->rejected.message != NULL;
                maybe_patch(s);
                return;
        case OUTCOME_RETRY:
                schedule(s, CHANNEL_PATCH, delay);
                return;
        }
}

static void start_patch(PodSync *s) {
        _cleanup_free_ char *path = NULL, *body = NULL;
        char name[3 * 253 + 1];
        uint64_t wait;
        json_t *patch;
        int r;

        if (s->stopped || s->patch_call || !s->have_pod || !s->have_want || pod_is_synced(s))
                return;
        /* A storm of updates: what the agent says when the turn comes is sent. */
        wait = bucket_wait(&s->patch_tokens, PODSYNC_PATCH_BURST, PODSYNC_PATCH_INTERVAL_USEC);
        if (wait > 0) {
                schedule(s, CHANNEL_PATCH, wait);
                return;
        }
        patch = condition_patch(&s->want, s->uid, s->pod.conditions, now_usec(CLOCK_REALTIME));
        body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
        json_decref(patch);
        if (!body || kube_url_escape(s->name, name, sizeof name) < 0 ||
            asprintf(&path, "%s/%s/status", s->pods_path, name) < 0) {
                (void) log_oom();
                return;
        }
        r = kube_call_start(s->client,
                            &(KubeRequest){.verb = KUBE_VERB_PATCH,
                                           .method = "PATCH",
                                           .path = path,
                                           .body = body,
                                           /* conditions merge by type (docs/DESIGN.md §6) */
                                           .content_type = "application/strategic-merge-patch+json",
                                           .timeout_usec = PODSYNC_REQUEST_TIMEOUT_USEC,
                                           .on_done = on_patch_done,
                                           .userdata = s},
                            &s->patch_call);
        if (r < 0) {
                log_error_errno(r, "Cannot start a request to the Kubernetes API: %m");
                schedule(s, CHANNEL_PATCH, backoff(&s->retry[CHANNEL_PATCH]));
                return;
        }
        s->patch_tokens.tokens -= 1.0;
        condition_done(&s->sent);
        s->sent = (Condition){.status = s->want.status,
                              .reason = s->want.reason,
                              .message = strdup(s->want.message)};
}

static void maybe_patch(PodSync *s) {
        uint64_t now = now_usec(CLOCK_MONOTONIC), delay;

        if (s->stopped || !s->have_pod || !s->have_want || s->patch_call ||
            scheduled(s, CHANNEL_PATCH) || pod_is_synced(s))
                return;
        if (s->have_rejected && conditions_equal(&s->rejected, &s->want))
                return;

        /* Undone again soon after the last write: another writer (Slinky's
         * operator rewrites the list from its cache) disagrees. Re-assert at
         * once a few times, then back off, so two writers never spin. */
        if (s->last_write_usec > 0 && now - s->last_write_usec < PODSYNC_FIGHT_WINDOW_USEC) {
                if (++s->fights == PODSYNC_FIGHT_FREE + 1)
                        log_warning("Another writer keeps removing or changing condition %s on "
                                    "pod %s/%s; re-asserting it with a backoff.",
                                    s->type, s->namespace, s->name);
        } else
                s->fights = 0;
        if (s->fights > PODSYNC_FIGHT_FREE) {
                delay = kube_backoff_usec(s->fights - PODSYNC_FIGHT_FREE - 1,
                                          PODSYNC_BACKOFF_BASE_USEC, PODSYNC_BACKOFF_CAP_USEC,
                                          random_u64());
                schedule(s, CHANNEL_PATCH, delay);
                return;
        }
        start_patch(s);
}

/* ---------------------------------------------------------------------------
 * Events */

/* A transition worth an Event: any change of status, and drift found at
 * start. Becoming True or Unknown at start is not news. */
static bool event_due(const PodSync *s) {
        if (!s->have_want || !s->announce_checked)
                return false;
        if (s->have_announced)
                return s->announced != s->want.status;
        return s->want.status == CONDITION_FALSE;
}

static void on_event_done(KubeClient *c, const KubeResponse *r, void *userdata) {
        PodSync *s = userdata;
        uint64_t delay = 0;

        s->event_call = NULL;
        if (r->status == 201 || r->status == 200) {
                succeeded(s, CHANNEL_EVENT, "creating Events");
                s->announced = s->announcing;
                s->have_announced = true;
                start_event(s); /* a transition that came meanwhile */
                return;
        }
        switch (classify(s, CHANNEL_EVENT, KUBE_VERB_CREATE, "creating an Event", r, &delay)) {
        case OUTCOME_GONE:
        case OUTCOME_REFUSE:
                break;
        case OUTCOME_RETRY:
                /* After 403 (logged once), the next transition tries again. */
                if (r->status != 403) {
                        schedule(s, CHANNEL_EVENT, delay);
                        return;
                }
                break;
        }
        /* Events are best effort: this one counts as told. */
        s->announced = s->announcing;
        s->have_announced = true;
}

static void start_event(PodSync *s) {
        _cleanup_free_ char *path = NULL, *body = NULL;
        char ns[3 * 253 + 1];
        uint64_t wait;
        json_t *ev;
        int r;

        if (s->stopped || s->event_call || !s->uid || !event_due(s))
                return;
        wait = bucket_wait(&s->event_tokens, PODSYNC_EVENT_BURST, PODSYNC_EVENT_INTERVAL_USEC);
        if (wait > 0) {
                if (!scheduled(s, CHANNEL_EVENT))
                        schedule(s, CHANNEL_EVENT, wait);
                return;
        }
        ev = condition_event(&s->want, s->name, s->namespace, s->uid, s->component,
                             now_usec(CLOCK_REALTIME));
        body = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
        json_decref(ev);
        if (!body || kube_url_escape(s->namespace, ns, sizeof ns) < 0 ||
            asprintf(&path, "/api/v1/namespaces/%s/events", ns) < 0) {
                (void) log_oom();
                return;
        }
        r = kube_call_start(s->client,
                            &(KubeRequest){.verb = KUBE_VERB_CREATE,
                                           .method = "POST",
                                           .path = path,
                                           .body = body,
                                           .content_type = "application/json",
                                           .timeout_usec = PODSYNC_REQUEST_TIMEOUT_USEC,
                                           .on_done = on_event_done,
                                           .userdata = s},
                            &s->event_call);
        if (r < 0) {
                log_error_errno(r, "Cannot start a request to the Kubernetes API: %m");
                return;
        }
        s->event_tokens.tokens -= 1.0;
        s->announcing = s->want.status;
}

static void maybe_announce(PodSync *s) {
        /* The pod's own condition, from before this agent started (a restart
         * of the agent's container), is what was last told. */
        if (!s->announce_checked && s->have_pod) {
                const json_t *old = condition_find(s->pod.conditions, s->type);
                const char *status = json_string_value(json_object_get(old, "status"));

                for (ConditionStatus st = 0; status && st < _CONDITION_STATUS_MAX; st++)
                        if (streq(status, condition_status_to_string(st))) {
                                s->announced = st;
                                s->have_announced = true;
                        }
                s->announce_checked = true;
        }
        if (!scheduled(s, CHANNEL_EVENT))
                start_event(s);
}

/* ---------------------------------------------------------------------------
 * Life cycle */

static int on_update(_unused_ sd_event_source *src, void *userdata) {
        PodSync *s = userdata;

        if (s->stopped)
                return 0;
        maybe_announce(s);
        maybe_patch(s);
        return 0;
}

int podsync_update(PodSync *s, const Report *r) {
        _cleanup_(condition_done) Condition c = {};
        int k;

        k = condition_from_report_detail(r, s->type, s->counts_only, &c);
        if (k < 0)
                return k;
        if (s->have_want && conditions_equal(&s->want, &c))
                return 0;
        condition_done(&s->want);
        s->want = c;
        c = (Condition){};
        s->have_want = true;
        s->have_rejected = false; /* refused was the old condition, not this one */
        s->fights = 0;
        if (s->stopped)
                return 0;
        /* A new condition is a new request: the agent's own change is no fight.
         * (A write that waits for its token is armed again by maybe_patch().)
         * A wait the server asked for (429) holds the new request too. */
        if (scheduled(s, CHANNEL_PATCH) && s->retry[CHANNEL_PATCH].attempt == 0 &&
            !s->retry[CHANNEL_PATCH].throttled)
                (void) sd_event_source_set_enabled(s->retry[CHANNEL_PATCH].timer, SD_EVENT_OFF);
        s->last_write_usec = 0;
        /* Built and sent on the loop's next turn: the caller answers the
         * scrapes that waited for the new state first. */
        if (sd_event_source_set_enabled(s->update_source, SD_EVENT_ONESHOT) < 0) {
                maybe_announce(s);
                maybe_patch(s);
        }
        return 0;
}

void podsync_retry_now(PodSync *s) {
        if (s->stopped)
                return;
        for (Channel ch = 0; ch < _CHANNEL_MAX; ch++) {
                s->retry[ch].attempt = 0;
                s->retry[ch].auth_retried = false;
                s->retry[ch].throttled = false;
                if (scheduled(s, ch))
                        schedule(s, ch, 0);
        }
        s->have_rejected = false;
        s->fights = 0;
        s->last_write_usec = 0;
        maybe_patch(s);
}

void podsync_status(const PodSync *s, PodSyncStatus *ret) {
        *ret = (PodSyncStatus){
                .synced = !s->stopped && pod_is_synced(s),
                .stopped = s->stopped,
                .requests = kube_client_stats(s->client),
        };
}

PodSync *podsync_free(PodSync *s) {
        if (!s)
                return NULL;
        kube_call_cancel(s->get_call);
        kube_call_cancel(s->watch_call);
        kube_call_cancel(s->patch_call);
        kube_call_cancel(s->event_call);
        sd_event_source_disable_unref(s->update_source);
        for (Channel ch = 0; ch < _CHANNEL_MAX; ch++)
                sd_event_source_disable_unref(s->retry[ch].timer);
        kube_client_free(s->client);
        sd_event_unref(s->event);
        kube_pod_done(&s->pod);
        condition_done(&s->want);
        condition_done(&s->rejected);
        condition_done(&s->sent);
        free(s->name);
        free(s->namespace);
        free(s->uid);
        free(s->type);
        free(s->component);
        free(s->pods_path);
        free(s);
        return NULL;
}

int podsync_new(sd_event *e, KubeClient *client, const PodSyncConfig *cfg, PodSync **ret) {
        _cleanup_(kube_client_freep) KubeClient *owned = client;
        _cleanup_(podsync_freep) PodSync *s = NULL;
        char ns[3 * 253 + 1];
        int r;

        s = calloc(1, sizeof(PodSync));
        if (!s)
                return -ENOMEM;
        s->event = sd_event_ref(e);
        s->client = TAKE_PTR(owned);
        s->name = strdup(cfg->pod_name);
        s->namespace = strdup(cfg->pod_namespace);
        s->type = strdup(cfg->condition_type);
        s->counts_only = cfg->counts_only;
        s->component = strdup(cfg->component);
        s->on_pod = cfg->on_pod;
        s->userdata = cfg->userdata;
        if (cfg->pod_uid)
                s->uid = strdup(cfg->pod_uid);
        if (!s->name || !s->namespace || !s->type || !s->component || (cfg->pod_uid && !s->uid))
                return -ENOMEM;
        if (kube_url_escape(s->namespace, ns, sizeof ns) < 0)
                return -EINVAL;
        if (asprintf(&s->pods_path, "/api/v1/namespaces/%s/pods", ns) < 0)
                return -ENOMEM;
        s->event_tokens = (Bucket){PODSYNC_EVENT_BURST, now_usec(CLOCK_MONOTONIC)};
        s->patch_tokens = (Bucket){PODSYNC_PATCH_BURST, now_usec(CLOCK_MONOTONIC)};

        /* The first read runs from the loop, like every later one. */
        schedule(s, CHANNEL_POD, 0);
        if (!s->retry[CHANNEL_POD].timer)
                return -ENOMEM;
        r = sd_event_add_defer(e, &s->update_source, on_update, s);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(s->update_source, SD_EVENT_OFF);
        (void) sd_event_source_set_description(s->update_source, "kube-update");
        *ret = TAKE_PTR(s);
        return 0;
}
