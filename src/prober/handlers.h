/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The probe handlers (pkg/probe/{exec,http,tcp,grpc}): each starts one check and reports its outcome
 * later, from the event loop. Nothing blocks: exec goes through CRI ExecSync, tcpSocket is a non-blocking
 * connect, httpGet our own HTTP/1.1 client on the loop (http.c), grpc a Health/Check call over our HTTP/2 client. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "apis/pod.h"
#include "cri/cri.h"
#include "prober/prober.h"

#define PROBE_MAX_OUTPUT (10u * 1024u) /* upstream's maxRespBodyLength / exec maxReadLength: 10 KiB */

struct evdns_base;
struct ssl_ctx_st;

/* What the handlers share. ssl_ctx (HTTPS probes and hooks, no certificate checks) and dns are created on first
 * use. */
struct probe_env {
        struct event_base *base;
        struct cri_client *cri;
        uint64_t request_timeout_usec; /* --runtime-request-timeout, added to exec deadlines as upstream */
        struct ssl_ctx_st *ssl_ctx;
        struct evdns_base *dns;
        struct probe_op *dead; /* finished operations to free from the loop (see probe_env_bury) */
        struct event *reaper;
        /* the ExecSync calls made through this environment (exec probes, exec hooks), which may outlive the
         * operation that made them (a cancelled probe, an abandoned hook): cancelled by probe_env_done() */
        struct cri_calls exec_calls;
};

void probe_env_done(struct probe_env *env);

struct probe_request {
        const struct probe *spec;
        const char *container_id; /* exec */
        const char *host;         /* httpGet/tcpSocket/grpc: where to connect (an address or a name) */
        int port;                 /* resolved, 1-65535 */
        uint64_t timeout_usec;
};

/* The outcome. error < 0: the probe could not be run at all (upstream's "Probe errored"): the result is not
 * counted. warning: a success that deserves a warning (HTTP redirect to another host not followed). */
typedef void (*probe_done_t)(void *userdata, enum probe_result result, bool warning, const char *output, int error);

/* Every handler's operation starts with this. */
struct probe_op {
        void (*cancel)(struct probe_op *op);
        void (*free)(struct probe_op *op); /* for probe_env_bury */
        probe_done_t done;                 /* NULL once cancelled */
        void *userdata;
        struct probe_op *next_dead;
};

/* Each returns 0 and the operation (the callback runs later, exactly once, unless cancelled), or a negative
 * errno (no callback). The operation frees itself once it reported (or was cancelled). */
int probe_exec_start(struct probe_env *env, const struct probe_request *req, probe_done_t done, void *userdata,
                     struct probe_op **ret);
/* probe_http_start runs an httpGet lifecycle hook (upstream's rules for hooks: User-Agent kube-lifecycle/..., no
 * "Connection: close", any HTTP answer is a success, an HTTPS request answered in plain HTTP retried over HTTP) */
int probe_http_start(struct probe_env *env, const struct probe_request *req, probe_done_t done, void *userdata,
                     struct probe_op **ret);
int probe_grpc_start(struct probe_env *env, const struct probe_request *req, probe_done_t done, void *userdata,
                     struct probe_op **ret);

/* The httpGet and tcpSocket handlers of a probe worker, kept between its runs: *state is the worker's (NULL
 * before the first run; created then), set up on the first run and reused while the request stays the same
 * (the same spec, host, port and timeout), so that a run allocates nothing. The operation returned is part of
 * the state: cancelling it stops the run and keeps the state. probe_*_invalidate: the spec the state was set
 * up for is going away (set it up again at the next run); probe_*_free: stops a run in flight, frees (also from
 * inside the run's own callback). */
struct probe_http;
struct probe_tcp;
int probe_http_run(struct probe_env *env, struct probe_http **state, const struct probe_request *req, probe_done_t done,
                   void *userdata, struct probe_op **ret);
void probe_http_invalidate(struct probe_http *h);
struct probe_http *probe_http_free(struct probe_http *h);
int probe_tcp_run(struct probe_env *env, struct probe_tcp **state, const struct probe_request *req, probe_done_t done,
                  void *userdata, struct probe_op **ret);
void probe_tcp_invalidate(struct probe_tcp *t);
struct probe_tcp *probe_tcp_free(struct probe_tcp *t);

/* Abandon an operation in flight: its callback will not run; its memory goes when it is safe. */
void probe_op_cancel(struct probe_op *op);

/* for the handlers: free an operation soon, from the loop (when it cannot be freed where it finishes, e.g.
 * inside its own client's callback); probe_env_done frees what is left */
void probe_env_bury(struct probe_env *env, struct probe_op *op);
/* for the handlers: deliver the outcome (if not cancelled) */
void probe_op_report(struct probe_op *op, enum probe_result result, bool warning, const char *output, int error);
