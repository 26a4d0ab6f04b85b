/* SPDX-License-Identifier: Apache-2.0 */
/* What the HTTP API asks of the kubelet (the kubelet's side of upstream's server.HostInterface, wired to the
 * server by main.c): pods with their live status, the runtime's running pods, container lookups for logs and
 * exec, health and counters. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/strmap.h"
#include "basic/time.h"
#include "kubelet/kubelet-internal.h"
#include "container/labels.h"
#include "credentialprovider/keyring.h"
#include "features/features.h"

static bool spec_has_container(const struct pod *pod, const char *name) {
        return pod_find_container(pod, name) != NULL; /* regular, init or ephemeral */
}

/* The pod object as the source gave it, with the kubelet's view of identity (static pods get their name,
 * namespace and UID here) and the live status. */
static int pod_object_json(struct kubelet *k, struct pod_worker *w, json_t **ret) {
        json_auto_t *obj = NULL;
        json_t *meta, *status = NULL;
        int r;

        obj = w->pod->raw ? json_deep_copy(w->pod->raw) : json_object();
        if (!obj)
                return -ENOMEM;
        if (!json_is_object(json_object_get(obj, "metadata")))
                json_object_set_new(obj, "metadata", json_object());
        meta = json_object_get(obj, "metadata");
        json_object_set_new(obj, "kind", json_string("Pod"));
        json_object_set_new(obj, "apiVersion", json_string("v1"));
        json_object_set_new(meta, "name", json_string(w->pod->name));
        json_object_set_new(meta, "namespace", json_string(w->pod->namespace_));
        json_object_set_new(meta, "uid", json_string(w->pod->uid));
        if (w->pod->annotations.n > 0) {
                json_t *a = json_object();
                for (size_t i = 0; i < w->pod->annotations.n; i++)
                        json_object_set_new(a, w->pod->annotations.keys[i], json_string(w->pod->annotations.values[i]));
                json_object_set_new(meta, "annotations", a);
        }
        if (!json_is_object(json_object_get(obj, "spec")))
                json_object_set_new(obj, "spec", json_object());
        if (!isempty(w->pod->spec.node_name))
                json_object_set_new(json_object_get(obj, "spec"), "nodeName", json_string(w->pod->spec.node_name));
        r = kubelet_worker_status_json(k, w, &status);
        if (r < 0)
                return r;
        json_object_set_new(obj, "status", status);
        *ret = TAKE_PTR(obj);
        return 0;
}

static json_t *pod_list(json_t *items) {
        return json_pack("{s:s, s:s, s:{}, s:o}", "kind", "PodList", "apiVersion", "v1", "metadata", "items", items);
}

/* every pod the kubelet has, as a JSON array of pod objects */
static int pod_objects_json(struct kubelet *k, json_t **ret) {
        json_auto_t *items = json_array();

        if (!items)
                return -ENOMEM;
        for (struct pod_worker *w = k->workers; w; w = w->next) {
                json_t *p;
                int r;
                if (!w->pod)
                        continue;
                r = pod_object_json(k, w, &p);
                if (r < 0)
                        return r;
                json_array_append_new(items, p);
        }
        *ret = TAKE_PTR(items);
        return 0;
}

int kubelet_pods_json(struct kubelet *k, json_t **ret) {
        json_t *items = NULL, *list;
        int r;

        r = pod_objects_json(k, &items);
        if (r < 0)
                return r;
        list = pod_list(items);
        if (!list)
                return -ENOMEM;
        *ret = list;
        return 0;
}

/* GetRunningPods: pods with running containers, as the runtime knows them (name, namespace, uid; containers'
 * name and image) */
int kubelet_running_pods_json(struct kubelet *k, json_t **ret) {
        json_t *items = json_array(), *list;

        if (!items)
                return -ENOMEM;
        for (struct pod_worker *w = k->workers; w; w = w->next) {
                const struct kc_pod_status *st = w->observed;
                json_t *containers = NULL;

                if (!st)
                        continue;
                for (size_t i = 0; i < st->n_containers; i++) {
                        const struct kc_container *c = st->containers[i];
                        if (c->state != KC_CONTAINER_RUNNING)
                                continue;
                        if (!containers)
                                containers = json_array();
                        json_array_append_new(containers,
                                              json_pack("{s:s, s:s}", "name", c->name, "image", strempty(c->image)));
                }
                if (!containers)
                        continue;
                json_array_append_new(items, json_pack("{s:{s:s, s:s, s:s}, s:{s:o}, s:{}}", "metadata", "name",
                                                       strempty(st->name), "namespace", strempty(st->namespace_), "uid",
                                                       st->uid, "spec", "containers", containers, "status"));
        }
        list = pod_list(items);
        if (!list)
                return -ENOMEM;
        *ret = list;
        return 0;
}

int kubelet_lookup_container(struct kubelet *k, const char *ns, const char *pod_name, const char *container,
                             bool previous, struct kc_container **ret, char **ret_pod_uid) {
        for (struct pod_worker *w = k->workers; w; w = w->next) {
                const struct kc_pod_status *st = w->observed;
                bool seen = false;

                if (!w->pod || !streq(w->pod->name, pod_name) || !streq(w->pod->namespace_, ns))
                        continue;
                if (!spec_has_container(w->pod, container))
                        return -ENOENT;
                if (!st)
                        return -ESRCH;
                for (size_t i = 0; i < st->n_containers; i++) {
                        if (!streq(st->containers[i]->name, container))
                                continue;
                        if (previous && !seen) {
                                seen = true;
                                continue;
                        }
                        if (ret_pod_uid) {
                                *ret_pod_uid = strdup(w->uid);
                                if (!*ret_pod_uid)
                                        return -ENOMEM;
                        }
                        return kc_container_copy(st->containers[i], ret);
                }
                return -ESRCH;
        }
        return -ENXIO;
}

bool kubelet_pod_exists(struct kubelet *k, const char *ns, const char *pod_name, char **ret_uid) {
        for (struct pod_worker *w = k->workers; w; w = w->next)
                if (w->pod && streq(w->pod->name, pod_name) && streq(w->pod->namespace_, ns)) {
                        if (ret_uid)
                                *ret_uid = strdup(w->uid);
                        return true;
                }
        return false;
}

int kubelet_pod_sandbox_id(struct kubelet *k, const char *ns, const char *pod_name, char **ret) {
        for (struct pod_worker *w = k->workers; w; w = w->next) {
                const struct kc_pod_status *st = w->observed;
                if (!w->pod || !streq(w->pod->name, pod_name) || !streq(w->pod->namespace_, ns))
                        continue;
                if (!st || st->n_sandboxes == 0 || st->sandboxes[0]->state != KC_SANDBOX_READY)
                        return -ESRCH;
                *ret = strdup(st->sandboxes[0]->id);
                return *ret ? 0 : -ENOMEM;
        }
        return -ENXIO;
}

struct cri_client *kubelet_cri(struct kubelet *k) {
        return k->cri;
}

struct prober *kubelet_prober(struct kubelet *k) {
        return k->prober;
}

struct kube_client *kubelet_kube_client(struct kubelet *k) {
        return k->client;
}

const char *kubelet_pods_cgroup(struct kubelet *k) {
        return k->pods_cgroup;
}

struct stats_provider *kubelet_stats(struct kubelet *k) {
        return k->stats;
}

const struct kubelet_options *kubelet_opts(struct kubelet *k) {
        return k->opts;
}

const struct machine_info *kubelet_machine_info(struct kubelet *k) {
        return &k->machine;
}

const char *kubelet_node_ip(struct kubelet *k) {
        return k->node_ip;
}

/* syncLoopHealthCheck: the loop's last iteration must be recent (2 × syncFrequency, at least 5 minutes) */
int kubelet_sync_loop_health(struct kubelet *k, struct ck_error **ret_error) {
        uint64_t limit = MAX(2 * k->opts->sync_frequency_usec, 300 * USEC_PER_SEC);
        uint64_t last = k->last_loop_usec;

        if (last && now_usec() > last + limit)
                return ck_error_set(ret_error, -ETIMEDOUT, "sync Loop took longer than expected");
        return 0;
}

void kubelet_counts(struct kubelet *k, struct kubelet_counts *ret) {
        size_t sb = 0, rsb = 0, c = 0, rc = 0;

        if (k->pleg)
                pleg_counts(k->pleg, &sb, &rsb, &c, &rc);
        *ret = (struct kubelet_counts) {
                .running_pods = rsb,
                .running_containers = rc,
                .desired_pods = k->desired.n,
                .orphaned_runtime_pods = k->orphaned_runtime_pods,
                .pod_start = &k->pod_start_hist,
                .pleg_relist_duration = k->pleg ? pleg_relist_duration(k->pleg) : NULL,
                .pleg_relist_interval = k->pleg ? pleg_relist_interval(k->pleg) : NULL,
                .cm = &k->cm_metrics,
        };
        cm_metrics_fill_cpu(&k->cm_metrics, k->cpus);
}

size_t kubelet_volume_stats(struct kubelet *k, const char *pod_uid, const struct stats_volume **ret) {
        if (pod_uid)
                return volmgr_pod_volume_stats(k->volumes, pod_uid, ret);
        return volmgr_all_volume_stats(k->volumes, ret);
}

/* "busybox" → "docker.io/library/busybox:latest", as the runtime names the image it resolved */
static char *image_reference(const char *image) {
        _cleanup_free_ char *repo = NULL;
        const char *at = strchr(image, '@'), *slash = strrchr(image, '/'), *colon;
        char *out = NULL;

        repo = cred_image_repository(image);
        if (!repo)
                return NULL;
        if (at) {
                if (asprintf(&out, "%s%s", repo, at) < 0)
                        return NULL;
                return out;
        }
        colon = strrchr(slash ? slash : image, ':');
        if (asprintf(&out, "%s:%s", repo, colon ? colon + 1 : "latest") < 0)
                return NULL;
        return out;
}

void kubelet_foreach_container(struct kubelet *k, void (*cb)(const struct kubelet_container_info *c, void *userdata),
                               void *userdata) {
        for (struct pod_worker *w = k->workers; w; w = w->next) {
                const struct kc_pod_status *st = w->observed;
                if (w->pod) {
                        /* the pod itself, known before its sandbox is (its cgroup is made first) */
                        struct kubelet_container_info info = {
                                .pod_uid = w->uid,
                                .pod_name = w->pod->name,
                                .pod_namespace = w->pod->namespace_,
                                .name = "",
                                .image = "",
                        };
                        cb(&info, userdata);
                }
                if (!st)
                        continue;
                for (size_t i = 0; i < st->n_sandboxes; i++) {
                        const struct kc_sandbox *sb = st->sandboxes[i];
                        struct kubelet_container_info info = {
                                .id = sb->id,
                                .pod_uid = st->uid,
                                .pod_name = sb->name,
                                .pod_namespace = sb->namespace_,
                                .name = "",
                                .image = "",
                                .created_at_nsec = sb->created_at,
                                .sandbox = true,
                        };
                        if (sb->state == KC_SANDBOX_READY)
                                cb(&info, userdata);
                }
                for (size_t i = 0; i < st->n_containers; i++) {
                        const struct kc_container *c = st->containers[i];
                        const struct container *spec = w->pod ? pod_find_container(w->pod, c->name) : NULL;
                        _cleanup_free_ char *image = NULL;
                        struct kubelet_container_info info = {
                                .id = c->id,
                                .pod_uid = st->uid,
                                .pod_name = strmap_get(&c->labels, LABEL_POD_NAME),
                                .pod_namespace = strmap_get(&c->labels, LABEL_POD_NAMESPACE),
                                .name = c->name,
                                .created_at_nsec = c->created_at,
                        };
                        if (c->state != KC_CONTAINER_RUNNING)
                                continue;
                        if (spec)
                                image = image_reference(spec->image);
                        info.image = strempty(image);
                        cb(&info, userdata);
                }
        }
}

/* ---------------------------------------------------------------- the pods API (PodsAPI) */

static int pods_api_pods(void *userdata, json_t **ret) {
        return pod_objects_json(userdata, ret);
}

static int pods_api_pod(void *userdata, const char *uid, json_t **ret) {
        struct kubelet *k = userdata;
        struct pod_worker *w = hashmap_get(&k->workers_by_uid, uid);

        if (!w || !w->pod)
                return -ENOENT;
        return pod_object_json(k, w, ret);
}

static bool pods_api_ready(void *userdata) {
        const struct kubelet *k = userdata;
        return k->config_received; /* upstream's sourcesReady.AllReady() */
}

int kubelet_pods_api_start(struct kubelet *k, struct ck_error **ret_error) {
        _cleanup_free_ char *dir = NULL, *socket = NULL;
        int r;

        if (!feature_enabled(k->opts->feature_gates, "PodsAPI"))
                return 0;
        if (asprintf(&dir, "%s/" PODSAPI_DIR, k->opts->root_dir) < 0 ||
            asprintf(&socket, "%s/" PODSAPI_SOCKET, dir) < 0)
                return -ENOMEM;
        r = mkdir_p(dir, 0750);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot create %s: %s", dir, strerror(-r));
        r = podsapi_server_new(k->base, socket,
                               &(struct podsapi_provider) { .pods_json = pods_api_pods,
                                                            .pod_json = pods_api_pod,
                                                            .ready = pods_api_ready,
                                                            .userdata = k },
                               &k->pods_api);
        if (r < 0)
                return ck_error_set(ret_error, r, "Failed to create listener for the pods API on %s: %s", socket,
                                    strerror(-r));
        log_info("Starting to serve the pods API on %s", socket);
        return 0;
}

void kubelet_pods_api_stop(struct kubelet *k) {
        k->pods_api = podsapi_server_free(k->pods_api);
}
