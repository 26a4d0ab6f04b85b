/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/curl_loop.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "basic/macro.h"
#include "basic/timer.h"

struct curl_loop_socket {
        struct curl_loop_socket *next;
        curl_socket_t fd;
        struct event *ev;
};

struct curl_loop_transfer {
        struct curl_loop_transfer *prev, *next;
        CURL *easy;
        curl_loop_done_t done;
        void *userdata;
};

struct curl_loop {
        struct event_base *base;
        CURLM *multi;
        struct event *timer;
        struct curl_loop_socket *sockets;
        struct curl_loop_transfer *transfers; /* running */
        /* kept for reuse, so that a transfer allocates nothing here once the loop is warm (HTTP probes) */
        struct curl_loop_socket *free_sockets;
        struct curl_loop_transfer *free_transfers;
        size_t n_free_sockets, n_free_transfers;
};

#define MAX_FREE 64

static void transfer_unlink(struct curl_loop *l, struct curl_loop_transfer *t) {
        if (t->prev)
                t->prev->next = t->next;
        else
                l->transfers = t->next;
        if (t->next)
                t->next->prev = t->prev;
        t->prev = t->next = NULL;
}

static void socket_free(struct curl_loop_socket *s) {
        if (!s)
                return;
        if (s->ev)
                event_free(s->ev);
        free(s);
}

static void socket_recycle(struct curl_loop *l, struct curl_loop_socket *s) {
        if (s->ev)
                event_del(s->ev);
        if (l->n_free_sockets >= MAX_FREE) {
                socket_free(s);
                return;
        }
        s->next = l->free_sockets;
        l->free_sockets = s;
        l->n_free_sockets++;
}

static void transfer_recycle(struct curl_loop *l, struct curl_loop_transfer *t) {
        if (l->n_free_transfers >= MAX_FREE) {
                free(t);
                return;
        }
        t->next = l->free_transfers;
        l->free_transfers = t;
        l->n_free_transfers++;
}

static void check_done(struct curl_loop *l) {
        CURLMsg *msg;
        int left;

        while ((msg = curl_multi_info_read(l->multi, &left))) {
                CURL *easy = msg->easy_handle;
                CURLcode result = msg->data.result;
                struct curl_loop_transfer *t = NULL;

                if (msg->msg != CURLMSG_DONE)
                        continue;
                curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **) &t);
                curl_multi_remove_handle(l->multi, easy);
                curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
                if (t) {
                        struct curl_loop_transfer copy = *t;
                        transfer_unlink(l, t);
                        transfer_recycle(l, t);
                        copy.done(easy, result, copy.userdata);
                }
        }
}

static void on_socket_event(evutil_socket_t fd, short what, void *userdata) {
        struct curl_loop *l = userdata;
        int running = 0, action = 0;

        if (what & EV_READ)
                action |= CURL_CSELECT_IN;
        if (what & EV_WRITE)
                action |= CURL_CSELECT_OUT;
        curl_multi_socket_action(l->multi, fd, action, &running);
        check_done(l);
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        struct curl_loop *l = userdata;
        int running = 0;

        curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        check_done(l);
}

static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
        struct curl_loop *l = userp;
        struct curl_loop_socket *s = socketp;
        short events = 0;

        if (what == CURL_POLL_REMOVE) {
                if (s) {
                        for (struct curl_loop_socket **p = &l->sockets; *p; p = &(*p)->next)
                                if (*p == s) {
                                        *p = s->next;
                                        break;
                                }
                        socket_recycle(l, s);
                        curl_multi_assign(l->multi, fd, NULL);
                }
                return 0;
        }
        if (what & CURL_POLL_IN)
                events |= EV_READ;
        if (what & CURL_POLL_OUT)
                events |= EV_WRITE;
        if (!s) {
                if (l->free_sockets) {
                        s = l->free_sockets;
                        l->free_sockets = s->next;
                        l->n_free_sockets--;
                } else if (!(s = calloc(1, sizeof(*s))))
                        return -1;
                s->fd = fd;
                s->next = l->sockets;
                l->sockets = s;
                curl_multi_assign(l->multi, fd, s);
        }
        if (s->ev) {
                if (event_get_fd(s->ev) == fd && (event_get_events(s->ev) & (EV_READ | EV_WRITE)) == events &&
                    event_pending(s->ev, EV_READ | EV_WRITE, NULL))
                        return 0; /* no change */
                event_del(s->ev);
        } else {
                s->ev = event_new(l->base, fd, 0, on_socket_event, l);
                if (!s->ev)
                        return -1;
        }
        event_assign(s->ev, l->base, fd, events | EV_PERSIST, on_socket_event, l);
        return event_add(s->ev, NULL) < 0 ? -1 : 0;
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp) {
        struct curl_loop *l = userp;

        if (timeout_ms < 0) {
                evtimer_del(l->timer);
                return 0;
        }
        if (timeout_ms == 0) {
                /* "call socket_action soon": from the loop, not from inside libcurl; made active rather than armed,
                 * it runs in this round of the loop without another wait for events */
                evtimer_del(l->timer);
                event_active(l->timer, EV_TIMEOUT, 0);
                return 0;
        }
        (void) evtimer_add_usec(l->timer, (uint64_t) timeout_ms * 1000);
        return 0;
}

static curl_socket_t open_socket_cb(void *clientp, curlsocktype purpose, struct curl_sockaddr *address) {
        return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

int curl_loop_new(struct event_base *base, struct curl_loop **ret) {
        struct curl_loop *l;

        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return -ENOMEM;
        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->base = base;
        l->multi = curl_multi_init();
        l->timer = evtimer_new(base, on_timer, l);
        if (!l->multi || !l->timer || curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, socket_cb) != CURLM_OK ||
            curl_multi_setopt(l->multi, CURLMOPT_SOCKETDATA, l) != CURLM_OK ||
            curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, timer_cb) != CURLM_OK ||
            curl_multi_setopt(l->multi, CURLMOPT_TIMERDATA, l) != CURLM_OK) {
                curl_loop_free(l);
                return -ENOMEM;
        }
        *ret = l;
        return 0;
}

void curl_loop_cancel(struct curl_loop *l, CURL *easy) {
        struct curl_loop_transfer *t = NULL;

        if (!l || !easy)
                return;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **) &t);
        curl_multi_remove_handle(l->multi, easy);
        curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
        if (t) {
                transfer_unlink(l, t);
                transfer_recycle(l, t);
        }
}

struct curl_loop *curl_loop_free(struct curl_loop *l) {
        if (!l)
                return NULL;
        while (l->transfers)
                curl_loop_cancel(l, l->transfers->easy);
        if (l->multi) {
                curl_multi_cleanup(l->multi); /* may still call the socket and timer callbacks */
        }
        while (l->sockets) {
                struct curl_loop_socket *s = l->sockets;
                l->sockets = s->next;
                socket_free(s);
        }
        while (l->free_sockets) {
                struct curl_loop_socket *s = l->free_sockets;
                l->free_sockets = s->next;
                socket_free(s);
        }
        while (l->free_transfers) {
                struct curl_loop_transfer *t = l->free_transfers;
                l->free_transfers = t->next;
                free(t);
        }
        if (l->timer)
                event_free(l->timer);
        free(l);
        return NULL;
}

int curl_loop_add(struct curl_loop *l, CURL *easy, curl_loop_done_t done, void *userdata) {
        struct curl_loop_transfer *t;

        if (!l || !easy || !done)
                return -EINVAL;
        if (l->free_transfers) {
                t = l->free_transfers;
                l->free_transfers = t->next;
                l->n_free_transfers--;
        } else if (!(t = malloc(sizeof(*t))))
                return -ENOMEM;
        *t = (struct curl_loop_transfer) { .easy = easy, .done = done, .userdata = userdata };
        if (curl_easy_setopt(easy, CURLOPT_PRIVATE, t) != CURLE_OK ||
            curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, open_socket_cb) != CURLE_OK ||
            curl_multi_add_handle(l->multi, easy) != CURLM_OK) {
                curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
                transfer_recycle(l, t);
                return -ENOMEM;
        }
        t->next = l->transfers;
        if (l->transfers)
                l->transfers->prev = t;
        l->transfers = t;
        return 0;
}

CURLcode curl_loop_http_only(CURL *e) {
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85: the string forms; the bitmasks are deprecated */
        CURLcode c = curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        return c != CURLE_OK ? c : curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
        CURLcode c = curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long) (CURLPROTO_HTTP | CURLPROTO_HTTPS));
        return c != CURLE_OK ? c
                             : curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS, (long) (CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
}

bool curl_loop_idle(const struct curl_loop *l) {
        return !l || !l->transfers;
}
