/* SPDX-License-Identifier: Apache-2.0 */
/* The device manager: registration, endpoints, devices and health, allocation at admission, the options of a
 * starting container, the checkpoint. */
#include "cm/devicemanager/manager-internal.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/list.h"
#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "cm/devicemanager/ckpt_writer.h"
#include "cm/devicemanager/endpoint.h"
#include "grpc/client.h"
#include "grpc/server.h"

#define MAX_DEVICES 4096 /* per resource, from a plugin's ListAndWatch */
#define MAX_DEVICE_ID 255

static void kick(struct devicemanager *m) {
        if (!m->stopping)
                event_active(m->ev_work, EV_TIMEOUT, 0);
}

static void changed(struct devicemanager *m) {
        m->changed = true;
        kick(m);
}

/* ---------------------------------------------------------------- endpoints */

static void reap_endpoint(struct devicemanager *m, struct dm_endpoint *ep) {
        struct reaped *r;

        if (!ep)
                return;
        r = calloc(1, sizeof(*r));
        if (!r) {
                /* freeing it now: nothing of ours is on the stack of its callbacks when we get here */
                dm_endpoint_free(ep);
                return;
        }
        r->ep = ep;
        FLIST_PREPEND(m->reap, r);
        kick(m);
}

static struct resource *resource_of_endpoint(struct devicemanager *m, const struct dm_endpoint *ep) {
        for (size_t i = 0; i < m->n_resources; i++)
                if (m->resources[i].ep == ep)
                        return &m->resources[i];
        return NULL;
}

/* genericDeviceUpdateCallback: the plugin's whole list replaces what we had */
static void on_devices(struct dm_endpoint *ep, const V1beta1__ListAndWatchResponse *resp, void *userdata) {
        struct devicemanager *m = userdata;
        struct resource *r = resource_of_endpoint(m, ep);
        struct device *devs;
        size_t n = 0;

        if (!r || m->stopping)
                return; /* an endpoint already replaced */
        if (resp->n_devices > MAX_DEVICES) {
                log_error("device plugin %s lists %zu devices, more than %d: ignoring the list", r->name,
                          resp->n_devices, MAX_DEVICES);
                return;
        }
        devs = calloc(resp->n_devices ? resp->n_devices : 1, sizeof(*devs));
        if (!devs)
                return;
        for (size_t i = 0; i < resp->n_devices; i++) {
                const V1beta1__Device *d = resp->devices[i];
                bool dup = false;
                if (isempty(d->id) || strlen(d->id) > MAX_DEVICE_ID) {
                        log_error("device plugin %s lists a device with an empty or too long ID: ignored", r->name);
                        continue;
                }
                for (size_t j = 0; j < n; j++)
                        dup = dup || streq(devs[j].id, d->id);
                if (dup)
                        continue;
                devs[n].id = strdup(d->id);
                if (!devs[n].id)
                        break;
                devs[n].healthy = streq_ptr(d->health, "Healthy");
                if (d->topology && d->topology->n_nodes > 0) {
                        devs[n].has_numa = true;
                        devs[n].numa = d->topology->nodes[0]->id;
                }
                n++;
        }
        dm_devices_free(r);
        r->devices = devs;
        r->n_devices = n;
        dm_write_checkpoint(m);
        changed(m);
}

/* the stream ended: every device of the resource turns unhealthy (markResourceUnhealthy) */
static void on_stopped(struct dm_endpoint *ep, const char *why, void *userdata) {
        struct devicemanager *m = userdata;
        struct resource *r = resource_of_endpoint(m, ep);

        if (!r || m->stopping)
                return;
        log_v(2, "Mark all resources Unhealthy for resource %s", r->name);
        for (size_t i = 0; i < r->n_devices; i++)
                r->devices[i].healthy = false;
        r->ep = NULL;
        r->stopped_usec = now_usec();
        reap_endpoint(m, ep);
        log_v(2, "Endpoint (%s, %s) became unhealthy", r->name, dm_endpoint_socket(ep));
        changed(m);
}

/* ---------------------------------------------------------------- Registration */

static void registration_free(struct registration *g) {
        if (!g)
                return;
        DLIST_REMOVE(g->m->registrations, g);
        free(g->resource);
        free(g->path);
        free(g);
}

/* given up before the options came: the endpoint goes now, its GetDevicePluginOptions call (ended with CANCELLED
 * there) with it */
static void registration_drop(struct registration *g) {
        struct dm_endpoint *ep = g->ep;

        g->ep = NULL; /* on_options, run from dm_endpoint_free, leaves the rest to us */
        dm_endpoint_free(ep);
        registration_free(g);
}

/* PluginConnected: the options are the plugin's answer to GetDevicePluginOptions (not the RegisterRequest's);
 * then ListAndWatch starts (client.Run) and the Register call is answered */
static void on_options(const ProtobufCMessage *msg, const char *error, void *userdata) {
        struct registration *g = userdata;
        struct devicemanager *m = g->m;
        const V1beta1__DevicePluginOptions *opts = (const V1beta1__DevicePluginOptions *) msg;
        V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
        struct dm_endpoint *ep = g->ep;
        struct resource *r;
        int k;

        if (!ep)
                return; /* being dropped (registration_drop) */
        if (error) {
                log_error("Failed to connect to new client (resource %s, socketPath %s): failed to get device plugin "
                          "options: %s",
                          g->resource, g->path, error);
                if (g->call)
                        grpc_server_reply_error(g->call, GRPC_UNKNOWN, "failed to get device plugin options: %s",
                                                error);
                goto drop;
        }
        r = dm_resource_add(m, g->resource);
        if (!r) {
                if (g->call)
                        grpc_server_reply_error(g->call, GRPC_RESOURCE_EXHAUSTED, "cannot register more resources");
                goto drop;
        }
        k = dm_endpoint_watch(ep);
        if (k < 0) {
                log_error("Failed to connect to new client (resource %s, socketPath %s): cannot start ListAndWatch: %s",
                          g->resource, g->path, strerror(-k));
                if (g->call)
                        grpc_server_reply_error(g->call, GRPC_UNKNOWN, "cannot start ListAndWatch: %s", strerror(-k));
                goto drop;
        }
        /* the newest registration wins, as upstream; the old endpoint's end no longer counts */
        reap_endpoint(m, r->ep);
        r->ep = ep;
        r->stopped_usec = 0;
        r->has_options = true;
        r->pre_start_required = opts->pre_start_required;
        r->preferred_available = opts->get_preferred_allocation_available;
        log_v(2, "Registered endpoint %s for resource %s", g->path, r->name);
        if (g->call)
                grpc_server_reply(g->call, &empty.base);
        registration_free(g);
        changed(m);
        return;
drop:
        /* not from inside its own callback: freed from on_work */
        g->ep = NULL;
        registration_free(g);
        reap_endpoint(m, ep);
}

/* the plugin gave up on its Register call first: as upstream, whose GetDevicePluginOptions runs in the call's
 * context, the registration fails with it */
static void on_register_closed(struct grpc_server_call *call, void *userdata) {
        struct registration *g = userdata;

        g->call = NULL;
        if (!g->m->stopping)
                log_error("Failed to connect to new client (resource %s, socketPath %s): failed to get device plugin "
                          "options: rpc error: code = Canceled desc = context canceled",
                          g->resource, g->path);
        registration_drop(g);
}

static void on_register(struct grpc_server_call *call, const ProtobufCMessage *msg, void *userdata) {
        struct devicemanager *m = userdata;
        const V1beta1__RegisterRequest *req = (const V1beta1__RegisterRequest *) msg;
        _cleanup_free_ char *path = NULL;
        struct registration *g;
        int k;

        log_info("Got registration request from device plugin with resource name \"%s\"", strempty(req->resource_name));
        if (!streq_ptr(req->version, DM_VERSION)) {
                log_info("Bad registration request from device plugin with resource name \"%s\": requested API version "
                         "\"%s\" is not supported by kubelet. Supported version is [\"%s\"]",
                         strempty(req->resource_name), strempty(req->version), DM_VERSION);
                grpc_server_reply_error(
                        call, GRPC_UNKNOWN,
                        "requested API version \"%s\" is not supported by kubelet. Supported version is "
                        "[\"%s\"]",
                        strempty(req->version), DM_VERSION);
                return;
        }
        if (isempty(req->resource_name) || !resource_is_extended(req->resource_name)) {
                log_info("Bad registration request from device plugin: the ResourceName \"%s\" is invalid",
                         strempty(req->resource_name));
                grpc_server_reply_error(call, GRPC_UNKNOWN, "the ResourceName \"%s\" is invalid",
                                        strempty(req->resource_name));
                return;
        }
        /* the plugin's socket is a plain name in our directory */
        if (isempty(req->endpoint) || strchr(req->endpoint, '/') || streq(req->endpoint, ".") ||
            streq(req->endpoint, "..") || asprintf(&path, "%s/%s", m->dir, req->endpoint) < 0) {
                grpc_server_reply_error(call, GRPC_UNKNOWN, "invalid endpoint \"%s\": want a socket name in %s",
                                        strempty(req->endpoint), m->dir);
                return;
        }
        if (!dm_resource_has_room(m, req->resource_name)) {
                grpc_server_reply_error(call, GRPC_RESOURCE_EXHAUSTED, "cannot register more resources");
                return;
        }
        g = calloc(1, sizeof(*g));
        if (!g || !(g->resource = strdup(req->resource_name))) {
                free(g);
                grpc_server_reply_error(call, GRPC_RESOURCE_EXHAUSTED, "out of memory");
                return;
        }
        g->m = m;
        g->path = TAKE_PTR(path);
        DLIST_PREPEND(m->registrations, g);
        k = dm_endpoint_new(m->base, g->path, req->resource_name, on_devices, on_stopped, m, &g->ep);
        if (k < 0) {
                log_error("Failed to dial device plugin with request %s at %s: %s", req->resource_name, g->path,
                          strerror(-k));
                grpc_server_reply_error(call, GRPC_UNKNOWN, "failed to dial device plugin: %s", strerror(-k));
                registration_free(g);
                return;
        }
        /* the Register call is answered once the options come */
        k = dm_endpoint_get_options(g->ep, on_options, g);
        if (k < 0) {
                log_error("Failed to connect to new client (resource %s, socketPath %s): failed to get device plugin "
                          "options: %s",
                          g->resource, g->path, strerror(-k));
                grpc_server_reply_error(call, GRPC_UNKNOWN, "failed to get device plugin options: %s", strerror(-k));
                registration_drop(g);
                return;
        }
        g->call = call;
        grpc_server_reply_later(call, on_register_closed, g);
}

static const struct grpc_server_method registration_methods[] = {
        { "/v1beta1.Registration/Register", &v1beta1__register_request__descriptor, on_register },
};

/* ---------------------------------------------------------------- allocation jobs */

static size_t n_pod_containers(const struct pod *p) {
        return p->spec.n_init_containers + p->spec.n_containers;
}

static const struct container *pod_container_at(const struct pod *p, size_t i, bool *ret_init) {
        *ret_init = i < p->spec.n_init_containers;
        return *ret_init ? &p->spec.init_containers[i] : &p->spec.containers[i - p->spec.n_init_containers];
}

static char **reuse_of(struct job *j, const char *resource) {
        for (size_t i = 0; i < j->n_reuse; i++)
                if (streq(j->reuse[i].resource, resource))
                        return j->reuse[i].ids;
        return NULL;
}

static int reuse_update(struct job *j, const char *resource, char *const *ids, bool add) {
        size_t i;

        for (i = 0; i < j->n_reuse; i++)
                if (streq(j->reuse[i].resource, resource))
                        break;
        if (i == j->n_reuse) {
                void *n = reallocarray(j->reuse, j->n_reuse + 1, sizeof(*j->reuse));
                if (!n)
                        return -ENOMEM;
                j->reuse = n;
                j->reuse[i].resource = strdup(resource);
                j->reuse[i].ids = NULL;
                if (!j->reuse[i].resource)
                        return -ENOMEM;
                j->n_reuse++;
        }
        for (size_t k = 0; ids && ids[k]; k++) {
                bool has = strv_contains(j->reuse[i].ids, ids[k]);
                if (add && !has && strv_extend(&j->reuse[i].ids, ids[k]) < 0)
                        return -ENOMEM;
                if (!add && has)
                        for (size_t x = 0; j->reuse[i].ids[x]; x++)
                                if (streq(j->reuse[i].ids[x], ids[k])) {
                                        strv_remove_at(j->reuse[i].ids, x);
                                        break;
                                }
        }
        return 0;
}

static void job_free(struct job *j) {
        if (!j)
                return;
        if (j->busy)
                j->busy->job = NULL; /* its call ends into nothing */
        free(j->uid);
        pod_free(j->pod);
        for (size_t i = 0; i < j->n_reuse; i++) {
                free(j->reuse[i].resource);
                strv_free(j->reuse[i].ids);
        }
        free(j->reuse);
        strv_free(j->preferred);
        free(j);
}

static struct job *job_find(const struct devicemanager *m, const char *uid) {
        for (struct job *j = m->jobs; j; j = j->next)
                if (streq(j->uid, uid))
                        return j;
        return NULL;
}

static void job_unlink(struct devicemanager *m, struct job *j) {
        FLIST_REMOVE(m->jobs, j);
        j->next = NULL;
}

static void result_set(struct devicemanager *m, const char *uid, const char *error) {
        struct result *r = calloc(1, sizeof(*r));

        if (!r)
                return;
        r->uid = strdup(uid);
        r->error = error ? strdup(error) : NULL;
        if (!r->uid || (error && !r->error)) {
                free(r->uid);
                free(r->error);
                free(r);
                return;
        }
        r->at_usec = now_usec();
        FLIST_PREPEND(m->results, r);
}

static void result_free(struct result *r) {
        free(r->uid);
        free(r->error);
        free(r);
}

static const struct result *result_find(const struct devicemanager *m, const char *uid) {
        for (const struct result *r = m->results; r; r = r->next)
                if (streq(r->uid, uid))
                        return r;
        return NULL;
}

static void requests_job_done(struct devicemanager *m, const char *uid, const char *error);

/* the head job ended: the pod keeps its devices (or, on error, holds none) */
static void job_finish(struct devicemanager *m, struct job *j, const char *error) {
        if (error) {
                dm_pod_devices_remove_pod(&m->pd, j->uid);
                dm_write_checkpoint(m);
        }
        if (j->admission)
                result_set(m, j->uid, error);
        job_unlink(m, j);
        requests_job_done(m, j->uid, error);
        job_free(j);
        changed(m);
}

static struct pending *pending_new(struct devicemanager *m, struct job *j, struct dm_request *req,
                                   const char *resource) {
        struct pending *p = calloc(1, sizeof(*p));
        if (!p)
                return NULL;
        *p = (struct pending) { .m = m, .job = j, .req = req, .resource = strdup(resource) };
        if (!p->resource) {
                free(p);
                return NULL;
        }
        return p;
}

static void pending_free(struct pending *p) {
        if (!p)
                return;
        free(p->resource);
        free(p);
}

static void job_run(struct devicemanager *m);

static void on_preferred(const ProtobufCMessage *msg, const char *error, void *userdata) {
        struct pending *p = userdata;
        struct job *j = p->job;
        const V1beta1__PreferredAllocationResponse *resp = (const V1beta1__PreferredAllocationResponse *) msg;

        if (!j || p->m->stopping) {
                pending_free(p);
                return;
        }
        j->busy = NULL;
        if (error) {
                _cleanup_free_ char *m = NULL;
                if (asprintf(&m, "device plugin GetPreferredAllocation rpc failed with err: %s", error) < 0)
                        m = NULL;
                job_finish(p->m, j, m ? m : "device plugin GetPreferredAllocation rpc failed");
        } else {
                strv_free(j->preferred);
                j->preferred = NULL;
                if (resp->n_container_responses > 0)
                        for (size_t i = 0; i < resp->container_responses[0]->n_deviceids; i++)
                                (void) strv_extend(&j->preferred, resp->container_responses[0]->deviceids[i]);
                j->have_preferred = true;
        }
        kick(p->m);
        pending_free(p);
}

static void on_allocate(const ProtobufCMessage *msg, const char *error, void *userdata) {
        struct pending *p = userdata;
        struct devicemanager *m = p->m;
        struct job *j = p->job;
        const V1beta1__AllocateResponse *resp = (const V1beta1__AllocateResponse *) msg;
        const struct dm_alloc *a;
        const struct container *c;
        bool init;

        if (!j || m->stopping) {
                pending_free(p);
                return;
        }
        j->busy = NULL;
        c = pod_container_at(j->pod, j->ci, &init);
        a = dm_pod_devices_find(&m->pd, j->uid, c->name, p->resource);
        if (error || !a) {
                job_finish(m, j, error ? error : "the allocation went away");
                pending_free(p);
                return;
        }
        if (resp->n_container_responses == 0) {
                job_finish(m, j, "no containers return in allocation response");
                pending_free(p);
                return;
        }
        {
                size_t len = v1beta1__container_allocate_response__get_packed_size(resp->container_responses[0]);
                _cleanup_free_ uint8_t *buf = malloc(len ? len : 1);
                _cleanup_strv_free_ char **ids = NULL;
                _cleanup_free_ int64_t *numa = NULL;
                if (!buf || strv_copy(a->device_ids, &ids) < 0 ||
                    !(numa = malloc((strv_length(ids) + 1) * sizeof(*numa)))) {
                        job_finish(m, j, "out of memory");
                        pending_free(p);
                        return;
                }
                memcpy(numa, a->numa, strv_length(ids) * sizeof(*numa));
                v1beta1__container_allocate_response__pack(resp->container_responses[0], buf);
                if (dm_pod_devices_insert(&m->pd, j->uid, c->name, p->resource, ids, numa, buf, len) < 0 ||
                    reuse_update(j, p->resource, ids, init) < 0) {
                        job_finish(m, j, "out of memory");
                        pending_free(p);
                        return;
                }
                log_v(3, "device manager: pod %s container %s got %zu %s", j->uid, c->name, strv_length(ids),
                      p->resource);
        }
        dm_write_checkpoint(m);
        j->ri++;
        j->have_preferred = false;
        pending_free(p);
        kick(m);
}

/* Work on the job until it needs a plugin call or ends. */
static void job_advance(struct devicemanager *m, struct job *j) {
        for (; j->ci < n_pod_containers(j->pod); j->ci++, j->ri = 0) {
                bool init;
                const struct container *c = pod_container_at(j->pod, j->ci, &init);
                const struct resource_list *limits = &c->resources.limits;

                for (; j->ri < limits->n; j->ri++, j->have_preferred = false) {
                        const char *name = limits->names[j->ri];
                        int64_t needed = limits->values[j->ri].value;
                        const struct dm_alloc *have;
                        struct resource *r;
                        _cleanup_strv_free_ char **healthy = NULL, **in_use = NULL, **chosen = NULL;
                        _cleanup_free_ char *err = NULL;
                        _cleanup_ck_error_ struct ck_error *cerr = NULL;
                        _cleanup_free_ int64_t *numa = NULL, *hnuma = NULL;
                        uint64_t affinity = 0;
                        struct pending *p;
                        int k;

                        if (!dm_is_device_resource(m, name) || needed <= 0)
                                continue;
                        have = dm_pod_devices_find(&m->pd, j->uid, c->name, name);
                        if (have && have->resp) {
                                /* a container restarting, or a restart of the kubelet: it keeps its devices */
                                if ((int64_t) strv_length(have->device_ids) != needed) {
                                        if (asprintf(&err,
                                                     "pod \"%s\" container \"%s\" changed request for resource "
                                                     "\"%s\" from %zu to %" PRId64,
                                                     j->uid, c->name, name, strv_length(have->device_ids), needed) < 0)
                                                err = NULL;
                                        job_finish(m, j, err ? err : "changed request");
                                        return;
                                }
                                continue;
                        }
                        r = dm_resource_find(m, name);
                        if (!r) {
                                if (asprintf(&err, "can't allocate unregistered device %s", name) < 0)
                                        err = NULL;
                                job_finish(m, j, err ? err : "unregistered device");
                                return;
                        }
                        if (dm_healthy_ids(r, &healthy) < 0 || dm_devices_numa(r, healthy, &hnuma) < 0 ||
                            dm_pod_devices_in_use(&m->pd, name, true, &in_use) < 0) {
                                job_finish(m, j, "out of memory");
                                return;
                        }
                        /* enough devices? (devicesToAllocate fails before asking the plugin) */
                        k = dm_choose_devices(name, healthy, in_use, reuse_of(j, name), NULL, (size_t) needed, &chosen,
                                              &cerr);
                        if (k < 0) {
                                job_finish(m, j, ck_error_message(cerr));
                                return;
                        }
                        chosen = strv_free(chosen);
                        /* the topology manager's affinity for the container (filterByAffinity) */
                        if (hnuma && m->affinity && !m->affinity(m->affinity_userdata, j->pod, c, &affinity))
                                affinity = 0;
                        /* the plugin's preference, when it offers one: from the aligned devices when they suffice,
                         * else from every available one, with what the pod's init containers held (and the aligned
                         * ones) required */
                        if (r->preferred_available && r->ep && !j->have_preferred) {
                                _cleanup_strv_free_ char **available = NULL, **must = NULL;
                                if (dm_preferred_offer(healthy, hnuma, in_use, reuse_of(j, name), affinity,
                                                       (size_t) needed, &available, &must) < 0) {
                                        job_finish(m, j, "out of memory");
                                        return;
                                }
                                p = pending_new(m, j, NULL, name);
                                if (!p) {
                                        job_finish(m, j, "out of memory");
                                        return;
                                }
                                log_v(4, "Issuing a GetPreferredAllocation call for container, %s, of pod %s", c->name,
                                      j->uid);
                                k = dm_endpoint_get_preferred_allocation(r->ep, available, must, (int32_t) needed,
                                                                         on_preferred, p);
                                if (k < 0) {
                                        pending_free(p);
                                        job_finish(m, j, "device plugin GetPreferredAllocation rpc failed");
                                        return;
                                }
                                j->busy = p;
                                return;
                        }
                        k = dm_choose_devices_aligned(name, healthy, hnuma, in_use, reuse_of(j, name), affinity,
                                                      j->preferred, (size_t) needed, &chosen, &cerr);
                        if (k < 0) {
                                job_finish(m, j, ck_error_message(cerr));
                                return;
                        }
                        if (!r->ep) {
                                if (asprintf(&err, "endpoint of device plugin %s has been stopped", name) < 0)
                                        err = NULL;
                                job_finish(m, j, err ? err : "endpoint stopped");
                                return;
                        }
                        numa = calloc(strv_length(chosen) + 1, sizeof(*numa));
                        if (!numa) {
                                job_finish(m, j, "out of memory");
                                return;
                        }
                        for (size_t i = 0; chosen[i]; i++) {
                                const struct device *d = dm_device_find(r, chosen[i]);
                                numa[i] = d && d->has_numa ? d->numa : 0;
                        }
                        /* held from now on (no one else can take them) until Allocate answers */
                        if (dm_pod_devices_insert(&m->pd, j->uid, c->name, name, chosen, numa, NULL, 0) < 0) {
                                job_finish(m, j, "out of memory");
                                return;
                        }
                        log_v(3, "Making allocation request for %zu devices for device plugin %s", strv_length(chosen),
                              name);
                        p = pending_new(m, j, NULL, name);
                        if (!p) {
                                job_finish(m, j, "out of memory");
                                return;
                        }
                        k = dm_endpoint_allocate(r->ep, chosen, on_allocate, p);
                        if (k < 0) {
                                pending_free(p);
                                job_finish(m, j, "cannot call the device plugin's Allocate");
                                return;
                        }
                        j->busy = p;
                        return;
                }
        }
        job_finish(m, j, NULL);
}

static void job_run(struct devicemanager *m) {
        while (m->jobs && !m->jobs->busy && !m->stopping) {
                struct job *j = m->jobs;
                job_advance(m, j);
                if (m->jobs == j)
                        break; /* waits for the plugin */
        }
}

static int job_queue(struct devicemanager *m, const struct pod *pod, bool admission) {
        struct job *j = job_find(m, pod->uid);

        if (j) {
                j->admission = j->admission || admission;
                return 0;
        }
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->uid = strdup(pod->uid);
        if (!j->uid) {
                free(j);
                return -ENOMEM;
        }
        j->pod = pod_ref((struct pod *) pod);
        j->admission = admission;
        FLIST_APPEND(m->jobs, j);
        kick(m);
        return 0;
}

/* ---------------------------------------------------------------- admission */

bool dm_pod_uses_devices(const struct devicemanager *m, const struct pod *pod) {
        for (size_t i = 0; m && i < n_pod_containers(pod); i++) {
                bool init;
                const struct container *c = pod_container_at(pod, i, &init);
                for (size_t k = 0; k < c->resources.limits.n; k++)
                        if (dm_is_device_resource(m, c->resources.limits.names[k]))
                                return true;
        }
        return false;
}

/* every device limit already has its devices (a restart adopting running pods) */
static bool pod_fully_allocated(const struct devicemanager *m, const struct pod *pod) {
        for (size_t i = 0; i < n_pod_containers(pod); i++) {
                bool init;
                const struct container *c = pod_container_at(pod, i, &init);
                for (size_t k = 0; k < c->resources.limits.n; k++) {
                        const char *name = c->resources.limits.names[k];
                        const struct dm_alloc *a;
                        if (!dm_is_device_resource(m, name) || c->resources.limits.values[k].value <= 0)
                                continue;
                        a = dm_pod_devices_find(&m->pd, pod->uid, c->name, name);
                        if (!a || !a->resp ||
                            (int64_t) strv_length(a->device_ids) != c->resources.limits.values[k].value)
                                return false;
                }
        }
        return true;
}

int dm_admit(struct devicemanager *m, const struct pod *pod, struct ck_error **ret_error) {
        struct result *res;
        int r;

        if (!m || !dm_pod_uses_devices(m, pod))
                return 0;
        res = (struct result *) result_find(m, pod->uid);
        if (res) {
                FLIST_REMOVE(m->results, res);
                r = 0;
                if (res->error)
                        r = ck_error_set(ret_error, -ENOSPC, "Allocate failed due to %s, which is unexpected",
                                         res->error);
                result_free(res);
                return r;
        }
        if (job_find(m, pod->uid))
                return -EINPROGRESS;
        if (pod_fully_allocated(m, pod))
                return 0;
        r = job_queue(m, pod, true);
        return r < 0 ? r : -EINPROGRESS;
}

void dm_update_active(struct devicemanager *m, char *const *active, bool sources_ready) {
        _cleanup_strv_free_ char **pods = NULL;
        struct result *res, *next;
        bool removed = false;

        if (!m || !sources_ready)
                return;
        if (dm_pod_devices_pods(&m->pd, &pods) < 0)
                return;
        /* results nobody asked for in a long while (the pod went away before its admission ended) */
        FLIST_FOREACH_SAFE(res, next, m->results)
        if (now_usec() - res->at_usec >= RESULT_KEEP_USEC) {
                FLIST_REMOVE(m->results, res);
                result_free(res);
        }
        for (size_t i = 0; pods && pods[i]; i++) {
                /* admitted, being allocated, or allocated and not yet told to admission: kept */
                if (strv_contains(active, pods[i]) || job_find(m, pods[i]) || result_find(m, pods[i]))
                        continue;
                log_v(3, "device manager: pod %s is gone: its devices are free", pods[i]);
                dm_pod_devices_remove_pod(&m->pd, pods[i]);
                removed = true;
        }
        if (removed) {
                dm_write_checkpoint(m);
                changed(m);
        }
}

/* ---------------------------------------------------------------- container options */

static void request_unlink(struct dm_request *r) {
        DLIST_REMOVE(r->m->requests, r);
}

static void request_free(struct dm_request *r) {
        if (!r)
                return;
        if (r->busy)
                r->busy->req = NULL;
        free(r->uid);
        pod_free(r->pod);
        free(r->container);
        free(r->error);
        free(r);
}

void dm_request_cancel(struct dm_request *r) {
        if (!r)
                return;
        request_unlink(r);
        request_free(r);
}

static const struct container *request_container(const struct dm_request *r) {
        return pod_find_container(r->pod, r->container);
}

static void request_fail(struct dm_request *r, const char *error) {
        r->finished = true;
        if (!r->error)
                r->error = strdup(error ? error : "device manager error");
        kick(r->m);
}

static void requests_job_done(struct devicemanager *m, const char *uid, const char *error) {
        for (struct dm_request *r = m->requests; r; r = r->next)
                if (r->waiting_job && streq(r->uid, uid)) {
                        r->waiting_job = false;
                        if (error)
                                request_fail(r, error);
                }
        kick(m);
}

static void on_pre_start(const ProtobufCMessage *msg, const char *error, void *userdata) {
        struct pending *p = userdata;
        struct dm_request *r = p->req;

        if (r && !p->m->stopping) {
                r->busy = NULL;
                if (error) {
                        _cleanup_free_ char *m = NULL;
                        if (asprintf(&m, "device plugin PreStartContainer rpc failed with err: %s", error) < 0)
                                m = NULL;
                        request_fail(r, m ? m : "device plugin PreStartContainer rpc failed");
                } else
                        r->ri++;
                kick(p->m);
        }
        pending_free(p);
}

/* Work on a request until it needs a call, a job, or is decided. */
static void request_advance(struct dm_request *r) {
        struct devicemanager *m = r->m;
        const struct container *c = request_container(r);
        const struct resource_list *limits;

        if (r->finished || r->busy || r->waiting_job)
                return;
        if (!c) {
                request_fail(r, "no such container in the pod");
                return;
        }
        limits = &c->resources.limits;
        /* an assignment lost (no checkpoint): allocate again, as upstream's needsReAllocate */
        if (r->ri == 0) {
                for (size_t k = 0; k < limits->n; k++) {
                        const struct dm_alloc *a;
                        if (!dm_is_device_resource(m, limits->names[k]) || limits->values[k].value <= 0)
                                continue;
                        a = dm_pod_devices_find(&m->pd, r->uid, c->name, limits->names[k]);
                        if (!a || !a->resp) {
                                log_v(2, "needs re-allocate device plugin resources for pod %s, container %s", r->uid,
                                      c->name);
                                if (job_queue(m, r->pod, false) < 0) {
                                        request_fail(r, "out of memory");
                                        return;
                                }
                                r->waiting_job = true;
                                return;
                        }
                }
        }
        /* PreStartContainer for the plugins that ask for it */
        for (; r->ri < limits->n; r->ri++) {
                const char *name = limits->names[r->ri];
                const struct resource *res;
                const struct dm_alloc *a;
                struct pending *p;
                _cleanup_free_ char *err = NULL;

                if (!dm_is_device_resource(m, name) || limits->values[r->ri].value <= 0)
                        continue;
                res = dm_resource_find(m, name);
                if (!res) {
                        if (asprintf(&err, "endpoint not found in cache for a registered resource: %s", name) < 0)
                                err = NULL;
                        request_fail(r, err);
                        return;
                }
                if (!res->has_options || !res->pre_start_required)
                        continue;
                a = dm_pod_devices_find(&m->pd, r->uid, c->name, name);
                if (!a) {
                        if (asprintf(&err,
                                     "no devices found allocated in local cache for pod %s, container %s, "
                                     "resource %s",
                                     r->uid, c->name, name) < 0)
                                err = NULL;
                        request_fail(r, err);
                        return;
                }
                if (!res->ep) {
                        if (asprintf(&err,
                                     "device plugin PreStartContainer rpc failed with err: endpoint of device "
                                     "plugin %s has been stopped",
                                     name) < 0)
                                err = NULL;
                        request_fail(r, err);
                        return;
                }
                p = pending_new(m, NULL, r, name);
                if (!p || dm_endpoint_pre_start_container(res->ep, a->device_ids, on_pre_start, p) < 0) {
                        pending_free(p);
                        request_fail(r, "cannot call the device plugin's PreStartContainer");
                        return;
                }
                log_v(4, "Issuing an PreStartContainer call for container, %s, of pod %s", c->name, r->uid);
                r->busy = p;
                return;
        }
        r->finished = true;
        kick(m);
}

/* decided requests get their callback (from the work event) */
static void requests_deliver(struct devicemanager *m) {
        for (struct dm_request *r = m->requests, *next; r; r = next) {
                next = r->next;
                request_advance(r);
                if (!r->finished)
                        continue;
                request_unlink(r);
                if (r->error)
                        r->cb(NULL, r->error, r->userdata);
                else {
                        struct dm_run_options o = {};
                        if (dm_run_options_build(&m->pd, r->uid, r->container, &o) < 0)
                                r->cb(NULL, "out of memory", r->userdata);
                        else
                                r->cb(&o, NULL, r->userdata);
                        dm_run_options_done(&o);
                }
                request_free(r);
                next = m->requests; /* the callback may have cancelled others */
        }
}

int dm_container_options(struct devicemanager *m, const struct pod *pod, const char *container, dm_options_cb cb,
                         void *userdata, struct dm_request **ret) {
        struct dm_request *r;

        assert(m && pod && container && cb);
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->m = m;
        r->uid = strdup(pod->uid);
        r->container = strdup(container);
        r->pod = pod_ref((struct pod *) pod);
        r->cb = cb;
        r->userdata = userdata;
        if (!r->uid || !r->container) {
                request_free(r);
                return -ENOMEM;
        }
        DLIST_PREPEND(m->requests, r);
        kick(m);
        if (ret)
                *ret = r;
        return 0;
}

/* ---------------------------------------------------------------- the work event */

/* resources whose endpoint stopped more than the grace period ago are dropped (GetCapacity) */
static void drop_expired(struct devicemanager *m) {
        uint64_t now = now_usec();
        bool dropped = false;

        for (size_t i = 0; i < m->n_resources; i++) {
                struct resource *r = &m->resources[i];
                if (r->deleted || r->ep || !r->stopped_usec || now - r->stopped_usec <= DM_STOP_GRACE_USEC)
                        continue;
                log_info("device manager: resource %s has had no plugin for %d minutes: dropped", r->name,
                         (int) (DM_STOP_GRACE_USEC / USEC_PER_SEC / 60));
                dm_devices_free(r);
                r->deleted = true;
                dropped = true;
        }
        if (dropped) {
                dm_write_checkpoint(m);
                changed(m);
        }
}

static void on_work(evutil_socket_t fd, short what, void *userdata) {
        struct devicemanager *m = userdata;

        for (struct reaped *r; m->reap;) {
                FLIST_POP(m->reap, r);
                dm_endpoint_free(r->ep); /* its calls in flight end here, with CANCELLED */
                free(r);
        }
        if (m->stopping)
                return;
        job_run(m);
        requests_deliver(m);
        if (m->changed) {
                m->changed = false;
                if (m->on_change)
                        m->on_change(m->userdata);
        }
}

/* ---------------------------------------------------------------- capacity, pod resources */

void dm_foreach_resource(struct devicemanager *m, void (*cb)(const struct dm_resource_count *c, void *userdata),
                         void *userdata) {
        if (!m)
                return;
        drop_expired(m);
        for (size_t i = 0; i < m->n_resources; i++) {
                const struct resource *r = &m->resources[i];
                struct dm_resource_count c = { .name = r->name, .deleted = r->deleted };
                for (size_t k = 0; !r->deleted && k < r->n_devices; k++) {
                        c.capacity++;
                        if (r->devices[k].healthy)
                                c.allocatable++;
                }
                cb(&c, userdata);
        }
}

/* ---------------------------------------------------------------- set-up */

/* removeContents: every file in the directory but the checkpoint (sockets of plugins registered with an earlier
 * kubelet: seeing them go is how plugins know to register again) */
static void remove_stale(struct devicemanager *m) {
        _cleanup_closedir_ DIR *d = opendir(m->dir);
        struct dirent *de;

        if (!d)
                return;
        while ((de = readdir(d))) {
                struct stat st;
                if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
                        continue;
                if (streq(de->d_name, DM_CHECKPOINT_FILE))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode))
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) < 0)
                        log_error("Failed to remove file %s/%s: %s", m->dir, de->d_name, strerror(errno));
        }
}

void dm_set_affinity(struct devicemanager *m, dm_affinity_cb cb, void *userdata) {
        m->affinity = cb;
        m->affinity_userdata = userdata;
}

struct devicemanager *dm_free(struct devicemanager *m) {
        if (!m)
                return NULL;
        m->stopping = true;
        for (struct job *j; m->jobs;) {
                FLIST_POP(m->jobs, j);
                job_free(j);
        }
        while (m->requests)
                dm_request_cancel(m->requests);
        grpc_server_free(m->server); /* Register calls waiting for options: dropped (on_register_closed) */
        while (m->registrations)
                registration_drop(m->registrations);
        for (size_t i = 0; i < m->n_resources; i++) {
                dm_endpoint_free(m->resources[i].ep);
                dm_devices_free(&m->resources[i]);
                free(m->resources[i].name);
        }
        free(m->resources);
        for (struct reaped *r; m->reap;) {
                FLIST_POP(m->reap, r);
                dm_endpoint_free(r->ep);
                free(r);
        }
        for (struct result *r; m->results;) {
                FLIST_POP(m->results, r);
                result_free(r);
        }
        m->ckpt = dm_ckpt_writer_free(m->ckpt); /* the last state written */
        dm_pod_devices_done(&m->pd);
        if (m->ev_work)
                event_free(m->ev_work);
        free(m->dir);
        free(m->socket);
        free(m->checkpoint);
        free(m);
        return NULL;
}

int dm_new(struct event_base *base, const char *dir, void (*on_change)(void *userdata), void *userdata,
           struct devicemanager **ret) {
        struct devicemanager *m;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->base = base;
        m->on_change = on_change;
        m->userdata = userdata;
        m->dir = strdup(dir);
        if (!m->dir || asprintf(&m->socket, "%s/%s", dir, DM_SOCKET_NAME) < 0 ||
            asprintf(&m->checkpoint, "%s/%s", dir, DM_CHECKPOINT_FILE) < 0) {
                r = -ENOMEM;
                goto fail;
        }
        m->ev_work = event_new(base, -1, 0, on_work, m);
        if (!m->ev_work) {
                r = -ENOMEM;
                goto fail;
        }
        r = mkdir_p(dir, 0750);
        if (r < 0) {
                log_error("cannot create %s: %s", dir, strerror(-r));
                goto fail;
        }
        dm_read_checkpoint(m);
        if (dm_ckpt_writer_new(base, m->checkpoint, &m->ckpt) < 0)
                log_warning("device manager: no checkpoint writer thread: the checkpoint is written on the loop");
        remove_stale(m);
        r = grpc_server_new(base, m->socket, registration_methods, ELEMENTSOF(registration_methods), m, &m->server);
        if (r < 0) {
                log_error("failed to listen to socket while starting device plugin registry, with error %s: %s",
                          m->socket, strerror(-r));
                goto fail;
        }
        log_v(2, "Serving device plugin registration server on \"%s\"", m->socket);
        *ret = m;
        return 0;
fail:
        dm_free(m);
        return r;
}
