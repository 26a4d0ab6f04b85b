/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kubelet HTTP API (pkg/kubelet/server): the TLS port (--port, authenticated and authorized), the
 * read-only port (--read-only-port, no auth, no debugging handlers) and the healthz port (--healthz-port). All
 * on libevent's evhttp, on the kubelet's loop. */

#include <event2/event.h>

struct kubelet;
struct api_server;

/* Binds the listeners given by the kubelet's options. Errors name the address and the reason. */
int api_server_new(struct event_base *base, struct kubelet *k, struct api_server **ret);
/* Closes the listeners and every connection; cancels streams. Accepts NULL. */
struct api_server *api_server_free(struct api_server *s);
