/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <event2/buffer.h>
#include <event2/http.h>
#include <jansson.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/socket.h>

#include "container/container.h"
#include "options/options.h"
#include "server/server.h"

/* limits on what a client may send or hold */
#define API_MAX_HEADERS_SIZE (64 * 1024)
#define API_MAX_BODY_SIZE (1024 * 1024)
#define API_REQUEST_TIMEOUT_SEC 60   /* reading a request, writing a reply (streams lift it) */
#define API_HANDSHAKE_TIMEOUT_SEC 10 /* the TLS handshake, from accept */
#define API_HEAD_TIMEOUT_SEC 30      /* a request head, from its first byte (the first one's: from accept) */
#define API_MAX_HELD (64 * 1024)     /* read ahead of the request being answered; reading stops above it */
#define API_MAX_STREAMS 256          /* long answers at once: log reads, /logs/ files, exec/attach/port-forward */
#define API_MAX_PENDING 256          /* short requests waiting for the runtime at once (/stats/summary, /run) */

enum api_port {
        API_PORT_SECURE,   /* --port: TLS, authn/authz, debugging handlers */
        API_PORT_READONLY, /* --read-only-port */
        API_PORT_HEALTHZ,  /* --healthz-port: /healthz only */
        _API_PORT_MAX,
};

struct api_conn_table;

struct api_listener {
        struct api_server *s;
        enum api_port port;
        struct evhttp *http;
        struct api_conn_table *conns; /* its connections and their limits (conn.c) */
};

struct api_stream;

/* The checks /healthz runs, in its order, and what /metrics/slis reports of them (component-base's
 * kubernetes_healthcheck / kubernetes_healthchecks_total, type "healthz"). */
enum { API_SLI_PING, API_SLI_LOG, API_SLI_SYNCLOOP, API_SLI_CHECKS };
struct api_sli {
        bool observed; /* /healthz ran it at least once */
        bool last_ok;
        uint64_t success, error;
};

struct api_server {
        struct event_base *base;
        const struct kubelet_options *o;
        struct cri_client *cri;
        struct prober *prober;
        struct kube_client *client; /* NULL without an API server */
        const char *node_ip;
        const struct machine_info *machine;
        struct api_host host;
        SSL_CTX *ssl_ctx;
        bool have_client_ca;
        /* the client CA bundle in use and the file it came from (client_ca.c) */
        char *client_ca_pem;
        size_t client_ca_size;
        struct stat client_ca_stat;
        bool client_ca_loaded, client_ca_failed;
        unsigned client_ca_generation; /* bumped per reload: the TLS session id context */
        struct event *client_ca_timer;
        /* serverTLSBootstrap: the pair from the certificates API, set on each handshake by a certificate callback;
         * until the first one is issued handshakes fail (no self-signed fallback, as upstream) */
        bool bootstrap_serving;
        X509 *serving_cert;
        STACK_OF(X509) * serving_chain;
        EVP_PKEY *serving_key;
        uint64_t serving_missing_logged_usec;
        struct api_listener listeners[_API_PORT_MAX];
        struct api_cache *token_cache, *authz_cache;
        unsigned n_streams[2];               /* by enum api_stream_kind */
        struct api_stream *streams;          /* long-running responses, cancelled at free */
        struct stats_provider *stats;        /* the kubelet's, borrowed */
        struct cadvisor *cadvisor;           /* /metrics/cadvisor; NULL when the cgroups could not be found */
        struct api_sli slis[API_SLI_CHECKS]; /* /metrics/slis: the results of /healthz's checks */
};

/* the authenticated user of a request */
struct api_user {
        char *name;
        char **groups;
        char *uid;     /* from a TokenReview, NULL if none */
        json_t *extra; /* from a TokenReview: an object of string arrays (a reference), NULL if none */
};

struct api_request {
        struct api_server *s;
        struct evhttp_request *req;
        enum api_port port;
        const char *path;  /* raw (still percent-encoded) path */
        const char *query; /* raw query or NULL */
        enum evhttp_cmd_type method;
        struct api_user user;
};

/* the host's functions (server.h) */
static inline int api_host_pods_json(struct api_server *s, json_t **ret) {
        return s->host.pods_json(s->host.userdata, ret);
}
static inline int api_host_running_pods_json(struct api_server *s, json_t **ret) {
        return s->host.running_pods_json(s->host.userdata, ret);
}
static inline int api_host_lookup_container(struct api_server *s, const char *ns, const char *pod_name,
                                            const char *container, bool previous, struct kc_container **ret,
                                            char **ret_pod_uid) {
        return s->host.lookup_container(s->host.userdata, ns, pod_name, container, previous, ret, ret_pod_uid);
}
static inline bool api_host_pod_exists(struct api_server *s, const char *ns, const char *pod_name, char **ret_uid) {
        return s->host.pod_exists(s->host.userdata, ns, pod_name, ret_uid);
}
static inline int api_host_pod_sandbox_id(struct api_server *s, const char *ns, const char *pod_name, char **ret) {
        return s->host.pod_sandbox_id(s->host.userdata, ns, pod_name, ret);
}
static inline int api_host_sync_loop_health(struct api_server *s, struct ck_error **ret_error) {
        return s->host.sync_loop_health(s->host.userdata, ret_error);
}
static inline void api_host_counts(struct api_server *s, struct api_host_counts *ret) {
        s->host.counts(s->host.userdata, ret);
}
static inline void api_host_foreach_container(struct api_server *s,
                                              void (*cb)(const struct api_host_container *c, void *userdata),
                                              void *userdata) {
        if (s->host.foreach_container)
                s->host.foreach_container(s->host.userdata, cb, userdata);
}

/* the API server client now: the node may get its credentials (TLS bootstrap) after the server started */
static inline struct kube_client *api_host_kube_client(struct api_server *s) {
        return s->host.kube_client ? s->host.kube_client(s->host.userdata) : s->client;
}

/* replies (they complete the request) */
void api_reply_text(struct evhttp_request *req, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void api_reply_json(struct evhttp_request *req, int code, json_t *obj); /* takes obj */
void api_reply_buffer(struct evhttp_request *req, int code, const char *content_type, struct evbuffer *body);
/* 200 with body (emptied), chunked, the terminating chunk written only once the data is: see server.c */
void api_reply_flushed(struct evhttp_request *req, const char *content_type, struct evbuffer *body);
/* bytes written to a client's connection and not yet sent (its bufferevent and any below it) */
size_t api_connection_unsent(struct evhttp_connection *evcon);
/* a Status-like error for an errno from the host's lookups */
void api_reply_lookup_error(struct evhttp_request *req, int r, const char *ns, const char *pod, const char *container);

/* httpstream.IsUpgradeRequest: a Connection header with the token "upgrade" and an Upgrade header */
bool api_is_upgrade_request(const struct evkeyvalq *headers);
/* whether a request header is hop-by-hop (RFC 7230 6.1: the fixed ones and those the Connection header names),
 * never to be passed on by a proxy */
bool api_header_is_hop_by_hop(const struct evkeyvalq *headers, const char *name);

/* split "/a/b/c" (after a prefix) into percent-decoded components; -EINVAL on an empty, "." or ".." component
 * or a NUL byte */
int api_path_components(const char *path, char ***ret);
/* a query parameter (decoded), NULL if absent; all values of a repeated key */
char *api_query_get(const char *query, const char *key);
int api_query_get_all(const char *query, const char *key, char ***ret);

/* conn.c: every connection of a listener passes through a gate between the socket (or TLS) and evhttp. It
 * counts connections at accept (in all, and per source address: on the TLS port those that have not had a
 * request authorized yet; more are closed at once), closes a TLS handshake or a request head that takes too long, reads each
 * request head (http-parser) and has it authenticated and authorized before evhttp sees a byte of it (the body
 * is not read before), hands evhttp one request at a time and reads ahead of it at most API_MAX_HELD, so that
 * a client cannot make the kubelet buffer what it sends while a long answer streams. A refused request reaches
 * evhttp as a bodiless stand-in whose decision says what to answer; the connection closes after it. */
struct api_conn_limits {
        unsigned max_total;      /* connections at once */
        unsigned max_per_source; /* from one source (on the TLS port: not yet authorized) */
};

/* The source a connection counts against (issue 26): an IPv4 address (IPv4-mapped IPv6 too) as itself, an IPv6
 * address by its /64 ("2001:db8:1:2::/64"), as one host commonly holds a whole /64. "?" when unknown. */
#define API_SOURCE_KEY_MAX 64
void api_source_key(const struct sockaddr *sa, socklen_t len, char ret[API_SOURCE_KEY_MAX]);
/* One open connection as the admission sees it. */
struct api_conn_view {
        const char *key;
        bool authorized; /* a request was allowed on it */
};
enum api_admit {
        API_ADMIT,          /* within the limits */
        API_ADMIT_EVICTING, /* all slots taken: *ret_victim, the oldest not authorized, is closed for it */
        API_REFUSE_SOURCE,  /* its source holds max_per_source connections not yet authorized */
        API_REFUSE_FULL,    /* all slots taken by authorized connections */
};
/* Admission of a new connection from source key, given the connections open (oldest first, the new one not
 * among them). The per-source cap first (a flood from one source never evicts others), then the global one:
 * when full, the oldest connection that has not had a request authorized is closed instead of refusing the
 * new one, so handshakes that never finish cannot lock everyone out. On the plain ports every connection
 * counts against its source. */
enum api_admit api_conn_admit(const struct api_conn_view *open, size_t n, const char *key, bool secure,
                              const struct api_conn_limits *limits, size_t *ret_victim);
int api_conn_table_new(struct api_listener *l, const struct api_conn_limits *limits, struct api_conn_table **ret);
/* detaches the connections still alive (evhttp frees them, maybe later) */
struct api_conn_table *api_conn_table_free(struct api_conn_table *t);
/* the bufferevent of a new connection (evhttp_set_bevcb) */
struct bufferevent *api_conn_bevcb(struct event_base *base, void *userdata);
/* the SSL_CTX info callback that tells a connection its handshake is done */
void api_conn_tls_info(const SSL *ssl, int where, int ret);

/* what the gate decided about the request evhttp hands over */
struct api_decision {
        enum evhttp_cmd_type method;
        char *path; /* the raw path of the request target */
        bool allowed;
        struct api_user user;
        int status;    /* refused: the answer's status */
        char *message; /* and its body */
};
void api_decision_done(struct api_decision *d);
/* the decision on the request evhttp is handing over on this connection (moved to *ret); -ENOENT if there is
 * none (then the request must not be served) */
int api_conn_take_decision(struct api_server *s, struct evhttp_connection *evcon, struct api_decision *ret);
/* the connection is taken over (a stream proxy): bytes pass unparsed from now on */
void api_conn_set_raw(struct api_server *s, struct evhttp_connection *evcon);

/* auth.c: authentication and authorization of a request from its head */
struct api_auth;
typedef void (*api_auth_done_t)(struct api_auth *a, void *userdata);
struct api_auth {
        struct api_server *s;
        enum evhttp_cmd_type method;
        const char *path; /* raw path, borrowed */
        struct api_user user;
        int status;    /* refused: 401, 403, 500 */
        char *message; /* refused: the answer's body */
        /* a review in flight (webhook.c) */
        struct kube_request *kreq;
        char *key;
        size_t attempt; /* which of the path's subresources is being authorized (api_subresources) */
        api_auth_done_t done;
        void *userdata;
};
/* 0: allowed (a->user set); -EACCES / -EPERM / -ENOMEM: refused (a->status and a->message set); -EINPROGRESS: a
 * review through the API server is in flight, a->done(a, userdata) runs from the loop once decided (then
 * a->status is 0 when allowed). ssl: the connection's TLS session (its client certificate); authorization: the
 * first Authorization header's value or NULL. */
int api_auth_start(struct api_auth *a, SSL *ssl, const char *authorization);
/* frees what a holds; a review in flight is cancelled (done is not called) */
void api_auth_clear(struct api_auth *a);
/* set a refusal: status and message (printf) */
int api_auth_refuse(struct api_auth *a, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* authorize an authenticated request: 0, a refusal (-EPERM), or -EINPROGRESS (a SubjectAccessReview) */
int api_auth_authorize(struct api_auth *a);
/* the same from the subresource a->attempt on (after a denial of the one before) */
int api_auth_authorize_next(struct api_auth *a);
/* refuse with upstream's 403 message naming every subresource tried; why is logged */
int api_auth_forbidden(struct api_auth *a, const char *why);

/* webhook.c: TokenReview and SubjectAccessReview through the API server, with caches. The *_cached lookups
 * answer 0 / -EACCES (token) / -EPERM (authorization) from the cache, or -EINPROGRESS; the reviews run
 * a->done when decided. */
struct api_cache;
void api_cache_free(struct api_cache *c);
int api_webhook_authenticate_cached(struct api_auth *a, const char *token);
int api_webhook_authorize_cached(struct api_auth *a);
int api_webhook_review_token(struct api_auth *a, const char *token);
int api_webhook_review_access(struct api_auth *a);
void api_webhook_cancel(struct api_auth *a);
#define API_SUBRESOURCES_MAX 2
/* the nodes/<subresource>s a path is authorized against, in order (fine-grained first, then proxy): how many */
size_t api_subresources(const char *path, const char *ret[static API_SUBRESOURCES_MAX]);
/* the subresource being authorized now */
const char *api_auth_subresource(const struct api_auth *a);
/* upstream's 403 body: "Forbidden (user=U, verb=V, resource=nodes, subresource(s)=[pods proxy])\n"; NULL on OOM */
char *api_forbidden_message(const char *user, const char *verb, const char *path);
const char *api_verb(enum evhttp_cmd_type method); /* "get", "create", ... */
/* the verb a request is authorized as */
const char *api_request_verb(enum evhttp_cmd_type method, const char *path);
/* the authorization cache's key of (user and groups, verb, subresource); NULL on OOM */
/* the SubjectAccessReview for a user's request, as upstream's webhook authorizer sends it: user, groups, uid and
 * extra from the TokenReview, the resource attributes (nodes/<node>/<subresource>) */
json_t *api_sar_body(const struct api_user *u, const char *verb, const char *subresource, const char *node);
char *api_authz_key(const struct api_user *u, const char *verb, const char *subresource);
enum api_cache_kind { API_CACHE_TOKEN, API_CACHE_AUTHZ };
/* how long an answer is cached: the configured TTLs (yes: authenticated/allowed) */
uint64_t api_webhook_ttl(const struct kubelet_options *o, enum api_cache_kind kind, bool yes);
/* the caches at a given monotonic time (for tests): put takes key and returns NULL when nothing was cached */
struct api_cache_entry *api_cache_get_at(struct api_cache *c, const char *key, uint64_t now);
struct api_cache_entry *api_cache_put_at(struct api_cache **cp, char *key, bool yes, uint64_t ttl, uint64_t now);
/* the user of a verified client certificate: CN the name, O the groups (plus system:authenticated) */
int api_user_from_cert(X509 *cert, struct api_user *ret);
void api_user_done(struct api_user *u);
int api_tls_setup(struct api_server *s, struct ck_error **ret_error); /* SSL_CTX with the serving pair and client CA */
void api_tls_done(struct api_server *s);                              /* the serverTLSBootstrap pair */

/* handlers */
void api_handle_healthz(struct api_request *r, const char *check);
/* zpages.c: /statusz and /flagz (k8s.io/apiserver statusz, flagz) */
enum api_zpage_format { API_ZPAGE_TEXT, API_ZPAGE_JSON, API_ZPAGE_YAML, API_ZPAGE_NOT_ACCEPTABLE };
/* the answer's format for an Accept header (NULL: none) as upstream negotiates it for a zpage of the structured
 * kind ("Statusz", "Flagz"); for JSON and YAML *ret_version is "v1beta1" or "v1alpha1" and *ret_pretty tells
 * ";pretty=1" (both untouched otherwise) */
enum api_zpage_format api_zpage_negotiate(const char *accept, const char *kind, const char **ret_version,
                                          bool *ret_pretty);
void api_zpages_init(void); /* note the process's start time */
void api_handle_statusz(struct api_request *r);
void api_handle_flagz(struct api_request *r);
void api_handle_pods(struct api_request *r);
void api_handle_running_pods(struct api_request *r);
void api_handle_spec(struct api_request *r);
void api_handle_configz(struct api_request *r);
void api_handle_metrics(struct api_request *r);
void api_handle_metrics_probes(struct api_request *r);
void api_handle_metrics_slis(struct api_request *r);
void api_handle_metrics_cadvisor(struct api_request *r);
/* /healthz ran its checks: count each result for /metrics/slis */
void api_sli_observe(struct api_server *s, int check, bool ok);
void api_handle_stats_summary(struct api_request *r, bool resource_metrics);
void api_handle_run(struct api_request *r, const char *rest);
void api_handle_container_logs(struct api_request *r, const char *rest);
void api_handle_logs(struct api_request *r, const char *rest);
void api_handle_streaming(struct api_request *r, const char *kind, const char *rest);

/* responses in progress: registered so api_server_free can end them. Long ones (streams) and short ones
 * (waiting for the runtime) have limits of their own, so that many slow log readers cannot make
 * /stats/summary answer 503. */
enum api_stream_kind {
        API_STREAM_LONG,  /* API_MAX_STREAMS */
        API_STREAM_SHORT, /* API_MAX_PENDING */
};
struct api_stream {
        struct api_server *s;
        struct api_stream *prev, *next;
        enum api_stream_kind kind;
        void (*cancel)(struct api_stream *st); /* must unregister and free */
};
int api_stream_register(struct api_server *s, struct api_stream *st);
void api_stream_unregister(struct api_stream *st);
