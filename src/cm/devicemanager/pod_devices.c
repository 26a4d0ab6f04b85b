/* SPDX-License-Identifier: Apache-2.0 */
/* The device manager's memory of assignments, its choice of devices, the container's options and the
 * checkpoint. Pure. */
#include "cm/devicemanager/pod_devices.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/base64.h"
#include "basic/error.h"
#include "basic/json.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"

static void dm_alloc_done(struct dm_alloc *a) {
        if (!a)
                return;
        free(a->pod_uid);
        free(a->container);
        free(a->resource);
        free(a->numa);
        strv_free(a->device_ids);
        free(a->resp);
        *a = (struct dm_alloc) {};
}

void dm_pod_devices_done(struct dm_pod_devices *p) {
        if (!p)
                return;
        for (size_t i = 0; i < p->n; i++)
                dm_alloc_done(&p->allocs[i]);
        free(p->allocs);
        *p = (struct dm_pod_devices) {};
}

static struct dm_alloc *find(const struct dm_pod_devices *p, const char *pod_uid, const char *container,
                             const char *resource) {
        for (size_t i = 0; i < p->n; i++) {
                struct dm_alloc *a = &p->allocs[i];
                if (streq(a->pod_uid, pod_uid) && streq(a->container, container) && streq(a->resource, resource))
                        return a;
        }
        return NULL;
}

const struct dm_alloc *dm_pod_devices_find(const struct dm_pod_devices *p, const char *pod_uid, const char *container,
                                           const char *resource) {
        return find(p, pod_uid, container, resource);
}

int dm_pod_devices_insert(struct dm_pod_devices *p, const char *pod_uid, const char *container, const char *resource,
                          char *const *ids, const int64_t *numa, const uint8_t *resp, size_t resp_len) {
        struct dm_alloc n = {}, *slot;
        size_t k = strv_length(ids);

        n.pod_uid = strdup(pod_uid);
        n.container = strdup(container);
        n.resource = strdup(resource);
        n.numa = calloc(k ? k : 1, sizeof(*n.numa));
        if (!n.pod_uid || !n.container || !n.resource || !n.numa || strv_copy(ids, &n.device_ids) < 0)
                goto oom;
        if (!n.device_ids && !(n.device_ids = calloc(1, sizeof(char *))))
                goto oom;
        if (numa)
                memcpy(n.numa, numa, k * sizeof(*numa));
        if (resp) {
                n.resp = malloc(resp_len ? resp_len : 1);
                if (!n.resp)
                        goto oom;
                memcpy(n.resp, resp, resp_len);
                n.resp_len = resp_len;
        }
        slot = find(p, pod_uid, container, resource);
        if (slot)
                dm_alloc_done(slot);
        else {
                struct dm_alloc *na = reallocarray(p->allocs, p->n + 1, sizeof(*na));
                if (!na)
                        goto oom;
                p->allocs = na;
                slot = &na[p->n++];
        }
        *slot = n;
        return 0;
oom:
        dm_alloc_done(&n);
        return -ENOMEM;
}

void dm_pod_devices_remove_pod(struct dm_pod_devices *p, const char *pod_uid) {
        size_t k = 0;

        for (size_t i = 0; i < p->n; i++) {
                if (streq(p->allocs[i].pod_uid, pod_uid))
                        dm_alloc_done(&p->allocs[i]);
                else
                        p->allocs[k++] = p->allocs[i];
        }
        p->n = k;
}

static int strv_add_unique(char ***l, const char *s) {
        return strv_contains(*l, s) ? 0 : strv_extend(l, s);
}

int dm_pod_devices_in_use(const struct dm_pod_devices *p, const char *resource, bool include_pending, char ***ret) {
        _cleanup_strv_free_ char **out = NULL;

        for (size_t i = 0; i < p->n; i++) {
                const struct dm_alloc *a = &p->allocs[i];
                if (!streq(a->resource, resource) || (!a->resp && !include_pending))
                        continue;
                for (size_t j = 0; a->device_ids[j]; j++)
                        if (strv_add_unique(&out, a->device_ids[j]) < 0)
                                return -ENOMEM;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

int dm_pod_devices_pods(const struct dm_pod_devices *p, char ***ret) {
        _cleanup_strv_free_ char **out = NULL;

        for (size_t i = 0; i < p->n; i++)
                if (strv_add_unique(&out, p->allocs[i].pod_uid) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}

/* ---------------------------------------------------------------- choosing */

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* add from candidates (in name order) what is available and not yet taken, until `needed` are chosen */
static int take_from(char *const *candidates, char *const *available, char ***chosen, size_t needed) {
        _cleanup_strv_free_ char **sorted = NULL;

        if (strv_copy(candidates, &sorted) < 0)
                return -ENOMEM;
        if (sorted)
                qsort(sorted, strv_length(sorted), sizeof(char *), cmp_str);
        for (size_t i = 0; sorted && sorted[i] && strv_length(*chosen) < needed; i++) {
                if (available && !strv_contains(available, sorted[i]))
                        continue;
                if (strv_add_unique(chosen, sorted[i]) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* the available devices (healthy, not in use, not already chosen) split by the affinity (filterByAffinity): on its
 * NUMA nodes, on others, without a NUMA node. No affinity, or no device of the resource with a NUMA node: all of
 * them "without". (Upstream's lists are sets: their order is not kept, ours is the name order of take_from.) */
struct split {
        char **available, **aligned, **unaligned, **none;
};

static void split_done(struct split *s) {
        strv_free(s->available);
        strv_free(s->aligned);
        strv_free(s->unaligned);
        strv_free(s->none);
}

static int split_devices(char *const *healthy, const int64_t *numa, char *const *in_use, char *const *chosen,
                         uint64_t affinity, struct split *ret) {
        struct split s = {};
        bool aware = false;

        for (size_t i = 0; numa && healthy && healthy[i]; i++)
                aware = aware || numa[i] >= 0;
        for (size_t i = 0; healthy && healthy[i]; i++) {
                char ***to;
                if (strv_contains(in_use, healthy[i]) || strv_contains(chosen, healthy[i]))
                        continue;
                if (strv_extend(&s.available, healthy[i]) < 0)
                        goto oom;
                if (!aware || affinity == 0 || numa[i] < 0 || numa[i] >= 64)
                        to = &s.none;
                else if (affinity >> numa[i] & 1)
                        to = &s.aligned;
                else
                        to = &s.unaligned;
                if (strv_extend(to, healthy[i]) < 0)
                        goto oom;
        }
        *ret = s;
        return 0;
oom:
        split_done(&s);
        return -ENOMEM;
}

int dm_choose_devices_aligned(const char *resource, char *const *healthy, const int64_t *numa, char *const *in_use,
                              char *const *reusable, uint64_t affinity, char *const *preferred, size_t needed,
                              char ***ret, struct ck_error **ret_error) {
        _cleanup_strv_free_ char **chosen = NULL;
        struct split s = {};
        size_t from_reuse;
        int r;

        if (needed == 0) {
                *ret = NULL;
                return 0;
        }
        /* what the pod's init containers held comes first (reusableDevices) */
        if (take_from(reusable, NULL, &chosen, needed) < 0)
                return -ENOMEM;
        from_reuse = strv_length(chosen);
        if (from_reuse == needed) {
                *ret = TAKE_PTR(chosen);
                return 0;
        }
        if (split_devices(healthy, numa, in_use, chosen, affinity, &s) < 0)
                return -ENOMEM;
        if (strv_length(s.available) < needed - from_reuse) {
                r = ck_error_set(ret_error, -ENOSPC,
                                 "requested number of devices unavailable for %s. Requested: %zu, Available: %zu",
                                 resource, needed - from_reuse, strv_length(s.available));
                split_done(&s);
                return r;
        }
        if (needed - from_reuse < strv_length(s.aligned))
                /* all from the aligned ones: the plugin's preference among them first */
                r = take_from(preferred, s.aligned, &chosen, needed) ?: take_from(s.aligned, NULL, &chosen, needed);
        else
                /* every aligned one, then the plugin's preference, then the unaligned ones, then those without
                 * a NUMA node */
                r = take_from(s.aligned, NULL, &chosen, needed) ?: take_from(preferred, s.available, &chosen, needed)
                        ?: take_from(s.unaligned, NULL, &chosen, needed) ?: take_from(s.none, NULL, &chosen, needed);
        split_done(&s);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(chosen);
        return 0;
}

int dm_choose_devices(const char *resource, char *const *healthy, char *const *in_use, char *const *reusable,
                      char *const *preferred, size_t needed, char ***ret, struct ck_error **ret_error) {
        return dm_choose_devices_aligned(resource, healthy, NULL, in_use, reusable, 0, preferred, needed, ret,
                                         ret_error);
}

static int add_all(char ***l, char *const *add) {
        for (size_t i = 0; add && add[i]; i++)
                if (strv_add_unique(l, add[i]) < 0)
                        return -ENOMEM;
        return 0;
}

int dm_preferred_offer(char *const *healthy, const int64_t *numa, char *const *in_use, char *const *reusable,
                       uint64_t affinity, size_t needed, char ***ret_available, char ***ret_must) {
        _cleanup_strv_free_ char **reuse = NULL, **offer = NULL, **must = NULL;
        struct split s = {};
        bool from_aligned;
        int r = 0;

        if (take_from(reusable, NULL, &reuse, needed) < 0 ||
            split_devices(healthy, numa, in_use, reuse, affinity, &s) < 0)
                return -ENOMEM;
        from_aligned = needed - strv_length(reuse) < strv_length(s.aligned);
        if (add_all(&must, reuse) < 0 || (!from_aligned && add_all(&must, s.aligned) < 0) ||
            add_all(&offer, from_aligned ? s.aligned : s.available) < 0 || add_all(&offer, must) < 0)
                r = -ENOMEM;
        split_done(&s);
        if (r < 0)
                return r;
        *ret_available = TAKE_PTR(offer);
        *ret_must = TAKE_PTR(must);
        return 0;
}

/* ---------------------------------------------------------------- run options */

void dm_run_options_done(struct dm_run_options *o) {
        if (!o)
                return;
        /* the strings belong to the responses */
        free(o->env_names);
        free(o->env_values);
        free(o->mounts);
        free(o->devices);
        free(o->annotation_names);
        free(o->annotation_values);
        free(o->cdi_devices);
        for (size_t i = 0; i < o->n_responses; i++)
                v1beta1__container_allocate_response__free_unpacked(o->responses[i], NULL);
        free(o->responses);
        *o = (struct dm_run_options) {};
}

/* the borrowed-strings vectors: NULL-terminated arrays of pointers into the responses */
static int push_borrowed(char ***l, size_t *n, const char *s) {
        char **nl = reallocarray(*l, *n + 2, sizeof(char *));
        if (!nl)
                return -ENOMEM;
        nl[(*n)++] = (char *) s;
        nl[*n] = NULL;
        *l = nl;
        return 0;
}

static ssize_t index_of(char *const *l, size_t n, const char *s) {
        for (size_t i = 0; i < n; i++)
                if (streq(l[i], s))
                        return (ssize_t) i;
        return -1;
}

int dm_run_options_build(const struct dm_pod_devices *p, const char *pod_uid, const char *container,
                         struct dm_run_options *ret) {
        struct dm_run_options o = {};
        size_t n_env = 0, n_ann = 0, n_cdi = 0;

        for (size_t i = 0; i < p->n; i++) {
                const struct dm_alloc *a = &p->allocs[i];
                V1beta1__ContainerAllocateResponse *r, **nr;
                ssize_t at;

                if (!streq(a->pod_uid, pod_uid) || !streq(a->container, container) || !a->resp)
                        continue;
                r = v1beta1__container_allocate_response__unpack(NULL, a->resp_len, a->resp);
                if (!r) {
                        log_error("device manager: the Allocate answer kept for %s/%s (%s) cannot be decoded", pod_uid,
                                  container, a->resource);
                        continue;
                }
                nr = reallocarray(o.responses, o.n_responses + 1, sizeof(*nr));
                if (!nr) {
                        v1beta1__container_allocate_response__free_unpacked(r, NULL);
                        goto oom;
                }
                o.responses = nr;
                nr[o.n_responses++] = r;
                for (size_t j = 0; j < r->n_envs; j++) {
                        at = index_of(o.env_names, n_env, r->envs[j]->key);
                        if (at >= 0) {
                                if (!streq(o.env_values[at], r->envs[j]->value))
                                        log_error("Environment variable %s has conflicting setting: %s and %s",
                                                  r->envs[j]->key, o.env_values[at], r->envs[j]->value);
                                continue;
                        }
                        size_t nv = n_env;
                        if (push_borrowed(&o.env_names, &n_env, r->envs[j]->key) < 0 ||
                            push_borrowed(&o.env_values, &nv, r->envs[j]->value) < 0)
                                goto oom;
                }
                for (size_t j = 0; j < r->n_devices; j++) {
                        bool dup = false;
                        for (size_t k = 0; k < o.n_devices; k++)
                                if (streq(o.devices[k]->container_path, r->devices[j]->container_path)) {
                                        dup = true;
                                        if (!streq(o.devices[k]->host_path, r->devices[j]->host_path))
                                                log_error("Container device %s has conflicting mapping host devices: "
                                                          "%s and %s",
                                                          r->devices[j]->container_path, o.devices[k]->host_path,
                                                          r->devices[j]->host_path);
                                }
                        if (dup)
                                continue;
                        V1beta1__DeviceSpec **nd = reallocarray(o.devices, o.n_devices + 1, sizeof(*nd));
                        if (!nd)
                                goto oom;
                        o.devices = nd;
                        nd[o.n_devices++] = r->devices[j];
                }
                for (size_t j = 0; j < r->n_mounts; j++) {
                        bool dup = false;
                        for (size_t k = 0; k < o.n_mounts; k++)
                                if (streq(o.mounts[k]->container_path, r->mounts[j]->container_path)) {
                                        dup = true;
                                        if (!streq(o.mounts[k]->host_path, r->mounts[j]->host_path))
                                                log_error("Container mount %s has conflicting mapping host mounts: %s "
                                                          "and %s",
                                                          r->mounts[j]->container_path, o.mounts[k]->host_path,
                                                          r->mounts[j]->host_path);
                                }
                        if (dup)
                                continue;
                        V1beta1__Mount **nm = reallocarray(o.mounts, o.n_mounts + 1, sizeof(*nm));
                        if (!nm)
                                goto oom;
                        o.mounts = nm;
                        nm[o.n_mounts++] = r->mounts[j];
                }
                for (size_t j = 0; j < r->n_annotations; j++) {
                        at = index_of(o.annotation_names, n_ann, r->annotations[j]->key);
                        if (at >= 0) {
                                if (!streq(o.annotation_values[at], r->annotations[j]->value))
                                        log_error("Annotation %s has conflicting setting: %s and %s",
                                                  r->annotations[j]->key, o.annotation_values[at],
                                                  r->annotations[j]->value);
                                continue;
                        }
                        size_t nv = n_ann;
                        if (push_borrowed(&o.annotation_names, &n_ann, r->annotations[j]->key) < 0 ||
                            push_borrowed(&o.annotation_values, &nv, r->annotations[j]->value) < 0)
                                goto oom;
                }
                /* CDI devices by name, each once (getCDIDeviceInfo skips a name already given) */
                for (size_t j = 0; j < r->n_cdi_devices; j++) {
                        const char *name = r->cdi_devices[j]->name;
                        if (isempty(name) || index_of(o.cdi_devices, n_cdi, name) >= 0)
                                continue;
                        if (push_borrowed(&o.cdi_devices, &n_cdi, name) < 0)
                                goto oom;
                }
        }
        *ret = o;
        return 0;
oom:
        dm_run_options_done(&o);
        return -ENOMEM;
}

/* ---------------------------------------------------------------- checkpoint */

void dm_registered_free(struct dm_registered *reg, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(reg[i].resource);
                strv_free(reg[i].device_ids);
        }
        free(reg);
}

/* FNV-1a, 32 bits */
static uint32_t fnv32a(const char *s) {
        uint32_t h = 2166136261u;
        for (; *s; s++) {
                h ^= (uint8_t) *s;
                h *= 16777619u;
        }
        return h;
}

static json_t *strv_json(char *const *l) {
        json_t *a = json_array();
        for (size_t i = 0; a && l && l[i]; i++)
                if (json_array_append_new(a, json_string(l[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

static json_t *data_json(const struct dm_pod_devices *p, const struct dm_registered *reg, size_t n_reg) {
        json_auto_t *entries = json_array(), *registered = json_object();

        if (!entries || !registered)
                return NULL;
        for (size_t i = 0; i < p->n; i++) {
                const struct dm_alloc *a = &p->allocs[i];
                _cleanup_free_ char *b64 = NULL;
                json_auto_t *ids = json_object();
                json_t *e;

                if (!a->resp)
                        continue; /* chosen, not allocated yet: not kept, as upstream */
                if (!ids)
                        return NULL;
                for (size_t j = 0; a->device_ids[j]; j++) {
                        char key[32];
                        json_t *l;
                        snprintf(key, sizeof(key), "%" PRId64, a->numa[j]);
                        l = json_object_get(ids, key);
                        if (!l) {
                                l = json_array();
                                if (!l || json_object_set_new(ids, key, l) < 0)
                                        return NULL;
                        }
                        if (json_array_append_new(l, json_string(a->device_ids[j])) < 0)
                                return NULL;
                }
                b64 = base64_encode(a->resp, a->resp_len);
                if (!b64)
                        return NULL;
                e = json_pack("{s:s, s:s, s:s, s:O, s:s}", "PodUID", a->pod_uid, "ContainerName", a->container,
                              "ResourceName", a->resource, "DeviceIDs", ids, "AllocResp", b64);
                if (!e || json_array_append_new(entries, e) < 0)
                        return NULL;
        }
        for (size_t i = 0; i < n_reg; i++) {
                json_t *l = strv_json(reg[i].device_ids);
                if (!l || json_object_set_new(registered, reg[i].resource, l) < 0)
                        return NULL;
        }
        return json_pack("{s:O, s:O}", "PodDeviceEntries", entries, "RegisteredDevices", registered);
}

char *dm_checkpoint_encode(const struct dm_pod_devices *p, const struct dm_registered *reg, size_t n_reg) {
        json_auto_t *data = data_json(p, reg, n_reg), *doc = NULL;
        _cleanup_free_ char *canonical = NULL;

        if (!data)
                return NULL;
        canonical = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
        if (!canonical)
                return NULL;
        doc = json_pack("{s:O, s:I}", "Data", data, "Checksum", (json_int_t) fnv32a(canonical));
        return doc ? json_dumps(doc, JSON_COMPACT) : NULL;
}

static int bad(struct ck_error **ret_error, const char *why) {
        return ck_error_set(ret_error, -EBADMSG, "%s", why);
}

int dm_checkpoint_decode(const char *text, size_t len, struct dm_pod_devices *ret, struct dm_registered **ret_reg,
                         size_t *ret_n_reg, struct ck_error **ret_error) {
        json_auto_t *doc = json_loadb(text, len, 0, NULL);
        json_t *data, *entries, *registered, *e;
        struct dm_pod_devices p = {};
        struct dm_registered *reg = NULL;
        _cleanup_free_ char *canonical = NULL;
        size_t n_reg = 0, i;
        const char *key;
        json_t *v;

        if (!doc || !json_is_object(doc))
                return bad(ret_error, "not JSON");
        data = json_object_get(doc, "Data");
        if (!json_is_object(data) || !json_is_integer(json_object_get(doc, "Checksum")))
                return bad(ret_error, "no Data or Checksum");
        canonical = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
        if (!canonical)
                return -ENOMEM;
        if ((json_int_t) fnv32a(canonical) != json_integer_value(json_object_get(doc, "Checksum")))
                return bad(ret_error, "checkpoint is corrupted");
        entries = json_object_get(data, "PodDeviceEntries");
        registered = json_object_get(data, "RegisteredDevices");
        json_array_foreach(entries, i, e) {
                const char *uid = json_string_at(e, "PodUID", NULL), *cname = json_string_at(e, "ContainerName", NULL),
                           *res = json_string_at(e, "ResourceName", NULL), *b64 = json_string_at(e, "AllocResp", NULL);
                _cleanup_strv_free_ char **ids = NULL;
                _cleanup_free_ int64_t *numa = NULL;
                _cleanup_free_ char *resp = NULL;
                V1beta1__ContainerAllocateResponse *check;
                size_t resp_len = 0, n = 0;
                json_t *l;

                if (isempty(uid) || isempty(cname) || isempty(res) ||
                    base64_decode(b64, DM_CHECKPOINT_MAX, &resp, &resp_len) < 0)
                        goto corrupt;
                check = v1beta1__container_allocate_response__unpack(NULL, resp_len, (const uint8_t *) resp);
                if (!check)
                        goto corrupt;
                v1beta1__container_allocate_response__free_unpacked(check, NULL);
                json_object_foreach(json_object_get(e, "DeviceIDs"), key, l) {
                        int64_t node;
                        size_t j;
                        json_t *id;
                        if (safe_atoi64(key, &node) < 0 || !json_is_array(l))
                                goto corrupt;
                        json_array_foreach(l, j, id) {
                                int64_t *nn;
                                if (!json_is_string(id) || strv_extend(&ids, json_string_value(id)) < 0)
                                        goto corrupt;
                                nn = reallocarray(numa, n + 1, sizeof(*nn));
                                if (!nn)
                                        goto corrupt;
                                numa = nn;
                                numa[n++] = node;
                        }
                }
                if (dm_pod_devices_insert(&p, uid, cname, res, ids, numa, (const uint8_t *) resp, resp_len) < 0)
                        goto corrupt;
        }
        json_object_foreach(registered, key, v) {
                struct dm_registered *nr = reallocarray(reg, n_reg + 1, sizeof(*nr));
                size_t j;
                json_t *id;
                if (!nr)
                        goto corrupt;
                reg = nr;
                reg[n_reg] = (struct dm_registered) { .resource = strdup(key) };
                n_reg++;
                if (!reg[n_reg - 1].resource)
                        goto corrupt;
                json_array_foreach(v, j, id)
                        if (!json_is_string(id) || strv_extend(&reg[n_reg - 1].device_ids, json_string_value(id)) < 0)
                                goto corrupt;
        }
        *ret = p;
        *ret_reg = reg;
        *ret_n_reg = n_reg;
        return 0;
corrupt:
        dm_pod_devices_done(&p);
        dm_registered_free(reg, n_reg);
        return bad(ret_error, "an entry cannot be read");
}
