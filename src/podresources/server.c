/* SPDX-License-Identifier: Apache-2.0 */
/* podresources/v1 on the kubelet's loop: the answers are built from the provider and packed at once. */
#include "podresources/server.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "grpc/client.h"
#include "grpc/server.h"
#include "podresources.pb-c.h"

struct podresources_server {
        struct podresources_provider p;
        struct grpc_server *server;
        struct grpc_rate_limit limit; /* DefaultQPS and DefaultBurstTokens */
};

/* ---------------------------------------------------------------- an arena for the answer's messages */

struct arena {
        void **ptrs;
        size_t n;
        bool oom;
        int64_t cpus[PODRESOURCES_CPUS_MAX]; /* scratch for the CPU ids of one container */
};

static void *arena_alloc(struct arena *a, size_t size) {
        void *p, **np;

        if (a->oom)
                return NULL;
        p = calloc(1, size ? size : 1);
        np = p ? reallocarray(a->ptrs, a->n + 1, sizeof(*np)) : NULL;
        if (!np) {
                free(p);
                a->oom = true;
                return NULL;
        }
        a->ptrs = np;
        np[a->n++] = p;
        return p;
}

/* append one pointer to a growing array that the arena owns (it starts NULL) */
static void **arena_push(struct arena *a, void **array, size_t *n, void *item) {
        void **na, **np;
        size_t slot = a->n;

        if (a->oom || !item)
                return array;
        if (array)
                for (slot = 0; slot < a->n && a->ptrs[slot] != array; slot++)
                        ;
        if (array && slot == a->n) {
                a->oom = true; /* not ours: cannot happen */
                return array;
        }
        if (!array) {
                np = reallocarray(a->ptrs, a->n + 1, sizeof(*np));
                if (!np) {
                        a->oom = true;
                        return array;
                }
                a->ptrs = np;
                a->ptrs[a->n] = NULL;
        }
        na = reallocarray(array, *n + 1, sizeof(*na));
        if (!na) {
                a->oom = true;
                return array;
        }
        if (!array)
                a->n++;
        a->ptrs[slot] = na;
        na[(*n)++] = item;
        return na;
}

static char *arena_strdup(struct arena *a, const char *s) {
        char *d = arena_alloc(a, strlen(strempty(s)) + 1);
        if (d)
                strcpy(d, strempty(s));
        return d;
}

static void arena_free(struct arena *a) {
        for (size_t i = 0; i < a->n; i++)
                free(a->ptrs[i]);
        free(a->ptrs);
        *a = (struct arena) {};
}

/* ---------------------------------------------------------------- devices */

struct devices_builder {
        struct arena *a;
        V1__ContainerDevices **v;
        size_t n;
        bool group; /* one entry per (resource, NUMA node) as getContainerDevices; else per device */
};

static V1__TopologyInfo *topology(struct arena *a, int64_t numa) {
        V1__TopologyInfo *t = arena_alloc(a, sizeof(*t));
        V1__NUMANode *node = arena_alloc(a, sizeof(*node));

        if (!t || !node)
                return NULL;
        v1__topology_info__init(t);
        v1__numanode__init(node);
        node->id = numa;
        t->nodes = (V1__NUMANode **) arena_push(a, NULL, &t->n_nodes, node);
        return t;
}

static void add_device(const char *resource, const char *id, int64_t numa, bool has_numa, void *userdata) {
        struct devices_builder *b = userdata;
        V1__ContainerDevices *cd = NULL;

        if (b->group)
                for (size_t i = 0; i < b->n; i++)
                        if (streq(b->v[i]->resource_name, resource) && b->v[i]->topology &&
                            b->v[i]->topology->n_nodes == 1 && b->v[i]->topology->nodes[0]->id == numa)
                                cd = b->v[i];
        if (!cd) {
                cd = arena_alloc(b->a, sizeof(*cd));
                if (!cd)
                        return;
                v1__container_devices__init(cd);
                cd->resource_name = arena_strdup(b->a, resource);
                /* a container's devices always carry their NUMA node (0 without topology), allocatable ones only
                 * when the plugin gave one */
                if (b->group || has_numa)
                        cd->topology = topology(b->a, numa);
                b->v = (V1__ContainerDevices **) arena_push(b->a, (void **) b->v, &b->n, cd);
        }
        cd->device_ids = (char **) arena_push(b->a, (void **) cd->device_ids, &cd->n_device_ids,
                                              arena_strdup(b->a, id));
}

/* ---------------------------------------------------------------- memory */

struct memory_builder {
        struct arena *a;
        V1__ContainerMemory **v;
        size_t n;
};

/* containerMemoryFromBlock: one entry per block, its NUMA nodes as its topology */
static void add_memory(const char *type, uint64_t size, uint64_t numa_mask, void *userdata) {
        struct memory_builder *b = userdata;
        V1__ContainerMemory *cm = arena_alloc(b->a, sizeof(*cm));
        V1__TopologyInfo *t = arena_alloc(b->a, sizeof(*t));

        if (!cm || !t)
                return;
        v1__container_memory__init(cm);
        v1__topology_info__init(t);
        cm->memory_type = arena_strdup(b->a, type);
        cm->size = size;
        for (int i = 0; i < 64; i++) {
                V1__NUMANode *node;
                if (!(numa_mask >> i & 1))
                        continue;
                node = arena_alloc(b->a, sizeof(*node));
                if (!node)
                        return;
                v1__numanode__init(node);
                node->id = i;
                t->nodes = (V1__NUMANode **) arena_push(b->a, (void **) t->nodes, &t->n_nodes, node);
        }
        cm->topology = t;
        b->v = (V1__ContainerMemory **) arena_push(b->a, (void **) b->v, &b->n, cm);
}

/* ---------------------------------------------------------------- handlers */

/* the n CPU ids in a->cpus, copied into the arena */
/* ---------------------------------------------------------------- DRA claims */

struct claims_builder {
        struct arena *a;
        V1__DynamicResource **v;
        size_t n;
};

static void add_claim(const char *claim_name, const char *claim_namespace,
                      const struct podresources_claim_device *devices, size_t n, void *userdata) {
        struct claims_builder *b = userdata;
        V1__DynamicResource *dr = arena_alloc(b->a, sizeof(*dr));

        if (!dr)
                return;
        v1__dynamic_resource__init(dr);
        dr->claim_name = arena_strdup(b->a, claim_name);
        dr->claim_namespace = arena_strdup(b->a, claim_namespace);
        for (size_t i = 0; i < n; i++) {
                V1__ClaimResource *cr = arena_alloc(b->a, sizeof(*cr));
                if (!cr)
                        return;
                v1__claim_resource__init(cr);
                cr->driver_name = arena_strdup(b->a, devices[i].driver);
                cr->pool_name = arena_strdup(b->a, devices[i].pool);
                cr->device_name = arena_strdup(b->a, devices[i].device);
                if (devices[i].share_id)
                        cr->share_id = arena_strdup(b->a, devices[i].share_id);
                for (size_t j = 0; devices[i].cdi_ids && devices[i].cdi_ids[j]; j++) {
                        V1__CDIDevice *cd = arena_alloc(b->a, sizeof(*cd));
                        if (!cd)
                                return;
                        v1__cdidevice__init(cd);
                        cd->name = arena_strdup(b->a, devices[i].cdi_ids[j]);
                        cr->cdi_devices = (V1__CDIDevice **) arena_push(b->a, (void **) cr->cdi_devices,
                                                                        &cr->n_cdi_devices, cd);
                }
                dr->claim_resources = (V1__ClaimResource **) arena_push(b->a, (void **) dr->claim_resources,
                                                                        &dr->n_claim_resources, cr);
        }
        b->v = (V1__DynamicResource **) arena_push(b->a, (void **) b->v, &b->n, dr);
}

static bool cpu_ids(struct arena *a, size_t n, int64_t **ret, size_t *ret_n) {
        int64_t *v;

        if (n == 0)
                return true;
        n = n > PODRESOURCES_CPUS_MAX ? PODRESOURCES_CPUS_MAX : n;
        v = arena_alloc(a, n * sizeof(*v));
        if (!v)
                return false;
        memcpy(v, a->cpus, n * sizeof(*v));
        *ret = v;
        *ret_n = n;
        return true;
}

static V1__PodResources *pod_resources(struct podresources_server *s, struct arena *a,
                                       const struct podresources_pod *p) {
        V1__PodResources *pr = arena_alloc(a, sizeof(*pr));

        if (!pr)
                return NULL;
        v1__pod_resources__init(pr);
        pr->name = arena_strdup(a, p->name);
        pr->namespace_ = arena_strdup(a, p->namespace_);
        for (size_t i = 0; i < p->n_containers; i++) {
                V1__ContainerResources *cr = arena_alloc(a, sizeof(*cr));
                struct devices_builder b = { .a = a, .group = true };
                if (!cr)
                        return NULL;
                v1__container_resources__init(cr);
                cr->name = arena_strdup(a, p->containers[i]);
                s->p.container_devices(s->p.userdata, p->uid, p->containers[i], add_device, &b);
                cr->devices = b.v;
                cr->n_devices = b.n;
                /* the memory manager's blocks */
                if (s->p.container_memory) {
                        struct memory_builder mb = { .a = a };
                        s->p.container_memory(s->p.userdata, p->uid, p->containers[i], add_memory, &mb);
                        cr->memory = mb.v;
                        cr->n_memory = mb.n;
                }
                /* the DRA claims (upstream's GetDynamicResources) */
                if (s->p.container_claims) {
                        struct claims_builder cb = { .a = a };
                        s->p.container_claims(s->p.userdata, p->uid, p->containers[i], add_claim, &cb);
                        cr->dynamic_resources = cb.v;
                        cr->n_dynamic_resources = cb.n;
                }
                /* the CPU manager's exclusive CPUs */
                if (s->p.container_cpus && !cpu_ids(a,
                                                    s->p.container_cpus(s->p.userdata, p->uid, p->containers[i],
                                                                        a->cpus, PODRESOURCES_CPUS_MAX),
                                                    &cr->cpu_ids, &cr->n_cpu_ids))
                        return NULL;
                pr->containers = (V1__ContainerResources **) arena_push(a, (void **) pr->containers, &pr->n_containers,
                                                                        cr);
        }
        return pr;
}

struct list_ctx {
        struct podresources_server *s;
        struct arena *a;
        V1__ListPodResourcesResponse *resp;
        const char *want_name, *want_ns; /* Get */
        V1__PodResources *found;
};

static void add_pod(const struct podresources_pod *p, void *userdata) {
        struct list_ctx *c = userdata;
        V1__PodResources *pr;

        if (c->want_name) {
                if (c->found || !streq_ptr(p->name, c->want_name) || !streq_ptr(p->namespace_, c->want_ns))
                        return;
                c->found = pod_resources(c->s, c->a, p);
                return;
        }
        pr = pod_resources(c->s, c->a, p);
        c->resp->pod_resources = (V1__PodResources **) arena_push(c->a, (void **) c->resp->pod_resources,
                                                                  &c->resp->n_pod_resources, pr);
}

/* List and Get: the pods into c, within the rate limit; false when an error went back instead */
static bool gather_pods(struct grpc_server_call *call, struct list_ctx *c) {
        if (!grpc_rate_limit_allow(&c->s->limit)) {
                grpc_server_reply_error(call, GRPC_RESOURCE_EXHAUSTED, "rejected by rate limit");
                return false;
        }
        c->s->p.foreach_pod(c->s->p.userdata, add_pod, c);
        if (c->a->oom) {
                grpc_server_reply_error(call, GRPC_RESOURCE_EXHAUSTED, "out of memory");
                return false;
        }
        return true;
}

static void on_list(struct grpc_server_call *call, const ProtobufCMessage *req, void *userdata) {
        struct podresources_server *s = userdata;
        V1__ListPodResourcesResponse resp = V1__LIST_POD_RESOURCES_RESPONSE__INIT;
        struct arena a = {};
        struct list_ctx c = { .s = s, .a = &a, .resp = &resp };

        if (gather_pods(call, &c))
                grpc_server_reply(call, &resp.base);
        arena_free(&a);
}

static void on_get(struct grpc_server_call *call, const ProtobufCMessage *msg, void *userdata) {
        struct podresources_server *s = userdata;
        const V1__GetPodResourcesRequest *req = (const V1__GetPodResourcesRequest *) msg;
        V1__GetPodResourcesResponse resp = V1__GET_POD_RESOURCES_RESPONSE__INIT;
        struct arena a = {};
        struct list_ctx c = {
                .s = s, .a = &a, .want_name = strempty(req->pod_name), .want_ns = strempty(req->pod_namespace)
        };

        if (gather_pods(call, &c)) {
                if (!c.found)
                        grpc_server_reply_error(call, GRPC_UNKNOWN, "pod %s in namespace %s not found", c.want_name,
                                                c.want_ns);
                else {
                        resp.pod_resources = c.found;
                        grpc_server_reply(call, &resp.base);
                }
        }
        arena_free(&a);
}

static void on_allocatable(struct grpc_server_call *call, const ProtobufCMessage *req, void *userdata) {
        struct podresources_server *s = userdata;
        V1__AllocatableResourcesResponse resp = V1__ALLOCATABLE_RESOURCES_RESPONSE__INIT;
        struct arena a = {};
        struct devices_builder b = { .a = &a, .group = false };

        if (!grpc_rate_limit_allow(&s->limit)) {
                grpc_server_reply_error(call, GRPC_RESOURCE_EXHAUSTED, "rejected by rate limit");
                return;
        }
        s->p.allocatable_devices(s->p.userdata, add_device, &b);
        resp.devices = b.v;
        resp.n_devices = b.n;
        /* the memory manager's allocatable memory, per NUMA node */
        if (s->p.allocatable_memory) {
                struct memory_builder mb = { .a = &a };
                s->p.allocatable_memory(s->p.userdata, add_memory, &mb);
                resp.memory = mb.v;
                resp.n_memory = mb.n;
        }
        /* the CPU manager's allocatable CPUs */
        if (s->p.allocatable_cpus)
                (void) cpu_ids(&a, s->p.allocatable_cpus(s->p.userdata, a.cpus, PODRESOURCES_CPUS_MAX), &resp.cpu_ids,
                               &resp.n_cpu_ids);
        if (a.oom)
                grpc_server_reply_error(call, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        else
                grpc_server_reply(call, &resp.base);
        arena_free(&a);
}

static const struct grpc_server_method methods[] = {
        { "/v1.PodResourcesLister/List", &v1__list_pod_resources_request__descriptor, on_list },
        { "/v1.PodResourcesLister/GetAllocatableResources", &v1__allocatable_resources_request__descriptor,
          on_allocatable },
        { "/v1.PodResourcesLister/Get", &v1__get_pod_resources_request__descriptor, on_get },
};

int podresources_server_new(struct event_base *base, const char *socket_path,
                            const struct podresources_provider *provider, struct podresources_server **ret,
                            struct ck_error **ret_error) {
        struct podresources_server *s;
        _cleanup_free_ char *dir = strdup(socket_path);
        char *slash;
        int r;

        if (!dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = '\0';
                r = mkdir_p(dir, 0750);
                if (r < 0)
                        return ck_error_set(ret_error, r, "cannot create %s: %s", dir, strerror(-r));
        }
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->p = *provider;
        grpc_rate_limit_init(&s->limit, PODRESOURCES_QPS, PODRESOURCES_BURST);
        r = grpc_server_new(base, socket_path, methods, ELEMENTSOF(methods), s, &s->server);
        if (r < 0) {
                free(s);
                return ck_error_set(ret_error, r, "failed to serve the pod resources API on %s: %s", socket_path,
                                    strerror(-r));
        }
        log_v(2, "Serving the pod resources API on \"%s\"", socket_path);
        *ret = s;
        return 0;
}

struct podresources_server *podresources_server_free(struct podresources_server *s) {
        if (!s)
                return NULL;
        grpc_server_free(s->server);
        free(s);
        return NULL;
}
