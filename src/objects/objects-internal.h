/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The objects manager's state, shared by its two files: manager.c (ConfigMaps, Secrets, Services, service account
 * tokens, the pods that use them) and certs.c (the podCertificate projected sources: key pairs, the
 * PodCertificateRequests and their refresh). Nothing outside src/objects includes this. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <jansson.h>

#include "objects/manager.h"

#define RETRY_MIN_USEC (1 * USEC_PER_SEC)
#define RETRY_MAX_USEC (30 * USEC_PER_SEC)
/* How long a first answer may be retried before its error is the answer (upstream's watch-based manager waits
 * up to a second for its reflector to sync): the Node authorizer learns which objects a new pod refers to from
 * its own watch, so the kubelet's first fetch for a pod it has just been given can be refused for a moment. */
#define FIRST_ANSWER_WAIT_USEC (1 * USEC_PER_SEC)
#define FIRST_ANSWER_RETRY_USEC (100 * 1000)
#define TOKEN_MAX_TTL_SECONDS (24 * 3600)
#define OBJ_KIND_PCR_LIST "PodCertificateRequestList"
#define CERT_RETRY_MAX_USEC (5 * 60 * USEC_PER_SEC)

struct mobj {
        struct mobj *prev, *next;
        struct objects_manager *m;
        const char *kind; /* "ConfigMap" / "Secret" / "Service" / "ServiceList" (a namespace's, name "") */
        bool list;        /* ServiceList: obj is the array of the namespace's services */
        char *ns, *name;
        unsigned refs; /* pods referencing it */
        bool answered; /* a first answer (object, not found or error) is known */
        json_t *obj;
        int err;
        char *message;
        char *rv;                 /* the resourceVersion to watch from */
        struct kube_request *req; /* the list or the watch in flight */
        struct event *retry;
        uint64_t delay;
        uint64_t watch_started; /* monotonic usec */
        uint64_t first_try;     /* monotonic usec of the first list, 0 before it */
};

struct mtoken {
        char *sa, *audience;
        int64_t expiration_seconds;
        json_t *status;  /* the last TokenRequest status, or NULL */
        int64_t expires; /* unix seconds of status.expirationTimestamp */
        int err;         /* the last request's error when there is no usable token */
        char *message;
        bool answered;
        struct kube_request *req;
        struct mpod *p;
};

/* One podCertificate source of a pod (podcertificatemanager.go's projectionRecord): its state machine
 * INITIAL -> WAIT -> FRESH (-> FRESH refreshing -> FRESH), or DENIED / FAILED for good. */
enum cert_state {
        CERT_INITIAL,
        CERT_WAIT,
        CERT_FRESH,
        CERT_DENIED,
        CERT_FAILED,
};

struct keygen_job;

struct mcert {
        char *volume;
        size_t index;
        char *sa, *signer, *key_type;
        bool has_max;
        int32_t max;
        json_t *annotations;
        enum cert_state state;
        bool refreshing;    /* FRESH, and a new request is under way */
        bool tried;         /* a first request was attempted (the pod waits for that much) */
        char *key, *chain;  /* the issued credentials (FRESH) */
        int64_t refresh_at; /* unix seconds: beginRefreshAt + jitter */
        int64_t not_after;
        char *pending_key;  /* the key of the request in flight (WAIT, refreshing) */
        char *pcr_name;     /* the request we wait for */
        int64_t abandon_at; /* unix seconds: not seen by then, it was deleted */
        char *sa_uid;
        char *message; /* why there are no credentials (an error, a denial) */
        struct kube_request *req;
        struct keygen_job *job;
        struct event *timer; /* retry after an error, or the refresh */
        uint64_t delay;
        struct mpod *p;
};

struct keygen_job {
        struct mcert *c; /* NULL once the source is gone */
        char *key_type;
        char *key, *csr;
};

struct mpod {
        struct mpod *prev, *next;
        struct objects_manager *m;
        char *uid, *ns, *name;
        bool api;
        struct mobj **objs;
        size_t n_objs;
        struct mtoken **tokens;
        size_t n_tokens;
        struct mcert **certs;
        size_t n_certs;
        objects_ready_t ready;
        void *ready_data;
};

struct objects_manager {
        struct event_base *base;
        struct kube_client *client;
        objects_changed_t changed;
        void *userdata;
        struct mobj *objs;
        struct mpod *pods;
        char *node_name;
        char *node_uid;          /* the Node's metadata.uid, once fetched */
        struct mobj *pcrs;       /* the node's PodCertificateRequests (one list and watch), once a pod has a source */
        struct workpool *keygen; /* key pairs are made off the loop */
};

/* manager.c */
struct mpod *objects_pod_find(struct objects_manager *m, const char *uid);
/* the pods whose objects, tokens and certificates are all answered get their ready callback */
void objects_wake_ready_pods(struct objects_manager *m);

/* certs.c */
struct mcert *objects_cert_new(struct objects_manager *m, const struct cert_ref *r);
void objects_cert_free(struct mcert *c);
/* the source's slot in its pod, NULL when the pod has none for r */
struct mcert **objects_cert_find(struct mpod *p, const struct cert_ref *r);
/* the source's next step by its state: a key pair, a request, a wait, a refresh */
void objects_cert_advance(struct mcert *c);
/* an ADDED or MODIFIED PodCertificateRequest of the node's list and watch, to the source waiting for it */
void objects_certs_pcr_event(struct objects_manager *m, json_t *pcr);
