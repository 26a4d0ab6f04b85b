/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The csi.v1 Node service of one CSI driver (pkg/volume/csi/csi_client.go), over src/grpc on the loop: every call
 * is asynchronous, has the client's deadline (csiTimeout, 2 minutes, or --csi-request-timeout) and ends in its
 * callback exactly once, never inside the call. A failed call's message is Go's status error text ("rpc error:
 * code = DeadlineExceeded desc = context deadline exceeded"), as upstream's events show it. Secrets are sent and
 * never logged. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/strmap.h"

struct csi_client;

struct csi_node_caps {
        bool stage_unstage; /* STAGE_UNSTAGE_VOLUME */
        bool volume_stats;  /* GET_VOLUME_STATS */
        bool expand;        /* EXPAND_VOLUME */
};

struct csi_volume_usage {
        bool has_bytes, has_inodes;
        int64_t available_bytes, capacity_bytes, used_bytes;
        int64_t inodes_free, inodes, inodes_used;
};

struct csi_reply {
        int r;               /* 0 or a negative errno */
        int grpc_status;     /* 0 = OK */
        const char *message; /* when r < 0: "rpc error: code = ... desc = ..." (never NULL) */
        bool final;          /* when r < 0: isFinalError (false: the driver may still be at it) */
        /* NodeGetCapabilities */
        struct csi_node_caps caps;
        /* NodeGetInfo */
        const char *node_id;
        int64_t max_volumes_per_node;
        const struct strmap *topology; /* accessible_topology.segments, may be empty */
        /* NodeGetVolumeStats */
        struct csi_volume_usage usage;
        /* NodeExpandVolume */
        int64_t capacity_bytes;
};

typedef void (*csi_callback_t)(const struct csi_reply *reply, void *userdata);

/* What NodeStageVolume, NodePublishVolume and NodeExpandVolume carry (borrowed for the call). */
struct csi_node_request {
        const char *volume_id;
        const char *staging_target_path; /* "" / NULL: none */
        const char *target_path;         /* publish; the volume path of an expansion */
        const char *fs_type;             /* "block": a raw block volume */
        char *const *mount_flags;        /* strv or NULL */
        int access_mode;                 /* csi_access_mode() */
        bool read_only;
        const struct strmap *publish_context, *volume_context, *secrets;
        int64_t required_bytes; /* expansion */
};

/* endpoint: the driver's unix socket. timeout_usec 0: CSI_DEFAULT_TIMEOUT_USEC. */
int csi_client_new(struct event_base *base, const char *endpoint, uint64_t timeout_usec, struct csi_client **ret);
/* Calls in flight end now with Canceled (their callbacks run inside this call). Accepts NULL. */
struct csi_client *csi_client_free(struct csi_client *c);

/* Each returns 0 when the callback will run, or a negative errno when it will not (the request could not be
 * made: -ENOMEM, -ESHUTDOWN, -EMSGSIZE, or -EINVAL with the reason logged for a request missing a volume id or
 * path, as upstream's client refuses them). */
int csi_node_get_capabilities(struct csi_client *c, csi_callback_t cb, void *userdata);
int csi_node_get_info(struct csi_client *c, csi_callback_t cb, void *userdata);
int csi_node_stage_volume(struct csi_client *c, const struct csi_node_request *req, csi_callback_t cb, void *userdata);
int csi_node_unstage_volume(struct csi_client *c, const char *volume_id, const char *staging_target_path,
                            csi_callback_t cb, void *userdata);
int csi_node_publish_volume(struct csi_client *c, const struct csi_node_request *req, csi_callback_t cb,
                            void *userdata);
int csi_node_unpublish_volume(struct csi_client *c, const char *volume_id, const char *target_path, csi_callback_t cb,
                              void *userdata);
int csi_node_get_volume_stats(struct csi_client *c, const char *volume_id, const char *volume_path,
                              const char *staging_target_path, csi_callback_t cb, void *userdata);
int csi_node_expand_volume(struct csi_client *c, const struct csi_node_request *req, csi_callback_t cb, void *userdata);
