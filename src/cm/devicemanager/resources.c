/* SPDX-License-Identifier: Apache-2.0 */
/* The device manager's resources and their devices, its checkpoint, and what the pod resources API and admission
 * read of them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "cm/devicemanager/manager-internal.h"

/* ---------------------------------------------------------------- resources */

struct resource *dm_resource_find(const struct devicemanager *m, const char *name) {
        for (size_t i = 0; i < m->n_resources; i++)
                if (!m->resources[i].deleted && streq(m->resources[i].name, name))
                        return &m->resources[i];
        return NULL;
}

void dm_devices_free(struct resource *r) {
        for (size_t i = 0; i < r->n_devices; i++)
                free(r->devices[i].id);
        free(r->devices);
        r->devices = NULL;
        r->n_devices = 0;
}

/* the resource's slot, live or dropped (a dropped one is reused, so a name has one slot at most); -1 if none */
static ssize_t resource_slot(const struct devicemanager *m, const char *name) {
        for (size_t i = 0; i < m->n_resources; i++)
                if (streq(m->resources[i].name, name))
                        return (ssize_t) i;
        return -1;
}

bool dm_resource_has_room(const struct devicemanager *m, const char *name) {
        return resource_slot(m, name) >= 0 || m->n_resources < MAX_RESOURCES;
}

struct resource *dm_resource_add(struct devicemanager *m, const char *name) {
        ssize_t i = resource_slot(m, name);
        struct resource *r, *n;

        if (i >= 0) {
                m->resources[i].deleted = false;
                return &m->resources[i];
        }
        if (!dm_resource_has_room(m, name))
                return NULL;
        n = reallocarray(m->resources, m->n_resources + 1, sizeof(*n));
        if (!n)
                return NULL;
        m->resources = n;
        r = &n[m->n_resources];
        *r = (struct resource) { .name = strdup(name) };
        if (!r->name)
                return NULL;
        m->n_resources++;
        return r;
}

int dm_healthy_ids(const struct resource *r, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;

        for (size_t i = 0; r && i < r->n_devices; i++)
                if (r->devices[i].healthy && strv_extend(&l, r->devices[i].id) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

int dm_devices_numa(const struct resource *r, char *const *ids, int64_t **ret) {
        _cleanup_free_ int64_t *v = calloc(strv_length((char **) ids) + 1, sizeof(*v));
        bool aware = false;

        if (!v)
                return -ENOMEM;
        for (size_t i = 0; ids && ids[i]; i++) {
                const struct device *d = dm_device_find(r, ids[i]);
                v[i] = d && d->has_numa ? d->numa : -1;
                aware = aware || v[i] >= 0;
        }
        *ret = aware ? TAKE_PTR(v) : NULL;
        return 0;
}

const struct device *dm_device_find(const struct resource *r, const char *id) {
        for (size_t i = 0; r && i < r->n_devices; i++)
                if (streq(r->devices[i].id, id))
                        return &r->devices[i];
        return NULL;
}

bool dm_is_device_resource(const struct devicemanager *m, const char *name) {
        if (dm_resource_find(m, name))
                return true;
        for (size_t i = 0; i < m->pd.n; i++)
                if (streq(m->pd.allocs[i].resource, name))
                        return true;
        return false;
}

/* ---------------------------------------------------------------- checkpoint */

void dm_write_checkpoint(struct devicemanager *m) {
        struct dm_registered *reg = calloc(m->n_resources ? m->n_resources : 1, sizeof(*reg));
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        int r;

        if (!reg)
                goto oom;
        for (size_t i = 0; i < m->n_resources; i++) {
                if (m->resources[i].deleted)
                        continue;
                reg[n].resource = m->resources[i].name;
                if (dm_healthy_ids(&m->resources[i], &reg[n].device_ids) < 0) {
                        for (size_t j = 0; j < n; j++)
                                strv_free(reg[j].device_ids);
                        free(reg);
                        goto oom;
                }
                n++;
        }
        text = dm_checkpoint_encode(&m->pd, reg, n);
        for (size_t j = 0; j < n; j++)
                strv_free(reg[j].device_ids);
        free(reg);
        if (!text)
                goto oom;
        if (m->ckpt) {
                /* a worker writes it; updates that come while it writes are coalesced (issue 26) */
                dm_ckpt_writer_set(m->ckpt, TAKE_PTR(text));
                return;
        }
        r = write_file_atomic(m->checkpoint, text, strlen(text), 0600);
        if (r < 0)
                log_warning("failed to write checkpoint file \"%s\": %s", DM_CHECKPOINT_FILE, strerror(-r));
        return;
oom:
        log_warning("failed to write checkpoint file \"%s\": out of memory", DM_CHECKPOINT_FILE);
}

void dm_read_checkpoint(struct devicemanager *m) {
        _cleanup_free_ char *text = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct dm_registered *reg = NULL;
        size_t size, n_reg = 0;
        int r;

        r = read_full_file(m->checkpoint, DM_CHECKPOINT_MAX, &text, &size);
        if (r == -ENOENT) {
                log_v(2, "no device manager checkpoint yet (%s)", m->checkpoint);
                return;
        }
        if (r >= 0)
                r = dm_checkpoint_decode(text, size, &m->pd, &reg, &n_reg, &err);
        if (r < 0) {
                log_warning("Continue after failing to read checkpoint file. Device allocation info may NOT be "
                            "up-to-date. Err: %s",
                            ck_error_message_or(err, r));
                return;
        }
        /* the resources come back with no devices until their plugins register again (a stopped endpoint) */
        for (size_t i = 0; i < n_reg; i++) {
                struct resource *res = dm_resource_add(m, reg[i].resource);
                if (res)
                        res->stopped_usec = now_usec();
        }
        dm_registered_free(reg, n_reg);
        log_info("device manager: restored %zu device assignments from %s", m->pd.n, m->checkpoint);
}

/* ---------------------------------------------------------------- pod resources */

int64_t dm_admission_allocatable(const struct devicemanager *m, const char *resource) {
        const struct resource *r;
        _cleanup_strv_free_ char **used = NULL;
        int64_t healthy = 0;

        if (!m || !dm_is_device_resource(m, resource))
                return -1;
        r = dm_resource_find(m, resource);
        for (size_t k = 0; r && k < r->n_devices; k++)
                healthy += r->devices[k].healthy;
        if (dm_pod_devices_in_use(&m->pd, resource, false, &used) < 0)
                return healthy;
        return MAX(healthy, (int64_t) strv_length(used));
}

void dm_foreach_container_device(const struct devicemanager *m, const char *pod_uid, const char *container,
                                 dm_device_cb cb, void *userdata) {
        for (size_t i = 0; m && i < m->pd.n; i++) {
                const struct dm_alloc *a = &m->pd.allocs[i];
                const struct resource *r;
                if (!a->resp || !streq(a->pod_uid, pod_uid) || !streq(a->container, container))
                        continue;
                r = dm_resource_find(m, a->resource);
                for (size_t k = 0; a->device_ids[k]; k++) {
                        const struct device *d = dm_device_find(r, a->device_ids[k]);
                        cb(a->resource, a->device_ids[k], a->numa[k], d ? d->has_numa : a->numa[k] != 0, userdata);
                }
        }
}

bool dm_device_healthy(const struct devicemanager *m, const char *resource, const char *id) {
        const struct resource *r = m ? dm_resource_find(m, resource) : NULL;
        const struct device *d = r ? dm_device_find(r, id) : NULL;

        return !d || d->healthy;
}

void dm_foreach_allocatable_device(const struct devicemanager *m, dm_device_cb cb, void *userdata) {
        for (size_t i = 0; m && i < m->n_resources; i++) {
                const struct resource *r = &m->resources[i];
                for (size_t k = 0; !r->deleted && k < r->n_devices; k++)
                        if (r->devices[k].healthy)
                                cb(r->name, r->devices[k].id, r->devices[k].numa, r->devices[k].has_numa, userdata);
        }
}

void dm_foreach_available_device(const struct devicemanager *m, const char *resource, dm_device_cb cb, void *userdata) {
        const struct resource *r = m ? dm_resource_find(m, resource) : NULL;
        _cleanup_strv_free_ char **in_use = NULL;

        if (!r || dm_pod_devices_in_use(&m->pd, resource, true, &in_use) < 0)
                return;
        for (size_t k = 0; k < r->n_devices; k++)
                if (r->devices[k].healthy && !strv_contains(in_use, r->devices[k].id))
                        cb(r->name, r->devices[k].id, r->devices[k].numa, r->devices[k].has_numa, userdata);
}
