/* SPDX-License-Identifier: Apache-2.0 */
/* Decoding and validation of the containers' lifecycle fields: an init container's restartPolicy (a
 * sidecar: restartPolicy Always). */
#include <errno.h>
#include <stdlib.h>

#include "apis/apis-internal.h"

int pod_decode_container_lifecycle(struct field_errors *e, json_t *c, const char *cpath, struct container *ret) {
        return dec_get_string(e, c, cpath, "restartPolicy", &ret->restart_policy);
}

/* A container's restartPolicy: only init containers may have one, and only Always (upstream
 * validateInitContainers / validateContainers). */
static void validate_restart_policy(struct vctx *c, const struct container *ctr, const char *cpath, bool init) {
        _cleanup_free_ char *pp = NULL;

        if (!ctr->restart_policy)
                return;
        pp = val_child(c, cpath, "restartPolicy");
        if (!pp)
                return;
        if (!init)
                val_forbidden(c, pp, "may not be set for non-init containers");
        else if (ctr->restart_policy[0] == '\0')
                val_required(c, pp, NULL);
        else if (!streq(ctr->restart_policy, "Always"))
                val_not_supported(c, pp, ctr->restart_policy, "\"Always\"");
}

void pod_validate_lifecycle(struct vctx *c, const struct pod_spec *s) {
        for (size_t i = 0; i < s->n_containers; i++) {
                _cleanup_free_ char *cp = val_idx(c, "spec.containers", i);
                if (cp)
                        validate_restart_policy(c, &s->containers[i], cp, false);
        }
        for (size_t i = 0; i < s->n_init_containers; i++) {
                _cleanup_free_ char *cp = val_idx(c, "spec.initContainers", i);
                if (cp)
                        validate_restart_policy(c, &s->init_containers[i], cp, true);
        }
}
