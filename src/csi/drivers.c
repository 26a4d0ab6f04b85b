/* SPDX-License-Identifier: Apache-2.0 */
/* The registered CSI drivers: see drivers.h. */

#include "csi/drivers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/list.h"
#include "basic/error.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "csi/csi.h"

struct driver {
        struct driver *prev, *next; /* in d->list, or in d->zombies once buried */
        struct csi_drivers *d;
        char *name, *endpoint, *version;
        struct csi_client *client;
        bool registered; /* NodeGetInfo answered */
        bool caps_known;
        struct csi_node_caps caps;
        /* the registration in flight */
        csi_drivers_done_t done;
        void *done_data;
};

struct csi_drivers {
        struct event_base *base;
        uint64_t timeout_usec;
        struct csi_nodeinfo *ni;
        csi_drivers_changed_t changed;
        void *userdata;
        struct driver *list;
        struct driver *zombies; /* unlinked inside their own client's callback: freed from reaper */
        struct event *reaper;
};

static struct driver *find(const struct csi_drivers *d, const char *name) {
        for (struct driver *x = d->list; x; x = x->next)
                if (streq(x->name, name))
                        return x;
        return NULL;
}

static void driver_unlink(struct driver *x) {
        DLIST_REMOVE(x->d->list, x);
}

static void driver_free(struct driver *x) {
        x->client = csi_client_free(x->client); /* a NodeGetInfo in flight ends now, with Canceled */
        free(x->name);
        free(x->endpoint);
        free(x->version);
        free(x);
}

static void driver_unlink_free(struct driver *x) {
        driver_unlink(x);
        driver_free(x);
}

static void reap(evutil_socket_t fd, short what, void *userdata) {
        struct csi_drivers *d = userdata;
        while (d->zombies) {
                struct driver *x = d->zombies;
                DLIST_REMOVE(d->zombies, x);
                driver_free(x);
        }
}

/* unlink now, free later: we are inside a callback of its client */
static void driver_bury(struct driver *x) {
        struct csi_drivers *d = x->d;
        driver_unlink(x);
        DLIST_PREPEND(d->zombies, x);
        event_active(d->reaper, EV_TIMEOUT, 0);
}

int csi_drivers_new(struct event_base *base, uint64_t timeout_usec, struct csi_nodeinfo *ni,
                    csi_drivers_changed_t changed, void *userdata, struct csi_drivers **ret) {
        struct csi_drivers *d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        *d = (struct csi_drivers) {
                .base = base, .timeout_usec = timeout_usec, .ni = ni, .changed = changed, .userdata = userdata
        };
        d->reaper = event_new(base, -1, 0, reap, d);
        if (!d->reaper) {
                free(d);
                return -ENOMEM;
        }
        *ret = d;
        return 0;
}

struct csi_drivers *csi_drivers_free(struct csi_drivers *d) {
        if (!d)
                return NULL;
        while (d->list) {
                struct driver *x = d->list;
                x->done = NULL; /* shutting down: nobody to tell */
                driver_unlink_free(x);
        }
        reap(-1, 0, d);
        event_free(d->reaper);
        free(d);
        return NULL;
}

int csi_drivers_validate(struct csi_drivers *d, const char *name, const char *endpoint, char *const *versions,
                         struct ck_error **ret_error) {
        _cleanup_free_ char *joined = strv_join((char **) versions, ","), *highest = NULL;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        struct driver *x;

        log_info("kubernetes.io/csi: Trying to validate a new CSI Driver with name: %s endpoint: %s versions: %s", name,
                 endpoint, strempty(joined));
        if (!versions || !versions[0])
                return ck_error_set(ret_error, -EINVAL,
                                    "validation failed for CSI Driver %s at endpoint %s: kubernetes.io/csi: "
                                    "ValidatePlugin for CSI driver \"%s\" failed. Plugin returned an empty list for "
                                    "supported versions",
                                    name, endpoint, name);
        if (csi_highest_supported_version(versions, &highest, &why) < 0)
                return ck_error_set(ret_error, -EINVAL,
                                    "validation failed for CSI Driver %s at endpoint %s: kubernetes.io/csi: "
                                    "ValidatePlugin for CSI driver \"%s\" failed. None of the versions specified "
                                    "[%s] are supported. err=%s",
                                    name, endpoint, name, strempty(joined), ck_error_message(why));
        x = find(d, name);
        if (x && x->registered && csi_version_compare(x->version, highest) >= 0)
                return ck_error_set(ret_error, -EINVAL,
                                    "validation failed for CSI Driver %s at endpoint %s: kubernetes.io/csi: "
                                    "ValidatePlugin for CSI driver \"%s\" failed. Another driver with the same name "
                                    "is already registered with a higher supported version: \"%s\"",
                                    name, endpoint, name, x->version);
        return 0;
}

static void on_node_info(const struct csi_reply *reply, void *userdata) {
        struct driver *x = userdata;
        struct csi_drivers *d = x->d;
        csi_drivers_done_t done = x->done;
        void *done_data = x->done_data;

        x->done = NULL;
        if (reply->r < 0 || isempty(reply->node_id)) {
                _cleanup_free_ char *msg = strdup(reply->r < 0 ? reply->message
                                                               : "error adding CSI driver node info: driverNodeID must "
                                                                 "not be empty");
                int r = reply->r < 0 ? reply->r : -EINVAL;

                log_warning("Error calling CSI NodeGetInfo(): %s", strna(msg));
                driver_bury(x); /* unregisterDriver */
                if (done)
                        done(r, msg, done_data);
                return;
        }
        x->registered = true;
        log_info("kubernetes.io/csi: driver %s registered at %s (node ID %s, version %s)", x->name, x->endpoint,
                 reply->node_id, x->version);
        if (d->ni)
                (void) csi_nodeinfo_install(d->ni, x->name, reply->node_id, reply->max_volumes_per_node,
                                            reply->topology);
        if (done)
                done(0, NULL, done_data);
        if (d->changed)
                d->changed(x->name, true, d->userdata);
}

int csi_drivers_register(struct csi_drivers *d, const char *name, const char *endpoint, char *const *versions,
                         csi_drivers_done_t done, void *userdata) {
        _cleanup_ck_error_ struct ck_error *why = NULL;
        _cleanup_free_ char *highest = NULL;
        struct driver *x, *old;
        int r;

        log_info("kubernetes.io/csi: Register new plugin with name: %s at endpoint: %s", name, endpoint);
        r = csi_highest_supported_version(versions, &highest, &why);
        if (r < 0)
                return r;
        old = find(d, name);
        if (old) {
                if (old->done) {
                        csi_drivers_done_t od = old->done;
                        old->done = NULL;
                        od(-ECANCELED, "replaced by a newer registration", old->done_data);
                        old = find(d, name); /* the callback may have changed the list */
                }
                if (old)
                        driver_unlink_free(old);
        }
        x = calloc(1, sizeof(*x));
        if (!x)
                return -ENOMEM;
        x->d = d;
        x->name = strdup(name);
        x->endpoint = strdup(endpoint);
        x->version = TAKE_PTR(highest);
        if (!x->name || !x->endpoint) {
                free(x->name);
                free(x->endpoint);
                free(x->version);
                free(x);
                return -ENOMEM;
        }
        DLIST_PREPEND(d->list, x);
        r = csi_client_new(d->base, endpoint, d->timeout_usec, &x->client);
        if (r < 0) {
                driver_unlink_free(x);
                return r;
        }
        x->done = done;
        x->done_data = userdata;
        r = csi_node_get_info(x->client, on_node_info, x);
        if (r < 0) {
                x->done = NULL;
                driver_unlink_free(x);
                return r;
        }
        return 0;
}

void csi_drivers_deregister(struct csi_drivers *d, const char *name) {
        struct driver *x = find(d, name);
        bool was_registered;

        log_info("kubernetes.io/csi: registrationHandler.DeRegisterPlugin request for plugin %s", name);
        if (!x)
                return;
        was_registered = x->registered;
        if (x->done) {
                csi_drivers_done_t od = x->done;
                x->done = NULL;
                od(-ECANCELED, "the plugin went away", x->done_data);
                x = find(d, name);
                if (!x)
                        return;
        }
        driver_unlink_free(x);
        if (d->ni)
                (void) csi_nodeinfo_uninstall(d->ni, name);
        if (was_registered && d->changed)
                d->changed(name, false, d->userdata);
}

struct csi_client *csi_drivers_client(struct csi_drivers *d, const char *name, struct ck_error **ret_error) {
        struct driver *x = d && name ? find(d, name) : NULL;

        if (!x || !x->registered) {
                (void) ck_error_set(ret_error, -ENOENT,
                                    "driver name %s not found in the list of registered CSI drivers", strna(name));
                return NULL;
        }
        return x->client;
}

bool csi_drivers_caps(struct csi_drivers *d, const char *name, struct csi_node_caps *ret) {
        struct driver *x = d && name ? find(d, name) : NULL;

        if (!x || !x->caps_known)
                return false;
        *ret = x->caps;
        return true;
}

void csi_drivers_set_caps(struct csi_drivers *d, const char *name, const struct csi_node_caps *caps) {
        struct driver *x = d && name ? find(d, name) : NULL;

        if (!x)
                return;
        x->caps = *caps;
        x->caps_known = true;
}
