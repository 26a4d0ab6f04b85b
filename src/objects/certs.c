/* SPDX-License-Identifier: Apache-2.0 */
/* The podCertificate projected volume sources (upstream's podcertificatemanager): per source a key pair made on the
 * keygen pool, a PodCertificateRequest, the issued chain, its refresh from beginRefreshAt; Denied and Failed are
 * final. The state each source goes through is enum cert_state (objects-internal.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/list.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "basic/workpool.h"
#include "objects/objects-internal.h"
#include "objects/podcert.h"

static void keygen_job_free(struct keygen_job *j) {
        if (!j)
                return;
        if (j->key)
                explicit_bzero(j->key, strlen(j->key));
        free(j->key);
        free(j->csr);
        free(j->key_type);
        free(j);
}

static void free_key(char **k) {
        if (*k)
                explicit_bzero(*k, strlen(*k));
        free(*k);
        *k = NULL;
}

void objects_cert_free(struct mcert *c) {
        if (!c)
                return;
        kube_request_cancel(c->req);
        if (c->job)
                c->job->c = NULL; /* its done() frees it */
        if (c->timer)
                event_free(c->timer);
        free_key(&c->key);
        free_key(&c->pending_key);
        free(c->chain);
        free(c->pcr_name);
        free(c->sa_uid);
        free(c->message);
        free(c->volume);
        free(c->sa);
        free(c->signer);
        free(c->key_type);
        json_decref(c->annotations);
        free(c);
}

/* the pod should look again: a waiting one (its first request) is woken, another one synced */
static void cert_changed(struct mcert *c) {
        struct objects_manager *m = c->p->m;
        _cleanup_free_ char *uid = NULL;

        if (c->p->ready) {
                objects_wake_ready_pods(m);
                return;
        }
        uid = strdup(c->p->uid);
        if (uid)
                m->changed(uid, m->userdata); /* may re-register the pod: c is then another pod's */
}

static void cert_timer_cb(evutil_socket_t fd, short what, void *userdata) {
        objects_cert_advance(userdata);
}

/* a step of a request failed: said in the volume's error, tried again with a back-off */
static void cert_failed(struct mcert *c, const char *fmt, ...) _printf_(2, 3);
static void cert_failed(struct mcert *c, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        bool first = !c->tried;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        log_warning("pod %s: podCertificate source %zu of volume \"%s\": %s", c->p->uid, c->index, c->volume,
                    strna(msg));
        free(c->message);
        c->message = TAKE_PTR(msg);
        free_key(&c->pending_key);
        c->tried = true;
        c->delay = c->delay ? MIN(c->delay * 2, (uint64_t) CERT_RETRY_MAX_USEC) : RETRY_MIN_USEC;
        evtimer_add_usec(c->timer, c->delay);
        if (first)
                cert_changed(c);
}

static const char *cert_api_error(const struct kube_response *resp) {
        return isempty(resp->error) ? "invalid answer" : resp->error;
}

static void cert_on_created(const struct kube_response *resp, void *userdata) {
        struct mcert *c = userdata;
        json_t *meta = json_object_get(resp->body, "metadata");
        const char *name = json_string_value(json_object_get(meta, "name"));
        const char *created = json_string_value(json_object_get(meta, "creationTimestamp"));
        int64_t nsec = 0;

        c->req = NULL;
        if (resp->r < 0 || resp->status / 100 != 2 || isempty(name)) {
                cert_failed(c, "while creating %s PodCertificateRequest: %s",
                            c->state == CERT_FRESH ? "refresh" : "initial", cert_api_error(resp));
                return;
        }
        if (!created || parse_rfc3339(created, &nsec) < 0)
                nsec = (int64_t) now_realtime_usec() * 1000;
        (void) free_and_strdup(&c->pcr_name, name);
        c->abandon_at = nsec / 1000000000 + PODCERT_ASSUME_DELETED_SECONDS + random() % PODCERT_JITTER_SECONDS;
        if (c->state == CERT_INITIAL)
                c->state = CERT_WAIT;
        else
                c->refreshing = true;
        c->delay = 0;
        log_v(2, "pod %s: created PodCertificateRequest %s/%s for podCertificate source %zu of volume \"%s\"",
              c->p->uid, c->p->ns, name, c->index, c->volume);
        if (!c->tried) {
                c->tried = true;
                free(c->message);
                c->message = NULL;
                cert_changed(c);
                return;
        }
        objects_cert_advance(c); /* the watch may have seen it already */
}

static void cert_create(struct mcert *c, const char *csr) {
        struct mpod *p = c->p;
        _cleanup_free_ char *ns = kube_escape(p->ns), *path = NULL;
        json_auto_t *body = NULL;
        json_t *spec;
        int r;

        if (!ns || asprintf(&path, "/apis/certificates.k8s.io/v1/namespaces/%s/podcertificaterequests", ns) < 0)
                goto oom;
        body = json_pack("{s:s, s:s, s:{s:s, s:s, s:[{s:s, s:s, s:s, s:s}]}, s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, "
                         "s:s}}",
                         "apiVersion", "certificates.k8s.io/v1", "kind", "PodCertificateRequest", "metadata",
                         "namespace", p->ns, "generateName", "req-", "ownerReferences", "apiVersion", "v1", "kind",
                         "Pod", "name", p->name, "uid", p->uid, "spec", "signerName", c->signer, "podName", p->name,
                         "podUID", p->uid, "serviceAccountName", c->sa, "serviceAccountUID", c->sa_uid, "nodeName",
                         p->m->node_name, "nodeUID", p->m->node_uid, "stubPKCS10Request", csr);
        spec = json_object_get(body, "spec");
        if (!spec)
                goto oom;
        if (c->has_max && json_object_set_new(spec, "maxExpirationSeconds", json_integer(c->max)) < 0)
                goto oom;
        if (c->annotations && json_object_set(spec, "unverifiedUserAnnotations", c->annotations) < 0)
                goto oom;
        r = kube_request(p->m->client, "POST", path, body, NULL, 0, cert_on_created, c, &c->req);
        if (r >= 0)
                return;
        c->req = NULL;
oom:
        cert_failed(c, "while creating PodCertificateRequest: out of memory");
}

static int keygen_work(void *userdata) {
        struct keygen_job *j = userdata;
        return podcert_generate(j->key_type, &j->key, &j->csr);
}

static void keygen_done(int r, void *userdata) {
        struct keygen_job *j = userdata;
        struct mcert *c = j->c;

        if (!c) {
                keygen_job_free(j);
                return;
        }
        c->job = NULL;
        if (r < 0) {
                keygen_job_free(j);
                cert_failed(c, "while generating keypair: %s", strerror(-r));
                return;
        }
        free_key(&c->pending_key);
        c->pending_key = TAKE_PTR(j->key);
        cert_create(c, j->csr);
        keygen_job_free(j);
}

static void cert_keygen(struct mcert *c) {
        struct keygen_job *j = calloc(1, sizeof(*j));
        int r;

        if (!j || !(j->key_type = strdup(c->key_type))) {
                keygen_job_free(j);
                cert_failed(c, "while generating keypair: out of memory");
                return;
        }
        j->c = c;
        r = workpool_submit(c->p->m->keygen, keygen_work, keygen_done, j);
        if (r < 0) {
                keygen_job_free(j);
                cert_failed(c, "while generating keypair: %s", strerror(-r));
                return;
        }
        c->job = j;
}

static void cert_on_node(const struct kube_response *resp, void *userdata) {
        struct mcert *c = userdata;
        const char *uid = json_string_value(json_object_get(json_object_get(resp->body, "metadata"), "uid"));

        c->req = NULL;
        if (resp->r < 0 || resp->status != 200 || isempty(uid)) {
                cert_failed(c, "while getting node object: %s", cert_api_error(resp));
                return;
        }
        (void) free_and_strdup(&c->p->m->node_uid, uid);
        cert_keygen(c);
}

static void cert_on_service_account(const struct kube_response *resp, void *userdata) {
        struct mcert *c = userdata;
        struct objects_manager *m = c->p->m;
        const char *uid = json_string_value(json_object_get(json_object_get(resp->body, "metadata"), "uid"));
        _cleanup_free_ char *node = NULL, *path = NULL;

        c->req = NULL;
        if (resp->r < 0 || resp->status != 200 || isempty(uid)) {
                cert_failed(c, "while fetching service account: %s", cert_api_error(resp));
                return;
        }
        (void) free_and_strdup(&c->sa_uid, uid);
        if (m->node_uid) {
                cert_keygen(c);
                return;
        }
        if (!(node = kube_escape(m->node_name)) || asprintf(&path, "/api/v1/nodes/%s", node) < 0 ||
            kube_request(m->client, "GET", path, NULL, NULL, 0, cert_on_node, c, &c->req) < 0) {
                c->req = NULL;
                cert_failed(c, "while getting node object: out of memory");
        }
}

/* a new PodCertificateRequest: the service account's UID, the node's, a key pair, then the request */
static void cert_request(struct mcert *c) {
        struct objects_manager *m = c->p->m;
        _cleanup_free_ char *ns = kube_escape(c->p->ns), *sa = kube_escape(c->sa), *path = NULL;

        if (!m->client || isempty(m->node_name)) {
                cert_failed(c, "no API server to request a certificate from");
                return;
        }
        if (!ns || !sa || asprintf(&path, "/api/v1/namespaces/%s/serviceaccounts/%s", ns, sa) < 0 ||
            kube_request(m->client, "GET", path, NULL, NULL, 0, cert_on_service_account, c, &c->req) < 0) {
                c->req = NULL;
                cert_failed(c, "while fetching service account: out of memory");
        }
}

/* the request we wait for, as the node's watch last saw it */
static json_t *cert_find_pcr(const struct mcert *c) {
        struct mobj *l = c->p->m->pcrs;
        json_t *it;
        size_t i;

        json_array_foreach(l ? l->obj : NULL, i, it) {
                json_t *meta = json_object_get(it, "metadata");
                if (streq_ptr(json_string_value(json_object_get(meta, "name")), c->pcr_name) &&
                    streq_ptr(json_string_value(json_object_get(meta, "namespace")), c->p->ns))
                        return it;
        }
        return NULL;
}

/* WAIT or refreshing: look at the request. Returns true when the state changed. */
static bool cert_check(struct mcert *c, json_t *pcr) {
        struct podcert_issued is = {};
        enum podcert_outcome out;
        const char *reason = NULL, *message = NULL;
        int64_t now = (int64_t) (now_realtime_usec() / USEC_PER_SEC);
        int r;

        if (!pcr) {
                if (now <= c->abandon_at)
                        return false;
                /* not seen for that long: someone deleted it; a new one */
                cert_failed(c, "PodCertificateRequest \"%s/%s\" appears to have been deleted", c->p->ns,
                            strna(c->pcr_name));
                if (c->state == CERT_WAIT)
                        c->state = CERT_INITIAL;
                c->refreshing = false;
                return false;
        }
        r = podcert_pcr_outcome(pcr, &out, &is, &reason, &message);
        if (r < 0) {
                log_warning("pod %s: PodCertificateRequest %s/%s: issued with an unusable status: %s", c->p->uid,
                            c->p->ns, c->pcr_name, strerror(-r));
                return false;
        }
        switch (out) {
        case PODCERT_PENDING:
                return false;
        case PODCERT_DENIED:
        case PODCERT_FAILED:
                free(c->message);
                if (asprintf(&c->message, "PodCertificateRequest was permanently %s: reason=\"%s\" message=\"%s\"",
                             out == PODCERT_DENIED ? "denied" : "failed", reason, message) < 0)
                        c->message = NULL;
                log_warning("pod %s: PodCertificateRequest %s/%s %s: reason=\"%s\" message=\"%s\"", c->p->uid, c->p->ns,
                            c->pcr_name, out == PODCERT_DENIED ? "was denied" : "failed", reason, message);
                c->state = out == PODCERT_DENIED ? CERT_DENIED : CERT_FAILED;
                c->refreshing = false;
                free_key(&c->key);
                free_key(&c->pending_key);
                free(c->chain);
                c->chain = NULL;
                evtimer_del(c->timer);
                return true;
        case PODCERT_ISSUED:
                free_key(&c->key);
                c->key = TAKE_PTR(c->pending_key);
                free(c->chain);
                c->chain = TAKE_PTR(is.chain);
                c->refresh_at = podcert_refresh_at(is.begin_refresh_at, random());
                c->not_after = is.not_after;
                c->state = CERT_FRESH;
                c->refreshing = false;
                free(c->message);
                c->message = NULL;
                c->delay = 0;
                log_info("pod %s: PodCertificateRequest %s/%s issued; refresh from %" PRId64, c->p->uid, c->p->ns,
                         c->pcr_name, c->refresh_at);
                evtimer_add_usec(c->timer,
                                 (uint64_t) MAX(c->refresh_at - now, (int64_t) 0) * USEC_PER_SEC + USEC_PER_SEC);
                podcert_issued_done(&is);
                return true;
        }
        return false;
}

void objects_cert_advance(struct mcert *c) {
        int64_t now = (int64_t) (now_realtime_usec() / USEC_PER_SEC);

        if (c->req || c->job)
                return;
        switch (c->state) {
        case CERT_INITIAL:
                if (!evtimer_pending(c->timer, NULL))
                        cert_request(c);
                return;
        case CERT_FRESH:
                if (!c->refreshing) {
                        if (now >= c->refresh_at && !evtimer_pending(c->timer, NULL)) {
                                log_v(2, "pod %s: time to refresh podCertificate source %zu of volume \"%s\"",
                                      c->p->uid, c->index, c->volume);
                                cert_request(c);
                        }
                        return;
                }
                _fallthrough_;
        case CERT_WAIT:
                if (cert_check(c, cert_find_pcr(c)))
                        cert_changed(c);
                return;
        default:
                return;
        }
}

void objects_certs_pcr_event(struct objects_manager *m, json_t *pcr) {
        const char *uid = json_string_value(json_object_get(json_object_get(pcr, "spec"), "podUID"));
        const char *name = json_string_value(json_object_get(json_object_get(pcr, "metadata"), "name"));
        struct mpod *p = uid ? objects_pod_find(m, uid) : NULL;

        for (size_t i = 0; p && i < p->n_certs; i++) {
                struct mcert *c = p->certs[i];
                if ((c->state == CERT_WAIT || c->refreshing) && streq_ptr(c->pcr_name, name) && cert_check(c, pcr)) {
                        cert_changed(c);
                        return; /* p may be gone */
                }
        }
}

struct mcert **objects_cert_find(struct mpod *p, const struct cert_ref *r) {
        for (size_t i = 0; p && i < p->n_certs; i++)
                if (p->certs[i] && streq(p->certs[i]->volume, r->volume) && p->certs[i]->index == r->index &&
                    streq(p->certs[i]->signer, r->signer_name) && streq(p->certs[i]->key_type, r->key_type) &&
                    p->certs[i]->has_max == r->has_max_expiration && p->certs[i]->max == r->max_expiration_seconds &&
                    streq(p->certs[i]->sa, r->service_account) &&
                    json_equal(p->certs[i]->annotations, r->user_annotations) ==
                            (p->certs[i]->annotations || r->user_annotations ? 1 : 0))
                        return &p->certs[i];
        return NULL;
}

struct mcert *objects_cert_new(struct objects_manager *m, const struct cert_ref *r) {
        struct mcert *c = calloc(1, sizeof(*c));

        if (!c)
                return NULL;
        *c = (struct mcert) { .volume = strdup(r->volume),
                              .index = r->index,
                              .sa = strdup(r->service_account),
                              .signer = strdup(r->signer_name),
                              .key_type = strdup(r->key_type),
                              .has_max = r->has_max_expiration,
                              .max = r->max_expiration_seconds,
                              .annotations = json_incref(r->user_annotations) };
        c->timer = evtimer_new(m->base, cert_timer_cb, c);
        if (!c->volume || !c->sa || !c->signer || !c->key_type || !c->timer) {
                objects_cert_free(c);
                return NULL;
        }
        return c;
}
