/* SPDX-License-Identifier: Apache-2.0 */
#include "container/container.h"

#include <stdlib.h>
#include <string.h>

#include "basic/string.h"
#include "basic/strmap.h"
#include "container/labels.h"

static int dup_field(char **dst, const char *src) {
        return free_and_strdup(dst, src ? src : "");
}

struct kc_sandbox *kc_sandbox_free(struct kc_sandbox *s) {
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

struct kc_container *kc_container_free(struct kc_container *c) {
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
        free(c->user_groups);
        free(c);
        return NULL;
}

int kc_container_copy(const struct kc_container *s, struct kc_container **ret) {
        _cleanup_(kc_container_freep) struct kc_container *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (struct kc_container) {
                .attempt = s->attempt,
                .state = s->state,
                .created_at = s->created_at,
                .restart_count = s->restart_count,
                .have_status = s->have_status,
                .started_at = s->started_at,
                .finished_at = s->finished_at,
                .exit_code = s->exit_code,
                .have_resources = s->have_resources,
                .res_cpu_period = s->res_cpu_period,
                .res_cpu_quota = s->res_cpu_quota,
                .res_cpu_shares = s->res_cpu_shares,
                .res_memory_limit = s->res_memory_limit,
                .have_user = s->have_user,
                .user_uid = s->user_uid,
                .user_gid = s->user_gid,
                .stop_signal = s->stop_signal,
        };
        if (s->n_user_groups > 0) {
                c->user_groups = malloc(s->n_user_groups * sizeof(int64_t));
                if (!c->user_groups)
                        return -ENOMEM;
                memcpy(c->user_groups, s->user_groups, s->n_user_groups * sizeof(int64_t));
                c->n_user_groups = s->n_user_groups;
        }
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

const char *kc_container_state_to_string(enum kc_container_state s) {
        static const char *const names[] = {
                [KC_CONTAINER_CREATED] = "CONTAINER_CREATED",
                [KC_CONTAINER_RUNNING] = "CONTAINER_RUNNING",
                [KC_CONTAINER_EXITED] = "CONTAINER_EXITED",
                [KC_CONTAINER_UNKNOWN] = "CONTAINER_UNKNOWN",
        };
        return (unsigned) s < ELEMENTSOF(names) ? names[s] : "CONTAINER_UNKNOWN";
}

struct kc_pod_status *kc_pod_status_free(struct kc_pod_status *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_sandboxes; i++)
                kc_sandbox_free(s->sandboxes[i]);
        for (size_t i = 0; i < s->n_containers; i++)
                kc_container_free(s->containers[i]);
        free(s->sandboxes);
        free(s->containers);
        free(s->uid);
        free(s->name);
        free(s->namespace_);
        free(s);
        return NULL;
}

int kc_pod_status_new(const char *uid, struct kc_pod_status **ret) {
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        if (dup_field(&s->uid, uid) < 0 || dup_field(&s->name, "") < 0 || dup_field(&s->namespace_, "") < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}

int kc_pod_status_add_sandbox(struct kc_pod_status *s, struct kc_sandbox *sb) {
        struct kc_sandbox **n = reallocarray(s->sandboxes, s->n_sandboxes + 1, sizeof(*n));
        if (!n) {
                kc_sandbox_free(sb);
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

int kc_pod_status_add_container(struct kc_pod_status *s, struct kc_container *c) {
        struct kc_container **n = reallocarray(s->containers, s->n_containers + 1, sizeof(*n));
        if (!n) {
                kc_container_free(c);
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
        const struct kc_sandbox *x = *(struct kc_sandbox *const *) a, *y = *(struct kc_sandbox *const *) b;
        if (x->created_at != y->created_at)
                return x->created_at > y->created_at ? -1 : 1;
        return strcmp(x->id, y->id);
}

static int cmp_container(const void *a, const void *b) {
        const struct kc_container *x = *(struct kc_container *const *) a, *y = *(struct kc_container *const *) b;
        if (x->created_at != y->created_at)
                return x->created_at > y->created_at ? -1 : 1;
        return strcmp(x->id, y->id);
}

void kc_pod_status_sort(struct kc_pod_status *s) {
        if (s->n_sandboxes > 1)
                qsort(s->sandboxes, s->n_sandboxes, sizeof(s->sandboxes[0]), cmp_sandbox);
        if (s->n_containers > 1)
                qsort(s->containers, s->n_containers, sizeof(s->containers[0]), cmp_container);
}

const struct kc_container *kc_pod_status_find_container(const struct kc_pod_status *s, const char *name) {
        for (size_t i = 0; s && i < s->n_containers; i++)
                if (streq(s->containers[i]->name, name))
                        return s->containers[i];
        return NULL;
}
