/* SPDX-License-Identifier: Apache-2.0 */
#include "kuberuntime/runtime_state.h"

#include <string.h>

#include "kuberuntime/labels.h"

/* protobuf-c map entries of every message share the shape { base, key, value } */
#define STRMAP_FROM_PB(m, n, entries)                                                      \
        ({                                                                                 \
                int _r = 0;                                                                \
                for (size_t _i = 0; _i < (n) && _r >= 0; _i++)                            \
                        _r = strmap_set((m), (entries)[_i]->key, (entries)[_i]->value);   \
                _r;                                                                        \
        })

static int dup_field(char **dst, const char *src) {
        return free_and_strdup(dst, src ? src : "");
}

struct kr_sandbox *kr_sandbox_free(struct kr_sandbox *s) {
        if (!s)
                return NULL;
        free(s->id);
        free(s->name);
        free(s->namespace_);
        free(s->uid);
        strmap_done(&s->labels);
        strmap_done(&s->annotations);
        free(s->ip);
        free(s);
        return NULL;
}

struct kr_container *kr_container_free(struct kr_container *c) {
        if (!c)
                return NULL;
        free(c->id);
        free(c->sandbox_id);
        free(c->name);
        free(c->image);
        free(c->image_ref);
        strmap_done(&c->labels);
        strmap_done(&c->annotations);
        free(c->pod_uid);
        free(c->hash);
        free(c->reason);
        free(c->message);
        free(c->log_path);
        free(c);
        return NULL;
}

int kr_sandbox_copy(const struct kr_sandbox *s, struct kr_sandbox **ret) {
        _cleanup_(kr_sandbox_freep) struct kr_sandbox *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (struct kr_sandbox) {
                .attempt = s->attempt,
                .state = s->state,
                .created_at = s->created_at,
                .have_status = s->have_status,
                .host_network = s->host_network,
        };
        if (dup_field(&c->id, s->id) < 0 || dup_field(&c->name, s->name) < 0 ||
            dup_field(&c->namespace_, s->namespace_) < 0 || dup_field(&c->uid, s->uid) < 0 ||
            dup_field(&c->ip, s->ip) < 0 || strmap_copy(&s->labels, &c->labels) < 0 ||
            strmap_copy(&s->annotations, &c->annotations) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

int kr_container_copy(const struct kr_container *s, struct kr_container **ret) {
        _cleanup_(kr_container_freep) struct kr_container *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (struct kr_container) {
                .attempt = s->attempt,
                .state = s->state,
                .created_at = s->created_at,
                .restart_count = s->restart_count,
                .have_status = s->have_status,
                .started_at = s->started_at,
                .finished_at = s->finished_at,
                .exit_code = s->exit_code,
        };
        if (dup_field(&c->id, s->id) < 0 || dup_field(&c->sandbox_id, s->sandbox_id) < 0 ||
            dup_field(&c->name, s->name) < 0 || dup_field(&c->image, s->image) < 0 ||
            dup_field(&c->image_ref, s->image_ref) < 0 || dup_field(&c->pod_uid, s->pod_uid) < 0 ||
            dup_field(&c->hash, s->hash) < 0 || dup_field(&c->reason, s->reason) < 0 ||
            dup_field(&c->message, s->message) < 0 || dup_field(&c->log_path, s->log_path) < 0 ||
            strmap_copy(&s->labels, &c->labels) < 0 || strmap_copy(&s->annotations, &c->annotations) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

static enum kr_sandbox_state sandbox_state_from_cri(Runtime__V1__PodSandboxState s) {
        return s == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY ? KR_SANDBOX_READY : KR_SANDBOX_NOTREADY;
}

static enum kr_container_state container_state_from_cri(Runtime__V1__ContainerState s) {
        switch (s) {
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED:
                return KR_CONTAINER_CREATED;
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING:
                return KR_CONTAINER_RUNNING;
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED:
                return KR_CONTAINER_EXITED;
        default:
                return KR_CONTAINER_UNKNOWN;
        }
}

int kr_sandbox_from_cri(const Runtime__V1__PodSandbox *p, struct kr_sandbox **ret) {
        _cleanup_(kr_sandbox_freep) struct kr_sandbox *s = calloc(1, sizeof(*s));
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

static int container_fill_from_labels(struct kr_container *c) {
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

int kr_container_from_cri(const Runtime__V1__Container *p, struct kr_container **ret) {
        _cleanup_(kr_container_freep) struct kr_container *c = calloc(1, sizeof(*c));

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

int kr_sandbox_set_status(struct kr_sandbox *s, const Runtime__V1__PodSandboxStatus *st) {
        s->state = sandbox_state_from_cri(st->state);
        if (dup_field(&s->ip, st->network ? st->network->ip : "") < 0)
                return -ENOMEM;
        s->host_network = st->linux && st->linux->namespaces && st->linux->namespaces->options &&
                          st->linux->namespaces->options->network == RUNTIME__V1__NAMESPACE_MODE__NODE;
        s->have_status = true;
        return 0;
}

int kr_container_set_status(struct kr_container *c, const Runtime__V1__ContainerStatus *st) {
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
        c->have_status = true;
        return 0;
}

const char *kr_sandbox_state_to_string(enum kr_sandbox_state s) {
        return s == KR_SANDBOX_READY ? "SANDBOX_READY" : "SANDBOX_NOTREADY";
}

const char *kr_container_state_to_string(enum kr_container_state s) {
        static const char *const names[] = {
                [KR_CONTAINER_CREATED] = "CONTAINER_CREATED",
                [KR_CONTAINER_RUNNING] = "CONTAINER_RUNNING",
                [KR_CONTAINER_EXITED] = "CONTAINER_EXITED",
                [KR_CONTAINER_UNKNOWN] = "CONTAINER_UNKNOWN",
        };
        return (unsigned) s < ELEMENTSOF(names) ? names[s] : "CONTAINER_UNKNOWN";
}

struct kr_pod_status *kr_pod_status_free(struct kr_pod_status *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_sandboxes; i++)
                kr_sandbox_free(s->sandboxes[i]);
        for (size_t i = 0; i < s->n_containers; i++)
                kr_container_free(s->containers[i]);
        free(s->sandboxes);
        free(s->containers);
        free(s->uid);
        free(s->name);
        free(s->namespace_);
        free(s);
        return NULL;
}

int kr_pod_status_new(const char *uid, struct kr_pod_status **ret) {
        _cleanup_(kr_pod_status_freep) struct kr_pod_status *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        if (dup_field(&s->uid, uid) < 0 || dup_field(&s->name, "") < 0 || dup_field(&s->namespace_, "") < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}

int kr_pod_status_add_sandbox(struct kr_pod_status *s, struct kr_sandbox *sb) {
        struct kr_sandbox **n = realloc(s->sandboxes, sizeof(*n) * (s->n_sandboxes + 1));
        if (!n) {
                kr_sandbox_free(sb);
                return -ENOMEM;
        }
        s->sandboxes = n;
        s->sandboxes[s->n_sandboxes++] = sb;
        if (isempty(s->name) && !isempty(sb->name)) {
                if (dup_field(&s->name, sb->name) < 0 || dup_field(&s->namespace_, sb->namespace_) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int kr_pod_status_add_container(struct kr_pod_status *s, struct kr_container *c) {
        struct kr_container **n = realloc(s->containers, sizeof(*n) * (s->n_containers + 1));
        if (!n) {
                kr_container_free(c);
                return -ENOMEM;
        }
        s->containers = n;
        s->containers[s->n_containers++] = c;
        if (isempty(s->name)) {
                const char *name = strmap_get(&c->labels, LABEL_POD_NAME);
                const char *ns = strmap_get(&c->labels, LABEL_POD_NAMESPACE);
                if (name && ns && (dup_field(&s->name, name) < 0 || dup_field(&s->namespace_, ns) < 0))
                        return -ENOMEM;
        }
        return 0;
}

static int cmp_sandbox(const void *a, const void *b) {
        const struct kr_sandbox *x = *(struct kr_sandbox *const *) a, *y = *(struct kr_sandbox *const *) b;
        if (x->created_at != y->created_at)
                return x->created_at > y->created_at ? -1 : 1;
        return strcmp(x->id, y->id);
}

static int cmp_container(const void *a, const void *b) {
        const struct kr_container *x = *(struct kr_container *const *) a, *y = *(struct kr_container *const *) b;
        if (x->created_at != y->created_at)
                return x->created_at > y->created_at ? -1 : 1;
        return strcmp(x->id, y->id);
}

void kr_pod_status_sort(struct kr_pod_status *s) {
        if (s->n_sandboxes > 1)
                qsort(s->sandboxes, s->n_sandboxes, sizeof(s->sandboxes[0]), cmp_sandbox);
        if (s->n_containers > 1)
                qsort(s->containers, s->n_containers, sizeof(s->containers[0]), cmp_container);
}

const struct kr_container *kr_pod_status_find_container(const struct kr_pod_status *s, const char *name) {
        for (size_t i = 0; s && i < s->n_containers; i++)
                if (streq(s->containers[i]->name, name))
                        return s->containers[i];
        return NULL;
}
