/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet's side of its plug-in interfaces: the credential provider plugins, the device manager and the pod
 * resources API are started here, and fed what they need of the kubelet (active pods, the node's extended
 * resources, a device allocation's outcome). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "kubelet/kubelet-internal.h"
#include "kubelet/plugins.h"
#include "kubelet/dra.h"
#include "cm/cpumanager/cpumanager.h"
#include "cm/dra/claims.h"
#include "cm/memorymanager/memorymanager.h"

/* ---------------------------------------------------------------- device manager */

static void on_devices_changed(void *userdata) {
        struct kubelet *k = userdata;

        /* an allocation ended, or the devices changed: pods waiting for admission are looked at again, and the
         * pods holding devices report their health (allocatedResourcesStatus) */
        kubelet_reconcile(k);
        for (struct pod_worker *w = k->workers; w; w = w->next)
                if (w->pod && dm_pod_uses_devices(k->devices, w->pod))
                        kubelet_report_status(k, w);
}

/* the active pods (GetActivePods: every pod the sources want that was not refused, admitted or not yet: after a
 * restart the running ones are only being admitted again) and the admitted ones still running */
struct device_collect {
        const struct devicemanager *m;
        json_t *by_resource; /* resource → [{resourceID, health}] */
        bool oom;
};

static void collect_device(const char *resource, const char *id, int64_t numa, bool has_numa, void *userdata) {
        struct device_collect *d = userdata;
        json_t *list = json_object_get(d->by_resource, resource);

        if (!list && json_object_set_new(d->by_resource, resource, list = json_array()) < 0)
                list = NULL;
        if (!list ||
            json_array_append_new(list, json_pack("{s:s, s:s}", "resourceID", id, "health",
                                                  dm_device_healthy(d->m, resource, id) ? "Healthy" : "Unhealthy")) < 0)
                d->oom = true;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int cmp_resource_id(const void *a, const void *b) {
        return strcmp(json_string_value(json_object_get(*(json_t *const *) a, "resourceID")),
                      json_string_value(json_object_get(*(json_t *const *) b, "resourceID")));
}

json_t *kubelet_allocated_resources_status(struct kubelet *k, const struct pod *pod) {
        json_auto_t *out = NULL;

        bool devices = k->devices && pod && dm_pod_uses_devices(k->devices, pod);

        if (!pod || (!devices && !k->dra_health))
                return NULL;
        out = json_object();
        for (size_t i = 0; out && i < pod->spec.n_containers; i++) {
                json_auto_t *by = json_object(), *list = json_array();
                json_auto_t *claims = kubelet_dra_allocated_resources_status(k, pod, &pod->spec.containers[i]);
                struct device_collect d = { .m = k->devices, .by_resource = by };
                _cleanup_strv_free_ char **names = NULL;
                const char *name;
                json_t *v;

                if (!by || !list)
                        return NULL;
                if (devices)
                        dm_foreach_container_device(k->devices, pod->uid, pod->spec.containers[i].name, collect_device,
                                                    &d);
                if (d.oom)
                        return NULL;
                /* the DRA claims' devices after the device plugins' (the device manager's, then the DRA manager's
                 * UpdateAllocatedResourcesStatus) */
                if (json_object_size(by) == 0) {
                        if (claims && json_object_set(out, pod->spec.containers[i].name, claims) < 0)
                                return NULL;
                        continue;
                }
                json_object_foreach(by, name, v)
                        if (strv_extend(&names, name) < 0)
                                return NULL;
                qsort(names, strv_length(names), sizeof(char *), cmp_str);
                for (char **n = names; *n; n++) {
                        json_t *res = json_deep_copy(json_object_get(by, *n));
                        size_t m = json_array_size(res);
                        _cleanup_free_ json_t **sorted = m ? calloc(m, sizeof(json_t *)) : NULL;
                        json_t *arr = json_array();

                        if (!res || !arr || (m && !sorted)) {
                                json_decref(res);
                                json_decref(arr);
                                return NULL;
                        }
                        for (size_t j = 0; j < m; j++)
                                sorted[j] = json_array_get(res, j);
                        if (m > 1)
                                qsort(sorted, m, sizeof(json_t *), cmp_resource_id);
                        for (size_t j = 0; j < m; j++)
                                (void) json_array_append(arr, sorted[j]);
                        json_decref(res);
                        if (json_array_append_new(list, json_pack("{s:s, s:o}", "name", *n, "resources", arr)) < 0)
                                return NULL;
                }
                if ((claims && json_array_extend(list, claims) < 0) ||
                    json_object_set(out, pod->spec.containers[i].name, list) < 0)
                        return NULL;
        }
        return json_object_size(out) > 0 ? TAKE_PTR(out) : NULL;
}

int kubelet_active_pod_uids(struct kubelet *k, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;

        for (size_t i = 0; i < k->desired.n; i++)
                if (!strv_contains(k->rejected, k->desired.pods[i]->uid) &&
                    strv_extend(&l, k->desired.pods[i]->uid) < 0)
                        return -ENOMEM;
        for (struct pod_worker *w = k->workers; w; w = w->next)
                if (w->pod && !strv_contains(l, w->uid) && strv_extend(&l, w->uid) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

void kubelet_devices_gc(struct kubelet *k) {
        _cleanup_strv_free_ char **active = NULL;

        kubelet_dra_gc(k);
        if (!k->devices || kubelet_active_pod_uids(k, &active) < 0)
                return;
        dm_update_active(k->devices, active, k->config_received);
}

struct extended_builder {
        struct kubelet *k;
        size_t n_admission, n_node;
};

static void add_extended(const struct dm_resource_count *c, void *userdata) {
        struct extended_builder *b = userdata;
        struct kubelet *k = b->k;
        struct admission_extended *na;
        struct node_extended_resource *nn;

        na = reallocarray(k->admission_extended, b->n_admission + 1, sizeof(*na));
        if (!na)
                return;
        k->admission_extended = na;
        nn = reallocarray(k->node_extended, b->n_node + 1, sizeof(*nn));
        if (!nn)
                return;
        k->node_extended = nn;
        nn[b->n_node++] = (struct node_extended_resource) {
                .name = c->name,
                .capacity = c->deleted ? 0 : c->capacity,
                .allocatable = c->deleted ? 0 : c->allocatable,
        };
        if (!c->deleted)
                na[b->n_admission++] = (struct admission_extended) {
                        .name = c->name,
                        .allocatable = dm_admission_allocatable(k->devices, c->name),
                };
}

/* the node's extended resources, as admission and the node status read them (the names are the device
 * manager's, valid until the next call) */
static void refresh_extended(struct kubelet *k) {
        struct extended_builder b = { .k = k };

        if (!k->devices)
                return;
        dm_foreach_resource(k->devices, add_extended, &b);
        k->admission.extended = k->admission_extended;
        k->admission.n_extended = b.n_admission;
        k->n_node_extended = b.n_node;
}

void kubelet_admission_refresh(struct kubelet *k) {
        refresh_extended(k);
}

static void node_extended(void *userdata, const struct node_extended_resource **ret, size_t *ret_n) {
        struct kubelet *k = userdata;

        refresh_extended(k);
        *ret = k->node_extended;
        *ret_n = k->n_node_extended;
}

/* ---------------------------------------------------------------- pod resources */

static void pr_foreach_pod(void *userdata, podresources_pod_cb cb, void *cb_userdata) {
        struct kubelet *k = userdata;

        for (struct pod_worker *w = k->workers; w; w = w->next) {
                const struct pod *p = w->pod;
                _cleanup_free_ const char **names = NULL;
                size_t n = 0;

                if (!p)
                        continue;
                names = calloc(p->spec.n_init_containers + p->spec.n_containers + 1, sizeof(*names));
                if (!names)
                        return;
                /* sidecars first (restartable init containers), then the app containers, as upstream lists them */
                for (size_t i = 0; i < p->spec.n_init_containers; i++)
                        if (container_is_sidecar(&p->spec.init_containers[i]))
                                names[n++] = p->spec.init_containers[i].name;
                for (size_t i = 0; i < p->spec.n_containers; i++)
                        names[n++] = p->spec.containers[i].name;
                cb(&(struct podresources_pod) { .name = p->name,
                                                .namespace_ = p->namespace_,
                                                .uid = p->uid,
                                                .containers = names,
                                                .n_containers = n },
                   cb_userdata);
        }
}

static void pr_container_devices(void *userdata, const char *pod_uid, const char *container, podresources_device_cb cb,
                                 void *cb_userdata) {
        struct kubelet *k = userdata;
        dm_foreach_container_device(k->devices, pod_uid, container, cb, cb_userdata);
}

static void pr_allocatable(void *userdata, podresources_device_cb cb, void *cb_userdata) {
        struct kubelet *k = userdata;
        dm_foreach_allocatable_device(k->devices, cb, cb_userdata);
}

static size_t cpus_to_ids(const struct cpuset *s, int64_t *buf, size_t cap) {
        size_t n = 0;
        CPUSET_FOREACH(c, s) {
                if (n >= cap)
                        break;
                buf[n++] = c;
        }
        return n;
}

static size_t pr_container_cpus(void *userdata, const char *pod_uid, const char *container, int64_t *buf, size_t cap) {
        struct kubelet *k = userdata;
        struct cpuset s = cpumanager_exclusive_cpus(k->cpus, pod_uid, container);
        return cpus_to_ids(&s, buf, cap);
}

static size_t pr_allocatable_cpus(void *userdata, int64_t *buf, size_t cap) {
        struct kubelet *k = userdata;
        struct cpuset s = cpumanager_allocatable(k->cpus);
        return cpus_to_ids(&s, buf, cap);
}

static void pr_container_memory(void *userdata, const char *pod_uid, const char *container, podresources_memory_cb cb,
                                void *cb_userdata) {
        struct kubelet *k = userdata;
        memorymanager_foreach_container_block(k->memory, pod_uid, container, cb, cb_userdata);
}

static void pr_allocatable_memory(void *userdata, podresources_memory_cb cb, void *cb_userdata) {
        struct kubelet *k = userdata;
        memorymanager_foreach_allocatable(k->memory, cb, cb_userdata);
}

struct pr_claims_ctx {
        podresources_claim_cb cb;
        void *cb_userdata;
};

static void pr_claim(const struct dra_claim *claim, void *userdata) {
        struct pr_claims_ctx *c = userdata;
        _cleanup_free_ struct podresources_claim_device *devs = calloc(claim->n_devices ?: 1, sizeof(*devs));

        if (!devs)
                return;
        for (size_t i = 0; i < claim->n_devices; i++)
                devs[i] = (struct podresources_claim_device) {
                        .driver = claim->devices[i].driver,
                        .pool = claim->devices[i].pool,
                        .device = claim->devices[i].device,
                        .share_id = claim->devices[i].share_id,
                        .cdi_ids = (const char *const *) claim->devices[i].cdi_ids,
                };
        c->cb(claim->name, claim->namespace, devs, claim->n_devices, c->cb_userdata);
}

static void pr_container_claims(void *userdata, const char *pod_uid, const char *container, podresources_claim_cb cb,
                                void *cb_userdata) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, pod_uid);
        const struct container *c = NULL;

        if (!w || !w->pod)
                return;
        for (size_t i = 0; i < w->pod->spec.n_init_containers && !c; i++)
                if (streq(w->pod->spec.init_containers[i].name, container))
                        c = &w->pod->spec.init_containers[i];
        for (size_t i = 0; i < w->pod->spec.n_containers && !c; i++)
                if (streq(w->pod->spec.containers[i].name, container))
                        c = &w->pod->spec.containers[i];
        if (c)
                kubelet_dra_foreach_container_claim(k, w->pod, c, pr_claim,
                                                    &(struct pr_claims_ctx) { cb, cb_userdata });
}

/* ---------------------------------------------------------------- start, stop */

int kubelet_plugins_start(struct kubelet *k, struct ck_error **ret_error) {
        const struct kubelet_options *o = k->opts;
        _cleanup_free_ char *dm_dir = NULL, *pr_socket = NULL;
        int r;

        if (!isempty(o->image_credential_provider_config)) {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                r = credprov_new(k->base, o->image_credential_provider_config, o->image_credential_provider_bin_dir,
                                 &k->credprov, &err);
                if (r < 0)
                        return ck_error_set(ret_error, r, "Failed to register CRI auth plugins: %s",
                                            ck_error_message(err));
                log_info("Registered credential provider plugins from %s", o->image_credential_provider_config);
        }
        if (asprintf(&dm_dir, "%s/device-plugins", o->root_dir) < 0 ||
            asprintf(&pr_socket, "%s/pod-resources/kubelet.sock", o->root_dir) < 0)
                return -ENOMEM;
        r = dm_new(k->base, dm_dir, on_devices_changed, k, &k->devices);
        if (r < 0)
                return ck_error_set(ret_error, r, "failed to start the device manager: %s", strerror(-r));
        dm_set_affinity(k->devices, kubelet_device_affinity, k);
        r = podresources_server_new(k->base, pr_socket,
                                    &(struct podresources_provider) {
                                            .foreach_pod = pr_foreach_pod,
                                            .container_devices = pr_container_devices,
                                            .allocatable_devices = pr_allocatable,
                                            .container_cpus = pr_container_cpus,
                                            .allocatable_cpus = pr_allocatable_cpus,
                                            .container_memory = pr_container_memory,
                                            .allocatable_memory = pr_allocatable_memory,
                                            .container_claims = pr_container_claims,
                                            .userdata = k,
                                    },
                                    &k->podresources, ret_error);
        if (r < 0)
                return r;
        if (k->node)
                node_manager_set_extended_source(k->node, node_extended, k);
        return 0;
}

void kubelet_plugins_free(struct kubelet *k) {
        k->podresources = podresources_server_free(k->podresources);
        k->devices = dm_free(k->devices);
        k->credprov = credprov_free(k->credprov);
        free(k->admission_extended);
        k->admission_extended = NULL;
        k->admission.extended = NULL;
        k->admission.n_extended = 0;
        free(k->node_extended);
        k->node_extended = NULL;
}

/* ---------------------------------------------------------------- the container's devices in its CRI config */

static char *dup_str(const char *s) {
        return strdup(strempty(s));
}

/* The device plugins' envs, mounts and devices come before the container's own (the runtime lets a later env of
 * the same name win: the container's), their annotations give way to the kubelet's; their CDI devices are the
 * config's only ones. */
int kubelet_apply_device_options(Runtime__V1__ContainerConfig *cfg, const struct dm_run_options *o) {
        size_t n_env = strv_length(o->env_names), n_ann = strv_length(o->annotation_names);

        if (n_env > 0) {
                Runtime__V1__KeyValue **envs = calloc(cfg->n_envs + n_env, sizeof(*envs));
                if (!envs)
                        return -ENOMEM;
                for (size_t i = 0; i < n_env; i++) {
                        Runtime__V1__KeyValue *kv = malloc(sizeof(*kv));
                        if (!kv) {
                                for (size_t j = 0; j < i; j++)
                                        protobuf_c_message_free_unpacked(&envs[j]->base, NULL);
                                free(envs);
                                return -ENOMEM;
                        }
                        runtime__v1__key_value__init(kv);
                        kv->key = dup_str(o->env_names[i]);
                        kv->value = dup_str(o->env_values[i]);
                        envs[i] = kv;
                }
                memcpy(envs + n_env, cfg->envs, cfg->n_envs * sizeof(*envs));
                free(cfg->envs);
                cfg->envs = envs;
                cfg->n_envs += n_env;
        }
        if (o->n_mounts > 0) {
                Runtime__V1__Mount **mounts = calloc(cfg->n_mounts + o->n_mounts, sizeof(*mounts));
                if (!mounts)
                        return -ENOMEM;
                for (size_t i = 0; i < o->n_mounts; i++) {
                        Runtime__V1__Mount *m = malloc(sizeof(*m));
                        if (!m) {
                                for (size_t j = 0; j < i; j++)
                                        protobuf_c_message_free_unpacked(&mounts[j]->base, NULL);
                                free(mounts);
                                return -ENOMEM;
                        }
                        runtime__v1__mount__init(m);
                        m->container_path = dup_str(o->mounts[i]->container_path);
                        m->host_path = dup_str(o->mounts[i]->host_path);
                        m->readonly = o->mounts[i]->read_only;
                        mounts[i] = m;
                }
                memcpy(mounts + o->n_mounts, cfg->mounts, cfg->n_mounts * sizeof(*mounts));
                free(cfg->mounts);
                cfg->mounts = mounts;
                cfg->n_mounts += o->n_mounts;
        }
        if (o->n_devices > 0) {
                Runtime__V1__Device **devs = reallocarray(cfg->devices, cfg->n_devices + o->n_devices, sizeof(*devs));
                if (!devs)
                        return -ENOMEM;
                cfg->devices = devs;
                for (size_t i = 0; i < o->n_devices; i++) {
                        Runtime__V1__Device *d = malloc(sizeof(*d));
                        if (!d)
                                return -ENOMEM;
                        runtime__v1__device__init(d);
                        d->container_path = dup_str(o->devices[i]->container_path);
                        d->host_path = dup_str(o->devices[i]->host_path);
                        d->permissions = dup_str(o->devices[i]->permissions);
                        devs[cfg->n_devices++] = d;
                }
        }
        /* CDI devices: the runtime resolves each name with its CDI specs (makeCDIDevices) */
        size_t n_cdi = strv_length(o->cdi_devices);
        if (n_cdi > 0) {
                Runtime__V1__CDIDevice **nc = reallocarray(cfg->cdi_devices, cfg->n_cdi_devices + n_cdi, sizeof(*nc));
                if (!nc)
                        return -ENOMEM;
                cfg->cdi_devices = nc;
        }
        for (size_t i = 0; i < n_cdi; i++) {
                Runtime__V1__CDIDevice *d = malloc(sizeof(*d));
                if (!d)
                        return -ENOMEM;
                runtime__v1__cdidevice__init(d);
                d->name = strdup(o->cdi_devices[i]);
                if (!d->name) {
                        free(d);
                        return -ENOMEM;
                }
                cfg->cdi_devices[cfg->n_cdi_devices++] = d;
        }
        for (size_t i = 0; i < n_ann; i++) {
                Runtime__V1__ContainerConfig__AnnotationsEntry **na, *e;
                bool taken = false;
                for (size_t j = 0; j < cfg->n_annotations; j++)
                        taken = taken || streq(cfg->annotations[j]->key, o->annotation_names[i]);
                if (taken)
                        continue;
                na = reallocarray(cfg->annotations, cfg->n_annotations + 1, sizeof(*na));
                if (!na)
                        return -ENOMEM;
                cfg->annotations = na;
                e = malloc(sizeof(*e));
                if (!e)
                        return -ENOMEM;
                runtime__v1__container_config__annotations_entry__init(e);
                e->key = dup_str(o->annotation_names[i]);
                e->value = dup_str(o->annotation_values[i]);
                na[cfg->n_annotations++] = e;
        }
        return 0;
}
