/* SPDX-License-Identifier: Apache-2.0 */
#include <assert.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "basic/error.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "cm/dra/claims.h"

#define DRA_CHECKPOINT_KIND "DRACheckpoint"
#define DRA_CHECKPOINT_API_VERSION "checkpoint.dra.kubelet.k8s.io/v1"
#define DRA_MAX_CLAIMS 65536

#define STRV_FOREACH(s, l) for (char *const *s = (l); s && *s; s++)

struct dra_claims {
        struct dra_claim **claims;
        size_t n;
};

static void device_done(struct dra_device *d) {
        free(d->driver);
        free(d->pool);
        free(d->device);
        free(d->share_id);
        strv_free(d->request_names);
        strv_free(d->cdi_ids);
        *d = (struct dra_device) { 0 };
}

static struct dra_claim *claim_free(struct dra_claim *claim) {
        if (!claim)
                return NULL;
        free(claim->uid);
        free(claim->name);
        free(claim->namespace);
        strv_free(claim->pod_uids);
        strv_free(claim->drivers);
        for (size_t i = 0; i < claim->n_devices; i++)
                device_done(&claim->devices[i]);
        free(claim->devices);
        free(claim);
        return NULL;
}

int dra_claims_new(struct dra_claims **ret) {
        struct dra_claims *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

struct dra_claims *dra_claims_free(struct dra_claims *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n; i++)
                claim_free(c->claims[i]);
        free(c->claims);
        free(c);
        return NULL;
}

size_t dra_claims_count(const struct dra_claims *c) {
        return c->n;
}

struct dra_claim *dra_claims_at(struct dra_claims *c, size_t i) {
        return i < c->n ? c->claims[i] : NULL;
}

struct dra_claim *dra_claims_find(struct dra_claims *c, const char *claim_uid) {
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->claims[i]->uid, claim_uid))
                        return c->claims[i];
        return NULL;
}

static int claims_append(struct dra_claims *c, struct dra_claim *claim) {
        struct dra_claim **n;

        if (c->n >= DRA_MAX_CLAIMS)
                return -E2BIG;
        n = realloc(c->claims, (c->n + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        c->claims = n;
        c->claims[c->n++] = claim;
        return 0;
}

static struct dra_claim *claim_new(const char *uid, const char *name, const char *namespace) {
        struct dra_claim *claim = calloc(1, sizeof(*claim));
        if (!claim)
                return NULL;
        claim->uid = strdup(uid);
        claim->name = strdup(name);
        claim->namespace = strdup(namespace);
        if (!claim->uid || !claim->name || !claim->namespace)
                return claim_free(claim);
        return claim;
}

bool dra_claim_has_pod(const struct dra_claim *claim, const char *pod_uid) {
        return strv_contains(claim->pod_uids, pod_uid);
}

int dra_claims_add_pod(struct dra_claims *c, const char *claim_uid, const char *name, const char *namespace,
                       const char *pod_uid, struct dra_claim **ret_claim) {
        struct dra_claim *claim = dra_claims_find(c, claim_uid);
        int r;

        assert(claim_uid && name && namespace && pod_uid);
        if (claim) {
                if (!streq(claim->name, name) || !streq(claim->namespace, namespace))
                        return -EEXIST;
        } else {
                claim = claim_new(claim_uid, name, namespace);
                if (!claim)
                        return -ENOMEM;
                r = claims_append(c, claim);
                if (r < 0) {
                        claim_free(claim);
                        return r;
                }
        }
        if (!dra_claim_has_pod(claim, pod_uid)) {
                r = strv_extend(&claim->pod_uids, pod_uid);
                if (r < 0)
                        return r;
        }
        /* prepare racing unprepare: prepared again once the unprepare is over */
        if (claim->state == DRA_CLAIM_UNPREPARING)
                claim->prepare_again = true;
        if (ret_claim)
                *ret_claim = claim;
        return 0;
}

static void claims_remove_at(struct dra_claims *c, size_t i) {
        claim_free(c->claims[i]);
        memmove(c->claims + i, c->claims + i + 1, (c->n - i - 1) * sizeof(*c->claims));
        c->n--;
}

void dra_claims_remove(struct dra_claims *c, const char *claim_uid) {
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->claims[i]->uid, claim_uid)) {
                        claims_remove_at(c, i);
                        return;
                }
}

int dra_claims_remove_pod(struct dra_claims *c, const char *pod_uid, char ***ret_unused) {
        _cleanup_(strv_freep) char **unused = NULL;
        int r;

        for (size_t i = 0; i < c->n;) {
                struct dra_claim *claim = c->claims[i];
                size_t j;

                for (j = 0; claim->pod_uids && claim->pod_uids[j]; j++)
                        if (streq(claim->pod_uids[j], pod_uid))
                                break;
                if (!claim->pod_uids || !claim->pod_uids[j]) {
                        i++;
                        continue;
                }
                strv_remove_at(claim->pod_uids, j);
                if (strv_length(claim->pod_uids) > 0) {
                        i++;
                        continue;
                }
                if (claim->state == DRA_CLAIM_NEW) {
                        /* never prepared: nothing to undo */
                        claims_remove_at(c, i);
                        continue;
                }
                if (claim->state == DRA_CLAIM_UNPREPARING)
                        claim->prepare_again = false;
                r = strv_extend(&unused, claim->uid);
                if (r < 0)
                        return r;
                i++;
        }
        if (ret_unused)
                *ret_unused = TAKE_PTR(unused);
        return 0;
}

static int device_copy(const struct dra_device *from, const char *driver, struct dra_device *to) {
        *to = (struct dra_device) { 0 };
        if (!(to->driver = strdup(driver)) || !(to->pool = strdup(from->pool ?: "")) ||
            !(to->device = strdup(from->device ?: "")) || (from->share_id && !(to->share_id = strdup(from->share_id))))
                goto fail;
        if (from->request_names && strv_copy(from->request_names, &to->request_names) < 0)
                goto fail;
        if (from->cdi_ids && strv_copy(from->cdi_ids, &to->cdi_ids) < 0)
                goto fail;
        return 0;
fail:
        device_done(to);
        return -ENOMEM;
}

int dra_claim_set_driver_devices(struct dra_claim *claim, const char *driver, const struct dra_device *devices,
                                 size_t n) {
        struct dra_device *nd;
        size_t kept = 0, total;
        int r;

        for (size_t i = 0; i < claim->n_devices; i++)
                if (!streq(claim->devices[i].driver, driver))
                        kept++;
        total = kept + n;
        nd = calloc(total ?: 1, sizeof(*nd));
        if (!nd)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                r = device_copy(&devices[i], driver, &nd[kept + i]);
                if (r < 0) {
                        for (size_t j = 0; j < i; j++)
                                device_done(&nd[kept + j]);
                        free(nd);
                        return r;
                }
        }
        if (!strv_contains(claim->drivers, driver)) {
                r = strv_extend(&claim->drivers, driver);
                if (r < 0) {
                        for (size_t j = 0; j < n; j++)
                                device_done(&nd[kept + j]);
                        free(nd);
                        return r;
                }
        }
        /* past this point nothing fails: move the other drivers' devices, drop this driver's old ones */
        kept = 0;
        for (size_t i = 0; i < claim->n_devices; i++) {
                if (streq(claim->devices[i].driver, driver))
                        device_done(&claim->devices[i]);
                else
                        nd[kept++] = claim->devices[i];
        }
        free(claim->devices);
        claim->devices = nd;
        claim->n_devices = total;
        return 0;
}

int dra_claim_unprepare_begin(struct dra_claim *claim) {
        if (strv_length(claim->pod_uids) > 0 || claim->state == DRA_CLAIM_PREPARING ||
            claim->state == DRA_CLAIM_UNPREPARING)
                return -EBUSY;
        claim->state = DRA_CLAIM_UNPREPARING;
        claim->prepare_again = false;
        return 0;
}

bool dra_claim_unprepare_end(struct dra_claim *claim, bool ok) {
        assert(claim->state == DRA_CLAIM_UNPREPARING);
        if (!ok) {
                claim->state = DRA_CLAIM_PREPARED;
                claim->prepare_again = false;
                return false;
        }
        if (claim->prepare_again || strv_length(claim->pod_uids) > 0) {
                /* a pod came meanwhile: the devices are gone, prepare anew */
                for (size_t i = 0; i < claim->n_devices; i++)
                        device_done(&claim->devices[i]);
                claim->n_devices = 0;
                claim->state = DRA_CLAIM_NEW;
                claim->prepare_again = false;
                return false;
        }
        return true;
}

static bool request_matches(char *const *names, const char *request) {
        size_t n = strlen(request);

        STRV_FOREACH(s, names)
        if (streq(*s, request) || (strncmp(*s, request, n) == 0 && (*s)[n] == '/'))
                return true;
        return false;
}

int dra_claim_cdi_ids(const struct dra_claim *claim, const char *request, char ***ids) {
        for (size_t i = 0; i < claim->n_devices; i++) {
                const struct dra_device *d = &claim->devices[i];
                if (request && *request && !request_matches(d->request_names, request))
                        continue;
                STRV_FOREACH(id, d->cdi_ids) {
                        if (strv_contains(*ids, *id))
                                continue;
                        int r = strv_extend(ids, *id);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* ---- checkpoint ---- */

static json_t *strv_to_json(char *const *l) {
        json_t *a = json_array();
        STRV_FOREACH(s, l)
        if (!a || json_array_append_new(a, json_string(*s)) < 0) {
                json_decref(a);
                return NULL;
        }
        return a;
}

static json_t *claim_to_json(const struct dra_claim *claim) {
        json_t *pods = json_object(), *drivers = json_object();
        json_t *o = NULL;

        if (!pods || !drivers)
                goto fail;
        STRV_FOREACH(p, claim->pod_uids)
        if (json_object_set_new(pods, *p, json_object()) < 0)
                goto fail;
        STRV_FOREACH(drv, claim->drivers) {
                json_t *devs = json_array();
                if (!devs || json_object_set_new(drivers, *drv, json_pack("{s:o}", "Devices", devs)) < 0)
                        goto fail;
                for (size_t i = 0; i < claim->n_devices; i++) {
                        const struct dra_device *d = &claim->devices[i];
                        json_t *jd;
                        if (!streq(d->driver, *drv))
                                continue;
                        jd = json_pack("{s:s, s:s, s:o, s:o}", "PoolName", d->pool, "DeviceName", d->device,
                                       "RequestNames", strv_to_json(d->request_names), "CDIDeviceIDs",
                                       strv_to_json(d->cdi_ids));
                        if (!jd)
                                goto fail;
                        if (d->share_id && json_object_set_new(jd, "ShareID", json_string(d->share_id)) < 0) {
                                json_decref(jd);
                                goto fail;
                        }
                        if (json_array_append_new(devs, jd) < 0)
                                goto fail;
                }
        }
        o = json_pack("{s:s, s:s, s:s, s:o, s:o}", "ClaimUID", claim->uid, "ClaimName", claim->name, "Namespace",
                      claim->namespace, "PodUIDs", pods, "DriverState", drivers);
        return o;
fail:
        json_decref(pods);
        json_decref(drivers);
        return NULL;
}

int dra_claims_checkpoint_encode(const struct dra_claims *c, char **ret_text) {
        json_t *list = json_array(), *data, *doc;
        _cleanup_free_ char *data_text = NULL;
        char *text;

        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < c->n; i++) {
                const struct dra_claim *claim = c->claims[i];
                if (claim->state != DRA_CLAIM_PREPARED && claim->state != DRA_CLAIM_UNPREPARING)
                        continue;
                if (json_array_append_new(list, claim_to_json(claim)) < 0) {
                        json_decref(list);
                        return -ENOMEM;
                }
        }
        data = json_pack("{s:s, s:s, s:o}", "kind", DRA_CHECKPOINT_KIND, "apiVersion", DRA_CHECKPOINT_API_VERSION,
                         "ClaimInfoStateList", list);
        if (!data)
                return -ENOMEM;
        data_text = json_dumps(data, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(data);
        if (!data_text)
                return -ENOMEM;
        doc = json_pack("{s:s, s:I}", "Data", data_text, "Checksum",
                        (json_int_t) crc32(0L, (const Bytef *) data_text, (uInt) strlen(data_text)));
        if (!doc)
                return -ENOMEM;
        text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(doc);
        if (!text)
                return -ENOMEM;
        *ret_text = text;
        return 0;
}

static int json_to_strv(const json_t *a, char ***ret) {
        _cleanup_(strv_freep) char **l = NULL;
        size_t i;
        json_t *v;

        if (!a || json_is_null(a)) {
                *ret = NULL;
                return 0;
        }
        if (!json_is_array(a))
                return -EINVAL;
        json_array_foreach(a, i, v) {
                if (!json_is_string(v))
                        return -EINVAL;
                if (strv_extend(&l, json_string_value(v)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static int claim_from_json(json_t *o, struct dra_claim **ret, struct ck_error **ret_error) {
        const char *uid = json_string_value(json_object_get(o, "ClaimUID"));
        const char *name = json_string_value(json_object_get(o, "ClaimName"));
        const char *ns = json_string_value(json_object_get(o, "Namespace"));
        json_t *pods = json_object_get(o, "PodUIDs"), *drivers = json_object_get(o, "DriverState"), *v;
        struct dra_claim *claim;
        const char *key;
        int r;

        if (!uid || !name || !ns)
                return ck_error_set(ret_error, -EINVAL, "a claim without ClaimUID, ClaimName or Namespace");
        claim = claim_new(uid, name, ns);
        if (!claim)
                return -ENOMEM;
        claim->state = DRA_CLAIM_PREPARED;
        if (json_is_object(pods))
                json_object_foreach(pods, key, v)
                        if (strv_extend(&claim->pod_uids, key) < 0)
                                goto oom;
        if (json_is_object(drivers))
                json_object_foreach(drivers, key, v) {
                        json_t *devs = json_object_get(v, "Devices"), *jd;
                        _cleanup_free_ struct dra_device *list = NULL;
                        size_t n = 0, i;

                        if (devs && !json_is_array(devs) && !json_is_null(devs)) {
                                claim_free(claim);
                                return ck_error_set(ret_error, -EINVAL, "claim %s: driver %s: Devices is not a list",
                                                    uid, key);
                        }
                        list = calloc(json_array_size(devs) ?: 1, sizeof(*list));
                        if (!list)
                                goto oom;
                        r = 0;
                        json_array_foreach(devs, i, jd) {
                                struct dra_device *d = &list[n];
                                d->pool = (char *) json_string_value(json_object_get(jd, "PoolName"));
                                d->device = (char *) json_string_value(json_object_get(jd, "DeviceName"));
                                d->share_id = (char *) json_string_value(json_object_get(jd, "ShareID"));
                                if (json_to_strv(json_object_get(jd, "RequestNames"), &d->request_names) < 0 ||
                                    json_to_strv(json_object_get(jd, "CDIDeviceIDs"), &d->cdi_ids) < 0)
                                        r = -EINVAL;
                                n++;
                                if (r < 0)
                                        break;
                        }
                        if (r == 0)
                                r = dra_claim_set_driver_devices(claim, key, list, n);
                        for (i = 0; i < n; i++) {
                                strv_free(list[i].request_names);
                                strv_free(list[i].cdi_ids);
                        }
                        if (r < 0) {
                                claim_free(claim);
                                return ck_error_set(ret_error, r, "claim %s: driver %s: bad devices", uid, key);
                        }
                }
        *ret = claim;
        return 0;
oom:
        claim_free(claim);
        return -ENOMEM;
}

int dra_claims_checkpoint_decode(const char *text, struct dra_claims **ret, struct ck_error **ret_error) {
        json_t *doc, *data = NULL, *list, *o;
        struct dra_claims *c = NULL;
        const char *data_text;
        json_error_t err;
        size_t i;
        int r;

        doc = json_loads(text, 0, &err);
        if (!doc)
                return ck_error_set(ret_error, -EINVAL, "not JSON: %s", err.text);
        data_text = json_string_value(json_object_get(doc, "Data"));
        if (!data_text || !json_is_integer(json_object_get(doc, "Checksum"))) {
                r = ck_error_set(ret_error, -EINVAL, "no Data or Checksum");
                goto out;
        }
        if ((json_int_t) crc32(0L, (const Bytef *) data_text, (uInt) strlen(data_text)) !=
            json_integer_value(json_object_get(doc, "Checksum"))) {
                r = ck_error_set(ret_error, -EINVAL, "checkpoint is corrupted: checksum mismatch");
                goto out;
        }
        data = json_loads(data_text, 0, &err);
        if (!data) {
                r = ck_error_set(ret_error, -EINVAL, "Data is not JSON: %s", err.text);
                goto out;
        }
        if (!streq_ptr(json_string_value(json_object_get(data, "kind")), DRA_CHECKPOINT_KIND) ||
            !streq_ptr(json_string_value(json_object_get(data, "apiVersion")), DRA_CHECKPOINT_API_VERSION)) {
                r = ck_error_set(ret_error, -EINVAL, "not a %s of %s", DRA_CHECKPOINT_KIND, DRA_CHECKPOINT_API_VERSION);
                goto out;
        }
        r = dra_claims_new(&c);
        if (r < 0)
                goto out;
        list = json_object_get(data, "ClaimInfoStateList");
        json_array_foreach(list, i, o) {
                struct dra_claim *claim = NULL;
                r = claim_from_json(o, &claim, ret_error);
                if (r < 0)
                        goto out;
                r = claims_append(c, claim);
                if (r < 0) {
                        claim_free(claim);
                        goto out;
                }
        }
        *ret = TAKE_PTR(c);
        r = 0;
out:
        dra_claims_free(c);
        json_decref(data);
        json_decref(doc);
        return r;
}
