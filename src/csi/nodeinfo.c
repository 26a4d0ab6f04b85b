/* SPDX-License-Identifier: Apache-2.0 */
/* The node's CSI facts in the API: see nodeinfo.h. */

#include "csi/nodeinfo.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "basic/json.h"
#include "basic/list.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"

#define ANNOTATION_NODE_ID "csi.volume.kubernetes.io/nodeid"
#define RETRY_MIN_USEC (1 * USEC_PER_SEC)
#define RETRY_MAX_USEC (30 * USEC_PER_SEC)
#define MAX_ATTACH_LIMIT 2147483647 /* math.MaxInt32: upstream truncates larger limits */

struct want {
        struct want *next;
        char *driver;
        char *node_id; /* NULL: uninstall */
        int64_t max_volumes;
        struct strmap topology;
        unsigned generation; /* bumped on every change */
        unsigned synced;     /* the generation written */
};

struct csi_nodeinfo {
        struct event_base *base;
        struct kube_client *client;
        char *node_name, *node_path, *csinode_path;
        struct want *wants;
        bool init_wanted, init_done;

        /* the task in flight */
        struct want *task; /* NULL with busy: the start-up creation */
        unsigned task_generation;
        bool busy;
        int step;
        json_t *node; /* the Node read by the task */
        struct kube_request *req;
        struct event *retry;
        uint64_t delay;
};

static void run(struct csi_nodeinfo *ni);

/* ---------------------------------------------------------------- pure */

int csi_nodeinfo_annotation(const char *current, const char *driver, const char *node_id, char **ret) {
        json_auto_t *m = NULL;
        char *out;

        if (!isempty(current)) {
                const char *k;
                json_t *v;
                m = json_loads(current, 0, NULL);
                if (!json_is_object(m))
                        return -EBADMSG;
                json_object_foreach(m, k, v)
                        if (!json_is_string(v))
                                return -EBADMSG;
        } else
                m = json_object();
        if (!m)
                return -ENOMEM;
        if (node_id) {
                if (json_object_set_new(m, driver, json_string(node_id)) < 0)
                        return -ENOMEM;
        } else
                (void) json_object_del(m, driver);
        if (json_object_size(m) == 0) {
                *ret = NULL;
                return 0;
        }
        out = json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS);
        if (!out)
                return -ENOMEM;
        *ret = out;
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

json_t *csi_nodeinfo_drivers(const json_t *drivers, const char *driver, const char *node_id, int64_t max_volumes,
                             const struct strmap *topology) {
        json_auto_t *out = json_array();
        size_t i;
        json_t *d;

        if (!out)
                return NULL;
        json_array_foreach(drivers, i, d)
                if (!streq_ptr(json_string_value(json_object_get(d, "name")), driver) && json_array_append(out, d) < 0)
                        return NULL;
        if (node_id) {
                json_auto_t *entry = json_pack("{s:s, s:s}", "name", driver, "nodeID", node_id);
                json_auto_t *keys = json_array();
                _cleanup_free_ char **sorted = NULL;
                size_t n = topology ? topology->n : 0;

                if (!entry || !keys)
                        return NULL;
                sorted = calloc(n + 1, sizeof(char *));
                if (!sorted)
                        return NULL;
                for (size_t k = 0; k < n; k++)
                        sorted[k] = topology->keys[k];
                if (n > 1)
                        qsort(sorted, n, sizeof(char *), cmp_str);
                for (size_t k = 0; k < n; k++)
                        if (json_array_append_new(keys, json_string(sorted[k])) < 0)
                                return NULL;
                if (json_object_set(entry, "topologyKeys", keys) < 0)
                        return NULL;
                if (max_volumes > 0 &&
                    json_object_set_new(entry, "allocatable",
                                        json_pack("{s:I}", "count",
                                                  (json_int_t) MIN(max_volumes, (int64_t) MAX_ATTACH_LIMIT))) < 0)
                        return NULL;
                if (json_array_append(out, entry) < 0)
                        return NULL;
        }
        return TAKE_PTR(out);
}

/* ---------------------------------------------------------------- wants */

static void want_free(struct want *w) {
        if (!w)
                return;
        free(w->driver);
        free(w->node_id);
        strmap_done(&w->topology);
        free(w);
}

static struct want *want_get(struct csi_nodeinfo *ni, const char *driver) {
        struct want *w;

        for (w = ni->wants; w; w = w->next)
                if (streq(w->driver, driver))
                        return w;
        w = calloc(1, sizeof(*w));
        if (!w || !(w->driver = strdup(driver))) {
                free(w);
                return NULL;
        }
        FLIST_PREPEND(ni->wants, w);
        return w;
}

/* ---------------------------------------------------------------- the task */

static void schedule_retry(struct csi_nodeinfo *ni) {
        ni->delay = ni->delay ? MIN(ni->delay * 2, (uint64_t) RETRY_MAX_USEC) : RETRY_MIN_USEC;
        evtimer_add_usec(ni->retry, ni->delay);
}

/* the task ended: ok or not */
static void task_end(struct csi_nodeinfo *ni, bool ok, const char *what, const char *error) {
        struct want *w = ni->task;

        ni->busy = false;
        ni->task = NULL;
        json_decref(ni->node);
        ni->node = NULL;
        if (!ok) {
                log_error("kubernetes.io/csi: %s: %s", what, strna(error));
                schedule_retry(ni);
                return;
        }
        ni->delay = 0;
        if (w)
                w->synced = ni->task_generation;
        else
                ni->init_done = true;
        run(ni);
}

static void on_reply(const struct kube_response *resp, void *userdata);

static int request(struct csi_nodeinfo *ni, const char *method, const char *path, const json_t *body,
                   const char *ctype) {
        int r = kube_request(ni->client, method, path, body, ctype, 0, on_reply, ni, &ni->req);
        if (r < 0)
                ni->req = NULL;
        return r;
}

enum {
        STEP_NODE_GET,
        STEP_NODE_PATCH,
        STEP_CSINODE_GET,
        STEP_CSINODE_CREATE,
        STEP_CSINODE_PUT,
};

static json_t *csinode_new(struct csi_nodeinfo *ni) {
        const char *uid = json_string_at(json_object_get(ni->node, "metadata"), "uid", NULL);
        return json_pack("{s:s, s:s, s:{s:s, s:[{s:s, s:s, s:s, s:s}]}, s:{s:[]}}", "apiVersion", "storage.k8s.io/v1",
                         "kind", "CSINode", "metadata", "name", ni->node_name, "ownerReferences", "apiVersion", "v1",
                         "kind", "Node", "name", ni->node_name, "uid", uid, "spec", "drivers");
}

/* the Node patch the wanted driver needs, or NULL when none (*ret_r < 0: the annotation cannot be read) */
static json_t *node_patch(struct csi_nodeinfo *ni, struct want *w, int *ret_r) {
        json_t *md = json_object_get(ni->node, "metadata");
        const char *cur = json_string_value(json_object_get(json_object_get(md, "annotations"), ANNOTATION_NODE_ID));
        _cleanup_free_ char *val = NULL;
        json_auto_t *patch = NULL, *labels = json_object();
        bool changed = false;
        int r;

        *ret_r = 0;
        r = csi_nodeinfo_annotation(cur, w->driver, w->node_id, &val);
        if (r < 0) {
                *ret_r = r;
                return NULL;
        }
        changed = !streq_ptr(cur, val);
        /* updateTopologyLabels: added, never removed; a collision with another value is an error */
        for (size_t i = 0; w->node_id && i < w->topology.n; i++) {
                const char *old = json_string_value(
                        json_object_get(json_object_get(md, "labels"), w->topology.keys[i]));
                if (old && !streq(old, w->topology.values[i])) {
                        *ret_r = -EEXIST;
                        return NULL;
                }
                if (!old) {
                        json_object_set_new(labels, w->topology.keys[i], json_string(w->topology.values[i]));
                        changed = true;
                }
        }
        if (!changed)
                return NULL;
        patch = json_pack("{s:{s:s, s:{s:o}}}", "metadata", "resourceVersion",
                          json_string_at(md, "resourceVersion", NULL), "annotations", ANNOTATION_NODE_ID,
                          val ? json_string(val) : json_null());
        if (patch && json_object_size(labels) > 0)
                json_object_set(json_object_get(patch, "metadata"), "labels", labels);
        return TAKE_PTR(patch);
}

static void step(struct csi_nodeinfo *ni, const struct kube_response *resp) {
        struct want *w = ni->task;
        const char *what = w ? (w->node_id ? "error adding CSI driver node info"
                                           : "error removing CSI driver node info")
                             : "Failed to initialize CSINode";
        int r = 0;

        switch (ni->step) {
        case STEP_NODE_GET:
                if (resp->r < 0 || resp->status != 200) {
                        task_end(ni, false, what, resp->error);
                        return;
                }
                json_decref(ni->node);
                ni->node = json_incref(resp->body);
                if (w) {
                        json_auto_t *patch = node_patch(ni, w, &r);
                        if (r < 0) {
                                task_end(ni, false, what,
                                         r == -EEXIST ? "detected topology value collision with an existing node label"
                                                      : "failed to parse node's " ANNOTATION_NODE_ID " annotation");
                                return;
                        }
                        if (patch) {
                                ni->step = STEP_NODE_PATCH;
                                if (request(ni, "PATCH", ni->node_path, patch, "application/merge-patch+json") < 0)
                                        task_end(ni, false, what, "out of memory");
                                return;
                        }
                }
                ni->step = STEP_CSINODE_GET;
                if (request(ni, "GET", ni->csinode_path, NULL, NULL) < 0)
                        task_end(ni, false, what, "out of memory");
                return;
        case STEP_NODE_PATCH:
                if (resp->r < 0 || resp->status >= 300) {
                        task_end(ni, false, "error updating Node object with CSI driver node info", resp->error);
                        return;
                }
                ni->step = STEP_CSINODE_GET;
                if (request(ni, "GET", ni->csinode_path, NULL, NULL) < 0)
                        task_end(ni, false, what, "out of memory");
                return;
        case STEP_CSINODE_GET:
                if (resp->r >= 0 && resp->status == 404) {
                        json_auto_t *obj = csinode_new(ni);
                        if (!w || w->node_id) {
                                ni->step = STEP_CSINODE_CREATE;
                                if (!obj || request(ni, "POST", "/apis/storage.k8s.io/v1/csinodes", obj, NULL) < 0)
                                        task_end(ni, false, what, "out of memory");
                                return;
                        }
                        task_end(ni, true, what, NULL); /* nothing to remove the driver from */
                        return;
                }
                /* the CSINode as it is now: */
                _fallthrough_;
        case STEP_CSINODE_CREATE:
                if (resp->r < 0 || resp->status >= 300) {
                        task_end(ni, false, ni->step == STEP_CSINODE_CREATE ? "error creating CSINode" : what,
                                 resp->error);
                        return;
                }
                if (w) {
                        json_t *spec = json_object_get(resp->body, "spec");
                        json_auto_t *drivers = csi_nodeinfo_drivers(json_object_get(spec, "drivers"), w->driver,
                                                                    w->node_id, w->max_volumes, &w->topology);
                        json_auto_t *obj = json_deep_copy(resp->body);
                        if (!drivers || !obj) {
                                task_end(ni, false, what, "out of memory");
                                return;
                        }
                        if (json_equal(drivers, json_object_get(spec, "drivers")) ||
                            (json_array_size(drivers) == 0 && json_array_size(json_object_get(spec, "drivers")) == 0)) {
                                task_end(ni, true, what, NULL);
                                return;
                        }
                        if (!json_is_object(json_object_get(obj, "spec")))
                                json_object_set_new(obj, "spec", json_object());
                        json_object_set(json_object_get(obj, "spec"), "drivers", drivers);
                        ni->step = STEP_CSINODE_PUT;
                        if (request(ni, "PUT", ni->csinode_path, obj, NULL) < 0)
                                task_end(ni, false, what, "out of memory");
                        return;
                }
                task_end(ni, true, what, NULL);
                return;
        case STEP_CSINODE_PUT:
                if (resp->r < 0 || resp->status >= 300) {
                        task_end(ni, false, "error updating CSINode", resp->error);
                        return;
                }
                if (w)
                        log_info("kubernetes.io/csi: CSINode %s: driver %s %s", ni->node_name, w->driver,
                                 w->node_id ? "installed" : "uninstalled");
                task_end(ni, true, what, NULL);
                return;
        }
}

static void on_reply(const struct kube_response *resp, void *userdata) {
        struct csi_nodeinfo *ni = userdata;

        ni->req = NULL;
        step(ni, resp);
}

static void run(struct csi_nodeinfo *ni) {
        struct want *w;

        if (!ni->client || ni->busy || evtimer_pending(ni->retry, NULL))
                return;
        for (w = ni->wants; w; w = w->next)
                if (w->synced != w->generation)
                        break;
        if (!w && (!ni->init_wanted || ni->init_done))
                return;
        ni->busy = true;
        ni->task = w;
        ni->task_generation = w ? w->generation : 0;
        ni->step = STEP_NODE_GET;
        if (request(ni, "GET", ni->node_path, NULL, NULL) < 0)
                task_end(ni, false, "CSINode", "out of memory");
}

static void on_retry(evutil_socket_t fd, short what, void *userdata) {
        run(userdata);
}

/* ---------------------------------------------------------------- API */

int csi_nodeinfo_new(struct event_base *base, struct kube_client *client, const char *node_name,
                     struct csi_nodeinfo **ret) {
        struct csi_nodeinfo *ni = calloc(1, sizeof(*ni));
        _cleanup_free_ char *n = NULL;

        if (!ni)
                return -ENOMEM;
        ni->base = base;
        ni->client = client;
        n = kube_escape(node_name);
        ni->node_name = strdup(node_name);
        ni->retry = evtimer_new(base, on_retry, ni);
        if (!n || !ni->node_name || !ni->retry || asprintf(&ni->node_path, "/api/v1/nodes/%s", n) < 0 ||
            asprintf(&ni->csinode_path, "/apis/storage.k8s.io/v1/csinodes/%s", n) < 0) {
                csi_nodeinfo_free(ni);
                return -ENOMEM;
        }
        *ret = ni;
        return 0;
}

struct csi_nodeinfo *csi_nodeinfo_free(struct csi_nodeinfo *ni) {
        if (!ni)
                return NULL;
        kube_request_cancel(ni->req);
        if (ni->retry)
                event_free(ni->retry);
        for (struct want *w; ni->wants;) {
                FLIST_POP(ni->wants, w);
                want_free(w);
        }
        json_decref(ni->node);
        free(ni->node_name);
        free(ni->node_path);
        free(ni->csinode_path);
        free(ni);
        return NULL;
}

void csi_nodeinfo_set_client(struct csi_nodeinfo *ni, struct kube_client *client) {
        if (!ni)
                return;
        ni->client = client;
        run(ni);
}

void csi_nodeinfo_start(struct csi_nodeinfo *ni) {
        ni->init_wanted = true;
        run(ni);
}

int csi_nodeinfo_install(struct csi_nodeinfo *ni, const char *driver, const char *node_id, int64_t max_volumes,
                         const struct strmap *topology) {
        struct want *w = want_get(ni, driver);

        if (!w)
                return -ENOMEM;
        if (free_and_strdup(&w->node_id, node_id) < 0)
                return -ENOMEM;
        w->max_volumes = max_volumes;
        strmap_done(&w->topology);
        if (topology && strmap_copy(topology, &w->topology) < 0)
                return -ENOMEM;
        w->generation++;
        if (max_volumes <= 0)
                log_v(2,
                      "kubernetes.io/csi: Invalid attach limit value %" PRId64
                      " cannot be added to CSINode object for \"%s\"",
                      max_volumes, driver);
        run(ni);
        return 0;
}

int csi_nodeinfo_uninstall(struct csi_nodeinfo *ni, const char *driver) {
        struct want *w = want_get(ni, driver);

        if (!w)
                return -ENOMEM;
        w->node_id = mfree(w->node_id);
        strmap_done(&w->topology);
        w->generation++;
        run(ni);
        return 0;
}
