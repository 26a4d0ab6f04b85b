/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The cgroup driver from the runtime (getCgroupDriverFromCRI, KubeletCgroupDriverFromCRI, GA and locked on since
 * v1.34): before anything uses the cgroup driver, ask the runtime's CRI RuntimeConfig; its answer replaces
 * --cgroup-driver / cgroupDriver. A runtime without the call (Unimplemented: containerd 1.x) leaves the
 * configured driver, as upstream. Other errors are tried 3 times, 2 s apart, as upstream; then, where upstream's
 * kubelet exits, the configured driver is kept with a warning (a runtime not up yet is waited for by the rest of
 * the kubelet). Start-up only: it runs the loop until the runtime answered, before the kubelet starts. */

#include <event2/event.h>

#include "basic/error.h"
#include "options/options.h"

/* 0 (o->cgroup_driver may have changed), or -ENOMEM / -EINVAL (an unknown driver from the runtime). */
int kubelet_cgroup_driver_from_cri(struct event_base *base, struct kubelet_options *o, struct ck_error **ret_error);
