/* SPDX-License-Identifier: Apache-2.0 */
/* The volume manager's operations (operation_generator.go with the csi, local, hostPath and nfs plugins): mount a
 * volume into a pod (wait for the attachment, stage, publish or bind mount, fsGroup), unmount it, unstage it. Each
 * is a small state machine on the loop; CSI calls over gRPC, API reads over the kube client, everything that
 * touches a mount or walks a tree on the manager's worker threads. One operation at a time per volume; a
 * failure becomes the pod's FailedMount event and the volume backs off. */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "basic/base64.h"
#include "basic/error.h"
#include "basic/fs.h"
#include "basic/json.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "csi/csi.h"
#include "volumemanager/volumemanager-internal.h"
#include "volumes/mount.h"
#include "volumes/ownership.h"
#include "volumes/volumes.h"

#define SECRET_MAX (1024 * 1024)

enum op_type {
        OP_MOUNT,
        OP_UNMOUNT,
        OP_UNSTAGE,
};

enum step {
        S_START,
        S_CAPS,
        S_DRIVER,
        S_NODE,       /* the Node: volumesAttached, labels */
        S_ATTACHMENT, /* the VolumeAttachment: attached, publish context */
        S_STAGE_SECRETS,
        S_STAGE,
        S_PUBLISH_SECRETS,
        S_PUBLISH,
        S_OWNERSHIP,
        S_BIND,
        S_DONE,
};

struct vm_op {
        struct volmgr *vm; /* NULL once orphaned */
        struct vm_vol *v;
        struct vm_mount *m;
        enum op_type type;
        enum step step;
        struct kube_request *req;
        bool in_flight; /* a CSI call or a worker job */
        /* gathered on the way */
        struct csi_driver_spec driver;
        struct csi_node_caps caps;
        struct strmap publish_context, stage_secrets, publish_secrets;
        char *target, *staging;
};

struct job {
        struct vm_op *op;
        int (*work)(struct job *j);
        void (*then)(struct vm_op *op, struct job *j);
        char *a, *b, *c, *d;
        bool read_only;
        int64_t fs_group;
        struct ck_error *error;
        struct vol_ownership_result own;
        struct statvfs sv;
};

static void op_next(struct vm_op *op);

/* ---------------------------------------------------------------- lifecycle */

static void op_free(struct vm_op *op) {
        if (!op)
                return;
        kube_request_cancel(op->req);
        csi_driver_spec_done(&op->driver);
        strmap_done(&op->publish_context);
        strmap_done(&op->stage_secrets);
        strmap_done(&op->publish_secrets);
        free(op->target);
        free(op->staging);
        free(op);
}

void volmgr_op_orphan(struct vm_op *op) {
        op->vm = NULL;
        op->v = NULL;
        op->m = NULL;
        kube_request_cancel(TAKE_PTR(op->req));
        if (!op->in_flight)
                op_free(op);
}

static struct vm_op *op_new(struct vm_vol *v, struct vm_mount *m, enum op_type type) {
        struct vm_op *op = calloc(1, sizeof(*op));

        if (!op)
                return NULL;
        *op = (struct vm_op) { .vm = v->vm, .v = v, .m = m, .type = type };
        v->op = op;
        return op;
}

/* the operation is over: ok, or failed (the volume backs off) */
static void op_end(struct vm_op *op, bool ok) {
        struct volmgr *vm = op->vm;
        struct vm_vol *v = op->v;

        v->op = NULL;
        if (ok)
                volmgr_vol_succeeded(v);
        else
                volmgr_vol_failed(v);
        op_free(op);
        volmgr_kick(vm);
}

/* "MountVolume.SetUp failed for volume "x" : <why>" as the pod's FailedMount event, then the op ends */
static void op_fail(struct vm_op *op, const char *prefix, const char *fmt, ...) _printf_(3, 4);
static void op_fail(struct vm_op *op, const char *prefix, const char *fmt, ...) {
        _cleanup_free_ char *why = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&why, fmt, ap);
        va_end(ap);
        if (r < 0)
                why = NULL;
        if (op->type == OP_MOUNT && op->m)
                volmgr_pod_event(op->vm, op->m->pod_uid, "FailedMount", "%s for volume \"%s\" : %s", prefix,
                                 op->v->spec.spec_name, strna(why));
        else
                log_error("%s for volume \"%s\" (UniqueName: \"%s\")%s%s : %s", prefix, op->v->spec.spec_name,
                          op->v->unique_name, op->m ? " pod " : "", op->m ? op->m->pod_uid : "", strna(why));
        op_end(op, false);
}

/* a call's reply (or a job's completion) is back: false when the op was orphaned meanwhile, and is now freed */
static bool op_returned(struct vm_op *op) {
        op->in_flight = false;
        if (!op->vm) {
                op_free(op);
                return false;
        }
        return true;
}

/* the driver call could not be sent at all: the op fails with "cannot call <method>" */
static void op_call_failed(struct vm_op *op, const char *prefix, const char *method) {
        op->in_flight = false;
        op_fail(op, prefix, "cannot call %s", method);
}

/* a condition to wait for, not an error worth an event (upstream logs and retries) */
static void op_wait(struct vm_op *op, const char *fmt, ...) _printf_(2, 3);
static void op_wait(struct vm_op *op, const char *fmt, ...) {
        _cleanup_free_ char *why = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&why, fmt, ap) < 0)
                why = NULL;
        va_end(ap);
        log_v(2, "volume \"%s\" (UniqueName: \"%s\"): %s", op->v->spec.spec_name, op->v->unique_name, strna(why));
        op->v->op = NULL;
        op->v->delay = 0;
        op->v->retry_at = now_usec() + USEC_PER_SEC;
        op_free(op);
}

/* ---------------------------------------------------------------- worker jobs */

static void job_free(struct job *j) {
        free(j->a);
        free(j->b);
        free(j->c);
        free(j->d);
        ck_error_free(j->error);
        free(j);
}

static int job_work(void *userdata) {
        struct job *j = userdata;
        return j->work(j);
}

static void job_done(int r, void *userdata) {
        struct job *j = userdata;
        struct vm_op *op = j->op;

        /* j itself is freed by job_destroy once the work is over too (a job past its deadline still runs) */
        if (!op_returned(op))
                return;
        if (r == -ECANCELED && !j->error)
                (void) ck_error_set(&j->error, r, "cancelled");
        if (r == -ETIMEDOUT)
                (void) ck_error_set(&j->error, r, "the operation did not finish within %u s (a stalled filesystem?)",
                                    (unsigned) (VOLMGR_OP_TIMEOUT_USEC / 1000000));
        j->then(op, j);
}

static void job_destroy(void *userdata) {
        job_free(userdata);
}

static void submit(struct vm_op *op, struct job *j) {
        int r;

        j->op = op;
        op->in_flight = true;
        r = workpool_submit_full(op->vm->pool_mount, op->v->unique_name, VOLMGR_OP_TIMEOUT_USEC, job_work, job_done,
                                 job_destroy, j);
        if (r < 0) {
                op->in_flight = false;
                job_free(j);
                op_fail(op, "MountVolume.SetUp failed", "cannot run the operation: %s", strerror(-r));
        }
}

static struct job *job_new(int (*work)(struct job *), void (*then)(struct vm_op *, struct job *), const char *a,
                           const char *b, const char *c, const char *d) {
        struct job *j = calloc(1, sizeof(*j));
        if (!j)
                return NULL;
        j->work = work;
        j->then = then;
        j->a = strdup_or_null(a);
        j->b = strdup_or_null(b);
        j->c = strdup_or_null(c);
        j->d = strdup_or_null(d);
        if ((a && !j->a) || (b && !j->b) || (c && !j->c) || (d && !j->d)) {
                job_free(j);
                return NULL;
        }
        return j;
}

/* ---------------------------------------------------------------- API reads */

static void api_get(struct vm_op *op, const char *path, kube_callback_t cb) {
        if (!op->vm->client) {
                struct kube_response resp = { .r = -ENOTCONN,
                                              .error = "no API server (standalone kubelet)",
                                              .reason = "" };
                cb(&resp, op);
                return;
        }
        if (kube_request(op->vm->client, "GET", path, NULL, NULL, 0, cb, op, &op->req) < 0) {
                struct kube_response resp = { .r = -ENOMEM, .error = "out of memory", .reason = "" };
                op->req = NULL;
                cb(&resp, op);
        }
}

/* getCredentialsFromSecret: the secret's data, decoded */
static int secret_data(const json_t *secret, struct strmap *ret) {
        const json_t *data = json_object_get(secret, "data"), *v;
        const char *k;

        json_object_foreach((json_t *) data, k, v) {
                _cleanup_free_ char *dec = NULL;
                size_t n = 0;
                if (!json_is_string(v) || base64_decode(json_string_value(v), SECRET_MAX, &dec, &n) < 0)
                        return -EBADMSG;
                if (strmap_set(ret, k, dec) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static void on_secret(const struct kube_response *resp, void *userdata) {
        struct vm_op *op = userdata;
        bool stage = op->step == S_STAGE_SECRETS;
        const struct secret_ref *ref = stage ? &op->v->spec.stage_secret : &op->v->spec.publish_secret;

        op->req = NULL;
        if (resp->r < 0 || resp->status != 200 ||
            secret_data(resp->body, stage ? &op->stage_secrets : &op->publish_secrets) < 0) {
                op_fail(op, stage ? "MountVolume.MountDevice failed" : "MountVolume.SetUp failed",
                        "fetching %s %s/%s failed: %s", stage ? "NodeStageSecretRef" : "NodePublishSecretRef",
                        strna(ref->namespace_), strna(ref->name),
                        resp->r >= 0 && resp->status == 200 ? "bad data" : resp->error);
                return;
        }
        op->step = stage ? S_STAGE : S_PUBLISH;
        op_next(op);
}

static void fetch_secret(struct vm_op *op, const struct secret_ref *ref) {
        _cleanup_free_ char *ns = kube_escape(strempty(ref->namespace_)), *name = kube_escape(ref->name), *path = NULL;

        if (!ns || !name || asprintf(&path, "/api/v1/namespaces/%s/secrets/%s", ns, name) < 0) {
                op_fail(op, "MountVolume.SetUp failed", "out of memory");
                return;
        }
        api_get(op, path, on_secret);
}

/* ---------------------------------------------------------------- CSI */

static struct csi_client *csi_client(struct vm_op *op, struct ck_error **ret_error) {
        return csi_drivers_client(op->vm->csi, op->v->spec.driver, ret_error);
}

static void on_caps(const struct csi_reply *reply, void *userdata) {
        struct vm_op *op = userdata;

        if (!op_returned(op))
                return;
        if (reply->r < 0) {
                if (op->type == OP_MOUNT)
                        op_fail(op, "MountVolume.MountDevice failed", "%s", reply->message);
                else
                        op_fail(op, "UnmountDevice failed",
                                "kubernetes.io/csi: attacher.UnmountDevice failed to check "
                                "whether STAGE_UNSTAGE_VOLUME set: %s",
                                reply->message);
                return;
        }
        op->caps = reply->caps;
        csi_drivers_set_caps(op->vm->csi, op->v->spec.driver, &reply->caps);
        op_next(op);
}

static void get_caps(struct vm_op *op) {
        _cleanup_ck_error_ struct ck_error *why = NULL;
        struct csi_client *c;

        if (csi_drivers_caps(op->vm->csi, op->v->spec.driver, &op->caps)) {
                op_next(op);
                return;
        }
        c = csi_client(op, &why);
        if (!c) {
                op_fail(op, op->type == OP_MOUNT ? "MountVolume.MountDevice failed" : "UnmountDevice failed",
                        "kubernetes.io/csi: attacher.%s failed to create newCsiDriverClient: %s",
                        op->type == OP_MOUNT ? "MountDevice" : "UnmountDevice", ck_error_message(why));
                return;
        }
        op->in_flight = true;
        if (csi_node_get_capabilities(c, on_caps, op) < 0) {
                op_call_failed(op, "MountVolume.MountDevice failed", "NodeGetCapabilities");
        }
}

static void on_driver(const struct kube_response *resp, void *userdata) {
        struct vm_op *op = userdata;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        const char *mode = op->v->spec.kind == VM_KIND_CSI_INLINE ? CSI_LIFECYCLE_EPHEMERAL : CSI_LIFECYCLE_PERSISTENT;
        bool found = resp->r >= 0 && resp->status == 200;

        op->req = NULL;
        if (!found && !(resp->r >= 0 && resp->status == 404) && resp->r != -ENOTCONN) {
                op_fail(op, "MountVolume.NewMounter initialization failed", "%s", resp->error);
                return;
        }
        csi_driver_spec_done(&op->driver);
        if (csi_driver_spec_decode(found ? resp->body : NULL, &op->driver, &why) < 0) {
                op_fail(op, "MountVolume.NewMounter initialization failed", "CSIDriver %s: %s", op->v->spec.driver,
                        ck_error_message(why));
                return;
        }
        /* supportsVolumeLifecycleMode */
        if (!op->driver.exists && streq(mode, CSI_LIFECYCLE_EPHEMERAL)) {
                op_fail(op, "MountVolume.NewMounter initialization failed",
                        "volume mode \"%s\" not supported by driver %s (no CSIDriver object)", mode,
                        op->v->spec.driver);
                return;
        }
        if (op->driver.exists && !strv_contains(op->driver.lifecycle_modes, mode)) {
                _cleanup_free_ char *modes = strv_join(op->driver.lifecycle_modes, "\" \"");
                op_fail(op, "MountVolume.NewMounter initialization failed",
                        "volume mode \"%s\" not supported by driver %s (only supports [\"%s\"])", mode,
                        op->v->spec.driver, strempty(modes));
                return;
        }
        op_next(op);
}

static void get_driver(struct vm_op *op) {
        _cleanup_free_ char *name = kube_escape(op->v->spec.driver), *path = NULL;

        if (!name || asprintf(&path, "/apis/storage.k8s.io/v1/csidrivers/%s", name) < 0) {
                op_fail(op, "MountVolume.SetUp failed", "out of memory");
                return;
        }
        api_get(op, path, on_driver);
}

/* VerifyControllerAttachedVolume: the attach/detach controller lists it in node.status.volumesAttached */
static void on_node(const struct kube_response *resp, void *userdata) {
        struct vm_op *op = userdata;
        const json_t *attached = json_object_get(json_object_get(resp->body, "status"), "volumesAttached"), *a;
        struct strmap labels = {};
        size_t i;

        op->req = NULL;
        if (resp->r < 0 || resp->status != 200) {
                op_fail(op,
                        op->v->spec.kind == VM_KIND_LOCAL ? "MountVolume.NodeAffinity check failed"
                                                          : "VerifyControllerAttachedVolume failed",
                        "error getting node %s: %s", op->vm->node_name, resp->error);
                return;
        }
        if (op->v->spec.kind == VM_KIND_LOCAL) {
                _cleanup_ck_error_ struct ck_error *why = NULL;
                const json_t *l = json_object_get(json_object_get(resp->body, "metadata"), "labels"), *val;
                const char *k;
                int r = 0;
                json_object_foreach((json_t *) l, k, val)
                        if (json_is_string(val) && strmap_set(&labels, k, json_string_value(val)) < 0)
                                r = -ENOMEM;
                if (r >= 0 && op->v->spec.pv)
                        r = persistent_volume_check_node_affinity(op->v->spec.pv, &labels, op->vm->node_name, &why);
                strmap_done(&labels);
                if (r < 0) {
                        op_fail(op, "MountVolume.NodeAffinity check failed", "%s", ck_error_message_or(why, r));
                        return;
                }
                op->step = S_BIND;
                op_next(op);
                return;
        }
        json_array_foreach(attached, i, a)
                if (streq_ptr(json_string_value(json_object_get(a, "name")), op->v->unique_name)) {
                        log_v(2, "Controller attach succeeded for volume \"%s\" (UniqueName: \"%s\") pod \"%s\"",
                              op->v->spec.spec_name, op->v->unique_name, op->m->pod_uid);
                        op->step = S_ATTACHMENT;
                        op_next(op);
                        return;
                }
        op_wait(op, "Volume not attached according to node status");
}

static void get_node(struct vm_op *op) {
        _cleanup_free_ char *name = kube_escape(op->vm->node_name), *path = NULL;

        if (!name || asprintf(&path, "/api/v1/nodes/%s", name) < 0) {
                op_fail(op, "MountVolume.SetUp failed", "out of memory");
                return;
        }
        api_get(op, path, on_node);
}

/* WaitForAttach: the VolumeAttachment says attached; its metadata is the publish context */
static void on_attachment(const struct kube_response *resp, void *userdata) {
        struct vm_op *op = userdata;
        const json_t *st = json_object_get(resp->body, "status"), *meta, *v;
        const char *k;

        op->req = NULL;
        if (resp->r < 0 || resp->status != 200) {
                op_fail(op, "MountVolume.WaitForAttach failed", "volume %s has GET error for volume attachment: %s",
                        op->v->spec.handle, resp->error);
                return;
        }
        if (json_is_string(json_object_get(json_object_get(resp->body, "metadata"), "deletionTimestamp"))) {
                op_fail(op, "MountVolume.WaitForAttach failed", "volume attachment is being deleted");
                return;
        }
        if (!json_is_true(json_object_get(st, "attached"))) {
                const char *err = json_string_value(json_object_get(json_object_get(st, "attachError"), "message"));
                if (err) {
                        op_fail(op, "MountVolume.WaitForAttach failed", "%s", err);
                        return;
                }
                op_wait(op, "waiting for the VolumeAttachment to be attached");
                return;
        }
        strmap_done(&op->publish_context);
        meta = json_object_get(st, "attachmentMetadata");
        json_object_foreach((json_t *) meta, k, v)
                if (json_is_string(v) && strmap_set(&op->publish_context, k, json_string_value(v)) < 0) {
                        op_fail(op, "MountVolume.WaitForAttach failed", "out of memory");
                        return;
                }
        op->step = S_STAGE;
        op_next(op);
}

static void get_attachment(struct vm_op *op) {
        _cleanup_free_ char *id = csi_attachment_name(op->v->spec.handle, op->v->spec.driver, op->vm->node_name);
        _cleanup_free_ char *path = NULL;

        if (!id || asprintf(&path, "/apis/storage.k8s.io/v1/volumeattachments/%s", id) < 0) {
                op_fail(op, "MountVolume.WaitForAttach failed", "out of memory");
                return;
        }
        api_get(op, path, on_attachment);
}

static void on_staged(const struct csi_reply *reply, void *userdata) {
        struct vm_op *op = userdata;

        if (!op_returned(op))
                return;
        if (reply->r < 0) {
                /* finished or not, the driver may have left something: the volume is uncertain and gets
                 * unstaged (idempotently) when no pod wants it */
                op->v->dev = VM_STATE_UNCERTAIN;
                op_fail(op, "MountVolume.MountDevice failed", "%s", reply->message);
                return;
        }
        op->v->dev = VM_STATE_MOUNTED;
        op->v->dev_dir_only = false;
        log_info("MountVolume.MountDevice succeeded for volume \"%s\" (UniqueName: \"%s\") device mount path \"%s\"",
                 op->v->spec.spec_name, op->v->unique_name, op->staging);
        op->step = S_PUBLISH_SECRETS;
        op_next(op);
}

static void stage(struct vm_op *op) {
        struct vm_spec *s = &op->v->spec;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        _cleanup_free_ char *dir = csi_global_dir(op->vm->root_dir, s->driver, s->handle);
        struct csi_vol_data data = { .volume_handle = s->handle, .driver_name = s->driver };
        struct csi_node_request req;
        struct csi_client *c;
        int r;

        if (!dir) {
                op_fail(op, "MountVolume.MountDevice failed", "out of memory");
                return;
        }
        /* the volume data first, so that teardown and reconstruction find the driver and handle again */
        r = mkdir_p(op->staging, 0750);
        if (r >= 0)
                r = csi_vol_data_save(dir, &data);
        if (r < 0) {
                op_fail(op, "MountVolume.MountDevice failed",
                        "kubernetes.io/csi: attacher.MountDevice failed to create "
                        "dir %s: %s",
                        op->staging, strerror(-r));
                return;
        }
        if (!op->caps.stage_unstage) {
                log_info("kubernetes.io/csi: attacher.MountDevice STAGE_UNSTAGE_VOLUME capability not set. Skipping "
                         "MountDevice...");
                op->v->dev = VM_STATE_MOUNTED;
                op->v->dev_dir_only = true;
                op->step = S_PUBLISH_SECRETS;
                op_next(op);
                return;
        }
        c = csi_client(op, &why);
        if (!c) {
                op_fail(op, "MountVolume.MountDevice failed",
                        "kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: %s",
                        ck_error_message(why));
                return;
        }
        req = (struct csi_node_request) {
                .volume_id = s->handle,
                .staging_target_path = op->staging,
                .fs_type = s->fs_type,
                .mount_flags = s->mount_options,
                .access_mode = csi_access_mode(s->access_mode),
                .publish_context = &op->publish_context,
                .volume_context = &s->attributes,
                .secrets = &op->stage_secrets,
        };
        op->in_flight = true;
        if (csi_node_stage_volume(c, &req, on_staged, op) < 0) {
                op_call_failed(op, "MountVolume.MountDevice failed", "NodeStageVolume");
        }
}

/* supportsFSGroup */
static bool csi_supports_fs_group(const struct vm_op *op) {
        const struct vm_spec *s = &op->v->spec;
        const char *policy = op->driver.fs_group_policy;

        if (!op->m->has_fs_group || streq_ptr(policy, "None") || op->m->read_only)
                return false;
        if (streq_ptr(policy, "File"))
                return true;
        if (isempty(s->fs_type)) {
                log_v(4, "kubernetes.io/csi: mounter.SetupAt WARNING: skipping fsGroup, fsType not provided");
                return false;
        }
        if (s->kind == VM_KIND_CSI_INLINE)
                return true;
        if (!s->pv || !s->pv->access_modes) {
                log_v(4, "kubernetes.io/csi: mounter.SetupAt WARNING: skipping fsGroup, access modes not provided");
                return false;
        }
        if (!strv_contains(s->pv->access_modes, "ReadWriteOnce")) {
                log_v(4, "kubernetes.io/csi: mounter.SetupAt WARNING: skipping fsGroup, only support ReadWriteOnce "
                         "access mode");
                return false;
        }
        return true;
}

static int work_ownership(struct job *j) {
        return vol_ownership_apply(j->a, j->fs_group, j->b, j->read_only, &j->own, &j->error);
}

static void mounted(struct vm_op *op);

static void ownership_done(struct vm_op *op, struct job *j) {
        if (j->error) {
                /* mounted but unusable: uncertain, so that it is cleaned up */
                op->m->state = VM_STATE_UNCERTAIN;
                op_fail(op, "MountVolume.SetUp failed", "applyFSGroup failed for vol %s: %s",
                        strempty(op->v->spec.handle ? op->v->spec.handle : op->v->spec.spec_name),
                        ck_error_message(j->error));
                return;
        }
        if (j->own.skipped)
                log_v(3, "skipping permission and ownership change for volume %s", op->target);
        else
                log_v(2, "volume %s: fsGroup %" PRId64 " applied to %" PRIu64 " entries (%" PRIu64 " failed)",
                      op->target, op->m->fs_group, j->own.entries, j->own.failures);
        mounted(op);
}

static void apply_ownership(struct vm_op *op) {
        struct job *j = job_new(work_ownership, ownership_done, op->target, op->m->fs_group_policy, NULL, NULL);

        if (!j) {
                op_fail(op, "MountVolume.SetUp failed", "out of memory");
                return;
        }
        j->fs_group = op->m->fs_group;
        j->read_only = op->m->read_only;
        submit(op, j);
}

static void after_expansion(struct vm_op *op) {
        if (csi_supports_fs_group(op)) {
                op->step = S_OWNERSHIP;
                apply_ownership(op);
                return;
        }
        mounted(op);
}

/* MarkFSResizeFinished: the claim's status capacity is the PV's, its resize conditions go */
static void on_claim_resized(const struct kube_response *resp, void *userdata) {
        struct vm_op *op = userdata;

        op->req = NULL;
        if (resp->r < 0 || resp->status >= 300) {
                op_fail(op, "MountVolume.Setup failed while expanding volume", "error updating PVC %s/%s: %s",
                        op->m->pvc_ns, op->m->pvc_name, resp->error);
                return;
        }
        log_info("MountVolume.NodeExpandVolume succeeded for volume \"%s\" (UniqueName: \"%s\"): claim %s/%s is "
                 "now %s",
                 op->v->spec.spec_name, op->v->unique_name, op->m->pvc_ns, op->m->pvc_name, op->m->expand_to_str);
        for (struct vm_mount *m = op->v->mounts; m; m = m->next)
                m->expand_to = 0; /* the volume's, not the mount's */
        after_expansion(op);
}

static void on_expanded(const struct csi_reply *reply, void *userdata) {
        struct vm_op *op = userdata;
        _cleanup_free_ char *ns = NULL, *name = NULL, *path = NULL;
        json_auto_t *patch = NULL;

        if (!op_returned(op))
                return;
        if (reply->r < 0) {
                op_fail(op, "MountVolume.Setup failed while expanding volume", "%s", reply->message);
                return;
        }
        ns = kube_escape(op->m->pvc_ns);
        name = kube_escape(op->m->pvc_name);
        patch = json_pack("{s:{s:{s:s}, s:n}}", "status", "capacity", "storage", op->m->expand_to_str, "conditions");
        if (!ns || !name || !patch ||
            asprintf(&path, "/api/v1/namespaces/%s/persistentvolumeclaims/%s/status", ns, name) < 0) {
                op_fail(op, "MountVolume.Setup failed while expanding volume", "out of memory");
                return;
        }
        if (!op->vm->client || kube_request(op->vm->client, "PATCH", path, patch, "application/merge-patch+json", 0,
                                            on_claim_resized, op, &op->req) < 0) {
                op->req = NULL;
                op_fail(op, "MountVolume.Setup failed while expanding volume", "cannot update the claim");
        }
}

/* NodeExpandVolume of a published volume whose PV grew (the resizer expanded it in the controller) */
static void expand(struct vm_op *op) {
        struct vm_spec *s = &op->v->spec;
        struct csi_node_request req = {
                .volume_id = s->handle,
                .target_path = op->target,
                .staging_target_path = op->caps.stage_unstage ? op->staging : NULL,
                .fs_type = s->fs_type,
                .mount_flags = s->mount_options,
                .access_mode = csi_access_mode(s->access_mode),
                .required_bytes = op->m->expand_to,
        };
        _cleanup_ck_error_ struct ck_error *why = NULL;
        struct csi_client *c = csi_client(op, &why);

        if (!c || !op->m->pvc_name) {
                op_fail(op, "MountVolume.Setup failed while expanding volume", "%s",
                        c ? "not a PersistentVolumeClaim" : ck_error_message(why));
                return;
        }
        log_v(2, "NodeExpandVolume of %s to %" PRId64 " bytes", op->v->unique_name, op->m->expand_to);
        op->in_flight = true;
        if (csi_node_expand_volume(c, &req, on_expanded, op) < 0) {
                op_call_failed(op, "MountVolume.Setup failed while expanding volume", "NodeExpandVolume");
        }
}

static void on_published(const struct csi_reply *reply, void *userdata) {
        struct vm_op *op = userdata;

        if (!op_returned(op))
                return;
        if (reply->r < 0) {
                op->m->state = reply->final && op->m->state == VM_STATE_NONE ? VM_STATE_NONE : VM_STATE_UNCERTAIN;
                op_fail(op, "MountVolume.SetUp failed", "%s", reply->message);
                return;
        }
        if (op->m->expand_to > 0 && op->caps.expand) {
                expand(op);
                return;
        }
        after_expansion(op);
}

static void publish(struct vm_op *op) {
        struct vm_spec *s = &op->v->spec;
        struct vm_mount *m = op->m;
        bool inline_ = s->kind == VM_KIND_CSI_INLINE;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        _cleanup_free_ char *dir = csi_pod_volume_dir(op->vm->root_dir, m->pod_uid, m->spec_name);
        _cleanup_free_ char *attach_id = csi_attachment_name(s->handle, s->driver, op->vm->node_name);
        struct csi_pod_info pod = {
                .name = m->pod_name, .namespace_ = m->pod_ns, .uid = m->pod_uid, .service_account = m->service_account
        };
        struct csi_vol_data data = {
                .spec_vol_id = m->spec_name,
                .volume_handle = s->handle,
                .driver_name = s->driver,
                .node_name = op->vm->node_name,
                .attachment_id = attach_id,
                .lifecycle_mode = (char *) (inline_ ? CSI_LIFECYCLE_EPHEMERAL : CSI_LIFECYCLE_PERSISTENT),
        };
        struct strmap ctx = {};
        struct csi_node_request req;
        struct csi_client *c;
        int r;

        if (!dir || !attach_id) {
                op_fail(op, "MountVolume.SetUp failed", "out of memory");
                return;
        }
        c = csi_client(op, &why);
        if (!c) {
                op_fail(op, "MountVolume.SetUp failed",
                        "kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: %s", ck_error_message(why));
                return;
        }
        r = mkdir_p(dir, 0750);
        if (r >= 0)
                r = csi_vol_data_save(dir, &data);
        if (r < 0) {
                op_fail(op, "MountVolume.SetUp failed", "kubernetes.io/csi: failed to save volume info data: %s",
                        strerror(-r));
                return;
        }
        if (csi_volume_context(&s->attributes, op->driver.pod_info_on_mount ? &pod : NULL, inline_, &ctx) < 0) {
                op_fail(op, "MountVolume.SetUp failed", "out of memory");
                return;
        }
        req = (struct csi_node_request) {
                .volume_id = s->handle,
                .staging_target_path = !inline_ && op->caps.stage_unstage ? op->staging : NULL,
                .target_path = op->target,
                .fs_type = s->fs_type,
                .mount_flags = inline_ ? NULL : s->mount_options,
                .access_mode = csi_access_mode(s->access_mode),
                .read_only = m->read_only,
                .publish_context = &op->publish_context,
                .volume_context = &ctx,
                .secrets = &op->publish_secrets,
        };
        op->in_flight = true;
        if (m->state == VM_STATE_NONE)
                m->state = VM_STATE_UNCERTAIN; /* from now on the driver may have mounted it */
        r = csi_node_publish_volume(c, &req, on_published, op);
        strmap_done(&ctx);
        if (r < 0) {
                op_call_failed(op, "MountVolume.SetUp failed", "NodePublishVolume");
        }
}

/* ---------------------------------------------------------------- local, hostPath, nfs */

static int work_bind(struct job *j) {
        return vol_bind_mount(j->a, j->b, j->read_only, &j->error);
}

static int work_host_path(struct job *j) {
        return vol_host_path_check(j->a, j->b, &j->error);
}

static int work_nfs(struct job *j) {
        return vol_helper_mount("nfs", j->a, j->b, j->c, VOLMGR_MOUNT_HELPER_TIMEOUT_USEC, &j->error);
}

static void bind_done(struct vm_op *op, struct job *j) {
        if (j->error) {
                op->m->state = VM_STATE_UNCERTAIN;
                op_fail(op, "MountVolume.SetUp failed", "%s", ck_error_message(j->error));
                return;
        }
        /* local volumes: fsGroup only on the first mount (no other pod has it) */
        if (op->v->spec.kind == VM_KIND_LOCAL && op->m->has_fs_group && !op->m->read_only) {
                bool others = false;
                for (struct vm_mount *o = op->v->mounts; o; o = o->next)
                        if (o != op->m && o->state == VM_STATE_MOUNTED)
                                others = true;
                if (!others) {
                        op->step = S_OWNERSHIP;
                        apply_ownership(op);
                        return;
                }
        }
        mounted(op);
}

static void bind_mount(struct vm_op *op) {
        struct vm_spec *s = &op->v->spec;
        _cleanup_free_ char *opts = NULL;
        struct job *j = NULL;
        bool ro = op->m->read_only || s->source_read_only;

        switch (s->kind) {
        case VM_KIND_LOCAL:
                j = job_new(work_bind, bind_done, s->path, op->target, NULL, NULL);
                break;
        case VM_KIND_HOST_PATH:
                j = job_new(work_host_path, bind_done, s->path, s->host_path_type, NULL, NULL);
                break;
        case VM_KIND_NFS: {
                _cleanup_free_ char *src = NULL;
                char **o = NULL;
                if (ro)
                        (void) strv_extend(&o, "ro");
                for (size_t i = 0; s->mount_options && s->mount_options[i]; i++)
                        (void) strv_extend(&o, s->mount_options[i]);
                opts = o ? strv_join(o, ",") : NULL;
                strv_free(o);
                if (asprintf(&src, "%s:%s", s->server, s->path) >= 0)
                        j = job_new(work_nfs, bind_done, src, op->target, opts, NULL);
                break;
        }
        default:
                break;
        }
        if (!j) {
                op_fail(op, "MountVolume.SetUp failed", "out of memory");
                return;
        }
        j->read_only = ro;
        if (op->m->state == VM_STATE_NONE && s->kind != VM_KIND_HOST_PATH)
                op->m->state = VM_STATE_UNCERTAIN;
        submit(op, j);
}

/* ---------------------------------------------------------------- mount */

static void mounted(struct vm_op *op) {
        struct vm_mount *m = op->m;
        struct volmgr *vm = op->vm;

        m->state = VM_STATE_MOUNTED;
        log_info("MountVolume.SetUp succeeded for volume \"%s\" (UniqueName: \"%s\") pod \"%s\" (UID: \"%s\")",
                 op->v->spec.spec_name, op->v->unique_name, strempty(m->pod_name), m->pod_uid);
        vm->last_stats_usec = 0; /* measure the new volume soon */
        op_end(op, true);
        for (struct vm_pod *p = vm->pods; p; p = p->next)
                if (streq(p->uid, m->pod_uid)) {
                        volmgr_pod_check_ready(p);
                        break;
                }
}

static void op_next(struct vm_op *op) {
        struct vm_spec *s = &op->v->spec;

        switch (op->type) {
        case OP_MOUNT:
                switch (op->step) {
                case S_START:
                        if (s->kind == VM_KIND_CSI) {
                                op->step = S_CAPS;
                                get_caps(op);
                        } else if (s->kind == VM_KIND_CSI_INLINE) {
                                op->step = S_DRIVER;
                                get_driver(op);
                        } else if (s->kind == VM_KIND_LOCAL && s->pv && s->pv->has_affinity) {
                                op->step = S_NODE;
                                get_node(op);
                        } else {
                                op->step = S_BIND;
                                bind_mount(op);
                        }
                        return;
                case S_CAPS:
                        op->step = S_DRIVER;
                        get_driver(op);
                        return;
                case S_DRIVER:
                        if (s->kind == VM_KIND_CSI_INLINE) {
                                op->step = S_PUBLISH_SECRETS;
                                op_next(op);
                                return;
                        }
                        if (op->driver.attach_required && op->v->dev != VM_STATE_MOUNTED) {
                                if (!op->v->reported_in_use) {
                                        op_wait(op, "Volume has not been added to the list of VolumesInUse in the "
                                                    "node's volume status");
                                        return;
                                }
                                op->step = S_NODE;
                                get_node(op);
                                return;
                        }
                        if (op->driver.attach_required) {
                                op->step = S_ATTACHMENT; /* staged: still the publish context */
                                get_attachment(op);
                                return;
                        }
                        op->step = S_STAGE;
                        op_next(op);
                        return;
                case S_ATTACHMENT:
                        get_attachment(op);
                        return;
                case S_STAGE:
                        if (op->v->dev == VM_STATE_MOUNTED && op->v->dev_dir_only == !op->caps.stage_unstage) {
                                op->step = S_PUBLISH_SECRETS;
                                op_next(op);
                                return;
                        }
                        if (s->stage_secret.name && op->caps.stage_unstage && op->stage_secrets.n == 0) {
                                op->step = S_STAGE_SECRETS;
                                fetch_secret(op, &s->stage_secret);
                                return;
                        }
                        stage(op);
                        return;
                case S_PUBLISH_SECRETS:
                        if (s->publish_secret.name) {
                                fetch_secret(op, &s->publish_secret);
                                return;
                        }
                        op->step = S_PUBLISH;
                        _fallthrough_;
                case S_PUBLISH:
                        publish(op);
                        return;
                case S_BIND:
                        bind_mount(op);
                        return;
                default:
                        op_fail(op, "MountVolume.SetUp failed", "internal error: step %d", op->step);
                        return;
                }
        default:
                return;
        }
}

int volmgr_op_mount(struct vm_vol *v, struct vm_mount *m) {
        struct vm_op *op = op_new(v, m, OP_MOUNT);

        if (!op)
                return -ENOMEM;
        op->target = volmgr_mount_path(v->vm, v, m);
        if (v->spec.kind == VM_KIND_CSI)
                op->staging = csi_global_mount_path(v->vm->root_dir, v->spec.driver, v->spec.handle);
        if (!op->target || (v->spec.kind == VM_KIND_CSI && !op->staging)) {
                v->op = NULL;
                op_free(op);
                return -ENOMEM;
        }
        log_v(2, "operationExecutor.MountVolume started for volume \"%s\" (UniqueName: \"%s\") pod \"%s\"",
              v->spec.spec_name, v->unique_name, m->pod_uid);
        op_next(op);
        return 0;
}

/* ---------------------------------------------------------------- unmount */

static int work_remove_mount_dir(struct job *j) {
        return vol_remove_mount_dir(j->a, j->b, &j->error);
}

static int work_unmount(struct job *j) {
        return vol_unmount_and_remove(j->a, &j->error);
}

static void unmounted(struct vm_op *op, struct job *j) {
        struct volmgr *vm = op->vm;
        struct vm_vol *v = op->v;
        struct vm_mount *m = op->m;

        if (j && j->error) {
                m->state = VM_STATE_UNCERTAIN;
                op_fail(op, "UnmountVolume.TearDown failed", "%s", ck_error_message(j->error));
                return;
        }
        log_info("UnmountVolume.TearDown succeeded for volume \"%s\" (UniqueName: \"%s\") pod \"%s\"",
                 v->spec.spec_name ? v->spec.spec_name : m->spec_name, v->unique_name, m->pod_uid);
        m->state = VM_STATE_NONE;
        op_end(op, true);
        (void) vm;
}

static void on_unpublished(const struct csi_reply *reply, void *userdata) {
        struct vm_op *op = userdata;
        struct job *j;

        if (!op_returned(op))
                return;
        if (reply->r < 0) {
                op->m->state = VM_STATE_UNCERTAIN;
                op_fail(op, "UnmountVolume.TearDown failed", "kubernetes.io/csi: mounter.TearDownAt failed: %s",
                        reply->message);
                return;
        }
        j = job_new(work_remove_mount_dir, unmounted, op->target, CSI_VOL_DATA_FILE, NULL, NULL);
        if (!j) {
                op_fail(op, "UnmountVolume.TearDown failed", "out of memory");
                return;
        }
        submit(op, j);
}

int volmgr_op_unmount(struct vm_vol *v, struct vm_mount *m) {
        struct vm_op *op;
        struct job *j;

        if (!m->spec_name)
                return -EINVAL;
        op = op_new(v, m, OP_UNMOUNT);
        if (!op)
                return -ENOMEM;
        op->target = volmgr_mount_path(v->vm, v, m);
        if (!op->target) {
                v->op = NULL;
                op_free(op);
                return -ENOMEM;
        }
        log_v(2, "operationExecutor.UnmountVolume started for volume \"%s\" (UniqueName: \"%s\") pod \"%s\"",
              m->spec_name, v->unique_name, m->pod_uid);
        if (v->spec.kind == VM_KIND_CSI || v->spec.kind == VM_KIND_CSI_INLINE) {
                _cleanup_ck_error_ struct ck_error *why = NULL;
                struct csi_client *c = csi_client(op, &why);
                if (!c) {
                        op_wait(op, "UnmountVolume waits for its CSI driver");
                        return 0;
                }
                op->in_flight = true;
                if (csi_node_unpublish_volume(c, v->spec.handle, op->target, on_unpublished, op) < 0) {
                        op_call_failed(op, "UnmountVolume.TearDown failed", "NodeUnpublishVolume");
                }
                return 0;
        }
        j = job_new(work_unmount, unmounted, op->target, NULL, NULL, NULL);
        if (!j) {
                v->op = NULL;
                op_free(op);
                return -ENOMEM;
        }
        submit(op, j);
        return 0;
}

/* ---------------------------------------------------------------- unstage */

static void unstaged(struct vm_op *op, struct job *j) {
        if (j && j->error) {
                op_fail(op, "UnmountDevice failed", "%s", ck_error_message(j->error));
                return;
        }
        log_info("UnmountDevice succeeded for volume \"%s\" (UniqueName: \"%s\")", strna(op->v->spec.spec_name),
                 op->v->unique_name);
        op->v->dev = VM_STATE_NONE;
        op_end(op, true);
}

static void remove_global_dir(struct vm_op *op) {
        struct job *j = job_new(work_remove_mount_dir, unstaged, op->staging, CSI_VOL_DATA_FILE, NULL, NULL);

        if (!j) {
                op_fail(op, "UnmountDevice failed", "out of memory");
                return;
        }
        submit(op, j);
}

static void on_unstaged(const struct csi_reply *reply, void *userdata) {
        struct vm_op *op = userdata;

        if (!op_returned(op))
                return;
        if (reply->r < 0) {
                op_fail(op, "UnmountDevice failed", "kubernetes.io/csi: attacher.UnmountDevice failed: %s",
                        reply->message);
                return;
        }
        remove_global_dir(op);
}

static void unstage_caps(struct vm_op *op) {
        _cleanup_ck_error_ struct ck_error *why = NULL;
        struct csi_client *c;

        if (!op->caps.stage_unstage) {
                log_info("kubernetes.io/csi: attacher.UnmountDevice STAGE_UNSTAGE_VOLUME capability not set. Skipping "
                         "UnmountDevice...");
                remove_global_dir(op);
                return;
        }
        c = csi_client(op, &why);
        if (!c) {
                op_wait(op, "UnmountDevice waits for its CSI driver");
                return;
        }
        op->in_flight = true;
        if (csi_node_unstage_volume(c, op->v->spec.handle, op->staging, on_unstaged, op) < 0) {
                op_call_failed(op, "UnmountDevice failed", "NodeUnstageVolume");
        }
}

static void on_unstage_caps(const struct csi_reply *reply, void *userdata) {
        struct vm_op *op = userdata;

        if (!op_returned(op))
                return;
        if (reply->r < 0) {
                op_fail(op, "UnmountDevice failed",
                        "kubernetes.io/csi: attacher.UnmountDevice failed to check whether STAGE_UNSTAGE_VOLUME set: %s",
                        reply->message);
                return;
        }
        op->caps = reply->caps;
        csi_drivers_set_caps(op->vm->csi, op->v->spec.driver, &reply->caps);
        unstage_caps(op);
}

int volmgr_op_unstage(struct vm_vol *v) {
        _cleanup_ck_error_ struct ck_error *why = NULL;
        struct vm_op *op;
        struct csi_client *c;

        if (v->spec.kind != VM_KIND_CSI) {
                v->dev = VM_STATE_NONE;
                return 0;
        }
        op = op_new(v, NULL, OP_UNSTAGE);
        if (!op)
                return -ENOMEM;
        op->staging = csi_global_mount_path(v->vm->root_dir, v->spec.driver, v->spec.handle);
        if (!op->staging) {
                v->op = NULL;
                op_free(op);
                return -ENOMEM;
        }
        log_v(2, "operationExecutor.UnmountDevice started for volume \"%s\"", v->unique_name);
        if (csi_drivers_caps(v->vm->csi, v->spec.driver, &op->caps)) {
                unstage_caps(op);
                return 0;
        }
        c = csi_client(op, &why);
        if (!c) {
                op_wait(op, "UnmountDevice waits for its CSI driver");
                return 0;
        }
        op->in_flight = true;
        if (csi_node_get_capabilities(c, on_unstage_caps, op) < 0) {
                op_call_failed(op, "UnmountDevice failed", "NodeGetCapabilities");
        }
        return 0;
}
