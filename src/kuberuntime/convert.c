/* SPDX-License-Identifier: Apache-2.0 */
#include "kuberuntime/convert.h"

#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string.h"
#include "basic/strmap.h"
#include "container/labels.h"

/* protobuf-c map entries of every message share the shape { base, key, value } */
#define STRMAP_FROM_PB(m, n, entries)                                                   \
        ({                                                                              \
                int _r = 0;                                                             \
                for (size_t _i = 0; _i < (n) && _r >= 0; _i++)                          \
                        _r = strmap_set((m), (entries)[_i]->key, (entries)[_i]->value); \
                _r;                                                                     \
        })

static int dup_field(char **dst, const char *src) {
        return free_and_strdup(dst, src ? src : "");
}

static enum kc_sandbox_state sandbox_state_from_cri(Runtime__V1__PodSandboxState s) {
        return s == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY ? KC_SANDBOX_READY : KC_SANDBOX_NOTREADY;
}

static enum kc_container_state container_state_from_cri(Runtime__V1__ContainerState s) {
        switch (s) {
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED:
                return KC_CONTAINER_CREATED;
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING:
                return KC_CONTAINER_RUNNING;
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED:
                return KC_CONTAINER_EXITED;
        default:
                return KC_CONTAINER_UNKNOWN;
        }
}

int kr_sandbox_from_cri(const Runtime__V1__PodSandbox *p, struct kc_sandbox **ret) {
        _cleanup_(kc_sandbox_freep) struct kc_sandbox *s = calloc(1, sizeof(*s));
        const Runtime__V1__PodSandboxMetadata *m = p->metadata;

        if (!s)
                return -ENOMEM;
        s->state = sandbox_state_from_cri(p->state);
        s->created_at = p->created_at;
        s->attempt = m ? m->attempt : 0;
        if (dup_field(&s->id, p->id) < 0 || dup_field(&s->name, m ? m->name : "") < 0 ||
            dup_field(&s->namespace_, m ? m->namespace_ : "") < 0 || dup_field(&s->uid, m ? m->uid : "") < 0 ||
            dup_field(&s->ip, "") < 0)
                return -ENOMEM;
        if (STRMAP_FROM_PB(&s->labels, p->n_labels, p->labels) < 0 ||
            STRMAP_FROM_PB(&s->annotations, p->n_annotations, p->annotations) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}

static int container_fill_from_labels(struct kc_container *c) {
        const char *v;
        int n = 0;

        if (dup_field(&c->pod_uid, strmap_get(&c->labels, LABEL_POD_UID)) < 0 ||
            dup_field(&c->hash, strmap_get(&c->annotations, ANNOTATION_CONTAINER_HASH)) < 0)
                return -ENOMEM;
        v = strmap_get(&c->annotations, ANNOTATION_CONTAINER_RESTART_COUNT);
        if (v && safe_atoi(v, &n) >= 0 && n >= 0)
                c->restart_count = n;
        else
                c->restart_count = (int) c->attempt;
        return 0;
}

int kr_container_from_cri(const Runtime__V1__Container *p, struct kc_container **ret) {
        _cleanup_(kc_container_freep) struct kc_container *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        c->state = container_state_from_cri(p->state);
        c->created_at = p->created_at;
        c->attempt = p->metadata ? p->metadata->attempt : 0;
        if (dup_field(&c->id, p->id) < 0 || dup_field(&c->sandbox_id, p->pod_sandbox_id) < 0 ||
            dup_field(&c->name, p->metadata ? p->metadata->name : "") < 0 ||
            dup_field(&c->image, p->image ? p->image->image : "") < 0 || dup_field(&c->image_ref, p->image_ref) < 0 ||
            dup_field(&c->reason, "") < 0 || dup_field(&c->message, "") < 0 || dup_field(&c->log_path, "") < 0)
                return -ENOMEM;
        if (STRMAP_FROM_PB(&c->labels, p->n_labels, p->labels) < 0 ||
            STRMAP_FROM_PB(&c->annotations, p->n_annotations, p->annotations) < 0)
                return -ENOMEM;
        if (container_fill_from_labels(c) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

int kr_sandbox_set_status(struct kc_sandbox *s, const Runtime__V1__PodSandboxStatus *st) {
        s->state = sandbox_state_from_cri(st->state);
        if (dup_field(&s->ip, st->network ? st->network->ip : "") < 0)
                return -ENOMEM;
        s->host_network = st->linux && st->linux->namespaces && st->linux->namespaces->options &&
                          st->linux->namespaces->options->network == RUNTIME__V1__NAMESPACE_MODE__NODE;
        s->have_status = true;
        return 0;
}

int kr_container_set_status(struct kc_container *c, const Runtime__V1__ContainerStatus *st) {
        c->state = container_state_from_cri(st->state);
        c->started_at = st->started_at;
        c->finished_at = st->finished_at;
        c->exit_code = st->exit_code;
        if (dup_field(&c->reason, st->reason) < 0 || dup_field(&c->message, st->message) < 0 ||
            dup_field(&c->log_path, st->log_path) < 0)
                return -ENOMEM;
        if (!isempty(st->image_ref) && dup_field(&c->image_ref, st->image_ref) < 0)
                return -ENOMEM;
        /* ContainerStatus carries the full label/annotation sets too */
        if (st->n_labels > 0) {
                strmap_done(&c->labels);
                if (STRMAP_FROM_PB(&c->labels, st->n_labels, st->labels) < 0)
                        return -ENOMEM;
        }
        if (st->n_annotations > 0) {
                strmap_done(&c->annotations);
                if (STRMAP_FROM_PB(&c->annotations, st->n_annotations, st->annotations) < 0)
                        return -ENOMEM;
        }
        if (container_fill_from_labels(c) < 0)
                return -ENOMEM;
        /* the resources it runs with, as the runtime reports them (in-place resize compares them with the
         * allocated ones) */
        c->have_resources = st->resources && st->resources->linux;
        if (c->have_resources) {
                c->res_cpu_period = st->resources->linux->cpu_period;
                c->res_cpu_quota = st->resources->linux->cpu_quota;
                c->res_cpu_shares = st->resources->linux->cpu_shares;
                c->res_memory_limit = st->resources->linux->memory_limit_in_bytes;
        }
        /* the identity its process runs with (containerStatuses[].user) */
        c->have_user = st->user && st->user->linux;
        c->user_groups = mfree(c->user_groups);
        c->n_user_groups = 0;
        if (c->have_user) {
                size_t n = MIN(st->user->linux->n_supplemental_groups, (size_t) KC_USER_GROUPS_MAX);
                c->user_uid = st->user->linux->uid;
                c->user_gid = st->user->linux->gid;
                if (n > 0) {
                        c->user_groups = malloc(n * sizeof(int64_t));
                        if (!c->user_groups)
                                return -ENOMEM;
                        memcpy(c->user_groups, st->user->linux->supplemental_groups, n * sizeof(int64_t));
                        c->n_user_groups = n;
                }
        }
        c->stop_signal = (int) st->stop_signal;
        c->have_status = true;
        return 0;
}
