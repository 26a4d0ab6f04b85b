/* SPDX-License-Identifier: Apache-2.0 */
/* One reconcile pass for one pod (kuberuntime_manager.go SyncPod / KillPod, run by a pod worker):
 *
 *   observe  → ListPodSandbox + ListContainers for the pod's UID, then PodSandboxStatus and ContainerStatus
 *   decide   → kr_compute_pod_actions (or "kill everything" for a pod that is no longer desired)
 *   act      → stop containers, stop sandboxes, run a sandbox, start containers (pull, create, start)
 *   clean up → once settled, remove dead containers and sandboxes (GC)
 *
 * Every step is an asynchronous CRI call; the pass ends in pod_worker_sync_done(), which re-runs the pass
 * at once when it changed anything (level-triggered: the next pass observes the result). */

#include <dirent.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/log.h"
#include "kubelet/hooks.h"
#include "kubelet/kubelet-internal.h"
#include "kuberuntime/actions.h"
#include "kuberuntime/config.h"
#include "kuberuntime/credentials.h"
#include "kuberuntime/labels.h"
#include "kuberuntime/runtime_state.h"
#include "kuberuntime/termination.h"
#include "objects/manager.h"
#include "prober/manager.h"
#include "volumes/volumes.h"

#define MINIMUM_GRACE_PERIOD_SECONDS 2

struct pod_sync {
        struct pod_worker *w;
        struct kubelet *k;
        struct pod *pod;                  /* desired spec (reference) or NULL: terminate */
        struct kr_pod_status *status;
        int pending;                      /* outstanding calls of the current fan-out */
        void (*next)(struct pod_sync *s); /* what to do when pending reaches 0 */

        struct kr_pod_actions actions;
        struct kr_pod_gc gc;
        bool have_actions;
        size_t step;                      /* index into actions.start */
        char *sandbox_id;                 /* sandbox the containers go into */
        char *pod_ip;                     /* the sandbox's IP (NULL: none known, or host network) */
        Runtime__V1__PodSandboxConfig *sandbox_config;
        char *image_ref;
        char *cgroup_parent;              /* the pod cgroup (src/cm), NULL without --cgroups-per-qos */

        /* the API objects of the pod (phase_objects) and the pull credentials of the current image */
        struct pod_refs refs;
        struct pod_objects *objects;
        bool waiting_objects;
        struct kr_keyring keyring;
        const struct kr_auth **creds;
        size_t n_creds, cred_index;
        char *pull_errors;
        /* the image's user (ImageStatus), for runAsUser and runAsNonRoot */
        bool image_user_known, image_uid_set, after_pull;
        int64_t image_uid;
        char *image_username;

        bool did_work;
        bool error;
        uint64_t wake_usec;

        /* lifecycle hooks in flight (hooks.c); the container whose postStart runs */
        struct hook_run *hooks;
        char *started_id;
        char *hook_desc;                  /* format.Pod for the hooks' messages */
};

/* per-call context for fan-out calls that need to know which object they were about */
struct call {
        struct pod_sync *s;
        size_t index;
        bool remove;   /* StopContainer, then RemoveContainer */
        /* a container kill (killContainer): its preStop, then StopContainer with what is left of the grace */
        const char *id, *name;
        int64_t grace;
        uint64_t hook_start_usec;
        struct lifecycle_handler *owned_pre_stop; /* decoded from the container's annotation */
        bool post_start_kill;                     /* after a failed postStart: the start step continues */
};

static void sync_finish(struct pod_sync *s);
static void phase_status(struct pod_sync *s);
static void phase_decide(struct pod_sync *s);
static void phase_stop_sandboxes(struct pod_sync *s);
static void phase_create_sandbox(struct pod_sync *s);
static void phase_start_next(struct pod_sync *s);
static void start_one_done(struct pod_sync *s);
static void phase_objects(struct pod_sync *s);
static void phase_remove_sandboxes(struct pod_sync *s);

void pod_sync_free(struct pod_sync *s) {
        if (!s)
                return;
        hook_run_cancel_all(&s->hooks);
        free(s->started_id);
        free(s->hook_desc);
        pod_free(s->pod);
        kr_pod_status_free(s->status);
        kr_pod_actions_done(&s->actions);
        kr_pod_gc_done(&s->gc);
        free(s->sandbox_id);
        free(s->pod_ip);
        kr_pb_free(s->sandbox_config);
        free(s->image_ref);
        if (s->waiting_objects)
                objects_manager_cancel_wait(s->k->objects, s->w->uid);
        pod_refs_done(&s->refs);
        pod_objects_free(s->objects);
        kr_keyring_done(&s->keyring);
        free(s->creds);
        free(s->pull_errors);
        free(s->cgroup_parent);
        free(s->image_username);
        free(s);
}

static const char *pod_desc(const struct pod_sync *s) {
        return s->w->full_name ? s->w->full_name : s->w->uid;
}

/* What the CRI config builders need besides the spec. */
static void build_context(const struct pod_sync *s, struct kr_build_context *ret) {
        *ret = (struct kr_build_context) {
                .pod_logs_dir = s->k->opts->pod_logs_dir,
                .root_dir = s->k->opts->root_dir,
                .node_name = s->k->opts->node_name,
                .node_ip = s->k->node_ip,
                .pod_ip = s->pod && s->pod->spec.host_network ? s->k->node_ip : s->pod_ip,
                .objects = s->objects,
                .cgroup_parent = s->cgroup_parent,
                .alloc_cpu_milli = s->k->admission.cpu_milli,
                .alloc_memory_bytes = s->k->admission.memory_bytes,
                .image_user_known = s->image_user_known,
                .image_uid_set = s->image_uid_set,
                .image_uid = s->image_uid,
                .image_username = s->image_username,
                .cluster_dns = s->k->cluster_dns,
                .cluster_domain = s->k->opts->cluster_domain,
                .resolv_conf = s->k->opts->resolv_conf,
        };
}

/* Fan-out bookkeeping: a phase issues calls with call_begin() and ends with fanout_end(); when the last
 * call completes, s->next runs. */
static void fanout_begin(struct pod_sync *s, void (*next)(struct pod_sync *s)) {
        s->pending = 1; /* held by the phase itself until fanout_end() */
        s->next = next;
}

static void fanout_release(struct pod_sync *s) {
        if (--s->pending > 0)
                return;
        if (s->k->stopping)
                sync_finish(s); /* shutting down: issue nothing more */
        else
                s->next(s);
}

static void fanout_end(struct pod_sync *s) {
        fanout_release(s);
}

static void call_failed(struct pod_sync *s, const char *what, int r) {
        log_error("pod %s: %s: %s", pod_desc(s), what, strerror(-r));
        s->error = true;
}

static struct call *call_new(struct pod_sync *s, size_t index) {
        struct call *c = malloc(sizeof(*c));
        if (c)
                *c = (struct call) { .s = s, .index = index };
        return c;
}

/* ---------------------------------------------------------------- observe */

#define SET_LABEL_SELECTOR(EntryType, ENTRY_INIT, filter, entry_storage, entry_ptr, uid)   \
        do {                                                                                \
                entry_storage = (EntryType) ENTRY_INIT;                                     \
                entry_storage.key = (char *) LABEL_POD_UID;                                 \
                entry_storage.value = (char *) (uid);                                       \
                entry_ptr = &entry_storage;                                                 \
                (filter).n_label_selector = 1;                                              \
                (filter).label_selector = &entry_ptr;                                       \
        } while (0)

static void on_list_sandboxes(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;

        if (reply->r < 0) {
                log_error("pod %s: ListPodSandbox: %s", pod_desc(s), reply->message);
                s->error = true;
        } else {
                const Runtime__V1__ListPodSandboxResponse *resp = (const void *) reply->msg;
                for (size_t i = 0; i < resp->n_items; i++) {
                        struct kr_sandbox *sb;
                        if (kr_sandbox_from_cri(resp->items[i], &sb) < 0 ||
                            kr_pod_status_add_sandbox(s->status, sb) < 0)
                                s->error = true;
                }
        }
        fanout_release(s);
}

static void on_list_containers(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;

        if (reply->r < 0) {
                log_error("pod %s: ListContainers: %s", pod_desc(s), reply->message);
                s->error = true;
        } else {
                const Runtime__V1__ListContainersResponse *resp = (const void *) reply->msg;
                for (size_t i = 0; i < resp->n_containers; i++) {
                        struct kr_container *c;
                        if (kr_container_from_cri(resp->containers[i], &c) < 0 ||
                            kr_pod_status_add_container(s->status, c) < 0)
                                s->error = true;
                }
        }
        fanout_release(s);
}

static void phase_list(struct pod_sync *s) {
        Runtime__V1__ListPodSandboxRequest sreq = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
        Runtime__V1__PodSandboxFilter sf = RUNTIME__V1__POD_SANDBOX_FILTER__INIT;
        Runtime__V1__PodSandboxFilter__LabelSelectorEntry se, *sep;
        Runtime__V1__ListContainersRequest creq = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
        Runtime__V1__ContainerFilter cf = RUNTIME__V1__CONTAINER_FILTER__INIT;
        Runtime__V1__ContainerFilter__LabelSelectorEntry ce, *cep;
        int r;

        SET_LABEL_SELECTOR(Runtime__V1__PodSandboxFilter__LabelSelectorEntry,
                           RUNTIME__V1__POD_SANDBOX_FILTER__LABEL_SELECTOR_ENTRY__INIT, sf, se, sep, s->w->uid);
        SET_LABEL_SELECTOR(Runtime__V1__ContainerFilter__LabelSelectorEntry,
                           RUNTIME__V1__CONTAINER_FILTER__LABEL_SELECTOR_ENTRY__INIT, cf, ce, cep, s->w->uid);
        sreq.filter = &sf;
        creq.filter = &cf;

        fanout_begin(s, phase_status);
        r = cri_list_pod_sandbox(s->k->cri, &sreq, 0, on_list_sandboxes, s);
        if (r < 0)
                call_failed(s, "ListPodSandbox", r);
        else
                s->pending++;
        r = cri_list_containers(s->k->cri, &creq, 0, on_list_containers, s);
        if (r < 0)
                call_failed(s, "ListContainers", r);
        else
                s->pending++;
        fanout_end(s);
}

static void on_sandbox_status(const struct cri_reply *reply, void *userdata) {
        struct call *c = userdata;
        struct pod_sync *s = c->s;

        if (reply->r == -ENOENT) {
                /* removed meanwhile: the next pass will see it gone */
        } else if (reply->r < 0) {
                log_error("pod %s: PodSandboxStatus: %s", pod_desc(s), reply->message);
                s->error = true;
        } else {
                const Runtime__V1__PodSandboxStatusResponse *resp = (const void *) reply->msg;
                if (resp->status && kr_sandbox_set_status(s->status->sandboxes[c->index], resp->status) < 0)
                        s->error = true;
        }
        free(c);
        fanout_release(s);
}

static void on_container_status(const struct cri_reply *reply, void *userdata) {
        struct call *c = userdata;
        struct pod_sync *s = c->s;

        if (reply->r == -ENOENT) {
                /* removed meanwhile */
        } else if (reply->r < 0) {
                log_error("pod %s: ContainerStatus: %s", pod_desc(s), reply->message);
                s->error = true;
        } else {
                const Runtime__V1__ContainerStatusResponse *resp = (const void *) reply->msg;
                if (resp->status && (kr_container_set_status(s->status->containers[c->index], resp->status) < 0 ||
                                     kr_container_read_termination_message(s->status->containers[c->index],
                                                                           resp->status) < 0))
                        s->error = true;
        }
        free(c);
        fanout_release(s);
}

static void phase_status(struct pod_sync *s) {
        if (s->error) {
                sync_finish(s);
                return;
        }
        kr_pod_status_sort(s->status);

        fanout_begin(s, phase_decide);
        for (size_t i = 0; i < s->status->n_sandboxes && i < 1; i++) {
                Runtime__V1__PodSandboxStatusRequest req = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
                struct call *c = call_new(s, i);
                int r;
                if (!c) {
                        call_failed(s, "PodSandboxStatus", -ENOMEM);
                        break;
                }
                req.pod_sandbox_id = s->status->sandboxes[i]->id;
                r = cri_pod_sandbox_status(s->k->cri, &req, 0, on_sandbox_status, c);
                if (r < 0) {
                        free(c);
                        call_failed(s, "PodSandboxStatus", r);
                } else
                        s->pending++;
        }
        for (size_t i = 0; i < s->status->n_containers; i++) {
                Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
                struct call *c = call_new(s, i);
                int r;
                if (!c) {
                        call_failed(s, "ContainerStatus", -ENOMEM);
                        break;
                }
                req.container_id = s->status->containers[i]->id;
                r = cri_container_status(s->k->cri, &req, 0, on_container_status, c);
                if (r < 0) {
                        free(c);
                        call_failed(s, "ContainerStatus", r);
                } else
                        s->pending++;
        }
        fanout_end(s);
}

/* ---------------------------------------------------------------- act: stop */

/* killContainer's grace period before the minimum is applied (pod deletion, then the spec, then the
 * annotation of a pod no longer known) */
static int64_t grace_raw(const struct pod_sync *s, const struct kr_container *c) {
        int64_t g = -1;
        if (s->pod)
                g = s->pod->spec.termination_grace_period_seconds;
        else {
                const char *v = strmap_get(&c->annotations, ANNOTATION_POD_TERMINATION_GRACE_PERIOD);
                int64_t x;
                if (v && safe_atoi64(v, &x) >= 0)
                        g = x;
                else
                        g = s->w->grace_seconds;
        }
        if (s->pod && s->pod->has_deletion_timestamp && s->pod->deletion_grace_period_seconds >= 0)
                g = s->pod->deletion_grace_period_seconds;
        return g;
}

static int64_t grace_for(const struct pod_sync *s, const struct kr_container *c) {
        return MAX(grace_raw(s, c), (int64_t) MINIMUM_GRACE_PERIOD_SECONDS);
}

/* format.Pod: "name_namespace(uid)", for the hooks' messages */
static const char *hook_desc(struct pod_sync *s) {
        const char *name = s->pod ? s->pod->name : s->status ? s->status->name : NULL;
        const char *ns = s->pod ? s->pod->namespace_ : s->status ? s->status->namespace_ : NULL;

        if (!s->hook_desc && asprintf(&s->hook_desc, "%s_%s(%s)", strempty(name), strempty(ns), s->w->uid) < 0)
                s->hook_desc = NULL;
        return s->hook_desc ? s->hook_desc : pod_desc(s);
}

/* The container of the desired spec with this name (regular, then init), or NULL. */
static const struct container *spec_container(const struct pod_sync *s, const char *name) {
        if (!s->pod || !name)
                return NULL;
        for (size_t i = 0; i < s->pod->spec.n_containers; i++)
                if (streq_ptr(s->pod->spec.containers[i].name, name))
                        return &s->pod->spec.containers[i];
        for (size_t i = 0; i < s->pod->spec.n_init_containers; i++)
                if (streq_ptr(s->pod->spec.init_containers[i].name, name))
                        return &s->pod->spec.init_containers[i];
        return NULL;
}

/* The IP of a sandbox as last observed (the node's for host network), for httpGet hooks. */
static const char *sandbox_ip(const struct pod_sync *s, const char *sandbox_id) {
        for (size_t i = 0; s->status && sandbox_id && i < s->status->n_sandboxes; i++) {
                const struct kr_sandbox *sb = s->status->sandboxes[i];
                if (streq(sb->id, sandbox_id) && sb->have_status)
                        return sb->host_network ? s->k->node_ip : sb->ip;
        }
        return NULL;
}

/* The end of one kill: the fan-out slot, or the start step of a container whose postStart failed. */
static void call_end(struct call *c) {
        struct pod_sync *s = c->s;
        bool post_start = c->post_start_kill;

        lifecycle_handler_free(c->owned_pre_stop);
        free(c);
        if (post_start)
                start_one_done(s);
        else
                fanout_release(s);
}

static void on_remove_stopped(const struct cri_reply *reply, void *userdata) {
        struct call *c = userdata;
        struct pod_sync *s = c->s;

        if (reply->r < 0 && reply->r != -ENOENT) {
                /* e.g. still "starting": nothing new may start before it is gone; retried with back-off */
                log_error("pod %s: RemoveContainer %.12s: %s", pod_desc(s), c->id, reply->message);
                s->error = true;
        }
        call_end(c);
}

static void on_stop_container(const struct cri_reply *reply, void *userdata) {
        struct call *c = userdata;
        struct pod_sync *s = c->s;

        if (reply->r < 0 && reply->r != -ENOENT) {
                log_error("pod %s: StopContainer %.12s: %s", pod_desc(s), c->id, reply->message);
                s->error = true;
        } else if (c->remove && !s->k->stopping) {
                Runtime__V1__RemoveContainerRequest req = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;
                req.container_id = (char *) c->id;
                if (cri_remove_container(s->k->cri, &req, 0, on_remove_stopped, c) >= 0)
                        return; /* the fan-out slot passes to the removal */
                s->error = true;
        }
        call_end(c);
}

static void issue_stop(struct call *c) {
        struct pod_sync *s = c->s;
        Runtime__V1__StopContainerRequest req = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
        int r;

        req.container_id = (char *) c->id;
        req.timeout = c->grace;
        /* the runtime may take the whole grace period: the call's deadline is grace + the request timeout */
        r = cri_stop_container(s->k->cri, &req,
                               (uint64_t) c->grace * USEC_PER_SEC + s->k->opts->runtime_request_timeout_usec,
                               on_stop_container, c);
        if (r < 0) {
                call_failed(s, "StopContainer", r);
                call_end(c);
        }
}

/* executePreStopHook's end: the grace period left (at least the minimum), then StopContainer */
static void on_pre_stop_done(void *userdata, int error, const char *message) {
        struct call *c = userdata;
        struct pod_sync *s = c->s;
        int64_t elapsed;

        if (error == -ECANCELED) { /* the pass is being freed */
                lifecycle_handler_free(c->owned_pre_stop);
                free(c);
                return;
        }
        elapsed = (int64_t) ((now_usec() - c->hook_start_usec) / USEC_PER_SEC);
        if (error == -ETIME)
                log_info("PreStop hook not completed in grace period: pod=\"%s\" podUID=\"%s\" containerName=\"%s\" "
                         "containerID=\"%.12s\" gracePeriod=%" PRId64, pod_desc(s), s->w->uid, c->name, c->id, c->grace);
        else if (error < 0) {
                log_error("PreStop hook failed: pod=\"%s\" containerName=\"%s\" containerID=\"%.12s\": %s", pod_desc(s),
                          c->name, c->id, message ? message : strerror(-error));
                pod_worker_event(s->w, c->name, "Warning", "FailedPreStopHook", "%s", message ? message : strerror(-error));
        } else
                log_v(3, "PreStop hook completed: pod=\"%s\" containerName=\"%s\"", pod_desc(s), c->name);
        c->grace = MAX(c->grace - elapsed, (int64_t) MINIMUM_GRACE_PERIOD_SECONDS);
        if (s->k->stopping) {
                call_end(c);
                return;
        }
        issue_stop(c);
}

/* killContainer after its log line and event: the preStop hook (from the spec, or for a pod no longer
 * known from the annotation written at create time), then StopContainer. The call holds a fan-out slot (or
 * the start step) until it ends. */
static void kill_begin(struct call *c, const struct lifecycle_handler *pre_stop, const struct container *spec,
                       const char *sandbox_id, const char *ports_json) {
        struct pod_sync *s = c->s;
        int r;

        if (pre_stop && !s->k->stopping) {
                struct hook_target t = {
                        .pod_desc = hook_desc(s),
                        .container_name = c->name,
                        .container_id = c->id,
                        .pod_ip = sandbox_ip(s, sandbox_id),
                        .spec = spec,
                        .ports_json = ports_json,
                };
                c->hook_start_usec = now_usec();
                log_v(3, "Running preStop hook: pod=\"%s\" containerName=\"%s\" containerID=\"%.12s\"", pod_desc(s),
                      c->name, c->id);
                r = hook_run_start(&s->k->hook_env, &s->hooks, pre_stop, &t, (uint64_t) c->grace * USEC_PER_SEC,
                                   on_pre_stop_done, c);
                if (r >= 0)
                        return;
                log_error("pod %s: container %s: cannot run the preStop hook: %s", pod_desc(s), c->name, strerror(-r));
        }
        issue_stop(c);
}

/* The preStop handler of a running instance: the desired spec's, else the annotation's. */
static const struct lifecycle_handler *pre_stop_of(struct pod_sync *s, const struct kr_container *kc,
                                                   const struct container *spec, struct call *c) {
        const char *v;
        json_t *j;

        if (spec)
                return spec->pre_stop;
        if (s->pod)
                return NULL; /* a container the spec no longer has: upstream restores it from the labels too */
        v = strmap_get(&kc->annotations, ANNOTATION_CONTAINER_PRESTOP_HANDLER);
        if (!v)
                return NULL;
        j = json_loadb(v, strlen(v), JSON_REJECT_DUPLICATES, NULL);
        if (lifecycle_handler_from_json(j, &c->owned_pre_stop) < 0)
                log_error("pod %s: container %s: cannot decode the preStop handler annotation", pod_desc(s), kc->name);
        json_decref(j);
        return c->owned_pre_stop;
}

static void stop_container(struct pod_sync *s, size_t index, const char *reason, const char *message, bool remove,
                           int64_t grace_override) {
        const struct kr_container *kc = s->status->containers[index];
        const struct container *spec = spec_container(s, kc->name);
        int64_t raw = grace_raw(s, kc), grace = MAX(raw, (int64_t) MINIMUM_GRACE_PERIOD_SECONDS);
        struct call *c = call_new(s, index);
        const struct lifecycle_handler *pre_stop;

        if (!c) {
                call_failed(s, "StopContainer", -ENOMEM);
                return;
        }
        c->remove = remove;
        c->id = kc->id;
        c->name = kc->name;
        /* a failed liveness/startup probe's own terminationGracePeriodSeconds, unless the pod is being deleted */
        if (grace_override >= 0 && !(s->pod && s->pod->has_deletion_timestamp)) {
                raw = grace_override;
                grace = MAX(grace_override, (int64_t) MINIMUM_GRACE_PERIOD_SECONDS);
        }
        c->grace = grace;
        log_info("Killing container with a grace period: pod=\"%s\" podUID=\"%s\" containerName=\"%s\" "
                 "containerID=\"%.12s\" gracePeriod=%" PRId64 " reason=\"%s\"%s%s%s",
                 pod_desc(s), s->w->uid, kc->name, kc->id, grace, reason, message ? " message=\"" : "",
                 message ? message : "", message ? "\"" : "");
        if (message)
                pod_worker_event(s->w, kc->name, "Normal", "Killing", "%s", message);
        else
                pod_worker_event(s->w, kc->name, "Normal", "Killing", "Stopping container %s", kc->name);
        /* as upstream, no preStop without a grace period (a force deletion) */
        pre_stop = raw > 0 ? pre_stop_of(s, kc, spec, c) : NULL;
        s->pending++;
        s->did_work = true;
        kill_begin(c, pre_stop, spec, kc->sandbox_id, strmap_get(&kc->annotations, ANNOTATION_CONTAINER_PORTS));
}

static size_t container_index(const struct pod_sync *s, const struct kr_container *kc) {
        for (size_t i = 0; i < s->status->n_containers; i++)
                if (s->status->containers[i] == kc)
                        return i;
        return SIZE_MAX;
}

static const struct kr_container_kill *find_kill(const struct pod_sync *s, const struct kr_container *kc) {
        for (size_t i = 0; i < s->actions.n_kill; i++)
                if (s->actions.kill[i].container == kc)
                        return &s->actions.kill[i];
        return NULL;
}

/* an instance of a sidecar (as created: a pod no longer desired has no spec) */
static bool is_sidecar(const struct kr_container *kc) {
        return streq_ptr(strmap_get(&kc->annotations, ANNOTATION_CONTAINER_SIDECAR), "true");
}

/* KillPod: every running container, the sidecars in a second round once the others stopped */
static void kill_pod_containers(struct pod_sync *s, bool sidecars) {
        for (size_t i = 0; i < s->status->n_containers; i++) {
                enum kr_container_state st = s->status->containers[i]->state;
                const struct kr_container_kill *k = find_kill(s, s->status->containers[i]);
                if ((st == KR_CONTAINER_RUNNING || st == KR_CONTAINER_UNKNOWN) &&
                    is_sidecar(s->status->containers[i]) == sidecars)
                        stop_container(s, i, k ? k->reason : "Killing", k ? k->message : s->actions.sandbox_reason,
                                       false, k ? k->grace_override : -1);
        }
}

static void phase_kill_sidecars(struct pod_sync *s) {
        fanout_begin(s, phase_stop_sandboxes);
        if (s->actions.kill_pod)
                kill_pod_containers(s, true);
        fanout_end(s);
}

static void phase_kill(struct pod_sync *s) {
        fanout_begin(s, phase_kill_sidecars);
        if (s->actions.kill_pod)
                kill_pod_containers(s, false);
        else
                for (size_t i = 0; i < s->actions.n_kill; i++) {
                        size_t idx = container_index(s, s->actions.kill[i].container);
                        if (idx != SIZE_MAX)
                                stop_container(s, idx, s->actions.kill[i].reason, s->actions.kill[i].message,
                                               s->actions.kill[i].remove, s->actions.kill[i].grace_override);
                }
        fanout_end(s);
}

static void on_stop_sandbox(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;
        if (reply->r < 0 && reply->r != -ENOENT) {
                log_error("pod %s: StopPodSandbox: %s", pod_desc(s), reply->message);
                s->error = true;
        }
        fanout_release(s);
}

static void phase_stop_sandboxes(struct pod_sync *s) {
        if (s->error) {
                sync_finish(s);
                return;
        }
        fanout_begin(s, phase_objects);
        if (s->actions.kill_pod)
                for (size_t i = 0; i < s->status->n_sandboxes; i++) {
                        Runtime__V1__StopPodSandboxRequest req = RUNTIME__V1__STOP_POD_SANDBOX_REQUEST__INIT;
                        int r;
                        if (s->status->sandboxes[i]->state != KR_SANDBOX_READY)
                                continue;
                        log_info("Stopping pod sandbox: pod=\"%s\" podSandboxID=\"%.12s\"", pod_desc(s),
                                 s->status->sandboxes[i]->id);
                        req.pod_sandbox_id = s->status->sandboxes[i]->id;
                        r = cri_stop_pod_sandbox(s->k->cri, &req, 0, on_stop_sandbox, s);
                        if (r < 0)
                                call_failed(s, "StopPodSandbox", r);
                        else {
                                s->pending++;
                                s->did_work = true;
                        }
                }
        fanout_end(s);
}

/* ---------------------------------------------------------------- API objects */

/* A reference that cannot be satisfied blocks the pod as upstream reports it: a volume's with FailedMount, an
 * env's with CreateContainerConfigError. Returns true when it blocks. */
/* A volume's ConfigMap or Secret that cannot be had blocks the pod before its sandbox, as upstream's
 * WaitForAttachAndMount does. (Env references do not: the container's environment builder reports them for
 * that container only, CreateContainerConfigError, and the other containers start.) */
static bool check_volume_ref(struct pod_sync *s, const struct obj_ref *ref) {
        json_t *obj;
        const char *msg = NULL;
        _cleanup_free_ char *nf = NULL;
        int r = pod_objects_lookup(s->objects, ref->kind, s->pod->namespace_, ref->name, &obj, &msg);

        if (r >= 0 || (r == -ENOENT && ref->optional))
                return false;
        if (!msg)
                msg = nf = obj_not_found_message(ref->kind, ref->name);
        if (!msg)
                msg = strerror(-r);
        log_error("pod %s: MountVolume.SetUp failed for volume \"%s\" : %s", pod_desc(s), strna(ref->where), msg);
        pod_worker_event(s->w, NULL, "Warning", "FailedMount", "MountVolume.SetUp failed for volume \"%s\" : %s",
                         strna(ref->where), msg);
        (void) free_and_strdup(&s->w->last_error, msg);
        return true;
}

/* The keyring of the pod's imagePullSecrets (getPullSecretsForPod): one that cannot be had is reported and
 * skipped, the pull may still succeed without it. */
static void build_keyring(struct pod_sync *s) {
        _cleanup_free_ char *failed = NULL;

        for (size_t i = 0; i < s->refs.n_objs; i++) {
                const struct obj_ref *ref = &s->refs.objs[i];
                _cleanup_free_ char *why = NULL;
                const char *msg = NULL;
                json_t *secret;
                int r;

                if (ref->use != OBJ_REF_PULL_SECRET)
                        continue;
                r = pod_objects_lookup(s->objects, "Secret", s->pod->namespace_, ref->name, &secret, &msg);
                if (r >= 0)
                        r = kr_keyring_add_secret(&s->keyring, secret, &why);
                if (r >= 0)
                        continue;
                log_warning("pod %s: Unable to retrieve pull secret %s/%s, the image pull may not succeed: %s",
                            pod_desc(s), s->pod->namespace_, ref->name, why ? why : msg ? msg : strerror(-r));
                {
                        char *n = NULL;
                        if (asprintf(&n, "%s%s%s/%s", strempty(failed), failed ? ", " : "", s->pod->namespace_,
                                     ref->name) < 0)
                                return;
                        free(failed);
                        failed = n;
                }
        }
        if (failed)
                pod_worker_event(s->w, NULL, "Warning", "FailedToRetrieveImagePullSecret",
                                 "Unable to retrieve some image pull secrets (%s); attempting to pull the image may "
                                 "not succeed.", failed);
}

static void objects_ready(void *userdata) {
        struct pod_sync *s = userdata;
        bool blocked = false;
        int r;

        s->waiting_objects = false;
        if (s->k->stopping) {
                sync_finish(s);
                return;
        }
        r = pod_objects_new(&s->objects);
        if (r >= 0)
                r = objects_manager_fill(s->k->objects, s->w->uid, s->objects);
        if (r < 0) {
                call_failed(s, "gathering the pod's API objects", r);
                sync_finish(s);
                return;
        }
        for (size_t i = 0; i < s->refs.n_objs; i++)
                if (s->refs.objs[i].use == OBJ_REF_VOLUME && check_volume_ref(s, &s->refs.objs[i]))
                        blocked = true;
        for (size_t i = 0; i < s->refs.n_tokens; i++) {
                const struct token_ref *t = &s->refs.tokens[i];
                const char *msg = NULL;
                json_t *st;
                r = pod_objects_lookup_token(s->objects, s->pod->namespace_, t->service_account, t->audience,
                                             t->expiration_seconds, &st, &msg);
                if (r >= 0)
                        continue;
                log_error("pod %s: MountVolume.SetUp failed for volume \"%s\" : %s", pod_desc(s), strna(t->volume),
                          strna(msg));
                pod_worker_event(s->w, NULL, "Warning", "FailedMount", "MountVolume.SetUp failed for volume \"%s\" : %s",
                                 strna(t->volume), strna(msg));
                blocked = true;
        }
        if (blocked) {
                s->error = true;
                sync_finish(s);
                return;
        }
        build_keyring(s);
        phase_create_sandbox(s);
}

/* Fetch (or find in the managers' caches) the ConfigMaps, Secrets and tokens the pod refers to before
 * anything is created for it. */
static void phase_objects(struct pod_sync *s) {
        int r;

        if (s->error || !s->pod) {
                sync_finish(s);
                return;
        }
        pod_refs_done(&s->refs);
        r = pod_refs_collect(s->pod->raw, &s->refs);
        if (r >= 0)
                r = objects_manager_register(s->k->objects, s->w->uid, s->pod->namespace_, s->pod->name,
                                             !pod_is_static(s->pod), &s->refs);
        if (r >= 0)
                r = objects_manager_wait(s->k->objects, s->w->uid, objects_ready, s);
        if (r < 0) {
                call_failed(s, "registering the pod's API objects", r);
                sync_finish(s);
                return;
        }
        if (r > 0) {
                log_v(3, "pod %s: waiting for its ConfigMaps, Secrets and tokens", pod_desc(s));
                s->waiting_objects = true;
                return;
        }
        objects_ready(s);
}

/* ---------------------------------------------------------------- act: sandbox */

static void on_new_sandbox_status(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;

        if (reply->r < 0)
                log_warning("pod %s: PodSandboxStatus of the new sandbox failed: %s", pod_desc(s), reply->message);
        else {
                const Runtime__V1__PodSandboxStatusResponse *resp = (const void *) reply->msg;
                const char *ip = resp->status && resp->status->network ? resp->status->network->ip : NULL;
                if (!isempty(ip) && free_and_strdup(&s->pod_ip, ip) < 0)
                        s->error = true;
        }
        fanout_release(s);
}

/* the new sandbox's IP: env (status.podIP), /etc/hosts and probes of the containers about to start */
static void sandbox_ip_query(struct pod_sync *s) {
        Runtime__V1__PodSandboxStatusRequest req = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;

        req.pod_sandbox_id = s->sandbox_id;
        if (cri_pod_sandbox_status(s->k->cri, &req, 0, on_new_sandbox_status, s) >= 0)
                s->pending++;
}

static void on_run_sandbox(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;

        if (reply->r < 0) {
                log_error("pod %s: Failed to create pod sandbox (FailedCreatePodSandBox): %s", pod_desc(s),
                          reply->message);
                pod_worker_event(s->w, NULL, "Warning", "FailedCreatePodSandBox", "Failed to create pod sandbox: %s",
                                 reply->message);
                (void) free_and_strdup(&s->w->last_error, reply->message);
                s->error = true;
        } else {
                const Runtime__V1__RunPodSandboxResponse *resp = (const void *) reply->msg;
                log_info("Created pod sandbox: pod=\"%s\" podSandboxID=\"%.12s\"", pod_desc(s), resp->pod_sandbox_id);
                if (free_and_strdup(&s->sandbox_id, resp->pod_sandbox_id) < 0)
                        s->error = true;
                else
                        sandbox_ip_query(s);
        }
        fanout_release(s);
}

static void phase_create_sandbox(struct pod_sync *s) {
        Runtime__V1__RunPodSandboxRequest req = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;
        _cleanup_free_ char *logdir = NULL;
        struct kr_build_context ctx;
        struct kr_build_report report = {};
        int r;

        if (s->error || !s->pod) {
                sync_finish(s);
                return;
        }
        free(s->cgroup_parent);
        s->cgroup_parent = NULL;
        r = cm_pod_cgroup_parent(s->k->cm, s->pod, &s->cgroup_parent);
        if (r < 0) {
                call_failed(s, "naming the pod cgroup", r);
                sync_finish(s);
                return;
        }
        build_context(s, &ctx);
        ctx.report = &report;
        r = kr_build_sandbox_config(s->pod, s->actions.attempt, &ctx, &s->sandbox_config);
        /* the DNS events (MissingClusterDNS, DNSConfigForming), when a sandbox is made, as upstream */
        for (size_t i = 0; s->actions.create_sandbox && report.event_reasons && report.event_reasons[i]; i++)
                pod_worker_event(s->w, NULL, "Warning", report.event_reasons[i], "%s", report.event_messages[i]);
        if (r < 0) {
                if (report.error)
                        log_error("pod %s: building the sandbox config: %s", pod_desc(s), report.error);
                kr_build_report_done(&report);
                call_failed(s, "building the sandbox config", r);
                sync_finish(s);
                return;
        }
        kr_build_report_done(&report);
        if (!s->actions.create_sandbox) {
                if (free_and_strdup(&s->sandbox_id, s->actions.sandbox_id) < 0)
                        s->error = true;
                for (size_t i = 0; s->status && i < s->status->n_sandboxes; i++) {
                        const struct kr_sandbox *sb = s->status->sandboxes[i];
                        if (streq(sb->id, s->actions.sandbox_id) && sb->have_status && !isempty(sb->ip) &&
                            free_and_strdup(&s->pod_ip, sb->ip) < 0)
                                s->error = true;
                }
                phase_start_next(s);
                return;
        }
        /* A static pod replaced by a new version (new UID, same name) starts only once the old one is
         * gone: never two copies at once. */
        if (kubelet_name_is_busy(s->k, s->w)) {
                log_info("pod %s: waiting for the previous pod with the same name to terminate", pod_desc(s));
                s->w->waiting_for_name = true;
                sync_finish(s);
                return;
        }
        s->w->waiting_for_name = false;

        logdir = kr_pod_log_dir(s->k->opts->pod_logs_dir, s->pod);
        if (!logdir || mkdir_p(logdir, 0755) < 0) {
                log_error("pod %s: cannot create log directory %s: %m", pod_desc(s), strna(logdir));
                s->error = true;
                sync_finish(s);
                return;
        }
        /* the pod cgroup before the sandbox that goes into it (upstream: UpdateQOSCgroups, then EnsureExists) */
        r = kubelet_pod_cgroup_ensure(s->k, s->pod);
        if (r < 0) {
                log_error("pod %s: cannot create the pod cgroup: %s", pod_desc(s), strerror(-r));
                s->error = true;
                sync_finish(s);
                return;
        }
        log_info("Creating pod sandbox: pod=\"%s\" attempt=%" PRIu32 " reason=\"%s\"", pod_desc(s),
                 s->actions.attempt, strna(s->actions.sandbox_reason));
        req.config = s->sandbox_config;
        fanout_begin(s, phase_start_next);
        r = cri_run_pod_sandbox(s->k->cri, &req, 0, on_run_sandbox, s);
        if (r < 0)
                call_failed(s, "RunPodSandbox", r);
        else {
                s->pending++;
                s->did_work = true;
        }
        fanout_end(s);
}

/* ---------------------------------------------------------------- act: containers */

/* init containers first, then app containers */
static const struct container *current_container(const struct pod_sync *s) {
        if (s->step < s->actions.n_init_start)
                return &s->pod->spec.init_containers[s->actions.init_start[s->step]];
        return &s->pod->spec.containers[s->actions.start[s->step - s->actions.n_init_start]];
}

static void start_one_done(struct pod_sync *s) {
        s->step++;
        phase_start_next(s);
}

/* The restart count of the next instance: one more than the newest, or, with no instance left in the
 * runtime, one more than the highest N.log in the container's log directory (so logs are not
 * overwritten). */
static uint32_t next_restart_count(const struct pod_sync *s, const struct container *c) {
        const struct kr_container *cs = kr_pod_status_find_container(s->status, c->name);
        _cleanup_free_ char *podlog = NULL, *dir = NULL;
        struct dirent *de;
        DIR *d;
        int max = -1;

        if (cs)
                return (uint32_t) cs->restart_count + 1;
        podlog = kr_pod_log_dir(s->k->opts->pod_logs_dir, s->pod);
        if (!podlog || asprintf(&dir, "%s/%s", podlog, c->name) < 0)
                return 0;
        d = opendir(dir);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                int n;
                char *dot = strrchr(de->d_name, '.');
                if (!dot || !streq(dot, ".log"))
                        continue;
                *dot = '\0';
                if (safe_atoi(de->d_name, &n) >= 0 && n > max)
                        max = n;
        }
        closedir(d);
        return (uint32_t) (max + 1);
}

/* startContainer's last step: a postStart hook that failed kills the container (killContainer with the
 * message "FailedPostStartHook", its preStop included); the start step ends once it is stopped. */
static void on_post_start_done(void *userdata, int error, const char *message) {
        struct pod_sync *s = userdata;
        const struct container *c;
        const struct lifecycle_handler *pre_stop;
        struct call *k;

        if (error == -ECANCELED)
                return; /* the pass is being freed */
        c = current_container(s);
        if (error >= 0 || s->k->stopping) {
                start_one_done(s);
                return;
        }
        if (!message)
                message = strerror(-error);
        log_error("Failed to execute PostStartHook: pod=\"%s\" podUID=\"%s\" containerName=\"%s\" containerID=\"%.12s\": %s",
                  pod_desc(s), s->w->uid, c->name, s->started_id, message);
        pod_worker_event(s->w, c->name, "Warning", "FailedPostStartHook", "%s", message);
        pod_worker_set_waiting(s->w, c->name, "PostStartHookError", "%s", message);
        s->error = true;
        k = call_new(s, 0);
        if (!k) {
                call_failed(s, "StopContainer", -ENOMEM);
                start_one_done(s);
                return;
        }
        k->id = s->started_id;
        k->name = c->name;
        k->post_start_kill = true;
        pre_stop = c->pre_stop;
        k->grace = grace_for(s, NULL);
        if (grace_raw(s, NULL) <= 0)
                pre_stop = NULL;
        log_info("Killing container with a grace period: pod=\"%s\" podUID=\"%s\" containerName=\"%s\" "
                 "containerID=\"%.12s\" gracePeriod=%" PRId64 " reason=\"FailedPostStartHook\"",
                 pod_desc(s), s->w->uid, c->name, s->started_id, k->grace);
        pod_worker_event(s->w, c->name, "Normal", "Killing", "FailedPostStartHook");
        kill_begin(k, pre_stop, c, s->sandbox_id, NULL);
}

/* postStart has no deadline upstream (it holds the pod's sync until it returns): here it is cut at the
 * pod's terminationGracePeriodSeconds, and not before 30 s. */
static uint64_t post_start_timeout_usec(const struct pod_sync *s) {
        return (uint64_t) MAX(s->pod->spec.termination_grace_period_seconds, (int64_t) 30) * USEC_PER_SEC;
}

static void on_start_container(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;
        const struct container *c = current_container(s);

        if (reply->r < 0) {
                log_error("pod %s: container %s: RunContainerError: %s", pod_desc(s), c->name, reply->message);
                pod_worker_event(s->w, c->name, "Warning", "Failed", "Error: %s", reply->message);
                pod_worker_set_waiting(s->w, c->name, "RunContainerError", "%s", reply->message);
                s->error = true;
        } else {
                log_info("Started container: pod=\"%s\" containerName=\"%s\"", pod_desc(s), c->name);
                pod_worker_event(s->w, c->name, "Normal", "Started", "Started container %s", c->name);
                pod_worker_clear_waiting(s->w, c->name);
                if (c->post_start && !s->k->stopping) {
                        struct hook_target t = {
                                .pod_desc = hook_desc(s),
                                .container_name = c->name,
                                .container_id = s->started_id,
                                .pod_ip = s->pod->spec.host_network ? s->k->node_ip : s->pod_ip,
                                .spec = c,
                        };
                        int r = hook_run_start(&s->k->hook_env, &s->hooks, c->post_start, &t, post_start_timeout_usec(s),
                                               on_post_start_done, s);
                        if (r >= 0)
                                return; /* the start step waits for the hook */
                        log_error("pod %s: container %s: cannot run the postStart hook: %s", pod_desc(s), c->name,
                                  strerror(-r));
                        s->error = true;
                }
        }
        start_one_done(s);
}

static void on_create_container(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;
        const struct container *c = current_container(s);
        Runtime__V1__StartContainerRequest req = RUNTIME__V1__START_CONTAINER_REQUEST__INIT;
        const Runtime__V1__CreateContainerResponse *resp = (const void *) reply->msg;
        int r;

        if (reply->r < 0) {
                log_error("pod %s: container %s: CreateContainerError: %s", pod_desc(s), c->name, reply->message);
                pod_worker_event(s->w, c->name, "Warning", "Failed", "Error: %s", reply->message);
                pod_worker_set_waiting(s->w, c->name, "CreateContainerError", "%s", reply->message);
                s->error = true;
                start_one_done(s);
                return;
        }
        if (s->k->stopping) {
                start_one_done(s);
                return;
        }
        log_info("Created container: pod=\"%s\" containerName=\"%s\" containerID=\"%.12s\"", pod_desc(s), c->name,
                 resp->container_id);
        pod_worker_event(s->w, c->name, "Normal", "Created", "Created container %s", c->name);
        if (free_and_strdup(&s->started_id, resp->container_id) < 0) {
                call_failed(s, "StartContainer", -ENOMEM);
                start_one_done(s);
                return;
        }
        req.container_id = resp->container_id;
        r = cri_start_container(s->k->cri, &req, 0, on_start_container, s);
        if (r < 0) {
                call_failed(s, "StartContainer", r);
                start_one_done(s);
        }
}

static void create_container(struct pod_sync *s) {
        const struct container *c = current_container(s);
        Runtime__V1__CreateContainerRequest req = RUNTIME__V1__CREATE_CONTAINER_REQUEST__INIT;
        Runtime__V1__ContainerConfig *cfg = NULL;
        _cleanup_free_ char *podlog = NULL, *dir = NULL;
        struct kr_build_context ctx;
        struct kr_build_report report = {};
        uint32_t restart_count = next_restart_count(s, c);
        int r;

        podlog = kr_pod_log_dir(s->k->opts->pod_logs_dir, s->pod);
        if (!podlog || asprintf(&dir, "%s/%s", podlog, c->name) < 0 || mkdir_p(dir, 0755) < 0) {
                log_error("pod %s: cannot create the log directory of container %s", pod_desc(s), c->name);
                s->error = true;
                start_one_done(s);
                return;
        }
        build_context(s, &ctx);
        ctx.report = &report;
        r = kr_build_container_config(s->pod, c, restart_count, s->image_ref, &ctx, &cfg);
        for (size_t i = 0; report.event_reasons && report.event_reasons[i]; i++)
                pod_worker_event(s->w, NULL, "Warning", report.event_reasons[i], "%s", report.event_messages[i]);
        if (r < 0) {
                const char *msg = report.error ? report.error : strerror(-r);
                pod_worker_set_waiting(s->w, c->name, "CreateContainerConfigError", "%s", msg);
                pod_worker_event(s->w, c->name, "Warning", "Failed", "Error: %s", msg);
                log_error("pod %s: container %s: CreateContainerConfigError: %s", pod_desc(s), c->name, msg);
                kr_build_report_done(&report);
                s->error = true;
                start_one_done(s);
                return;
        }
        kr_build_report_done(&report);
        req.pod_sandbox_id = s->sandbox_id;
        req.config = cfg;
        req.sandbox_config = s->sandbox_config;
        r = cri_create_container(s->k->cri, &req, 0, on_create_container, s);
        kr_pb_free(cfg);
        if (r < 0) {
                call_failed(s, "CreateContainer", r);
                start_one_done(s);
                return;
        }
        s->did_work = true;
}

static char *image_backoff_key(const struct pod_sync *s, const struct container *c) {
        char *k = NULL;
        if (asprintf(&k, "%s_%s", s->w->uid, c->image) < 0)
                return NULL;
        return k;
}

static void pull_image_try(struct pod_sync *s);
static void image_status_query(struct pod_sync *s, const char *image);

static void on_pull_image(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;
        const struct container *c = current_container(s);
        _cleanup_free_ char *key = image_backoff_key(s, c);

        if (reply->r < 0 && s->n_creds > 1) {
                /* with several matching credentials, each is tried in turn; the error aggregates them all */
                char *n = NULL;
                if (asprintf(&n, "%s%s%s", strempty(s->pull_errors), s->pull_errors ? ", " : "", reply->message) >= 0) {
                        free(s->pull_errors);
                        s->pull_errors = n;
                }
                if (++s->cred_index < s->n_creds && !s->k->stopping) {
                        pull_image_try(s);
                        return;
                }
        }
        if (reply->r < 0) {
                _cleanup_free_ char *agg = NULL;
                const char *message = reply->message;
                if (s->n_creds > 1 && s->pull_errors && asprintf(&agg, "[%s]", s->pull_errors) >= 0)
                        message = agg;
                log_error("pod %s: container %s: Failed to pull image \"%s\": %s (ErrImagePull)", pod_desc(s),
                          c->name, c->image, message);
                pod_worker_event(s->w, c->name, "Warning", "Failed", "Failed to pull image \"%s\": %s", c->image,
                                 message);
                pod_worker_event(s->w, c->name, "Warning", "Failed", "Error: ErrImagePull");
                pod_worker_set_waiting(s->w, c->name, "ErrImagePull", "%s", message);
                if (key)
                        (void) backoff_next(&s->k->image_backoff, key, now_usec(), now_usec());
                s->error = true;
                start_one_done(s);
                return;
        }
        log_info("Successfully pulled image: pod=\"%s\" image=\"%s\"", pod_desc(s), c->image);
        pod_worker_event(s->w, c->name, "Normal", "Pulled", "Successfully pulled image \"%s\"", c->image);
        if (key)
                backoff_reset(&s->k->image_backoff, key);
        if (free_and_strdup(&s->image_ref, ((const Runtime__V1__PullImageResponse *) (const void *) reply->msg)->image_ref) < 0) {
                s->error = true;
                start_one_done(s);
                return;
        }
        /* the pulled image's user, as getImageUser asks for it before creating the container */
        s->after_pull = true;
        image_status_query(s, s->image_ref);
}

static void pull_image(struct pod_sync *s) {
        const struct container *c = current_container(s);
        _cleanup_free_ char *key = image_backoff_key(s, c);
        uint64_t until;
        int r;

        if (key && backoff_in_backoff_since(&s->k->image_backoff, key, backoff_last_update(&s->k->image_backoff, key),
                                            now_usec(), &until)) {
                pod_worker_set_waiting(s->w, c->name, "ImagePullBackOff", "Back-off pulling image \"%s\"", c->image);
                log_v(2, "pod %s: container %s: Back-off pulling image \"%s\"", pod_desc(s), c->name, c->image);
                pod_worker_event(s->w, c->name, "Normal", "BackOff", "Back-off pulling image \"%s\"", c->image);
                pod_worker_event(s->w, c->name, "Warning", "Failed", "Error: ImagePullBackOff");
                if (!s->wake_usec || until < s->wake_usec)
                        s->wake_usec = until;
                start_one_done(s);
                return;
        }
        log_info("Pulling image: pod=\"%s\" image=\"%s\"", pod_desc(s), c->image);
        pod_worker_event(s->w, c->name, "Normal", "Pulling", "Pulling image \"%s\"", c->image);
        pod_worker_set_waiting(s->w, c->name, "ContainerCreating", "%s", "");
        free(s->creds);
        s->creds = NULL;
        s->n_creds = s->cred_index = 0;
        free(s->pull_errors);
        s->pull_errors = NULL;
        r = kr_keyring_lookup(&s->keyring, c->image, &s->creds, &s->n_creds);
        if (r < 0) {
                call_failed(s, "looking up pull credentials", r);
                start_one_done(s);
                return;
        }
        pull_image_try(s);
}

/* PullImage with the next matching credential (none when there is none) */
static void pull_image_try(struct pod_sync *s) {
        const struct container *c = current_container(s);
        Runtime__V1__PullImageRequest req = RUNTIME__V1__PULL_IMAGE_REQUEST__INIT;
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
        Runtime__V1__AuthConfig auth = RUNTIME__V1__AUTH_CONFIG__INIT;
        int r;

        spec.image = c->image;
        req.image = &spec;
        req.sandbox_config = s->sandbox_config;
        if (s->cred_index < s->n_creds) {
                /* no server_address: containerd ignores credentials whose address does not parse as its host */
                auth.username = s->creds[s->cred_index]->username;
                auth.password = s->creds[s->cred_index]->password;
                req.auth = &auth;
                log_v(3, "pod %s: pulling image \"%s\" with the credentials for %s", pod_desc(s), c->image,
                      s->creds[s->cred_index]->key);
        }
        /* pulls can take long: no shorter deadline than the request timeout, as upstream (image pull
         * progress deadline aside) */
        r = cri_pull_image(s->k->cri, &req, 0, on_pull_image, s);
        if (r < 0) {
                call_failed(s, "PullImage", r);
                start_one_done(s);
                return;
        }
        s->did_work = true;
}

static void on_image_status(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;
        const struct container *c = current_container(s);
        const Runtime__V1__ImageStatusResponse *resp = (const void *) reply->msg;

        if (reply->r < 0) {
                log_error("pod %s: container %s: ImageStatus \"%s\": %s", pod_desc(s), c->name, c->image,
                          reply->message);
                pod_worker_set_waiting(s->w, c->name, "ErrImageInspect", "%s", reply->message);
                s->error = true;
                start_one_done(s);
                return;
        }
        if (resp->image && !isempty(resp->image->id)) {
                s->image_user_known = true;
                s->image_uid_set = resp->image->uid != NULL;
                s->image_uid = resp->image->uid ? resp->image->uid->value : 0;
                if (free_and_strdup(&s->image_username, isempty(resp->image->username) ? NULL : resp->image->username) < 0) {
                        s->error = true;
                        start_one_done(s);
                        return;
                }
                if (s->after_pull) {
                        create_container(s);
                        return;
                }
                log_v(3, "pod %s: container image \"%s\" already present on machine", pod_desc(s), c->image);
                pod_worker_event(s->w, c->name, "Normal", "Pulled", "Container image \"%s\" already present on machine",
                                 c->image);
                if (free_and_strdup(&s->image_ref, resp->image->id) < 0) {
                        s->error = true;
                        start_one_done(s);
                        return;
                }
                create_container(s);
                return;
        }
        if (s->after_pull) {
                /* just pulled, yet not listed: create it anyway (the image's user stays unknown) */
                create_container(s);
                return;
        }
        if (c->image_pull_policy == PULL_POLICY_NEVER) {
                log_error("pod %s: container %s: Container image \"%s\" is not present with pull policy of Never "
                          "(ErrImageNeverPull)",
                          pod_desc(s), c->name, c->image);
                pod_worker_set_waiting(s->w, c->name, "ErrImageNeverPull",
                                       "Container image \"%s\" is not present with pull policy of Never", c->image);
                s->error = true;
                start_one_done(s);
                return;
        }
        pull_image(s);
}

/* doBackOff: a container that exited is restarted only after its back-off. One killed in this pass for a
 * failed liveness/startup probe counts as exited now: repeated probe kills back off like crashes. */
static bool in_crash_backoff(struct pod_sync *s, const struct container *c) {
        const struct kr_container *cs = kr_pod_status_find_container(s->status, c->name);
        const struct kr_container_kill *k = cs ? find_kill(s, cs) : NULL;
        _cleanup_free_ char *key = NULL;
        char hash[KR_HASH_MAX];
        uint64_t finished, until, now = now_realtime_usec();

        if (!cs || (cs->state != KR_CONTAINER_EXITED && !(k && k->probe_failure)) || kr_container_hash(c, hash) < 0)
                return false;
        if (asprintf(&key, "%s_%s_%s_%s_%s", s->pod->name, s->pod->namespace_, s->pod->uid, c->name, hash) < 0)
                return false;
        finished = cs->state == KR_CONTAINER_EXITED && cs->finished_at > 0 ? (uint64_t) cs->finished_at / 1000 : now;
        if (backoff_in_backoff_since(&s->k->crash_backoff, key, finished, now, &until)) {
                uint64_t delay = backoff_get(&s->k->crash_backoff, key);
                pod_worker_set_waiting(s->w, c->name, "CrashLoopBackOff",
                                       "back-off %" PRIu64 "s restarting failed container=%s pod=%s_%s(%s)",
                                       delay / USEC_PER_SEC, c->name, s->pod->name, s->pod->namespace_, s->pod->uid);
                log_info("Back-off %" PRIu64 "s restarting failed container=%s pod=%s", delay / USEC_PER_SEC, c->name,
                         pod_desc(s));
                pod_worker_event(s->w, c->name, "Warning", "BackOff", "Back-off restarting failed container %s in pod %s_%s(%s)",
                                 c->name, s->pod->name, s->pod->namespace_, s->pod->uid);
                /* wake when it ends, converted to the monotonic clock */
                until = now_usec() + (until - now);
                if (!s->wake_usec || until < s->wake_usec)
                        s->wake_usec = until;
                return true;
        }
        (void) backoff_next(&s->k->crash_backoff, key, finished, now);
        return false;
}

/* Volumes and /etc/hosts are set up (idempotently) before any container of the pass is created; a failure
 * leaves the containers waiting (FailedMount) and the pod is retried. */
static bool volumes_ready(struct pod_sync *s) {
        _cleanup_free_ char *msg = NULL;
        struct kr_build_context ctx;
        int r;

        build_context(s, &ctx);
        r = vol_setup_pod(s->pod, &ctx, &msg);
        if (r >= 0)
                return true;
        log_error("pod %s: Unable to attach or mount volumes: %s", pod_desc(s), msg ? msg : strerror(-r));
        pod_worker_event(s->w, NULL, "Warning", "FailedMount", "%s", msg ? msg : strerror(-r));
        for (size_t i = 0; i < s->actions.n_start; i++)
                pod_worker_set_waiting(s->w, s->pod->spec.containers[s->actions.start[i]].name, "ContainerCreating",
                                       "%s", msg ? msg : strerror(-r));
        s->error = true;
        return false;
}

static void phase_start_next(struct pod_sync *s) {
        const struct container *c;

        if (s->step == 0 && s->pod && !s->k->stopping && !isempty(s->sandbox_id) && !volumes_ready(s)) {
                sync_finish(s);
                return;
        }
        if (s->k->stopping || isempty(s->sandbox_id) || s->step >= s->actions.n_init_start + s->actions.n_start) {
                sync_finish(s);
                return;
        }
        c = current_container(s);
        free(s->image_ref);
        s->image_ref = NULL;
        s->image_user_known = s->image_uid_set = s->after_pull = false;
        s->image_uid = 0;
        free(s->image_username);
        s->image_username = NULL;

        if (in_crash_backoff(s, c)) {
                start_one_done(s);
                return;
        }
        if (c->image_pull_policy == PULL_POLICY_ALWAYS) {
                pull_image(s);
                return;
        }
        image_status_query(s, c->image);
}

static void image_status_query(struct pod_sync *s, const char *image) {
        Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
        int r;

        spec.image = (char *) image;
        req.image = &spec;
        r = cri_image_status(s->k->cri, &req, 0, on_image_status, s);
        if (r < 0) {
                call_failed(s, "ImageStatus", r);
                start_one_done(s);
        }
}

/* ---------------------------------------------------------------- decide */

static void phase_decide(struct pod_sync *s) {
        struct probe_results probes;
        int r;

        if (s->error) {
                sync_finish(s);
                return;
        }
        if (!s->pod) {
                /* not desired: kill everything (KillPod), then remove what is left */
                s->actions = (struct kr_pod_actions) { .kill_pod = true };
                s->have_actions = true;
                phase_kill(s);
                return;
        }
        prober_results(s->k->prober, &probes);
        r = kr_compute_pod_actions(s->pod, s->status, &probes, &s->actions);
        if (r < 0) {
                call_failed(s, "computing pod actions", r);
                sync_finish(s);
                return;
        }
        s->have_actions = true;
        log_v(4, "pod %s: actions: killPod=%d createSandbox=%d attempt=%" PRIu32 " startInit=%zu start=%zu kill=%zu",
              pod_desc(s), s->actions.kill_pod, s->actions.create_sandbox, s->actions.attempt, s->actions.n_init_start,
              s->actions.n_start,
              s->actions.n_kill);
        phase_kill(s);
}

/* ---------------------------------------------------------------- clean up */

static void on_remove(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;
        if (reply->r < 0 && reply->r != -ENOENT) {
                log_error("pod %s: remove: %s", pod_desc(s), reply->message);
                s->error = true;
        }
        fanout_release(s);
}

static void phase_remove_containers(struct pod_sync *s) {
        fanout_begin(s, phase_remove_sandboxes);
        for (size_t i = 0; i < s->gc.n_containers; i++) {
                Runtime__V1__RemoveContainerRequest req = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;
                int r;
                log_v(2, "pod %s: removing container %.12s", pod_desc(s), s->gc.containers[i]);
                req.container_id = (char *) s->gc.containers[i];
                r = cri_remove_container(s->k->cri, &req, 0, on_remove, s);
                if (r < 0)
                        call_failed(s, "RemoveContainer", r);
                else {
                        s->pending++;
                        s->did_work = true;
                }
        }
        fanout_end(s);
}

static void phase_remove_sandboxes(struct pod_sync *s) {
        fanout_begin(s, sync_finish);
        for (size_t i = 0; i < s->gc.n_sandboxes; i++) {
                Runtime__V1__RemovePodSandboxRequest req = RUNTIME__V1__REMOVE_POD_SANDBOX_REQUEST__INIT;
                int r;
                log_v(2, "pod %s: removing sandbox %.12s", pod_desc(s), s->gc.sandboxes[i]);
                req.pod_sandbox_id = (char *) s->gc.sandboxes[i];
                r = cri_remove_pod_sandbox(s->k->cri, &req, 0, on_remove, s);
                if (r < 0)
                        call_failed(s, "RemovePodSandbox", r);
                else {
                        s->pending++;
                        s->did_work = true;
                }
        }
        fanout_end(s);
}

static void sync_finish(struct pod_sync *s) {
        struct pod_worker *w = s->w;
        bool gone = s->status && s->status->n_sandboxes == 0 && s->status->n_containers == 0 && !s->did_work;

        /* Settled (nothing changed in this pass, no error): collect garbage, then finish. */
        if (!s->error && !s->did_work && s->have_actions && !s->k->stopping) {
                if (kr_compute_pod_gc(s->pod, s->status, &s->gc) >= 0 && (s->gc.n_containers || s->gc.n_sandboxes)) {
                        phase_remove_containers(s);
                        return;
                }
        }
        /* not while shutting down: the calls cancelled by the CRI client's release end here, after the prober
         * is gone */
        if (s->have_actions && s->pod && !s->k->stopping)
                pod_worker_observed(w, s->pod, TAKE_PTR(s->status));
        w->sync = NULL;
        pod_worker_sync_done(w, s->did_work, s->wake_usec, s->error, gone);
        pod_sync_free(s);
}

void pod_sync_start(struct pod_worker *w) {
        struct pod_sync *s = calloc(1, sizeof(*s));

        if (!w->pod)
                objects_manager_unregister(w->k->objects, w->uid); /* no longer desired: its objects go */

        if (!s || kr_pod_status_new(w->uid, &s->status) < 0) {
                free(s);
                log_error("pod %s: out of memory", w->uid);
                pod_worker_sync_done(w, false, 0, true, false);
                return;
        }
        s->w = w;
        s->k = w->k;
        s->pod = pod_ref(w->pod);
        w->sync = s;
        phase_list(s);
}
