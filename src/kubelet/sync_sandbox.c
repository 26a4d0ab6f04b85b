/* SPDX-License-Identifier: Apache-2.0 */
/* The sandbox phase of a pod's pass: the sandbox config (built on every pass: CreateContainer carries it), then
 * either the ready sandbox the decision kept, or a new one (createPodSandbox): the log directory, the pod
 * cgroup, RunPodSandbox, and the new sandbox's IP. RunPodSandbox waits for one of the node's sandbox slots
 * (--max-parallel-sandbox-creations, a few per CPU): containerd makes a burst of sandboxes twice as fast a few at a
 * time as all at once (bench/README.md), and the pods behind wait in the order they came. A static pod replaced by a new version (new UID, same name)
 * gets its sandbox only once the old one is gone: never two copies at once. */

#include "kubelet/pod_sync.h"

#include <inttypes.h>
#include <string.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"
#include "kubelet/userns.h"
#include "objects/objects.h"

static void on_new_sandbox_status(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;

        if (reply->r < 0)
                log_warning("pod %s: PodSandboxStatus of the new sandbox failed: %s", kubelet_sync_pod_desc(s),
                            reply->message);
        else {
                const Runtime__V1__PodSandboxStatusResponse *resp = (const void *) reply->msg;
                const char *ip = resp->status && resp->status->network ? resp->status->network->ip : NULL;
                if (!isempty(ip) && free_and_strdup(&s->pod_ip, ip) < 0)
                        s->error = true;
        }
        kubelet_sync_fanout_release(s);
}

static void on_run_sandbox(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;

        slots_release(s->env->sandbox_slots, &s->sandbox_slot); /* the next pod's RunPodSandbox may go */
        if (reply->r < 0) {
                log_error("pod %s: Failed to create pod sandbox (FailedCreatePodSandBox): %s", kubelet_sync_pod_desc(s),
                          reply->message);
                kubelet_sync_event(s, NULL, "Warning", "FailedCreatePodSandBox", "Failed to create pod sandbox: %s",
                                   reply->message);
                s->error = true;
        } else {
                const Runtime__V1__RunPodSandboxResponse *resp = (const void *) reply->msg;
                Runtime__V1__PodSandboxStatusRequest req = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;

                log_info("Created pod sandbox: pod=\"%s\" podSandboxID=\"%.12s\"", kubelet_sync_pod_desc(s),
                         resp->pod_sandbox_id);
                if (free_and_strdup(&s->sandbox_id, resp->pod_sandbox_id) < 0)
                        s->error = true;
                else {
                        /* the IP goes into the containers' env (status.podIP), /etc/hosts and their probes */
                        req.pod_sandbox_id = s->sandbox_id;
                        if (cri_pod_sandbox_status(s->env->cri, &req, 0, on_new_sandbox_status, s, &s->calls) >= 0)
                                kubelet_sync_fanout_add(s);
                }
        }
        kubelet_sync_fanout_release(s);
}

/* the sandbox the decision kept, with the IP it was observed with */
static void use_existing(struct pod_sync *s) {
        if (free_and_strdup(&s->sandbox_id, s->actions.sandbox_id) < 0)
                s->error = true;
        for (size_t i = 0; s->status && i < s->status->n_sandboxes; i++) {
                const struct kc_sandbox *sb = s->status->sandboxes[i];
                if (streq(sb->id, s->actions.sandbox_id) && sb->have_status && !isempty(sb->ip) &&
                    free_and_strdup(&s->pod_ip, sb->ip) < 0)
                        s->error = true;
        }
        kubelet_pod_sync_next(s);
}

/* LookupRuntimeHandler: the handler of the pod's RuntimeClass ("" without one); -errno and *ret_error when it
 * cannot be had (not found, not fetched) */
static int runtime_handler(struct pod_sync *s, const char **ret, struct ck_error **ret_error) {
        const char *name = s->pod->spec.runtime_class_name, *msg = NULL;
        json_t *rc = NULL;
        int r;

        *ret = "";
        if (isempty(name))
                return 0;
        if (!kubelet_sync_client(s)) {
                /* as upstream without an API server there is no RuntimeClass manager: said once per pod */
                if (s->env->ops->runtime_class_warn_once(s->env->userdata, s->w))
                        log_warning("pod %s: runtimeClassName \"%s\" is not acted on: there is no API server to "
                                    "read RuntimeClasses from",
                                    kubelet_sync_pod_desc(s), name);
                return 0;
        }
        r = objects_pod_lookup(s->objects, OBJ_KIND_RUNTIME_CLASS, "", name, &rc, &msg);
        if (r < 0)
                return ck_error_set(ret_error, r, "%s", msg ? msg : strerror(-r));
        *ret = strempty(json_string_value(json_object_get(rc, "handler")));
        return 0;
}

static void create_sandbox_in_cgroup(struct pod_sync *s);

/* the pod cgroup's slice was made (systemd driver) */
static void on_pod_cgroup(int r, const char *message, void *userdata) {
        struct pod_sync *s = userdata;

        if (r < 0) {
                log_error("pod %s: failed to ensure that the pod: %s cgroups exist and are correctly applied: %s",
                          kubelet_sync_pod_desc(s), s->uid, message ? message : strerror(-r));
                kubelet_sync_event(s, NULL, "Warning", "FailedCreatePodContainer",
                                   "unable to ensure pod container exists: %s", message ? message : strerror(-r));
                s->cgroup_failed = true;
                s->error = true;
        }
        kubelet_sync_fanout_release(s);
}

static void create_sandbox(struct pod_sync *s) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_free_ char *logdir = NULL;
        int r;

        if (s->env->ops->wait_for_name(s->env->userdata, s->w)) {
                log_info("pod %s: waiting for the previous pod with the same name to terminate",
                         kubelet_sync_pod_desc(s));
                kubelet_pod_sync_finish(s);
                return;
        }

        logdir = kr_pod_log_dir(s->env->opts->pod_logs_dir, s->pod);
        if (!logdir || mkdir_p(logdir, 0755) < 0) {
                log_error("pod %s: cannot create log directory %s: %m", kubelet_sync_pod_desc(s), strna(logdir));
                s->error = true;
                kubelet_pod_sync_finish(s);
                return;
        }
        /* the pod cgroup before the sandbox that goes into it (upstream: UpdateQOSCgroups, then EnsureExists); with the
         * systemd driver its slice is made over D-Bus, and the sandbox waits for it */
        s->cgroup_failed = false;
        kubelet_sync_fanout_begin(s, create_sandbox_in_cgroup);
        r = s->env->ops->pod_cgroup_ensure_async(s->env->userdata, s->pod, on_pod_cgroup, s, &err);
        if (r < 0) {
                const char *m = ck_error_message_or(err, r);
                log_error("pod %s: failed to ensure that the pod: %s cgroups exist and are correctly applied: %s",
                          kubelet_sync_pod_desc(s), s->uid, m);
                kubelet_sync_event(s, NULL, "Warning", "FailedCreatePodContainer",
                                   "unable to ensure pod container exists: %s", m);
                s->cgroup_failed = true;
                s->error = true;
        } else if (r > 0)
                kubelet_sync_fanout_add(s);
        kubelet_sync_fanout_end(s);
}

static void on_sandbox_turn(void *userdata, int r);

static void create_sandbox_in_cgroup(struct pod_sync *s) {
        if (s->cgroup_failed) {
                kubelet_pod_sync_finish(s);
                return;
        }
        if (slots_waiting(s->env->sandbox_slots) > 0 || slots_running(s->env->sandbox_slots) > 0)
                log_v(3, "pod %s: the sandbox waits for its turn (%u being made, %u waiting)", kubelet_sync_pod_desc(s),
                      slots_running(s->env->sandbox_slots), slots_waiting(s->env->sandbox_slots));
        slots_enqueue(s->env->sandbox_slots, &s->sandbox_slot, on_sandbox_turn, s);
}

void kubelet_sync_sandbox_withdraw(struct pod_sync *s) {
        (void) slots_withdraw(s->env->sandbox_slots, &s->sandbox_slot);
}

/* a sandbox slot is held: RunPodSandbox (released when it returns, or here when it is not issued) */
static void on_sandbox_turn(void *userdata, int r) {
        Runtime__V1__RunPodSandboxRequest req = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;
        _cleanup_ck_error_ struct ck_error *handler_error = NULL;
        struct pod_sync *s = userdata;
        const char *handler = "";

        if (r < 0) {
                /* withdrawn: the pod is no longer wanted; the next pass (already asked for) sees its new state */
                slots_release(s->env->sandbox_slots, &s->sandbox_slot);
                log_v(2, "pod %s: the sandbox creation left the queue", kubelet_sync_pod_desc(s));
                s->did_work = true;
                kubelet_pod_sync_finish(s);
                return;
        }
        r = runtime_handler(s, &handler, &handler_error);
        if (r < 0) {
                log_error("pod %s: Failed to create sandbox for pod: %s", kubelet_sync_pod_desc(s),
                          ck_error_message(handler_error));
                kubelet_sync_event(s, NULL, "Warning", "FailedCreatePodSandBox", "Failed to create pod sandbox: %s",
                                   ck_error_message(handler_error));
                s->error = true;
                slots_release(s->env->sandbox_slots, &s->sandbox_slot);
                kubelet_pod_sync_finish(s);
                return;
        }
        if (!isempty(handler))
                log_v(2, "Running pod with runtime handler: pod=\"%s\" runtimeHandler=\"%s\"", kubelet_sync_pod_desc(s),
                      handler);
        log_info("Creating pod sandbox: pod=\"%s\" attempt=%" PRIu32 " reason=\"%s\"", kubelet_sync_pod_desc(s),
                 s->actions.attempt, strna(s->actions.sandbox_reason));
        req.config = s->sandbox_config;
        req.runtime_handler = (char *) handler;
        kubelet_sync_fanout_begin(s, kubelet_pod_sync_next);
        r = cri_run_pod_sandbox(s->env->cri, &req, 0, on_run_sandbox, s, &s->calls);
        if (r < 0) {
                slots_release(s->env->sandbox_slots, &s->sandbox_slot);
                kubelet_sync_call_failed(s, "RunPodSandbox", r);
        } else {
                kubelet_sync_fanout_add(s);
                s->did_work = true;
        }
        kubelet_sync_fanout_end(s);
}

/* GetOrCreateUserNamespaceMappings for a hostUsers:false pod: its handler must support user namespaces (the
 * runtime's Status), then its range (kubelet/userns.h). 0, or a negative errno and *ret_error. */
static int pod_userns(struct pod_sync *s, struct ck_error **ret_error) {
        const struct node_runtime_features *f = kubelet_sync_runtime_features(s);
        const char *handler = kubelet_sync_known_runtime_handler(s);
        _cleanup_ck_error_ struct ck_error *err = NULL;
        bool known = false, supported = false;
        int r;

        s->userns = false;
        if (!s->pod->spec.has_host_users || s->pod->spec.host_users)
                return 0;
        for (size_t i = 0; f && i < f->n_handlers; i++)
                if (streq(f->handlers[i].name, handler)) {
                        known = true;
                        supported = f->handlers[i].user_namespaces;
                }
        if (!supported) {
                /* HandlerSupportsUserNamespaces: a runtime that lists no handler is old; one that lists others does
                 * not know this one */
                _cleanup_free_ char *q = go_quote(handler), *msg = NULL;
                if (!q)
                        return -ENOMEM;
                if (isempty(handler))
                        msg = strdup("can't set `spec.hostUsers: false`, runtime does not support user namespaces");
                else if (asprintf(&msg,
                                  "can't set `spec.hostUsers: false`, RuntimeClass handler %s does not support user "
                                  "namespaces",
                                  q) < 0)
                        msg = NULL;
                if (!msg)
                        return -ENOMEM;
                if (!known && f && f->n_handlers > 0) {
                        char *m2 = NULL;
                        if (asprintf(&m2, "%s: the handler %s is not known", msg, q) < 0)
                                return -ENOMEM;
                        free_and_replace(msg, m2);
                }
                return ck_error_set(ret_error, -EOPNOTSUPP, "%s", msg);
        }
        r = userns_get_or_create(s->env->userns, s->uid, &s->userns_host_id, &s->userns_length, &err);
        if (r < 0)
                return ck_error_set(ret_error, r, "%s", ck_error_message_or(err, r));
        s->userns = true;
        return 0;
}

void kubelet_sync_sandbox(struct pod_sync *s) {
        struct kc_build_context ctx;
        struct kc_build_report report = {};
        _cleanup_ck_error_ struct ck_error *userns_error = NULL;
        int r;

        r = pod_userns(s, &userns_error);
        if (r < 0) {
                /* out of memory before a message (ck_error_message of NULL: ""): the errno's text */
                const char *m = ck_error_message_or(userns_error, r);
                log_error("pod %s: Failed to create sandbox for pod: %s", kubelet_sync_pod_desc(s), m);
                if (s->actions.create_sandbox)
                        kubelet_sync_event(s, NULL, "Warning", "FailedCreatePodSandBox",
                                           "Failed to create pod sandbox: %s", m);
                s->error = true;
                kubelet_pod_sync_finish(s);
                return;
        }

        r = cm_pod_cgroup_parent(s->env->cm, s->pod, &s->cgroup_parent);
        if (r < 0) {
                kubelet_sync_call_failed(s, "naming the pod cgroup", r);
                kubelet_pod_sync_finish(s);
                return;
        }
        kubelet_sync_build_context(s, &ctx);
        ctx.report = &report;
        r = kr_build_sandbox_config(s->pod, s->actions.attempt, &ctx, &s->sandbox_config);
        /* the DNS events (MissingClusterDNS, DNSConfigForming), when a sandbox is made, as upstream */
        for (size_t i = 0; s->actions.create_sandbox && report.event_reasons && report.event_reasons[i]; i++)
                kubelet_sync_event(s, NULL, "Warning", report.event_reasons[i], "%s", report.event_messages[i]);
        if (r < 0) {
                if (report.error) {
                        log_error("pod %s: Failed to generate sandbox config: %s", kubelet_sync_pod_desc(s),
                                  ck_error_message(report.error));
                        if (s->actions.create_sandbox)
                                kubelet_sync_event(s, NULL, "Warning", "FailedCreatePodSandBox",
                                                   "Failed to create pod sandbox: %s", ck_error_message(report.error));
                }
                kc_build_report_done(&report);
                kubelet_sync_call_failed(s, "building the sandbox config", r);
                kubelet_pod_sync_finish(s);
                return;
        }
        kc_build_report_done(&report);
        if (s->actions.create_sandbox)
                create_sandbox(s);
        else
                use_existing(s);
}
