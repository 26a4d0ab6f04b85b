/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The volume manager's state, shared by its files: manager.c (the states, the API, the reconciler),
 * populator.c (resolving a pod's volumes through the API), operations.c (mount, unmount and unstage),
 * reconstruct.c (the actual state found on the node at start). */

#include "apis/persistent_volume.h"
#include "basic/strmap.h"
#include "basic/workpool.h"
#include "volumemanager/volumemanager.h"

#define VOLMGR_RETRY_MIN_USEC (500 * 1000)          /* initialDurationBeforeRetry */
#define VOLMGR_RETRY_MAX_USEC (122 * 1000000ULL)    /* maxDurationBeforeRetry: 2m2s */
#define VOLMGR_WAIT_TIMEOUT_USEC (123 * 1000000ULL) /* podAttachAndMountTimeout: 2m3s */
#define VOLMGR_RECONCILE_PERIOD_USEC (1000 * 1000)
#define VOLMGR_MOUNT_HELPER_TIMEOUT_USEC (120 * 1000000ULL) /* a mount(8) child is killed after this */
#define VOLMGR_STATS_PERIOD_USEC (60 * 1000000ULL)          /* volumeStatsAggPeriod */
/* per-operation deadlines of the worker jobs: past them the operation fails (and is retried with back-off), and
 * the thread stuck in the kernel (a silent NFS server) is written off and replaced, within the pool's bound */
#define VOLMGR_OP_TIMEOUT_USEC (VOLMGR_MOUNT_HELPER_TIMEOUT_USEC + 30 * 1000000ULL)
#define VOLMGR_STATFS_TIMEOUT_USEC (30 * 1000000ULL)
/* the pools, one per kind of blocking work: threads, and the bound once stuck threads are replaced */
#define VOLMGR_MOUNT_THREADS 2
#define VOLMGR_MOUNT_THREADS_MAX 8
#define VOLMGR_STATS_THREADS 1
#define VOLMGR_STATS_THREADS_MAX 4
#define VOLMGR_OWNERSHIP_THREADS 1
#define VOLMGR_OWNERSHIP_THREADS_MAX 4

#define PLUGIN_DIR_LOCAL "kubernetes.io~local-volume"
#define PLUGIN_DIR_NFS "kubernetes.io~nfs"

enum vm_kind {
        VM_KIND_CSI,        /* a PV's csi source */
        VM_KIND_CSI_INLINE, /* an inline csi volume (ephemeral lifecycle) */
        VM_KIND_LOCAL,      /* a PV's local source */
        VM_KIND_HOST_PATH,  /* a PV's hostPath source */
        VM_KIND_NFS,        /* a PV's or an inline nfs source */
};

/* what a volume is */
struct vm_spec {
        enum vm_kind kind;
        char *spec_name; /* the PV's name, or the pod volume's name (inline): the directory's name */
        bool partial;    /* reconstructed: only what the node knows (driver, handle, name) */
        char *driver, *handle, *fs_type;
        char **mount_options;
        char *access_mode; /* the PV's first access mode, "ReadWriteOnce" by default */
        struct strmap attributes;
        struct secret_ref stage_secret, publish_secret;
        char *path, *host_path_type, *server; /* local, hostPath, nfs */
        bool source_read_only;                /* nfs.readOnly */
        struct persistent_volume *pv;         /* the PV (node affinity of local volumes), or NULL */
};

enum vm_state {
        VM_STATE_NONE,
        VM_STATE_UNCERTAIN, /* reconstructed, or an operation may have half-done it */
        VM_STATE_MOUNTED,
};

/* a pod's use of a volume: wanted (desired state), mounted (actual state) or both */
struct vm_mount {
        struct vm_mount *next;
        char *pod_uid;
        char *outer_name; /* the pod's volume name; NULL for a reconstructed mount no pod claimed yet */
        char *spec_name;  /* the directory below pods/<uid>/volumes/<plugin>/ */
        bool desired;
        enum vm_state state;
        bool read_only; /* the pod's readOnly */
        /* the pod, for SetUp */
        char *pod_name, *pod_ns, *service_account;
        bool has_fs_group;
        int64_t fs_group;
        char *fs_group_policy;
        /* stats */
        bool has_stats;
        struct stats_volume stats; /* the measurement (name and pvcRef filled when reported) */
        char *pvc_ns, *pvc_name;
        bool stats_busy;
        /* expansion (volumeRequiresFSResize): the PV is bigger than the claim's status says */
        int64_t expand_to;   /* bytes, 0 = nothing to do */
        char *expand_to_str; /* the PV's capacity as written, for the claim's status */
};

struct vm_op;
struct stats_req;

struct vm_vol {
        struct vm_vol *next;
        struct volmgr *vm;
        char *unique_name;
        struct vm_spec spec;
        bool have_spec;
        bool reported_in_use;
        enum vm_state dev; /* staged (CSI) */
        bool dev_dir_only; /* the driver has no STAGE_UNSTAGE_VOLUME: only the global directory exists */
        struct vm_mount *mounts;
        struct vm_op *op; /* one operation at a time */
        uint64_t retry_at, delay;
};

/* a pod volume of the desired state, resolved to a volume */
struct vm_pod_vol {
        char *name;       /* the pod's volume name */
        int type;         /* enum volume_type */
        char *claim_name; /* persistentVolumeClaim.claimName, or <pod>-<volume> for ephemeral */
        bool read_only;
        char *unique_name; /* NULL until resolved */
        char *error;       /* the resolution's error, NULL when none */
        bool resolving;
        struct kube_request *req;
        struct persistent_volume_claim pvc;
        struct vm_pod *pod; /* its pod */
};

struct vm_pod {
        struct vm_pod *next;
        struct volmgr *vm;
        struct pod *pod; /* a reference */
        char *uid;
        struct vm_pod_vol *vols;
        size_t n_vols;
        void (*ready)(void *userdata);
        void *ready_data;
        struct event *wait_timer, *poke;
        bool timed_out;
};

struct volmgr {
        struct event_base *base;
        char *root_dir, *node_name;
        struct kube_client *client;
        struct csi_drivers *csi;
        bool (*pod_may_unmount)(const char *uid, void *userdata);
        void (*pod_changed)(const char *uid, void *userdata);
        void (*event)(const char *uid, const char *type, const char *reason, const char *message, void *userdata);
        void *userdata;

        /* one pool per kind of blocking work, so that a stuck mount never holds up stats or ownership */
        struct workpool *pool_mount; /* mount, unmount, unstage, reconstruction */
        struct workpool *pool_stats; /* statfs of mounted volumes */
        struct workpool *pool_own;   /* fsGroup ownership walks */
        struct event *ev_kick, *ev_tick, *ev_notify;
        bool started, reconstructed, sources_ready, freeing;
        struct vm_vol *vols;
        struct vm_pod *pods;
        char **in_use_reported;       /* the last volumesInUse the node status carried */
        char **gone_pods;             /* pods whose last volume went: tell the kubelet (from ev_notify) */
        struct stats_req *stats_reqs; /* NodeGetVolumeStats calls in flight */
        struct stats_volume *stats_out;
        size_t n_stats_out;
        uint64_t last_stats_usec;
};

/* manager.c */
void volmgr_kick(struct volmgr *vm);
struct vm_vol *volmgr_vol_get(struct volmgr *vm, const char *unique_name, bool create);
struct vm_mount *volmgr_mount_get(struct vm_vol *v, const char *uid, bool create);
void volmgr_vol_failed(struct vm_vol *v); /* back off before the next operation */
void volmgr_vol_succeeded(struct vm_vol *v);
void volmgr_pod_event(struct volmgr *vm, const char *uid, const char *reason, const char *fmt, ...) _printf_(4, 5);
void volmgr_spec_done(struct vm_spec *s);
int volmgr_spec_copy(const struct vm_spec *src, struct vm_spec *ret);
/* the host path of a pod's mount of v */
char *volmgr_mount_path(const struct volmgr *vm, const struct vm_vol *v, const struct vm_mount *m);

/* populator.c */
void volmgr_pod_resolve(struct vm_pod *p);
void volmgr_pod_vol_done(struct vm_pod_vol *pv);
void volmgr_pod_check_ready(struct vm_pod *p);

/* operations.c */
int volmgr_op_mount(struct vm_vol *v, struct vm_mount *m);
int volmgr_op_unmount(struct vm_vol *v, struct vm_mount *m);
int volmgr_op_unstage(struct vm_vol *v);
void volmgr_op_orphan(struct vm_op *op); /* the manager is going away */
void volmgr_stats_refresh(struct volmgr *vm);
void volmgr_stats_orphan(struct volmgr *vm); /* calls in flight forget the manager */

/* reconstruct.c */
int volmgr_reconstruct_start(struct volmgr *vm);
