/* SPDX-License-Identifier: Apache-2.0 */
/* The volume manager's desired and actual states, its API and the reconciler: see volumemanager.h. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apis/pod_volumes.h"
#include "basic/list.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "csi/csi.h"
#include "volumemanager/volumemanager-internal.h"

/* Does the manager handle this pod volume (persistentVolumeClaim, ephemeral, csi, nfs)? */
static bool volmgr_handles(const struct volume *v) {
        return v &&
               (v->type == VOLUME_PVC || v->type == VOLUME_EPHEMERAL || v->type == VOLUME_CSI || v->type == VOLUME_NFS);
}

/* kubernetes.io~csi, kubernetes.io~local-volume, ... */
static const char *volmgr_plugin_dir(enum vm_kind kind) {
        switch (kind) {
        case VM_KIND_CSI:
        case VM_KIND_CSI_INLINE:
                return CSI_PLUGIN_DIR_NAME;
        case VM_KIND_LOCAL:
                return PLUGIN_DIR_LOCAL;
        case VM_KIND_NFS:
                return PLUGIN_DIR_NFS;
        case VM_KIND_HOST_PATH:
                return "kubernetes.io~host-path";
        }
        return "unknown";
}

/* attachable or device-mountable: reported in volumesInUse, shared by the pods that use it */
static bool volmgr_kind_device_mountable(enum vm_kind kind) {
        return kind == VM_KIND_CSI || kind == VM_KIND_LOCAL;
}

char *volmgr_mount_path(const struct volmgr *vm, const struct vm_vol *v, const struct vm_mount *m) {
        char *p = NULL;

        switch (v->spec.kind) {
        case VM_KIND_CSI:
        case VM_KIND_CSI_INLINE:
                return csi_pod_mount_path(vm->root_dir, m->pod_uid, m->spec_name);
        case VM_KIND_HOST_PATH:
                return strdup_or_null(v->spec.path);
        default:
                if (asprintf(&p, "%s/pods/%s/volumes/%s/%s", vm->root_dir, m->pod_uid, volmgr_plugin_dir(v->spec.kind),
                             m->spec_name) < 0)
                        return NULL;
                return p;
        }
}

void volmgr_spec_done(struct vm_spec *s) {
        free(s->spec_name);
        free(s->driver);
        free(s->handle);
        free(s->fs_type);
        strv_free(s->mount_options);
        free(s->access_mode);
        strmap_done(&s->attributes);
        free(s->stage_secret.namespace_);
        free(s->stage_secret.name);
        free(s->publish_secret.namespace_);
        free(s->publish_secret.name);
        free(s->path);
        free(s->host_path_type);
        free(s->server);
        if (s->pv) {
                persistent_volume_done(s->pv);
                free(s->pv);
        }
        *s = (struct vm_spec) {};
}

void volmgr_pod_event(struct volmgr *vm, const char *uid, const char *reason, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return;
        log_error("pod %s: %s", uid, msg);
        if (vm->event)
                vm->event(uid, "Warning", reason, msg, vm->userdata);
}

void volmgr_kick(struct volmgr *vm) {
        if (vm->ev_kick && !vm->freeing)
                event_active(vm->ev_kick, EV_TIMEOUT, 0);
}

/* ---------------------------------------------------------------- the actual state */

static void mount_free(struct vm_mount *m) {
        if (!m)
                return;
        free(m->pod_uid);
        free(m->outer_name);
        free(m->spec_name);
        free(m->pod_name);
        free(m->pod_ns);
        free(m->service_account);
        free(m->fs_group_policy);
        free(m->pvc_ns);
        free(m->pvc_name);
        free(m->expand_to_str);
        free(m);
}

struct vm_vol *volmgr_vol_get(struct volmgr *vm, const char *unique_name, bool create) {
        struct vm_vol *v;

        for (v = vm->vols; v; v = v->next)
                if (streq(v->unique_name, unique_name))
                        return v;
        if (!create)
                return NULL;
        v = calloc(1, sizeof(*v));
        if (!v || !(v->unique_name = strdup(unique_name))) {
                free(v);
                return NULL;
        }
        v->vm = vm;
        FLIST_PREPEND(vm->vols, v);
        return v;
}

static void vol_free(struct vm_vol *v) {
        for (struct vm_mount *m; v->mounts;) {
                FLIST_POP(v->mounts, m);
                mount_free(m);
        }
        volmgr_spec_done(&v->spec);
        free(v->unique_name);
        free(v);
}

static void vol_remove(struct volmgr *vm, struct vm_vol *v) {
        FLIST_REMOVE(vm->vols, v);
        log_v(3, "volume %s: no longer in use, forgotten", v->unique_name);
        vol_free(v);
}

struct vm_mount *volmgr_mount_get(struct vm_vol *v, const char *uid, bool create) {
        struct vm_mount *m;

        for (m = v->mounts; m; m = m->next)
                if (streq(m->pod_uid, uid))
                        return m;
        if (!create)
                return NULL;
        m = calloc(1, sizeof(*m));
        if (!m || !(m->pod_uid = strdup(uid))) {
                free(m);
                return NULL;
        }
        FLIST_PREPEND(v->mounts, m);
        return m;
}

static void mount_remove(struct vm_vol *v, struct vm_mount *m) {
        FLIST_REMOVE(v->mounts, m);
        mount_free(m);
}

void volmgr_vol_failed(struct vm_vol *v) {
        v->delay = v->delay ? MIN(v->delay * 2, VOLMGR_RETRY_MAX_USEC) : VOLMGR_RETRY_MIN_USEC;
        v->retry_at = now_usec() + v->delay;
}

void volmgr_vol_succeeded(struct vm_vol *v) {
        v->delay = 0;
        v->retry_at = 0;
}

static bool pod_has_mounts(const struct volmgr *vm, const char *uid) {
        for (const struct vm_vol *v = vm->vols; v; v = v->next)
                for (const struct vm_mount *m = v->mounts; m; m = m->next)
                        if (streq(m->pod_uid, uid))
                                return true;
        return false;
}

static struct vm_pod *pod_find(const struct volmgr *vm, const char *uid) {
        for (struct vm_pod *p = vm->pods; p; p = p->next)
                if (streq(p->uid, uid))
                        return p;
        return NULL;
}

/* ---------------------------------------------------------------- the reconciler */

static void reconcile_vol(struct volmgr *vm, struct vm_vol *v, uint64_t now) {
        bool any_desired = false;

        if (v->op || now < v->retry_at)
                return;
        /* unmount what no pod wants (once the pod is gone from the runtime and the sources were heard) */
        for (struct vm_mount *m = v->mounts, *next; m; m = next) {
                next = m->next;
                if (m->desired) {
                        any_desired = true;
                        continue;
                }
                if (!vm->sources_ready || (vm->pod_may_unmount && !vm->pod_may_unmount(m->pod_uid, vm->userdata)))
                        continue;
                if (m->state == VM_STATE_NONE || v->spec.kind == VM_KIND_HOST_PATH) {
                        _cleanup_free_ char *uid = strdup(m->pod_uid);
                        mount_remove(v, m);
                        if (uid && !pod_find(vm, uid) && !pod_has_mounts(vm, uid) &&
                            strv_extend(&vm->gone_pods, uid) >= 0)
                                event_active(vm->ev_notify, EV_TIMEOUT, 0);
                        continue;
                }
                if (volmgr_op_unmount(v, m) >= 0)
                        return;
        }
        /* mount what pods want */
        for (struct vm_mount *m = v->mounts; m; m = m->next)
                if (m->desired && m->state != VM_STATE_MOUNTED && v->have_spec) {
                        if (volmgr_op_mount(v, m) >= 0)
                                return;
                }
        /* unstage a volume no pod uses any more */
        if (!v->mounts && !any_desired && v->dev != VM_STATE_NONE) {
                if (!vm->sources_ready)
                        return;
                (void) volmgr_op_unstage(v);
                return;
        }
        if (!v->mounts && v->dev == VM_STATE_NONE && !v->op)
                vol_remove(vm, v);
}

static void reconcile(struct volmgr *vm) {
        uint64_t now = now_usec();

        if (!vm->reconstructed || vm->freeing)
                return;
        for (struct vm_vol *v = vm->vols, *next; v; v = next) {
                next = v->next;
                reconcile_vol(vm, v, now);
        }
        if (vm->last_stats_usec == 0 || now - vm->last_stats_usec >= VOLMGR_STATS_PERIOD_USEC) {
                vm->last_stats_usec = now;
                volmgr_stats_refresh(vm);
        }
}

static void on_kick(evutil_socket_t fd, short what, void *userdata) {
        reconcile(userdata);
}

static void on_tick(evutil_socket_t fd, short what, void *userdata) {
        struct volmgr *vm = userdata;
        evtimer_add_usec(vm->ev_tick, VOLMGR_RECONCILE_PERIOD_USEC);
        reconcile(vm);
}

/* tell the kubelet about pods whose last volume went away (outside of any operation's callback) */
static void on_notify(evutil_socket_t fd, short what, void *userdata) {
        struct volmgr *vm = userdata;
        char **l = TAKE_PTR(vm->gone_pods);

        for (char **u = l; u && *u; u++)
                if (!pod_has_mounts(vm, *u) && vm->pod_changed)
                        vm->pod_changed(*u, vm->userdata);
        strv_free(l);
}

/* ---------------------------------------------------------------- lifecycle */

void volmgr_set_client(struct volmgr *vm, struct kube_client *client) {
        if (vm)
                vm->client = client;
}

int volmgr_new(const struct volmgr_config *cfg, struct volmgr **ret) {
        struct volmgr *vm = calloc(1, sizeof(*vm));
        int r;

        if (!vm)
                return -ENOMEM;
        vm->base = cfg->base;
        vm->client = cfg->client;
        vm->csi = cfg->csi;
        vm->pod_may_unmount = cfg->pod_may_unmount;
        vm->pod_changed = cfg->pod_changed;
        vm->event = cfg->event;
        vm->userdata = cfg->userdata;
        vm->root_dir = strdup(cfg->root_dir);
        vm->node_name = strdup(cfg->node_name);
        vm->ev_kick = event_new(vm->base, -1, 0, on_kick, vm);
        vm->ev_tick = evtimer_new(vm->base, on_tick, vm);
        vm->ev_notify = event_new(vm->base, -1, 0, on_notify, vm);
        if (!vm->root_dir || !vm->node_name || !vm->ev_kick || !vm->ev_tick || !vm->ev_notify) {
                volmgr_free(vm);
                return -ENOMEM;
        }
        r = workpool_new_bounded(vm->base, "volume mounts", VOLMGR_MOUNT_THREADS, VOLMGR_MOUNT_THREADS_MAX,
                                 &vm->pool_mount);
        if (r >= 0)
                r = workpool_new_bounded(vm->base, "volume stats", VOLMGR_STATS_THREADS, VOLMGR_STATS_THREADS_MAX,
                                         &vm->pool_stats);
        if (r >= 0)
                r = workpool_new_bounded(vm->base, "volume ownership", VOLMGR_OWNERSHIP_THREADS,
                                         VOLMGR_OWNERSHIP_THREADS_MAX, &vm->pool_own);
        if (r < 0) {
                volmgr_free(vm);
                return r;
        }
        *ret = vm;
        return 0;
}

static void vm_pod_free(struct vm_pod *p) {
        if (!p)
                return;
        for (size_t i = 0; i < p->n_vols; i++)
                volmgr_pod_vol_done(&p->vols[i]);
        free(p->vols);
        if (p->wait_timer)
                event_free(p->wait_timer);
        if (p->poke)
                event_free(p->poke);
        pod_free(p->pod);
        free(p->uid);
        free(p);
}

struct volmgr *volmgr_free(struct volmgr *vm) {
        if (!vm)
                return NULL;
        vm->freeing = true;
        for (struct vm_pod *p; vm->pods;) {
                FLIST_POP(vm->pods, p);
                vm_pod_free(p);
        }
        /* operations in flight: their callbacks (worker jobs cancelled below, CSI calls when the drivers' clients
         * go) only free them from now on */
        for (struct vm_vol *v = vm->vols; v; v = v->next)
                if (v->op)
                        volmgr_op_orphan(TAKE_PTR(v->op));
        vm->pool_mount = workpool_free(vm->pool_mount);
        vm->pool_stats = workpool_free(vm->pool_stats);
        vm->pool_own = workpool_free(vm->pool_own);
        volmgr_stats_orphan(vm);
        for (struct vm_vol *v; vm->vols;) {
                FLIST_POP(vm->vols, v);
                vol_free(v);
        }
        if (vm->ev_kick)
                event_free(vm->ev_kick);
        if (vm->ev_tick)
                event_free(vm->ev_tick);
        if (vm->ev_notify)
                event_free(vm->ev_notify);
        strv_free(vm->in_use_reported);
        strv_free(vm->gone_pods);
        free(vm->stats_out);
        free(vm->root_dir);
        free(vm->node_name);
        free(vm);
        return NULL;
}

int volmgr_start(struct volmgr *vm) {
        int r;

        vm->started = true;
        r = volmgr_reconstruct_start(vm);
        if (r < 0)
                return r;
        evtimer_add_usec(vm->ev_tick, VOLMGR_RECONCILE_PERIOD_USEC);
        return 0;
}

void volmgr_set_sources_ready(struct volmgr *vm) {
        if (!vm || vm->sources_ready)
                return;
        vm->sources_ready = true;
        volmgr_kick(vm);
}

/* ---------------------------------------------------------------- the desired state */

static void on_poke(evutil_socket_t fd, short what, void *userdata) {
        struct vm_pod *p = userdata;
        void (*cb)(void *) = p->ready;

        if (!cb)
                return;
        p->ready = NULL;
        event_del(p->wait_timer);
        cb(p->ready_data);
}

static void on_wait_timeout(evutil_socket_t fd, short what, void *userdata) {
        struct vm_pod *p = userdata;

        p->timed_out = true;
        volmgr_pod_check_ready(p);
}

int volmgr_pod_add(struct volmgr *vm, const struct pod *pod) {
        const struct pod_volumes *pv = pod->spec.volumes;
        struct vm_pod *p = pod_find(vm, pod->uid);

        if (!p) {
                size_t n = 0;
                p = calloc(1, sizeof(*p));
                if (!p)
                        return -ENOMEM;
                p->vm = vm;
                p->uid = strdup(pod->uid);
                p->vols = calloc(pv ? pv->n_volumes + 1 : 1, sizeof(*p->vols));
                p->wait_timer = evtimer_new(vm->base, on_wait_timeout, p);
                p->poke = event_new(vm->base, -1, 0, on_poke, p);
                if (!p->uid || !p->vols || !p->wait_timer || !p->poke) {
                        vm_pod_free(p);
                        return -ENOMEM;
                }
                p->pod = pod_ref((struct pod *) pod);
                for (size_t i = 0; pv && i < pv->n_volumes; i++) {
                        const struct volume *v = &pv->volumes[i];
                        bool used = false;

                        if (!volmgr_handles(v))
                                continue;
                        /* only the volumes a container mounts (GetPodVolumeNames) */
                        for (size_t c = 0; c < pod->spec.n_containers && !used; c++) {
                                const struct volume_mounts *ms = pod_container_mounts(pod, &pod->spec.containers[c]);
                                for (size_t k = 0; ms && k < ms->n && !used; k++)
                                        used = streq_ptr(ms->items[k].name, v->name);
                        }
                        for (size_t c = 0; c < pod->spec.n_init_containers && !used; c++) {
                                const struct volume_mounts *ms = pod_container_mounts(pod,
                                                                                      &pod->spec.init_containers[c]);
                                for (size_t k = 0; ms && k < ms->n && !used; k++)
                                        used = streq_ptr(ms->items[k].name, v->name);
                        }
                        if (!used) {
                                log_v(4, "Skipping unused volume \"%s\" for pod \"%s\"", v->name, pod->name);
                                continue;
                        }
                        p->vols[n] = (struct vm_pod_vol) { .type = v->type, .read_only = v->read_only, .pod = p };
                        p->vols[n].name = strdup(v->name);
                        if (v->type == VOLUME_PVC)
                                p->vols[n].claim_name = strdup_or_null(v->claim_name);
                        else if (v->type == VOLUME_EPHEMERAL &&
                                 asprintf(&p->vols[n].claim_name, "%s-%s", pod->name, v->name) < 0)
                                p->vols[n].claim_name = NULL;
                        p->n_vols = ++n;
                        if (!p->vols[n - 1].name ||
                            ((v->type == VOLUME_PVC || v->type == VOLUME_EPHEMERAL) && !p->vols[n - 1].claim_name)) {
                                vm_pod_free(p);
                                return -ENOMEM;
                        }
                }
                FLIST_PREPEND(vm->pods, p);
        }
        volmgr_pod_resolve(p);
        return 0;
}

void volmgr_pod_remove(struct volmgr *vm, const char *uid) {
        struct vm_pod *p = vm ? pod_find(vm, uid) : NULL;

        if (!p)
                return;
        FLIST_REMOVE(vm->pods, p);
        for (struct vm_vol *v = vm->vols; v; v = v->next) {
                struct vm_mount *m = volmgr_mount_get(v, uid, false);
                if (m)
                        m->desired = false;
        }
        log_v(3, "pod %s: its volumes left the desired state", uid);
        vm_pod_free(p);
        if (!pod_has_mounts(vm, uid) && strv_extend(&vm->gone_pods, uid) >= 0)
                event_active(vm->ev_notify, EV_TIMEOUT, 0);
        volmgr_kick(vm);
}

/* the pod's state for WaitForAttachAndMount: 0 all mounted, 1 in progress, <0 errors (message) */
static int pod_state(struct vm_pod *p, struct ck_error **ret_error) {
        _cleanup_free_ char *unmounted = NULL, *errors = NULL;
        bool all = true, any_error = false;

        for (size_t i = 0; i < p->n_vols; i++) {
                struct vm_pod_vol *pv = &p->vols[i];
                struct vm_vol *v = pv->unique_name ? volmgr_vol_get(p->vm, pv->unique_name, false) : NULL;
                struct vm_mount *m = v ? volmgr_mount_get(v, p->uid, false) : NULL;
                char *n;

                if (m && m->state == VM_STATE_MOUNTED && m->desired)
                        continue;
                all = false;
                if (asprintf(&n, "%s%s%s", strempty(unmounted), unmounted ? " " : "", pv->name) < 0)
                        return -ENOMEM;
                free(unmounted);
                unmounted = n;
                if (pv->error && !pv->resolving) {
                        any_error = true;
                        if (asprintf(&n, "%s%s%s", strempty(errors), errors ? "; " : "", pv->error) < 0)
                                return -ENOMEM;
                        free(errors);
                        errors = n;
                }
        }
        if (all)
                return 0;
        if (!any_error && !p->timed_out)
                return 1;
        return ck_error_set(ret_error, any_error ? -EINVAL : -ETIMEDOUT,
                            "unmounted volumes=[%s], unattached volumes=[%s]: %s", strempty(unmounted),
                            strempty(unmounted), any_error ? errors : "timed out waiting for the condition");
}

void volmgr_pod_check_ready(struct vm_pod *p) {
        void (*cb)(void *);

        if (!p->ready || pod_state(p, NULL) == 1)
                return;
        cb = p->ready;
        p->ready = NULL;
        event_del(p->wait_timer);
        cb(p->ready_data);
}

int volmgr_pod_wait(struct volmgr *vm, const char *uid, void (*ready)(void *userdata), void *userdata,
                    struct ck_error **ret_error) {
        struct vm_pod *p = pod_find(vm, uid);
        int r;

        if (!p || p->n_vols == 0)
                return 0;
        r = pod_state(p, ret_error);
        if (r <= 0) {
                p->timed_out = false;
                return r;
        }
        if (!p->ready && !evtimer_pending(p->wait_timer, NULL)) {
                p->timed_out = false;
                evtimer_add_usec(p->wait_timer, VOLMGR_WAIT_TIMEOUT_USEC);
        }
        p->ready = ready;
        p->ready_data = userdata;
        log_v(3, "Waiting for volumes to attach and mount for pod %s", uid);
        return 1;
}

void volmgr_pod_cancel_wait(struct volmgr *vm, const char *uid) {
        struct vm_pod *p = vm ? pod_find(vm, uid) : NULL;
        if (p)
                p->ready = NULL;
}

void volmgr_pod_poke(struct volmgr *vm, const char *uid) {
        struct vm_pod *p = vm ? pod_find(vm, uid) : NULL;
        if (p && p->ready)
                event_active(p->poke, EV_TIMEOUT, 0);
}

void volmgr_driver_changed(struct volmgr *vm, const char *driver) {
        if (!vm)
                return;
        for (struct vm_vol *v = vm->vols; v; v = v->next)
                if (streq_ptr(v->spec.driver, driver) && !v->op) {
                        v->retry_at = 0;
                        v->delay = 0;
                }
        volmgr_kick(vm);
}

bool volmgr_pod_has_volumes(const struct volmgr *vm, const char *uid) {
        /* before reconstruction the node's volumes are not known yet: every pod directory may hold one */
        return vm && (!vm->reconstructed || pod_find(vm, uid) || pod_has_mounts(vm, uid));
}

char *volmgr_pod_volume_path(struct volmgr *vm, const char *uid, const char *name, bool *ret_read_only) {
        struct vm_pod *p = pod_find(vm, uid);

        for (size_t i = 0; p && i < p->n_vols; i++) {
                struct vm_vol *v;
                struct vm_mount *m;
                if (!streq(p->vols[i].name, name) || !p->vols[i].unique_name)
                        continue;
                v = volmgr_vol_get(vm, p->vols[i].unique_name, false);
                m = v ? volmgr_mount_get(v, uid, false) : NULL;
                if (!m || m->state != VM_STATE_MOUNTED)
                        return NULL;
                if (ret_read_only)
                        *ret_read_only = m->read_only || v->spec.source_read_only;
                return volmgr_mount_path(vm, v, m);
        }
        return NULL;
}

/* ---------------------------------------------------------------- node status */

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

char **volmgr_volumes_in_use(const struct volmgr *vm) {
        char **l = NULL;

        for (const struct vm_vol *v = vm ? vm->vols : NULL; v; v = v->next) {
                if (!volmgr_kind_device_mountable(v->spec.kind) || strv_contains(l, v->unique_name))
                        continue;
                if (!v->mounts && v->dev == VM_STATE_NONE)
                        continue;
                if (strv_extend(&l, v->unique_name) < 0)
                        return strv_free(l);
        }
        if (l && l[0])
                qsort(l, strv_length(l), sizeof(char *), cmp_str);
        return l;
}

void volmgr_mark_reported_in_use(struct volmgr *vm, char *const *names) {
        if (!vm)
                return;
        for (struct vm_vol *v = vm->vols; v; v = v->next) {
                bool was = v->reported_in_use;
                v->reported_in_use = strv_contains((char **) names, v->unique_name);
                if (v->reported_in_use && !was) {
                        v->retry_at = 0; /* an attach verification waiting for this may go on now */
                        volmgr_kick(vm);
                }
        }
}

/* ---------------------------------------------------------------- stats */

static int stats_collect(struct volmgr *vm, const char *uid, bool pvc_only) {
        size_t n = 0;
        struct stats_volume *l = NULL;

        free(vm->stats_out);
        vm->stats_out = NULL;
        vm->n_stats_out = 0;
        for (struct vm_vol *v = vm->vols; v; v = v->next)
                for (struct vm_mount *m = v->mounts; m; m = m->next) {
                        struct stats_volume *x;
                        if (!m->has_stats || (uid && !streq(m->pod_uid, uid)) || (pvc_only && !m->pvc_name))
                                continue;
                        x = reallocarray(l, n + 1, sizeof(*x));
                        if (!x) {
                                free(l);
                                return -ENOMEM;
                        }
                        l = x;
                        l[n] = m->stats;
                        l[n].name = m->outer_name ? m->outer_name : m->spec_name;
                        l[n].pvc_namespace = m->pvc_ns;
                        l[n].pvc_name = m->pvc_name;
                        n++;
                }
        vm->stats_out = l;
        vm->n_stats_out = n;
        return 0;
}

size_t volmgr_pod_volume_stats(struct volmgr *vm, const char *uid, const struct stats_volume **ret) {
        if (!vm || stats_collect(vm, uid, false) < 0) {
                *ret = NULL;
                return 0;
        }
        *ret = vm->stats_out;
        return vm->n_stats_out;
}

size_t volmgr_all_volume_stats(struct volmgr *vm, const struct stats_volume **ret) {
        if (!vm || stats_collect(vm, NULL, true) < 0) {
                *ret = NULL;
                return 0;
        }
        *ret = vm->stats_out;
        return vm->n_stats_out;
}
