/* SPDX-License-Identifier: Apache-2.0 */
/* The csi.v1 Node service of one driver, on the loop: see client.h. */

#include "csi/client.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "csi.pb-c.h"
#include "csi/csi.h"
#include "grpc/client.h"

struct csi_client {
        struct grpc_client *grpc;
        char *endpoint;
};

enum call_kind {
        CALL_CAPS,
        CALL_INFO,
        CALL_PLAIN, /* stage, unstage, publish, unpublish: nothing in the reply */
        CALL_STATS,
        CALL_EXPAND,
};

struct call {
        enum call_kind kind;
        csi_callback_t cb;
        void *userdata;
};

int csi_client_new(struct event_base *base, const char *endpoint, uint64_t timeout_usec, struct csi_client **ret) {
        struct csi_client *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        c->endpoint = strdup(endpoint);
        if (!c->endpoint) {
                free(c);
                return -ENOMEM;
        }
        r = grpc_client_new(base, endpoint, timeout_usec ? timeout_usec : CSI_DEFAULT_TIMEOUT_USEC, &c->grpc);
        if (r < 0) {
                free(c->endpoint);
                free(c);
                return r;
        }
        *ret = c;
        return 0;
}

struct csi_client *csi_client_free(struct csi_client *c) {
        if (!c)
                return NULL;
        c->grpc = grpc_client_free(c->grpc);
        free(c->endpoint);
        free(c);
        return NULL;
}

/* ---------------------------------------------------------------- replies */

static void on_reply(const struct grpc_reply *g, void *userdata) {
        struct call *call = userdata;
        struct csi_reply reply = { .r = g->r, .grpc_status = g->grpc_status, .message = "" };
        _cleanup_free_ char *msg = NULL;
        struct strmap topology = {};

        if (g->r < 0) {
                /* past the deadline Go's client reports its context's error, whoever noticed first */
                msg = csi_rpc_error(g->grpc_status, g->grpc_status == GRPC_DEADLINE_EXCEEDED
                                                            ? "context deadline exceeded"
                                                            : g->message);
                reply.message = msg ? msg : "rpc error";
                reply.final = csi_is_final_error(g->grpc_status);
        } else
                switch (call->kind) {
                case CALL_CAPS: {
                        const Csi__V1__NodeGetCapabilitiesResponse *m = (const void *) g->msg;
                        for (size_t i = 0; i < m->n_capabilities; i++) {
                                const Csi__V1__NodeServiceCapability *cap = m->capabilities[i];
                                if (!cap || cap->type_case != CSI__V1__NODE_SERVICE_CAPABILITY__TYPE_RPC || !cap->rpc)
                                        continue;
                                switch (cap->rpc->type) {
                                case CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__STAGE_UNSTAGE_VOLUME:
                                        reply.caps.stage_unstage = true;
                                        break;
                                case CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__GET_VOLUME_STATS:
                                        reply.caps.volume_stats = true;
                                        break;
                                case CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__EXPAND_VOLUME:
                                        reply.caps.expand = true;
                                        break;
                                default:
                                        break;
                                }
                        }
                        break;
                }
                case CALL_INFO: {
                        const Csi__V1__NodeGetInfoResponse *m = (const void *) g->msg;
                        reply.node_id = m->node_id;
                        reply.max_volumes_per_node = m->max_volumes_per_node;
                        for (size_t i = 0; m->accessible_topology && i < m->accessible_topology->n_segments; i++)
                                if (strmap_set(&topology, m->accessible_topology->segments[i]->key,
                                               m->accessible_topology->segments[i]->value) < 0) {
                                        reply.r = -ENOMEM;
                                        reply.message = "out of memory";
                                        reply.final = false;
                                        break;
                                }
                        reply.topology = &topology;
                        break;
                }
                case CALL_STATS: {
                        const Csi__V1__NodeGetVolumeStatsResponse *m = (const void *) g->msg;
                        if (m->n_usage == 0) {
                                reply.r = -EBADMSG;
                                reply.message = "failed to get usage from response. usage is nil";
                                reply.final = true;
                                break;
                        }
                        for (size_t i = 0; i < m->n_usage; i++) {
                                const Csi__V1__VolumeUsage *u = m->usage[i];
                                if (!u)
                                        continue;
                                if (u->unit == CSI__V1__VOLUME_USAGE__UNIT__BYTES) {
                                        reply.usage.has_bytes = true;
                                        reply.usage.available_bytes = u->available;
                                        reply.usage.capacity_bytes = u->total;
                                        reply.usage.used_bytes = u->used;
                                } else if (u->unit == CSI__V1__VOLUME_USAGE__UNIT__INODES) {
                                        reply.usage.has_inodes = true;
                                        reply.usage.inodes_free = u->available;
                                        reply.usage.inodes = u->total;
                                        reply.usage.inodes_used = u->used;
                                }
                        }
                        break;
                }
                case CALL_EXPAND:
                        reply.capacity_bytes =
                                ((const Csi__V1__NodeExpandVolumeResponse *) (const void *) g->msg)->capacity_bytes;
                        break;
                default:
                        break;
                }
        call->cb(&reply, call->userdata);
        strmap_done(&topology);
        free(call);
}

static int call(struct csi_client *c, const char *method, const ProtobufCMessage *req,
                const ProtobufCMessageDescriptor *resp, enum call_kind kind, csi_callback_t cb, void *userdata) {
        struct call *p = calloc(1, sizeof(*p));
        int r;

        if (!p)
                return -ENOMEM;
        *p = (struct call) { .kind = kind, .cb = cb, .userdata = userdata };
        log_v(4, "kubernetes.io/csi: calling %s rpc on %s", method, c->endpoint);
        r = grpc_call(c->grpc, method, req, resp, 0, on_reply, p, NULL);
        if (r < 0)
                free(p);
        return r;
}

/* ---------------------------------------------------------------- map<string,string> fields */

/* every map entry message protoc-c generates for map<string, string> has this layout */
struct kv_entry {
        ProtobufCMessage base;
        char *key;
        char *value;
};

struct kv_map {
        struct kv_entry *entries;
        struct kv_entry **ptrs;
        size_t n;
};

static void kv_map_done(struct kv_map *m) {
        free(m->entries);
        free(m->ptrs);
}

/* borrow the strings of src into entries of the given message type */
static int kv_map_fill(struct kv_map *m, const struct strmap *src, const ProtobufCMessageDescriptor *desc) {
        size_t n = src ? src->n : 0;

        *m = (struct kv_map) {};
        if (n == 0)
                return 0;
        assert(desc->sizeof_message == sizeof(struct kv_entry));
        m->entries = calloc(n, sizeof(*m->entries));
        m->ptrs = calloc(n, sizeof(*m->ptrs));
        if (!m->entries || !m->ptrs) {
                kv_map_done(m);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                protobuf_c_message_init(desc, &m->entries[i]);
                m->entries[i].key = src->keys[i];
                m->entries[i].value = src->values[i];
                m->ptrs[i] = &m->entries[i];
        }
        m->n = n;
        return 0;
}

/* the publish context, secrets and volume context of a stage or publish request */
struct node_maps {
        struct kv_map publish_context;
        struct kv_map secrets;
        struct kv_map volume_context;
};

static void node_maps_done(struct node_maps *m) {
        kv_map_done(&m->publish_context);
        kv_map_done(&m->secrets);
        kv_map_done(&m->volume_context);
}

/* fill the three maps from r, with each one's entry message type; on failure node_maps_done() still frees them */
static int node_maps_fill(struct node_maps *m, const struct csi_node_request *r, const ProtobufCMessageDescriptor *pc,
                          const ProtobufCMessageDescriptor *sec, const ProtobufCMessageDescriptor *vc) {
        int k;

        k = kv_map_fill(&m->publish_context, r->publish_context, pc);
        if (k >= 0)
                k = kv_map_fill(&m->secrets, r->secrets, sec);
        if (k >= 0)
                k = kv_map_fill(&m->volume_context, r->volume_context, vc);
        return k;
}

static void capability(const struct csi_node_request *req, Csi__V1__VolumeCapability *cap,
                       Csi__V1__VolumeCapability__AccessMode *am, Csi__V1__VolumeCapability__MountVolume *mv,
                       Csi__V1__VolumeCapability__BlockVolume *bv) {
        *am = (Csi__V1__VolumeCapability__AccessMode) CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__INIT;
        am->mode = (Csi__V1__VolumeCapability__AccessMode__Mode) req->access_mode;
        cap->access_mode = am;
        if (streq_ptr(req->fs_type, "block")) {
                *bv = (Csi__V1__VolumeCapability__BlockVolume) CSI__V1__VOLUME_CAPABILITY__BLOCK_VOLUME__INIT;
                cap->access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK;
                cap->block = bv;
                return;
        }
        *mv = (Csi__V1__VolumeCapability__MountVolume) CSI__V1__VOLUME_CAPABILITY__MOUNT_VOLUME__INIT;
        mv->fs_type = (char *) strempty(req->fs_type);
        for (size_t i = 0; req->mount_flags && req->mount_flags[i]; i++)
                mv->n_mount_flags++;
        mv->mount_flags = (char **) req->mount_flags;
        cap->access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT;
        cap->mount = mv;
}

/* ---------------------------------------------------------------- calls */

int csi_node_get_capabilities(struct csi_client *c, csi_callback_t cb, void *userdata) {
        Csi__V1__NodeGetCapabilitiesRequest req = CSI__V1__NODE_GET_CAPABILITIES_REQUEST__INIT;
        return call(c, "/csi.v1.Node/NodeGetCapabilities", &req.base,
                    &csi__v1__node_get_capabilities_response__descriptor, CALL_CAPS, cb, userdata);
}

int csi_node_get_info(struct csi_client *c, csi_callback_t cb, void *userdata) {
        Csi__V1__NodeGetInfoRequest req = CSI__V1__NODE_GET_INFO_REQUEST__INIT;
        return call(c, "/csi.v1.Node/NodeGetInfo", &req.base, &csi__v1__node_get_info_response__descriptor, CALL_INFO,
                    cb, userdata);
}

#define REQUIRE(cond, what)                                       \
        do {                                                      \
                if (!(cond)) {                                    \
                        log_error("kubernetes.io/csi: %s", what); \
                        return -EINVAL;                           \
                }                                                 \
        } while (0)

int csi_node_stage_volume(struct csi_client *c, const struct csi_node_request *r, csi_callback_t cb, void *userdata) {
        Csi__V1__NodeStageVolumeRequest req = CSI__V1__NODE_STAGE_VOLUME_REQUEST__INIT;
        Csi__V1__VolumeCapability cap = CSI__V1__VOLUME_CAPABILITY__INIT;
        Csi__V1__VolumeCapability__AccessMode am;
        Csi__V1__VolumeCapability__MountVolume mv;
        Csi__V1__VolumeCapability__BlockVolume bv;
        struct node_maps maps = {};
        int k;

        REQUIRE(!isempty(r->volume_id), "missing volume id");
        REQUIRE(!isempty(r->staging_target_path), "missing staging target path");
        capability(r, &cap, &am, &mv, &bv);
        req.volume_id = (char *) r->volume_id;
        req.staging_target_path = (char *) r->staging_target_path;
        req.volume_capability = &cap;
        k = node_maps_fill(&maps, r, &csi__v1__node_stage_volume_request__publish_context_entry__descriptor,
                           &csi__v1__node_stage_volume_request__secrets_entry__descriptor,
                           &csi__v1__node_stage_volume_request__volume_context_entry__descriptor);
        if (k >= 0) {
                req.n_publish_context = maps.publish_context.n;
                req.publish_context = (void *) maps.publish_context.ptrs;
                req.n_secrets = maps.secrets.n;
                req.secrets = (void *) maps.secrets.ptrs;
                req.n_volume_context = maps.volume_context.n;
                req.volume_context = (void *) maps.volume_context.ptrs;
                k = call(c, "/csi.v1.Node/NodeStageVolume", &req.base, &csi__v1__node_stage_volume_response__descriptor,
                         CALL_PLAIN, cb, userdata);
        }
        node_maps_done(&maps);
        return k;
}

int csi_node_unstage_volume(struct csi_client *c, const char *volume_id, const char *staging_target_path,
                            csi_callback_t cb, void *userdata) {
        Csi__V1__NodeUnstageVolumeRequest req = CSI__V1__NODE_UNSTAGE_VOLUME_REQUEST__INIT;

        REQUIRE(!isempty(volume_id), "missing volume id");
        REQUIRE(!isempty(staging_target_path), "missing staging target path");
        req.volume_id = (char *) volume_id;
        req.staging_target_path = (char *) staging_target_path;
        return call(c, "/csi.v1.Node/NodeUnstageVolume", &req.base, &csi__v1__node_unstage_volume_response__descriptor,
                    CALL_PLAIN, cb, userdata);
}

int csi_node_publish_volume(struct csi_client *c, const struct csi_node_request *r, csi_callback_t cb, void *userdata) {
        Csi__V1__NodePublishVolumeRequest req = CSI__V1__NODE_PUBLISH_VOLUME_REQUEST__INIT;
        Csi__V1__VolumeCapability cap = CSI__V1__VOLUME_CAPABILITY__INIT;
        Csi__V1__VolumeCapability__AccessMode am;
        Csi__V1__VolumeCapability__MountVolume mv;
        Csi__V1__VolumeCapability__BlockVolume bv;
        struct node_maps maps = {};
        int k;

        REQUIRE(!isempty(r->volume_id), "missing volume id");
        REQUIRE(!isempty(r->target_path), "missing target path");
        capability(r, &cap, &am, &mv, &bv);
        req.volume_id = (char *) r->volume_id;
        req.staging_target_path = (char *) strempty(r->staging_target_path);
        req.target_path = (char *) r->target_path;
        req.volume_capability = &cap;
        req.readonly = r->read_only;
        k = node_maps_fill(&maps, r, &csi__v1__node_publish_volume_request__publish_context_entry__descriptor,
                           &csi__v1__node_publish_volume_request__secrets_entry__descriptor,
                           &csi__v1__node_publish_volume_request__volume_context_entry__descriptor);
        if (k >= 0) {
                req.n_publish_context = maps.publish_context.n;
                req.publish_context = (void *) maps.publish_context.ptrs;
                req.n_secrets = maps.secrets.n;
                req.secrets = (void *) maps.secrets.ptrs;
                req.n_volume_context = maps.volume_context.n;
                req.volume_context = (void *) maps.volume_context.ptrs;
                k = call(c, "/csi.v1.Node/NodePublishVolume", &req.base,
                         &csi__v1__node_publish_volume_response__descriptor, CALL_PLAIN, cb, userdata);
        }
        node_maps_done(&maps);
        return k;
}

int csi_node_unpublish_volume(struct csi_client *c, const char *volume_id, const char *target_path, csi_callback_t cb,
                              void *userdata) {
        Csi__V1__NodeUnpublishVolumeRequest req = CSI__V1__NODE_UNPUBLISH_VOLUME_REQUEST__INIT;

        REQUIRE(!isempty(volume_id), "missing volume id");
        REQUIRE(!isempty(target_path), "missing target path");
        req.volume_id = (char *) volume_id;
        req.target_path = (char *) target_path;
        return call(c, "/csi.v1.Node/NodeUnpublishVolume", &req.base,
                    &csi__v1__node_unpublish_volume_response__descriptor, CALL_PLAIN, cb, userdata);
}

int csi_node_get_volume_stats(struct csi_client *c, const char *volume_id, const char *volume_path,
                              const char *staging_target_path, csi_callback_t cb, void *userdata) {
        Csi__V1__NodeGetVolumeStatsRequest req = CSI__V1__NODE_GET_VOLUME_STATS_REQUEST__INIT;

        REQUIRE(!isempty(volume_id), "missing volume id");
        REQUIRE(!isempty(volume_path), "missing target path");
        req.volume_id = (char *) volume_id;
        req.volume_path = (char *) volume_path;
        req.staging_target_path = (char *) strempty(staging_target_path);
        return call(c, "/csi.v1.Node/NodeGetVolumeStats", &req.base,
                    &csi__v1__node_get_volume_stats_response__descriptor, CALL_STATS, cb, userdata);
}

int csi_node_expand_volume(struct csi_client *c, const struct csi_node_request *r, csi_callback_t cb, void *userdata) {
        Csi__V1__NodeExpandVolumeRequest req = CSI__V1__NODE_EXPAND_VOLUME_REQUEST__INIT;
        Csi__V1__VolumeCapability cap = CSI__V1__VOLUME_CAPABILITY__INIT;
        Csi__V1__CapacityRange range = CSI__V1__CAPACITY_RANGE__INIT;
        Csi__V1__VolumeCapability__AccessMode am;
        Csi__V1__VolumeCapability__MountVolume mv;
        Csi__V1__VolumeCapability__BlockVolume bv;

        REQUIRE(!isempty(r->volume_id), "missing volume id");
        REQUIRE(!isempty(r->target_path), "missing volume path");
        REQUIRE(r->required_bytes >= 0, "size can not be less than 0");
        capability(r, &cap, &am, &mv, &bv);
        range.required_bytes = r->required_bytes;
        req.volume_id = (char *) r->volume_id;
        req.volume_path = (char *) r->target_path;
        req.capacity_range = &range;
        req.staging_target_path = (char *) strempty(r->staging_target_path);
        req.volume_capability = &cap;
        return call(c, "/csi.v1.Node/NodeExpandVolume", &req.base, &csi__v1__node_expand_volume_response__descriptor,
                    CALL_EXPAND, cb, userdata);
}
