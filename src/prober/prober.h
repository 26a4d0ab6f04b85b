/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Probe logic shared by the probe workers (pkg/kubelet/prober): port resolution, address joining,
 * threshold counting and what a result means. Pure functions; the workers that run probes on the event
 * loop build on them. */

#include <stdbool.h>
#include <stdint.h>

#include "apis/pod.h"
#include "prober/results.h"

struct ck_error;
struct kc_container;

/* extractPort: a number, or a name looked up in the container's ports, or a numeric string; the result
 * must be 1-65535. On failure *ret_error says why ("couldn't find port: http in ..."), as upstream. */
int probe_resolve_port(const struct int_or_string *port, const struct container *c, int *ret_port,
                       struct ck_error **ret_error);

/* What Go's HTTP client checks before it sends a request (httpguts.ValidHeaderFieldName / ValidHeaderFieldValue):
 * header names are tokens, values hold no control character but a tab. A CR/LF in a probe's or hook's
 * httpHeaders would let the pod's author add header lines (or a whole request) to what the kubelet sends from
 * the node. 0, or -EINVAL with Go's message ("net/http: invalid header field value \"a\\r\\nb\" for key X") in
 * *ret_error. */
int probe_check_http_headers(const struct http_header *headers, size_t n, struct ck_error **ret_error);

/* net.JoinHostPort: "[::1]:8080" for IPv6 literals, "10.0.0.1:80" otherwise. */
char *probe_join_host_port(const char *host, int port);

/* One worker's threshold state (worker.go): the published result changes only after failureThreshold
 * failures or successThreshold successes in a row. */
struct probe_state {
        enum probe_result last;      /* last raw result */
        int32_t run;                 /* how many times in a row */
        enum probe_result published; /* what the kubelet acts on */
};

/* Initial published result: readiness starts as failure, liveness as success, startup as unknown. */
void probe_state_init(struct probe_state *s, enum probe_type t);

/* Record a raw result; returns true when the published result changed. */
bool probe_state_record(struct probe_state *s, const struct probe *spec, enum probe_result r);

/* Container status flags (prober_manager.UpdatePodStatus): started: running, and the startup probe
 * succeeded (or there is none); ready: started, and the readiness probe succeeded (or there is none).
 * results may be NULL (no probe has a result). */
bool probe_container_started(const struct container *c, const struct kc_container *instance,
                             const struct probe_results *results);
bool probe_container_ready(const struct container *c, const struct kc_container *instance,
                           const struct probe_results *results);
