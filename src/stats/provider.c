/* SPDX-License-Identifier: Apache-2.0 */
/* The stats provider (upstream's CRI stats provider, pkg/kubelet/stats) on our loop: a Summary request sends its
 * CRI calls at once and keeps each answer, then summary.c builds the document from them; the CPU sample cache
 * (usageNanoCores between two samples of an object) and the sandboxes' infra pids (the pod network from
 * /proc/<pid>/net/dev) live here, with the provider's lifecycle. */
#include "stats/summary.h"
#include "stats/summary-testing.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/list.h"
#include "basic/log.h"
#include "basic/protobuf.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "stats/host.h"
#include "stats/stats-internal.h"

#define POD_STATS_RETRY_USEC (5 * 60 * USEC_PER_SEC) /* after ListPodSandboxStats failed */

/* ---------------------------------------------------------------- provider */

enum query { Q_SANDBOXES, Q_CONTAINERS, Q_CONTAINER_STATS, Q_POD_STATS, Q_IMAGE_FS, _Q_MAX };

static const char *const query_name[_Q_MAX] = {
        [Q_SANDBOXES] = "ListPodSandbox",
        [Q_CONTAINERS] = "ListContainers",
        [Q_CONTAINER_STATS] = "ListContainerStats",
        [Q_POD_STATS] = "ListPodSandboxStats",
        [Q_IMAGE_FS] = "ImageFsInfo",
};
static const bool query_required[_Q_MAX] = {
        [Q_SANDBOXES] = true,
        [Q_CONTAINERS] = true,
        [Q_CONTAINER_STATS] = true,
};

struct summary_req;

struct req_slot {
        struct summary_req *req;
        enum query q;
};

/* a PodSandboxStatus call for a sandbox whose pid is not known */
struct status_slot {
        struct summary_req *req;
        char *sandbox_id;
};

struct summary_req {
        struct summary_req *prev, *next;
        struct stats_provider *p;
        struct cri_calls calls; /* cancelled with the request when the provider goes */
        stats_summary_cb cb;
        void *userdata;
        unsigned pending; /* CRI calls in flight */
        int error;
        ProtobufCMessage *resp[_Q_MAX];
        struct req_slot slots[_Q_MAX];
        struct status_slot *status; /* PodSandboxStatus calls for sandboxes whose pid is not known */
        size_t n_status;
        struct event *defer; /* completion without CRI calls */
};

static void req_free(struct summary_req *req) {
        if (!req)
                return;
        for (size_t i = 0; i < _Q_MAX; i++)
                if (req->resp[i])
                        protobuf_c_message_free_unpacked(req->resp[i], NULL);
        for (size_t i = 0; i < req->n_status; i++)
                free(req->status[i].sandbox_id);
        free(req->status);
        if (req->defer)
                event_free(req->defer);
        free(req);
}

static void req_unlink(struct stats_provider *p, struct summary_req *req) {
        DLIST_REMOVE(p->reqs, req);
}

/* ---------------------------------------------------------------- CPU sample cache */

static ssize_t cache_find(struct stats_provider *p, const char *key, size_t *ret_pos) {
        size_t lo = 0, hi = p->n_cache;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                int c = strcmp(p->cache[mid].key, key);
                if (c == 0)
                        return (ssize_t) mid;
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_pos = lo;
        return -1;
}

bool stats_provider_nano_cores(struct stats_provider *p, const char *key, uint64_t usage_nsec, int64_t time_nsec,
                               uint64_t *ret) {
        struct cpu_sample *e;
        size_t pos = 0;
        ssize_t i;
        uint64_t rate;

        i = cache_find(p, key, &pos);
        if (i < 0) {
                char *k = strdup(key);
                if (!k)
                        return false;
                if (p->n_cache == p->alloc_cache) {
                        size_t na = p->alloc_cache ? p->alloc_cache * 2 : 32;
                        struct cpu_sample *nc = reallocarray(p->cache, na, sizeof(*nc));
                        if (!nc) {
                                free(k);
                                return false;
                        }
                        p->cache = nc;
                        p->alloc_cache = na;
                }
                memmove(p->cache + pos + 1, p->cache + pos, (p->n_cache - pos) * sizeof(*p->cache));
                p->cache[pos] = (struct cpu_sample) {
                        .key = k, .usage_nsec = usage_nsec, .time_nsec = time_nsec, .seen_usec = now_usec()
                };
                p->n_cache++;
                return false;
        }
        e = &p->cache[i];
        e->seen_usec = now_usec();
        if (time_nsec == e->time_nsec && usage_nsec == e->usage_nsec) {
                /* the same sample again (the runtime caches its stats): the rate computed when it was new */
                if (e->has_rate)
                        *ret = e->rate;
                return e->has_rate;
        }
        if (!stats_nano_cores(e->usage_nsec, e->time_nsec, usage_nsec, time_nsec, &rate)) {
                /* restarted counter or clock going backwards: start over from this sample */
                e->usage_nsec = usage_nsec;
                e->time_nsec = time_nsec;
                e->has_rate = false;
                return false;
        }
        e->usage_nsec = usage_nsec;
        e->time_nsec = time_nsec;
        e->has_rate = true;
        e->rate = rate;
        *ret = rate;
        return true;
}

size_t stats_provider_cache_size(struct stats_provider *p) {
        return p ? p->n_cache : 0;
}

void stats_provider_cache_prune(struct stats_provider *p, uint64_t older_than_usec) {
        size_t k = 0;
        for (size_t i = 0; i < p->n_cache; i++) {
                if (p->cache[i].seen_usec < older_than_usec) {
                        free(p->cache[i].key);
                        continue;
                }
                p->cache[k++] = p->cache[i];
        }
        p->n_cache = k;
}

/* ---------------------------------------------------------------- sandbox pids */

struct sandbox_pid *stats_sandbox_pid_find(struct stats_provider *p, const char *id) {
        for (size_t i = 0; i < p->n_pids; i++)
                if (streq(p->pids[i].id, id))
                        return &p->pids[i];
        return NULL;
}

int stats_provider_set_sandbox_pid(struct stats_provider *p, const char *sandbox_id, int pid) {
        struct sandbox_pid *e = stats_sandbox_pid_find(p, sandbox_id), *n;
        char *id;

        if (e) {
                e->pid = pid;
                e->seen_usec = now_usec();
                return 0;
        }
        id = strdup(sandbox_id);
        n = reallocarray(p->pids, p->n_pids + 1, sizeof(*n));
        if (!id || !n) {
                free(id);
                if (n)
                        p->pids = n;
                return -ENOMEM;
        }
        p->pids = n;
        p->pids[p->n_pids++] = (struct sandbox_pid) { .id = id, .pid = pid, .seen_usec = now_usec() };
        return 0;
}

void stats_sandbox_pids_prune(struct stats_provider *p, uint64_t older_than_usec) {
        size_t k = 0;
        for (size_t i = 0; i < p->n_pids; i++) {
                if (p->pids[i].seen_usec < older_than_usec) {
                        free(p->pids[i].id);
                        continue;
                }
                p->pids[k++] = p->pids[i];
        }
        p->n_pids = k;
}

/* The pid in containerd's verbose PodSandboxStatus info ({"pid": 1234, ...} under the key "info"). */
int stats_sandbox_pid_from_info(const char *info_json, int *ret) {
        json_auto_t *j = NULL;
        json_t *v;
        json_int_t pid;

        if (!info_json)
                return -EINVAL;
        j = json_loads(info_json, JSON_REJECT_DUPLICATES, NULL);
        if (!j)
                return -EINVAL;
        v = json_object_get(j, "pid");
        pid = json_is_integer(v) ? json_integer_value(v) : 0;
        if (pid <= 0 || pid > INT32_MAX)
                return -ENOENT;
        *ret = (int) pid;
        return 0;
}

/* ---------------------------------------------------------------- requests */

static void req_complete(struct summary_req *req) {
        struct stats_provider *p = req->p;
        stats_summary_cb cb = req->cb;
        void *userdata = req->userdata;
        struct stats_summary *summary = NULL;
        int r = req->error;

        if (r >= 0) {
                struct summary_input in = {
                        .sandboxes = (const Runtime__V1__ListPodSandboxResponse *) req->resp[Q_SANDBOXES],
                        .containers = (const Runtime__V1__ListContainersResponse *) req->resp[Q_CONTAINERS],
                        .container_stats = (const Runtime__V1__ListContainerStatsResponse *)
                                                   req->resp[Q_CONTAINER_STATS],
                        .pod_stats = (const Runtime__V1__ListPodSandboxStatsResponse *) req->resp[Q_POD_STATS],
                        .image_fs = (const Runtime__V1__ImageFsInfoResponse *) req->resp[Q_IMAGE_FS],
                };
                r = stats_summary_build(p, &in, &summary);
        }
        req_unlink(p, req);
        req_free(req);
        cb(r, r < 0 ? NULL : summary, userdata);
}

/* a deep copy of a message (the CRI client's is valid only during its callback) */
static ProtobufCMessage *message_copy(const ProtobufCMessage *m) {
        size_t n = protobuf_c_message_get_packed_size(m);
        _cleanup_free_ uint8_t *buf = malloc(n ? n : 1);
        if (!buf)
                return NULL;
        protobuf_c_message_pack(m, buf);
        return protobuf_c_message_unpack(m->descriptor, NULL, n, buf);
}

/* one CRI call of the request is over */
static void req_step_done(struct summary_req *req) {
        req->pending--;
        if (req->pending > 0)
                return;
        req_complete(req);
}

static void on_status_reply(const struct cri_reply *reply, void *userdata) {
        struct status_slot *slot = userdata;
        struct summary_req *req = slot->req;

        if (reply->r >= 0 && reply->msg) {
                const Runtime__V1__PodSandboxStatusResponse *resp = (const Runtime__V1__PodSandboxStatusResponse *)
                                                                            reply->msg;
                const char *info = pb_map_get((void *const *) resp->info, resp->n_info, "info");
                int pid;
                if (stats_sandbox_pid_from_info(info, &pid) < 0) {
                        log_v(4, "stats: no pid in the status of sandbox %s", slot->sandbox_id);
                        pid = 0; /* remembered as unknown: not asked again */
                }
                (void) stats_provider_set_sandbox_pid(req->p, slot->sandbox_id, pid);
        } else
                log_v(4, "stats: PodSandboxStatus %s failed: %s", slot->sandbox_id, reply->message);
        req_step_done(req);
}

/* Ask for the pid of READY sandboxes not seen before (their network namespace gives the pod's network stats
 * when the runtime has no ListPodSandboxStats for them). */
static void resolve_sandbox_pids(struct summary_req *req, const Runtime__V1__ListPodSandboxResponse *resp) {
        struct stats_provider *p = req->p;
        size_t n = 0;

        for (size_t i = 0; i < resp->n_items; i++)
                if (resp->items[i]->state == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY &&
                    !isempty(resp->items[i]->id) && !stats_sandbox_pid_find(p, resp->items[i]->id))
                        n++;
        if (n == 0)
                return;
        req->status = calloc(n, sizeof(*req->status));
        if (!req->status)
                return;
        for (size_t i = 0; i < resp->n_items && req->n_status < n; i++) {
                const Runtime__V1__PodSandbox *sb = resp->items[i];
                Runtime__V1__PodSandboxStatusRequest sreq = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
                struct status_slot *slot = &req->status[req->n_status];

                if (sb->state != RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY || isempty(sb->id) ||
                    stats_sandbox_pid_find(p, sb->id))
                        continue;
                slot->req = req;
                slot->sandbox_id = strdup(sb->id);
                if (!slot->sandbox_id)
                        return;
                req->n_status++;
                sreq.pod_sandbox_id = sb->id;
                sreq.verbose = true;
                if (cri_pod_sandbox_status(p->cri, &sreq, 0, on_status_reply, slot, &req->calls) >= 0)
                        req->pending++;
        }
}

static void on_reply(const struct cri_reply *reply, void *userdata) {
        struct req_slot *slot = userdata;
        struct summary_req *req = slot->req;

        if (reply->r < 0) {
                if (query_required[slot->q]) {
                        if (req->error >= 0)
                                req->error = reply->r;
                        log_v(2, "stats: %s failed: %s", query_name[slot->q], reply->message);
                } else
                        log_v(4, "stats: %s failed: %s", query_name[slot->q], reply->message);
                if (slot->q == Q_POD_STATS) /* e.g. containerd 1.6 for sandboxes without a cgroup parent */
                        req->p->pod_stats_retry_usec = now_usec() + POD_STATS_RETRY_USEC;
        } else if (reply->msg) {
                req->resp[slot->q] = message_copy(reply->msg);
                if (!req->resp[slot->q] && query_required[slot->q] && req->error >= 0)
                        req->error = -ENOMEM;
                if (slot->q == Q_SANDBOXES && req->resp[slot->q] && req->error >= 0)
                        resolve_sandbox_pids(req, (const Runtime__V1__ListPodSandboxResponse *) req->resp[slot->q]);
        }
        req_step_done(req);
}

static void on_defer(evutil_socket_t fd, short what, void *userdata) {
        req_complete(userdata);
}

int stats_summary_get(struct stats_provider *p, stats_summary_cb cb, void *userdata) {
        struct summary_req *req;
        int r;

        if (!p || !cb)
                return -EINVAL;
        req = calloc(1, sizeof(*req));
        if (!req)
                return -ENOMEM;
        req->p = p;
        req->cb = cb;
        req->userdata = userdata;
        for (size_t i = 0; i < _Q_MAX; i++)
                req->slots[i] = (struct req_slot) { .req = req, .q = (enum query) i };

        if (p->cri) {
                Runtime__V1__PodSandboxStateValue ready = RUNTIME__V1__POD_SANDBOX_STATE_VALUE__INIT;
                Runtime__V1__PodSandboxFilter sf = RUNTIME__V1__POD_SANDBOX_FILTER__INIT;
                Runtime__V1__ListPodSandboxRequest sreq = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
                Runtime__V1__ListContainersRequest creq = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
                Runtime__V1__ListContainerStatsRequest csreq = RUNTIME__V1__LIST_CONTAINER_STATS_REQUEST__INIT;
                Runtime__V1__ListPodSandboxStatsRequest psreq = RUNTIME__V1__LIST_POD_SANDBOX_STATS_REQUEST__INIT;
                Runtime__V1__ImageFsInfoRequest ireq = RUNTIME__V1__IMAGE_FS_INFO_REQUEST__INIT;

                ready.state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
                sf.state = &ready;
                sreq.filter = &sf;
                for (size_t i = 0; i < _Q_MAX; i++) {
                        switch ((enum query) i) {
                        case Q_SANDBOXES:
                                r = cri_list_pod_sandbox(p->cri, &sreq, 0, on_reply, &req->slots[i], &req->calls);
                                break;
                        case Q_CONTAINERS:
                                r = cri_list_containers(p->cri, &creq, 0, on_reply, &req->slots[i], &req->calls);
                                break;
                        case Q_CONTAINER_STATS:
                                r = cri_list_container_stats(p->cri, &csreq, 0, on_reply, &req->slots[i], &req->calls);
                                break;
                        case Q_POD_STATS:
                                if (p->pod_stats_retry_usec > now_usec())
                                        continue; /* failed not long ago */
                                r = cri_list_pod_sandbox_stats(p->cri, &psreq, 0, on_reply, &req->slots[i],
                                                               &req->calls);
                                break;
                        case Q_IMAGE_FS:
                                r = cri_image_fs_info(p->cri, &ireq, 0, on_reply, &req->slots[i], &req->calls);
                                break;
                        default:
                                r = -EINVAL;
                        }
                        if (r >= 0)
                                req->pending++;
                        else if (query_required[i] && req->error >= 0)
                                req->error = r;
                }
                if (req->pending == 0) {
                        r = req->error < 0 ? req->error : -EIO;
                        req_free(req);
                        return r;
                }
        } else {
                req->defer = event_new(p->base, -1, 0, on_defer, req);
                if (!req->defer) {
                        req_free(req);
                        return -ENOMEM;
                }
                event_active(req->defer, EV_TIMEOUT, 0);
        }
        DLIST_PREPEND(p->reqs, req);
        return 0;
}

/* ---------------------------------------------------------------- lifecycle */

int stats_provider_new(struct event_base *base, struct cri_client *cri, const struct stats_config *cfg,
                       struct stats_provider **ret) {
        struct stats_provider *p;
        _cleanup_free_ char *meminfo = NULL;

        if (!base || !cfg)
                return -EINVAL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->base = base;
        p->cri = cri;
        p->node_name = strdup(strempty(cfg->node_name));
        p->root_dir = strdup(strempty(cfg->root_dir));
        p->pod_logs_dir = strdup(strempty(cfg->pod_logs_dir));
        p->host_root = strdup(strempty(cfg->host_root));
        p->pods_cgroup = strdup_or_null(cfg->pods_cgroup);
        p->volumes = cfg->volumes;
        p->pod_volumes = cfg->pod_volumes;
        p->pod_volumes_userdata = cfg->pod_volumes_userdata;
        if (!p->node_name || !p->root_dir || !p->pod_logs_dir || !p->host_root ||
            (cfg->pods_cgroup && !p->pods_cgroup)) {
                stats_provider_free(p);
                return -ENOMEM;
        }
        if (stats_read_file(p->host_root, "/proc/meminfo", 64 * 1024, &meminfo) >= 0)
                (void) stats_parse_meminfo(meminfo, "MemTotal", &p->memory_capacity);
        (void) stats_read_boot_time(p->host_root, &p->boot_time_sec);
        p->start_realtime_usec = now_realtime_usec();
        *ret = p;
        return 0;
}

struct stats_provider *stats_provider_free(struct stats_provider *p) {
        struct summary_req *req;

        if (!p)
                return NULL;
        while ((req = p->reqs)) {
                stats_summary_cb cb = req->cb;
                void *userdata = req->userdata;
                req_unlink(p, req);
                cri_calls_cancel(&req->calls);
                req_free(req);
                cb(-ECANCELED, NULL, userdata);
        }
        for (size_t i = 0; i < p->n_cache; i++)
                free(p->cache[i].key);
        free(p->cache);
        for (size_t i = 0; i < p->n_pids; i++)
                free(p->pids[i].id);
        free(p->pids);
        free(p->node_name);
        free(p->root_dir);
        free(p->pod_logs_dir);
        free(p->host_root);
        free(p->pods_cgroup);
        free(p);
        return NULL;
}
