/* SPDX-License-Identifier: Apache-2.0 */
#include "kubelet/runtime_poll.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>

#include "basic/log.h"
#include "basic/timer.h"
#include "cri/cri.h"

#define RUNTIME_POLL_PERIOD_USEC (5 * 1000000ULL)

struct runtime_poll {
        struct cri_client *cri;
        struct event *timer;
        struct cri_calls calls; /* the Status call in flight, cancelled by runtime_poll_free */
        struct node_runtime_features features;
};

static void on_status(const struct cri_reply *reply, void *userdata) {
        struct runtime_poll *p = userdata;
        const Runtime__V1__StatusResponse *s = (const void *) reply->msg;

        if (reply->r < 0)
                log_v(2, "container runtime status: %s", reply->message);
        else if (s && node_runtime_features_set(&p->features, s) < 0)
                log_error("container runtime status: out of memory");
        (void) evtimer_add_usec(p->timer, RUNTIME_POLL_PERIOD_USEC);
}

static void tick(evutil_socket_t fd, short what, void *userdata) {
        struct runtime_poll *p = userdata;
        Runtime__V1__StatusRequest req = RUNTIME__V1__STATUS_REQUEST__INIT;

        (void) fd;
        (void) what;
        if (cri_calls_pending(&p->calls))
                return;
        if (cri_status(p->cri, &req, 0, on_status, p, &p->calls) < 0)
                (void) evtimer_add_usec(p->timer, RUNTIME_POLL_PERIOD_USEC);
}

int runtime_poll_new(struct event_base *base, struct cri_client *cri, struct runtime_poll **ret) {
        struct runtime_poll *p = calloc(1, sizeof(*p));

        if (!p)
                return -ENOMEM;
        p->cri = cri;
        p->timer = evtimer_new(base, tick, p);
        if (!p->timer || evtimer_add_usec(p->timer, 0) < 0) {
                if (p->timer)
                        event_free(p->timer);
                free(p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

struct runtime_poll *runtime_poll_free(struct runtime_poll *p) {
        if (!p)
                return NULL;
        cri_calls_cancel(&p->calls);
        event_free(p->timer);
        node_runtime_features_done(&p->features);
        free(p);
        return NULL;
}

const struct node_runtime_features *runtime_poll_features(const struct runtime_poll *p) {
        return p ? &p->features : NULL;
}
