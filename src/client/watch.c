/* SPDX-License-Identifier: Apache-2.0 */
/* Watch streams: a GET whose chunked body is one JSON watch event per line (apimachinery's
 * streaming JSON framer). Bytes are buffered as they come; complete lines are delivered from the loop (never
 * inside the transport), so the event callback may cancel the watch or free the client. An idle timer catches dead
 * connections that TCP would keep open for hours. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "basic/log.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "client/client-internal.h"

/* The transfer is over (finished, failed, or stopped by us): deliver what is left, then done(). */
static void watch_transfer_over(struct kube_request *r, int rc, char *error) {
        if (rc < 0 && r->r == 0)
                r->r = rc;
        if (error) {
                if (!r->error)
                        r->error = error;
                else
                        free(error);
        }
        r->transfer_done = true;
        r->paused = false;
        if (r->idle_timer)
                event_del(r->idle_timer);
        if (r->client)
                kube_request_release_stream(r);
        evtimer_add_usec(r->dispatch_ev, 0);
}

static void on_watch_headers(int status, const char *retry_after, const char *encoding, void *userdata) {
        struct kube_request *r = userdata;

        r->status = status;
        if (r->idle_usec > 0)
                evtimer_add_usec(r->idle_timer, r->idle_usec);
}

static int on_watch_data(const char *p, size_t n, void *userdata) {
        struct kube_request *r = userdata;
        bool pause = false;

        if (r->idle_usec > 0)
                evtimer_add_usec(r->idle_timer, r->idle_usec);
        if (r->status != 200) {
                /* an error body (a v1 Status): keep the first 1 MiB for the message */
                if (r->len < 1024 * 1024 && kube_buffer_append(r, p, MIN(n, 1024 * 1024 - r->len), 1024 * 1024) < 0)
                        return -ENOMEM;
                return 0;
        }
        if (kube_buffer_append(r, p, n, SIZE_MAX / 2) < 0)
                return -ENOMEM;
        /* a line longer than the cap: the stream is broken */
        if (r->len - r->line_start > KUBE_WATCH_MAX_EVENT &&
            !memchr(r->buf + r->line_start, '\n', r->len - r->line_start)) {
                r->too_large = true;
                return -EFBIG;
        }
        if (r->len - r->consumed > KUBE_WATCH_MAX_BUFFER) {
                /* the consumer is behind: stop reading until dispatch caught up (the window, or the socket
                 * buffer, holds the rest) */
                r->paused = pause = true;
                evtimer_add_usec(r->dispatch_ev, 0);
        }
        if (memchr(p, '\n', n)) {
                char *nl = memrchr(r->buf + r->line_start, '\n', r->len - r->line_start);
                if (nl)
                        r->line_start = (size_t) (nl - r->buf) + 1;
                evtimer_add_usec(r->dispatch_ev, 0);
        }
        return pause ? 1 : 0;
}

static void on_watch_close(int result, const char *why, bool refused, void *userdata) {
        struct kube_request *r = userdata;
        char *msg = NULL;
        int rc = 0;

        r->stream = NULL; /* the transport's, and gone */
        kube_log_transfer(r, "WATCH", result, why);
        if (r->too_large) {
                rc = -EFBIG;
                if (asprintf(&msg, "GET %s%s: a watch event is larger than %u bytes", r->client->server, r->path,
                             KUBE_WATCH_MAX_EVENT) < 0)
                        msg = NULL;
        } else if (result < 0) {
                rc = result;
                msg = kube_transfer_error(r, result, why);
        }
        watch_transfer_over(r, rc, msg);
}

static const struct kube_stream_ops watch_ops = {
        .on_headers = on_watch_headers,
        .on_data = on_watch_data,
        .on_close = on_watch_close,
};

static void on_watch_idle(evutil_socket_t fd, short what, void *userdata) {
        struct kube_request *r = userdata;
        char *msg = NULL;

        if (r->transfer_done || !r->client)
                return;
        log_v(4, "Watch %s%s: no data for %llu s, closing it", r->client->server, r->path,
              (unsigned long long) (r->idle_usec / USEC_PER_SEC));
        if (asprintf(&msg, "GET %s%s: no data received for %llu s", r->client->server, r->path,
                     (unsigned long long) (r->idle_usec / USEC_PER_SEC)) < 0)
                msg = NULL;
        watch_transfer_over(r, -ETIMEDOUT, msg);
}

void kube_watch_abort(struct kube_request *r, int rc, char *error) {
        if (r->transfer_done) {
                free(error);
                return;
        }
        watch_transfer_over(r, rc, error);
}

static void watch_finish(struct kube_request *r) {
        kube_watch_done_t done = r->done;
        void *ud = r->userdata;
        long status = r->status;
        int rc = r->r;
        _cleanup_free_ char *error = NULL;

        error = r->error ? strdup(r->error) : NULL;
        kube_request_free(r);
        done(rc, status, error ? error : "", ud);
}

int kube_watch_parse_event(const char *line, size_t n, json_t **ret_event, struct ck_error **ret_error) {
        json_error_t jerr;
        json_auto_t *ev = NULL;

        while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' '))
                n--;
        if (n == 0) {
                *ret_event = NULL;
                return 0;
        }
        ev = json_loadb(line, n, 0, &jerr);
        if (!json_string_value(json_object_get(ev, "type")) || !json_is_object(json_object_get(ev, "object")))
                return ck_error_set(ret_error, -EBADMSG, "a watch event that is not {type, object}: %s",
                                    ev ? "missing fields" : jerr.text);
        *ret_event = TAKE_PTR(ev);
        return 0;
}

/* Deliver one line; false when the watch is gone (cancelled inside the callback) or broken. */
static bool deliver_line(struct kube_request *r, const char *line, size_t n) {
        _cleanup_ck_error_ struct ck_error *why = NULL;
        json_auto_t *ev = NULL;
        json_t *obj;
        const char *type;

        if (kube_watch_parse_event(line, n, &ev, &why) >= 0 && !ev)
                return true; /* an empty line */
        type = json_string_value(json_object_get(ev, "type"));
        obj = json_object_get(ev, "object");
        if (!ev) {
                char *msg = NULL;
                if (asprintf(&msg, "GET %s%s: %s", r->client ? r->client->server : "", r->path,
                             why ? ck_error_message(why) : "a watch event that is not {type, object}") < 0)
                        msg = NULL;
                if (r->client)
                        kube_request_release_stream(r);
                r->transfer_done = true;
                r->r = -EBADMSG;
                free(r->error);
                r->error = msg;
                return false;
        }
        r->dispatching = true;
        r->event(type, obj, r->userdata);
        r->dispatching = false;
        return !r->cancelled;
}

static void on_watch_dispatch(evutil_socket_t fd, short what, void *userdata) {
        struct kube_request *r = userdata;

        if (r->status == 200) {
                while (r->consumed < r->len) {
                        const char *s = r->buf + r->consumed;
                        const char *nl = memchr(s, '\n', r->len - r->consumed);
                        size_t n;

                        if (!nl) {
                                if (!r->transfer_done)
                                        break;
                                if (r->r < 0) {
                                        /* cut off (idle timer, transport error): a fragment, not an event */
                                        r->consumed = r->len;
                                        break;
                                }
                                n = r->len - r->consumed; /* the last line may lack its newline */
                        } else
                                n = (size_t) (nl - s);
                        r->consumed += n + (nl ? 1 : 0);
                        if (!deliver_line(r, s, n)) {
                                if (r->cancelled) {
                                        kube_request_free(r);
                                        return;
                                }
                                watch_finish(r);
                                return;
                        }
                }
                /* compact */
                if (r->consumed > 0) {
                        memmove(r->buf, r->buf + r->consumed, r->len - r->consumed);
                        r->len -= r->consumed;
                        r->line_start = r->line_start >= r->consumed ? r->line_start - r->consumed : 0;
                        r->consumed = 0;
                        if (r->buf)
                                r->buf[r->len] = '\0';
                }
                if (r->paused && !r->transfer_done && r->stream && r->len - r->consumed <= KUBE_WATCH_MAX_BUFFER) {
                        r->paused = false;
                        kube_stream_resume(r->stream); /* may call on_watch_data right away */
                        return;
                }
        }
        if (!r->transfer_done)
                return;
        if (r->status != 200 && r->status != 0 && r->r == 0) {
                json_auto_t *body = r->len > 0 ? json_loadb(r->buf, r->len, 0, NULL) : NULL;
                int k = kube_response_error(r, body);
                if (k < 0)
                        r->r = k;
        }
        watch_finish(r);
}

int kube_watch_start(struct kube_request *r) {
        _cleanup_ck_error_ struct ck_error *error = NULL;
        int k;

        r->attempts++;
        r->start_usec = now_usec();
        r->state = KUBE_REQ_RUNNING;
        k = kube_request_start_stream(r, &watch_ops, &error);
        if (k < 0) {
                watch_transfer_over(r, k, error ? ck_error_take_message(TAKE_PTR(error)) : NULL);
                return 0;
        }
        if (r->idle_usec > 0)
                evtimer_add_usec(r->idle_timer, r->idle_usec);
        return 0;
}

int kube_watch(struct kube_client *c, const char *path, uint64_t idle_timeout_usec, kube_watch_event_t event,
               kube_watch_done_t done, void *userdata, struct kube_request **ret) {
        struct kube_request *r;
        int k;

        if (!c || !path || !event || !done)
                return -EINVAL;
        k = kube_request_alloc(c, "GET", path, &r);
        if (k < 0)
                return k;
        r->is_watch = true;
        r->event = event;
        r->done = done;
        r->userdata = userdata;
        r->idle_usec = idle_timeout_usec;
        r->idle_timer = evtimer_new(c->base, on_watch_idle, r);
        r->dispatch_ev = evtimer_new(c->base, on_watch_dispatch, r);
        if (!r->idle_timer || !r->dispatch_ev) {
                kube_request_free(r);
                return -ENOMEM;
        }
        kube_request_schedule(r, 0);
        if (ret)
                *ret = r;
        return 0;
}
