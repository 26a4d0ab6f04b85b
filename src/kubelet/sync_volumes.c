/* SPDX-License-Identifier: Apache-2.0 */
/* The objects and volumes phases of a pod's pass:
 *  - objects, before the sandbox: the ConfigMaps, Secrets and service account tokens the pod refers to are
 *    fetched (or found in the managers' caches); a volume's object that cannot be had blocks the pod
 *    (FailedMount), as upstream's WaitForAttachAndMount does; the imagePullSecrets become the pull keyring;
 *  - mount, before the sandbox: the volume manager's volumes (persistentVolumeClaim, ephemeral, csi, nfs) are
 *    attached and mounted (WaitForAttachAndMount); the pass waits for them, without blocking the loop, and gives
 *    way when another pass is requested meanwhile;
 *  - volumes, once the sandbox runs (its IP is in /etc/hosts): the pod's volume directories and hosts file,
 *    set up idempotently on every pass, so that a changed object reaches the volumes, and their fsGroup
 *    ownership on the volume manager's worker threads. */

#include "kubelet/pod_sync.h"

#include <string.h>

#include "basic/error.h"
#include "basic/log.h"
#include "objects/manager.h"
#include "apis/pod_volumes.h"
#include "config/config.h"
#include "volumes/reaper.h"
#include "basic/strv.h"
#include "volumes/volumes.h"
#include "volumemanager/volumemanager.h"

/* ---------------------------------------------------------------- objects */

/* A volume's ConfigMap or Secret that cannot be had blocks the pod before its sandbox. (Env references do not:
 * the container's environment builder reports them for that container only, CreateContainerConfigError, and
 * the other containers start.) Returns true when it blocks. */
static bool volume_ref_blocks(struct pod_sync *s, const struct obj_ref *ref) {
        _cleanup_free_ char *nf = NULL;
        const char *msg = NULL;
        json_t *obj;
        int r = objects_pod_lookup(s->objects, ref->kind, s->pod->namespace_, ref->name, &obj, &msg);

        if (r >= 0 || (r == -ENOENT && ref->optional))
                return false;
        if (!msg)
                msg = nf = objects_not_found_message(ref->kind, ref->name);
        if (!msg)
                msg = strerror(-r);
        log_error("pod %s: MountVolume.SetUp failed for volume \"%s\" : %s", kubelet_sync_pod_desc(s),
                  strna(ref->where), msg);
        kubelet_sync_event(s, NULL, "Warning", "FailedMount", "MountVolume.SetUp failed for volume \"%s\" : %s",
                           strna(ref->where), msg);
        return true;
}

static bool token_ref_blocks(struct pod_sync *s, const struct token_ref *t) {
        const char *msg = NULL;
        json_t *st;
        int r = objects_pod_lookup_token(s->objects, s->pod->namespace_, t->service_account, t->audience,
                                         t->expiration_seconds, &st, &msg);

        if (r >= 0)
                return false;
        log_error("pod %s: MountVolume.SetUp failed for volume \"%s\" : %s", kubelet_sync_pod_desc(s), strna(t->volume),
                  strna(msg));
        kubelet_sync_event(s, NULL, "Warning", "FailedMount", "MountVolume.SetUp failed for volume \"%s\" : %s",
                           strna(t->volume), strna(msg));
        return true;
}

/* The keyring of the pod's imagePullSecrets (getPullSecretsForPod): one that cannot be had is reported and
 * skipped, the pull may still succeed without it. */
static void build_keyring(struct pod_sync *s) {
        _cleanup_free_ char *failed = NULL;

        for (size_t i = 0; i < s->refs.n_objs; i++) {
                const struct obj_ref *ref = &s->refs.objs[i];
                _cleanup_ck_error_ struct ck_error *why = NULL;
                const char *msg = NULL;
                json_t *secret;
                char *n = NULL;
                int r;

                if (ref->use != OBJ_REF_PULL_SECRET)
                        continue;
                r = objects_pod_lookup(s->objects, "Secret", s->pod->namespace_, ref->name, &secret, &msg);
                if (r >= 0)
                        r = cred_keyring_add_secret(&s->keyring, secret, &why);
                if (r >= 0)
                        continue;
                log_warning("pod %s: Unable to retrieve pull secret %s/%s, the image pull may not succeed: %s",
                            kubelet_sync_pod_desc(s), s->pod->namespace_, ref->name,
                            why   ? ck_error_message(why)
                            : msg ? msg
                                  : strerror(-r));
                if (asprintf(&n, "%s%s%s/%s", strempty(failed), failed ? ", " : "", s->pod->namespace_, ref->name) < 0)
                        return;
                free(failed);
                failed = n;
        }
        if (failed)
                kubelet_sync_event(s, NULL, "Warning", "FailedToRetrieveImagePullSecret",
                                   "Unable to retrieve some image pull secrets (%s); attempting to pull the image may "
                                   "not succeed.",
                                   failed);
}

static void objects_ready(void *userdata) {
        struct pod_sync *s = userdata;
        bool blocked = false;
        int r;

        s->waiting_objects = false;
        r = objects_pod_new(&s->objects);
        if (r >= 0)
                r = objects_manager_fill(s->env->objects, s->uid, s->objects);
        if (r < 0) {
                kubelet_sync_call_failed(s, "gathering the pod's API objects", r);
                kubelet_pod_sync_finish(s);
                return;
        }
        for (size_t i = 0; i < s->refs.n_objs; i++)
                if (s->refs.objs[i].use == OBJ_REF_VOLUME && volume_ref_blocks(s, &s->refs.objs[i]))
                        blocked = true;
        for (size_t i = 0; i < s->refs.n_tokens; i++)
                if (token_ref_blocks(s, &s->refs.tokens[i]))
                        blocked = true;
        if (blocked) {
                s->error = true;
                kubelet_pod_sync_finish(s);
                return;
        }
        build_keyring(s);
        kubelet_pod_sync_next(s);
}

void kubelet_sync_objects(struct pod_sync *s) {
        int r;

        r = objects_refs_collect(s->pod->raw, &s->refs);
        if (r >= 0)
                r = objects_manager_register(s->env->objects, s->uid, s->pod->namespace_, s->pod->name,
                                             !pod_config_is_static(s->pod), &s->refs);
        if (r >= 0)
                r = objects_manager_wait(s->env->objects, s->uid, objects_ready, s);
        if (r < 0) {
                kubelet_sync_call_failed(s, "registering the pod's API objects", r);
                kubelet_pod_sync_finish(s);
                return;
        }
        if (r > 0) {
                log_v(3, "pod %s: waiting for its ConfigMaps, Secrets and tokens", kubelet_sync_pod_desc(s));
                s->waiting_objects = true;
                return;
        }
        objects_ready(s);
}

/* ---------------------------------------------------------------- mount (WaitForAttachAndMount) */

static void wait_containers(struct pod_sync *s, const char *msg) {
        for (size_t i = 0; i < s->actions.n_start; i++)
                kubelet_sync_set_waiting(s, s->pod->spec.containers[s->actions.start[i]].name, "ContainerCreating",
                                         "%s", msg);
}

static void volumes_mounted(void *userdata) {
        struct pod_sync *s = userdata;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        int r;

        s->waiting_volumes = false;
        r = volmgr_pod_wait(s->env->volumes, s->uid, volumes_mounted, s, &why);
        if (r > 0) {
                if (kubelet_sync_worker_state(s).pending) {
                        /* another pass was asked for: this one ends here, the next one waits again */
                        volmgr_pod_cancel_wait(s->env->volumes, s->uid);
                        kubelet_pod_sync_finish(s);
                        return;
                }
                s->waiting_volumes = true;
                return;
        }
        if (r < 0) {
                log_error("Unable to attach or mount volumes for pod \"%s\": %s; skipping pod",
                          kubelet_sync_pod_desc(s), ck_error_message(why));
                kubelet_sync_event(s, NULL, "Warning", "FailedMount", "Unable to attach or mount volumes: %s",
                                   ck_error_message(why));
                wait_containers(s, ck_error_message(why));
                s->error = true;
                kubelet_pod_sync_finish(s);
                return;
        }
        kubelet_pod_sync_next(s);
}

void kubelet_sync_mount(struct pod_sync *s) {
        int r;

        r = volmgr_pod_add(s->env->volumes, s->pod);
        if (r < 0) {
                kubelet_sync_call_failed(s, "adding the pod's volumes to the volume manager", r);
                kubelet_pod_sync_finish(s);
                return;
        }
        /* nothing to create: a running or finished pod does not wait for its volumes (upstream waits only for pods
         * that are not terminated; here a running pod's volumes are mounted already) */
        if (!s->actions.create_sandbox && s->actions.n_start == 0 && s->actions.n_init_start == 0) {
                kubelet_pod_sync_next(s);
                return;
        }
        volumes_mounted(s);
}

/* ---------------------------------------------------------------- volumes */

/* the volumes the sync sets up itself that take the pod's fsGroup (the volume manager's volumes get theirs when
 * mounted): emptyDir once per pod, the files of configMap, secret, downwardAPI and projected volumes on every
 * pass (they are rewritten), as upstream's SetUp does each time (policy Always) */
static bool takes_ownership(const struct pod_sync *s, const struct volume *v) {
        switch (v->type) {
        case VOLUME_EMPTY_DIR:
                return !strv_contains(kubelet_sync_worker_state(s).owned_volumes, v->name);
        case VOLUME_CONFIG_MAP:
        case VOLUME_SECRET:
        case VOLUME_DOWNWARD_API:
        case VOLUME_PROJECTED:
                return true;
        default:
                return false;
        }
}

struct ownership {
        struct sync_job job;
        char *name;
        bool empty_dir;
};

static void ownership_free(struct ownership *o) {
        free(o->name);
        free(o);
}

static void ownership_done(int r, const char *message, void *userdata) {
        struct ownership *o = userdata;
        struct pod_sync *s = kubelet_sync_job_detach(&o->job);

        if (!s) { /* the pass went meanwhile */
                ownership_free(o);
                return;
        }
        if (r < 0 && r != -ECANCELED) {
                log_error("pod %s: MountVolume.SetUp failed for volume \"%s\" : %s", kubelet_sync_pod_desc(s), o->name,
                          strna(message));
                kubelet_sync_event(s, NULL, "Warning", "FailedMount", "MountVolume.SetUp failed for volume \"%s\" : %s",
                                   o->name, strna(message));
                s->error = true;
        } else if (r >= 0 && o->empty_dir)
                s->env->ops->volume_owned(s->env->userdata, s->w, o->name);
        ownership_free(o);
        kubelet_sync_fanout_release(s);
}

/* A failure leaves the containers to start waiting (ContainerCreating with the FailedMount message) and the
 * pod is retried. */
void kubelet_sync_volumes(struct pod_sync *s) {
        const struct pod_security_context *sc = s->pod->spec.security_context;
        const struct pod_volumes *pv = s->pod->spec.volumes;
        _cleanup_ck_error_ struct ck_error *msg = NULL;
        struct kc_build_context ctx;
        int r;

        kubelet_sync_build_context(s, &ctx);
        /* for containerStatuses[].volumeMounts (runtimeClassSupportsRecursiveReadOnlyMounts), each pass */
        s->env->ops->set_runtime_rro(s->env->userdata, s->w, ctx.runtime_supports_rro);
        /* a pod of the same UID (a static pod removed and added back) waits for the old directory to be gone */
        if (vol_reaper_busy(s->env->reaper, s->uid))
                r = ck_error_set(&msg, -EBUSY,
                                 "the pod directory of a previous pod with this UID is still being "
                                 "removed");
        else
                r = vol_setup_pod(s->pod, &ctx, &msg);
        if (r < 0) {
                log_error("pod %s: Unable to attach or mount volumes: %s", kubelet_sync_pod_desc(s),
                          ck_error_message(msg));
                kubelet_sync_event(s, NULL, "Warning", "FailedMount", "%s", ck_error_message(msg));
                wait_containers(s, ck_error_message(msg));
                s->error = true;
                kubelet_pod_sync_next(s);
                return;
        }
        kubelet_sync_fanout_begin(s, kubelet_pod_sync_next);
        for (size_t i = 0; sc && sc->has_fs_group && pv && i < pv->n_volumes; i++) {
                const struct volume *v = &pv->volumes[i];
                _cleanup_free_ char *path = NULL;
                struct ownership *o;

                if (!takes_ownership(s, v) || !(path = vol_volume_host_path(s->pod, v, ctx.root_dir)))
                        continue;
                o = calloc(1, sizeof(*o));
                if (!o || !(o->name = strdup(v->name))) {
                        free(o);
                        kubelet_sync_call_failed(s, "fsGroup ownership", -ENOMEM);
                        break;
                }
                o->empty_dir = v->type == VOLUME_EMPTY_DIR;
                /* configMap, secret, downwardAPI and projected volumes are read-only (their mounter's ReadOnly
                 * attribute): the group gets read only (roMask 0440), emptyDir read and write (rwMask 0660) */
                kubelet_sync_job_attach(s, &o->job);
                r = volmgr_apply_ownership(s->env->volumes, path, sc->fs_group, NULL, !o->empty_dir, ownership_done, o);
                if (r < 0) {
                        (void) kubelet_sync_job_detach(&o->job);
                        ownership_free(o);
                        kubelet_sync_call_failed(s, "fsGroup ownership", r);
                        break;
                }
                kubelet_sync_fanout_add(s);
        }
        kubelet_sync_fanout_end(s);
}
