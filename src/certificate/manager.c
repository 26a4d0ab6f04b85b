/* SPDX-License-Identifier: Apache-2.0 */
/* One certificate request at a time, as a small state machine on the loop:
 *
 *   IDLE --(deadline or retry timer)--> CREATING (POST, or GET of our earlier request on 409)
 *        --> WAITING: LIST by name, then WATCH from the list's resourceVersion; transport errors and the
 *            watch's end only list again (the request is not given up while the API server is away)
 *        --> issued: store the pair, hand it over, IDLE until the next deadline
 *   denied, failed, deleted, timed out, or any other error: IDLE, retried after the back-off
 */
#include "certificate/manager.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/base64.h"
#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "client/client.h"

#define CSR_PATH "/apis/certificates.k8s.io/v1/certificatesigningrequests"
#define DEFAULT_WAIT_TIMEOUT_USEC (15 * 60 * USEC_PER_SEC) /* certificateWaitTimeout */
#define BACKOFF_BASE_USEC (2 * USEC_PER_SEC)
#define BACKOFF_MAX_USEC (32 * USEC_PER_SEC)
#define RELIST_MIN_USEC (USEC_PER_SEC)
#define RELIST_MAX_USEC (16 * USEC_PER_SEC)
#define TEMPLATE_RETRY_USEC (USEC_PER_SEC)
#define WATCH_IDLE_TIMEOUT_USEC (6 * 60 * USEC_PER_SEC)
#define KEY_MAX_SIZE (64u * 1024u)

enum manager_state {
        STATE_IDLE,
        STATE_CREATING,
        STATE_WAITING,
};

struct cert_manager {
        struct event_base *base;
        char *name, *signer;
        char **usages;
        struct cert_store store;
        bool bootstrap_names, rotate, force, started, stopped;
        uint64_t wait_timeout_usec;
        struct cert_manager_ops ops;
        void *userdata;

        struct cert_pair current;
        bool have_current;
        char *load_error;

        enum manager_state state;
        struct event *timer;        /* next attempt (deadline, back-off) */
        struct event *relist_timer; /* WAITING: list again */
        struct event *wait_timer;   /* WAITING: give up on this request */
        struct kube_request *req;
        struct kube_client *client; /* the attempt's (ops.client), borrowed */
        unsigned failures, relist_failures;

        /* the request in progress */
        struct cert_template tmpl;
        char *key_pem;
        char *want_name; /* bootstrap_names: node-csr-<digest> */
        char *csr_name, *csr_uid, *rv;
        bool said_waiting;
};

uint64_t cert_backoff_usec(unsigned failures, double jitter01) {
        uint64_t d = BACKOFF_BASE_USEC;

        for (unsigned i = 1; i < failures && d < BACKOFF_MAX_USEC; i++)
                d *= 2;
        d = MIN(d, (uint64_t) BACKOFF_MAX_USEC);
        if (!(jitter01 >= 0) || jitter01 >= 1)
                jitter01 = 0;
        return d + (uint64_t) ((double) d * 0.1 * jitter01);
}

static double random01(void) {
        static uint64_t s;

        if (s == 0)
                s = (now_realtime_usec() ^ ((uint64_t) getpid() << 32)) | 1;
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return (double) (s >> 11) / 9007199254740992.0;
}

static const char *fmt_time(int64_t usec, char *buf, size_t size) {
        return format_rfc3339((uint64_t) MAX(usec, (int64_t) 0), buf, size);
}

static bool current_valid(const struct cert_manager *m) {
        return m->have_current && (int64_t) now_realtime_usec() < m->current.info.not_after_usec;
}

const struct cert_pair *cert_manager_current(const struct cert_manager *m) {
        return m && current_valid(m) ? &m->current : NULL;
}

char *cert_manager_current_path(const struct cert_manager *m) {
        return cert_store_current_path(&m->store);
}

const char *cert_manager_load_error(const struct cert_manager *m) {
        return m && m->load_error ? m->load_error : "";
}

static char *key_tmp_path(const struct cert_manager *m) {
        char *p;
        if (asprintf(&p, "%s/%s.key.tmp", m->store.dir, m->store.prefix) < 0)
                return NULL;
        return p;
}

/* ---------------------------------------------------------------- the request in progress */

static void request_reset(struct cert_manager *m) {
        if (m->req) {
                kube_request_cancel(m->req);
                m->req = NULL;
        }
        if (m->relist_timer)
                event_del(m->relist_timer);
        if (m->wait_timer)
                event_del(m->wait_timer);
        cert_template_done(&m->tmpl);
        if (m->key_pem) {
                explicit_bzero(m->key_pem, strlen(m->key_pem));
                m->key_pem = mfree(m->key_pem);
        }
        m->want_name = mfree(m->want_name);
        m->csr_name = mfree(m->csr_name);
        m->csr_uid = mfree(m->csr_uid);
        m->rv = mfree(m->rv);
        m->said_waiting = false;
        m->relist_failures = 0;
        m->state = STATE_IDLE;
}

static void schedule_attempt(struct cert_manager *m, uint64_t delay_usec) {
        if (!m->stopped)
                evtimer_add_usec(m->timer, delay_usec);
}

static void fail(struct cert_manager *m, const char *fmt, ...) _printf_(2, 3);
static void fail(struct cert_manager *m, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        uint64_t delay;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        request_reset(m);
        m->failures++;
        delay = cert_backoff_usec(m->failures, random01());
        log_error("%s certificate: %s (retrying in %llu s)", m->name, strna(msg),
                  (unsigned long long) ((delay + USEC_PER_SEC / 2) / USEC_PER_SEC));
        schedule_attempt(m, delay);
}

/* when to try next: at once without a usable pair or one that misses the template, else at the deadline */
static void schedule_next(struct cert_manager *m) {
        struct cert_template t = {};
        char a[64], b[64];
        int64_t deadline, now = (int64_t) now_realtime_usec();
        int r;

        if (m->force || !current_valid(m)) {
                m->force = false;
                schedule_attempt(m, 0);
                return;
        }
        r = m->ops.get_template(m->userdata, &t);
        if (r >= 0 && !cert_satisfies_template(&m->current.info, &t)) {
                log_info("The current %s certificate (%s) does not have everything the node asks for now: "
                         "requesting a new one",
                         m->name, m->current.path);
                cert_template_done(&t);
                schedule_attempt(m, 0);
                return;
        }
        cert_template_done(&t);
        if (!m->rotate)
                return;
        deadline = cert_rotation_deadline(&m->current.info, random01());
        log_v(2, "%s certificate expiration is %s, rotation deadline is %s", m->name,
              fmt_time(m->current.info.not_after_usec, a, sizeof(a)), fmt_time(deadline, b, sizeof(b)));
        if (deadline > now)
                log_v(2, "Waiting %llu s for the next %s certificate rotation",
                      (unsigned long long) ((uint64_t) (deadline - now) / USEC_PER_SEC), m->name);
        schedule_attempt(m, deadline > now ? (uint64_t) (deadline - now) : 0);
}

static void issued(struct cert_manager *m, const char *cert_pem) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct cert_pair stored = {};
        char a[64];
        int r;

        r = cert_store_update(&m->store, cert_pem, m->key_pem, now_realtime_usec(), &stored, &err);
        if (r < 0) {
                fail(m, "unable to store the new cert/key pair from certificate signing request %s: %s", m->csr_name,
                     ck_error_message(err));
                return;
        }
        if (m->bootstrap_names) {
                _cleanup_free_ char *tmp = key_tmp_path(m);
                if (tmp && unlink(tmp) < 0 && errno != ENOENT)
                        log_v(2, "failed cleaning up private key file %s: %m", tmp);
        }
        log_info_kv("Certificate issued and stored", "certificate", m->name, "csr", m->csr_name, "file", stored.path,
                    "expiration", fmt_time(stored.info.not_after_usec, a, sizeof(a)));
        request_reset(m);
        m->failures = 0;
        cert_pair_done(&m->current);
        m->current = stored;
        m->have_current = true;
        m->ops.updated(m->userdata, &m->current);
        schedule_next(m);
}

/* look at the CSR object: true when the request is over (issued or failed; m may have moved on) */
static bool check_csr(struct cert_manager *m, json_t *obj) {
        const char *uid = json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
        const char *reason = "", *message = "";
        _cleanup_free_ char *cert = NULL;
        enum cert_csr_state st;
        int r;

        if (m->csr_uid && !streq_ptr(uid, m->csr_uid)) {
                fail(m, "certificate signing request %s changed UIDs", m->csr_name);
                return true;
        }
        r = cert_csr_state(obj, &st, &reason, &message, &cert);
        if (r < 0) {
                fail(m, "certificate signing request %s: status.certificate is not valid base64", m->csr_name);
                return true;
        }
        switch (st) {
        case CERT_CSR_DENIED:
        case CERT_CSR_FAILED:
                if (m->bootstrap_names) {
                        /* a new key next time, so a new name: the denied request keeps its own */
                        _cleanup_free_ char *tmp = key_tmp_path(m);
                        if (tmp)
                                (void) unlink(tmp);
                }
                fail(m, "certificate signing request %s is %s, reason: %s, message: %s", m->csr_name,
                     st == CERT_CSR_DENIED ? "denied" : "failed", reason, message);
                return true;
        case CERT_CSR_ISSUED:
                log_v(2, "certificate signing request %s is issued", m->csr_name);
                issued(m, cert);
                return true;
        case CERT_CSR_APPROVED:
                log_v(2, "certificate signing request %s is approved, waiting to be issued", m->csr_name);
                return false;
        case CERT_CSR_PENDING:
        default:
                if (!m->said_waiting)
                        log_info(
                                "Waiting for the %s certificate to be issued: certificate signing request %s is pending "
                                "approval",
                                m->name, m->csr_name);
                m->said_waiting = true;
                return false;
        }
}

/* ---------------------------------------------------------------- waiting: LIST + WATCH of one object */

static void start_list(struct cert_manager *m);

static void relist_later(struct cert_manager *m, const char *why) {
        uint64_t d = RELIST_MIN_USEC;

        m->req = NULL;
        for (unsigned i = 0; i < m->relist_failures && d < RELIST_MAX_USEC; i++)
                d *= 2;
        m->relist_failures++;
        log_v(2, "certificate signing request %s: %s; looking again in %llu s", m->csr_name, why,
              (unsigned long long) (MIN(d, (uint64_t) RELIST_MAX_USEC) / USEC_PER_SEC));
        evtimer_add_usec(m->relist_timer, MIN(d, (uint64_t) RELIST_MAX_USEC));
}

static void on_watch_event(const char *type, json_t *object, void *userdata) {
        struct cert_manager *m = userdata;

        if (streq(type, "DELETED")) {
                fail(m, "certificate signing request %s was deleted", m->csr_name);
                return;
        }
        if (streq(type, "ERROR")) {
                /* 410 Gone and friends: list again */
                kube_request_cancel(m->req);
                relist_later(m, "the watch reported an error");
                return;
        }
        if (streq(type, "BOOKMARK"))
                return;
        (void) check_csr(m, object);
}

static void on_watch_done(int r, long status, const char *error, void *userdata) {
        struct cert_manager *m = userdata;

        m->req = NULL;
        if (r == 0 && status == 200) {
                m->relist_failures = 0;
                start_list(m); /* the server ended it (timeoutSeconds): look again */
                return;
        }
        relist_later(m, error && *error ? error : "the watch ended");
}

static void start_watch(struct cert_manager *m) {
        _cleanup_free_ char *path = NULL, *sel = NULL, *rv = NULL, *field = NULL;
        int r;

        if (asprintf(&field, "metadata.name=%s", m->csr_name) < 0)
                goto oom;
        sel = kube_escape(field);
        rv = kube_escape(strempty(m->rv));
        if (!sel || !rv ||
            asprintf(&path, "%s?fieldSelector=%s&resourceVersion=%s&watch=true&timeoutSeconds=%u", CSR_PATH, sel, rv,
                     240 + (unsigned) (random01() * 60)) < 0)
                goto oom;
        r = kube_watch(m->client, path, WATCH_IDLE_TIMEOUT_USEC, on_watch_event, on_watch_done, m, &m->req);
        if (r < 0) {
                m->req = NULL;
                relist_later(m, strerror(-r));
        }
        return;
oom:
        m->req = NULL;
        relist_later(m, "out of memory");
}

static void on_list(const struct kube_response *resp, void *userdata) {
        struct cert_manager *m = userdata;
        json_t *items = json_object_get(resp->body, "items"), *item, *obj = NULL;
        size_t i;

        m->req = NULL;
        if (resp->r < 0 || resp->status != 200) {
                relist_later(m, resp->error);
                return;
        }
        m->relist_failures = 0;
        json_array_foreach(items, i, item)
                if (streq_ptr(json_string_value(json_object_get(json_object_get(item, "metadata"), "name")),
                              m->csr_name))
                        obj = item;
        if (!obj) {
                fail(m, "certificate signing request %s was deleted", m->csr_name);
                return;
        }
        if (check_csr(m, obj))
                return;
        free(m->rv);
        m->rv = strdup_or_null(
                json_string_value(json_object_get(json_object_get(resp->body, "metadata"), "resourceVersion")));
        start_watch(m);
}

static void start_list(struct cert_manager *m) {
        _cleanup_free_ char *path = NULL, *sel = NULL, *field = NULL;
        int r;

        if (asprintf(&field, "metadata.name=%s", m->csr_name) < 0 || !(sel = kube_escape(field)) ||
            asprintf(&path, "%s?fieldSelector=%s", CSR_PATH, sel) < 0) {
                relist_later(m, "out of memory");
                return;
        }
        r = kube_request(m->client, "GET", path, NULL, NULL, 0, on_list, m, &m->req);
        if (r < 0) {
                m->req = NULL;
                relist_later(m, strerror(-r));
        }
}

static void on_relist_timer(evutil_socket_t fd, short what, void *userdata) {
        struct cert_manager *m = userdata;

        if (m->state == STATE_WAITING && !m->req)
                start_list(m);
}

static void on_wait_timeout(evutil_socket_t fd, short what, void *userdata) {
        struct cert_manager *m = userdata;

        fail(m, "timed out after %llu s waiting for certificate signing request %s to be approved and issued",
             (unsigned long long) (m->wait_timeout_usec / USEC_PER_SEC), m->csr_name);
}

static void start_wait(struct cert_manager *m, const char *name, const char *uid) {
        free(m->csr_name);
        free(m->csr_uid);
        m->csr_name = strdup_or_null(name);
        m->csr_uid = strdup_or_null(uid);
        if (!m->csr_name) {
                fail(m, "out of memory");
                return;
        }
        m->state = STATE_WAITING;
        evtimer_add_usec(m->wait_timer, m->wait_timeout_usec);
        log_info_kv("Certificate signing request created", "certificate", m->name, "csr", m->csr_name, "signer",
                    m->signer);
        start_list(m);
}

/* ---------------------------------------------------------------- creating */

static void on_existing(const struct kube_response *resp, void *userdata) {
        struct cert_manager *m = userdata;
        const char *req_b64 = json_string_value(json_object_get(json_object_get(resp->body, "spec"), "request"));
        const char *signer = json_string_value(json_object_get(json_object_get(resp->body, "spec"), "signerName"));
        const char *uid = json_string_value(json_object_get(json_object_get(resp->body, "metadata"), "uid"));
        const char *name = m->want_name;
        _cleanup_free_ char *pem = NULL;
        size_t size;

        m->req = NULL;
        if (resp->r < 0 || resp->status != 200) {
                fail(m, "cannot retrieve certificate signing request %s: %s", strna(name), resp->error);
                return;
        }
        /* ensureCompatible: our key, our signer */
        if (!req_b64 || base64_decode(req_b64, KEY_MAX_SIZE, &pem, &size) < 0 ||
            !cert_request_matches_key(pem, m->key_pem) || (signer && !streq(signer, m->signer))) {
                fail(m, "retrieved csr %s is not compatible with this node's request", strna(name));
                return;
        }
        log_info("certificate signing request %s for this node already exists, reusing it", strna(name));
        start_wait(m, name, uid);
}

static void on_created(const struct kube_response *resp, void *userdata) {
        struct cert_manager *m = userdata;
        json_t *meta = json_object_get(resp->body, "metadata");
        _cleanup_free_ char *path = NULL;
        const char *name = m->want_name;

        m->req = NULL;
        if (resp->r == 0 && resp->status == 409 && name) {
                if (asprintf(&path, "%s/%s", CSR_PATH, name) < 0) {
                        fail(m, "out of memory");
                        return;
                }
                if (kube_request(m->client, "GET", path, NULL, NULL, 0, on_existing, m, &m->req) < 0) {
                        m->req = NULL;
                        fail(m, "cannot retrieve certificate signing request %s", name);
                }
                return;
        }
        if (resp->r < 0 || resp->status < 200 || resp->status >= 300) {
                fail(m, "cannot create certificate signing request: %s", resp->error);
                return;
        }
        start_wait(m, json_string_value(json_object_get(meta, "name")),
                   json_string_value(json_object_get(meta, "uid")));
}

/* the key of this attempt: a new one, or with bootstrap names the one kept in <prefix>.key.tmp (made if missing
 * or unusable), so that a restart asks again with the same key and name */
static int attempt_key(struct cert_manager *m, struct ck_error **ret_error) {
        _cleanup_free_ char *tmp = NULL, *data = NULL;
        size_t size;
        int r;

        if (!m->bootstrap_names)
                return cert_key_generate(&m->key_pem);
        tmp = key_tmp_path(m);
        if (!tmp)
                return -ENOMEM;
        r = read_full_file(tmp, KEY_MAX_SIZE, &data, &size);
        if (r >= 0 && cert_key_valid(data)) {
                m->key_pem = TAKE_PTR(data);
                return 0;
        }
        if (data)
                explicit_bzero(data, size);
        r = cert_key_generate(&m->key_pem);
        if (r < 0)
                return r;
        r = mkdir_p(m->store.dir, 0755);
        if (r >= 0)
                r = write_file_atomic(tmp, m->key_pem, strlen(m->key_pem), 0600);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot write the private key %s: %s", tmp, strerror(-r));
        log_v(2, "No valid private key found for bootstrapping, created a new one: %s", tmp);
        return 0;
}

static void attempt(struct cert_manager *m) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_free_ char *req_pem = NULL;
        json_t *body;
        int r;

        if (m->state != STATE_IDLE || m->stopped)
                return;
        request_reset(m);
        r = m->ops.get_template(m->userdata, &m->tmpl);
        if (r == -EAGAIN) {
                log_v(4, "no %s certificate template yet (no node addresses), looking again in 1 s", m->name);
                schedule_attempt(m, TEMPLATE_RETRY_USEC);
                return;
        }
        if (r < 0) {
                fail(m, "cannot build the certificate request: %s", strerror(-r));
                return;
        }
        log_v(2, "Rotating certificates: requesting a new %s certificate", m->name);
        r = attempt_key(m, &err);
        if (r < 0) {
                fail(m, "unable to generate a private key: %s", ck_error_message_or(err, r));
                return;
        }
        r = cert_request_create(m->key_pem, &m->tmpl, &req_pem, &err);
        if (r < 0) {
                fail(m, "unable to generate a certificate signing request: %s", ck_error_message_or(err, r));
                return;
        }
        if (m->bootstrap_names) {
                r = cert_request_digested_name(m->key_pem, &m->tmpl, (const char *const *) m->usages, &m->want_name);
                if (r < 0) {
                        fail(m, "cannot name the certificate signing request: %s", strerror(-r));
                        return;
                }
        }
        m->client = m->ops.client(m->userdata, current_valid(m), &err);
        if (!m->client) {
                fail(m, "%s", err ? ck_error_message(err) : "no client to request it with");
                return;
        }
        body = cert_csr_object(m->want_name, req_pem, m->signer, (const char *const *) m->usages);
        if (!body) {
                fail(m, "out of memory");
                return;
        }
        m->state = STATE_CREATING;
        r = kube_request(m->client, "POST", CSR_PATH, body, NULL, 0, on_created, m, &m->req);
        json_decref(body);
        if (r < 0) {
                m->req = NULL;
                fail(m, "cannot create certificate signing request: %s", strerror(-r));
        }
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        attempt(userdata);
}

/* ---------------------------------------------------------------- life cycle */

int cert_manager_new(struct event_base *base, const struct cert_manager_config *cfg, const struct cert_manager_ops *ops,
                     void *userdata, struct cert_manager **ret) {
        struct cert_manager *m;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        int r;

        if (!base || !cfg || !ops || !ops->client || !ops->get_template || !ops->updated || !ret)
                return -EINVAL;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->base = base;
        m->ops = *ops;
        m->userdata = userdata;
        m->bootstrap_names = cfg->bootstrap_names;
        m->rotate = cfg->rotate;
        m->wait_timeout_usec = cfg->wait_timeout_usec ? cfg->wait_timeout_usec : DEFAULT_WAIT_TIMEOUT_USEC;
        m->name = strdup(cfg->name);
        m->signer = strdup(cfg->signer);
        m->timer = evtimer_new(base, on_timer, m);
        m->relist_timer = evtimer_new(base, on_relist_timer, m);
        m->wait_timer = evtimer_new(base, on_wait_timeout, m);
        if (!m->name || !m->signer || !m->timer || !m->relist_timer || !m->wait_timer) {
                cert_manager_free(m);
                return -ENOMEM;
        }
        for (const char *const *u = cfg->usages; u && *u; u++)
                if (strv_extend(&m->usages, *u) < 0) {
                        cert_manager_free(m);
                        return -ENOMEM;
                }
        r = cert_store_init(&m->store, cfg->cert_dir, cfg->prefix, cfg->cert_file, cfg->key_file);
        if (r < 0) {
                cert_manager_free(m);
                return r;
        }
        r = cert_store_load(&m->store, &m->current, &err);
        if (r == -ENOMEM) {
                cert_manager_free(m);
                return r;
        }
        if (r >= 0 && (int64_t) now_realtime_usec() >= m->current.info.not_after_usec) {
                char a[64];
                r = ck_error_set(&err, -EKEYEXPIRED, "the certificate in %s expired at %s", m->current.path,
                                 fmt_time(m->current.info.not_after_usec, a, sizeof(a)));
                cert_pair_done(&m->current);
        }
        if (r >= 0) {
                m->have_current = true;
                log_info("Loaded the %s certificate from %s", m->name, m->current.path);
        } else {
                if (r != -ENOENT)
                        log_error("%s certificate: %s", m->name, ck_error_message(err));
                m->load_error = err ? ck_error_take_message(TAKE_PTR(err)) : NULL;
                /* kubeadm's pair from the kubeconfig: store it, use it, replace it at once */
                if (cfg->initial_cert_pem && cfg->initial_key_pem) {
                        _cleanup_ck_error_ struct ck_error *why = NULL;
                        r = cert_store_update(&m->store, cfg->initial_cert_pem, cfg->initial_key_pem,
                                              now_realtime_usec(), &m->current, &why);
                        if (r >= 0) {
                                m->have_current = true;
                                m->force = true;
                                log_info("Stored the initial %s certificate in %s; it will be rotated at once", m->name,
                                         m->current.path);
                        } else
                                log_error("unable to set the cert/key pair to the initial certificate: %s",
                                          ck_error_message(why));
                }
        }
        *ret = m;
        return 0;
}

void cert_manager_start(struct cert_manager *m) {
        if (!m || m->started)
                return;
        m->started = true;
        log_v(2, "Certificate rotation is enabled for the %s certificate", m->name);
        schedule_next(m);
}

struct cert_manager *cert_manager_free(struct cert_manager *m) {
        if (!m)
                return NULL;
        m->stopped = true;
        request_reset(m);
        if (m->timer)
                event_free(m->timer);
        if (m->relist_timer)
                event_free(m->relist_timer);
        if (m->wait_timer)
                event_free(m->wait_timer);
        cert_pair_done(&m->current);
        cert_store_done(&m->store);
        free(m->load_error);
        free(m->name);
        free(m->signer);
        strv_free(m->usages);
        free(m);
        return NULL;
}
