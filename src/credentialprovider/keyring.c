/* SPDX-License-Identifier: Apache-2.0 */
#include "credentialprovider/keyring.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/base64.h"
#include "basic/error.h"
#include "basic/string.h"

#define MAX_DOCKERCONFIG_SIZE (4 * 1024 * 1024)

void cred_keyring_done(struct cred_keyring *k) {
        if (!k)
                return;
        for (size_t i = 0; i < k->n; i++) {
                free(k->auths[i].key);
                if (k->auths[i].password)
                        explicit_bzero(k->auths[i].password, strlen(k->auths[i].password));
                free(k->auths[i].username);
                free(k->auths[i].password);
                free(k->auths[i].secret_namespace);
                free(k->auths[i].secret_name);
                free(k->auths[i].secret_uid);
        }
        free(k->auths);
        *k = (struct cred_keyring) {};
}

/* BasicDockerKeyring.Add: strip the scheme and a trailing /v1/ or /v2/; keep host + path */
static char *normalize_key(const char *key) {
        const char *s = key;
        char *k;
        size_t n;

        if (!strncmp(s, "https://", 8))
                s += 8;
        else if (!strncmp(s, "http://", 7))
                s += 7;
        k = strdup(s);
        if (!k)
                return NULL;
        n = strlen(k);
        if (n >= 4 && (!strcmp(k + n - 4, "/v1/") || !strcmp(k + n - 4, "/v2/")))
                k[n - 4] = '\0';
        n = strlen(k);
        while (n > 0 && k[n - 1] == '/')
                k[--n] = '\0';
        return k;
}

int cred_keyring_add_config(struct cred_keyring *k, const json_t *auths) {
        const char *key;
        const json_t *e;

        if (!json_is_object(auths))
                return -EINVAL;
        json_object_foreach((json_t *) auths, key, e) {
                const char *auth = json_string_value(json_object_get(e, "auth"));
                const char *user = json_string_value(json_object_get(e, "username"));
                const char *pass = json_string_value(json_object_get(e, "password"));
                _cleanup_free_ char *decoded = NULL, *u = NULL, *p = NULL, *nk = NULL;
                struct cred_auth *a;

                if (!json_is_object(e))
                        return -EINVAL;
                if (!isempty(auth)) {
                        /* DockerConfigEntry.UnmarshalJSON: "auth" wins over username/password */
                        char *colon;
                        int r = base64_decode(auth, MAX_DOCKERCONFIG_SIZE, &decoded, NULL);
                        if (r < 0)
                                return r;
                        colon = strchr(decoded, ':');
                        if (!colon)
                                return -EINVAL; /* "unable to parse auth field, must be formatted as base64(username:password)" */
                        *colon = '\0';
                        u = strdup(decoded);
                        p = strdup(colon + 1);
                        explicit_bzero(decoded, strlen(colon + 1) + (size_t) (colon - decoded) + 1);
                } else {
                        u = strdup(strempty(user));
                        p = strdup(strempty(pass));
                }
                nk = normalize_key(key);
                if (!u || !p || !nk)
                        return -ENOMEM;
                a = realloc(k->auths, (k->n + 1) * sizeof(*a));
                if (!a)
                        return -ENOMEM;
                k->auths = a;
                a[k->n++] = (struct cred_auth) { .key = TAKE_PTR(nk),
                                                 .username = TAKE_PTR(u),
                                                 .password = TAKE_PTR(p) };
        }
        return 0;
}

int cred_keyring_add_secret(struct cred_keyring *k, const json_t *secret, struct ck_error **ret_error) {
        const char *type = json_string_value(json_object_get(secret, "type"));
        const json_t *data = json_object_get(secret, "data");
        const char *field;
        const char *b64;
        _cleanup_free_ char *text = NULL;
        json_auto_t *doc = NULL;
        size_t len, n0;
        int r;

        if (streq_ptr(type, "kubernetes.io/dockerconfigjson"))
                field = ".dockerconfigjson";
        else if (streq_ptr(type, "kubernetes.io/dockercfg"))
                field = ".dockercfg";
        else
                return ck_error_set(ret_error, -EINVAL,
                                    "secret type %s is not kubernetes.io/dockerconfigjson nor kubernetes.io/dockercfg",
                                    type ? type : "(none)");
        b64 = json_string_value(json_object_get(data, field));
        if (!b64 || strlen(b64) > MAX_DOCKERCONFIG_SIZE || base64_decode(b64, MAX_DOCKERCONFIG_SIZE, &text, &len) < 0)
                return ck_error_set(ret_error, -EINVAL, "data[%s]: missing or not base64", field);
        doc = json_loadb(text, len, 0, NULL);
        explicit_bzero(text, len);
        if (!doc)
                return ck_error_set(ret_error, -EINVAL, "data[%s]: not JSON", field);
        n0 = k->n;
        r = cred_keyring_add_config(k, streq(field, ".dockercfg") ? doc : json_object_get(doc, "auths"));
        for (size_t i = n0; r >= 0 && i < k->n; i++) {
                const json_t *meta = json_object_get(secret, "metadata");
                k->auths[i].secret_namespace = strdup(strempty(json_string_value(json_object_get(meta, "namespace"))));
                k->auths[i].secret_name = strdup(strempty(json_string_value(json_object_get(meta, "name"))));
                k->auths[i].secret_uid = strdup(strempty(json_string_value(json_object_get(meta, "uid"))));
                if (!k->auths[i].secret_namespace || !k->auths[i].secret_name || !k->auths[i].secret_uid)
                        r = -ENOMEM;
        }
        if (r == -EINVAL)
                return ck_error_set(ret_error, r,
                                    "data[%s]: invalid docker config (auth must be base64(username:password))", field);
        return r;
}

/* "host[:port]/path" → host parts split on '.', port, path (with its leading '/') */
struct url {
        char *host;
        const char *port;
        const char *path;
        char *buf;
};

static int url_parse(const char *s, struct url *u) {
        char *slash, *colon;

        u->buf = strdup(s);
        if (!u->buf)
                return -ENOMEM;
        slash = strchr(u->buf, '/');
        u->path = slash ? s + (slash - u->buf) : "";
        if (slash)
                *slash = '\0';
        u->host = u->buf;
        colon = strrchr(u->buf, ':');
        u->port = "";
        if (colon) {
                *colon = '\0';
                u->port = colon + 1;
        }
        return 0;
}

static size_t count_parts(const char *h) {
        size_t n = 1;
        for (; *h; h++)
                n += *h == '.';
        return n;
}

int cred_url_match(const char *glob, const char *target) {
        struct url g = {}, t = {};
        bool match = false;
        int r;

        r = url_parse(glob, &g);
        if (r >= 0)
                r = url_parse(target, &t);
        if (r < 0)
                goto out;
        if (!streq(g.port, t.port) || count_parts(g.host) != count_parts(t.host) ||
            strncmp(t.path, g.path, strlen(g.path)) != 0)
                goto out;
        match = true;
        for (char *gp = g.host, *tp = t.host; gp && tp;) {
                char *gn = strchr(gp, '.'), *tn = strchr(tp, '.');
                if (gn)
                        *gn++ = '\0';
                if (tn)
                        *tn++ = '\0';
                if (fnmatch(gp, tp, 0) != 0) {
                        match = false;
                        break;
                }
                gp = gn;
                tp = tn;
        }
out:
        free(g.buf);
        free(t.buf);
        return r < 0 ? r : match;
}

char *cred_image_repository(const char *image) {
        _cleanup_free_ char *s = strdup(image);
        char *at, *last_slash, *colon, *out = NULL;
        const char *first_end;
        size_t first_len;

        if (!s)
                return NULL;
        at = strchr(s, '@');
        if (at)
                *at = '\0';
        last_slash = strrchr(s, '/');
        colon = strrchr(last_slash ? last_slash : s, ':');
        if (colon)
                *colon = '\0';
        first_end = strchr(s, '/');
        if (!first_end) {
                if (asprintf(&out, "docker.io/library/%s", s) < 0)
                        return NULL;
                return out;
        }
        first_len = (size_t) (first_end - s);
        if (memchr(s, '.', first_len) || memchr(s, ':', first_len) || (first_len == 9 && !strncmp(s, "localhost", 9)))
                return TAKE_PTR(s);
        if (asprintf(&out, "docker.io/%s", s) < 0)
                return NULL;
        return out;
}

static int cmp_reverse(const void *a, const void *b) {
        const struct cred_auth *x = *(const struct cred_auth *const *) a, *y = *(const struct cred_auth *const *) b;
        return -strcmp(x->key, y->key);
}

int cred_keyring_lookup(const struct cred_keyring *k, const char *image, const struct cred_auth ***ret, size_t *ret_n) {
        _cleanup_free_ char *repo = cred_image_repository(image);
        const struct cred_auth **out;
        size_t n = 0;

        if (!repo)
                return -ENOMEM;
        out = calloc(k->n + 1, sizeof(*out));
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < k->n; i++) {
                int m = cred_url_match(k->auths[i].key, repo);
                if (m < 0) {
                        free(out);
                        return m;
                }
                if (m)
                        out[n++] = &k->auths[i];
        }
        /* the default registry: credentials for index.docker.io serve docker.io images */
        if (n == 0 && !strncmp(repo, "docker.io/", 10))
                for (size_t i = 0; i < k->n; i++)
                        if (streq(k->auths[i].key, "index.docker.io") || streq(k->auths[i].key, "docker.io"))
                                out[n++] = &k->auths[i];
        qsort(out, n, sizeof(*out), cmp_reverse); /* stable enough: equal keys keep no particular order */
        if (n == 0) {
                free(out);
                out = NULL;
        }
        *ret = out;
        *ret_n = n;
        return 0;
}
