/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kubelet: owns the desired pods (from config sources), the runtime view (PLEG) and one pod worker per
 * pod UID that reconciles the two (pod_workers.go + kuberuntime SyncPod). Everything runs on one libevent
 * loop. */

#include <event2/event.h>

#include "options/options.h"

#include <jansson.h>
#include <stdbool.h>

#include "basic/histogram.h"
#include "cri/cri.h"
#include "container/container.h"

struct kubelet;
struct prober;
struct ck_error;
struct kube_client;
struct machine_info;
struct stats_provider;

int kubelet_new(struct event_base *base, const struct kubelet_options *opts, struct kubelet **ret);
/* serverTLSBootstrap: CB gets the kubelet API's serving pair from the certificates API (PEM certificate chain
 * and key) when there is one and each time it is renewed. Whoever runs the API server wires it (the kubelet does
 * not know the server). */
typedef void (*kubelet_serving_cert_t)(const char *cert_pem, const char *key_pem, void *userdata);
void kubelet_set_serving_cert_handler(struct kubelet *k, kubelet_serving_cert_t cb, void *userdata);

/* Connects the runtime, starts the PLEG and the config sources. */
int kubelet_start(struct kubelet *k, struct ck_error **ret_error);
/* Stops issuing work; pending CRI calls are cancelled. Pods are left running (as upstream). */
struct kubelet *kubelet_free(struct kubelet *k);

/* ---- for the HTTP API (upstream server.HostInterface); all run on the loop ---- */

/* v1 PodList of the desired pods with their live status (/pods). */
int kubelet_pods_json(struct kubelet *k, json_t **ret);
/* v1 PodList of pods with running containers, as the runtime shows them (/runningpods/). */
int kubelet_running_pods_json(struct kubelet *k, json_t **ret);
/* A copy of the newest (or, with previous, the one before) instance of a container of a desired pod.
 * -ENXIO: no such pod; -ENOENT: the pod has no such container; -ESRCH: no instance (yet). */
int kubelet_lookup_container(struct kubelet *k, const char *ns, const char *pod_name, const char *container,
                             bool previous, struct kc_container **ret, char **ret_pod_uid);
bool kubelet_pod_exists(struct kubelet *k, const char *ns, const char *pod_name, char **ret_uid);
/* The ready sandbox of a desired pod: -ENXIO no such pod, -ESRCH none ready. */
int kubelet_pod_sandbox_id(struct kubelet *k, const char *ns, const char *pod_name, char **ret);
struct cri_client *kubelet_cri(struct kubelet *k);
struct prober *kubelet_prober(struct kubelet *k);
const struct kubelet_options *kubelet_opts(struct kubelet *k);
/* The API server client with --kubeconfig, else NULL. */
struct kube_client *kubelet_kube_client(struct kubelet *k);
const char *kubelet_node_ip(struct kubelet *k);
/* The machine's description, read once at start (valid while k lives). */
const struct machine_info *kubelet_machine_info(struct kubelet *k);
/* The pods' cgroup (cgroupfs path, NULL without QoS cgroups), for /metrics/cadvisor. */
const char *kubelet_pods_cgroup(struct kubelet *k);
/* The kubelet's stats provider (the Summary API), shared by eviction and the server; NULL before kubelet_start. */
struct stats_provider *kubelet_stats(struct kubelet *k);
/* /healthz/syncloop: 0, or -ETIMEDOUT with the reason */
int kubelet_sync_loop_health(struct kubelet *k, struct ck_error **ret_error);

struct cm_metrics;
struct kubelet_counts {
        size_t running_pods;       /* kubelet_running_pods: ready sandboxes */
        size_t running_containers; /* kubelet_running_containers{container_state="running"} */
        size_t desired_pods;
        uint64_t orphaned_runtime_pods;               /* kubelet_orphaned_runtime_pods_total */
        const struct histogram *pod_start;            /* kubelet_pod_start_duration_seconds */
        const struct histogram *pleg_relist_duration; /* kubelet_pleg_relist_duration_seconds; NULL: none yet */
        const struct histogram *pleg_relist_interval; /* kubelet_pleg_relist_interval_seconds; NULL: none yet */
        const struct cm_metrics *cm;                  /* the resource managers' metrics, gauges filled now */
};
void kubelet_counts(struct kubelet *k, struct kubelet_counts *ret);

/* The volume manager's measured volumes: a pod's, or (pod_uid NULL) every PersistentVolumeClaim's; borrowed until
 * the next call. */
struct stats_volume;
size_t kubelet_volume_stats(struct kubelet *k, const char *pod_uid, const struct stats_volume **ret);

/* A running container or ready sandbox as the last sync pass of its pod observed it (cadvisor's labels). */
struct kubelet_container_info {
        const char *id;
        const char *pod_uid, *pod_name, *pod_namespace;
        const char *name;  /* "" for a sandbox */
        const char *image; /* the image the spec names, normalized as the runtime reports it */
        int64_t created_at_nsec;
        bool sandbox;
};
/* Calls cb for every running container and ready sandbox of every pod the kubelet has observed, and for every
 * desired pod itself (id NULL, before its containers). */
void kubelet_foreach_container(struct kubelet *k, void (*cb)(const struct kubelet_container_info *c, void *userdata),
                               void *userdata);
