/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pod resources API, podresources/v1 (pkg/kubelet/apis/podresources): List, GetAllocatableResources and Get
 * on <root-dir>/pod-resources/kubelet.sock, served by src/grpc/server.c on the loop. What it reports comes from
 * a provider the kubelet fills: the active pods and their containers (app containers and sidecars, as upstream
 * lists them), the devices of each container and the allocatable devices, the exclusive CPUs of each container
 * and the allocatable CPUs (the CPU manager's; empty under its none policy), the memory of each container and the
 * allocatable memory per NUMA node (the memory manager's; empty under its None policy), the DRA claims of each
 * container with their devices (dynamic_resources). Requests are rate limited as
 * upstream
 * (100 per second, bursts of 10: ResourceExhausted "rejected by rate limit"). */

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"

#define PODRESOURCES_QPS 100
#define PODRESOURCES_BURST 10
#define PODRESOURCES_CPUS_MAX 1024

struct podresources_pod {
        const char *name, *namespace_, *uid;
        const char *const *containers; /* the containers to report, in order */
        size_t n_containers;
};

/* one device of a DRA claim (DynamicResource.claim_resources[]) */
struct podresources_claim_device {
        const char *driver, *pool, *device;
        const char *share_id;       /* NULL: none */
        const char *const *cdi_ids; /* NULL-terminated, may be NULL */
};
typedef void (*podresources_claim_cb)(const char *claim_name, const char *claim_namespace,
                                      const struct podresources_claim_device *devices, size_t n, void *userdata);

typedef void (*podresources_pod_cb)(const struct podresources_pod *p, void *userdata);
typedef void (*podresources_memory_cb)(const char *type, uint64_t size, uint64_t numa_mask, void *userdata);
typedef void (*podresources_device_cb)(const char *resource, const char *id, int64_t numa, bool has_numa,
                                       void *userdata);

struct podresources_provider {
        /* the active pods (admitted and not finished) */
        void (*foreach_pod)(void *userdata, podresources_pod_cb cb, void *cb_userdata);
        /* the devices a container holds */
        void (*container_devices)(void *userdata, const char *pod_uid, const char *container, podresources_device_cb cb,
                                  void *cb_userdata);
        /* the devices that can be allocated (healthy ones) */
        void (*allocatable_devices)(void *userdata, podresources_device_cb cb, void *cb_userdata);
        /* the exclusive CPUs of a container (NULL: none), ascending, at most cap into buf; returns the count */
        size_t (*container_cpus)(void *userdata, const char *pod_uid, const char *container, int64_t *buf, size_t cap);
        /* the CPUs that can be given exclusively (NULL: none), as container_cpus */
        size_t (*allocatable_cpus)(void *userdata, int64_t *buf, size_t cap);
        /* the memory blocks of a container and the allocatable memory (NULL: none): type ("memory",
         * "hugepages-2Mi"), size in bytes and NUMA nodes */
        void (*container_memory)(void *userdata, const char *pod_uid, const char *container, podresources_memory_cb cb,
                                 void *cb_userdata);
        void (*allocatable_memory)(void *userdata, podresources_memory_cb cb, void *cb_userdata);
        /* the prepared DRA claims a container references (NULL: none), once each, with their devices
         * (KubeletPodResourcesDynamicResources) */
        void (*container_claims)(void *userdata, const char *pod_uid, const char *container, podresources_claim_cb cb,
                                 void *cb_userdata);
        void *userdata;
};

struct podresources_server;

/* socket_path's directory is created (0750) if missing. The provider is copied. A failure's reason is in *ret_error. */
int podresources_server_new(struct event_base *base, const char *socket_path,
                            const struct podresources_provider *provider, struct podresources_server **ret,
                            struct ck_error **ret_error);
struct podresources_server *podresources_server_free(struct podresources_server *s);
