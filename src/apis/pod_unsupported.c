/* SPDX-License-Identifier: Apache-2.0 */
/* The fields of a pod that ckubelet accepts but does not act on as the upstream kubelet does, by name, so that they
 * are said once instead of being ignored silently. Fields it cannot honour safely are refused elsewhere (validation,
 * admission, the sandbox config); the ones here change no isolation the pod relies on. */
#include <string.h>

#include "apis/pod.h"
#include "apis/pod_volumes.h"
#include "basic/string.h"
#include "basic/strv.h"

struct unsupported {
        const char *field; /* under a container: relative to it */
        const char *why;
        const char *gate; /* acted on when this feature gate is on; NULL: never */
};

/* fields of the pod spec */
static const struct unsupported pod_fields[] = {
        { "securityContext.seLinuxOptions", "SELinux labels are not applied" },
        { "securityContext.seLinuxChangePolicy", "SELinux labels are not applied" },
};

/* fields of a container (regular, init or ephemeral) */
static const struct unsupported container_fields[] = {
        { "securityContext.seLinuxOptions", "SELinux labels are not applied" },
        { "lifecycle.stopSignal", "containers are stopped with the runtime's stop signal", "ContainerStopSignals" },
};

/* the value at a dotted path, NULL when absent, null, false, or an empty object or list */
static const json_t *present(const json_t *obj, const char *path) {
        _cleanup_free_ char *copy = strdup(path);
        char *save = NULL;
        const json_t *v = obj;

        if (!copy)
                return NULL;
        for (char *part = strtok_r(copy, ".", &save); part && v; part = strtok_r(NULL, ".", &save))
                v = json_object_get(v, part);
        if (!v || json_is_null(v) || json_is_false(v) || (json_is_object(v) && json_object_size(v) == 0) ||
            (json_is_array(v) && json_array_size(v) == 0))
                return NULL;
        return v;
}

static int add(char ***l, const char *path, const char *why) {
        _cleanup_free_ char *s = NULL;
        if (asprintf(&s, "%s (%s)", path, why) < 0)
                return -ENOMEM;
        return strv_push(l, TAKE_PTR(s));
}

int pod_unsupported_fields_gated(const struct pod *pod, char *const *gates_on, char ***ret) {
        static const char *const lists[] = { "initContainers", "containers", "ephemeralContainers" };
        const json_t *spec = json_object_get(pod->raw, "spec");
        char **l = NULL;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(pod_fields); i++)
                if (present(spec, pod_fields[i].field)) {
                        _cleanup_free_ char *p = NULL;
                        r = asprintf(&p, "spec.%s", pod_fields[i].field) < 0 ? -ENOMEM : add(&l, p, pod_fields[i].why);
                }
        for (size_t k = 0; r >= 0 && k < ELEMENTSOF(lists); k++) {
                const json_t *list = json_object_get(spec, lists[k]), *c;
                size_t i;
                json_array_foreach(list, i, c)
                        for (size_t j = 0; r >= 0 && j < ELEMENTSOF(container_fields); j++)
                                if (present(c, container_fields[j].field) &&
                                    !(container_fields[j].gate && strv_contains(gates_on, container_fields[j].gate))) {
                                        _cleanup_free_ char *p = NULL;
                                        r = asprintf(&p, "spec.%s[%zu].%s", lists[k], i, container_fields[j].field) < 0
                                                    ? -ENOMEM
                                                    : add(&l, p, container_fields[j].why);
                                }
        }
        if (r < 0) {
                strv_free(l);
                return r;
        }
        *ret = l;
        return 0;
}
