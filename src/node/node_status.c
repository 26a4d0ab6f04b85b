/* SPDX-License-Identifier: Apache-2.0 */
/* The node's status, as upstream's nodestatus setters compute it. */
#include "node/node_status.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apis/pod.h"
#include "basic/error.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"

/* eviction-hard defaults (memory.available<100Mi, nodefs.available<10%) come off allocatable, as upstream */
#define EVICTION_MEMORY_BYTES (100LL * 1024 * 1024)
#define EVICTION_NODEFS_PERCENT 10

static char *bytes_quantity(int64_t b) {
        char *s = NULL;
        if (b < 0)
                b = 0;
        if (b % 1024 == 0)
                (void) asprintf(&s, "%" PRId64 "Ki", b / 1024);
        else
                (void) asprintf(&s, "%" PRId64, b);
        return s;
}

static char *cpu_quantity(int64_t milli) {
        char *s = NULL;
        if (milli < 0)
                milli = 0;
        if (milli % 1000 == 0)
                (void) asprintf(&s, "%" PRId64, milli / 1000);
        else
                (void) asprintf(&s, "%" PRId64 "m", milli);
        return s;
}

int node_parse_reserved(const char *s, int64_t *ret_cpu_milli, int64_t *ret_memory_bytes, int64_t *ret_storage_bytes,
                        struct ck_error **ret_error) {
        _cleanup_free_ char *copy = s ? strdup(s) : NULL;
        int64_t cpu = 0, mem = 0, storage = 0;
        char *save = NULL;

        if (isempty(s)) {
                *ret_cpu_milli = *ret_memory_bytes = *ret_storage_bytes = 0;
                return 0;
        }
        if (!copy)
                return -ENOMEM;
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(item, '=');
                struct quantity q;

                if (!eq)
                        return ck_error_set(ret_error, -EINVAL, "invalid reserved resource \"%s\": want name=quantity",
                                            item);
                *eq = '\0';
                if (quantity_parse(eq + 1, &q) < 0 || q.milli < 0)
                        return ck_error_set(ret_error, -EINVAL, "invalid quantity \"%s\" for reserved %s", eq + 1,
                                            item);
                if (streq(item, "cpu"))
                        cpu = q.milli;
                else if (streq(item, "memory"))
                        mem = q.value;
                else if (streq(item, "ephemeral-storage"))
                        storage = q.value;
                else if (!streq(item, "pid")) {
                        quantity_done(&q);
                        return ck_error_set(ret_error, -EINVAL, "unsupported reserved resource \"%s\"", item);
                }
                quantity_done(&q);
        }
        *ret_cpu_milli = cpu;
        *ret_memory_bytes = mem;
        *ret_storage_bytes = storage;
        return 0;
}

void node_allocatable(const struct node_status_input *in, int64_t *ret_cpu_milli, int64_t *ret_memory_bytes,
                      int64_t *ret_storage_bytes) {
        int64_t kc = 0, km = 0, ks = 0, sc = 0, sm = 0, ss = 0;
        int64_t storage = (int64_t) in->ephemeral_storage_bytes;

        (void) node_parse_reserved(in->kube_reserved, &kc, &km, &ks, NULL);
        (void) node_parse_reserved(in->system_reserved, &sc, &sm, &ss, NULL);
        int64_t mem_capacity = (int64_t) in->machine->memory_capacity;
        int64_t ev_mem = EVICTION_MEMORY_BYTES, ev_storage = storage * EVICTION_NODEFS_PERCENT / 100;

        if (in->eviction_set) {
                ev_mem = in->eviction_memory_fraction > 0
                                 ? (int64_t) ((double) mem_capacity * (double) in->eviction_memory_fraction)
                                 : in->eviction_memory_bytes;
                ev_storage = in->eviction_storage_fraction > 0
                                     ? (int64_t) ((double) storage * (double) in->eviction_storage_fraction)
                                     : in->eviction_storage_bytes;
        }
        *ret_cpu_milli = MAX((int64_t) in->machine->num_cores * 1000 - kc - sc, (int64_t) 0);
        *ret_memory_bytes = MAX(mem_capacity - km - sm - ev_mem, (int64_t) 0);
        *ret_storage_bytes = MAX(storage - ks - ss - ev_storage, (int64_t) 0);
}

static json_t *resources(const struct node_status_input *in, bool allocatable) {
        int64_t cpu = (int64_t) in->machine->num_cores * 1000, mem = (int64_t) in->machine->memory_capacity;
        int64_t storage = (int64_t) in->ephemeral_storage_bytes;
        _cleanup_free_ char *c = NULL, *m = NULL, *e = NULL;
        char pods[32];

        int64_t huge = 0;

        if (allocatable)
                node_allocatable(in, &cpu, &mem, &storage);
        /* setters.go MachineInfo: each huge page size's pages are capacity of their own, and come off the allocatable
         * memory */
        for (size_t i = 0; i < in->machine->n_hugepages; i++)
                huge += (int64_t) (in->machine->hugepages[i].page_size_kb * 1024 * in->machine->hugepages[i].num_pages);
        if (allocatable)
                mem = MAX(mem - huge, (int64_t) 0);
        c = cpu_quantity(cpu);
        m = bytes_quantity(mem);
        e = bytes_quantity(storage);
        snprintf(pods, sizeof(pods), "%d", in->max_pods);
        json_t *r = json_pack("{s:s?, s:s?, s:s?, s:s}", "cpu", c, "memory", m, "ephemeral-storage", e, "pods", pods);
        /* cadvisor's CapacityFromMachineInfo: hugepages-<size> as a quantity of bytes (BinarySI) */
        for (size_t i = 0; r && i < in->machine->n_hugepages; i++) {
                const struct hugepages_info *h = &in->machine->hugepages[i];
                _cleanup_free_ char *size = quantity_format_int((int64_t) h->page_size_kb * 1024, true),
                                    *total = quantity_format_int((int64_t) (h->page_size_kb * 1024 * h->num_pages),
                                                                 true);
                char name[64];

                if (!size || !total) {
                        json_decref(r);
                        return NULL;
                }
                snprintf(name, sizeof(name), "hugepages-%s", size);
                json_object_set_new(r, name, json_string(total));
        }
        /* device plugin resources (setters.go MachineInfo: capacity from the device manager, allocatable its
         * healthy devices) */
        for (size_t i = 0; r && i < in->n_extended; i++) {
                char n[32];
                snprintf(n, sizeof(n), "%" PRId64,
                         allocatable ? in->extended[i].allocatable : in->extended[i].capacity);
                json_object_set_new(r, in->extended[i].name, json_string(n));
        }
        return r;
}

static const json_t *previous_condition(const json_t *previous, const char *type) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(previous, "conditions"), i, c)
                if (streq_ptr(json_string_value(json_object_get(c, "type")), type))
                        return c;
        return NULL;
}

static json_t *condition(const struct node_status_input *in, const char *type, bool status, const char *reason,
                         const char *message) {
        const json_t *prev = previous_condition(in->previous, type);
        const char *st = status ? "True" : "False";
        char now[64];
        const char *transition = NULL;

        format_rfc3339((uint64_t) in->now_usec, now, sizeof(now));
        if (prev && streq_ptr(json_string_value(json_object_get(prev, "status")), st))
                transition = json_string_value(json_object_get(prev, "lastTransitionTime"));
        return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", type, "status", st, "lastHeartbeatTime", now,
                         "lastTransitionTime", transition ? transition : now, "reason", reason, "message", message);
}

static json_t *images_json(const struct node_status_input *in) {
        json_auto_t *a = json_array();
        /* upstream sorts by size, largest first, and reports at most nodeStatusMaxImages (50) */
        _cleanup_free_ size_t *order = calloc(in->n_images + 1, sizeof(size_t));

        if (!a || !order)
                return NULL;
        for (size_t i = 0; i < in->n_images; i++)
                order[i] = i;
        for (size_t i = 1; i < in->n_images; i++)
                for (size_t j = i; j > 0 && in->images[order[j]].size_bytes > in->images[order[j - 1]].size_bytes;
                     j--) {
                        size_t t = order[j];
                        order[j] = order[j - 1];
                        order[j - 1] = t;
                }
        for (size_t k = 0; k < in->n_images && k < 50; k++) {
                const struct node_image *im = &in->images[order[k]];
                json_t *names = json_array();
                for (char **n = im->names; n && *n; n++)
                        json_array_append_new(names, json_string(*n));
                json_array_append_new(a, json_pack("{s:o, s:I}", "names", names, "sizeBytes",
                                                   (json_int_t) im->size_bytes));
        }
        return TAKE_PTR(a);
}

int node_status_build(const struct node_status_input *in, json_t **ret) {
        const struct machine_info *mi = in->machine;
        bool ready = in->runtime_ready && in->network_ready && !in->shutting_down;
        json_t *st;

        st = json_pack("{s:o, s:o, s:[o, o, o, o], s:[{s:s, s:s}, {s:s, s:s}], s:{s:{s:i}}, "
                       "s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}, s:o}",
                       "capacity", resources(in, false), "allocatable", resources(in, true), "conditions",
                       in->memory_pressure ? condition(in, "MemoryPressure", true, "KubeletHasInsufficientMemory",
                                                       "kubelet has insufficient memory available")
                                           : condition(in, "MemoryPressure", false, "KubeletHasSufficientMemory",
                                                       "kubelet has sufficient memory available"),
                       in->disk_pressure ? condition(in, "DiskPressure", true, "KubeletHasDiskPressure",
                                                     "kubelet has disk pressure")
                                         : condition(in, "DiskPressure", false, "KubeletHasNoDiskPressure",
                                                     "kubelet has no disk pressure"),
                       in->pid_pressure ? condition(in, "PIDPressure", true, "KubeletHasInsufficientPID",
                                                    "kubelet has insufficient PID available")
                                        : condition(in, "PIDPressure", false, "KubeletHasSufficientPID",
                                                    "kubelet has sufficient PID available"),
                       condition(in, "Ready", ready, ready ? "KubeletReady" : "KubeletNotReady",
                                 ready ? "kubelet is posting ready status" : strempty(in->runtime_message)),
                       "addresses", "type", "InternalIP", "address", strempty(in->node_ip), "type", "Hostname",
                       "address", strempty(in->hostname), "daemonEndpoints", "kubeletEndpoint", "Port",
                       in->kubelet_port, "nodeInfo", "machineID", strempty(mi->machine_id), "systemUUID",
                       strempty(mi->system_uuid), "bootID", strempty(mi->boot_id), "kernelVersion",
                       strempty(mi->kernel_version), "osImage", strempty(mi->os_image), "containerRuntimeVersion",
                       strempty(in->runtime_version), "kubeletVersion", strempty(in->kubelet_version),
                       "operatingSystem", "linux", "architecture", strempty(mi->architecture), "images",
                       images_json(in));
        if (!st)
                return -ENOMEM;
        /* volumesInUse (setVolumesInUse): the list when there is one; null once to clear one sent before, since the
         * status goes out as a strategic merge patch */
        if (in->volumes_in_use && in->volumes_in_use[0]) {
                json_t *l = json_array();
                for (size_t i = 0; l && in->volumes_in_use[i]; i++)
                        json_array_append_new(l, json_string(in->volumes_in_use[i]));
                if (!l || json_object_set_new(st, "volumesInUse", l) < 0) {
                        json_decref(st);
                        return -ENOMEM;
                }
        } else if (json_array_size(json_object_get(in->previous, "volumesInUse")) > 0 &&
                   json_object_set_new(st, "volumesInUse", json_null()) < 0) {
                json_decref(st);
                return -ENOMEM;
        }
        /* runtimeHandlers and features (upstream's RuntimeHandlers and NodeFeatures setters) */
        if (in->n_runtime_handlers > 0) {
                json_t *l = json_array();
                for (size_t i = 0; l && i < in->n_runtime_handlers; i++) {
                        const struct node_runtime_handler *h = &in->runtime_handlers[i];
                        if (json_array_append_new(l, json_pack("{s:s, s:{s:b, s:b}}", "name", strempty(h->name),
                                                               "features", "recursiveReadOnlyMounts",
                                                               h->recursive_read_only_mounts, "userNamespaces",
                                                               h->user_namespaces)) < 0)
                                json_decref(TAKE_PTR(l));
                }
                if (!l || json_object_set_new(st, "runtimeHandlers", l) < 0) {
                        json_decref(st);
                        return -ENOMEM;
                }
        }
        if (in->has_features &&
            json_object_set_new(st, "features",
                                json_pack("{s:b}", "supplementalGroupsPolicy", in->supplemental_groups_policy)) < 0) {
                json_decref(st);
                return -ENOMEM;
        }
        /* declaredFeatures (upstream sets the list when it has one) */
        if (in->n_declared_features > 0) {
                json_t *l = json_array();
                for (size_t i = 0; l && i < in->n_declared_features; i++)
                        if (json_array_append_new(l, json_string(in->declared_features[i])) < 0)
                                json_decref(TAKE_PTR(l));
                if (!l || json_object_set_new(st, "declaredFeatures", l) < 0) {
                        json_decref(st);
                        return -ENOMEM;
                }
        }
        *ret = st;
        return 0;
}

json_t *node_status_without_heartbeats(const json_t *status) {
        json_t *copy = json_deep_copy(status);
        size_t i;
        json_t *c;

        if (!copy)
                return NULL;
        json_array_foreach(json_object_get(copy, "conditions"), i, c)
                json_object_del(c, "lastHeartbeatTime");
        return copy;
}

/* the label keys in the kubernetes.io and k8s.io namespaces that a kubelet may set on its own Node (upstream's
 * kubeletapis.KubeletLabels and KubeletLabelNamespaces, which the NodeRestriction admission plugin enforces) */
static const char *const kubelet_labels[] = {
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/instance-type",
        "beta.kubernetes.io/os",
        "failure-domain.beta.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "kubernetes.io/arch",
        "kubernetes.io/hostname",
        "kubernetes.io/os",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
        NULL,
};
static const char *const kubelet_label_namespaces[] = { "kubelet.kubernetes.io", "node.kubernetes.io", NULL };

/* whether the prefix of key (before the first '/') is ns or a subdomain of it */
static bool label_in_namespace(const char *key, const char *ns) {
        const char *slash = strchr(key, '/');
        size_t n, l = strlen(ns);

        if (!slash)
                return false;
        n = (size_t) (slash - key);
        return (n == l && strneq(key, ns, l)) || (n > l && key[n - l - 1] == '.' && strneq(key + n - l, ns, l));
}

bool node_label_is_kubelet_owned(const char *key) {
        for (const char *const *k = kubelet_labels; *k; k++)
                if (streq(key, *k))
                        return true;
        for (const char *const *ns = kubelet_label_namespaces; *ns; ns++)
                if (label_in_namespace(key, *ns))
                        return true;
        return false;
}

static bool label_is_kubernetes(const char *key) {
        return label_in_namespace(key, "kubernetes.io") || label_in_namespace(key, "k8s.io");
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* upstream's ValidateKubeletFlags: --node-labels in the kubernetes.io and k8s.io namespaces must be ones the
 * kubelet may set (NodeRestriction would refuse the Node otherwise) */
static int check_kubelet_labels(json_t *labels, struct ck_error **ret_error) {
        _cleanup_free_ char *unknown = NULL, *allowed = NULL, *prefixes = NULL;
        _cleanup_free_ const char **keys = NULL;
        const char *key;
        json_t *v;
        size_t n = 0;

        keys = calloc(json_object_size(labels) + 1, sizeof(*keys));
        if (!keys)
                return -ENOMEM;
        json_object_foreach(labels, key, v)
                if (label_is_kubernetes(key) && !node_label_is_kubelet_owned(key))
                        keys[n++] = key;
        if (n == 0)
                return 0;
        qsort(keys, n, sizeof(*keys), cmp_str);
        unknown = strv_join((char *const *) keys, " ");
        allowed = strv_join((char *const *) kubelet_labels, ", ");
        prefixes = strv_join((char *const *) kubelet_label_namespaces, ", ");
        if (!unknown || !allowed || !prefixes)
                return -ENOMEM;
        return ck_error_set(ret_error, -EINVAL,
                            "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [%s]\n"
                            "--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix (%s) "
                            "or be in the specifically allowed set (%s)",
                            unknown, prefixes, allowed);
}

int node_object_build(const struct node_status_input *in, const char *node_labels, const char *taints, json_t **ret,
                      struct ck_error **ret_error) {
        _cleanup_free_ char *lcopy = node_labels ? strdup(node_labels) : NULL, *tcopy = taints ? strdup(taints) : NULL;
        const char *arch = strempty(in->machine->architecture);
        json_auto_t *labels = NULL, *taint_list = NULL, *status = NULL, *node = NULL;
        char *save = NULL;
        int r;

        labels = json_pack("{s:s, s:s, s:s, s:s, s:s}", "kubernetes.io/hostname", in->hostname, "kubernetes.io/os",
                           "linux", "kubernetes.io/arch", arch, "beta.kubernetes.io/os", "linux",
                           "beta.kubernetes.io/arch", arch);
        taint_list = json_array();
        if (!labels || !taint_list)
                return -ENOMEM;
        for (char *item = lcopy ? strtok_r(lcopy, ",", &save) : NULL; item; item = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(item, '=');
                const char *why;
                if (!eq)
                        return ck_error_set(ret_error, -EINVAL, "--node-labels: invalid label \"%s\"%s: want key=value",
                                            item, "");
                *eq = '\0';
                if ((why = validate_qualified_name(item)) || (why = validate_label_value(eq + 1)))
                        return ck_error_set(ret_error, -EINVAL, "--node-labels: invalid label \"%s\": %s", item, why);
                json_object_set_new(labels, item, json_string(eq + 1));
        }
        r = check_kubelet_labels(labels, ret_error);
        if (r < 0)
                return r;
        save = NULL;
        for (char *item = tcopy ? strtok_r(tcopy, ",", &save) : NULL; item; item = strtok_r(NULL, ",", &save)) {
                char *colon = strrchr(item, ':'), *eq;
                json_t *t;
                if (!colon || (!streq(colon + 1, "NoSchedule") && !streq(colon + 1, "PreferNoSchedule") &&
                               !streq(colon + 1, "NoExecute"))) {
                        return ck_error_set(ret_error, -EINVAL,
                                            "--register-with-taints: invalid taint \"%s\"%s: want "
                                            "key=value:NoSchedule|PreferNoSchedule|NoExecute",
                                            item, "");
                }
                *colon = '\0';
                eq = strchr(item, '=');
                if (eq)
                        *eq = '\0';
                if (validate_qualified_name(item)) {
                        return ck_error_set(ret_error, -EINVAL, "--register-with-taints: invalid taint key \"%s\": %s",
                                            item, validate_qualified_name(item));
                }
                t = json_pack("{s:s, s:s}", "key", item, "effect", colon + 1);
                if (eq)
                        json_object_set_new(t, "value", json_string(eq + 1));
                json_array_append_new(taint_list, t);
        }
        r = node_status_build(in, &status);
        if (r < 0)
                return r;
        /* the attach/detach controller attaches this node's volumes (enableControllerAttachDetach, always on) */
        node = json_pack("{s:s, s:s, s:{s:s, s:O, s:{s:s}}, s:{}, s:O}", "kind", "Node", "apiVersion", "v1", "metadata",
                         "name", in->node_name, "labels", labels, "annotations",
                         "volumes.kubernetes.io/controller-managed-attach-detach", "true", "spec", "status", status);
        if (!node)
                return -ENOMEM;
        if (json_array_size(taint_list) > 0)
                json_object_set(json_object_get(node, "spec"), "taints", taint_list);
        *ret = TAKE_PTR(node);
        return 0;
}
