/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "client/client.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "cm/dra/claims.h"
#include "cm/dra/health.h"
#include "cm/dra/plugins.h"
#include "drahealth.pb-c.h"
#include "features/features.h"
#include "cm/dra/manager.h"
#include "cm/dra/podclaims.h"
#include "kubelet/dra.h"
#include "kubelet/kubelet-internal.h"
#include "kubelet/plugins.h"

struct fetched {
        struct kubelet_dra_job *job;
        char *uid, *name;
        char **drivers;
        struct kube_request *req; /* in flight */
};

struct kubelet_dra_job {
        struct kubelet *k;
        char *pod_uid, *pod_name, *pod_ns;
        json_t *container; /* the container's document (a reference) */
        struct dra_pod_claim *claims;
        size_t n_claims;
        struct fetched *fetched; /* by claim index; claim_name NULL: nothing */
        size_t pending;
        char *error;
        struct dra_prepare *prepare;
        struct event *finish; /* done() runs from here, never inside kubelet_dra_prepare */
        kubelet_dra_done_t done;
        void *userdata;
};

/* ---------------------------------------------------------------- device health (ResourceHealthStatus) */

static void health_arm(struct kubelet *k) {
        uint64_t at = dra_health_next_expiry(k->dra_health), now = now_usec();

        evtimer_del(k->dra_health_timer);
        if (at != 0 && evtimer_add_usec(k->dra_health_timer, at > now ? at - now : 0) < 0)
                log_error("DRA: cannot arm the device health timer");
}

/* the pods whose claims hold a changed device report their status again (allocatedResourcesStatus) */
static void health_changed(struct kubelet *k, struct dra_health_key *changed, size_t n) {
        _cleanup_strv_free_ char **uids = NULL;

        if (n > 0 && k->dra && dra_health_affected_pods(dra_manager_claims(k->dra), changed, n, &uids) >= 0)
                for (char **u = uids; u && *u; u++) {
                        struct pod_worker *w = kubelet_find_worker(k, *u);
                        log_v(4, "DRA: device health changed for pod %s", *u);
                        if (w && w->pod)
                                kubelet_report_status(k, w);
                }
        dra_health_keys_free(changed, n);
        health_arm(k);
}

static enum dra_health health_of(int v) {
        switch (v) {
        case DRAHEALTH__V1__HEALTH_STATUS__HEALTHY:
                return DRA_HEALTH_HEALTHY;
        case DRAHEALTH__V1__HEALTH_STATUS__UNHEALTHY:
                return DRA_HEALTH_UNHEALTHY;
        default:
                return DRA_HEALTH_UNKNOWN;
        }
}

static void on_health_message(const char *driver, const ProtobufCMessage *msg, void *userdata) {
        const Drahealth__V1__NodeWatchResourcesResponse *resp = (const Drahealth__V1__NodeWatchResourcesResponse *) msg;
        struct kubelet *k = userdata;
        _cleanup_free_ struct dra_health_report *reports = NULL;
        struct dra_health_key *changed = NULL;
        size_t n = 0, n_changed = 0;
        int r;

        if (!k->dra_health)
                return;
        if (resp->n_devices > DRA_HEALTH_MAX_DEVICES) {
                log_error("DRA driver %s: health update ignored: %zu devices, more than %d", driver, resp->n_devices,
                          DRA_HEALTH_MAX_DEVICES);
                return;
        }
        reports = calloc(resp->n_devices ?: 1, sizeof(*reports));
        if (!reports) {
                log_error("DRA: out of memory");
                return;
        }
        for (size_t i = 0; i < resp->n_devices; i++) {
                const Drahealth__V1__DeviceHealth *d = resp->devices[i];
                if (!d || !d->device) {
                        log_error("DRA driver %s: health update ignored: device %zu has no identifier", driver, i);
                        return;
                }
                reports[n++] = (struct dra_health_report) { .pool = d->device->pool_name,
                                                            .device = d->device->device_name,
                                                            .health = health_of(d->health),
                                                            .timeout_sec = d->health_check_timeout_seconds,
                                                            .message = d->message };
        }
        r = dra_health_update(k->dra_health, driver, reports, n, now_usec(), &changed, &n_changed);
        if (r == -EINVAL) {
                log_error("DRA driver %s: health update ignored: a device's pool or device name is empty or longer "
                          "than %d",
                          driver, DRA_HEALTH_MAX_NAME);
                return;
        }
        if (r < 0) {
                log_error("DRA: out of memory");
                return;
        }
        health_changed(k, changed, n_changed);
}

static void on_health_end(const char *driver, void *userdata) {
        struct kubelet *k = userdata;
        struct dra_health_key *changed = NULL;
        size_t n_changed = 0;

        if (!k->dra_health)
                return;
        log_v(4, "DRA driver %s: clearing its device health", driver);
        if (dra_health_clear_driver(k->dra_health, driver, &changed, &n_changed) < 0) {
                log_error("DRA: out of memory");
                return;
        }
        health_changed(k, changed, n_changed);
}

static void on_health_timer(evutil_socket_t fd, short what, void *userdata) {
        struct kubelet *k = userdata;
        struct dra_health_key *changed = NULL;
        size_t n_changed = 0;
        (void) fd;
        (void) what;

        if (dra_health_expire(k->dra_health, now_usec(), &changed, &n_changed) < 0) {
                log_error("DRA: out of memory");
                return;
        }
        health_changed(k, changed, n_changed);
}

int kubelet_dra_setup(struct kubelet *k, struct ck_error **ret_error) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        int r;

        r = dra_manager_new(k->base, k->opts->root_dir, k->dra_plugins, &k->dra, &err);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot start the DRA manager: %s", ck_error_message(err));
        if (feature_enabled(k->opts->feature_gates, "ResourceHealthStatus") && k->dra_plugins) {
                struct dra_health_handler h = { on_health_message, on_health_end, k };

                if (dra_health_cache_new(&k->dra_health) < 0 ||
                    !(k->dra_health_timer = evtimer_new(k->base, on_health_timer, k)))
                        return ck_error_set(ret_error, -ENOMEM,
                                            "cannot start the DRA device health cache: out of memory");
                dra_plugins_set_health_handler(k->dra_plugins, &h);
        }
        return 0;
}

void kubelet_dra_free(struct kubelet *k) {
        k->dra = dra_manager_free(k->dra);
        if (k->dra_health_timer)
                event_free(k->dra_health_timer);
        k->dra_health_timer = NULL;
        k->dra_health = dra_health_cache_free(k->dra_health);
}

/* the prepared claim of that name in that namespace, NULL when there is none */
static const struct dra_claim *prepared_claim(struct dra_claims *cache, const char *name, const char *ns) {
        for (size_t x = 0; x < dra_claims_count(cache); x++) {
                const struct dra_claim *cl = dra_claims_at(cache, x);
                if (streq(cl->name, name) && streq(cl->namespace, ns) && cl->state == DRA_CLAIM_PREPARED)
                        return cl;
        }
        return NULL;
}

json_t *kubelet_dra_allocated_resources_status(struct kubelet *k, const struct pod *pod, const struct container *c) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_free_ struct dra_container_claim *refs = NULL;
        struct dra_pod_claim *claims = NULL;
        size_t n_claims = 0, n_refs = 0;
        json_auto_t *out = NULL;
        bool with_message = feature_enabled(k->opts->feature_gates, "ResourceHealthStatusMessage");
        uint64_t now = now_usec();
        struct dra_claims *cache;

        if (!k->dra || !k->dra_health || !pod->raw || !c->raw ||
            json_array_size(json_object_get(json_object_get(pod->raw, "spec"), "resourceClaims")) == 0)
                return NULL;
        if (dra_container_claims(c->raw, &refs, &n_refs) < 0 || n_refs == 0 ||
            dra_pod_claims(pod->raw, &claims, &n_claims, &err) < 0)
                goto finish;
        cache = dra_manager_claims(k->dra);
        out = json_array();
        /* UpdateAllocatedResourcesStatus: per resources.claims[] entry, the prepared claim's devices (of the
         * request) with their health */
        for (size_t i = 0; out && i < n_refs; i++)
                for (size_t p = 0; p < n_claims; p++) {
                        const struct dra_claim *claim = NULL;
                        json_t *st = NULL;

                        if (!claims[p].claim_name || !streq(claims[p].pod_claim_name, refs[i].name))
                                continue;
                        claim = prepared_claim(cache, claims[p].claim_name, pod->namespace_);
                        if (!claim)
                                break;
                        if (dra_health_claim_status(k->dra_health, claim, refs[i].name, refs[i].request, with_message,
                                                    now, &st) < 0) {
                                out = (json_decref(out), NULL);
                                break;
                        }
                        if (st)
                                json_array_append_new(out, st);
                        break;
                }
finish:
        dra_pod_claims_free(claims, n_claims);
        return out && json_array_size(out) > 0 ? json_incref(out) : NULL;
}

void kubelet_dra_job_cancel(struct kubelet_dra_job *j) {
        if (!j)
                return;
        for (size_t i = 0; j->fetched && i < j->n_claims; i++) {
                kube_request_cancel(j->fetched[i].req);
                free(j->fetched[i].uid);
                free(j->fetched[i].name);
                strv_free(j->fetched[i].drivers);
        }
        free(j->fetched);
        dra_prepare_cancel(j->prepare);
        dra_pod_claims_free(j->claims, j->n_claims);
        json_decref(j->container);
        if (j->finish)
                event_free(j->finish);
        free(j->error);
        free(j->pod_uid);
        free(j->pod_name);
        free(j->pod_ns);
        free(j);
}

static void job_fail(struct kubelet_dra_job *j, const char *fmt, ...) _printf_(2, 3);
static void job_fail(struct kubelet_dra_job *j, const char *fmt, ...) {
        va_list ap;

        if (j->error)
                return;
        va_start(ap, fmt);
        if (vasprintf(&j->error, fmt, ap) < 0)
                j->error = strdup("out of memory");
        va_end(ap);
}

/* the CDI devices of the container's claim references, then done() */
static void job_finish(evutil_socket_t fd, short what, void *userdata) {
        struct kubelet_dra_job *j = userdata;
        _cleanup_strv_free_ char **ids = NULL;
        _cleanup_free_ struct dra_container_claim *refs = NULL;
        size_t n_refs = 0;
        (void) fd;
        (void) what;

        if (!j->error && dra_container_claims(j->container, &refs, &n_refs) < 0)
                job_fail(j, "out of memory");
        for (size_t i = 0; !j->error && i < n_refs; i++)
                for (size_t c = 0; c < j->n_claims; c++) {
                        struct dra_claim *claim;
                        if (!streq(j->claims[c].pod_claim_name, refs[i].name) || !j->fetched[c].uid)
                                continue;
                        claim = dra_claims_find(dra_manager_claims(j->k->dra), j->fetched[c].uid);
                        if (claim && dra_claim_cdi_ids(claim, refs[i].request, &ids) < 0)
                                job_fail(j, "out of memory");
                }
        if (j->error) {
                _cleanup_free_ char *msg = NULL;
                if (asprintf(&msg, "Failed to prepare dynamic resources: prepare dynamic resources: %s", j->error) < 0)
                        msg = NULL;
                j->done(NULL, msg ?: j->error, j->userdata);
        } else
                j->done(ids, NULL, j->userdata);
        /* the caller cancels (frees) the job from done() or later */
}

static void on_prepared(int r, const char *error, void *userdata) {
        struct kubelet_dra_job *j = userdata;

        j->prepare = NULL;
        if (r < 0)
                job_fail(j, "%s", error ?: strerror(-r));
        event_active(j->finish, EV_TIMEOUT, 0);
}

static void all_fetched(struct kubelet_dra_job *j) {
        struct dra_claim_ref *refs;
        size_t n = 0;
        int r;

        if (j->error) {
                event_active(j->finish, EV_TIMEOUT, 0);
                return;
        }
        refs = calloc(j->n_claims ?: 1, sizeof(*refs));
        if (!refs) {
                job_fail(j, "out of memory");
                event_active(j->finish, EV_TIMEOUT, 0);
                return;
        }
        for (size_t i = 0; i < j->n_claims; i++)
                if (j->fetched[i].uid)
                        refs[n++] = (struct dra_claim_ref) { j->fetched[i].uid, j->fetched[i].name, j->pod_ns,
                                                             j->fetched[i].drivers };
        r = dra_manager_prepare(j->k->dra, j->pod_uid, refs, n, on_prepared, j, &j->prepare);
        free(refs);
        if (r == -EEXIST)
                job_fail(j, "old ResourceClaim with same name and different UID still exists (previous pod "
                            "force-deleted?!)");
        else if (r < 0)
                job_fail(j, "%s", strerror(-r));
        if (r < 0)
                event_active(j->finish, EV_TIMEOUT, 0);
}

static void on_claim(const struct kube_response *resp, void *userdata) {
        struct fetched *f = userdata;
        struct kubelet_dra_job *j = f->job;
        struct dra_pod_claim *pc = &j->claims[f - j->fetched];
        _cleanup_ck_error_ struct ck_error *err = NULL;
        const char *uid;
        int r;

        f->req = NULL;
        if (resp->r < 0 || resp->status != 200)
                job_fail(j, "fetch ResourceClaim %s: %s", pc->claim_name, resp->error);
        else {
                r = dra_claim_check(resp->body, j->pod_ns, j->pod_name, j->pod_uid, pc->must_check_owner, &f->drivers,
                                    &err);
                uid = json_string_value(json_object_get(json_object_get(resp->body, "metadata"), "uid"));
                if (r < 0)
                        job_fail(j, "%s", ck_error_message(err));
                else if (isempty(uid))
                        job_fail(j, "ResourceClaim %s: no metadata.uid", pc->claim_name);
                else if (!(f->uid = strdup(uid)) || !(f->name = strdup(pc->claim_name)))
                        job_fail(j, "out of memory");
        }
        if (--j->pending == 0)
                all_fetched(j);
}

int kubelet_dra_prepare(struct kubelet *k, const struct pod *pod, const struct container *c, kubelet_dra_done_t done,
                        void *userdata, struct kubelet_dra_job **ret) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct kubelet_dra_job *j;
        int r;

        if (!k->dra || !pod->raw ||
            json_array_size(json_object_get(json_object_get(pod->raw, "spec"), "resourceClaims")) == 0)
                return 1;
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->k = k;
        j->done = done;
        j->userdata = userdata;
        j->container = json_incref(c->raw);
        j->pod_uid = strdup(strempty(pod->uid));
        j->pod_name = strdup(strempty(pod->name));
        j->pod_ns = strdup(strempty(pod->namespace_));
        j->finish = event_new(k->base, -1, 0, job_finish, j);
        if (!j->pod_uid || !j->pod_name || !j->pod_ns || !j->finish) {
                kubelet_dra_job_cancel(j);
                return -ENOMEM;
        }
        r = dra_pod_claims(pod->raw, &j->claims, &j->n_claims, &err);
        if (r == -ENOMEM) {
                kubelet_dra_job_cancel(j);
                return r;
        }
        if (r < 0) {
                job_fail(j, "%s", ck_error_message(err));
                event_active(j->finish, EV_TIMEOUT, 0);
                *ret = j;
                return 0;
        }
        j->fetched = calloc(j->n_claims ?: 1, sizeof(*j->fetched));
        if (!j->fetched) {
                kubelet_dra_job_cancel(j);
                return -ENOMEM;
        }
        for (size_t i = 0; i < j->n_claims; i++) {
                _cleanup_free_ char *path = NULL;
                j->fetched[i].job = j;
                if (!j->claims[i].claim_name)
                        continue; /* none needed */
                if (!k->client) {
                        job_fail(j, "fetch ResourceClaim %s: no API server client", j->claims[i].claim_name);
                        break;
                }
                if (asprintf(&path, "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s", j->pod_ns,
                             j->claims[i].claim_name) < 0) {
                        job_fail(j, "out of memory");
                        break;
                }
                r = kube_request(k->client, "GET", path, NULL, NULL, 0, on_claim, &j->fetched[i], &j->fetched[i].req);
                if (r < 0) {
                        job_fail(j, "fetch ResourceClaim %s: %s", j->claims[i].claim_name, strerror(-r));
                        break;
                }
                j->pending++;
        }
        if (j->pending == 0)
                all_fetched(j);
        *ret = j;
        return 0;
}

void kubelet_dra_gc(struct kubelet *k) {
        _cleanup_strv_free_ char **active = NULL;

        if (!k->dra || !k->config_received || kubelet_active_pod_uids(k, &active) < 0)
                return;
        dra_manager_gc(k->dra, active);
}

void kubelet_dra_foreach_container_claim(struct kubelet *k, const struct pod *pod, const struct container *c,
                                         kubelet_dra_claim_cb cb, void *userdata) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_free_ struct dra_container_claim *refs = NULL;
        _cleanup_free_ const struct dra_claim **seen = NULL;
        struct dra_pod_claim *claims = NULL;
        size_t n_claims = 0, n_refs = 0, n_seen = 0;
        struct dra_claims *cache;

        if (!k->dra || !pod->raw || !c->raw ||
            json_array_size(json_object_get(json_object_get(pod->raw, "spec"), "resourceClaims")) == 0)
                return;
        if (dra_pod_claims(pod->raw, &claims, &n_claims, &err) < 0 || dra_container_claims(c->raw, &refs, &n_refs) < 0)
                goto finish;
        seen = calloc(n_refs ?: 1, sizeof(*seen));
        if (!seen)
                goto finish;
        cache = dra_manager_claims(k->dra);
        /* upstream's GetContainerClaimInfos: the claims the container's resources.claims name, by the claim's name
         * in the pod's namespace; only those prepared (a claim referenced twice is listed once) */
        for (size_t i = 0; i < n_refs; i++)
                for (size_t p = 0; p < n_claims; p++) {
                        const struct dra_claim *claim = NULL;
                        bool dup = false;
                        if (!claims[p].claim_name || !streq(claims[p].pod_claim_name, refs[i].name))
                                continue;
                        claim = prepared_claim(cache, claims[p].claim_name, pod->namespace_);
                        for (size_t s = 0; claim && s < n_seen; s++)
                                dup = dup || seen[s] == claim;
                        if (!claim || dup)
                                continue;
                        seen[n_seen++] = claim;
                        cb(claim, userdata);
                }
finish:
        dra_pod_claims_free(claims, n_claims);
}
