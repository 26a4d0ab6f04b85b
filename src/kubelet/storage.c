/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet's storage wiring: the volume manager, the CSI drivers and the plugin registration handlers for CSI
 * and DRA plug-ins, set up at start-up (kubelet_storage_setup) with the callbacks they call back into the pod
 * workers through. */

#include <string.h>

#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/workpool.h"
#include "volumemanager/volumemanager.h"
#include "kubelet/kubelet-internal.h"
#include "kubelet/dra.h"
#include "volumes/volumes.h"

/* ---------------------------------------------------------------- volumes */

/* a pod's volumes may be unmounted once it is not desired and nothing of it is left in the runtime, or once it
 * finished for good and was stopped (kubelet_pod_release_volumes) */
static bool volumes_may_unmount(const char *uid, void *userdata) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, uid);

        if (hashmap_contains(&k->released_volumes, uid))
                return true;
        /* a pod being deleted is still in the API (desired) but its worker no longer has it */
        if (w)
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

void kubelet_released_volumes_forget(struct kubelet *k, const char *uid) {
        const char *key = NULL;

        (void) hashmap_remove2(&k->released_volumes, uid, &key);
        free((char *) key);
}

/* a teardown that left something (still mounted, a file it could not remove) is tried again at the pod's next
 * sync, or the next reconcile for a pod without a worker */
static void on_teardown_done(const char *uid, int r, void *userdata) {
        if (r < 0)
                kubelet_released_volumes_forget(userdata, uid);
}

void kubelet_pod_release_volumes(struct kubelet *k, const char *uid) {
        char *key;
        int r;

        if (hashmap_contains(&k->released_volumes, uid))
                return;
        key = strdup(uid);
        if (!key || hashmap_put(&k->released_volumes, key, NULL) < 0) {
                free(key);
                log_error("pod %s: out of memory tearing down its volumes; tried again at its next sync", uid);
                return;
        }
        log_v(3, "pod %s finished: tearing down its volumes", uid);
        /* the volume manager's (PVCs, CSI, NFS) leave its desired state and are unmounted by its reconciler
         * (volumes_may_unmount says yes from now on); the sync's own go on the removal pool */
        volmgr_pod_remove(k->volumes, uid);
        r = vol_reaper_teardown(k->reaper, uid, on_teardown_done, k);
        if (r <= 0) {
                if (r < 0)
                        log_error("pod %s: cannot start tearing down its volumes: %s", uid, strerror(-r));
                /* busy (its directory is being removed) or failed: tried again later */
                kubelet_released_volumes_forget(k, uid);
        }
}

void kubelet_released_volumes_prune(struct kubelet *k) {
        _cleanup_strv_free_ char **gone = NULL;
        const char *uid;

        for (size_t i = 0; hashmap_iterate(&k->released_volumes, &i, &uid, NULL);)
                if (!kubelet_pod_desired(k, uid) && strv_extend(&gone, uid) < 0)
                        break;
        for (size_t j = 0; gone && gone[j]; j++)
                kubelet_released_volumes_forget(k, gone[j]);
}

void kubelet_released_volumes_free(struct kubelet *k) {
        const char *uid;

        for (size_t i = 0; hashmap_iterate(&k->released_volumes, &i, &uid, NULL);)
                free((char *) uid);
        hashmap_done(&k->released_volumes);
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

int kubelet_storage_setup(struct kubelet *k, struct ck_error **ret_error) {
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
                return ck_error_set(ret_error, r, "cannot start the volume manager: %s", strerror(-r));
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
        r = kubelet_dra_setup(k, ret_error);
        if (r < 0)
                return r;
        dh.userdata = k;
        r = pluginmanager_add_handler(k->plugins, &dh);
        if (r < 0)
                return r;
        return pluginmanager_start(k->plugins, ret_error);
}
