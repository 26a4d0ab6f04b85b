/* SPDX-License-Identifier: Apache-2.0 */
/* The desired state's populator (desired_state_of_world_populator.go): a pod's volumes resolved to volumes, a
 * PersistentVolumeClaim through the API server (GET the claim, then its PersistentVolume), with upstream's errors
 * ("error processing PVC ns/name: PVC is not bound"). A volume that fails to resolve is tried again at the pod's
 * next sync (ReprocessPod). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apis/pod_volumes.h"
#include "basic/error.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "csi/csi.h"
#include "objects/refs.h"
#include "volumemanager/volumemanager-internal.h"

void volmgr_pod_vol_done(struct vm_pod_vol *pv) {
        kube_request_cancel(pv->req);
        free(pv->name);
        free(pv->claim_name);
        free(pv->unique_name);
        free(pv->error);
        persistent_volume_claim_done(&pv->pvc);
}

static char *with_uid(const char *plugin, const char *uid, const char *name) {
        char *p = NULL;
        if (asprintf(&p, "%s/%s-%s", plugin, uid, name) < 0)
                return NULL;
        return p;
}

static int copy_secret_ref(const struct secret_ref *src, struct secret_ref *ret) {
        ret->namespace_ = strdup_or_null(src->namespace_);
        ret->name = strdup_or_null(src->name);
        return (src->namespace_ && !ret->namespace_) || (src->name && !ret->name) ? -ENOMEM : 0;
}

/* unique name and spec of an inline source or a PV */
static int volmgr_spec_from_pv(const struct persistent_volume *pv, struct vm_spec *ret, char **ret_unique) {
        struct vm_spec s = {};
        _cleanup_free_ char *unique = NULL;
        int r = 0;

        s.spec_name = strdup(pv->name);
        s.access_mode = strdup(pv->access_modes && pv->access_modes[0] ? pv->access_modes[0] : "ReadWriteOnce");
        s.fs_type = strdup_or_null(pv->fs_type);
        s.path = strdup_or_null(pv->path);
        if (!s.spec_name || !s.access_mode || (pv->fs_type && !s.fs_type) || (pv->path && !s.path))
                r = -ENOMEM;
        if (r >= 0 && pv->mount_options && strv_copy(pv->mount_options, &s.mount_options) < 0)
                r = -ENOMEM;
        switch (pv->source) {
        case PV_SOURCE_CSI:
                s.kind = VM_KIND_CSI;
                s.driver = strdup(pv->driver);
                s.handle = strdup(pv->volume_handle);
                if (!s.driver || !s.handle || strmap_copy(&pv->attributes, &s.attributes) < 0 ||
                    copy_secret_ref(&pv->stage_secret, &s.stage_secret) < 0 ||
                    copy_secret_ref(&pv->publish_secret, &s.publish_secret) < 0)
                        r = -ENOMEM;
                else
                        unique = csi_unique_volume_name(pv->driver, pv->volume_handle);
                break;
        case PV_SOURCE_LOCAL:
                s.kind = VM_KIND_LOCAL;
                if (asprintf(&unique, "kubernetes.io/local-volume/%s", pv->name) < 0)
                        unique = NULL;
                break;
        case PV_SOURCE_HOST_PATH:
                s.kind = VM_KIND_HOST_PATH;
                s.host_path_type = strdup_or_null(pv->host_path_type);
                break;
        case PV_SOURCE_NFS:
                s.kind = VM_KIND_NFS;
                s.server = strdup_or_null(pv->server);
                s.source_read_only = pv->read_only;
                break;
        default:
                volmgr_spec_done(&s);
                return -EOPNOTSUPP;
        }
        if (r < 0) {
                volmgr_spec_done(&s);
                return r;
        }
        /* the PV itself, for the local volume's node affinity */
        s.pv = calloc(1, sizeof(*s.pv));
        if (!s.pv) {
                volmgr_spec_done(&s);
                return -ENOMEM;
        }
        *ret = s;
        *ret_unique = TAKE_PTR(unique); /* NULL for per-pod volumes: the caller names them */
        return 0;
}

static int volmgr_spec_from_inline(const struct vm_pod *p, const struct volume *v, struct vm_spec *ret,
                                   char **ret_unique) {
        struct vm_spec s = {};
        char *unique = NULL;
        int r = 0;

        s.spec_name = strdup(v->name);
        if (!s.spec_name)
                return -ENOMEM;
        if (v->type == VOLUME_CSI) {
                s.kind = VM_KIND_CSI_INLINE;
                s.driver = strdup(strempty(v->csi_driver));
                s.handle = csi_ephemeral_volume_handle(p->uid, v->name);
                s.fs_type = strdup_or_null(v->csi_fs_type);
                s.access_mode = strdup("ReadWriteOnce");
                unique = with_uid(CSI_PLUGIN_NAME, p->uid, v->name);
                if (!s.driver || !s.handle || !s.access_mode || (v->csi_fs_type && !s.fs_type) ||
                    strmap_copy(&v->csi_attributes, &s.attributes) < 0)
                        r = -ENOMEM;
                if (r >= 0 && v->csi_publish_secret) {
                        s.publish_secret.namespace_ = strdup(p->pod->namespace_);
                        s.publish_secret.name = strdup(v->csi_publish_secret);
                        if (!s.publish_secret.namespace_ || !s.publish_secret.name)
                                r = -ENOMEM;
                }
        } else {
                s.kind = VM_KIND_NFS;
                s.server = strdup(strempty(v->nfs_server));
                s.path = strdup(strempty(v->nfs_path));
                s.source_read_only = v->read_only;
                unique = with_uid("kubernetes.io/nfs", p->uid, v->name);
                if (!s.server || !s.path)
                        r = -ENOMEM;
        }
        if (r >= 0 && !unique)
                r = -ENOMEM;
        if (r < 0) {
                free(unique);
                volmgr_spec_done(&s);
                return r;
        }
        *ret = s;
        *ret_unique = unique;
        return 0;
}

/* the pod volume resolved: it joins its volume in the desired state */
static void claim(struct vm_pod *p, struct vm_pod_vol *pv, struct vm_spec *spec, const char *unique) {
        struct volmgr *vm = p->vm;
        const struct pod *pod = p->pod;
        const struct pod_security_context *sc = pod->spec.security_context;
        struct vm_vol *v = volmgr_vol_get(vm, unique, true);
        struct vm_mount *m = v ? volmgr_mount_get(v, p->uid, true) : NULL;

        if (!m) {
                volmgr_spec_done(spec);
                (void) free_and_strdup(&pv->error, "out of memory");
                return;
        }
        if (!v->have_spec || v->spec.partial) {
                volmgr_spec_done(&v->spec);
                v->spec = *spec;
                v->have_spec = true;
        } else
                volmgr_spec_done(spec);
        *spec = (struct vm_spec) {};
        if (free_and_strdup(&pv->unique_name, unique) < 0 || free_and_strdup(&m->outer_name, pv->name) < 0 ||
            free_and_strdup(&m->spec_name, v->spec.spec_name) < 0 || free_and_strdup(&m->pod_name, pod->name) < 0 ||
            free_and_strdup(&m->pod_ns, pod->namespace_) < 0 ||
            free_and_strdup(&m->service_account, objects_refs_service_account(pod->raw)) < 0 ||
            free_and_strdup(&m->fs_group_policy, sc ? sc->fs_group_change_policy : NULL) < 0) {
                (void) free_and_strdup(&pv->error, "out of memory");
                return;
        }
        if (pv->pvc.name &&
            (free_and_strdup(&m->pvc_ns, pv->pvc.namespace_) < 0 || free_and_strdup(&m->pvc_name, pv->pvc.name) < 0)) {
                (void) free_and_strdup(&pv->error, "out of memory");
                return;
        }
        m->has_fs_group = sc && sc->has_fs_group;
        m->fs_group = sc ? sc->fs_group : 0;
        /* volumeRequiresFSResize: the PV grew, the claim's status has not caught up */
        m->expand_to = 0;
        if (v->spec.kind == VM_KIND_CSI && v->spec.pv && v->spec.pv->capacity.str && pv->pvc.capacity.str &&
            v->spec.pv->capacity.value > pv->pvc.capacity.value) {
                m->expand_to = v->spec.pv->capacity.value;
                if (free_and_strdup(&m->expand_to_str, v->spec.pv->capacity.str) < 0)
                        m->expand_to = 0;
        }
        m->read_only = pv->read_only;
        m->desired = true;
        pv->error = mfree(pv->error);
        log_v(4, "Added volume \"%s\" (volSpec=\"%s\") for pod \"%s\" to desired state.", pv->name, m->spec_name,
              p->uid);
        volmgr_kick(vm);
}

static void resolve_failed(struct vm_pod *p, struct vm_pod_vol *pv, const char *fmt, ...) _printf_(3, 4);
static void resolve_failed(struct vm_pod *p, struct vm_pod_vol *pv, const char *fmt, ...) {
        va_list ap;
        char *msg = NULL;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        free(pv->error);
        pv->error = r < 0 ? strdup("out of memory") : msg;
        log_error("Error processing volume \"%s\" for pod \"%s/%s\": %s", pv->name, p->pod->namespace_, p->pod->name,
                  strna(pv->error));
        pv->resolving = false;
        volmgr_pod_check_ready(p);
}

static void on_pv(const struct kube_response *resp, void *userdata);

static void on_pvc(const struct kube_response *resp, void *userdata) {
        struct vm_pod_vol *pv = userdata;
        struct vm_pod *p = NULL;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        _cleanup_free_ char *path = NULL, *name = NULL;
        const char *ns;

        pv->req = NULL;
        p = pv->pod;
        ns = p->pod->namespace_;
        persistent_volume_claim_done(&pv->pvc);
        if (resp->r < 0 || resp->status != 200) {
                resolve_failed(p, pv, "error processing PVC %s/%s: failed to fetch PVC from API server: %s", ns,
                               pv->claim_name, resp->error);
                return;
        }
        if (persistent_volume_claim_decode(resp->body, &pv->pvc, &why) < 0) {
                resolve_failed(p, pv, "error processing PVC %s/%s: %s", ns, pv->claim_name, ck_error_message(why));
                return;
        }
        if (pv->pvc.deleting) {
                resolve_failed(p, pv, "error processing PVC %s/%s: PVC is being deleted", ns, pv->claim_name);
                return;
        }
        if (!streq_ptr(pv->pvc.phase, "Bound")) {
                resolve_failed(p, pv, "error processing PVC %s/%s: PVC is not bound", ns, pv->claim_name);
                return;
        }
        if (isempty(pv->pvc.volume_name)) {
                resolve_failed(p, pv, "error processing PVC %s/%s: PVC has empty pvc.Spec.VolumeName", ns,
                               pv->claim_name);
                return;
        }
        if (pv->type == VOLUME_EPHEMERAL && !streq_ptr(pv->pvc.controller_uid, p->uid)) {
                resolve_failed(p, pv, "error processing PVC %s/%s: not the ephemeral PVC for the pod", ns,
                               pv->claim_name);
                return;
        }
        name = kube_escape(pv->pvc.volume_name);
        if (!name || asprintf(&path, "/api/v1/persistentvolumes/%s", name) < 0) {
                resolve_failed(p, pv, "out of memory");
                return;
        }
        if (kube_request(p->vm->client, "GET", path, NULL, NULL, 0, on_pv, pv, &pv->req) < 0) {
                pv->req = NULL;
                resolve_failed(p, pv, "out of memory");
        }
}

static void on_pv(const struct kube_response *resp, void *userdata) {
        struct vm_pod_vol *pv = userdata;
        struct vm_pod *p = pv->pod;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        _cleanup_free_ char *unique = NULL;
        struct persistent_volume vol = {};
        struct vm_spec spec = {};
        const char *ns = p->pod->namespace_;
        int r;

        pv->req = NULL;
        if (resp->r < 0 || resp->status != 200) {
                resolve_failed(p, pv, "error processing PVC %s/%s: failed to fetch PV %s from API server: %s", ns,
                               pv->claim_name, pv->pvc.volume_name, resp->error);
                return;
        }
        if (persistent_volume_decode(resp->body, &vol, &why) < 0) {
                resolve_failed(p, pv, "error processing PVC %s/%s: PV %s: %s", ns, pv->claim_name, pv->pvc.volume_name,
                               ck_error_message(why));
                return;
        }
        if (!vol.claim_uid) {
                resolve_failed(p, pv,
                               "error processing PVC %s/%s: found PV object %s but it has a nil pv.Spec.ClaimRef "
                               "indicating it is not yet bound to the claim",
                               ns, pv->claim_name, vol.name);
                persistent_volume_done(&vol);
                return;
        }
        if (!streq_ptr(vol.claim_uid, pv->pvc.uid)) {
                resolve_failed(p, pv,
                               "error processing PVC %s/%s: found PV object %s but its pv.Spec.ClaimRef.UID %s does "
                               "not point to claim.UID %s",
                               ns, pv->claim_name, vol.name, vol.claim_uid, strempty(pv->pvc.uid));
                persistent_volume_done(&vol);
                return;
        }
        if (vol.volume_mode && !streq(vol.volume_mode, "Filesystem")) {
                resolve_failed(p, pv, "volume %s has volumeMode %s, but is specified in volumeMounts", pv->name,
                               vol.volume_mode);
                persistent_volume_done(&vol);
                return;
        }
        r = volmgr_spec_from_pv(&vol, &spec, &unique);
        if (r == -EOPNOTSUPP) {
                resolve_failed(p, pv,
                               "failed to get Plugin from volumeSpec for volume \"%s\" err=no volume plugin matched",
                               vol.name);
                persistent_volume_done(&vol);
                return;
        }
        if (r < 0) {
                resolve_failed(p, pv, "out of memory");
                persistent_volume_done(&vol);
                return;
        }
        *spec.pv = vol; /* owned by the spec now */
        if (!unique)    /* hostPath and nfs PVs are per pod */
                unique = with_uid(spec.kind == VM_KIND_NFS ? "kubernetes.io/nfs" : "kubernetes.io/host-path", p->uid,
                                  spec.spec_name);
        if (!unique) {
                volmgr_spec_done(&spec);
                resolve_failed(p, pv, "out of memory");
                return;
        }
        pv->resolving = false;
        claim(p, pv, &spec, unique);
        volmgr_pod_check_ready(p);
}

static void resolve_pvc(struct vm_pod *p, struct vm_pod_vol *pv) {
        _cleanup_free_ char *ns = NULL, *name = NULL, *path = NULL;

        if (!p->vm->client) {
                resolve_failed(p, pv,
                               "error processing PVC %s/%s: failed to fetch PVC from API server: no API server "
                               "(standalone kubelet)",
                               p->pod->namespace_, pv->claim_name);
                return;
        }
        ns = kube_escape(p->pod->namespace_);
        name = kube_escape(pv->claim_name);
        if (!ns || !name || asprintf(&path, "/api/v1/namespaces/%s/persistentvolumeclaims/%s", ns, name) < 0) {
                resolve_failed(p, pv, "out of memory");
                return;
        }
        log_v(5, "Found PVC, ClaimName: \"%s/%s\"", p->pod->namespace_, pv->claim_name);
        pv->resolving = true;
        if (kube_request(p->vm->client, "GET", path, NULL, NULL, 0, on_pvc, pv, &pv->req) < 0) {
                pv->req = NULL;
                resolve_failed(p, pv, "out of memory");
        }
}

void volmgr_pod_resolve(struct vm_pod *p) {
        for (size_t i = 0; i < p->n_vols; i++) {
                struct vm_pod_vol *pv = &p->vols[i];
                const struct volume *src;

                if (pv->resolving || (pv->unique_name && !pv->error))
                        continue;
                if (pv->type == VOLUME_PVC || pv->type == VOLUME_EPHEMERAL) {
                        resolve_pvc(p, pv);
                        continue;
                }
                src = pod_volume_find(p->pod, pv->name);
                if (src) {
                        _cleanup_free_ char *unique = NULL;
                        struct vm_spec spec = {};
                        if (volmgr_spec_from_inline(p, src, &spec, &unique) < 0) {
                                resolve_failed(p, pv, "out of memory");
                                continue;
                        }
                        claim(p, pv, &spec, unique);
                }
        }
        volmgr_pod_check_ready(p);
}
