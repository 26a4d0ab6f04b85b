/* SPDX-License-Identifier: Apache-2.0 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "basic/list.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "basic/timer.h"
#include "cm/dra/plugins.h"
#include "cm/dra/plugins-testing.h"
#include "drahealth.pb-c.h"

struct dra_plugin {
        struct dra_plugin *next;
        char *driver, *endpoint;
        const char *service; /* DRA_SERVICE_V1 or DRA_SERVICE_V1BETA1 */
        uint64_t seq;        /* registration order: the highest is the newest */
        struct grpc_client *grpc;
        struct dra_plugins *owner;
        const char *health_service; /* NULL: the plugin serves none */
        struct grpc_call *health;   /* the NodeWatchResources stream, while open */
        struct event *health_retry; /* opens it again */
};

struct outcome {
        struct outcome *next;
        int r;
        char *error;
        void (*done)(int r, const char *error, void *cbdata);
        void *cbdata;
};

struct dra_plugins {
        struct event_base *base;
        struct event *deliver;                    /* runs the outcomes */
        struct outcome *outcomes, *outcomes_last; /* a queue */
        struct dra_plugin *list;
        uint64_t seq;
        void (*changed)(const char *driver, bool registered, void *userdata);
        void *userdata;
        struct dra_health_handler health;
        bool health_set;
};

static struct dra_plugin *plugin_free(struct dra_plugin *pl) {
        if (!pl)
                return NULL;
        grpc_call_cancel(pl->health);
        if (pl->health_retry)
                event_free(pl->health_retry);
        grpc_client_free(pl->grpc);
        free(pl->driver);
        free(pl->endpoint);
        free(pl);
        return NULL;
}

static void outcomes_free(struct outcome *o) {
        for (struct outcome *next; o; o = next) {
                next = o->next;
                free(o->error);
                free(o);
        }
}

static void deliver_outcomes(evutil_socket_t fd, short what, void *userdata) {
        struct dra_plugins *p = userdata;
        struct outcome *list = p->outcomes;
        (void) fd;
        (void) what;

        p->outcomes = p->outcomes_last = NULL;
        for (struct outcome *o = list; o; o = o->next)
                o->done(o->r, o->error, o->cbdata);
        outcomes_free(list);
}

int dra_plugins_new(struct event_base *base, void (*changed)(const char *driver, bool registered, void *userdata),
                    void *userdata, struct dra_plugins **ret) {
        struct dra_plugins *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->base = base;
        p->deliver = event_new(base, -1, 0, deliver_outcomes, p);
        if (!p->deliver) {
                free(p);
                return -ENOMEM;
        }
        p->changed = changed;
        p->userdata = userdata;
        *ret = p;
        return 0;
}

struct dra_plugins *dra_plugins_free(struct dra_plugins *p) {
        if (!p)
                return NULL;
        for (struct dra_plugin *pl = p->list, *next; pl; pl = next) {
                next = pl->next;
                plugin_free(pl);
        }
        outcomes_free(p->outcomes);
        if (p->deliver)
                event_free(p->deliver);
        free(p);
        return NULL;
}

const char *dra_plugins_choose_service(char *const *versions, struct ck_error **ret_error) {
        _cleanup_free_ char *offered = NULL;

        if (strv_length(versions) == 0) {
                ck_error_set(ret_error, -EINVAL, "empty list of supported gRPC services (aka supported versions)");
                return NULL;
        }
        if (strv_contains(versions, DRA_SERVICE_V1))
                return DRA_SERVICE_V1;
        if (strv_contains(versions, DRA_SERVICE_V1BETA1))
                return DRA_SERVICE_V1BETA1;
        offered = strv_join(versions, "\" \"");
        ck_error_set(
                ret_error, -EINVAL,
                "none of services supported by the plugin ([\"%s\"]) are supported by the kubelet ([\"%s\" \"%s\"])",
                offered ?: "", DRA_SERVICE_V1, DRA_SERVICE_V1BETA1);
        return NULL;
}

const char *dra_plugins_health_service(char *const *versions) {
        if (strv_contains(versions, DRA_HEALTH_SERVICE_V1))
                return DRA_HEALTH_SERVICE_V1;
        if (strv_contains(versions, DRA_HEALTH_SERVICE_V1BETA1))
                return DRA_HEALTH_SERVICE_V1BETA1;
        if (strv_contains(versions, DRA_HEALTH_SERVICE_V1ALPHA1))
                return DRA_HEALTH_SERVICE_V1ALPHA1;
        return NULL;
}

void dra_plugins_set_health_handler(struct dra_plugins *p, const struct dra_health_handler *h) {
        p->health = *h;
        p->health_set = true;
}

unsigned dra_plugins_health_streams(const struct dra_plugins *p) {
        unsigned n = 0;
        for (const struct dra_plugin *pl = p->list; pl; pl = pl->next)
                n += pl->health != NULL;
        return n;
}

static void health_open(struct dra_plugin *pl);

static void health_on_message(const ProtobufCMessage *msg, void *userdata) {
        struct dra_plugin *pl = userdata;
        struct dra_plugins *p = pl->owner;

        log_v(4, "DRA driver %s: health update from %s", pl->driver, pl->endpoint);
        p->health.on_message(pl->driver, msg, p->health.userdata);
}

static void health_on_end(const struct grpc_reply *reply, void *userdata) {
        struct dra_plugin *pl = userdata;
        struct dra_plugins *p = pl->owner;

        pl->health = NULL;
        if (reply->r < 0)
                log_v(3,
                      "DRA driver %s: WatchResources health stream of %s ended, will retry: rpc error: code = %s "
                      "desc = %s",
                      pl->driver, pl->endpoint, grpc_code_to_string(reply->grpc_status), reply->message);
        else
                log_v(2, "DRA driver %s: WatchResources health stream of %s has ended", pl->driver, pl->endpoint);
        if (evtimer_add_usec(pl->health_retry, DRA_HEALTH_RETRY_USEC) < 0)
                log_error("DRA driver %s: cannot arm the health stream's retry", pl->driver);
        p->health.on_end(pl->driver, p->health.userdata);
}

static void health_open(struct dra_plugin *pl) {
        Drahealth__V1__NodeWatchResourcesRequest req = DRAHEALTH__V1__NODE_WATCH_RESOURCES_REQUEST__INIT;
        char path[128];
        int r;

        snprintf(path, sizeof(path), "/%s/NodeWatchResources", pl->health_service);
        r = grpc_call_stream(pl->grpc, path, &req.base, &drahealth__v1__node_watch_resources_response__descriptor,
                             health_on_message, health_on_end, pl, &pl->health);
        if (r < 0) {
                pl->health = NULL;
                log_v(3, "DRA driver %s: cannot start the WatchResources health stream of %s, will retry: %s",
                      pl->driver, pl->endpoint, strerror(-r));
                (void) evtimer_add_usec(pl->health_retry, DRA_HEALTH_RETRY_USEC);
                return;
        }
        log_v(4, "DRA driver %s: WatchResources health stream of %s started (%s)", pl->driver, pl->endpoint,
              pl->health_service);
}

static void health_retry(evutil_socket_t fd, short what, void *userdata) {
        (void) fd;
        (void) what;
        health_open(userdata);
}

static size_t driver_count(struct dra_plugins *p, const char *driver) {
        size_t n = 0;
        for (struct dra_plugin *pl = p->list; pl; pl = pl->next)
                if (streq(pl->driver, driver))
                        n++;
        return n;
}

static int check(struct dra_plugins *p, const char *driver, const char *endpoint, char *const *versions,
                 const char **ret_service, struct ck_error **ret_error) {
        struct ck_error *why = NULL;
        const char *service;

        if (!driver || !*driver)
                return ck_error_set(ret_error, -EINVAL, "DRA driver name is empty");
        service = dra_plugins_choose_service(versions, &why);
        if (!service) {
                int r = ck_error_set(ret_error, -EINVAL,
                                     "invalid supported gRPC versions of DRA driver plugin %s at endpoint %s: %s",
                                     driver, endpoint, ck_error_message(why));
                ck_error_free(why);
                return r;
        }
        for (struct dra_plugin *pl = p->list; pl; pl = pl->next)
                if (streq(pl->driver, driver) && streq(pl->endpoint, endpoint))
                        return ck_error_set(ret_error, -EEXIST,
                                            "endpoint %s already registered for DRA driver plugin %s", endpoint,
                                            driver);
        if (driver_count(p, driver) >= DRA_MAX_PLUGINS_PER_DRIVER)
                return ck_error_set(ret_error, -E2BIG, "DRA driver plugin %s: too many plugins (%d)", driver,
                                    DRA_MAX_PLUGINS_PER_DRIVER);
        if (ret_service)
                *ret_service = service;
        return 0;
}

int dra_plugins_validate(struct dra_plugins *p, const char *driver, const char *endpoint, char *const *versions,
                         struct ck_error **ret_error) {
        return check(p, driver, endpoint, versions, NULL, ret_error);
}

int dra_plugins_register(struct dra_plugins *p, const char *driver, const char *endpoint, char *const *versions,
                         struct ck_error **ret_error) {
        const char *service = NULL;
        struct dra_plugin *pl;
        bool first;
        int r;

        r = check(p, driver, endpoint, versions, &service, ret_error);
        if (r < 0)
                return r;
        pl = calloc(1, sizeof(*pl));
        if (!pl || !(pl->driver = strdup(driver)) || !(pl->endpoint = strdup(endpoint))) {
                plugin_free(pl);
                return ck_error_set(ret_error, -ENOMEM, "out of memory");
        }
        pl->service = service;
        r = grpc_client_new(p->base, endpoint, DRA_CLIENT_CALL_TIMEOUT_USEC, &pl->grpc);
        if (r < 0) {
                plugin_free(pl);
                return ck_error_set(ret_error, r, "create gRPC connection to DRA driver %s plugin at endpoint %s: %s",
                                    driver, endpoint, strerror(-r));
        }
        pl->owner = p;
        if (p->health_set && (pl->health_service = dra_plugins_health_service(versions))) {
                pl->health_retry = evtimer_new(p->base, health_retry, pl);
                if (!pl->health_retry) {
                        plugin_free(pl);
                        return ck_error_set(ret_error, -ENOMEM, "out of memory");
                }
        }
        first = driver_count(p, driver) == 0;
        pl->seq = ++p->seq;
        FLIST_PREPEND(p->list, pl);
        log_info("DRA driver %s: plugin at %s registered (%s)", driver, endpoint, service);
        if (pl->health_retry)
                health_open(pl);
        if (first && p->changed)
                p->changed(driver, true, p->userdata);
        return 0;
}

int dra_plugins_register_async(struct dra_plugins *p, const char *driver, const char *endpoint, char *const *versions,
                               void (*done)(int r, const char *error, void *cbdata), void *cbdata) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct outcome *o = calloc(1, sizeof(*o));
        int r;

        if (!o)
                return -ENOMEM;
        r = dra_plugins_register(p, driver, endpoint, versions, &err);
        if (r < 0) {
                log_warning("DRA driver %s: plugin at %s not registered: %s", driver, endpoint, ck_error_message(err));
                o->error = strdup(ck_error_message(err));
        }
        o->r = r;
        o->done = done;
        o->cbdata = cbdata;
        FLIST_APPEND_T(p->outcomes, p->outcomes_last, o);
        event_active(p->deliver, EV_TIMEOUT, 0);
        return 0;
}

void dra_plugins_deregister(struct dra_plugins *p, const char *driver, const char *endpoint) {
        for (struct dra_plugin *pl = p->list, *next; pl; pl = next) {
                next = pl->next;
                if (!streq(pl->driver, driver) || (endpoint && !streq(pl->endpoint, endpoint)))
                        continue;
                FLIST_REMOVE(p->list, pl);
                log_info("DRA driver %s: plugin at %s deregistered", driver, pl->endpoint);
                /* its stream ends with it: the driver's health is no longer known (upstream clears on exit) */
                bool had_health = pl->health != NULL;
                grpc_call_cancel(pl->health);
                pl->health = NULL;
                if (had_health)
                        p->health.on_end(driver, p->health.userdata);
                plugin_free(pl);
                if (driver_count(p, driver) == 0 && p->changed)
                        p->changed(driver, false, p->userdata);
                return;
        }
}

static struct dra_plugin *newest(struct dra_plugins *p, const char *driver) {
        struct dra_plugin *best = NULL;
        for (struct dra_plugin *pl = p->list; pl; pl = pl->next)
                if (streq(pl->driver, driver) && (!best || pl->seq > best->seq))
                        best = pl;
        return best;
}

const char *dra_plugins_endpoint(struct dra_plugins *p, const char *driver, const char **ret_service) {
        struct dra_plugin *pl = newest(p, driver);
        if (!pl)
                return NULL;
        if (ret_service)
                *ret_service = pl->service;
        return pl->endpoint;
}

int dra_plugins_call(struct dra_plugins *p, const char *driver, const char *method, const ProtobufCMessage *req,
                     const ProtobufCMessageDescriptor *resp_desc, grpc_callback_t cb, void *userdata) {
        struct dra_plugin *pl = newest(p, driver);
        char path[256];
        const char *version;

        if (!pl)
                return -ENOENT;
        version = streq(pl->service, DRA_SERVICE_V1) ? "v1" : "v1beta1";
        snprintf(path, sizeof(path), "/k8s.io.kubelet.pkg.apis.dra.%s.DRAPlugin/%s", version, method);
        return grpc_call(pl->grpc, path, req, resp_desc, 0, cb, userdata, NULL);
}
