/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kubelet HTTP API (pkg/kubelet/server): the TLS port (--port, authenticated and authorized), the
 * read-only port (--read-only-port, no auth, no debugging handlers) and the healthz port (--healthz-port). All
 * on libevent's evhttp, on the kubelet's loop.
 *
 * The server does not know the kubelet: it reads it through struct api_host (upstream's HostInterface), a
 * table of functions and the pointer they are given, filled by whoever wires the two together (main.c). */

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats/summary.h"

struct api_server;
struct stats_provider;
struct ck_error;
struct cri_client;
struct histogram;
struct cm_metrics;
struct kc_container;
struct kube_client;
struct kubelet_options;
struct machine_info;
struct prober;

struct api_host_counts {
        size_t running_pods;       /* kubelet_running_pods: ready sandboxes */
        size_t running_containers; /* kubelet_running_containers{container_state="running"} */
        size_t desired_pods;
        uint64_t orphaned_runtime_pods;               /* kubelet_orphaned_runtime_pods_total */
        const struct histogram *pod_start;            /* kubelet_pod_start_duration_seconds */
        const struct histogram *pleg_relist_duration; /* kubelet_pleg_relist_duration_seconds; NULL: none yet */
        const struct histogram *pleg_relist_interval; /* kubelet_pleg_relist_interval_seconds; NULL: none yet */
        const struct cm_metrics *cm;                  /* the resource managers'; NULL: none */
};

/* A running container or ready sandbox as the kubelet last observed it (the labels of /metrics/cadvisor). */
struct api_host_container {
        const char *id;
        const char *pod_uid, *pod_name, *pod_namespace;
        const char *name; /* "" for a sandbox */
        const char *image;
        int64_t created_at_nsec;
        bool sandbox;
};

/* What the handlers ask of the kubelet; every function gets `userdata` first and runs on the loop. */
struct api_host {
        /* v1 PodList of the desired pods with their live status (/pods) */
        int (*pods_json)(void *userdata, json_t **ret);
        /* v1 PodList of the pods with running containers, as the runtime shows them (/runningpods/) */
        int (*running_pods_json)(void *userdata, json_t **ret);
        /* a copy of the newest (with previous: the one before) instance of a container of a desired pod; -ENXIO
         * no such pod, -ENOENT no such container in its spec, -ESRCH no instance (yet) */
        int (*lookup_container)(void *userdata, const char *ns, const char *pod_name, const char *container,
                                bool previous, struct kc_container **ret, char **ret_pod_uid);
        /* is the pod desired? its UID in *ret_uid (optional, caller frees) */
        bool (*pod_exists)(void *userdata, const char *ns, const char *pod_name, char **ret_uid);
        /* the ready sandbox of a desired pod: -ENXIO no such pod, -ESRCH none ready */
        int (*pod_sandbox_id)(void *userdata, const char *ns, const char *pod_name, char **ret);
        /* /healthz/syncloop: 0, or a negative errno and why in *ret_error */
        int (*sync_loop_health)(void *userdata, struct ck_error **ret_error);
        void (*counts)(void *userdata, struct api_host_counts *ret);
        /* the volumes the volume manager measured: a pod's (pod_uid), or every PersistentVolumeClaim's (NULL), for
         * the Summary API and kubelet_volume_stats_*; borrowed until the next call. May be NULL. */
        size_t (*volume_stats)(void *userdata, const char *pod_uid, const struct stats_volume **ret);
        /* every running container and ready sandbox */
        void (*foreach_container)(void *userdata, void (*cb)(const struct api_host_container *c, void *cb_userdata),
                                  void *cb_userdata);
        /* the API server client (TokenReview, SubjectAccessReview) as it is now, NULL without one; optional (else
         * the config's client) */
        struct kube_client *(*kube_client)(void *userdata);
        void *userdata;
};

/* Everything the server works with; the pointers are borrowed and must outlive the server. */
struct api_server_config {
        const struct kubelet_options *opts;
        struct cri_client *cri;             /* exec, attach, port-forward, /run, stats, runtime metrics */
        struct prober *prober;              /* probe counts (/metrics/probes) */
        struct kube_client *client;         /* the API server (TokenReview, SubjectAccessReview); NULL without one */
        const char *node_ip;                /* for the self-signed serving certificate */
        const struct machine_info *machine; /* /spec (GetCachedMachineInfo) */
        const char *pods_cgroup;            /* the pods' cgroup for /metrics/cadvisor, NULL: none */
        struct stats_provider *stats;       /* the kubelet's Summary (/stats/summary, /metrics/resource) */
        struct api_host host;
};

/* Binds the listeners the options ask for. Errors name the address and the reason. */
int api_server_new(struct event_base *base, const struct api_server_config *cfg, struct api_server **ret,
                   struct ck_error **ret_error);
/* serverTLSBootstrap: serve CERT_PEM (the leaf, then intermediates) with KEY_PEM to every new TLS connection from
 * now on; connections already open keep theirs. -EINVAL (logged) when they do not parse or match. */
int api_server_set_serving_cert(struct api_server *s, const char *cert_pem, const char *key_pem);
/* Closes the listeners and every connection; cancels streams. Accepts NULL. */
struct api_server *api_server_free(struct api_server *s);
