/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The methods an endpoint takes, as upstream v1.37 routes them: an endpoint on a go-restful WebService takes
 * only the methods of its routes (GET for the read-only ones: /pods, /containerLogs, /runningpods, /logs/; GET
 * and POST for /stats/summary, /exec, /attach, /portForward; POST for /run) and answers any other, HEAD
 * included, 405 with an Allow header listing its methods in route order and the body "405: Method Not
 * Allowed" (the router's ServiceError). Pure. */

#include <stdbool.h>
#include <stddef.h>

/* longest Allow value: "GET, POST, HEAD, PUT, DELETE, PATCH, OPTIONS" */
#define API_ALLOW_MAX 64

/* the body of that 405 (no newline, as upstream) */
#define API_METHOD_NOT_ALLOWED_BODY "405: Method Not Allowed"

/* The Allow header value for allowed (EVHTTP_REQ_* bits): GET first, then POST, then the others in
 * evhttp's order; written to buf (API_ALLOW_MAX bytes), which is returned. */
const char *api_allow_header(int allowed, char buf[static API_ALLOW_MAX]);

/* is method (one EVHTTP_REQ_* bit) among allowed? */
static inline bool api_method_allowed(int method, int allowed) {
        return (method & allowed) != 0;
}
