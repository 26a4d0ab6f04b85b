/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The device manager's state, shared by its files (manager.c: registration, endpoints, allocation jobs, container
 * options; resources.c: the resources and devices, the checkpoint, what the pod resources API reads). Not for
 * other modules. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "cm/devicemanager/ckpt_writer.h"
#include "cm/devicemanager/endpoint.h"
#include "cm/devicemanager/manager.h"
#include "cm/devicemanager/pod_devices.h"

#define MAX_RESOURCES 256

struct device {
        char *id;
        bool healthy;
        bool has_numa;
        int64_t numa; /* the first NUMA node of its topology */
};

struct resource {
        char *name;
        struct device *devices;
        size_t n_devices;
        struct dm_endpoint *ep; /* NULL when stopped (the stream ended, or restored from the checkpoint) */
        bool has_options;
        bool pre_start_required, preferred_available;
        uint64_t stopped_usec; /* monotonic time the endpoint stopped; 0 while it runs */
        bool deleted;          /* dropped after the grace period: reported once more with capacity 0 */
};

struct pending;

struct job {
        struct job *next;
        char *uid;
        struct pod *pod;
        bool admission; /* dm_admit's: the result is kept for it */
        size_t ci, ri;  /* the container (init ones first) and the limit being worked on */
        struct {
                char *resource;
                char **ids;
        } * reuse; /* devices the pod's init containers held (devicesToReuse) */
        size_t n_reuse;
        char **preferred; /* the plugin's GetPreferredAllocation answer for the current limit */
        bool have_preferred;
        struct pending *busy; /* the plugin call in flight */
};

struct result {
        struct result *next;
        char *uid;
        char *error;      /* NULL: allocated */
        uint64_t at_usec; /* a result not asked for within RESULT_KEEP_USEC is dropped */
};

#define RESULT_KEEP_USEC (10 * 60 * UINT64_C(1000000))

struct dm_request {
        struct devicemanager *m;
        struct dm_request *prev, *next;
        char *uid;
        struct pod *pod;
        char *container;
        dm_options_cb cb;
        void *userdata;
        size_t ri; /* PreStartContainer: the next limit */
        bool waiting_job;
        struct pending *busy;
        char *error; /* decided: deliver it */
        bool finished;
};

/* a plugin call's context: detached (job/req NULL) when they go away first */
struct pending {
        struct devicemanager *m;
        struct job *job;
        struct dm_request *req;
        char *resource;
};

/* a Register call waiting for the plugin's GetDevicePluginOptions answer (upstream's PluginConnected) */
struct registration {
        struct registration *prev, *next;
        struct devicemanager *m;
        struct grpc_server_call *call; /* answered once the options come (grpc_server_reply_later) */
        struct dm_endpoint *ep;        /* NULL while the registration is being dropped */
        char *resource, *path;
};

struct reaped {
        struct reaped *next;
        struct dm_endpoint *ep;
};

struct devicemanager {
        struct event_base *base;
        char *dir, *socket, *checkpoint;
        struct dm_ckpt_writer *ckpt; /* writes the checkpoint off the loop, coalesced (NULL: written here) */
        struct grpc_server *server;
        struct resource *resources;
        size_t n_resources;
        struct dm_pod_devices pd;
        struct job *jobs; /* FIFO; the head runs */
        struct result *results;
        struct dm_request *requests;
        struct reaped *reap;
        struct registration *registrations; /* waiting for their options */
        struct event *ev_work;              /* deferred: reap endpoints, run jobs and requests, tell the kubelet */
        bool changed;
        bool stopping;
        void (*on_change)(void *userdata);
        void *userdata;
        dm_affinity_cb affinity;
        void *affinity_userdata;
};

/* ---- resources.c ---- */

struct resource *dm_resource_find(const struct devicemanager *m, const char *name);
/* a new resource (or the dropped one of that name again); NULL when out of memory or past MAX_RESOURCES */
struct resource *dm_resource_add(struct devicemanager *m, const char *name);
/* Would dm_resource_add find a slot for it: its own (dropped or not), or a new one under the cap? */
bool dm_resource_has_room(const struct devicemanager *m, const char *name);
void dm_devices_free(struct resource *r);
/* the ids of the resource's healthy devices */
int dm_healthy_ids(const struct resource *r, char ***ret);
/* the NUMA node of each of ids (-1: none), NULL when no device of the resource has one */
int dm_devices_numa(const struct resource *r, char *const *ids, int64_t **ret);
const struct device *dm_device_find(const struct resource *r, const char *id);
/* isDevicePluginResource: registered, or held by someone */
bool dm_is_device_resource(const struct devicemanager *m, const char *name);
/* kubelet_internal_checkpoint: written (off the loop when there is a writer), read at start */
void dm_write_checkpoint(struct devicemanager *m);
void dm_read_checkpoint(struct devicemanager *m);
