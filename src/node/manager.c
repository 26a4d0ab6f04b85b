/* SPDX-License-Identifier: Apache-2.0 */
/* Node registration, node status updates and the node lease, on the loop. */
#include "node/manager.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "features/features.h"
#include "node/declared_features.h"
#include "node/node_status.h"
#include "node/runtime_features.h"
#include "stats/machine.h"

#define REGISTER_RETRY_MAX_USEC (7 * USEC_PER_SEC) /* upstream: 100ms doubling up to 7s */
/* upstream's maxWaitForContainerRuntime: the runtime is "down" once its last good check is this old */
#define RUNTIME_DOWN_AFTER_USEC (30 * USEC_PER_SEC)

struct node_manager {
        struct event_base *base;
        const struct kubelet_options *o;
        struct kube_client *client;
        struct kube_client *heartbeat; /* status updates and the lease: the client, or one of their own */
        struct cri_client *cri;
        char *node_ip;
        char *hostname;
        char *path;        /* /api/v1/nodes/<name> */
        char *status_path; /* /api/v1/nodes/<name>/status: the status subresource (the Node itself ignores status) */
        char *lease_path;  /* /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/<name> */
        const struct machine_info *machine; /* the kubelet's */

        bool registered;
        char *node_uid;
        uint64_t register_delay;
        struct event *register_timer, *status_timer, *lease_timer;
        struct kube_request *register_req, *status_req, *lease_req;
        bool status_busy;

        /* what the status is computed from */
        char *runtime_version;
        /* what the runtime can do, from its last Status (runtimeState's runtime handlers and features) */
        struct node_runtime_features features;
        uint64_t last_runtime_sync; /* monotonic: the last Status that said the runtime is ready, 0 = none */
        char *runtime_error;        /* RuntimeReady false, as the last Status said */
        char *network_error;        /* NetworkReady false, likewise */
        char *ready_message;        /* why not Ready (ready_errors), for the status being built */
        struct node_image *images;
        size_t n_images;
        int cri_pending;
        struct cri_calls cri_calls; /* the status' runtime part in flight, cancelled by node_manager_free */

        bool memory_pressure, disk_pressure, pid_pressure; /* the eviction manager's conditions */
        bool shutting_down;                                /* the node shutdown manager's ShutdownStatus */
        bool eviction_set;
        int64_t eviction_memory_bytes, eviction_storage_bytes;
        float eviction_memory_fraction, eviction_storage_fraction;
        bool pressure_changed; /* send the status as soon as the one in flight is done */
        void (*get_extended)(void *userdata, const struct node_extended_resource **ret, size_t *ret_n);
        void *extended_userdata;

        json_t *last_status;       /* the last status sent */
        uint64_t last_report_usec; /* monotonic */

        json_t *lease; /* the last Lease read or written */

        /* volumesInUse, from the volume manager */
        char **(*volumes_in_use)(void *userdata);
        void (*volumes_reported)(char *const *names, void *userdata);
        void *volumes_userdata;
        char **in_use;      /* in the status being computed or sent */
        char **in_use_sent; /* in the status PATCH in flight */
};

void node_manager_set_volumes(struct node_manager *m, char **(*in_use)(void *userdata),
                              void (*reported)(char *const *names, void *userdata), void *userdata) {
        m->volumes_in_use = in_use;
        m->volumes_reported = reported;
        m->volumes_userdata = userdata;
}

static void images_free(struct node_manager *m) {
        for (size_t i = 0; i < m->n_images; i++)
                strv_free(m->images[i].names);
        free(m->images);
        m->images = NULL;
        m->n_images = 0;
}

struct node_manager *node_manager_free(struct node_manager *m) {
        if (!m)
                return NULL;
        cri_calls_cancel(&m->cri_calls);
        kube_request_cancel(m->register_req);
        kube_request_cancel(m->status_req);
        kube_request_cancel(m->lease_req);
        if (m->register_timer)
                event_free(m->register_timer);
        if (m->status_timer)
                event_free(m->status_timer);
        if (m->lease_timer)
                event_free(m->lease_timer);
        images_free(m);
        strv_free(m->in_use);
        strv_free(m->in_use_sent);
        json_decref(m->last_status);
        json_decref(m->lease);
        free(m->runtime_version);
        node_runtime_features_done(&m->features);
        free(m->runtime_error);
        free(m->network_error);
        free(m->ready_message);
        free(m->node_uid);
        free(m->node_ip);
        free(m->hostname);
        free(m->path);
        free(m->status_path);
        free(m->lease_path);
        free(m);
        return NULL;
}

const char *node_manager_node_uid(const struct node_manager *m) {
        return m ? m->node_uid : NULL;
}

static uint64_t fs_capacity(const char *dir) {
        struct statvfs st;
        if (statvfs(dir, &st) < 0)
                return 0;
        return (uint64_t) st.f_blocks * st.f_frsize;
}

/* Why the node is not Ready, as upstream's runtimeState.runtimeErrors and networkErrors put it (aggregated
 * as utilerrors.NewAggregate prints them: one message alone, several as "[a, b]"). NULL when Ready. */
static int ready_errors(struct node_manager *m, bool *ret_runtime_ok, bool *ret_network_ok, char **ret_message) {
        _cleanup_strv_free_ char **errs = NULL;
        _cleanup_free_ char *joined = NULL;
        uint64_t now = now_usec();
        int r = 0;

        if (m->last_runtime_sync == 0)
                r = strv_extend(&errs, "container runtime status check may not have completed yet");
        else if (now >= m->last_runtime_sync + RUNTIME_DOWN_AFTER_USEC)
                r = strv_extend(&errs, "container runtime is down");
        if (r >= 0 && m->runtime_error)
                r = strv_extend(&errs, m->runtime_error);
        *ret_runtime_ok = strv_length(errs) == 0;
        if (r >= 0 && m->network_error)
                r = strv_extend(&errs, m->network_error);
        *ret_network_ok = !m->network_error;
        /* storage errors: none here; then the node shutdown manager's */
        if (r >= 0 && m->shutting_down)
                r = strv_extend(&errs, "node is shutting down");
        if (r < 0)
                return -ENOMEM;
        if (strv_length(errs) == 0) {
                *ret_message = NULL;
                return 0;
        }
        if (strv_length(errs) == 1) {
                *ret_message = TAKE_PTR(errs[0]);
                return 0;
        }
        joined = strv_join(errs, ", ");
        if (!joined || asprintf(ret_message, "[%s]", joined) < 0)
                return -ENOMEM;
        return 0;
}

static void fill_input(struct node_manager *m, struct node_status_input *in) {
        /* the declared features follow from constants: the same list every time (loop thread only) */
        static const char *declared[16];
        bool runtime_ok = false, network_ok = false;
        const struct node_declared_feature *t;
        size_t n_t, n_declared;

        free(m->ready_message);
        m->ready_message = NULL;
        if (ready_errors(m, &runtime_ok, &network_ok, &m->ready_message) < 0) {
                runtime_ok = false;
                m->ready_message = NULL;
        }
        *in = (struct node_status_input) {
                .node_name = m->o->node_name,
                .hostname = m->hostname,
                .node_ip = m->node_ip,
                .machine = m->machine,
                .runtime_version = m->runtime_version,
                .kubelet_version = m->o->reported_version ? m->o->reported_version : KUBE_VERSION,
                .max_pods = m->o->max_pods,
                .ephemeral_storage_bytes = fs_capacity(m->o->root_dir),
                .kube_reserved = m->o->kube_reserved,
                .system_reserved = m->o->system_reserved,
                .runtime_ready = runtime_ok,
                .network_ready = network_ok,
                .runtime_message = m->ready_message,
                .images = m->images,
                .n_images = m->n_images,
                .kubelet_port = m->o->port,
                .now_usec = (int64_t) now_realtime_usec(),
                .previous = m->last_status,
                .memory_pressure = m->memory_pressure,
                .disk_pressure = m->disk_pressure,
                .pid_pressure = m->pid_pressure,
                .shutting_down = m->shutting_down,
                .runtime_handlers = m->features.handlers,
                .n_runtime_handlers = m->features.n_handlers,
                .has_features = m->features.has_features,
                .supplemental_groups_policy = m->features.supplemental_groups_policy,
                .eviction_set = m->eviction_set,
                .eviction_memory_bytes = m->eviction_memory_bytes,
                .eviction_memory_fraction = m->eviction_memory_fraction,
                .eviction_storage_bytes = m->eviction_storage_bytes,
                .eviction_storage_fraction = m->eviction_storage_fraction,
                .volumes_in_use = m->in_use,
        };
        t = node_declared_feature_table(&n_t);
        assert(n_t <= ELEMENTSOF(declared));
        n_declared = node_declared_features(t, n_t, declared);
        /* upstream declares a feature only while its gate is on: one switched off in the configuration is not */
        for (size_t i = 0; i < n_declared;)
                if (feature_lookup(declared[i]) && !feature_enabled(m->o->feature_gates, declared[i])) {
                        memmove(declared + i, declared + i + 1, (n_declared - i - 1) * sizeof(declared[0]));
                        n_declared--;
                } else
                        i++;
        in->declared_features = declared;
        in->n_declared_features = n_declared;
        if (m->get_extended)
                m->get_extended(m->extended_userdata, &in->extended, &in->n_extended);
}

void node_manager_set_extended_source(struct node_manager *m,
                                      void (*get)(void *userdata, const struct node_extended_resource **ret,
                                                  size_t *ret_n),
                                      void *userdata) {
        m->get_extended = get;
        m->extended_userdata = userdata;
}

void node_manager_set_eviction_reservation(struct node_manager *m, int64_t memory_bytes, float memory_fraction,
                                           int64_t storage_bytes, float storage_fraction) {
        if (!m)
                return;
        m->eviction_set = true;
        m->eviction_memory_bytes = memory_bytes;
        m->eviction_memory_fraction = memory_fraction;
        m->eviction_storage_bytes = storage_bytes;
        m->eviction_storage_fraction = storage_fraction;
}

/* ---------------------------------------------------------------- lease */

static void lease_schedule(struct node_manager *m) {
        /* renew every quarter of the duration (nodelease.renewIntervalFraction 0.25) */
        evtimer_add_usec(m->lease_timer, (uint64_t) m->o->node_lease_duration_seconds * USEC_PER_SEC / 4);
}

static json_t *lease_spec(struct node_manager *m) {
        char now[64];
        uint64_t t = now_realtime_usec();
        /* MicroTime: RFC 3339 with microseconds */
        format_rfc3339(t, now, sizeof(now));
        if (strlen(now) > 1)
                snprintf(now + strlen(now) - 1, sizeof(now) - strlen(now) + 1, ".%06lluZ",
                         (unsigned long long) (t % USEC_PER_SEC));
        return json_pack("{s:s, s:i, s:s}", "holderIdentity", m->o->node_name, "leaseDurationSeconds",
                         m->o->node_lease_duration_seconds, "renewTime", now);
}

static void on_lease_reply(const struct kube_response *resp, void *userdata);

static void lease_write(struct node_manager *m) {
        json_auto_t *body = NULL;
        int r;

        if (m->lease) {
                body = json_deep_copy(m->lease);
                json_object_set_new(body, "spec", lease_spec(m));
                r = kube_request(m->heartbeat, "PUT", m->lease_path, body, NULL, 0, on_lease_reply, m, &m->lease_req);
        } else {
                body = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", "coordination.k8s.io/v1", "kind",
                                 "Lease", "metadata", "name", m->o->node_name, "namespace", "kube-node-lease", "spec",
                                 lease_spec(m));
                if (body && m->node_uid)
                        json_object_set_new(json_object_get(body, "metadata"), "ownerReferences",
                                            json_pack("[{s:s, s:s, s:s, s:s}]", "apiVersion", "v1", "kind", "Node",
                                                      "name", m->o->node_name, "uid", m->node_uid));
                r = kube_request(m->heartbeat, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                                 body, NULL, 0, on_lease_reply, m, &m->lease_req);
        }
        if (r < 0) {
                m->lease_req = NULL;
                lease_schedule(m);
        }
}

static void on_lease_reply(const struct kube_response *resp, void *userdata) {
        struct node_manager *m = userdata;

        m->lease_req = NULL;
        if (resp->r >= 0 && resp->status < 300 && json_is_object(resp->body)) {
                json_decref(m->lease);
                m->lease = json_incref(resp->body);
                log_v(4, "node lease renewed");
                lease_schedule(m);
                return;
        }
        if (resp->status == 409 || resp->status == 404) {
                /* someone else wrote it (Conflict) or it went away: read it again, then write */
                json_decref(m->lease);
                m->lease = NULL;
                if (resp->status == 409) {
                        kube_request(m->heartbeat, "GET", m->lease_path, NULL, NULL, 0, on_lease_reply, m,
                                     &m->lease_req);
                        return;
                }
                lease_write(m);
                return;
        }
        log_error("failed to update lease: %s", resp->error);
        lease_schedule(m);
}

static void lease_tick(evutil_socket_t fd, short what, void *userdata) {
        struct node_manager *m = userdata;
        if (!m->lease_req)
                lease_write(m);
}

/* ---------------------------------------------------------------- status */

static void status_schedule(struct node_manager *m) {
        if (m->pressure_changed) {
                m->pressure_changed = false;
                evtimer_add_usec(m->status_timer, 0);
                return;
        }
        evtimer_add_usec(m->status_timer, m->o->node_status_update_frequency_usec);
}

void node_manager_set_pressure(struct node_manager *m, bool memory, bool disk, bool pid) {
        if (!m || (m->memory_pressure == memory && m->disk_pressure == disk && m->pid_pressure == pid))
                return;
        m->memory_pressure = memory;
        m->disk_pressure = disk;
        m->pid_pressure = pid;
        /* report it now rather than at the next period */
        if (m->status_busy)
                m->pressure_changed = true;
        else if (m->registered)
                evtimer_add_usec(m->status_timer, 0);
}

void node_manager_set_shutting_down(struct node_manager *m, bool on) {
        if (!m || m->shutting_down == on)
                return;
        m->shutting_down = on;
        /* syncNodeStatus: now rather than at the next period */
        if (m->status_busy)
                m->pressure_changed = true;
        else if (m->registered)
                evtimer_add_usec(m->status_timer, 0);
}

static void on_status_patched(const struct kube_response *resp, void *userdata) {
        struct node_manager *m = userdata;

        m->status_req = NULL;
        m->status_busy = false;
        if (resp->r < 0 || resp->status >= 300) {
                log_error("Error updating node status, will retry: err=\"%s\"", resp->error);
                json_decref(m->last_status);
                m->last_status = NULL; /* send in full next time */
        } else if (m->volumes_reported)
                m->volumes_reported(m->in_use_sent, m->volumes_userdata); /* MarkVolumesAsReportedInUse */
        m->in_use_sent = strv_free(m->in_use_sent);
        status_schedule(m);
}

static void status_send(struct node_manager *m) {
        struct node_status_input in;
        json_auto_t *status = NULL, *a = NULL, *b = NULL, *patch = NULL;
        bool changed;

        strv_free(m->in_use);
        m->in_use = m->volumes_in_use ? m->volumes_in_use(m->volumes_userdata) : NULL;
        fill_input(m, &in);
        if (node_status_build(&in, &status) < 0) {
                m->status_busy = false;
                status_schedule(m);
                return;
        }
        if (m->last_status) {
                a = node_status_without_heartbeats(m->last_status);
                b = node_status_without_heartbeats(status);
        }
        changed = !m->last_status || !json_equal(a, b);
        if (!changed && now_usec() - m->last_report_usec < m->o->node_status_report_frequency_usec) {
                /* nothing to send, but the volumes the API's status lists are reported in use all the same: a
                 * volume wanted again with the same list (a pod deleted, another on its claim) or after a restart
                 * waits for this (tryUpdateNodeStatus) */
                if (m->volumes_reported)
                        m->volumes_reported(m->in_use, m->volumes_userdata);
                m->status_busy = false;
                status_schedule(m);
                return;
        }
        json_decref(m->last_status);
        m->last_status = json_incref(status);
        m->last_report_usec = now_usec();
        strv_free(m->in_use_sent);
        m->in_use_sent = TAKE_PTR(m->in_use);
        patch = json_pack("{s:O}", "status", status);
        if (kube_request(m->heartbeat, "PATCH", m->status_path, patch, "application/strategic-merge-patch+json", 0,
                         on_status_patched, m, &m->status_req) < 0) {
                m->status_req = NULL;
                m->status_busy = false;
                status_schedule(m);
        }
}

/* the CRI facts of the status: Version (once), Status, ListImages; then the status is sent */
static void cri_part_done(struct node_manager *m) {
        if (--m->cri_pending > 0)
                return;
        if (m->registered)
                status_send(m);
        else
                m->status_busy = false;
}

static void on_version(const struct cri_reply *reply, void *userdata) {
        struct node_manager *m = userdata;
        const Runtime__V1__VersionResponse *v = (const void *) reply->msg;
        if (reply->r >= 0 && v) {
                free(m->runtime_version);
                if (asprintf(&m->runtime_version, "%s://%s", v->runtime_name, v->runtime_version) < 0)
                        m->runtime_version = NULL;
        }
        cri_part_done(m);
}

/* A runtime condition as upstream prints it (kubecontainer.RuntimeCondition.String), or "<nil>" when the
 * runtime does not report it */
static int condition_error(const char *what, const Runtime__V1__RuntimeCondition *c, char **ret) {
        char *s = NULL;
        int r = c ? asprintf(&s, "%s: %s=%s reason:%s message:%s", what, c->type, c->status ? "true" : "false",
                             c->reason, c->message)
                  : asprintf(&s, "%s: <nil>", what);
        if (r < 0)
                return -ENOMEM;
        free(*ret);
        *ret = s;
        return 0;
}

/* updateRuntimeUp: a failed Status call changes nothing (the runtime becomes "down" when its last good check
 * gets too old); an answer sets the network's and the runtime's errors, and a ready runtime is a good check. */
const struct node_runtime_features *node_manager_runtime_features(const struct node_manager *m) {
        return m ? &m->features : NULL;
}

static void on_runtime_status(const struct cri_reply *reply, void *userdata) {
        struct node_manager *m = userdata;
        const Runtime__V1__StatusResponse *s = (const void *) reply->msg;
        const Runtime__V1__RuntimeCondition *runtime = NULL, *network = NULL;

        if (reply->r < 0) {
                log_error("Container runtime sanity check failed: %s", reply->message);
                cri_part_done(m);
                return;
        }
        if (s && node_runtime_features_set(&m->features, s) < 0)
                log_error("out of memory");
        for (size_t i = 0; s && s->status && i < s->status->n_conditions; i++) {
                const Runtime__V1__RuntimeCondition *c = s->status->conditions[i];
                log_v(5, "runtime condition %s=%s reason=%s message=%s", c->type, c->status ? "true" : "false",
                      c->reason, c->message);
                if (streq(c->type, "RuntimeReady"))
                        runtime = c;
                else if (streq(c->type, "NetworkReady"))
                        network = c;
        }
        if (network && network->status) {
                free(m->network_error);
                m->network_error = NULL;
        } else if (condition_error("container runtime network not ready", network, &m->network_error) < 0)
                log_error("out of memory");
        if (runtime && runtime->status) {
                free(m->runtime_error);
                m->runtime_error = NULL;
                m->last_runtime_sync = now_usec();
        } else if (condition_error("container runtime not ready", runtime, &m->runtime_error) < 0)
                log_error("out of memory");
        cri_part_done(m);
}

static void on_images(const struct cri_reply *reply, void *userdata) {
        struct node_manager *m = userdata;
        const Runtime__V1__ListImagesResponse *l = (const void *) reply->msg;

        if (reply->r >= 0 && l) {
                images_free(m);
                m->images = calloc(l->n_images + 1, sizeof(*m->images));
                if (m->images) {
                        for (size_t i = 0; i < l->n_images; i++) {
                                const Runtime__V1__Image *im = l->images[i];
                                for (size_t k = 0; k < im->n_repo_digests; k++)
                                        (void) strv_extend(&m->images[i].names, im->repo_digests[k]);
                                for (size_t k = 0; k < im->n_repo_tags; k++)
                                        (void) strv_extend(&m->images[i].names, im->repo_tags[k]);
                                m->images[i].size_bytes = im->size;
                        }
                        m->n_images = l->n_images;
                }
        }
        cri_part_done(m);
}

static void status_tick(evutil_socket_t fd, short what, void *userdata) {
        struct node_manager *m = userdata;
        Runtime__V1__StatusRequest sreq = RUNTIME__V1__STATUS_REQUEST__INIT;
        Runtime__V1__ListImagesRequest ireq = RUNTIME__V1__LIST_IMAGES_REQUEST__INIT;

        if (m->status_busy)
                return;
        m->status_busy = true;
        m->cri_pending = 1; /* held until every call is issued */
        if (!m->runtime_version) {
                Runtime__V1__VersionRequest vreq = RUNTIME__V1__VERSION_REQUEST__INIT;
                vreq.version = (char *) "v1";
                if (cri_version(m->cri, &vreq, 0, on_version, m, &m->cri_calls) >= 0)
                        m->cri_pending++;
        }
        if (cri_status(m->cri, &sreq, 0, on_runtime_status, m, &m->cri_calls) >= 0)
                m->cri_pending++;
        if (cri_list_images(m->cri, &ireq, 0, on_images, m, &m->cri_calls) >= 0)
                m->cri_pending++;
        cri_part_done(m);
}

/* ---------------------------------------------------------------- registration */

static void register_retry(struct node_manager *m) {
        m->register_delay = m->register_delay ? MIN(m->register_delay * 2, REGISTER_RETRY_MAX_USEC) : 100000;
        evtimer_add_usec(m->register_timer, m->register_delay);
}

static void registered(struct node_manager *m, const json_t *node) {
        const char *uid = json_string_value(json_object_get(json_object_get(node, "metadata"), "uid"));
        free(m->node_uid);
        m->node_uid = uid ? strdup(uid) : NULL;
        if (!m->registered)
                log_info("Successfully registered node: node=\"%s\"", m->o->node_name);
        m->registered = true;
        /* the first full status right away, then the lease */
        json_decref(m->last_status);
        m->last_status = NULL;
        event_active(m->status_timer, EV_TIMEOUT, 0);
        event_active(m->lease_timer, EV_TIMEOUT, 0);
}

static void on_node_get(const struct kube_response *resp, void *userdata) {
        struct node_manager *m = userdata;
        m->register_req = NULL;
        if (resp->r >= 0 && resp->status == 200) {
                /* adopt the existing Node (tryRegisterWithAPIServer: AlreadyExists → use it) */
                registered(m, resp->body);
                return;
        }
        log_error("Unable to register node with API server: node=\"%s\" err=\"%s\"", m->o->node_name, resp->error);
        register_retry(m);
}

static void on_node_created(const struct kube_response *resp, void *userdata) {
        struct node_manager *m = userdata;

        m->register_req = NULL;
        if (resp->r >= 0 && resp->status < 300) {
                registered(m, resp->body);
                return;
        }
        if (resp->status == 409) {
                if (kube_request(m->client, "GET", m->path, NULL, NULL, 0, on_node_get, m, &m->register_req) < 0)
                        register_retry(m);
                return;
        }
        log_error("Unable to register node with API server: node=\"%s\" err=\"%s\"", m->o->node_name, resp->error);
        register_retry(m);
}

static void register_tick(evutil_socket_t fd, short what, void *userdata) {
        struct node_manager *m = userdata;
        struct node_status_input in;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        json_auto_t *node = NULL;

        log_info("Attempting to register node: node=\"%s\"", m->o->node_name);
        fill_input(m, &in);
        if (node_object_build(&in, m->o->node_labels, m->o->register_with_taints, &node, &why) < 0) {
                log_error("cannot build the Node object: %s", ck_error_message(why));
                return;
        }
        if (kube_request(m->client, "POST", "/api/v1/nodes", node, NULL, 0, on_node_created, m, &m->register_req) < 0)
                register_retry(m);
}

/* ---------------------------------------------------------------- lifecycle */

DEFINE_TRIVIAL_CLEANUP_FUNC(struct node_manager *, node_manager_free)

int node_manager_new(struct event_base *base, const struct kubelet_options *o, const char *node_ip,
                     const struct machine_info *machine, struct kube_client *client, struct cri_client *cri,
                     struct node_manager **ret, struct ck_error **ret_error) {
        _cleanup_ck_error_ struct ck_error *why = NULL;
        _cleanup_(node_manager_freep) struct node_manager *m = NULL;
        struct node_status_input in = {};
        json_auto_t *probe = NULL;
        int64_t a, b, c;
        char host[256];
        int r;

        if (node_parse_reserved(o->kube_reserved, &a, &b, &c, &why) < 0)
                return ck_error_set(ret_error, -EINVAL, "invalid --kube-reserved: %s", ck_error_message(why));
        if (node_parse_reserved(o->system_reserved, &a, &b, &c, &why) < 0)
                return ck_error_set(ret_error, -EINVAL, "invalid --system-reserved: %s", ck_error_message(why));
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->base = base;
        m->o = o;
        m->client = m->heartbeat = client;
        m->cri = cri;
        m->machine = machine;
        if (gethostname(host, sizeof(host)) < 0)
                snprintf(host, sizeof(host), "%s", o->node_name);
        host[sizeof(host) - 1] = '\0';
        m->hostname = strdup(isempty(o->hostname_override) ? host : o->node_name);
        m->node_ip = strdup(node_ip);
        if (!m->hostname || !m->node_ip || asprintf(&m->path, "/api/v1/nodes/%s", o->node_name) < 0 ||
            asprintf(&m->status_path, "/api/v1/nodes/%s/status", o->node_name) < 0 ||
            asprintf(&m->lease_path, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/%s",
                     o->node_name) < 0)
                return -ENOMEM;
        /* check the labels and taints now: a bad flag stops the kubelet at start, as upstream */
        fill_input(m, &in);
        r = node_object_build(&in, o->node_labels, o->register_with_taints, &probe, ret_error);
        if (r < 0)
                return r;
        m->register_timer = evtimer_new(base, register_tick, m);
        m->status_timer = evtimer_new(base, status_tick, m);
        m->lease_timer = evtimer_new(base, lease_tick, m);
        if (!m->register_timer || !m->status_timer || !m->lease_timer)
                return -ENOMEM;
        *ret = TAKE_PTR(m);
        return 0;
}

int node_manager_start(struct node_manager *m) {
        if (m->o->register_node)
                event_active(m->register_timer, EV_TIMEOUT, 0);
        else {
                /* not registering: the Node is someone else's; still report status and keep the lease */
                m->registered = true;
                event_active(m->status_timer, EV_TIMEOUT, 0);
                event_active(m->lease_timer, EV_TIMEOUT, 0);
        }
        return 0;
}

const char *node_manager_hostname(const struct node_manager *m) {
        return m ? m->hostname : NULL;
}

void node_manager_set_client(struct node_manager *m, struct kube_client *client) {
        if (!m)
                return;
        if (!m->heartbeat || m->heartbeat == m->client)
                m->heartbeat = client;
        m->client = client;
}

void node_manager_set_heartbeat_client(struct node_manager *m, struct kube_client *heartbeat) {
        assert(m);
        m->heartbeat = heartbeat ? heartbeat : m->client;
}
