/* SPDX-License-Identifier: Apache-2.0 */
/* Cgroup names as upstream's CgroupName (pkg/kubelet/cm/cgroup_manager_linux.go). Pure. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/strv.h"
#include "cm/cm.h"

int cm_cgroup_name(const char *cgroup_root, const char *const *parts, size_t n_parts, char **ret) {
        _cleanup_free_ char *root = NULL;
        char **l = NULL, *saveptr = NULL, *tok, *s;

        root = strdup(strempty(cgroup_root));
        if (!root)
                return -ENOMEM;
        for (tok = strtok_r(root, "/", &saveptr); tok; tok = strtok_r(NULL, "/", &saveptr))
                if (strv_extend(&l, tok) < 0)
                        goto oom;
        for (size_t i = 0; i < n_parts; i++) {
                if (isempty(parts[i]) || strchr(parts[i], '/')) {
                        strv_free(l);
                        return -EINVAL;
                }
                if (strv_extend(&l, parts[i]) < 0)
                        goto oom;
        }
        s = strv_join(l, "/");
        strv_free(l);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
oom:
        strv_free(l);
        return -ENOMEM;
}

int cm_pod_cgroup_name(const char *cgroup_root, enum qos_class qos, const char *uid, char **ret) {
        _cleanup_free_ char *pod = NULL;
        const char *parts[3];
        size_t n = 0;

        if (isempty(uid))
                return -EINVAL;
        if (asprintf(&pod, "pod%s", uid) < 0)
                return -ENOMEM;
        parts[n++] = "kubepods";
        if (qos == QOS_BURSTABLE)
                parts[n++] = "burstable";
        else if (qos == QOS_BEST_EFFORT)
                parts[n++] = "besteffort";
        parts[n++] = pod;
        return cm_cgroup_name(cgroup_root, parts, n, ret);
}

int cm_name_to_cgroupfs(const char *name, char **ret) {
        char *s;
        if (asprintf(&s, "/%s", strempty(name)) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int cm_name_to_systemd(const char *name, char **ret) {
        _cleanup_free_ char *escaped = NULL, *out = NULL;
        size_t len, n_parts = 1, pos = 0;

        if (isempty(name)) {
                out = strdup("/");
                if (!out)
                        return -ENOMEM;
                *ret = TAKE_PTR(out);
                return 0;
        }
        /* escapeSystemdCgroupName: '-' → '_'; components joined with '-' */
        escaped = strdup(name);
        if (!escaped)
                return -ENOMEM;
        len = strlen(escaped);
        for (size_t i = 0; i < len; i++) {
                if (escaped[i] == '-')
                        escaped[i] = '_';
                else if (escaped[i] == '/') {
                        if (i == 0 || i + 1 == len || name[i - 1] == '/')
                                return -EINVAL;
                        escaped[i] = '-';
                        n_parts++;
                }
        }
        /* ExpandSlice("a-b-c.slice") = "/a.slice/a-b.slice/a-b-c.slice" */
        out = malloc(n_parts * (len + sizeof("/.slice")) + 1);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i <= len; i++)
                if (i == len || escaped[i] == '-') {
                        out[pos++] = '/';
                        memcpy(out + pos, escaped, i);
                        pos += i;
                        memcpy(out + pos, ".slice", 6);
                        pos += 6;
                }
        out[pos] = '\0';
        *ret = TAKE_PTR(out);
        return 0;
}
