/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kubelet's event recorder (client-go tools/record: EventRecorder + EventBroadcaster sink + the
 * EventCorrelator of events_cache.go): core/v1 Events about pods and the node are POSTed to
 * /api/v1/namespaces/<ns>/events; repeats of an event already sent are PATCHed (count, lastTimestamp,
 * message) instead, similar events are aggregated and a spam filter limits each object's events.
 *
 * Everything runs on the kubelet's loop; event_recorder_eventf() never blocks: it logs the event, correlates
 * it at once and queues the resulting request (at most EVENT_QUEUE_MAX pending, then events are dropped with
 * a log line). At most EVENT_MAX_IN_FLIGHT requests are in flight, at most one per Event object; a queued
 * update of an Event object not yet sent absorbs later updates of the same object. Failed requests are
 * logged and dropped (the API client retries transport errors, 429 and 5xx itself). */

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events/correlator.h"

struct kube_client;

#define EVENT_QUEUE_MAX 1000 /* client-go maxQueuedEvents */
#define EVENT_MAX_IN_FLIGHT 4

struct event_recorder;

/* client may be NULL (standalone: events are only logged). The source is {component: "kubelet", host:
 * node_name}, reportingComponent/reportingInstance the same. */
int event_recorder_new(struct event_base *base, struct kube_client *client, const char *node_name,
                       struct event_recorder **ret);
/* Start writing events to the API server through CLIENT (the node got its client certificate only now). */
void event_recorder_set_client(struct event_recorder *r, struct kube_client *client);
/* Requests in flight are cancelled, queued ones dropped. Free it before the client. Accepts NULL; returns NULL. */
struct event_recorder *event_recorder_free(struct event_recorder *r);

/* type "Normal" or "Warning" (others are refused with a log line, as client-go's ValidateEventType); reason
 * "Pulling" etc.; the message is printf-style. Logged at --v=2 like upstream's "Event occurred" line. Never
 * blocks; accepts r == NULL (does nothing). */
void event_recorder_eventf(struct event_recorder *r, const struct event_ref *ref, const char *type, const char *reason,
                           const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The log line: Event occurred: object="ns/name" fieldPath="..." kind="Pod" apiVersion="v1" type="Normal"
 * reason="Pulled" message="..." (values quoted like Go's %q). NULL on OOM. */
char *event_log_line(const struct event_ref *ref, const char *type, const char *reason, const char *message);
