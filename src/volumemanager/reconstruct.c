/* SPDX-License-Identifier: Apache-2.0 */
/* Reconstruction of the actual state at start (reconciler.go syncStates, and the CSI global mount directories,
 * which upstream's v1.20 left behind after a crash during unstage): the pod volume directories of the plugins the
 * manager handles and the CSI global mount directories are read on a worker thread together with the mount table;
 * every volume found becomes "uncertain" in the actual state. */

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "basic/log.h"
#include "basic/string.h"
#include "csi/csi.h"
#include "volumemanager/reconstruct.h"
#include "volumemanager/volumemanager-internal.h"
#include "volumes/mountinfo.h"

#define MAX_FOUND 100000

void volmgr_found_free(struct volmgr_found *l, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(l[i].pod_uid);
                free(l[i].spec_name);
                free(l[i].driver);
                free(l[i].handle);
                free(l[i].lifecycle);
                free(l[i].path);
        }
        free(l);
}

struct scan {
        struct volmgr_found *l;
        size_t n;
        const struct vol_mountinfo *mi;
};

static int add(struct scan *s, const struct volmgr_found *f) {
        struct volmgr_found *n;

        if (s->n >= MAX_FOUND)
                return 0;
        n = reallocarray(s->l, s->n + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        s->l = n;
        s->l[s->n++] = *f;
        return 0;
}

static bool is_mounted(const struct scan *s, const char *path) {
        return s->mi && vol_mountinfo_find(s->mi, path);
}

/* pods/<uid>/volumes/<plugin>/<name> */
static int scan_plugin_dir(struct scan *s, const char *root_dir, const char *uid, const char *plugin, int kind) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *e;

        if (asprintf(&dir, "%s/pods/%s/volumes/%s", root_dir, uid, plugin) < 0)
                return -ENOMEM;
        d = opendir(dir);
        if (!d)
                return 0;
        while ((e = readdir(d))) {
                _cleanup_free_ char *vdir = NULL, *mp = NULL;
                struct volmgr_found f = { .kind = kind };
                int r;

                if (e->d_name[0] == '.')
                        continue;
                if (asprintf(&vdir, "%s/%s", dir, e->d_name) < 0)
                        return -ENOMEM;
                if (kind == VM_KIND_CSI) {
                        _cleanup_ck_error_ struct ck_error *why = NULL;
                        struct csi_vol_data data = {};
                        if (asprintf(&mp, "%s/mount", vdir) < 0)
                                return -ENOMEM;
                        r = csi_vol_data_load(vdir, &data, &why);
                        if (r < 0) {
                                log_warning("Could not construct volume information: %s%s", ck_error_message(why),
                                            is_mounted(s, mp) ? " (the volume is mounted: left alone)" : "");
                                continue;
                        }
                        f.driver = TAKE_PTR(data.driver_name);
                        f.handle = TAKE_PTR(data.volume_handle);
                        f.lifecycle = TAKE_PTR(data.lifecycle_mode);
                        if (streq_ptr(f.lifecycle, CSI_LIFECYCLE_EPHEMERAL))
                                f.kind = VM_KIND_CSI_INLINE;
                        csi_vol_data_done(&data);
                } else
                        mp = TAKE_PTR(vdir);
                f.mounted = is_mounted(s, mp);
                f.pod_uid = strdup(uid);
                f.spec_name = strdup(e->d_name);
                f.path = TAKE_PTR(mp);
                if (!f.pod_uid || !f.spec_name || add(s, &f) < 0) {
                        free(f.pod_uid);
                        free(f.spec_name);
                        free(f.driver);
                        free(f.handle);
                        free(f.lifecycle);
                        free(f.path);
                        return -ENOMEM;
                }
        }
        return 0;
}

/* plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/{vol_data.json,globalmount} */
static int scan_global(struct scan *s, const char *root_dir) {
        _cleanup_free_ char *base = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *e;

        if (asprintf(&base, "%s/plugins/%s", root_dir, CSI_PLUGIN_NAME) < 0)
                return -ENOMEM;
        d = opendir(base);
        if (!d)
                return 0;
        while ((e = readdir(d))) {
                _cleanup_free_ char *ddir = NULL;
                _cleanup_closedir_ DIR *dd = NULL;
                struct dirent *ve;

                if (e->d_name[0] == '.' || streq(e->d_name, "pv") || asprintf(&ddir, "%s/%s", base, e->d_name) < 0)
                        continue;
                dd = opendir(ddir);
                if (!dd)
                        continue;
                while ((ve = readdir(dd))) {
                        _cleanup_ck_error_ struct ck_error *why = NULL;
                        _cleanup_free_ char *vdir = NULL, *gm = NULL;
                        struct csi_vol_data data = {};
                        struct volmgr_found f = { .kind = VM_KIND_CSI, .global = true };

                        if (ve->d_name[0] == '.' || asprintf(&vdir, "%s/%s", ddir, ve->d_name) < 0 ||
                            asprintf(&gm, "%s/globalmount", vdir) < 0)
                                continue;
                        if (csi_vol_data_load(vdir, &data, &why) < 0) {
                                log_warning("Could not construct the staged volume of %s: %s%s", vdir,
                                            ck_error_message(why),
                                            is_mounted(s, gm) ? " (it is mounted: left alone)" : "");
                                continue;
                        }
                        f.driver = TAKE_PTR(data.driver_name);
                        f.handle = TAKE_PTR(data.volume_handle);
                        csi_vol_data_done(&data);
                        f.mounted = is_mounted(s, gm);
                        f.path = TAKE_PTR(gm);
                        if (add(s, &f) < 0) {
                                free(f.driver);
                                free(f.handle);
                                free(f.path);
                                return -ENOMEM;
                        }
                }
        }
        return 0;
}

int volmgr_reconstruct_scan(const char *root_dir, const struct vol_mountinfo *mi, struct volmgr_found **ret,
                            size_t *ret_n) {
        struct scan s = { .mi = mi };
        _cleanup_free_ char *pods = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *e;
        int r = 0;

        if (asprintf(&pods, "%s/pods", root_dir) < 0)
                return -ENOMEM;
        d = opendir(pods);
        while (d && (e = readdir(d)) && r >= 0) {
                if (e->d_name[0] == '.')
                        continue;
                r = scan_plugin_dir(&s, root_dir, e->d_name, CSI_PLUGIN_DIR_NAME, VM_KIND_CSI);
                if (r >= 0)
                        r = scan_plugin_dir(&s, root_dir, e->d_name, PLUGIN_DIR_LOCAL, VM_KIND_LOCAL);
                if (r >= 0)
                        r = scan_plugin_dir(&s, root_dir, e->d_name, PLUGIN_DIR_NFS, VM_KIND_NFS);
        }
        if (r >= 0)
                r = scan_global(&s, root_dir);
        if (r < 0) {
                volmgr_found_free(s.l, s.n);
                return r;
        }
        *ret = s.l;
        *ret_n = s.n;
        return 0;
}

char *volmgr_found_unique_name(const struct volmgr_found *f) {
        char *p = NULL;
        int r;

        switch (f->kind) {
        case VM_KIND_CSI:
                return csi_unique_volume_name(f->driver, f->handle);
        case VM_KIND_CSI_INLINE:
                r = asprintf(&p, "%s/%s-%s", CSI_PLUGIN_NAME, f->pod_uid, f->spec_name);
                break;
        case VM_KIND_LOCAL:
                r = asprintf(&p, "kubernetes.io/local-volume/%s", f->spec_name);
                break;
        case VM_KIND_NFS:
                r = asprintf(&p, "kubernetes.io/nfs/%s-%s", f->pod_uid, f->spec_name);
                break;
        default:
                return NULL;
        }
        return r < 0 ? NULL : p;
}

/* ---------------------------------------------------------------- on the loop */

struct reconstruction {
        struct volmgr *vm;
        char *root_dir;
        struct volmgr_found *found;
        size_t n;
};

static int work(void *userdata) {
        struct reconstruction *rc = userdata;
        struct vol_mountinfo mi = {};
        int r;

        r = vol_mountinfo_read(NULL, &mi);
        if (r < 0)
                return r;
        r = volmgr_reconstruct_scan(rc->root_dir, &mi, &rc->found, &rc->n);
        vol_mountinfo_done(&mi);
        return r;
}

static void adopt(struct volmgr *vm, const struct volmgr_found *f) {
        _cleanup_free_ char *unique = volmgr_found_unique_name(f);
        struct vm_vol *v = unique ? volmgr_vol_get(vm, unique, true) : NULL;
        struct vm_mount *m;

        if (!v)
                return;
        if (!v->have_spec) {
                v->spec.kind = f->kind;
                v->spec.partial = true;
                v->spec.driver = strdup_or_null(f->driver);
                v->spec.handle = strdup_or_null(f->handle);
                v->spec.spec_name = strdup_or_null(f->spec_name);
                v->have_spec = true;
        }
        if (f->global) {
                v->dev = VM_STATE_UNCERTAIN;
                log_info("reconstructed staged volume %s (%s, %s)", unique, f->path,
                         f->mounted ? "mounted" : "not mounted");
                return;
        }
        m = volmgr_mount_get(v, f->pod_uid, true);
        if (!m)
                return;
        if (!m->spec_name)
                m->spec_name = strdup_or_null(f->spec_name);
        m->state = VM_STATE_UNCERTAIN;
        /* a pod mount of a staged volume: the staging is there too (upstream's reconstruction marks the device
         * mounted); unstaging is idempotent, so uncertain is safe */
        if (f->kind == VM_KIND_CSI && v->dev == VM_STATE_NONE)
                v->dev = VM_STATE_UNCERTAIN;
        log_info("reconstructed volume %s of pod %s (%s, %s)", unique, f->pod_uid, f->path,
                 f->mounted ? "mounted" : "not mounted");
}

static void done(int r, void *userdata) {
        struct reconstruction *rc = userdata;
        struct volmgr *vm = rc->vm;

        if (r < 0 && r != -ECANCELED)
                log_error("volume reconstruction failed: %s (volumes of earlier pods are not torn down)", strerror(-r));
        if (r >= 0 && !vm->freeing) {
                for (size_t i = 0; i < rc->n; i++)
                        adopt(vm, &rc->found[i]);
                log_info("volume reconstruction: %zu volume directories found", rc->n);
        }
        vm->reconstructed = true;
        volmgr_found_free(rc->found, rc->n);
        free(rc->root_dir);
        free(rc);
        volmgr_kick(vm);
}

int volmgr_reconstruct_start(struct volmgr *vm) {
        struct reconstruction *rc = calloc(1, sizeof(*rc));
        int r;

        if (!rc || !(rc->root_dir = strdup(vm->root_dir))) {
                free(rc);
                return -ENOMEM;
        }
        rc->vm = vm;
        r = workpool_submit(vm->pool_mount, work, done, rc);
        if (r < 0) {
                free(rc->root_dir);
                free(rc);
        }
        return r;
}
