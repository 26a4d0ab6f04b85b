/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kubelet: owns the desired pods (from config sources), the runtime view (PLEG) and one pod worker per
 * pod UID that reconciles the two (pod_workers.go + kuberuntime SyncPod). Everything runs on one libevent
 * loop. */

#include <event2/event.h>

#include "options/options.h"

struct kubelet;

int kubelet_new(struct event_base *base, const struct kubelet_options *opts, struct kubelet **ret);
/* Connects the runtime, starts the PLEG and the config sources. */
int kubelet_start(struct kubelet *k);
/* Stops issuing work; pending CRI calls are cancelled. Pods are left running (as upstream). */
struct kubelet *kubelet_free(struct kubelet *k);
