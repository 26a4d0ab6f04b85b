/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "cm/dra/podclaims.h"

static const char *str_at(const json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

void dra_pod_claims_free(struct dra_pod_claim *claims, size_t n) {
        for (size_t i = 0; claims && i < n; i++) {
                free(claims[i].pod_claim_name);
                free(claims[i].claim_name);
        }
        free(claims);
}

/* status.resourceClaimStatuses[name].resourceClaimName: 1 with *ret (NULL when the entry has none), 0 when no
 * entry */
static int status_claim_name(const json_t *pod, const char *pod_claim, const char **ret) {
        json_t *statuses = json_object_get(json_object_get(pod, "status"), "resourceClaimStatuses"), *s;
        size_t i;

        json_array_foreach(statuses, i, s)
                if (streq_ptr(str_at(s, "name"), pod_claim)) {
                        *ret = str_at(s, "resourceClaimName");
                        return 1;
                }
        return 0;
}

int dra_pod_claims(const json_t *pod, struct dra_pod_claim **ret, size_t *ret_n, struct ck_error **ret_error) {
        json_t *meta = json_object_get(pod, "metadata");
        json_t *list = json_object_get(json_object_get(pod, "spec"), "resourceClaims"), *pc;
        const char *ns = str_at(meta, "namespace") ?: "", *name = str_at(meta, "name") ?: "";
        struct dra_pod_claim *claims = NULL;
        size_t n = 0, i;
        int r;

        if (json_array_size(list) > DRA_MAX_POD_CLAIMS)
                return ck_error_set(ret_error, -E2BIG, "pod \"%s/%s\": more than %d resource claims", ns, name,
                                    DRA_MAX_POD_CLAIMS);
        if (json_array_size(list) > 0) {
                claims = calloc(json_array_size(list), sizeof(*claims));
                if (!claims)
                        return -ENOMEM;
        }
        json_array_foreach(list, i, pc) {
                const char *pc_name = str_at(pc, "name"), *direct = str_at(pc, "resourceClaimName"),
                           *tmpl = str_at(pc, "resourceClaimTemplateName"), *from_status = NULL;
                struct dra_pod_claim *c = &claims[n];

                if (!pc_name) {
                        r = ck_error_set(ret_error, -EINVAL, "pod \"%s/%s\": spec.resourceClaims[%zu]: no name", ns,
                                         name, i);
                        goto fail;
                }
                if (direct) {
                        c->claim_name = strdup(direct);
                        if (!c->claim_name)
                                goto oom;
                } else if (tmpl) {
                        if (status_claim_name(pod, pc_name, &from_status) == 0) {
                                r = ck_error_set(ret_error, -EAGAIN, "pod \"%s/%s\": ResourceClaim not created yet", ns,
                                                 name);
                                goto fail;
                        }
                        if (from_status && !(c->claim_name = strdup(from_status)))
                                goto oom;
                        c->must_check_owner = true;
                } else {
                        r = ck_error_set(ret_error, -EINVAL,
                                         "pod \"%s/%s\", spec.resourceClaim %s: none of the supported fields are set",
                                         ns, name, pc_name);
                        goto fail;
                }
                c->pod_claim_name = strdup(pc_name);
                n++;
                if (!c->pod_claim_name)
                        goto oom;
        }
        *ret = claims;
        *ret_n = n;
        return 0;
oom:
        r = -ENOMEM;
        n++;
fail:
        dra_pod_claims_free(claims, n);
        return r;
}

int dra_container_claims(const json_t *container, struct dra_container_claim **ret, size_t *ret_n) {
        json_t *list = json_object_get(json_object_get(container, "resources"), "claims"), *c;
        struct dra_container_claim *out = NULL;
        size_t n = 0, i;

        if (json_array_size(list) > 0) {
                out = calloc(json_array_size(list), sizeof(*out));
                if (!out)
                        return -ENOMEM;
        }
        json_array_foreach(list, i, c) {
                const char *name = str_at(c, "name"), *request = str_at(c, "request");
                if (!name)
                        continue;
                out[n].name = name;
                out[n].request = isempty(request) ? NULL : request;
                n++;
        }
        *ret = out;
        *ret_n = n;
        return 0;
}

static bool controlled_by(const json_t *claim, const char *pod_uid) {
        json_t *owners = json_object_get(json_object_get(claim, "metadata"), "ownerReferences"), *o;
        size_t i;

        json_array_foreach(owners, i, o)
                if (json_is_true(json_object_get(o, "controller")))
                        return streq_ptr(str_at(o, "uid"), pod_uid);
        return false;
}

static bool reserved_for(const json_t *claim, const char *pod_uid) {
        json_t *list = json_object_get(json_object_get(claim, "status"), "reservedFor"), *ref;
        size_t i;

        json_array_foreach(list, i, ref)
                if (streq_ptr(str_at(ref, "resource"), "pods") && streq_ptr(str_at(ref, "uid"), pod_uid) &&
                    isempty(str_at(ref, "apiGroup")))
                        return true;
        return false;
}

int dra_claim_check(const json_t *claim, const char *pod_namespace, const char *pod_name, const char *pod_uid,
                    bool must_check_owner, char ***ret_drivers, struct ck_error **ret_error) {
        json_t *meta = json_object_get(claim, "metadata");
        const char *ns = str_at(meta, "namespace") ?: "", *name = str_at(meta, "name") ?: "",
                   *uid = str_at(meta, "uid") ?: "";
        json_t *alloc = json_object_get(json_object_get(claim, "status"), "allocation"), *res;
        _cleanup_strv_free_ char **drivers = NULL;
        size_t i;

        if (must_check_owner) {
                if (!streq(ns, pod_namespace))
                        return ck_error_set(ret_error, -EPERM,
                                            "ResourceClaim %s/%s is not in the same namespace as Pod %s/%s", ns, name,
                                            pod_namespace, pod_name);
                if (!controlled_by(claim, pod_uid))
                        return ck_error_set(ret_error, -EPERM,
                                            "ResourceClaim %s/%s was not created for Pod %s/%s (Pod is not owner)", ns,
                                            name, pod_namespace, pod_name);
        }
        if (!reserved_for(claim, pod_uid))
                return ck_error_set(ret_error, -EAGAIN, "pod %s (%s) is not allowed to use ResourceClaim %s (%s)",
                                    pod_name, pod_uid, name, uid);
        if (!json_is_object(alloc))
                return ck_error_set(ret_error, -EAGAIN, "ResourceClaim %s: not allocated", name);
        json_array_foreach(json_object_get(json_object_get(alloc, "devices"), "results"), i, res) {
                const char *driver = str_at(res, "driver");
                if (isempty(driver) || strv_contains(drivers, driver))
                        continue;
                if (strv_extend(&drivers, driver) < 0)
                        return -ENOMEM;
        }
        *ret_drivers = TAKE_PTR(drivers);
        return 0;
}
