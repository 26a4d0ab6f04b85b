/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A client for the kube-apiserver (client-go's rest client, the parts the kubelet uses): kubeconfig
 * loading, HTTP/2 over TLS (every request a stream on one connection; HTTP/1.1 with keep-alive where the server
 * has no h2 or the URL is http://) through client/transport.c on the kubelet's loop, QPS/burst
 * limiting, retries with jittered back-off, JSON bodies (jansson) with a size cap, and watch streams.
 * Nothing blocks the loop. Tokens, keys and certificate data never appear in logs or error messages. */

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct ck_error;

/* ---------------------------------------------------------------- kubeconfig */

/* What the current context of a kubeconfig says (clientcmd). Paths are absolute (relative ones are
 * resolved against the kubeconfig's directory, as clientcmd does). *_data fields hold the decoded PEM of
 * certificate-authority-data / client-certificate-data / client-key-data. */
struct kube_config {
        char *server; /* "https://10.0.0.1:6443" (no trailing slash) */
        char *ca_file, *ca_data;
        char *cert_file, *cert_data;
        char *key_file, *key_data;
        char *token, *token_file; /* token wins over token_file, as clientcmd */
        bool insecure_skip_tls_verify;
        char *tls_server_name;
        /* added: */
        char *proxy_url;          /* cluster.proxy-url (http://, https://, socks5://), NULL = environment */
        bool disable_compression; /* cluster.disable-compression: no "Accept-Encoding: gzip" */
};
/* How kube_config_load() fills token/token_file: a user with "token" gets token (its tokenFile, if any, is
 * ignored); a user with only "tokenFile" gets token_file (absolute) and token = its content, read at load
 * (a missing or empty file is an error). The client re-reads token_file at most once a minute and keeps the
 * last good token when that fails (client-go's cachingTokenSource); token alone is never re-read.
 * Unsupported user entries (exec, auth-provider, username/password, as) are errors, not ignored. */

/* Load PATH (YAML or JSON, v1 Config): the current-context's cluster and user. Errors name the file and the
 * field ("/etc/kubernetes/kubelet.conf: context \"x\" not found", "...: users[0].user.client-key-data:
 * invalid base64"). */
int kube_config_load(const char *path, struct kube_config *ret, struct ck_error **ret_error);
void kube_config_done(struct kube_config *c); /* accepts NULL */

/* ---------------------------------------------------------------- requests */

struct kube_client;

struct kube_client_options {
        double qps;               /* --kube-api-qps, 50 */
        int burst;                /* --kube-api-burst, 100 */
        uint64_t timeout_usec;    /* per request (not watches), default 30 s */
        size_t max_response_size; /* default 64 MiB */
        const char *user_agent;   /* default "ckubelet/<version> (linux/amd64) kubernetes/<api>" */
};
/* o may be NULL; zero fields take the defaults. qps < 0 disables rate limiting (as client-go). The server may
 * be http:// (tests, HTTP/1.1). An https:// server that offers h2 (ALPN) gets every request of the client as a
 * stream of one connection; one that does not gets HTTP/1.1 keep-alive connections. A proxy-url is not
 * supported (a warning; the connection goes direct). */

int kube_client_new(struct event_base *base, const struct kube_config *cfg, const struct kube_client_options *o,
                    struct kube_client **ret);
/* Stops everything: pending callbacks are NOT called. Accepts NULL. */
struct kube_client *kube_client_free(struct kube_client *c);

/* Use a new client certificate (PEM, chain after the leaf) and key (PEM) from now on, in place of what the
 * kubeconfig gave, and reset the connections (below): every request that starts from now on, retries included,
 * presents the new pair. For certificate rotation. */
int kube_client_set_client_cert(struct kube_client *c, const char *cert_pem, const char *key_pem);

struct kube_response {
        int r;              /* 0, or a negative errno for a transport failure (no HTTP status) */
        long status;        /* HTTP status, 0 on transport failure */
        json_t *body;       /* the decoded JSON body (borrowed, valid during the callback), or NULL */
        const char *error;  /* a message when r < 0 or status >= 400 (the Status' message if any); never
                                       NULL ("" when fine) */
        const char *reason; /* the Status' reason ("NotFound", "AlreadyExists", "Conflict", "Expired",
                                       "Gone"), "" if none */
};

/* Whether resp is the API server's refusal of a UID precondition, whatever code carries it: the object of that
 * UID is gone, possibly replaced by another of the same name. Recognised from the Status body: a cause on field
 * "metadata.uid" (kube-apiserver v1.20 answers a PATCH carrying another object's metadata.uid with 422 Invalid,
 * "field is immutable"), or the message "Precondition failed: UID in precondition: ..." (409 Conflict of a
 * DELETE's or an update's preconditions). */
bool kube_response_uid_mismatch(const struct kube_response *resp);

typedef void (*kube_callback_t)(const struct kube_response *resp, void *userdata);
struct kube_request;

/* Flags for kube_request(). */
enum {
        KUBE_NO_RETRY = 1 << 0, /* by default transport errors, 429 and 5xx are retried (jittered back-off
                                       from 100 ms doubling to 10 s, up to 5 attempts; Retry-After honoured) */
};
/* Retry details: a retry waits max(back-off, Retry-After (seconds, capped at 60 s)) and then takes a
 * rate-limiter token like any request. A POST is retried after a transport error only when no connection
 * could be made (refused, unresolvable), since the server may have acted on it otherwise. A body over
 * max_response_size (-EFBIG), a body that is not JSON and local TLS file problems are not retried.
 * Response: for status >= 300 without a v1 Status body (or with one lacking them), error and reason are
 * apimachinery's generic ones for the code (404 → "NotFound", "the server could not find the requested
 * resource"). A 2xx body that is not JSON gives r = -EBADMSG with status set. */

/* method: "GET", "POST", "PUT", "PATCH", "DELETE". path: "/api/v1/nodes/n1" with an optional query. body:
 * borrowed, NULL for none. content_type: NULL = "application/json"; for PATCH "application/merge-patch+json"
 * or "application/strategic-merge-patch+json". cb runs exactly once, later on the loop (never inside this
 * call), unless the request is cancelled or the client freed. ret (optional): a handle for cancelling,
 * valid until cb runs. */
int kube_request(struct kube_client *c, const char *method, const char *path, const json_t *body,
                 const char *content_type, int flags, kube_callback_t cb, void *userdata, struct kube_request **ret);
/* The callback will not run. Accepts NULL. */
void kube_request_cancel(struct kube_request *r);

/* ---------------------------------------------------------------- watch */

/* A watch stream: GET path (which must carry watch=true and its own resourceVersion etc.); each line of the
 * chunked body is a watch event {"type": "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR", "object": {...}},
 * delivered in order through event() (object borrowed). The stream ends with done(): r = 0 when the server
 * closed it normally, -ETIMEDOUT when no byte came for idle_timeout_usec (a dead connection), another
 * negative errno for transport errors; status is the HTTP status (e.g. 410 when the resourceVersion is too
 * old at the start). An ERROR event is delivered as an event; the caller decides (410 Gone inside an ERROR
 * object means relist). Watches are not retried and do not count against QPS beyond their start. */
/* More precisely: a non-200 answer ends the watch with r = 0, that status and the Status' message (or the
 * generic one); a line that is not a JSON event ends it with -EBADMSG; a line over 16 MiB with -EFBIG. The
 * idle timer runs from the start of the transfer (connecting included) and restarts on every byte. Callbacks
 * run from the loop, never inside the transport, so event() may cancel the watch or free the client. */
typedef void (*kube_watch_event_t)(const char *type, json_t *object, void *userdata);
typedef void (*kube_watch_done_t)(int r, long status, const char *error, void *userdata);
int kube_watch(struct kube_client *c, const char *path, uint64_t idle_timeout_usec, kube_watch_event_t event,
               kube_watch_done_t done, void *userdata, struct kube_request **ret);

/* ---------------------------------------------------------------- helpers */

/* Escape a path segment or query value (names are DNS labels, but field selectors hold '=' and ','). Every
 * byte but [A-Za-z0-9-._~] becomes %XX. NULL on OOM. */
char *kube_escape(const char *s);
