/* SPDX-License-Identifier: Apache-2.0 */
/* Listeners, routing and the common replies of the kubelet API (pkg/kubelet/server/server.go). */
#include <arpa/inet.h>
#include <assert.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <sys/queue.h>
#include <event2/keyvalq_struct.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <strings.h>

#include "basic/error.h"
#include "basic/evbuffer.h"
#include "basic/list.h"
#include "basic/log.h"
#include "basic/string.h"
#include "features/features.h"
#include "basic/strv.h"
#include "server/client_ca.h"
#include "server/methods.h"
#include "server/server-internal.h"
#include "stats/cadvisor.h"
#include "stats/machine.h"
#include "stats/summary.h"

/* ---------------------------------------------------------------- replies */

static void reply(struct evhttp_request *req, int code, const char *content_type, struct evbuffer *body) {
        struct evkeyvalq *h = evhttp_request_get_output_headers(req);
        evhttp_add_header(h, "Content-Type", content_type);
        evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
        evhttp_add_header(h, "Cache-Control", "no-cache, private");
        evhttp_send_reply(req, code, NULL, body);
}

void api_reply_buffer(struct evhttp_request *req, int code, const char *content_type, struct evbuffer *body) {
        reply(req, code, content_type, body);
}

static void end_when_flushed(struct evhttp_connection *evcon, void *userdata) {
        evhttp_send_reply_end(userdata);
}

/* A body sent the way upstream's handlers send theirs through a flushing writer: chunked, and the terminating
 * chunk only once the data has been written, so that the two never share a TLS record. Go's HTTP client hands
 * the last bytes of a body over together with io.EOF when the body's end is already in its buffer (always so
 * for a Content-Length body), and kube-apiserver's WebSocket stream of pods/log (wsstream's messageCopy) drops
 * the bytes of a read that also returns io.EOF: a plain reply made `pods/log` over WebSocket an empty stream.
 * If the client leaves first, evhttp frees the request and the callback never runs. */
void api_reply_flushed(struct evhttp_request *req, const char *content_type, struct evbuffer *body) {
        struct evkeyvalq *h = evhttp_request_get_output_headers(req);

        if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD || evbuffer_get_length(body) == 0) {
                reply(req, 200, content_type, body);
                return;
        }
        evhttp_add_header(h, "Content-Type", content_type);
        evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
        evhttp_add_header(h, "Cache-Control", "no-cache, private");
        evhttp_send_reply_start(req, 200, "OK");
        evhttp_send_reply_chunk_with_cb(req, body, end_when_flushed, req);
}

void api_reply_text(struct evhttp_request *req, int code, const char *fmt, ...) {
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        va_list ap;

        if (b) {
                va_start(ap, fmt);
                evbuffer_add_vprintf(b, fmt, ap);
                va_end(ap);
        }
        reply(req, code, "text/plain; charset=utf-8", b);
}

void api_reply_json(struct evhttp_request *req, int code, json_t *obj) {
        _cleanup_free_ char *s = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
        _cleanup_evbuffer_ struct evbuffer *b = NULL;

        json_decref(obj);
        if (!s) {
                api_reply_text(req, 500, "Internal Error: out of memory\n");
                return;
        }
        b = evbuffer_new();
        if (b)
                evbuffer_add(b, s, strlen(s));
        reply(req, code, "application/json", b);
}

size_t api_connection_unsent(struct evhttp_connection *evcon) {
        struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon), *below;
        size_t n;

        if (!bev)
                return 0;
        n = evbuffer_get_length(bufferevent_get_output(bev));
        below = bufferevent_get_underlying(bev);
        if (below)
                n += evbuffer_get_length(bufferevent_get_output(below));
        return n;
}

void api_reply_lookup_error(struct evhttp_request *req, int r, const char *ns, const char *pod, const char *container) {
        switch (r) {
        case -ENXIO:
                api_reply_text(req, 404, "pod \"%s/%s\" not found\n", ns, pod);
                break;
        case -ENOENT:
                api_reply_text(req, 404, "container \"%s\" not found in pod \"%s/%s\"\n", strempty(container), ns, pod);
                break;
        case -ESRCH:
                api_reply_text(req, 404, "container \"%s\" in pod \"%s/%s\" has not been created yet\n",
                               strempty(container), ns, pod);
                break;
        default:
                api_reply_text(req, 500, "Internal Error: %s\n", strerror(-r));
        }
}

/* ---------------------------------------------------------------- headers */

/* whether the comma-separated list value holds token (case-insensitive) */
static bool list_has_token(const char *value, const char *token) {
        size_t n = strlen(token);

        for (const char *p = value; p && *p;) {
                const char *e = strchr(p, ',');
                size_t l = e ? (size_t) (e - p) : strlen(p);

                while (l > 0 && (*p == ' ' || *p == '\t')) {
                        p++;
                        l--;
                }
                while (l > 0 && (p[l - 1] == ' ' || p[l - 1] == '\t'))
                        l--;
                if (l == n && strncasecmp(p, token, n) == 0)
                        return true;
                p = e ? e + 1 : NULL;
        }
        return false;
}

bool api_is_upgrade_request(const struct evkeyvalq *headers) {
        const struct evkeyval *h;
        bool conn = false, upgrade = false;

        TAILQ_FOREACH(h, headers, next) {
                if (strcasecmp(h->key, "Connection") == 0 && list_has_token(h->value, "upgrade"))
                        conn = true;
                if (strcasecmp(h->key, "Upgrade") == 0 && !isempty(h->value))
                        upgrade = true;
        }
        return conn && upgrade;
}

bool api_header_is_hop_by_hop(const struct evkeyvalq *headers, const char *name) {
        static const char *const fixed[] = { "Connection",
                                             "Keep-Alive",
                                             "Proxy-Connection",
                                             "Proxy-Authenticate",
                                             "Proxy-Authorization",
                                             "TE",
                                             "Trailer",
                                             "Transfer-Encoding",
                                             "Upgrade" };
        const struct evkeyval *h;

        for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
                if (strcasecmp(name, fixed[i]) == 0)
                        return true;
        TAILQ_FOREACH(h, headers, next)
                if (strcasecmp(h->key, "Connection") == 0 && list_has_token(h->value, name))
                        return true;
        return false;
}

/* ---------------------------------------------------------------- paths and queries */

int api_path_components(const char *path, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        const char *p = path;

        while (*p == '/')
                p++;
        while (*p) {
                const char *e = strchr(p, '/');
                size_t len = e ? (size_t) (e - p) : strlen(p);
                _cleanup_free_ char *raw = strndup(p, len);
                char *dec;
                size_t dlen = 0;

                if (!raw)
                        return -ENOMEM;
                dec = evhttp_uridecode(raw, 0, &dlen);
                if (!dec)
                        return -ENOMEM;
                if (dlen != strlen(dec) || isempty(dec) || streq(dec, ".") || streq(dec, "..") || strchr(dec, '/')) {
                        free(dec);
                        return -EINVAL;
                }
                if (strv_push(&l, dec) < 0)
                        return -ENOMEM;
                p += len;
                while (*p == '/')
                        p++;
        }
        if (!l) {
                l = calloc(1, sizeof(char *));
                if (!l)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int api_query_get_all(const char *query, const char *key, char ***ret) {
        struct evkeyvalq q = {};
        struct evkeyval *kv;
        _cleanup_strv_free_ char **l = NULL;

        if (!isempty(query)) {
                if (evhttp_parse_query_str(query, &q) < 0)
                        return -EINVAL;
                TAILQ_FOREACH(kv, &q, next)
                        if (streq(kv->key, key) && strv_extend(&l, kv->value) < 0) {
                                evhttp_clear_headers(&q);
                                return -ENOMEM;
                        }
                evhttp_clear_headers(&q);
        }
        *ret = TAKE_PTR(l);
        return 0;
}

char *api_query_get(const char *query, const char *key) {
        _cleanup_strv_free_ char **l = NULL;
        if (api_query_get_all(query, key, &l) < 0 || !l)
                return NULL;
        return strdup(l[0]);
}

/* ---------------------------------------------------------------- streams */

int api_stream_register(struct api_server *s, struct api_stream *st) {
        if (s->n_streams[st->kind] >= (st->kind == API_STREAM_LONG ? API_MAX_STREAMS : API_MAX_PENDING))
                return -EBUSY;
        st->s = s;
        DLIST_PREPEND(s->streams, st);
        s->n_streams[st->kind]++;
        return 0;
}

void api_stream_unregister(struct api_stream *st) {
        struct api_server *s = st->s;
        if (!s)
                return;
        DLIST_REMOVE(s->streams, st);
        st->s = NULL;
        s->n_streams[st->kind]--;
}

/* ---------------------------------------------------------------- routing */

/* path == prefix, or prefix followed by '/' (isSubpath) */
static bool subpath(const char *path, const char *prefix, const char **ret_rest) {
        size_t n = strlen(prefix);
        if (!strneq(path, prefix, n) || (path[n] != '\0' && path[n] != '/'))
                return false;
        if (ret_rest)
                *ret_rest = path + n;
        return true;
}

/* the methods of the endpoint's routes (server/methods.h); any other is answered 405 as upstream's router does */
static bool method_is(struct api_request *r, int allowed) {
        char allow[API_ALLOW_MAX];

        if (api_method_allowed((int) r->method, allowed))
                return true;
        evhttp_add_header(evhttp_request_get_output_headers(r->req), "Allow", api_allow_header(allowed, allow));
        api_reply_text(r->req, 405, "%s", API_METHOD_NOT_ALLOWED_BODY);
        return false;
}

/* serve an authenticated, authorized request (server.c) */
static void api_route(struct api_request *r) {
        const char *p = r->path, *rest = NULL;
        bool debug = r->port == API_PORT_SECURE && r->s->o->enable_debugging_handlers;

        if (r->port == API_PORT_HEALTHZ) {
                if (streq(p, "/healthz")) {
                        if (method_is(r, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD))
                                api_handle_healthz(r, NULL);
                        return;
                }
                api_reply_text(r->req, 404, "404 page not found\n");
                return;
        }

        if (subpath(p, "/healthz", &rest)) {
                if (!method_is(r, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD))
                        return;
                if (isempty(rest))
                        api_handle_healthz(r, NULL);
                else if (streq(rest, "/ping") || streq(rest, "/syncloop") || streq(rest, "/log"))
                        api_handle_healthz(r, rest + 1);
                else
                        api_reply_text(r->req, 404, "404 page not found\n");
                return;
        }
        if (streq(p, "/pods") || streq(p, "/pods/")) {
                if (method_is(r, EVHTTP_REQ_GET))
                        api_handle_pods(r);
                return;
        }
        if (streq(p, "/stats/summary") || streq(p, "/stats/summary/")) {
                if (method_is(r, EVHTTP_REQ_GET | EVHTTP_REQ_POST))
                        api_handle_stats_summary(r, false);
                return;
        }
        if (streq(p, "/metrics/resource")) {
                if (method_is(r, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD))
                        api_handle_stats_summary(r, true);
                return;
        }
        if (streq(p, "/metrics/cadvisor")) {
                if (method_is(r, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD))
                        api_handle_metrics_cadvisor(r);
                return;
        }
        if (streq(p, "/metrics/slis")) {
                if (method_is(r, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD))
                        api_handle_metrics_slis(r);
                return;
        }
        if (streq(p, "/metrics/probes")) {
                if (method_is(r, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD))
                        api_handle_metrics_probes(r);
                return;
        }
        if (streq(p, "/metrics")) {
                if (method_is(r, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD))
                        api_handle_metrics(r);
                return;
        }
        if (streq(p, "/spec") || streq(p, "/spec/")) {
                if (method_is(r, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD))
                        api_handle_spec(r);
                return;
        }
        if (debug) {
                if (streq(p, "/runningpods") || streq(p, "/runningpods/")) {
                        if (method_is(r, EVHTTP_REQ_GET))
                                api_handle_running_pods(r);
                        return;
                }
                if (streq(p, "/configz")) {
                        if (method_is(r, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD))
                                api_handle_configz(r);
                        return;
                }
                /* the zpages answer every method, as upstream's (a plain handler on the container's mux) */
                if (streq(p, "/statusz") && feature_enabled(r->s->o->feature_gates, "ComponentStatusz")) {
                        api_handle_statusz(r);
                        return;
                }
                if (streq(p, "/flagz") && feature_enabled(r->s->o->feature_gates, "ComponentFlagz")) {
                        api_handle_flagz(r);
                        return;
                }
                if (subpath(p, "/run", &rest)) {
                        if (method_is(r, EVHTTP_REQ_POST))
                                api_handle_run(r, rest);
                        return;
                }
                if (subpath(p, "/containerLogs", &rest)) {
                        if (method_is(r, EVHTTP_REQ_GET))
                                api_handle_container_logs(r, rest);
                        return;
                }
                if (streq(p, "/logs")) {
                        evhttp_add_header(evhttp_request_get_output_headers(r->req), "Location", "/logs/");
                        api_reply_text(r->req, 301, "<a href=\"/logs/\">Moved Permanently</a>.\n");
                        return;
                }
                if (startswith(p, "/logs/")) {
                        if (!r->s->o->enable_system_log_handler) {
                                api_reply_text(r->req, 405, "logs endpoint is disabled.\n");
                                return;
                        }
                        if (method_is(r, EVHTTP_REQ_GET))
                                api_handle_logs(r, p + strlen("/logs/"));
                        return;
                }
                if (subpath(p, "/exec", &rest) || subpath(p, "/attach", &rest) || subpath(p, "/portForward", &rest)) {
                        const char *kind = p[1] == 'e' ? "exec" : p[1] == 'a' ? "attach" : "portforward";
                        if (method_is(r, EVHTTP_REQ_GET | EVHTTP_REQ_POST))
                                api_handle_streaming(r, kind, rest);
                        return;
                }
        }
        api_reply_text(r->req, 404, "404 page not found\n");
}

static void on_request(struct evhttp_request *req, void *userdata) {
        struct api_listener *l = userdata;
        const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
        struct api_decision d = {};
        struct api_request r = {
                .s = l->s,
                .req = req,
                .port = l->port,
                .method = evhttp_request_get_command(req),
                .path = uri ? evhttp_uri_get_path(uri) : NULL,
                .query = uri ? evhttp_uri_get_query(uri) : NULL,
        };

        /* the gate (conn.c) decided about this request from its head; evhttp must have framed the same one */
        if (api_conn_take_decision(l->s, evhttp_request_get_connection(req), &d) < 0 || d.method != r.method ||
            !streq_ptr(d.path, r.path)) {
                log_v(2, "API: a request that the connection gate did not hand over (%s): not served", strna(r.path));
                evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
                api_reply_text(req, 400, "400 Bad Request\n");
                api_decision_done(&d);
                return;
        }
        if (!d.allowed) {
                evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
                api_reply_text(req, d.status, "%s", strempty(d.message));
                api_decision_done(&d);
                return;
        }
        log_v(4, "API request: port=%s method=%d path=\"%s\"",
              l->port == API_PORT_SECURE     ? "secure"
              : l->port == API_PORT_READONLY ? "read-only"
                                             : "healthz",
              r.method, r.path);
        r.user = d.user;
        d.user = (struct api_user) {};
        api_route(&r);
        api_user_done(&r.user);
        api_decision_done(&d);
}

/* ---------------------------------------------------------------- listeners */

static int listen_on(struct api_server *s, enum api_port port, const char *address, int portnum,
                     const struct api_conn_limits *limits, struct ck_error **ret_error) {
        struct api_listener *l = &s->listeners[port];
        struct evhttp_bound_socket *bound;
        char addr[INET6_ADDRSTRLEN + 2];
        int one = 1, r;

        l->s = s;
        l->port = port;
        l->http = evhttp_new(s->base);
        if (!l->http)
                return -ENOMEM;
        evhttp_set_max_headers_size(l->http, API_MAX_HEADERS_SIZE);
        evhttp_set_max_body_size(l->http, API_MAX_BODY_SIZE);
        evhttp_set_timeout(l->http, API_REQUEST_TIMEOUT_SEC);
        evhttp_set_allowed_methods(l->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                                                    EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS);
        evhttp_set_gencb(l->http, on_request, l);
        r = api_conn_table_new(l, limits, &l->conns);
        if (r < 0)
                return r;
        evhttp_set_bevcb(l->http, api_conn_bevcb, l);
        bound = evhttp_bind_socket_with_handle(l->http, address, (ev_uint16_t) portnum);
        if (!bound) {
                r = errno > 0 ? -errno : -EADDRINUSE;
                snprintf(addr, sizeof(addr), strchr(address, ':') ? "[%s]" : "%s", address);
                return ck_error_set(ret_error, r, "failed to listen on %s:%d (%s): %s", addr, portnum,
                                    port == API_PORT_SECURE     ? "--port"
                                    : port == API_PORT_READONLY ? "--read-only-port"
                                                                : "--healthz-port",
                                    strerror(-r));
        }
        /* accepted sockets inherit it: a reply written in two pieces (headers, body; TLS records) must not wait
         * for the client's delayed ACK */
        (void) setsockopt(evhttp_bound_socket_get_fd(bound), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        log_info("Starting to listen: address=\"%s\" port=%d%s", address, portnum,
                 port == API_PORT_SECURE     ? ""
                 : port == API_PORT_READONLY ? " (read-only)"
                                             : " (healthz)");
        return 0;
}

/* /metrics/cadvisor's reader: the hierarchies and block devices are found once. A host without cgroups still
 * serves the endpoint (container_scrape_error 1). */
static int cadvisor_setup(struct api_server *s, const char *pods_cgroup) {
        _cleanup_strv_free_ char **devices = NULL;
        struct cadvisor_config cc = { .host_root = "", .cgroup_root = s->o->cgroup_root, .pods_cgroup = pods_cgroup };
        _cleanup_ck_error_ struct ck_error *err = NULL;
        int r;

        for (size_t i = 0; s->machine && i < s->machine->n_network_devices; i++)
                if (strv_extend(&devices, s->machine->network_devices[i].name) < 0)
                        return -ENOMEM;
        cc.net_devices = (const char *const *) devices;
        r = cadvisor_new(&cc, &s->cadvisor, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                log_warning("/metrics/cadvisor will report errors: %s", ck_error_message_or(err, r));
        return 0;
}

/* Connections each port accepts at once, in all and per address (for the TLS port: per address while none of
 * their requests has been authorized, so that the API server's many proxied streams are not capped). Within
 * what the open files limit leaves (main raised it to the hard limit). */
static void connection_limits(struct api_conn_limits ret[_API_PORT_MAX]) {
        struct rlimit rl = { .rlim_cur = 65536 };
        unsigned budget;

        (void) getrlimit(RLIMIT_NOFILE, &rl);
        budget = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 65536 ? 32768 : (unsigned) rl.rlim_cur / 2;
        ret[API_PORT_SECURE] = (struct api_conn_limits) { .max_total = MIN(1024u, budget * 3 / 4),
                                                          .max_per_source = MIN(128u, budget / 8) };
        ret[API_PORT_READONLY] = (struct api_conn_limits) { .max_total = MIN(256u, budget / 8),
                                                            .max_per_source = MIN(64u, budget / 16) };
        ret[API_PORT_HEALTHZ] = (struct api_conn_limits) { .max_total = MIN(64u, budget / 16),
                                                           .max_per_source = MIN(32u, budget / 32) };
}

int api_server_new(struct event_base *base, const struct api_server_config *cfg, struct api_server **ret,
                   struct ck_error **ret_error) {
        const struct kubelet_options *o = cfg->opts;
        struct api_conn_limits limits[_API_PORT_MAX];
        struct api_server *s;
        int r;

        assert(cfg->stats);
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->base = base;
        s->o = o;
        s->cri = cfg->cri;
        s->prober = cfg->prober;
        s->client = cfg->client;
        s->node_ip = cfg->node_ip;
        s->machine = cfg->machine;
        s->host = cfg->host;
        s->stats = cfg->stats;
        api_zpages_init();
        r = cadvisor_setup(s, cfg->pods_cgroup);
        if (r < 0)
                goto fail;
        r = api_tls_setup(s, ret_error);
        if (r < 0)
                goto fail;
        connection_limits(limits);
        r = listen_on(s, API_PORT_SECURE, o->address, o->port, &limits[API_PORT_SECURE], ret_error);
        if (r < 0)
                goto fail;
        if (o->read_only_port > 0) {
                r = listen_on(s, API_PORT_READONLY, o->address, o->read_only_port, &limits[API_PORT_READONLY],
                              ret_error);
                if (r < 0)
                        goto fail;
        }
        if (o->healthz_port > 0) {
                r = listen_on(s, API_PORT_HEALTHZ, o->healthz_bind_address, o->healthz_port, &limits[API_PORT_HEALTHZ],
                              ret_error);
                if (r < 0)
                        goto fail;
        }
        *ret = s;
        return 0;
fail:
        api_server_free(s);
        return r;
}

struct api_server *api_server_free(struct api_server *s) {
        if (!s)
                return NULL;
        while (s->streams)
                s->streams->cancel(s->streams);
        for (size_t i = 0; i < _API_PORT_MAX; i++) {
                if (s->listeners[i].http)
                        evhttp_free(s->listeners[i].http); /* and its connections (libevent may free some later) */
                s->listeners[i].conns = api_conn_table_free(s->listeners[i].conns);
        }
        /* libevent frees the connections' bufferevents from the loop, and their deferred callbacks hold references
         * to them; event_base_free() drops such callbacks without running them, which would leak the connections
         * that were busy at shutdown: let the loop run what is pending now (twice: a free may schedule another) */
        for (int i = 0; i < 2; i++)
                (void) event_base_loop(s->base, EVLOOP_NONBLOCK);
        s->cadvisor = cadvisor_free(s->cadvisor);
        api_cache_free(s->token_cache);
        api_cache_free(s->authz_cache);
        api_client_ca_done(s);
        if (s->ssl_ctx)
                SSL_CTX_free(s->ssl_ctx);
        api_tls_done(s);
        free(s);
        return NULL;
}
