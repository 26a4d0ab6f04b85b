/* SPDX-License-Identifier: Apache-2.0 */
/* The node's credentials for the API server and for its own API (cmd/kubelet/app/server.go
 * buildKubeletClientConfig, pkg/kubelet/certificate): TLS bootstrapping with --bootstrap-kubeconfig, client
 * certificate rotation (--rotate-certificates), and the serving certificate from the certificates API
 * (serverTLSBootstrap).
 *
 * Without --bootstrap-kubeconfig and rotation, --kubeconfig is loaded once and must work (as before). Otherwise:
 *   - a usable --kubeconfig (its client certificate loads, matches its key and has not expired) is used as it
 *     is; with rotation its pair becomes the certificate store's current one (kubeadm's kubelet.conf with
 *     embedded data is copied into the store and replaced at once, as upstream);
 *   - else a current pair in --cert-dir (kubelet-client-current.pem) that is still valid is used (and, when
 *     bootstrapping is configured, --kubeconfig is rewritten to point at it);
 *   - else, with --bootstrap-kubeconfig, a CertificateSigningRequest is made with the bootstrap credentials; once
 *     the certificate is issued and stored, --kubeconfig is written to point at kubelet-client-current.pem;
 *   - else the error is logged, naming the file and the reason, and everything is tried again with back-off.
 * Until the node has a client certificate, the API source waits (and with it the pods), as upstream's kubelet
 * does not run before it has one. Nothing here is fatal once the loop runs: every problem is retried, and
 * fixing the file (a new bootstrap token, a repaired certificate) is picked up by the next attempt.
 * With rotation, each new client certificate is handed to the API client, which reconnects with it. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/log.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "certificate/bootstrap.h"
#include "certificate/manager.h"
#include "kubelet/kubelet-internal.h"

#define CREDS_RETRY_MIN_USEC (2 * USEC_PER_SEC)
#define CREDS_RETRY_MAX_USEC (32 * USEC_PER_SEC)
#define BOOTSTRAP_WAIT_TIMEOUT_USEC (3600 * USEC_PER_SEC) /* requestNodeCertificate's */

static void credentials_attempt(struct kubelet *k);

static void creds_retry_later(struct kubelet *k) {
        uint64_t d = CREDS_RETRY_MIN_USEC;

        for (unsigned i = 1; i < k->creds_failures && d < CREDS_RETRY_MAX_USEC; i++)
                d *= 2;
        k->creds_failures++;
        evtimer_add_usec(k->creds_retry, MIN(d, (uint64_t) CREDS_RETRY_MAX_USEC));
}

static void on_creds_retry(evutil_socket_t fd, short what, void *userdata) {
        credentials_attempt(userdata);
}

static int make_client(struct kubelet *k, const struct kube_config *kc, struct kube_client **ret) {
        const struct kubelet_options *o = k->opts;
        struct kube_client_options co = { .qps = o->kube_api_qps, .burst = o->kube_api_burst };

        return kube_client_new(k->base, kc, &co, ret);
}

/* ---------------------------------------------------------------- the certificate managers' needs */

static struct kube_client *client_for_csr(void *userdata, bool have_valid_cert, struct ck_error **ret_error) {
        struct kubelet *k = userdata;
        const struct kubelet_options *o = k->opts;
        struct kube_config kc = {};
        _cleanup_ck_error_ struct ck_error *why = NULL;
        int r;

        if (have_valid_cert && k->client)
                return k->client; /* the current certificate asks for its successor */
        if (isempty(o->bootstrap_kubeconfig)) {
                if (k->client) {
                        log_warning("the client certificate has expired and there is no --bootstrap-kubeconfig: "
                                    "asking for a new one with it anyway");
                        return k->client;
                }
                (void) ck_error_set(ret_error, -ENOKEY,
                                    "no usable client certificate and no --bootstrap-kubeconfig to request one with");
                return NULL;
        }
        /* the bootstrap credentials, read again at every attempt: a fixed file (a new token) is picked up */
        k->bootstrap_client = kube_client_free(k->bootstrap_client);
        r = kube_config_load(o->bootstrap_kubeconfig, &kc, &why);
        if (r < 0) {
                (void) ck_error_set(ret_error, r, "unable to load bootstrap kubeconfig: %s", ck_error_message(why));
                return NULL;
        }
        r = make_client(k, &kc, &k->bootstrap_client);
        kube_config_done(&kc);
        if (r < 0) {
                (void) ck_error_set(ret_error, r, "bootstrap kubeconfig %s: cannot set up a client: %s",
                                    o->bootstrap_kubeconfig, strerror(-r));
                return NULL;
        }
        log_v(2, "Requesting a client certificate with the credentials of the bootstrap kubeconfig %s",
              o->bootstrap_kubeconfig);
        return k->bootstrap_client;
}

static int node_template(const struct kubelet *k, struct cert_template *t) {
        if (asprintf(&t->common_name, "system:node:%s", k->opts->node_name) < 0) {
                t->common_name = NULL;
                return -ENOMEM;
        }
        if (strv_extend(&t->organizations, "system:nodes") < 0) {
                cert_template_done(t);
                return -ENOMEM;
        }
        return 0;
}

static int client_template(void *userdata, struct cert_template *ret) {
        return node_template(userdata, ret);
}

/* the serving certificate names the node's addresses, once it has reported them (getLastObservedNodeAddresses) */
static int serving_template(void *userdata, struct cert_template *ret) {
        struct kubelet *k = userdata;
        const char *host = node_manager_hostname(k->node);
        unsigned char addr[16];
        int r;

        if (!k->node || !node_manager_node_uid(k->node) || (isempty(host) && isempty(k->node_ip)))
                return -EAGAIN;
        r = node_template(k, ret);
        if (r < 0)
                return r;
        /* addressesToHostnamesAndIPs: a Hostname that is an IP goes with the IPs */
        if (!isempty(host))
                r = strv_extend(inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1
                                        ? &ret->ip_addresses
                                        : &ret->dns_names,
                                host);
        if (r >= 0 && !isempty(k->node_ip) && !strv_contains(ret->ip_addresses, k->node_ip))
                r = strv_extend(&ret->ip_addresses, k->node_ip);
        if (r < 0)
                cert_template_done(ret);
        return r;
}

static void client_cert_updated(void *userdata, const struct cert_pair *pair) {
        struct kubelet *k = userdata;

        if (!k->api_started) {
                /* the first certificate of a bootstrap: everything else can start now */
                credentials_attempt(k);
                return;
        }
        if (kube_client_set_client_cert(k->client, pair->cert_pem, pair->key_pem) < 0 ||
            kube_client_set_client_cert(k->heartbeat_client, pair->cert_pem, pair->key_pem) < 0)
                log_error("cannot hand the new client certificate %s to the API client", pair->path);
        else
                log_info("certificate rotation detected, shutting down client connections to start using new "
                         "credentials (%s, serial %s)",
                         pair->path, strna(pair->info.serial));
}

static struct kube_client *client_for_serving_csr(void *userdata, bool have_valid_cert, struct ck_error **ret_error) {
        struct kubelet *k = userdata;

        if (!k->client)
                (void) ck_error_set(ret_error, -ENOTCONN, "no API client yet");
        return k->client;
}

static void serving_cert_updated(void *userdata, const struct cert_pair *pair) {
        struct kubelet *k = userdata;

        if (k->serving_cb)
                k->serving_cb(pair->cert_pem, pair->key_pem, k->serving_userdata);
}

void kubelet_set_serving_cert_handler(struct kubelet *k, kubelet_serving_cert_t cb, void *userdata) {
        const struct cert_pair *pair = cert_manager_current(k->serving_certs);

        k->serving_cb = cb;
        k->serving_userdata = userdata;
        if (cb && pair)
                cb(pair->cert_pem, pair->key_pem, userdata);
}

/* ---------------------------------------------------------------- the client's credentials */

static int ensure_client_manager(struct kubelet *k, const struct kube_config *kc) {
        static const struct cert_manager_ops ops = {
                .client = client_for_csr,
                .get_template = client_template,
                .updated = client_cert_updated,
        };
        const struct kubelet_options *o = k->opts;
        struct cert_manager_config cfg = {
                .name = "client",
                .signer = CERT_SIGNER_KUBELET_CLIENT,
                .usages = cert_client_usages,
                .cert_dir = o->cert_dir,
                .prefix = "kubelet-client",
                .cert_file = kc ? kc->cert_file : NULL,
                .key_file = kc ? kc->key_file : NULL,
                .initial_cert_pem = kc ? kc->cert_data : NULL,
                .initial_key_pem = kc ? kc->key_data : NULL,
                .rotate = o->rotate_certificates,
                /* without rotation the first request is upstream's LoadClientCert: a named request and a kept key */
                .bootstrap_names = !o->rotate_certificates,
                .wait_timeout_usec = o->rotate_certificates ? 0 : BOOTSTRAP_WAIT_TIMEOUT_USEC,
        };

        if (k->client_certs)
                return 0;
        return cert_manager_new(k->base, &cfg, &ops, k, &k->client_certs);
}

/* The cluster to talk to: --kubeconfig's (even when its certificate is unusable: its server and CA are), else the
 * bootstrap kubeconfig's. */
static int load_cluster(struct kubelet *k, struct kube_config *ret, bool *ret_from_bootstrap,
                        struct ck_error **ret_error) {
        const struct kubelet_options *o = k->opts;
        _cleanup_ck_error_ struct ck_error *why = NULL, *bwhy = NULL;
        int r;

        r = access(o->kubeconfig, F_OK) == 0 ? kube_config_load(o->kubeconfig, ret, &why) : -ENOENT;
        if (r >= 0) {
                *ret_from_bootstrap = false;
                return 0;
        }
        if (r == -ENOMEM)
                return r;
        if (isempty(o->bootstrap_kubeconfig)) {
                return ck_error_set(ret_error, r, "invalid --kubeconfig: %s", ck_error_message_or(why, r));
        }
        r = kube_config_load(o->bootstrap_kubeconfig, ret, &bwhy);
        if (r < 0) {
                return ck_error_set(ret_error, r, "unable to load bootstrap kubeconfig: %s", ck_error_message(bwhy));
        }
        *ret_from_bootstrap = true;
        return 0;
}

/* the API client with PAIR (NULL: the kubeconfig's own certificate), then the API parts. A failure to make the
 * client leaves k->api_started false and may be retried; one of the API parts (out of memory) is not. */
static int start_with(struct kubelet *k, struct kube_config *kc, const struct cert_pair *pair,
                      struct ck_error **ret_error) {
        /* upstream's heartbeatClient: no rate limit, the lease duration as its timeout */
        struct kube_client_options ho = {
                .qps = -1,
                .timeout_usec = (uint64_t) k->opts->node_lease_duration_seconds * USEC_PER_SEC,
        };
        struct kube_client *c = NULL, *hb = NULL;
        int r;

        r = make_client(k, kc, &c);
        if (r >= 0)
                r = kube_client_new(k->base, kc, &ho, &hb);
        if (r >= 0 && pair)
                r = kube_client_set_client_cert(c, pair->cert_pem, pair->key_pem);
        if (r >= 0 && pair)
                r = kube_client_set_client_cert(hb, pair->cert_pem, pair->key_pem);
        if (r < 0) {
                kube_client_free(c);
                kube_client_free(hb);
                return ck_error_set(ret_error, r, "cannot set up the API server client: %s", strerror(-r));
        }
        k->client = c;
        k->heartbeat_client = hb;
        k->bootstrap_client = kube_client_free(k->bootstrap_client);
        k->creds_failures = 0;
        k->api_started = true;
        r = kubelet_api_start(k);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot start talking to the API server: %s", strerror(-r));
        if (k->client_certs && k->opts->rotate_certificates)
                cert_manager_start(k->client_certs);
        if (k->serving_certs)
                cert_manager_start(k->serving_certs);
        return 0;
}

/* from the credentials' own retries: the failure is theirs to log */
static int start_with_logged(struct kubelet *k, struct kube_config *kc, const struct cert_pair *pair) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        int r = start_with(k, kc, pair, &err);

        if (r < 0)
                log_error("%s", ck_error_message(err));
        return r;
}

static void credentials_attempt(struct kubelet *k) {
        const struct kubelet_options *o = k->opts;
        _cleanup_free_ char *current_path = NULL;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct kube_config kc = {};
        const struct cert_pair *pair;
        bool from_bootstrap = false;
        int usable, r;

        if (k->api_started || k->stopping)
                return;
        usable = cert_kubeconfig_usable(o->kubeconfig, &why);
        if (usable < 0) {
                log_error("cannot check --kubeconfig %s: %s", o->kubeconfig, strerror(-usable));
                creds_retry_later(k);
                return;
        }
        r = load_cluster(k, &kc, &from_bootstrap, &err);
        if (r < 0) {
                log_error("%s%s%s", ck_error_message(err), why ? "; " : "", why ? ck_error_message(why) : "");
                creds_retry_later(k);
                return;
        }
        if (usable && !o->rotate_certificates) {
                /* bootstrapped before, no rotation: the kubeconfig's own certificate, as upstream */
                r = start_with_logged(k, &kc, NULL);
                if (r < 0 && !k->api_started)
                        goto retry;
                goto finish;
        }
        r = ensure_client_manager(k, usable ? &kc : NULL);
        if (r < 0) {
                log_error("cannot set up the client certificate manager: %s", strerror(-r));
                goto retry;
        }
        pair = cert_manager_current(k->client_certs);
        if (usable && !pair) {
                /* the kubeconfig's own certificate (the store could not take it) */
                r = start_with_logged(k, &kc, NULL);
                if (r < 0 && !k->api_started)
                        goto retry;
                goto finish;
        }
        if (pair) {
                if (!usable && !isempty(o->bootstrap_kubeconfig)) {
                        /* point --kubeconfig at the store's current pair (writeKubeconfigFromBootstrapping) */
                        current_path = cert_manager_current_path(k->client_certs);
                        log_info("--kubeconfig %s is not usable (%s); using the client certificate %s", o->kubeconfig,
                                 why ? ck_error_message(why) : "n/a", pair->path);
                        if (!current_path || cert_kubeconfig_write(o->kubeconfig, &kc, current_path, &err) < 0) {
                                log_error("%s", err ? ck_error_message(err) : "out of memory");
                                goto retry;
                        }
                        log_info("Wrote the kubeconfig %s for the client certificate %s", o->kubeconfig, current_path);
                }
                r = start_with_logged(k, &kc, pair);
                if (r < 0 && !k->api_started)
                        goto retry;
                goto finish;
        }
        /* no usable certificate anywhere */
        if (isempty(o->bootstrap_kubeconfig)) {
                log_error("no usable client certificate: %s; %s", why ? ck_error_message(why) : "n/a",
                          *cert_manager_load_error(k->client_certs) ? cert_manager_load_error(k->client_certs)
                                                                    : "nothing in --cert-dir either");
                /* read the store again next time: the file may have been repaired */
                k->client_certs = cert_manager_free(k->client_certs);
                goto retry;
        }
        log_warning("--kubeconfig cannot be used (%s): requesting a client certificate with --bootstrap-kubeconfig %s",
                    why ? ck_error_message(why) : "n/a", o->bootstrap_kubeconfig);
        cert_manager_start(k->client_certs); /* client_cert_updated() comes back here */
        goto finish;
retry:
        creds_retry_later(k);
finish:
        kube_config_done(&kc);
}

/* ---------------------------------------------------------------- entry points */

int kubelet_credentials_start(struct kubelet *k, struct ck_error **ret_error) {
        static const struct cert_manager_ops serving_ops = {
                .client = client_for_serving_csr,
                .get_template = serving_template,
                .updated = serving_cert_updated,
        };
        const struct kubelet_options *o = k->opts;
        int r;

        if (o->server_tls_bootstrap && o->enable_server) {
                struct cert_manager_config cfg = {
                        .name = "serving",
                        .signer = CERT_SIGNER_KUBELET_SERVING,
                        .usages = cert_serving_usages,
                        .cert_dir = o->cert_dir,
                        .prefix = "kubelet-server",
                        .cert_file = o->tls_cert_file,
                        .key_file = o->tls_private_key_file,
                        .rotate = true,
                };
                const struct cert_pair *pair;

                r = cert_manager_new(k->base, &cfg, &serving_ops, k, &k->serving_certs);
                if (r < 0)
                        return ck_error_set(ret_error, r, "cannot set up the serving certificate manager: %s",
                                            strerror(-r));
                pair = cert_manager_current(k->serving_certs);
                if (pair)
                        serving_cert_updated(k, pair);
        }
        if (isempty(o->bootstrap_kubeconfig) && !o->rotate_certificates) {
                /* a plain --kubeconfig: it works or the kubelet does not start */
                struct kube_config kc = {};
                _cleanup_ck_error_ struct ck_error *why = NULL;

                r = kube_config_load(o->kubeconfig, &kc, &why);
                if (r < 0)
                        return ck_error_set(ret_error, r, "invalid --kubeconfig: %s", ck_error_message(why));
                r = start_with(k, &kc, NULL, ret_error);
                kube_config_done(&kc);
                return r;
        }
        k->creds_retry = evtimer_new(k->base, on_creds_retry, k);
        if (!k->creds_retry)
                return -ENOMEM;
        credentials_attempt(k);
        return 0;
}

void kubelet_credentials_stop(struct kubelet *k) {
        k->serving_certs = cert_manager_free(k->serving_certs);
        k->client_certs = cert_manager_free(k->client_certs);
        if (k->creds_retry) {
                event_free(k->creds_retry);
                k->creds_retry = NULL;
        }
        k->bootstrap_client = kube_client_free(k->bootstrap_client);
}
