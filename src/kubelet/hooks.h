/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The container lifecycle hook runner (pkg/kubelet/lifecycle/handlers.go HandlerRunner): runs one
 * postStart or preStop handler, asynchronously on the event loop:
 *
 *  - exec: CRI ExecSync in the container, with no timeout of its own (upstream's RunInContainer(..., 0));
 *  - httpGet: a GET through the probes' HTTP client on the loop (probe_http_start); as upstream, any HTTP answer is a
 *    success, only a transport error (or the timeout) is a failure; host defaults to the pod IP, a named
 *    port is looked up in the container's ports;
 *  - sleep: a timer;
 *  - tcpSocket: accepted by validation but not supported by the kubelet: it fails ("Cannot run handler").
 *
 * Every run also has an overall deadline (timeout_usec): past it the run ends with -ETIME and what it started
 * is abandoned: an exec's command goes on until its container is stopped, and its call is cancelled (the runtime
 * then kills the command) only MINIMUM_GRACE_PERIOD_SECONDS plus the request timeout after the deadline. */

#include <stdint.h>

#include "apis/pod.h"
#include "prober/handlers.h"

/* the least a StopContainer gets, also after a preStop that used up the grace period (minimumGracePeriodInSeconds) */
#define MINIMUM_GRACE_PERIOD_SECONDS 2

struct hook_run;

struct hook_target {
        const char *pod_desc; /* format.Pod: "name_namespace(uid)" */
        const char *container_name;
        const char *container_id;
        const char *pod_ip;           /* httpGet host when the handler names none (NULL: none known) */
        const struct container *spec; /* for named ports; NULL when the pod is no longer known */
        const char *ports_json;       /* else the ports as kept in the container's annotation (JSON), or NULL */
};

/* error: 0 on success; -ETIME past the deadline; -ECANCELED from kubelet_hook_run_cancel_all (free your context
 * only); other negative errno on failure. message: upstream's wording of the failure (NULL on success). The
 * run is gone when this returns. */
typedef void (*hook_done_t)(void *userdata, int error, const char *message);

/* Start h. The handler and the target's strings must stay valid until done runs. The run is linked into
 * *list (for kubelet_hook_run_cancel_all). Returns 0 (done runs later, exactly once) or a negative errno (never
 * runs). */
int kubelet_hook_run_start(struct probe_env *env, struct hook_run **list, const struct lifecycle_handler *h,
                           const struct hook_target *t, uint64_t timeout_usec, hook_done_t done, void *userdata);

/* Abandon every run in *list: each one's callback runs now with -ECANCELED. */
void kubelet_hook_run_cancel_all(struct hook_run **list);

/* The message of a failed hook, as upstream formats it (exposed for tests). Caller frees; NULL on OOM. */
char *kubelet_hook_failure_message(const struct lifecycle_handler *h, const struct hook_target *t, const char *error,
                                   const char *output);
