/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* libevent buffers released at the end of their scope. evbuffer_free() does not accept NULL; this does. */

#include <event2/buffer.h>

#include "basic/macro.h"

static inline void evbuffer_freep(struct evbuffer **b) {
        if (*b)
                evbuffer_free(*b);
}
#define _cleanup_evbuffer_ _cleanup_(evbuffer_freep)
