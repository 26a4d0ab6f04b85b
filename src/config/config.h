/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Pod config sources (pkg/kubelet/config): each source delivers the complete set of pods it knows
 * (SET semantics); the merger keeps the last good set per source and hands the union to the kubelet.
 * A source that fails (unreadable directory, HTTP error, bad document) keeps its last good pods. */

#include <event2/event.h>
#include <stdint.h>

#include "apis/pod.h"

#define CONFIG_SOURCE_FILE "file"
#define CONFIG_SOURCE_HTTP "http"
#define CONFIG_SOURCE_API "api"

/* annotation keys, as upstream (pkg/kubelet/types) */
#define ANNOTATION_CONFIG_HASH "kubernetes.io/config.hash"
#define ANNOTATION_CONFIG_SOURCE "kubernetes.io/config.source"
#define ANNOTATION_CONFIG_SEEN "kubernetes.io/config.seen"
#define ANNOTATION_CONFIG_MIRROR "kubernetes.io/config.mirror"

/* Upper bound for a manifest file or manifest URL body. */
#define MANIFEST_MAX_SIZE (10u * 1024u * 1024u)

/* Called when the merged desired set changes. "pods" is borrowed for the duration of the call: the
 * kubelet copies or references what it needs (pods are immutable once delivered; pod_ref below). */
typedef void (*config_update_cb)(const struct pod_set *pods, void *userdata);

struct ck_error;
struct pod_config;
int pod_config_new(struct event_base *base, const char *node_name, config_update_cb cb, void *userdata,
                   struct pod_config **ret);
struct pod_config *pod_config_free(struct pod_config *c);

/* Sources. Intervals in microseconds. Each returns 0 once the watch/poll is set up (the first read happens
 * right away on the loop), or a negative errno with a logged reason. */
int pod_config_add_file_source(struct pod_config *c, const char *path, uint64_t check_interval_usec);
int pod_config_add_http_source(struct pod_config *c, const char *url, char *const *headers /* "Key: value" */,
                               uint64_t check_interval_usec);

/* The apiserver source: the pods bound to this node (LIST + WATCH); see apiserver.c. */
struct kube_client;
int pod_config_add_api_source(struct pod_config *c, struct kube_client *client);
/* With a NULL client the API source is registered but waits (and the first delivery with it) until
 * pod_config_start_api_source() gives it one: the node is still getting its client certificate. */
int pod_config_start_api_source(struct pod_config *c, struct kube_client *client);

/* A pod from a file or URL source (kubetypes.IsStaticPod): not from the API server. */
bool pod_config_is_static(const struct pod *p);

/* Mirror pods (the API server's copies of static pods, annotation kubernetes.io/config.mirror) are never run:
 * the apiserver source hands them to this callback instead, the complete list (a JSON array of Pod objects,
 * borrowed) after every change. */
typedef void (*config_mirror_cb)(const json_t *mirror_pods, void *userdata);
void pod_config_set_mirror_callback(struct pod_config *c, config_mirror_cb cb, void *userdata);
void pod_config_report_mirror_pods(struct pod_config *c, const json_t *mirror_pods);

/* Called by a source with its complete, valid set (ownership of the pods moves to the merger). */
int pod_config_set_source_pods(struct pod_config *c, const char *source, struct pod_set *pods);

/* Turn a decoded manifest pod into a static pod as upstream's applyDefaults (config/common.go): keep a set
 * UID or derive one (md5 over the pod document, "host:<node>" and "file:<path>" — or "url:<url>"), name
 * "<name>-<node>", namespace "default" if unset, spec.nodeName = node, annotations config.hash (=UID),
 * config.source and config.seen. */
int pod_config_static_pod_defaults(struct pod *p, const char *node_name, const char *source, const char *source_id);

/* Parse a manifest file's content into static pods: manifest_parse (apis/manifest.h), then
 * pod_config_static_pod_defaults and pod_validate on each. All or nothing: on any error nothing is returned and
 * *ret_error names the document and field ("document 2 (pod \"web\"): spec.containers[0].name: Required
 * value"). */
int pod_config_static_pods_from_manifest(const char *data, size_t size, const char *node_name, const char *source,
                                         const char *source_id, struct pod_set *ret, struct ck_error **ret_error);
