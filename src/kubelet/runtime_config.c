/* SPDX-License-Identifier: Apache-2.0 */
#include "kubelet/runtime_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "cri/cri.h"
#include "grpc/client.h"

#define RUNTIME_CONFIG_TRIES 3
#define RUNTIME_CONFIG_RETRY_USEC (2 * USEC_PER_SEC)

struct answer {
        bool done;
        int r;
        int grpc_status;
        char *message;
        bool has_linux;
        int driver;
};

static void on_runtime_config(const struct cri_reply *reply, void *userdata) {
        struct answer *a = userdata;
        const Runtime__V1__RuntimeConfigResponse *resp = (const void *) reply->msg;

        a->done = true;
        a->r = reply->r;
        a->grpc_status = reply->grpc_status;
        a->message = strdup(strempty(reply->message));
        if (reply->r >= 0 && resp && resp->linux) {
                a->has_linux = true;
                a->driver = resp->linux->cgroup_driver;
        }
}

static void on_wait(evutil_socket_t fd, short what, void *userdata) {
        *(bool *) userdata = true;
}

/* runs the loop until *flag */
static void run_until(struct event_base *base, const bool *flag) {
        while (!*flag)
                if (event_base_loop(base, EVLOOP_ONCE) < 0)
                        break;
}

int kubelet_cgroup_driver_from_cri(struct event_base *base, struct kubelet_options *o, struct ck_error **ret_error) {
        struct cri_client *cri = NULL;
        struct answer a = {};
        int r;

        r = cri_client_new(base, o->container_runtime_endpoint, o->image_service_endpoint,
                           o->runtime_request_timeout_usec, &cri);
        if (r < 0)
                return 0; /* a bad endpoint is said by the kubelet's own client */
        log_v(4, "Getting CRI runtime configuration information");
        for (int i = 0; i < RUNTIME_CONFIG_TRIES; i++) {
                Runtime__V1__RuntimeConfigRequest req = RUNTIME__V1__RUNTIME_CONFIG_REQUEST__INIT;

                free(a.message);
                a = (struct answer) {};
                if (cri_runtime_config(cri, &req, 0, on_runtime_config, &a, NULL) < 0) {
                        cri_client_free(cri);
                        return -ENOMEM;
                }
                run_until(base, &a.done);
                if (a.r >= 0 || a.grpc_status == GRPC_UNIMPLEMENTED)
                        break;
                if (i + 1 < RUNTIME_CONFIG_TRIES) {
                        /* the runtime may still be starting: give it a little more time */
                        bool fired = false;
                        struct event *t = evtimer_new(base, on_wait, &fired);
                        if (!t || evtimer_add_usec(t, RUNTIME_CONFIG_RETRY_USEC) < 0) {
                                if (t)
                                        event_free(t);
                                free(a.message);
                                cri_client_free(cri);
                                return -ENOMEM;
                        }
                        run_until(base, &fired);
                        event_free(t);
                }
        }
        cri_client_free(cri);
        if (a.r < 0 && a.grpc_status == GRPC_UNIMPLEMENTED)
                log_info("CRI implementation should be updated to support RuntimeConfig. Falling back to using "
                         "cgroupDriver from kubelet config.");
        else if (a.r < 0)
                log_warning(
                        "cannot get the cgroup driver from the CRI runtime (%s): using cgroupDriver \"%s\" from the "
                        "kubelet config",
                        strna(a.message), strna(o->cgroup_driver));
        free(a.message);
        if (a.r < 0 || !a.has_linux)
                return 0;
        switch (a.driver) {
        case RUNTIME__V1__CGROUP_DRIVER__SYSTEMD:
                r = free_and_strdup(&o->cgroup_driver, "systemd");
                break;
        case RUNTIME__V1__CGROUP_DRIVER__CGROUPFS:
                r = free_and_strdup(&o->cgroup_driver, "cgroupfs");
                break;
        default:
                return ck_error_set(ret_error, -EINVAL, "runtime returned an unknown cgroup driver %d", a.driver);
        }
        if (r < 0)
                return -ENOMEM;
        log_info("Using cgroup driver setting received from the CRI runtime: cgroupDriver=\"%s\"", o->cgroup_driver);
        return 0;
}
