/* SPDX-License-Identifier: Apache-2.0 */
#include "apis/fieldpath.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apis/apis-internal.h"
#include "basic/error.h"
#include "basic/string.h"
#include "basic/strmap.h"

bool fieldpath_split_subscript(const char *fp, char **ret_path, const char **ret_sub, size_t *ret_sub_len) {
        size_t l = strlen(fp);
        const char *open;

        *ret_path = NULL;
        if (l < 2 || !streq(fp + l - 2, "']"))
                return false;
        open = strstr(fp, "['");
        if (!open || open == fp || open + 2 > fp + l - 2)
                return false;
        *ret_path = strndup(fp, open - fp);
        *ret_sub = open + 2;
        *ret_sub_len = (size_t) (fp + l - 2 - (open + 2));
        return true;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* FormatMap: `key="value"` lines sorted by key, values quoted as Go's %q, no trailing newline. */
static int fieldpath_format_map(const struct strmap *m, char **ret) {
        _cleanup_free_ char **keys = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;

        if (m->n == 0)
                return (*ret = strdup("")) ? 0 : -ENOMEM;
        keys = malloc(m->n * sizeof(char *));
        if (!keys)
                return -ENOMEM;
        memcpy(keys, m->keys, m->n * sizeof(char *));
        qsort(keys, m->n, sizeof(char *), cmp_str);
        for (size_t i = 0; i < m->n; i++) {
                _cleanup_free_ char *q = go_quote(strmap_get(m, keys[i]));
                size_t kl = strlen(keys[i]), ql;
                char *b;

                if (!q)
                        return -ENOMEM;
                ql = strlen(q);
                b = realloc(buf, len + kl + ql + 3);
                if (!b)
                        return -ENOMEM;
                buf = b;
                if (i > 0)
                        buf[len++] = '\n';
                memcpy(buf + len, keys[i], kl);
                len += kl;
                buf[len++] = '=';
                memcpy(buf + len, q, ql + 1);
                len += ql;
        }
        *ret = TAKE_PTR(buf);
        return 0;
}

int fieldpath_extract(const struct pod *pod, const char *fp, char **ret, struct ck_error **ret_error) {
        _cleanup_free_ char *path = NULL;
        const char *sub, *v;
        size_t sl;

        if (!fp)
                return ck_error_set(ret_error, -EINVAL, "unsupported fieldPath: ");
        if (fieldpath_split_subscript(fp, &path, &sub, &sl)) {
                _cleanup_free_ char *key = NULL, *q = NULL;
                if (!path || !(key = strndup(sub, sl)))
                        return -ENOMEM;
                if (streq(path, "metadata.annotations"))
                        v = strmap_get(&pod->annotations, key);
                else if (streq(path, "metadata.labels"))
                        v = strmap_get(&pod->labels, key);
                else {
                        q = go_quote(fp);
                        if (!q)
                                return -ENOMEM;
                        return ck_error_set(ret_error, -EINVAL, "fieldPath %s does not support subscript", q);
                }
        } else if (streq(fp, "metadata.annotations"))
                return fieldpath_format_map(&pod->annotations, ret);
        else if (streq(fp, "metadata.labels"))
                return fieldpath_format_map(&pod->labels, ret);
        else if (streq(fp, "metadata.name"))
                v = pod->name;
        else if (streq(fp, "metadata.namespace"))
                v = pod->namespace_;
        else if (streq(fp, "metadata.uid"))
                v = pod->uid;
        else
                return ck_error_set(ret_error, -EINVAL, "unsupported fieldPath: %s", fp);
        *ret = strdup(strempty(v));
        return *ret ? 0 : -ENOMEM;
}
