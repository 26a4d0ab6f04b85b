/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet's storage wiring: the volume manager, the CSI drivers and the plugin registration handlers for CSI
 * and DRA plug-ins, set up at start-up (kubelet_storage_setup) with the callbacks they call back into the pod
 * workers through. */

#include <string.h>

#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/workpool.h"
#include "kubelet/kubelet-internal.h"
#include "kubelet/dra.h"
#include "volumes/volumes.h"

/* ---------------------------------------------------------------- volumes */

/* a pod's volumes may be unmounted once it is not desired and nothing of it is left in the runtime */
static bool volumes_may_unmount(const char *uid, void *userdata) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, uid);

        if (w) /* a pod being deleted is still in the API (desired) but its worker no longer has it */
                return !w->pod && w->runtime_gone;
        /* no worker: a desired pod gets one at the next reconcile, unless it is being deleted, finished before or
         * was rejected */
        for (size_t i = 0; i < k->desired.n; i++) {
                const struct pod *p = k->desired.pods[i];
                if (streq(p->uid, uid))
                        return p->has_deletion_timestamp || kubelet_pod_terminal_in_api(p) ||
                               strv_contains(k->rejected, uid);
        }
        return true;
}

/* the last volume of a terminated pod went: its worker may end */
static void on_volumes_gone(const char *uid, void *userdata) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, uid);

        if (w && !w->pod)
                kubelet_worker_request_sync(w);
}

static void on_volume_event(const char *uid, const char *type, const char *reason, const char *message,
                            void *userdata) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, uid);

        if (w)
                kubelet_worker_event(w, NULL, type, reason, "%s", message);
}

static void on_csi_driver(const char *driver, bool registered, void *userdata) {
        struct kubelet *k = userdata;
        volmgr_driver_changed(k->volumes, driver);
}

static int csi_validate(void *userdata, const char *name, const char *endpoint, char *const *versions,
                        struct ck_error **ret_error) {
        struct kubelet *k = userdata;
        return csi_drivers_validate(k->csi, name, endpoint, versions, ret_error);
}

static int csi_register(void *userdata, const char *name, const char *endpoint, char *const *versions,
                        void (*done)(int r, const char *error, void *cbdata), void *cbdata) {
        struct kubelet *k = userdata;
        return csi_drivers_register(k->csi, name, endpoint, versions, done, cbdata);
}

static void csi_deregister(void *userdata, const char *name) {
        struct kubelet *k = userdata;
        csi_drivers_deregister(k->csi, name);
}

static int dra_validate(void *userdata, const char *name, const char *endpoint, char *const *versions,
                        struct ck_error **ret_error) {
        struct kubelet *k = userdata;
        return dra_plugins_validate(k->dra_plugins, name, endpoint, versions, ret_error);
}

static int dra_register(void *userdata, const char *name, const char *endpoint, char *const *versions,
                        void (*done)(int r, const char *error, void *cbdata), void *cbdata) {
        struct kubelet *k = userdata;
        return dra_plugins_register_async(k->dra_plugins, name, endpoint, versions, done, cbdata);
}

static void dra_deregister(void *userdata, const char *name, const char *endpoint) {
        struct kubelet *k = userdata;
        dra_plugins_deregister(k->dra_plugins, name, endpoint);
}

static void dra_deregister_name(void *userdata, const char *name) {
        dra_deregister(userdata, name, NULL);
}

static char **volumes_in_use(void *userdata) {
        struct kubelet *k = userdata;
        return volmgr_volumes_in_use(k->volumes);
}

static void volumes_reported(char *const *names, void *userdata) {
        struct kubelet *k = userdata;
        volmgr_mark_reported_in_use(k->volumes, names);
}

int kubelet_storage_setup(struct kubelet *k) {
        static const struct pluginmanager_handler csi_handler_template = {
                .type = "CSIPlugin",
                .validate = csi_validate,
                .register_plugin = csi_register,
                .deregister = csi_deregister,
        };
        static const struct pluginmanager_handler dra_handler_template = {
                .type = DRA_PLUGIN_TYPE,
                .validate = dra_validate,
                .register_plugin = dra_register,
                .deregister = dra_deregister_name,
                .deregister_endpoint = dra_deregister,
        };
        const struct kubelet_options *o = k->opts;
        struct pluginmanager_handler h = csi_handler_template, dh = dra_handler_template;
        _cleanup_free_ char *registry = NULL;
        struct volmgr_config vc = {
                .base = k->base,
                .root_dir = o->root_dir,
                .node_name = o->node_name,
                .client = k->client,
                .pod_may_unmount = volumes_may_unmount,
                .pod_changed = on_volumes_gone,
                .event = on_volume_event,
                .userdata = k,
        };
        int r;

        r = csi_nodeinfo_new(k->base, k->client, o->node_name, &k->csi_nodeinfo);
        if (r < 0)
                return r;
        r = csi_drivers_new(k->base, o->csi_request_timeout_usec, k->csi_nodeinfo, on_csi_driver, k, &k->csi);
        if (r < 0)
                return r;
        vc.csi = k->csi;
        r = volmgr_new(&vc, &k->volumes);
        if (r < 0)
                return r;
        r = vol_reaper_new(k->base, o->root_dir, &k->reaper);
        if (r < 0)
                return r;
        r = workpool_new_bounded(k->base, "volume contents", KUBELET_VOLUME_CONTENTS_THREADS,
                                 KUBELET_VOLUME_CONTENTS_THREADS_MAX, &k->pool_contents);
        if (r < 0)
                return r;
        r = volmgr_start(k->volumes);
        if (r < 0)
                return log_error_errno(r, "cannot start the volume manager: %s", strerror(-r));
        if (k->node)
                node_manager_set_volumes(k->node, volumes_in_use, volumes_reported, k);
        if (asprintf(&registry, "%s/plugins_registry", o->root_dir) < 0)
                return -ENOMEM;
        r = pluginmanager_new(k->base, registry, &k->plugins);
        if (r < 0)
                return r;
        h.userdata = k;
        r = pluginmanager_add_handler(k->plugins, &h);
        if (r < 0)
                return r;
        r = dra_plugins_new(k->base, NULL, NULL, &k->dra_plugins);
        if (r < 0)
                return r;
        r = kubelet_dra_setup(k);
        if (r < 0)
                return r;
        dh.userdata = k;
        r = pluginmanager_add_handler(k->plugins, &dh);
        if (r < 0)
                return r;
        return pluginmanager_start(k->plugins);
}
