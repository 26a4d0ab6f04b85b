/* SPDX-License-Identifier: Apache-2.0 */
/* tcpSocket probe (pkg/probe/tcp): a connection established within the timeout is success. The socket is
 * closed with SO_LINGER 0 (a reset, no FIN handshake), so probing every second leaves no TIME-WAIT pile-up
 * on the node. A host name (rare: the default is the pod IP) is resolved with evdns, off the loop's back.
 *
 * A probe worker keeps its struct probe_tcp between runs: the address (parsed once), the "host:port" of the
 * messages and the event are reused, so a run allocates nothing. A connection to a local pod is usually
 * established by the time connect() returns (the handshake runs in the sender's context on a veth pair): a
 * zero-timeout poll() sees it, and the run ends without waiting for an event — socket, connect, poll,
 * getsockopt, setsockopt, close. Its outcome is still delivered from the loop (an activated event, no system
 * call), never from inside the start function. */
#include <arpa/inet.h>
#include <ctype.h>
#include <event2/dns.h>
#include <event2/util.h>
#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/string.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "prober/handlers.h"

struct probe_tcp {
        struct probe_op op;
        struct probe_env *env;
        bool running;
        bool reporting, doomed;

        /* what it is set up for */
        const struct probe *spec;
        char *host;
        int port;
        struct sockaddr_storage addr; /* a numeric host, parsed once */
        socklen_t addr_len;           /* 0: a name, resolved at each run */
        char *target;                 /* "host:port" for messages */

        int fd;
        int err;       /* the outcome known without waiting (0 = connected), or -1: wait for ev */
        bool finished; /* err is the outcome */
        uint64_t timeout_usec;
        struct event *ev;
        struct evdns_getaddrinfo_request *dns;
        char *lookup_error;
};

static void close_socket(struct probe_tcp *t) {
        if (t->fd >= 0) {
                struct linger l = { .l_onoff = 1, .l_linger = 0 };
                (void) setsockopt(t->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
                close(t->fd);
                t->fd = -1;
        }
}

/* end the run in flight, if any (no report) */
static void tcp_stop(struct probe_tcp *t) {
        if (t->dns) {
                struct evdns_getaddrinfo_request *q = TAKE_PTR(t->dns);
                evdns_getaddrinfo_cancel(q); /* runs the callback with EVUTIL_EAI_CANCEL */
        }
        if (t->ev)
                event_del(t->ev);
        close_socket(t);
        t->lookup_error = mfree(t->lookup_error);
        t->running = false;
        t->op.done = NULL;
}

static void tcp_destroy(struct probe_tcp *t) {
        tcp_stop(t);
        if (t->ev)
                event_free(t->ev);
        free(t->host);
        free(t->target);
        free(t);
}

struct probe_tcp *probe_tcp_free(struct probe_tcp *t) {
        if (!t)
                return NULL;
        if (t->reporting) {
                tcp_stop(t);
                t->doomed = true;
                return NULL;
        }
        tcp_destroy(t);
        return NULL;
}

void probe_tcp_invalidate(struct probe_tcp *t) {
        if (t)
                t->spec = NULL;
}

static void tcp_cancel(struct probe_op *op) {
        tcp_stop((struct probe_tcp *) op);
}

/* Deliver the outcome; t may be freed by the callback: touch nothing after. */
static void report(struct probe_tcp *t, enum probe_result result, const char *output) {
        t->running = false;
        t->reporting = true;
        probe_op_report(&t->op, result, false, output, 0);
        t->reporting = false;
        if (t->doomed)
                tcp_destroy(t);
}

static void tcp_report(struct probe_tcp *t, int err) {
        close_socket(t);
        if (err == 0)
                report(t, PROBE_RESULT_SUCCESS, "");
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
                report(t, PROBE_RESULT_FAILURE, msg ? msg : "dial failed");
        }
}

static void on_event(evutil_socket_t fd, short what, void *userdata) {
        struct probe_tcp *t = userdata;
        int err = 0;
        socklen_t len = sizeof(err);

        if (t->lookup_error) {
                _cleanup_free_ char *msg = NULL;
                if (asprintf(&msg, "dial tcp %s: lookup: %s", t->target, t->lookup_error) < 0)
                        msg = NULL;
                t->lookup_error = mfree(t->lookup_error);
                report(t, PROBE_RESULT_FAILURE, msg ? msg : "lookup failed");
                return;
        }
        if (t->finished)
                err = t->err;
        else if (what & EV_TIMEOUT)
                err = ETIMEDOUT;
        else if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                err = errno;
        tcp_report(t, err);
}

/* the outcome is known: deliver it from the loop, in this round (no system call) */
static void finish_soon(struct probe_tcp *t, int err) {
        t->finished = true;
        t->err = err;
        event_assign(t->ev, t->env->base, -1, 0, on_event, t);
        event_active(t->ev, EV_TIMEOUT, 0);
}

static void connect_to(struct probe_tcp *t, const struct sockaddr *sa, socklen_t salen) {
        struct pollfd p;
        int err = 0;
        socklen_t len = sizeof(err);

        t->fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (t->fd < 0) {
                finish_soon(t, errno);
                return;
        }
        if (connect(t->fd, sa, salen) == 0) {
                finish_soon(t, 0);
                return;
        }
        if (errno != EINPROGRESS) {
                finish_soon(t, errno);
                return;
        }
        /* established (or refused) already? */
        p = (struct pollfd) { .fd = t->fd, .events = POLLOUT };
        if (poll(&p, 1, 0) == 1) {
                if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                        err = errno;
                finish_soon(t, err);
                return;
        }
        event_assign(t->ev, t->env->base, t->fd, EV_WRITE, on_event, t);
        (void) event_add_usec(t->ev, t->timeout_usec);
}

static void on_resolved(int result, struct evutil_addrinfo *res, void *userdata) {
        struct probe_tcp *t = userdata;

        if (result == EVUTIL_EAI_CANCEL)
                return; /* tcp_stop is cancelling us */
        t->dns = NULL;
        if (result != 0 || !res) {
                /* may run inside the start function: report from the loop */
                t->lookup_error = strdup(result != 0 ? evutil_gai_strerror(result) : "no address");
                if (!t->lookup_error)
                        finish_soon(t, ENOMEM);
                else {
                        event_assign(t->ev, t->env->base, -1, 0, on_event, t);
                        event_active(t->ev, EV_TIMEOUT, 0);
                }
                return;
        }
        connect_to(t, res->ai_addr, (socklen_t) res->ai_addrlen);
        evutil_freeaddrinfo(res);
}

static int tcp_setup(struct probe_tcp *t, const struct probe_request *req) {
        struct sockaddr_in *in4 = (struct sockaddr_in *) &t->addr;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &t->addr;
        _cleanup_free_ char *host = strdup(req->host), *target = probe_join_host_port(req->host, req->port);

        if (!host || !target)
                return -ENOMEM;
        memset(&t->addr, 0, sizeof(t->addr));
        t->addr_len = 0;
        if (inet_pton(AF_INET, req->host, &in4->sin_addr) == 1) {
                in4->sin_family = AF_INET;
                in4->sin_port = htons((uint16_t) req->port);
                t->addr_len = sizeof(*in4);
        } else if (inet_pton(AF_INET6, req->host, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons((uint16_t) req->port);
                t->addr_len = sizeof(*in6);
        }
        free_and_replace(t->host, host);
        free_and_replace(t->target, target);
        t->port = req->port;
        t->spec = req->spec;
        return 0;
}

static int tcp_run(struct probe_tcp *t, const struct probe_request *req, probe_done_t done, void *userdata,
                   struct probe_op **ret) {
        int r;

        tcp_stop(t);
        if (t->spec != req->spec || t->port != req->port || !streq_ptr(t->host, req->host)) {
                r = tcp_setup(t, req);
                if (r < 0)
                        return r;
        }
        t->op.done = done;
        t->op.userdata = userdata;
        t->timeout_usec = req->timeout_usec;
        t->finished = false;
        t->err = 0;
        t->running = true;
        *ret = &t->op;

        if (t->addr_len > 0) {
                connect_to(t, (struct sockaddr *) &t->addr, t->addr_len);
                return 0;
        }
        {
                struct evutil_addrinfo hints = { .ai_family = AF_UNSPEC,
                                                 .ai_socktype = SOCK_STREAM,
                                                 .ai_flags = EVUTIL_AI_ADDRCONFIG };
                char port[8];
                struct evdns_getaddrinfo_request *q;

                if (!t->env->dns) {
                        t->env->dns = evdns_base_new(t->env->base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
                                                                           EVDNS_BASE_DISABLE_WHEN_INACTIVE);
                        if (!t->env->dns) {
                                t->running = false;
                                t->op.done = NULL;
                                return -ENOMEM;
                        }
                        (void) evdns_base_load_hosts(t->env->dns, NULL);
                }
                snprintf(port, sizeof(port), "%d", req->port);
                q = evdns_getaddrinfo(t->env->dns, req->host, port, &hints, on_resolved, t);
                /* NULL: answered at once (/etc/hosts, or an error): on_resolved already ran and armed the
                 * connect or the failure report */
                t->dns = q;
        }
        return 0;
}

static int tcp_new(struct probe_env *env, struct probe_tcp **ret) {
        struct probe_tcp *t = calloc(1, sizeof(*t));

        if (!t)
                return -ENOMEM;
        t->op = (struct probe_op) { .cancel = tcp_cancel };
        t->env = env;
        t->fd = -1;
        t->ev = event_new(env->base, -1, 0, on_event, t);
        if (!t->ev) {
                free(t);
                return -ENOMEM;
        }
        *ret = t;
        return 0;
}

int probe_tcp_run(struct probe_env *env, struct probe_tcp **state, const struct probe_request *req, probe_done_t done,
                  void *userdata, struct probe_op **ret) {
        int r;

        if (isempty(req->host) || req->port < 1 || req->port > 65535)
                return -EINVAL;
        if (!*state) {
                r = tcp_new(env, state);
                if (r < 0)
                        return r;
        }
        return tcp_run(*state, req, done, userdata, ret);
}
