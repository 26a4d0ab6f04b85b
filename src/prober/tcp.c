/* SPDX-License-Identifier: Apache-2.0 */
/* tcpSocket probe (pkg/probe/tcp): a connection established within the timeout is success. The socket is
 * closed with SO_LINGER 0 (a reset, no FIN handshake), so probing every second leaves no TIME-WAIT pile-up
 * on the node. A host name (rare: the default is the pod IP) is resolved with evdns, off the loop's back. */
#include <arpa/inet.h>
#include <ctype.h>
#include <event2/dns.h>
#include <event2/util.h>
#include <netdb.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/time.h"
#include "prober/handlers.h"

struct tcp_op {
        struct probe_op op;
        struct probe_env *env;
        int fd;
        int port;
        int err; /* a failure known before any event (delivered from the loop) */
        struct event *ev;
        struct evdns_getaddrinfo_request *dns;
        uint64_t timeout_usec;
        char *target; /* "host:port" for messages */
        char *lookup_error;
};

static void tcp_free(struct tcp_op *t) {
        if (t->dns)
                evdns_getaddrinfo_cancel(t->dns); /* runs the callback with EVUTIL_EAI_CANCEL */
        if (t->ev)
                event_free(t->ev);
        if (t->fd >= 0) {
                struct linger l = { .l_onoff = 1, .l_linger = 0 };
                (void) setsockopt(t->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
                close(t->fd);
        }
        free(t->target);
        free(t->lookup_error);
        free(t);
}

static void tcp_cancel(struct probe_op *op) {
        tcp_free((struct tcp_op *) op);
}

static void tcp_report(struct tcp_op *t, int err) {
        if (err == 0)
                probe_op_report(&t->op, PROBE_RESULT_SUCCESS, false, "", 0);
        else {
                _cleanup_free_ char *msg = NULL;
                /* Go's net.Dial wording, which is what upstream's output shows */
                if (err == ETIMEDOUT) {
                        if (asprintf(&msg, "dial tcp %s: i/o timeout", t->target) < 0)
                                msg = NULL;
                } else if (asprintf(&msg, "dial tcp %s: connect: %s", t->target, strerror(err)) < 0)
                        msg = NULL;
                else {
                        char *p = strstr(msg, "connect: ") + strlen("connect: ");
                        *p = (char) tolower((unsigned char) *p); /* "connection refused", as Go says it */
                }
                probe_op_report(&t->op, PROBE_RESULT_FAILURE, false, msg ? msg : "dial failed", 0);
        }
        tcp_free(t);
}

static void on_event(evutil_socket_t fd, short what, void *userdata) {
        struct tcp_op *t = userdata;
        int err = 0;
        socklen_t len = sizeof(err);

        if (t->lookup_error) {
                _cleanup_free_ char *msg = NULL;
                if (asprintf(&msg, "dial tcp %s: lookup: %s", t->target, t->lookup_error) < 0)
                        msg = NULL;
                probe_op_report(&t->op, PROBE_RESULT_FAILURE, false, msg ? msg : "lookup failed", 0);
                tcp_free(t);
                return;
        }
        if (t->err)
                err = t->err;
        else if (what & EV_TIMEOUT)
                err = ETIMEDOUT;
        else if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                err = errno;
        tcp_report(t, err);
}

static void connect_to(struct tcp_op *t, const struct sockaddr *sa, socklen_t salen) {
        struct timeval tv = timeval_from_usec(t->timeout_usec);

        t->fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (t->fd < 0)
                t->err = errno;
        else if (connect(t->fd, sa, salen) < 0 && errno != EINPROGRESS)
                t->err = errno;
        if (t->err) {
                /* report from the loop, never from inside the start function */
                event_assign(t->ev, t->env->base, -1, 0, on_event, t);
                event_active(t->ev, EV_TIMEOUT, 0);
                return;
        }
        event_assign(t->ev, t->env->base, t->fd, EV_WRITE, on_event, t);
        event_add(t->ev, &tv);
}

static void on_resolved(int result, struct evutil_addrinfo *res, void *userdata) {
        struct tcp_op *t = userdata;

        if (result == EVUTIL_EAI_CANCEL)
                return; /* tcp_free is cancelling us */
        t->dns = NULL;
        if (result != 0 || !res) {
                /* may run inside probe_tcp_start: report from the loop */
                t->lookup_error = strdup(result != 0 ? evutil_gai_strerror(result) : "no address");
                if (!t->lookup_error)
                        t->err = ENOMEM;
                event_assign(t->ev, t->env->base, -1, 0, on_event, t);
                event_active(t->ev, EV_TIMEOUT, 0);
                return;
        }
        connect_to(t, res->ai_addr, (socklen_t) res->ai_addrlen);
        evutil_freeaddrinfo(res);
}

int probe_tcp_start(struct probe_env *env, const struct probe_request *req, probe_done_t done, void *userdata,
                    struct probe_op **ret) {
        struct sockaddr_storage ss = {};
        struct sockaddr_in *in4 = (struct sockaddr_in *) &ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &ss;
        struct tcp_op *t;

        if (isempty(req->host) || req->port < 1 || req->port > 65535)
                return -EINVAL;
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->op = (struct probe_op) { .cancel = tcp_cancel, .done = done, .userdata = userdata };
        t->env = env;
        t->fd = -1;
        t->port = req->port;
        t->timeout_usec = req->timeout_usec;
        t->target = probe_join_host_port(req->host, req->port);
        t->ev = event_new(env->base, -1, 0, on_event, t);
        if (!t->target || !t->ev) {
                tcp_free(t);
                return -ENOMEM;
        }

        if (inet_pton(AF_INET, req->host, &in4->sin_addr) == 1) {
                in4->sin_family = AF_INET;
                in4->sin_port = htons((uint16_t) req->port);
                connect_to(t, (struct sockaddr *) in4, sizeof(*in4));
        } else if (inet_pton(AF_INET6, req->host, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons((uint16_t) req->port);
                connect_to(t, (struct sockaddr *) in6, sizeof(*in6));
        } else {
                struct evutil_addrinfo hints = { .ai_family = AF_UNSPEC,
                                                 .ai_socktype = SOCK_STREAM,
                                                 .ai_flags = EVUTIL_AI_ADDRCONFIG };
                char port[8];
                struct evdns_getaddrinfo_request *q;

                if (!env->dns) {
                        env->dns = evdns_base_new(env->base,
                                                  EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_DISABLE_WHEN_INACTIVE);
                        if (!env->dns) {
                                tcp_free(t);
                                return -ENOMEM;
                        }
                        (void) evdns_base_load_hosts(env->dns, NULL);
                }
                snprintf(port, sizeof(port), "%d", req->port);
                q = evdns_getaddrinfo(env->dns, req->host, port, &hints, on_resolved, t);
                /* NULL: answered at once (/etc/hosts, or an error): on_resolved already ran and armed the
                 * connect or the failure report */
                t->dns = q;
        }
        *ret = &t->op;
        return 0;
}
