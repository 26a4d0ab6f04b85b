/* SPDX-License-Identifier: Apache-2.0 */
/* The feature gate table and its checks. The names, defaults, stages and locks are those of the upstream kubelet
 * v1.37 (features-table.inc, generated from upstream's own registry by scripts/gen-feature-gates.sh: the kube
 * features, those of the staging modules and the logging ones cmd/kubelet adds). ckubelet acts on
 * RotateKubeletServerCertificate, ComponentStatusz and ComponentFlagz (/statusz, /flagz), GracefulNodeShutdown and
 * ExtendWebSocketsToKubelet (WebSocket exec/attach/port-forward terminated by the kubelet);
 * every other gate is accepted and recorded, so that configurations written for the upstream kubelet load. */
#include "features/features.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "basic/log.h"
#include "basic/strv.h"
#include "basic/string.h"

/* sorted by name (strcmp order) for bsearch */
static const struct feature_spec feature_table[] = {
#include "features/features-table.inc"
};

static int compare_spec(const void *key, const void *elem) {
        return strcmp(key, ((const struct feature_spec *) elem)->name);
}

const struct feature_spec *feature_lookup(const char *name) {
        if (!name)
                return NULL;
        return bsearch(name, feature_table, ELEMENTSOF(feature_table), sizeof(feature_table[0]), compare_spec);
}

int feature_gates_set(char ***gates, const char *name, bool value, bool warn, struct ck_error **ret_error) {
        const struct feature_spec *spec = feature_lookup(name);
        size_t len = strlen(name);
        char *entry;

        if (!spec)
                return ck_error_set(ret_error, -EINVAL, "unrecognized feature gate: %s", name);
        if (spec->locked && spec->default_value != value)
                return ck_error_set(ret_error, -EINVAL, "cannot set feature gate %s to %s, feature is locked to %s",
                                    name, value ? "true" : "false", spec->default_value ? "true" : "false");
        if (warn && spec->stage == FEATURE_DEPRECATED)
                log_warning("Setting deprecated feature gate %s=%s. It will be removed in a future release.", name,
                            value ? "true" : "false");
        else if (warn && spec->stage == FEATURE_GA)
                log_warning("Setting GA feature gate %s=%s. It will be removed in a future release.", name,
                            value ? "true" : "false");
        if (asprintf(&entry, "%s=%s", name, value ? "true" : "false") < 0)
                return -ENOMEM;
        for (char **g = *gates; g && *g; g++)
                if (strncmp(*g, name, len) == 0 && (*g)[len] == '=') {
                        free(*g);
                        *g = entry;
                        return 0;
                }
        return strv_push(gates, entry);
}

int feature_gates_parse(char ***gates, const char *value, bool warn, struct ck_error **ret_error) {
        _cleanup_free_ char *copy = strdup(value);
        char *item, *next;

        if (!copy)
                return -ENOMEM;
        for (item = copy; item; item = next) {
                char *eq, *k;
                bool b;
                int r;

                next = strchr(item, ',');
                if (next)
                        *next++ = '\0';
                if (*item == '\0')
                        continue;
                eq = strchr(item, '=');
                if (!eq)
                        return ck_error_set(ret_error, -EINVAL, "missing bool value for %s", strstrip(item));
                *eq = '\0';
                k = strstrip(item);
                if (parse_bool(strstrip(eq + 1), &b) < 0)
                        return ck_error_set(ret_error, -EINVAL,
                                            "invalid value of %s=%s, err: strconv.ParseBool: parsing \"%s\": "
                                            "invalid syntax",
                                            k, strstrip(eq + 1), strstrip(eq + 1));
                r = feature_gates_set(gates, k, b, warn, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

bool feature_enabled(char *const *gates, const char *name) {
        const struct feature_spec *spec = feature_lookup(name);
        size_t len = strlen(name);

        if (!spec)
                return false;
        for (char *const *g = gates; g && *g; g++)
                if (strncmp(*g, name, len) == 0 && (*g)[len] == '=')
                        return streq(*g + len + 1, "true");
        return spec->default_value;
}
