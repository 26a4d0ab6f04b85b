/* SPDX-License-Identifier: Apache-2.0 */
#include "kubelet/allocation.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strmap.h"

/* ---------------------------------------------------------------- pure */

/* the resources object of a container as its document gives it ({} when none) */
static json_t *resources_of(const struct container *c) {
        json_t *r = json_object_get(c->raw, "resources");
        return json_is_object(r) ? json_incref(r) : json_object();
}

/* The key of the pod-level resources (spec.resources, InPlacePodLevelResourcesVerticalScaling beta on since v1.36)
 * in an allocation, beside the containers' names: never a container's name (a DNS label has no '/'). Only a pod that
 * has them gets it, so the allocation of any other pod is as before. */
#define POD_LEVEL_KEY "/pod"

int kubelet_allocation_from_pod(const struct pod *pod, json_t **ret) {
        json_auto_t *a = json_object();
        json_t *pr = json_object_get(json_object_get(pod->raw, "spec"), "resources");

        if (!a)
                return -ENOMEM;
        if (json_is_object(pr) && json_object_set(a, POD_LEVEL_KEY, pr) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < pod->spec.n_containers; i++)
                if (json_object_set_new(a, strempty(pod->spec.containers[i].name),
                                        resources_of(&pod->spec.containers[i])) < 0)
                        return -ENOMEM;
        /* sidecars are resizable too; regular init containers are done with */
        for (size_t i = 0; i < pod->spec.n_init_containers; i++)
                if (container_is_sidecar(&pod->spec.init_containers[i]) &&
                    json_object_set_new(a, strempty(pod->spec.init_containers[i].name),
                                        resources_of(&pod->spec.init_containers[i])) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(a);
        return 0;
}

bool kubelet_allocation_differs(const json_t *alloc, const struct pod *pod) {
        json_auto_t *now = NULL;

        if (!alloc || kubelet_allocation_from_pod(pod, &now) < 0)
                return false;
        return !json_equal((json_t *) alloc, now);
}

static int replace_resources(json_t *list, const json_t *alloc) {
        json_t *c;
        size_t i;

        json_array_foreach(list, i, c) {
                const char *name = json_string_value(json_object_get(c, "name"));
                json_t *r = name ? json_object_get(alloc, name) : NULL;
                if (r && json_object_set(c, "resources", r) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int kubelet_pod_with_allocation(const struct pod *pod, const json_t *alloc, struct pod **ret) {
        _cleanup_(field_errors_done) struct field_errors errs = {};
        json_auto_t *doc = json_deep_copy(pod->raw);
        json_t *spec = json_object_get(doc, "spec");
        struct pod *p = NULL;
        int r;

        if (!doc || !json_is_object(spec))
                return -ENOMEM;
        r = replace_resources(json_object_get(spec, "containers"), alloc);
        if (r >= 0)
                r = replace_resources(json_object_get(spec, "initContainers"), alloc);
        /* the pod-level resources as allocated (none when none were) */
        if (r >= 0 && json_object_get(alloc, POD_LEVEL_KEY))
                r = json_object_set(spec, "resources", json_object_get(alloc, POD_LEVEL_KEY)) < 0 ? -ENOMEM : 0;
        else if (r >= 0)
                json_object_del(spec, "resources");
        if (r < 0)
                return r;
        r = pod_decode(doc, &p, &errs);
        if (r < 0)
                return r;
        r = pod_apply_defaults_checked(p);
        /* what the sources gave the pod besides its document: the config source annotations, and for a static
         * pod its UID, its name with the node's, its namespace and node (applyDefaults) */
        if (r >= 0) {
                strmap_done(&p->annotations);
                r = strmap_copy(&pod->annotations, &p->annotations);
        }
        if (r >= 0)
                r = free_and_strdup(&p->uid, pod->uid);
        if (r >= 0)
                r = free_and_strdup(&p->name, pod->name);
        if (r >= 0)
                r = free_and_strdup(&p->namespace_, pod->namespace_);
        if (r >= 0)
                r = free_and_strdup(&p->spec.node_name, pod->spec.node_name);
        if (r < 0) {
                pod_free(p);
                return r;
        }
        *ret = p;
        return 0;
}

/* the "Pod was rejected: " of a rejected pod's status is not part of a deferred resize's message */
static char *admission_message(const char *m) {
        const char *prefix = "Pod was rejected: ";
        return strdup(startswith(m, prefix) ? m + strlen(prefix) : m);
}

enum resize_verdict kubelet_resize_decide(const struct pod *desired, bool is_static, const struct pod *const *others,
                                          size_t n_others, const struct admission_node *node, char **ret_message) {
        int64_t cpu, mem;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_free_ char *msg = NULL;
        int r;

        *ret_message = NULL;
        /* IsInPlacePodVerticalScalingAllowed */
        if (is_static) {
                *ret_message = strdup("In-place resize of static-pods is not supported");
                return RESIZE_INFEASIBLE;
        }
        /* canResizePod: more than the node can ever give */
        kubelet_pod_requests(desired, &cpu, &mem);
        if (mem > node->memory_bytes || cpu > node->cpu_milli) {
                if (mem > node->memory_bytes)
                        r = asprintf(&msg,
                                     "Node didn't have enough capacity: memory, requested: %" PRId64
                                     ", capacity: %" PRId64,
                                     mem, node->memory_bytes);
                else
                        r = asprintf(&msg,
                                     "Node didn't have enough capacity: cpu, requested: %" PRId64
                                     ", capacity: %" PRId64,
                                     cpu, node->cpu_milli);
                if (r < 0)
                        msg = NULL;
                *ret_message = TAKE_PTR(msg);
                return RESIZE_INFEASIBLE;
        }
        /* what the other pods were allocated leaves no room now: retried later */
        r = kubelet_admit(desired, others, n_others, node, &err);
        if (r == -ENOSPC) {
                *ret_message = admission_message(ck_error_message(err));
                return RESIZE_DEFERRED;
        }
        return RESIZE_ACCEPTED;
}

char *kubelet_resize_message(const char *prefix, const struct pod *pod, int64_t generation, const char *error) {
        json_auto_t *summary = json_object(), *containers = json_array(), *inits = json_array();
        _cleanup_free_ char *s = NULL;
        char *m = NULL;

        if (!summary || !containers || !inits)
                return NULL;
        /* podResourceSummary: initContainers, containers (omitted when empty), generation, error (when given) */
        for (size_t i = 0; i < pod->spec.n_init_containers; i++)
                json_array_append_new(inits, json_pack("{s:s, s:o}", "name", pod->spec.init_containers[i].name,
                                                       "resources", resources_of(&pod->spec.init_containers[i])));
        for (size_t i = 0; i < pod->spec.n_containers; i++)
                json_array_append_new(containers, json_pack("{s:s, s:o}", "name", pod->spec.containers[i].name,
                                                            "resources", resources_of(&pod->spec.containers[i])));
        if (json_array_size(inits) > 0)
                json_object_set(summary, "initContainers", inits);
        if (json_array_size(containers) > 0)
                json_object_set(summary, "containers", containers);
        json_object_set_new(summary, "generation", json_integer(generation));
        if (!isempty(error))
                json_object_set_new(summary, "error", json_string(error));
        s = json_dumps(summary, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!s || asprintf(&m, "%s: %s", prefix, s) < 0)
                return NULL;
        return m;
}

/* ---------------------------------------------------------------- the checkpoint */

struct allocation_state {
        char *path;
        json_t *pods; /* {"<uid>": {"<container>": <resources>}} */
};

struct allocation_state *kubelet_allocation_free(struct allocation_state *st) {
        if (!st)
                return NULL;
        json_decref(st->pods);
        free(st->path);
        free(st);
        return NULL;
}

int kubelet_allocation_load(const char *dir, struct allocation_state **ret) {
        struct allocation_state *st = calloc(1, sizeof(*st));
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        int r;

        if (!st)
                return -ENOMEM;
        if (asprintf(&st->path, "%s/" ALLOCATION_STATE_FILE, dir) < 0) {
                st->path = NULL;
                kubelet_allocation_free(st);
                return -ENOMEM;
        }
        r = read_full_file(st->path, ALLOCATION_STATE_MAX, &data, &size);
        if (r >= 0) {
                json_auto_t *doc = json_loadb(data, size, JSON_REJECT_DUPLICATES, NULL);
                json_t *pods = json_object_get(doc, "pods");
                if (json_is_object(pods) && json_integer_value(json_object_get(doc, "version")) == 1)
                        st->pods = json_incref(pods);
                else
                        log_warning("%s does not parse: the allocations of the pods start anew", st->path);
        } else if (r != -ENOENT)
                log_warning("cannot read %s: %s: the allocations of the pods start anew", st->path, strerror(-r));
        if (!st->pods)
                st->pods = json_object();
        if (!st->pods) {
                kubelet_allocation_free(st);
                return -ENOMEM;
        }
        log_v(2, "allocations of %zu pods read from %s", json_object_size(st->pods), st->path);
        *ret = st;
        return 0;
}

static int save(struct allocation_state *st) {
        json_auto_t *doc = json_pack("{s:i, s:O}", "version", 1, "pods", st->pods);
        _cleanup_free_ char *s = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        int r;

        if (!s)
                return -ENOMEM;
        r = write_file_atomic(st->path, s, strlen(s), 0600);
        if (r < 0)
                log_error("cannot write %s: %s", st->path, strerror(-r));
        return r;
}

const json_t *kubelet_allocation_get(const struct allocation_state *st, const char *uid) {
        return st ? json_object_get(st->pods, uid) : NULL;
}

int kubelet_allocation_set(struct allocation_state *st, const char *uid, json_t *alloc) {
        _unused_ json_auto_t *owned = alloc; /* released when done */
        const json_t *old;

        if (!st)
                return 0;
        old = json_object_get(st->pods, uid);
        if (alloc ? old && json_equal((json_t *) old, alloc) : !old)
                return 0;
        if (alloc ? json_object_set(st->pods, uid, alloc) < 0 : json_object_del(st->pods, uid) < 0)
                return -ENOMEM;
        return save(st);
}

void kubelet_allocation_remove_orphans(struct allocation_state *st, bool (*keep)(const char *uid, void *userdata),
                                       void *userdata) {
        const char *uid;
        json_t *v, *tmp;
        bool changed = false;

        if (!st)
                return;
        json_object_foreach_safe(st->pods, tmp, uid, v) if (!keep(uid, userdata)) {
                json_object_del(st->pods, uid);
                changed = true;
        }
        if (changed)
                (void) save(st);
}
