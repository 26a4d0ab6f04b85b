/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A certificate manager (client-go's util/certificate Manager) on the kubelet's loop: it keeps the current pair of
 * a certificate store, and when there is none, when it has expired or does not satisfy the template, and at a
 * random point in 70-90% of its lifetime, it makes a new key, POSTs a certificates.k8s.io/v1
 * CertificateSigningRequest, waits for it to be approved and issued (LIST + WATCH of that one object, through
 * API server outages, up to a timeout), stores the pair and hands it over. Failures are logged with the object or
 * file at fault and retried with back-off (2 s doubling to 32 s, 10% jitter, as upstream's rotation loop); the
 * current pair stays in use meanwhile. Nothing blocks the loop. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "certificate/csr.h"
#include "certificate/store.h"

struct ck_error;
struct kube_client;
struct cert_manager;

struct cert_manager_ops {
        /* The client to send the request with (the bootstrap credentials when HAVE_VALID_CERT is false), or NULL
         * with *ret_error saying why there is none now. Called at the start of each attempt; the client must stay
         * alive until the next call or cert_manager_free(). */
        struct kube_client *(*client)(void *userdata, bool have_valid_cert, struct ck_error **ret_error);
        /* The template to ask for; -EAGAIN when none is known yet (no node addresses): asked again in a second. */
        int (*get_template)(void *userdata, struct cert_template *ret);
        /* A new pair is stored and current. */
        void (*updated)(void *userdata, const struct cert_pair *pair);
};

struct cert_manager_config {
        const char *name;          /* "client", "serving": in logs and errors */
        const char *signer;        /* CERT_SIGNER_* */
        const char *const *usages; /* cert_client_usages, cert_serving_usages */
        const char *cert_dir;      /* the store: <cert_dir>/<prefix>-current.pem ... */
        const char *prefix;        /* "kubelet-client", "kubelet-server" */
        const char *cert_file;     /* the store's fallback pair (NULL: none) */
        const char *key_file;
        bool bootstrap_names;         /* the first request as LoadClientCert makes it: name node-csr-<digest>, key
                                        kept in <cert_dir>/<prefix>.key.tmp until the certificate is stored, so that
                                        a restart finds the same request */
        bool rotate;                  /* keep renewing; false: stop once a certificate is stored */
        uint64_t wait_timeout_usec;   /* how long one request may wait for its certificate (0: 15 min) */
        const char *initial_cert_pem; /* a pair to start from when the store has none (kubeadm's kubelet.conf with */
        const char *initial_key_pem;  /* embedded data): stored, used, and rotated at once */
};

/* Reads the store (an unusable file is logged, naming it, and treated as no pair). Does not start. */
int cert_manager_new(struct event_base *base, const struct cert_manager_config *cfg, const struct cert_manager_ops *ops,
                     void *userdata, struct cert_manager **ret);
/* Start requesting/rotating. Idempotent. */
void cert_manager_start(struct cert_manager *m);
/* The current pair if there is one and it has not expired, else NULL. Borrowed until the next update. */
const struct cert_pair *cert_manager_current(const struct cert_manager *m);
/* <cert_dir>/<prefix>-current.pem (caller frees; NULL on OOM). */
char *cert_manager_current_path(const struct cert_manager *m);
/* Why the store had no usable pair at start ("" when it had one). */
const char *cert_manager_load_error(const struct cert_manager *m);
/* Cancels what is in flight. Accepts NULL. */
struct cert_manager *cert_manager_free(struct cert_manager *m);

/* The retry delay after FAILURES consecutive failures (1 = the first): 2 s doubling, capped at 32 s, plus up
 * to 10% (JITTER01 in [0, 1)). Pure, for the unit tests. */
uint64_t cert_backoff_usec(unsigned failures, double jitter01);
