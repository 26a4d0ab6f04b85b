/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* libcurl's multi interface driven by the libevent loop: curl's socket and timer callbacks mapped onto
 * events, so transfers never block the loop. Shared by the http config source and the HTTP probes. */

#include <curl/curl.h>
#include <stdbool.h>
#include <event2/event.h>

struct curl_loop;

/* Runs once per transfer, from the loop, after the handle was removed from the multi handle: the callee
 * owns the easy handle again (may free it, or add it anew). */
typedef void (*curl_loop_done_t)(CURL *easy, CURLcode result, void *userdata);

int curl_loop_new(struct event_base *base, struct curl_loop **ret);
/* Transfers still running are removed without their callbacks. Accepts NULL. */
struct curl_loop *curl_loop_free(struct curl_loop *l);

/* Start a transfer. Sets CURLOPT_PRIVATE, CURLOPT_NOSIGNAL and an O_CLOEXEC socket opener; the caller sets
 * everything else. The easy handle stays the caller's. */
int curl_loop_add(struct curl_loop *l, CURL *easy, curl_loop_done_t done, void *userdata);
/* Stop a transfer without its callback (the handle is the caller's again). */
void curl_loop_cancel(struct curl_loop *l, CURL *easy);

/* Restrict an easy handle to http and https, redirects included (no file://, gopher:// ...). */
CURLcode curl_loop_http_only(CURL *easy);
/* No transfer is running (the connection cache may still hold idle connections: curl_loop_free closes them). */
bool curl_loop_idle(const struct curl_loop *l);
