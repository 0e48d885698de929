/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small Kubernetes API client on libcurl's multi interface,
 * driven by sd-event (curl's sockets and timer become event sources), so a
 * slow or dead API server never blocks the loop that serves /metrics.
 *
 * TLS is always verified against the configured CA bundle; plain http is
 * spoken only to this machine (kubectl proxy, which adds the credentials:
 * without a token file no Authorization header is sent). The bearer token
 * is read from its file at start, again when it
 * is older than KUBE_TOKEN_MAX_AGE_USEC (or the configured age) at the next
 * request (bound tokens rotate), and whenever a caller asks after a 401.
 *
 * Callbacks never run inside libcurl: lines of a streaming response and the
 * final answer are delivered after curl returns, so a callback may start or
 * cancel calls freely. Never logs above debug.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "kubeproto.h"
#include "macro.h"

/* Re-read the token file at least this often (docs/DESIGN.md §6). */
#define KUBE_TOKEN_MAX_AGE_USEC (60u * 1000000u)
#define KUBE_MAX_TOKEN_BYTES    (64u * 1024u)
/* A connection that takes longer than this to open counts as failed. */
#define KUBE_CONNECT_TIMEOUT_MS 5000u

typedef struct KubeConfig {
        const char *api_url;    /* "https://HOST:PORT", no trailing slash; or
                                 * "http://127.0.0.1:PORT" (localhost, [::1]) for
                                 * kubectl proxy, which adds the credentials */
        const char *ca_file;    /* PEM bundle the server certificate must chain to;
                                 * NULL: the system's */
        const char *token_file; /* the bearer token; NULL: send none */
        const char *user_agent;
        uint64_t token_max_age_usec; /* re-read the token when older; 0:
                                      * KUBE_TOKEN_MAX_AGE_USEC */
} KubeConfig;

typedef struct KubeResponse {
        long status;              /* HTTP status; 0 when the request failed in transport */
        int error;                /* 0, or -errno for a transport failure (-ETIMEDOUT, ...) */
        const char *error_detail; /* libcurl's explanation of a transport failure, or "" */
        const char *body;         /* the body (NUL-terminated); for a streaming call ""
                                   * unless the answer was not 2xx (its Status object) */
        size_t body_len;
        const char *retry_after; /* the Retry-After header, or NULL */
} KubeResponse;

typedef struct KubeClient KubeClient;
typedef struct KubeCall KubeCall;

/* The final answer. The call is freed after this returns: forget it. */
typedef void (*kube_done_t)(KubeClient *c, const KubeResponse *r, void *userdata);
/* One newline-terminated line of a streaming (watch) response, without the newline. */
typedef void (*kube_line_t)(KubeClient *c, const char *line, size_t len, void *userdata);

typedef struct KubeRequest {
        KubeVerb verb;            /* what the request counts as in the statistics */
        const char *method;       /* "GET", "PATCH", "POST" */
        const char *path;         /* "/api/v1/...", with any query */
        const char *body;         /* NULL for none; copied */
        const char *content_type; /* of body */
        uint64_t timeout_usec;    /* whole request; 0: no limit (a watch) */
        kube_line_t on_line;      /* non-NULL: stream, lines of a 2xx answer go here, not
                                   * into the body */
        kube_done_t on_done;
        void *userdata;
} KubeRequest;

/* Checks an API server URL: https://HOST[:PORT][/PATH], or http:// to this
 * machine only (kubectl proxy), the host compared exactly: localhost, [::1]
 * or an address in 127.0.0.0/8. Returns 0 (*ret_plain_http, may be NULL, set
 * for http), -EPROTONOSUPPORT (another scheme, or http to another host),
 * -EINVAL (not a URL, or one with user info, a query or a fragment), -ENOMEM. */
int kube_api_url_check(const char *url, bool *ret_plain_http);

/* Makes a client on e. cfg's strings are copied. Reads the token once:
 * fails with that error (-ENOENT, -EACCES, -EBADMSG for an empty token or one
 * with control characters) so a bad mount shows at start.
 * Returns 0 with *ret new, kube_api_url_check()'s errors, -ENOMEM, -EIO
 * (libcurl could not start). */
int kube_client_new(sd_event *e, const KubeConfig *cfg, KubeClient **ret);
KubeClient *kube_client_free(KubeClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(KubeClient *, kube_client_free);

/* Re-reads the token file now (after a 401). On failure the old token stays
 * in use. Returns 0, 1 when the token changed, or -errno as above. */
int kube_client_reload_token(KubeClient *c);

/* Starts a request. *ret (may be NULL) identifies it for kube_call_cancel()
 * until on_done has run. Returns 0, -ENOMEM, -EIO. */
int kube_call_start(KubeClient *c, const KubeRequest *req, KubeCall **ret);

/* Stops a call; its callbacks never run again. Accepts NULL. Returns NULL. */
KubeCall *kube_call_cancel(KubeCall *call);

/* Borrowed; valid until the client is freed. */
const KubeStats *kube_client_stats(const KubeClient *c);
/* The API server's URL as configured, for messages. Borrowed, as above. */
const char *kube_client_api_url(const KubeClient *c);
/* For a message about a request that got no answer (KubeResult.error): after
 * a refused TLS handshake (-EPROTO), " (TLS: ...)" naming what to look at, as
 * no request reached the server and nothing on its side tells; otherwise "".
 * Static. */
const char *kube_error_hint(int error);

/* A finished request, owned (kube_result_done()). */
typedef struct KubeResult {
        long status;
        int error;
        char *error_detail; /* NULL on success */
        char *body;         /* NUL-terminated */
        size_t body_len;
        char *retry_after; /* NULL when absent */
} KubeResult;

void kube_result_done(KubeResult *r);

/* For command-line programs only: starts req (on_line, on_done and userdata
 * are ignored) and runs the client's event loop until it finishes. The
 * loop must not be running already. Returns 0 with *ret filled (a transport
 * failure is ret->error, not a return value), or -ENOMEM, -EIO. */
int kube_call_sync(KubeClient *c, const KubeRequest *req, KubeResult *ret);
