/* SPDX-License-Identifier: Apache-2.0 */
#include "node/runtime_features.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string.h"

static void handlers_free(struct node_runtime_handler *h, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(h[i].name);
        free(h);
}

int node_runtime_features_set(struct node_runtime_features *f, const Runtime__V1__StatusResponse *s) {
        size_t n = MIN(s->n_runtime_handlers, (size_t) NODE_RUNTIME_HANDLERS_MAX);
        struct node_runtime_handler *h = NULL;

        if (n > 0) {
                h = calloc(n, sizeof(*h));
                if (!h)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                const Runtime__V1__RuntimeHandler *rh = s->runtime_handlers[i];
                h[i].name = strdup(strempty(rh->name));
                if (!h[i].name) {
                        handlers_free(h, i);
                        return -ENOMEM;
                }
                h[i].recursive_read_only_mounts = rh->features && rh->features->recursive_read_only_mounts;
                h[i].user_namespaces = rh->features && rh->features->user_namespaces;
        }
        handlers_free(f->handlers, f->n_handlers);
        f->handlers = h;
        f->n_handlers = n;
        f->known = true;
        f->has_features = s->features != NULL;
        f->supplemental_groups_policy = s->features && s->features->supplemental_groups_policy;
        return 0;
}

void node_runtime_features_done(struct node_runtime_features *f) {
        if (!f)
                return;
        handlers_free(f->handlers, f->n_handlers);
        *f = (struct node_runtime_features) {};
}

bool node_runtime_features_rro(const struct node_runtime_features *f, const char *handler) {
        for (size_t i = 0; f && i < f->n_handlers; i++)
                if (streq(f->handlers[i].name, strempty(handler)))
                        return f->handlers[i].recursive_read_only_mounts;
        return false;
}

bool node_runtime_features_sgp(const struct node_runtime_features *f) {
        return f && f->supplemental_groups_policy;
}
