/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet's top level: desired pods from the config sources, the PLEG's view of the runtime (kubelet_pleg.c),
 * and one pod worker per pod UID (pod_workers.go; pod_workers.c). A worker runs at most one reconcile pass at a
 * time (pod_sync.c); requests that arrive meanwhile are coalesced into one more pass. */

#include <inttypes.h>
#include <pwd.h>
#include <string.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "kubelet/kubelet-internal.h"
#include "kubelet/dra.h"
#include "kubelet/admission.h"
#include "kubelet/mirror.h"
#include "node/node_ip.h"
#include "node/node_status.h"
#include "objects/manager.h"
#include "basic/workpool.h"
#include "features/features.h"
#include "images/pull_store.h"
#include "stats/host.h"

#define CRASH_BACKOFF_INITIAL_USEC (10 * USEC_PER_SEC)
#define CRASH_BACKOFF_MAX_USEC (300 * USEC_PER_SEC)
#define REMOVAL_BACKOFF_INITIAL_USEC (10 * USEC_PER_SEC)
#define REMOVAL_BACKOFF_MAX_USEC (300 * USEC_PER_SEC)

static bool desired_contains(const struct kubelet *k, const char *uid);

/* status.startTime as the API server holds it (an API pod seen before a restart), 0 when none */
static int64_t api_start_time_usec(const struct pod *p) {
        const char *v = json_string_value(json_object_get(json_object_get(p->raw, "status"), "startTime"));
        int64_t nsec;

        if (!v || pod_config_is_static(p) || parse_rfc3339(v, &nsec) < 0 || nsec <= 0)
                return 0;
        return nsec / 1000;
}

/* ---------------------------------------------------------------- desired pods */

static bool desired_contains(const struct kubelet *k, const char *uid) {
        if (k->desired_indexed)
                return hashmap_contains(&k->desired_by_uid, uid);
        for (size_t i = 0; i < k->desired.n; i++)
                if (streq(k->desired.pods[i]->uid, uid))
                        return true;
        return false;
}

bool kubelet_pod_desired(const struct kubelet *k, const char *uid) {
        return desired_contains(k, uid);
}

/* an API pod whose status the API server already holds as Succeeded or Failed */
bool kubelet_pod_terminal_in_api(const struct pod *p) {
        const char *phase = json_string_value(json_object_get(json_object_get(p->raw, "status"), "phase"));

        return !pod_config_is_static(p) && (streq_ptr(phase, "Succeeded") || streq_ptr(phase, "Failed"));
}

/* A worker for a desired pod that finished for good, with containers left in the runtime: they are stopped, the pod
 * is not started again. */
static void terminal_worker(struct kubelet *k, struct pod *p) {
        const char *reason = json_string_value(json_object_get(json_object_get(p->raw, "status"), "reason"));
        const char *message = json_string_value(json_object_get(json_object_get(p->raw, "status"), "message"));
        struct pod_worker *w = kubelet_worker_new(k, p->uid);

        if (!w)
                return;
        w->pod = pod_ref(p);
        w->full_name = kubelet_pod_full_name(p->namespace_, p->name);
        w->grace_seconds = p->spec.termination_grace_period_seconds;
        w->terminated = true;
        w->terminated_reason = strdup_or_null(reason);
        w->terminated_message = strdup_or_null(message);
        w->terminated_usec = (int64_t) now_realtime_usec();
        kubelet_terminated_restore(k, w); /* the eviction's grace period, if we evicted it */
        log_info("pod %s/%s (%s) has finished but still has containers: stopping them", p->namespace_, p->name, p->uid);
        kubelet_worker_request_sync(w);
}

/* Make the set of workers match desired + runtime: a worker per desired pod, a terminating worker per pod
 * found in the runtime that is not desired. */
void kubelet_reconcile(struct kubelet *k) {
        /* Like upstream (sourcesReady), nothing is killed before every source has spoken: after a restart the
         * runtime holds pods that are still wanted. */
        if (!k->runtime_listed || !k->config_received || k->stopping)
                return;

        /* removals first, so they free room for additions (--max-pods) */
        for (struct pod_worker *w = k->workers, *next; w; w = next) {
                next = w->next;
                if (w->pod && !desired_contains(k, w->uid)) {
                        log_info("SyncLoop REMOVE: pod=\"%s\" podUID=\"%s\"", strna(w->full_name), w->uid);
                        pod_free(w->last_pod);
                        w->last_pod = TAKE_PTR(w->pod);
                        w->kill_requested = true;
                        kubelet_worker_request_sync(w);
                }
        }

        for (size_t i = 0; i < k->desired.n; i++) {
                struct pod *p = k->desired.pods[i];
                struct pod_worker *w = kubelet_find_worker(k, p->uid);
                bool changed = false;

                if (p->has_deletion_timestamp) {
                        /* graceful deletion from the API: stop within deletionGracePeriodSeconds, then delete */
                        if (!w && strv_contains(k->api_deleted, p->uid))
                                continue; /* stopped and deleted; the watch has not said so yet */
                        if (!w) {
                                w = kubelet_worker_new(k, p->uid);
                                if (!w)
                                        continue;
                                w->full_name = kubelet_pod_full_name(p->namespace_, p->name);
                        }
                        if (w->deleting)
                                continue;
                        w->deleting = true;
                        w->grace_seconds = p->deletion_grace_period_seconds >= 0
                                                   ? p->deletion_grace_period_seconds
                                                   : p->spec.termination_grace_period_seconds;
                        free(w->api_ns);
                        free(w->api_name);
                        w->api_ns = strdup(p->namespace_);
                        w->api_name = strdup(p->name);
                        log_info("SyncLoop DELETE: pod=\"%s/%s\" podUID=\"%s\" gracePeriod=%" PRId64, p->namespace_,
                                 p->name, p->uid, w->grace_seconds);
                        pod_free(w->last_pod);
                        w->last_pod = w->pod ? TAKE_PTR(w->pod) : pod_ref(p);
                        kubelet_worker_request_sync(w);
                        continue;
                }
                if (w && w->deleting)
                        continue;

                if (!w) {
                        if (strv_contains(k->rejected, p->uid))
                                continue;
                        if (kubelet_pod_terminal_in_api(p)) {
                                /* finished before: not run again (filterOutInactivePods); what is left of it in the
                                 * runtime (a kubelet killed in the middle of evicting it) is stopped, and its
                                 * volumes go (by its worker's pass, else here: once, idempotent after a restart) */
                                if (pleg_has_pod(k->pleg, p->uid))
                                        terminal_worker(k, p);
                                else
                                        kubelet_pod_release_volumes(k, p->uid);
                                continue;
                        }
                        if (!kubelet_pod_admit(k, p))
                                continue;
                        w = kubelet_worker_new(k, p->uid);
                        if (!w) {
                                log_error("pod %s: out of memory", p->name);
                                continue;
                        }
                        kubelet_terminated_restore(k, w);
                        kubelet_released_volumes_forget(k, p->uid);
                        log_info("SyncLoop ADD: pod=\"%s/%s\" podUID=\"%s\"", p->namespace_, p->name, p->uid);
                        kubelet_warn_unsupported_fields(k, p);
                        changed = true;
                } else if (w->pod != p) {
                        if (!w->pod)
                                kubelet_released_volumes_forget(k, p->uid);
                        if (!w->pod && w->kill_requested)
                                log_info("Pod is terminating but has been requested to restart with same UID, will be "
                                         "reconciled later: pod=\"%s/%s\" podUID=\"%s\"",
                                         p->namespace_, p->name, p->uid);
                        else if (!w->pod)
                                log_info("pod %s/%s (%s) is desired again", p->namespace_, p->name, p->uid);
                        else
                                log_info("SyncLoop UPDATE: pod=\"%s/%s\" podUID=\"%s\"", p->namespace_, p->name,
                                         p->uid);
                        changed = true;
                }
                if (changed) {
                        w->last_pod = pod_free(w->last_pod);
                        if (!w->start_time_usec)
                                w->start_time_usec = api_start_time_usec(p);
                        if (!w->start_time_usec)
                                w->start_time_usec = (int64_t) now_realtime_usec();
                        pod_free(w->pod);
                        w->pod = pod_ref(p);
                        w->grace_seconds = p->spec.termination_grace_period_seconds;
                        free(w->full_name);
                        w->full_name = kubelet_pod_full_name(p->namespace_, p->name);
                        w->failures = 0;
                        kubelet_worker_update_allocation(k, w);
                        kubelet_worker_request_sync(w);
                        kubelet_worker_check_deadline(w);
                }
        }

        kubelet_ended_prune(k);
        for (char *const *u = pleg_pod_uids(k->pleg); *u; u++)
                if (!kubelet_find_worker(k, *u) && !desired_contains(k, *u) && !kubelet_pod_ended(k, *u)) {
                        struct pod_worker *w = kubelet_worker_new(k, *u);
                        if (!w)
                                continue;
                        k->orphaned_runtime_pods++;
                        log_info("Found a pod in the runtime that is not desired, killing it: podUID=\"%s\"", *u);
                        kubelet_worker_request_sync(w);
                }
}

/* every admitted static pod that is not being removed gets a mirror pod in the API server; one that terminates
 * keeps it, as it is, until it is gone */
void kubelet_sync_mirror_pods(struct kubelet *k) {
        _cleanup_free_ const struct pod **pods = NULL;
        _cleanup_free_ bool *terminating = NULL;
        size_t n = 0;

        /* not before every source delivered (upstream's HandlePodCleanups waits for sourcesReady): after a restart
         * the mirror pods can be listed before the static pods are read, and every one of them looked like an
         * orphan, deleted and made again (the kubeadm tier saw the four control-plane mirror pods replaced) */
        if (!k->mirror || !k->config_received)
                return;
        pods = calloc(k->n_workers + 1, sizeof(*pods));
        terminating = calloc(k->n_workers + 1, sizeof(*terminating));
        if (!pods || !terminating)
                return;
        for (const struct pod_worker *w = k->workers; w && n < k->n_workers; w = w->next) {
                const struct pod *p = w->pod ? w->pod : w->last_pod;
                if (!p || !pod_config_is_static(p))
                        continue;
                terminating[n] = !w->pod;
                pods[n++] = p;
        }
        kubelet_mirror_sync(k->mirror, pods, terminating, n, node_manager_node_uid(k->node));
}

static void on_mirror_pods(const json_t *mirror_pods, void *userdata) {
        struct kubelet *k = userdata;

        kubelet_mirror_observed(k->mirror, mirror_pods);
        kubelet_sync_mirror_pods(k);
        /* a new mirror pod gets the static pod's status */
        for (struct pod_worker *w = k->workers; w; w = w->next)
                if (kubelet_status_pod(w) && pod_config_is_static(kubelet_status_pod(w)))
                        kubelet_report_status(k, w);
}

static void on_config_update(const struct pod_set *pods, void *userdata) {
        struct kubelet *k = userdata;
        struct pod_set n = {};

        for (size_t i = 0; i < pods->n; i++)
                if (pod_set_add(&n, pod_ref(pods->pods[i])) < 0) {
                        log_error("out of memory taking the desired pods");
                        pod_set_done(&n);
                        return;
                }
        hashmap_done(&k->desired_by_uid);
        k->desired_by_uid = (struct hashmap) {};
        pod_set_done(&k->desired);
        k->desired = n;
        k->desired_indexed = true;
        for (size_t i = 0; i < n.n && k->desired_indexed; i++)
                if (hashmap_put(&k->desired_by_uid, n.pods[i]->uid, n.pods[i]) < 0)
                        k->desired_indexed = false; /* desired_contains() searches the set itself then */
        k->config_received = true;
        /* a rejected pod that goes away and comes back is considered again; a deleted one is forgotten */
        for (size_t i = 0; k->rejected && k->rejected[i];) {
                if (!desired_contains(k, k->rejected[i]))
                        strv_remove_at(k->rejected, i);
                else
                        i++;
        }
        for (size_t i = 0; k->api_deleted && k->api_deleted[i];) {
                if (!desired_contains(k, k->api_deleted[i]))
                        strv_remove_at(k->api_deleted, i);
                else
                        i++;
        }
        log_v(2, "desired pods: %zu", n.n);
        kubelet_reconcile(k);
        kubelet_sync_mirror_pods(k);
}

/* a ConfigMap or Secret the pod uses changed: sync it again (its volumes get the new content) */
static void on_objects_changed(const char *uid, void *userdata) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, uid);

        if (w && w->pod)
                kubelet_worker_request_sync(w);
}

/* ---------------------------------------------------------------- cgroups (src/cm) */

int kubelet_update_qos_cgroups(struct kubelet *k) {
        _cleanup_free_ const struct pod **pods = NULL;
        size_t n = 0;

        if (!cm_enabled(k->cm))
                return 0;
        pods = kubelet_worker_pods(k, false, &n);
        if (!pods)
                return -ENOMEM;
        return cm_update_qos(k->cm, pods, n);
}

/* ---------------------------------------------------------------- lifecycle */

int kubelet_new(struct event_base *base, const struct kubelet_options *opts, struct kubelet **ret) {
        struct kubelet *k = calloc(1, sizeof(*k));
        uint64_t crash_max;

        if (!k)
                return -ENOMEM;
        k->base = base;
        k->opts = opts;
        /* newCrashLoopBackOff: crashLoopBackOff.maxContainerRestartPeriod caps it, and the first step too */
        crash_max = k->opts->crash_loop_backoff_max_usec ? k->opts->crash_loop_backoff_max_usec
                                                         : CRASH_BACKOFF_MAX_USEC;
        backoff_init(&k->crash_backoff, MIN(CRASH_BACKOFF_INITIAL_USEC, crash_max), crash_max);
        backoff_init(&k->image_backoff, CRASH_BACKOFF_INITIAL_USEC, CRASH_BACKOFF_MAX_USEC);
        backoff_init(&k->removal_backoff, REMOVAL_BACKOFF_INITIAL_USEC, REMOVAL_BACKOFF_MAX_USEC);
        {
                /* upstream's buckets for kubelet_pod_start_duration_seconds */
                static const double b[] = { 0.5, 1,   2,   3,   4,   5,   6,   8,   10,   20,   30,   45,  60,
                                            120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600 };
                histogram_init(&k->pod_start_hist, b, ELEMENTSOF(b));
                cm_metrics_init(&k->cm_metrics);
        }
        *ret = k;
        return 0;
}

/* the QoS cgroups (kubepods gets the node's capacity less the reservations when "pods" is enforced) */
static int cgroups_setup(struct kubelet *k, struct ck_error **ret_error) {
        return cm_new(k->base, k->opts, (int64_t) k->machine.num_cores * 1000, (int64_t) k->machine.memory_capacity,
                      &k->cm, ret_error);
}

/* NewContainerManager: swap */
static int swap_setup(struct kubelet *k, struct ck_error **ret_error) {
        const struct kubelet_options *o = k->opts;
        bool swap_on = false;
        int r;

        r = stats_swap_is_on(NULL, &swap_on);
        if (r < 0)
                return ck_error_set(ret_error, r, "failed to determine if swap is on: %s", strerror(-r));
        if (swap_on && o->fail_swap_on)
                return ck_error_set(ret_error, -EINVAL,
                                    "running with swap on is not supported, please disable swap "
                                    "or set --fail-swap-on flag to false");
        k->swap_v2 = stats_swap_controller_v2(NULL);
        if (swap_on)
                log_info("swap is on: memorySwap.swapBehavior %s%s",
                         isempty(o->memory_swap_behavior) ? "NoSwap" : o->memory_swap_behavior,
                         k->swap_v2 ? "" : " (no swap controller on cgroup v2: nothing is set)");
        return 0;
}

/* the user namespace ranges, from before a restart (MakeUserNsManager) */
static int userns_setup(struct kubelet *k, struct ck_error **ret_error) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct passwd pw, *pwp = NULL;
        char buf[4096];
        struct userns_config ucfg = { .root_dir = k->opts->root_dir, .max_pods = k->opts->max_pods };
        int r;

        ucfg.user_exists = getpwnam_r("kubelet", &pw, buf, sizeof(buf), &pwp) == 0 && pwp;
        r = userns_manager_new(&ucfg, &k->userns, &err);
        if (r < 0)
                return ck_error_set(ret_error, r, "failed to create user namespace manager: %s",
                                    ck_error_message_or(err, r));
        return 0;
}

/* the pulled-image credential records, from before a restart (KubeletEnsureSecretPulledImages) */
static int pull_records_setup(struct kubelet *k, struct ck_error **ret_error) {
        const struct kubelet_options *o = k->opts;
        int r;

        k->pull_verify_policy = kubelet_options_image_pull_verify_policy(o);
        if (feature_enabled(o->feature_gates, "KubeletEnsureSecretPulledImages")) {
                r = pull_store_new(k->base, o->root_dir, &k->pull_records);
                if (r < 0)
                        return ck_error_set(ret_error, r,
                                            "cannot set up the image pull records in %s/image_manager: %s", o->root_dir,
                                            strerror(-r));
        }
        return 0;
}

/* with --kubeconfig the API source (registered now, started once the node has a client) and the node manager;
 * without (standalone mode), the kubelet's own poll of the runtime's Status */
static int node_setup(struct kubelet *k, struct ck_error **ret_error) {
        const struct kubelet_options *o = k->opts;
        int r;

        if (!isempty(o->kubeconfig)) {
                /* registered now, started once the node has a client: until then no pod set is delivered */
                r = pod_config_add_api_source(k->config, NULL);
                if (r < 0)
                        return r;
                /* made now so that bad --node-labels or --register-with-taints stop the kubelet at start */
                r = node_manager_new(k->base, o, k->node_ip, &k->machine, NULL, k->cri, &k->node, ret_error);
                if (r < 0)
                        return r;
                {
                        int64_t mb, sb;
                        float mf, sf;
                        kubelet_eviction_reservation(k, &mb, &mf, &sb, &sf);
                        node_manager_set_eviction_reservation(k->node, mb, mf, sb, sf);
                }
        } else {
                if (!isempty(o->bootstrap_kubeconfig))
                        log_warning("--bootstrap-kubeconfig is ignored without --kubeconfig (standalone mode)");
                r = runtime_poll_new(k->base, k->cri, &k->runtime_poll);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* the static pods' sources: --pod-manifest-path, --manifest-url */
static int static_pod_sources_setup(struct kubelet *k) {
        const struct kubelet_options *o = k->opts;
        int r;

        if (!isempty(o->pod_manifest_path)) {
                r = pod_config_add_file_source(k->config, o->pod_manifest_path, o->file_check_frequency_usec);
                if (r < 0)
                        return r;
        }
        if (!isempty(o->manifest_url)) {
                r = pod_config_add_http_source(k->config, o->manifest_url, o->manifest_url_headers,
                                               o->http_check_frequency_usec);
                if (r < 0)
                        return r;
        }
        return 0;
}

int kubelet_api_start(struct kubelet *k) {
        const struct kubelet_options *o = k->opts;
        int r;

        assert(k->client && k->node);
        node_manager_set_client(k->node, k->client);
        node_manager_set_heartbeat_client(k->node, k->heartbeat_client);
        r = status_manager_new(k->base, k->client, &k->status);
        if (r < 0)
                return r;
        r = kubelet_mirror_new(k->client, o->node_name, &k->mirror);
        if (r < 0)
                return r;
        pod_config_set_mirror_callback(k->config, on_mirror_pods, k);
        event_recorder_set_client(k->events, k->client);
        objects_manager_set_client(k->objects, k->client);
        volmgr_set_client(k->volumes, k->client);
        csi_nodeinfo_set_client(k->csi_nodeinfo, k->client);
        if (k->csi_nodeinfo)
                csi_nodeinfo_start(k->csi_nodeinfo); /* the nodeid annotation and the CSINode */
        r = pod_config_start_api_source(k->config, k->client);
        if (r < 0)
                return r;
        return node_manager_start(k->node);
}

static int start(struct kubelet *k, struct ck_error **ret_error) {
        const struct kubelet_options *o = k->opts;
        int r;

        r = mkdir_p(o->root_dir, 0750);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot create --root-dir %s: %s", o->root_dir, strerror(-r));
        r = mkdir_p(o->pod_logs_dir, 0755);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot create podLogsDir %s: %s", o->pod_logs_dir, strerror(-r));

        r = cri_client_new(k->base, o->container_runtime_endpoint, o->image_service_endpoint,
                           o->runtime_request_timeout_usec, &k->cri);
        if (r < 0)
                return ck_error_set(ret_error, r, "invalid --container-runtime-endpoint %s: %s",
                                    o->container_runtime_endpoint, strerror(-r));
        r = node_ip_detect(o->node_ip, &k->node_ip);
        if (r < 0)
                return r;
        log_v(1, "node IP: %s", k->node_ip);
        /* the machine's description, read once (cadvisor's cached MachineInfo) */
        r = stats_machine_info_read(NULL, &k->machine);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot read the machine's description: %s", strerror(-r));
        r = swap_setup(k, ret_error);
        if (r < 0)
                return r;
        r = kubelet_eviction_parse(k, ret_error);
        if (r < 0)
                return r;
        r = kubelet_admission_setup(k, ret_error);
        if (r < 0)
                return r;
        r = userns_setup(k, ret_error);
        if (r < 0)
                return r;
        r = pull_records_setup(k, ret_error);
        if (r < 0)
                return r;
        /* the pods' allocated resources, from before a restart */
        r = kubelet_allocation_load(o->root_dir, &k->allocation);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot read the pods' allocations: %s", strerror(-r));
        r = cgroups_setup(k, ret_error);
        if (r < 0)
                return r;
        r = cm_pods_cgroup(k->cm, &k->pods_cgroup);
        if (r < 0)
                return r;
        k->hook_env = (struct probe_env) { .base = k->base,
                                           .cri = k->cri,
                                           .request_timeout_usec = o->runtime_request_timeout_usec };
        r = kubelet_prober_setup(k);
        if (r < 0)
                return r;
        r = kubelet_pleg_setup(k);
        if (r < 0)
                return r;
        r = pod_config_new(k->base, o->node_name, on_config_update, k, &k->config);
        if (r < 0)
                return r;
        r = node_setup(k, ret_error);
        if (r < 0)
                return r;
        r = event_recorder_new(k->base, k->client, o->node_name, &k->events);
        if (r < 0)
                return r;
        r = objects_manager_new(k->base, k->client, on_objects_changed, k, &k->objects);
        if (r >= 0)
                r = objects_manager_set_node_name(k->objects, o->node_name);
        if (r < 0)
                return r;
        r = kubelet_storage_setup(k, ret_error);
        if (r < 0)
                return r;
        r = static_pod_sources_setup(k);
        if (r < 0)
                return r;
        /* the pull queue (puller.go): serialized, one at a time; else up to maxParallelImagePulls (no limit unset) */
        r = slots_new(k->base, kubelet_options_image_pulls(o), &k->image_puller);
        if (r < 0)
                return r;
        /* the sandbox creations: a burst of pods is made faster a few sandboxes at a time than all at once */
        r = slots_new(k->base, kubelet_options_sandbox_creations(o, (long) k->machine.num_cores), &k->sandbox_slots);
        if (r < 0)
                return r;
        r = kubelet_gc_setup(k);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot set up garbage collection and the container log manager: %s",
                                    strerror(-r));
        r = kubelet_eviction_setup(k);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot set up the eviction manager: %s", strerror(-r));
        r = kubelet_cpu_start(k, ret_error);
        if (r < 0)
                return r;
        r = kubelet_shutdown_setup(k);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot set up the node shutdown manager: %s", strerror(-r));
        r = kubelet_plugins_start(k, ret_error);
        if (r < 0)
                return r;
        r = kubelet_pods_api_start(k, ret_error);
        if (r < 0)
                return r;
        r = kubelet_housekeeping_setup(k);
        if (r < 0)
                return r;
        r = kubelet_watchdog_start(k);
        if (r < 0)
                return r;
        if (!isempty(o->kubeconfig)) {
                r = kubelet_credentials_start(k, ret_error);
                if (r < 0)
                        return r;
        }
        kubelet_sync_env_setup(k);
        return pleg_start(k->pleg);
}

int kubelet_start(struct kubelet *k, struct ck_error **ret_error) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        int r;

        r = start(k, &err);
        if (r < 0) {
                /* a step that had nothing to say but its errno */
                if (!err)
                        (void) ck_error_set(&err, r, "%s", strerror(-r));
                ck_error_pass(ret_error, &err);
        }
        return r;
}

struct kubelet *kubelet_free(struct kubelet *k) {
        if (!k)
                return NULL;
        k->stopping = true;
        k->admission.allowed_unsafe_sysctls = strv_free(k->admission.allowed_unsafe_sysctls);
        k->cluster_dns = k->sync_env.cluster_dns = strv_free(k->cluster_dns);
        if (k->housekeeping)
                event_free(k->housekeeping);
        if (k->watchdog)
                event_free(k->watchdog);
        pod_config_free(k->config);
        /* the pods API's watchers are told nothing of the pods going below (they are not deleted) */
        kubelet_pods_api_stop(k);
        /* the pod sync passes: each cancels its CRI calls, hooks, pulls and waits, so none of their callbacks runs
         * into what goes after (they hold tickets of the slots, waits of the volume and object managers, jobs of
         * the pools, lookups of the credential providers) */
        kubelet_workers_free(k);
        /* probes: in-flight ones are abandoned (their exec calls end with the probe environment) */
        k->prober = k->sync_env.prober = probe_manager_free(k->prober);
        kubelet_credentials_stop(k);
        k->runtime_poll = runtime_poll_free(k->runtime_poll); /* each CRI user cancels its calls in flight */
        /* the same for the work on volumes' contents: done() runs now, with -ECANCELED */
        k->pool_contents = k->sync_env.pool_contents = workpool_free(k->pool_contents);
        /* storage: the volume manager's operations are abandoned (CSI calls end with their drivers' clients, which
         * go before the plugin manager, whose registrations they may be answering) */
        k->volumes = k->sync_env.volumes = volmgr_free(k->volumes);
        k->reaper = k->sync_env.reaper = vol_reaper_free(k->reaper);
        k->userns = k->sync_env.userns = userns_manager_free(k->userns);
        k->csi = csi_drivers_free(k->csi);
        kubelet_dra_free(k);
        k->dra_plugins = dra_plugins_free(k->dra_plugins);
        k->plugins = pluginmanager_free(k->plugins);
        kubelet_shutdown_free(k);
        k->node = node_manager_free(k->node);
        kubelet_eviction_free(k);
        kubelet_gc_free(k);
        pleg_free(k->pleg);
        kubelet_cpu_free(k); /* its cpuset updates in flight are cancelled */
        /* the last of its users gone: what is still in flight fails now, and the callbacks only let go of what they
         * hold (a log rotation's reopen renames the log back, an abandoned exec hook's command is forgotten) */
        k->cri = k->sync_env.cri = cri_client_free(k->cri);
        k->image_puller = slots_free(k->image_puller);      /* after the pod syncs: they hold its tickets */
        k->pull_records = pull_store_free(k->pull_records); /* after the pod syncs: they end their pull intents */
        k->sandbox_slots = slots_free(k->sandbox_slots);
        probe_env_done(&k->hook_env); /* after the pod syncs: their hooks are gone */
        k->status = status_manager_free(k->status);
        k->mirror = kubelet_mirror_free(k->mirror);
        k->events = event_recorder_free(k->events);
        k->objects = objects_manager_free(k->objects);
        k->csi_nodeinfo = csi_nodeinfo_free(k->csi_nodeinfo);
        while (k->deletes)
                kubelet_api_delete_free(k->deletes);
        k->client = kube_client_free(k->client);
        k->heartbeat_client = kube_client_free(k->heartbeat_client);
        hashmap_done(&k->desired_by_uid);
        pod_set_done(&k->desired);
        strv_free(k->rejected);
        strv_free(k->api_deleted);
        strv_free(k->final_statuses);
        free(k->node_ip);
        free(k->pods_cgroup);
        backoff_done(&k->crash_backoff);
        backoff_done(&k->image_backoff);
        backoff_done(&k->removal_backoff);
        kubelet_ended_free(k);
        kubelet_released_volumes_free(k); /* after the reaper: its teardowns' done callbacks are over */
        strv_free(k->removals_in_flight);
        k->cm = cm_free(k->cm);
        kubelet_plugins_free(k); /* after the pod syncs: they may hold requests of its */
        k->allocation = kubelet_allocation_free(k->allocation);
        stats_machine_info_done(&k->machine); /* after the node manager: it borrows it */
        free(k);
        return NULL;
}
