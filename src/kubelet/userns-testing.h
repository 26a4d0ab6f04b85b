/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* For the unit tests only: the ranges the user namespace manager (userns.h) holds in memory. */

#include <stddef.h>
#include <stdint.h>

#include "kubelet/userns.h"

/* The pod's range if it holds one: 0, else -ENOENT. */
int userns_lookup(const struct userns_manager *m, const char *pod_uid, uint32_t *ret_host_id, uint32_t *ret_length);
/* the number of ranges held */
size_t userns_allocated(const struct userns_manager *m);
