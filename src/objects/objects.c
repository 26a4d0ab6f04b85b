/* SPDX-License-Identifier: Apache-2.0 */
#include "objects/objects.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"

/* A handful of entries per pod: a list is enough. */
struct entry {
        char *key; /* "<kind>\n<ns>\n<name>" */
        json_t *obj;
        int err;
        char *message;
};

struct pod_objects {
        struct entry *entries;
        size_t n;
};

int objects_pod_new(struct pod_objects **ret) {
        struct pod_objects *o = calloc(1, sizeof(*o));
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

struct pod_objects *objects_pod_free(struct pod_objects *o) {
        if (!o)
                return NULL;
        for (size_t i = 0; i < o->n; i++) {
                free(o->entries[i].key);
                json_decref(o->entries[i].obj);
                free(o->entries[i].message);
        }
        free(o->entries);
        free(o);
        return NULL;
}

static char *object_key(const char *kind, const char *ns, const char *name) {
        char *k = NULL;
        if (asprintf(&k, "%s\n%s\n%s", strempty(kind), strempty(ns), strempty(name)) < 0)
                return NULL;
        return k;
}

static char *token_key(const char *ns, const char *sa, const char *audience, int64_t expiration) {
        char *k = NULL;
        if (asprintf(&k, "token\n%s\n%s\n%s\n%" PRId64, strempty(ns), strempty(sa), strempty(audience), expiration) < 0)
                return NULL;
        return k;
}

static struct entry *find(const struct pod_objects *o, const char *key) {
        for (size_t i = 0; i < o->n; i++)
                if (streq(o->entries[i].key, key))
                        return &o->entries[i];
        return NULL;
}

/* takes key; obj is referenced anew */
static int put(struct pod_objects *o, char *key, json_t *obj, int err, const char *message) {
        _cleanup_free_ char *k = key, *m = NULL;
        struct entry *e;

        if (!k)
                return -ENOMEM;
        if (message && !(m = strdup(message)))
                return -ENOMEM;
        e = find(o, k);
        if (!e) {
                struct entry *a = realloc(o->entries, (o->n + 1) * sizeof(*a));
                if (!a)
                        return -ENOMEM;
                o->entries = a;
                e = &a[o->n++];
                *e = (struct entry) { .key = TAKE_PTR(k) };
        }
        json_decref(e->obj);
        free(e->message);
        e->obj = json_incref(obj);
        e->err = obj ? 0 : (err < 0 ? err : -EIO);
        e->message = TAKE_PTR(m);
        return 0;
}

static int lookup(const struct pod_objects *o, char *key, json_t **ret, const char **ret_message) {
        _cleanup_free_ char *k = key;
        const struct entry *e;

        if (!k)
                return -ENOMEM;
        e = o ? find(o, k) : NULL;
        if (!e || !e->obj) {
                if (ret_message)
                        *ret_message = e ? e->message : NULL;
                return e ? e->err : -ENOENT;
        }
        *ret = e->obj;
        return 0;
}

int objects_pod_put(struct pod_objects *o, const char *kind, const char *ns, const char *name, json_t *obj) {
        if (!obj)
                return -EINVAL;
        return put(o, object_key(kind, ns, name), obj, 0, NULL);
}

int objects_pod_put_error(struct pod_objects *o, const char *kind, const char *ns, const char *name, int err,
                          const char *message) {
        return put(o, object_key(kind, ns, name), NULL, err, message);
}

int objects_pod_lookup(const struct pod_objects *o, const char *kind, const char *ns, const char *name, json_t **ret,
                       const char **ret_message) {
        return lookup(o, object_key(kind, ns, name), ret, ret_message);
}

int objects_pod_put_token(struct pod_objects *o, const char *ns, const char *service_account, const char *audience,
                          int64_t expiration_seconds, json_t *status) {
        if (!status)
                return -EINVAL;
        return put(o, token_key(ns, service_account, audience, expiration_seconds), status, 0, NULL);
}

int objects_pod_put_token_error(struct pod_objects *o, const char *ns, const char *service_account,
                                const char *audience, int64_t expiration_seconds, int err, const char *message) {
        return put(o, token_key(ns, service_account, audience, expiration_seconds), NULL, err, message);
}

int objects_pod_lookup_token(const struct pod_objects *o, const char *ns, const char *service_account,
                             const char *audience, int64_t expiration_seconds, json_t **ret, const char **ret_message) {
        return lookup(o, token_key(ns, service_account, audience, expiration_seconds), ret, ret_message);
}
