/* SPDX-License-Identifier: Apache-2.0 */
/* Loading a kubeconfig (k8s.io/client-go/tools/clientcmd, v1 Config): the current context's cluster and
 * user, with clientcmd's checks (ConfirmUsable: the context, its cluster and user exist; data and file forms
 * not both given; a client certificate needs a key; files readable). Relative paths are resolved against the
 * kubeconfig's directory (ResolveLocalPaths). Secrets never go into error messages. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "basic/yaml_json.h"
#include "basic/base64.h"
#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "client/client-internal.h"

static void free_secret(char *s) {
        if (!s)
                return;
        explicit_bzero(s, strlen(s));
        free(s);
}

void kube_config_done(struct kube_config *c) {
        if (!c)
                return;
        free(c->server);
        free(c->ca_file);
        free(c->ca_data);
        free(c->cert_file);
        free(c->cert_data);
        free(c->key_file);
        free_secret(c->key_data);
        free_secret(c->token);
        free(c->token_file);
        free(c->tls_server_name);
        free(c->proxy_url);
        *c = (struct kube_config) {};
}

struct loader {
        const char *path; /* the kubeconfig, for messages */
        char *dir;        /* its absolute directory */
        struct ck_error **ret_error;
};

static int fail(struct loader *l, int r, const char *fmt, ...) _printf_(3, 4);
static int fail(struct loader *l, int r, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;

        if (!l->ret_error)
                return r;
        if (VA_FORMAT(msg, fmt) < 0)
                return ck_error_set(l->ret_error, r, "%s", strerror(-r));
        return ck_error_set(l->ret_error, r, "%s: %s", l->path, msg);
}

/* obj[key] as a string: NULL when absent, null or ""; an error for another type. */
static int get_string(struct loader *l, json_t *obj, const char *where, const char *key, const char **ret) {
        json_t *v = json_object_get(obj, key);

        *ret = NULL;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return fail(l, -EINVAL, "%s.%s: must be a string", where, key);
        if (json_string_length(v) != strlen(json_string_value(v)))
                return fail(l, -EINVAL, "%s.%s: contains a NUL character", where, key);
        if (json_string_length(v) > 0)
                *ret = json_string_value(v);
        return 0;
}

static int get_bool(struct loader *l, json_t *obj, const char *where, const char *key, bool *ret) {
        json_t *v = json_object_get(obj, key);

        *ret = false;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_boolean(v))
                return fail(l, -EINVAL, "%s.%s: must be true or false", where, key);
        *ret = json_is_true(v);
        return 0;
}

/* A path from the kubeconfig: made absolute against the kubeconfig's directory. */
static int get_path(struct loader *l, json_t *obj, const char *where, const char *key, char **ret) {
        const char *s;
        int r;

        r = get_string(l, obj, where, key, &s);
        if (r < 0)
                return r;
        if (!s) {
                *ret = NULL;
                return 0;
        }
        if (s[0] == '/')
                *ret = strdup(s);
        else if (asprintf(ret, "%s/%s", l->dir, s) < 0)
                *ret = NULL;
        return *ret ? 0 : -ENOMEM;
}

#define KUBECONFIG_DATA_MAX (1024 * 1024)

/* A *-data field: base64 of PEM text. */
static int get_pem_data(struct loader *l, json_t *obj, const char *where, const char *key, char **ret) {
        _cleanup_free_ char *data = NULL;
        const char *s;
        size_t len;
        int r;

        r = get_string(l, obj, where, key, &s);
        if (r < 0)
                return r;
        if (!s) {
                *ret = NULL;
                return 0;
        }
        r = base64_decode(s, KUBECONFIG_DATA_MAX, &data, &len);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return fail(l, r, "%s.%s: invalid base64", where, key);
        if (memchr(data, '\0', len) || !strstr(data, "-----BEGIN ")) {
                explicit_bzero(data, len);
                return fail(l, -EINVAL, "%s.%s: no PEM data found", where, key);
        }
        *ret = TAKE_PTR(data);
        return 0;
}

static int check_readable(struct loader *l, const char *file, const char *what, const char *where, const char *name) {
        _cleanup_close_ int fd = -1;

        fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                int r = negative_errno();
                return fail(l, r, "%s: unable to read %s %s for %s: %s", where, what, file, name, strerror(-r));
        }
        return 0;
}

/* list[i] with "name" == name; *ret NULL if none. Duplicate names are an error, as in clientcmd's conversion. */
static int find_named(struct loader *l, json_t *root, const char *list_key, const char *item_key, const char *name,
                      json_t **ret, char where[static 64]) {
        json_t *list = json_object_get(root, list_key), *item;
        size_t i;

        *ret = NULL;
        if (!list || json_is_null(list))
                return 0;
        if (!json_is_array(list))
                return fail(l, -EINVAL, "%s: must be a list", list_key);
        json_array_foreach(list, i, item) {
                json_t *n, *inner;

                if (!json_is_object(item))
                        return fail(l, -EINVAL, "%s[%zu]: must be an object", list_key, i);
                n = json_object_get(item, "name");
                if (!json_is_string(n))
                        return fail(l, -EINVAL, "%s[%zu].name: must be a string", list_key, i);
                if (!streq(json_string_value(n), name))
                        continue;
                if (*ret)
                        return fail(l, -EINVAL, "%s[%zu]: duplicate name \"%s\" in list", list_key, i, name);
                inner = json_object_get(item, item_key);
                if (inner && !json_is_null(inner) && !json_is_object(inner))
                        return fail(l, -EINVAL, "%s[%zu].%s: must be an object", list_key, i, item_key);
                *ret = inner && json_is_object(inner) ? inner : json_null();
                snprintf(where, 64, "%s[%zu].%s", list_key, i, item_key);
        }
        return 0;
}

static int load_cluster(struct loader *l, json_t *cluster, const char *where, const char *name, struct kube_config *c) {
        const char *server, *s;
        int r;

        if (!json_is_object(cluster))
                return fail(l, -EINVAL, "%s: no server found for cluster \"%s\"", where, name);
        r = get_string(l, cluster, where, "server", &server);
        if (r < 0)
                return r;
        if (!server)
                return fail(l, -EINVAL, "%s.server: no server found for cluster \"%s\"", where, name);
        if (strpbrk(server, " \t\r\n"))
                return fail(l, -EINVAL, "%s.server: invalid URL \"%s\"", where, server);
        if ((r = get_path(l, cluster, where, "certificate-authority", &c->ca_file)) < 0 ||
            (r = get_pem_data(l, cluster, where, "certificate-authority-data", &c->ca_data)) < 0 ||
            (r = get_bool(l, cluster, where, "insecure-skip-tls-verify", &c->insecure_skip_tls_verify)) < 0)
                return r;
        {
                if ((r = get_string(l, cluster, where, "tls-server-name", &s)) < 0)
                        return r;
                if (s && (strpbrk(s, "/:@ \t\r\n[]") || strlen(s) > 253))
                        return fail(l, -EINVAL, "%s.tls-server-name: invalid server name \"%s\"", where, s);
                if (s && !(c->tls_server_name = strdup(s)))
                        return -ENOMEM;
                if ((r = get_string(l, cluster, where, "proxy-url", &s)) < 0)
                        return r;
                if (s && strpbrk(s, " \t\r\n"))
                        return fail(l, -EINVAL, "%s.proxy-url: invalid URL", where);
                if (s && !(c->proxy_url = strdup(s)))
                        return -ENOMEM;
        }
        if ((r = get_bool(l, cluster, where, "disable-compression", &c->disable_compression)) < 0)
                return r;

        if (c->ca_file && c->ca_data)
                return fail(l, -EINVAL,
                            "%s: certificate-authority-data and certificate-authority are both specified "
                            "for %s",
                            where, name);
        if (c->ca_file && (r = check_readable(l, c->ca_file, "certificate-authority", where, name)) < 0)
                return r;
        if (c->insecure_skip_tls_verify && (c->ca_file || c->ca_data))
                return fail(l, -EINVAL, "%s: specifying a root certificates file with the insecure flag is not allowed",
                            where);

        /* clientcmd's DefaultServerURL: no scheme means https when TLS is configured, else http */
        if (!strstr(server, "://")) {
                bool tls = c->ca_file || c->ca_data || c->insecure_skip_tls_verify;
                if (asprintf(&c->server, "%s://%s", tls ? "https" : "http", server) < 0) {
                        c->server = NULL;
                        return -ENOMEM;
                }
        } else if (strncasecmp(server, "https://", 8) == 0 || strncasecmp(server, "http://", 7) == 0) {
                c->server = strdup(server);
                if (!c->server)
                        return -ENOMEM;
        } else
                return fail(l, -EINVAL, "%s.server: unsupported scheme in \"%s\" (want https:// or http://)", where,
                            server);
        /* before trimming the trailing slashes, which would eat those of "https://" */
        s = strstr(c->server, "://") + 3;
        if (*s == '\0' || *s == '/')
                return fail(l, -EINVAL, "%s.server: no host in \"%s\"", where, server);
        for (size_t n = strlen(c->server); n > 0 && c->server[n - 1] == '/'; n--)
                c->server[n - 1] = '\0';
        return 0;
}

static int load_user(struct loader *l, json_t *user, const char *where, const char *name, struct kube_config *c) {
        static const char *const unsupported[][2] = {
                { "exec", "exec credential plugins are not supported" },
                { "auth-provider", "auth providers are not supported" },
                { "username", "basic authentication is not supported" },
                { "password", "basic authentication is not supported" },
                { "as", "impersonation is not supported" },
        };
        const char *token;
        _cleanup_free_ char *token_file = NULL;
        int r;

        if (!json_is_object(user))
                return 0; /* an empty user: anonymous */
        for (size_t i = 0; i < ELEMENTSOF(unsupported); i++) {
                json_t *v = json_object_get(user, unsupported[i][0]);
                if (v && !json_is_null(v) && !(json_is_string(v) && json_string_length(v) == 0))
                        return fail(l, -EOPNOTSUPP, "%s.%s: %s", where, unsupported[i][0], unsupported[i][1]);
        }
        if ((r = get_path(l, user, where, "client-certificate", &c->cert_file)) < 0 ||
            (r = get_pem_data(l, user, where, "client-certificate-data", &c->cert_data)) < 0 ||
            (r = get_path(l, user, where, "client-key", &c->key_file)) < 0 ||
            (r = get_pem_data(l, user, where, "client-key-data", &c->key_data)) < 0 ||
            (r = get_string(l, user, where, "token", &token)) < 0 ||
            (r = get_path(l, user, where, "tokenFile", &token_file)) < 0)
                return r;

        if (c->cert_file || c->cert_data) {
                if (c->cert_file && c->cert_data)
                        return fail(l, -EINVAL, "%s: client-cert-data and client-cert are both specified for %s", where,
                                    name);
                if (c->key_file && c->key_data)
                        return fail(l, -EINVAL, "%s: client-key-data and client-key are both specified for %s", where,
                                    name);
                if (!c->key_file && !c->key_data)
                        return fail(l, -EINVAL,
                                    "%s: client-key-data or client-key must be specified for %s to use "
                                    "the clientCert authentication method",
                                    where, name);
                if (c->cert_file && (r = check_readable(l, c->cert_file, "client-cert", where, name)) < 0)
                        return r;
                if (c->key_file && (r = check_readable(l, c->key_file, "client-key", where, name)) < 0)
                        return r;
        } else if (c->key_file || c->key_data)
                return fail(l, -EINVAL,
                            "%s: client-certificate-data or client-certificate must be specified for %s "
                            "to use the clientCert authentication method",
                            where, name);

        if (token) {
                /* the token wins; the file is not read (clientcmd) */
                c->token = strdup(token);
                if (!c->token)
                        return -ENOMEM;
        } else if (token_file) {
                _cleanup_free_ char *data = NULL;
                size_t size = 0, b, e;

                r = read_full_file(token_file, KUBE_TOKEN_MAX_SIZE, &data, &size);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return fail(l, r, "%s.tokenFile: cannot read %s: %s", where, token_file,
                                    r == -EFBIG ? "file too large" : strerror(-r));
                for (b = 0; b < size && strchr(" \t\r\n", data[b]); b++)
                        ;
                for (e = size; e > b && strchr(" \t\r\n", data[e - 1]); e--)
                        ;
                if (e == b || memchr(data + b, '\0', e - b)) {
                        explicit_bzero(data, size);
                        return fail(l, -EINVAL, "%s.tokenFile: %s: %s", where, token_file,
                                    e == b ? "read empty token from file" : "invalid token");
                }
                c->token = strndup(data + b, e - b);
                explicit_bzero(data, size);
                if (!c->token)
                        return -ENOMEM;
                c->token_file = TAKE_PTR(token_file);
        }
        return 0;
}

static int make_dir(const char *path, char **ret) {
        _cleanup_free_ char *abs = NULL;
        char *slash;

        if (path[0] == '/')
                abs = strdup(path);
        else {
                _cleanup_free_ char *cwd = getcwd(NULL, 0);
                if (!cwd)
                        return negative_errno();
                if (asprintf(&abs, "%s/%s", cwd, path) < 0)
                        abs = NULL;
        }
        if (!abs)
                return -ENOMEM;
        slash = strrchr(abs, '/');
        if (slash == abs)
                slash[1] = '\0'; /* "/" */
        else
                *slash = '\0';
        *ret = TAKE_PTR(abs);
        return 0;
}

int kube_config_load(const char *path, struct kube_config *ret, struct ck_error **ret_error) {
        _cleanup_free_ char *data = NULL, *dir = NULL;
        _cleanup_ck_error_ struct ck_error *yerr = NULL;
        _cleanup_(kube_config_done) struct kube_config c = {};
        struct loader l = { .path = path, .ret_error = ret_error };
        char cluster_where[64] = "", user_where[64] = "", context_where[64] = "";
        const char *s, *current, *cluster_name, *user_name;
        json_auto_t *docs = NULL;
        json_t *root, *context, *cluster, *user;
        size_t size = 0;
        int r;

        if (isempty(path) || !ret)
                return -EINVAL;
        r = make_dir(path, &dir);
        if (r < 0)
                return fail(&l, r, "cannot resolve the directory: %s", strerror(-r));
        l.dir = dir;

        r = read_full_file(path, KUBE_CONFIG_MAX_SIZE, &data, &size);
        if (r == -EFBIG)
                return fail(&l, r, "file is larger than %u bytes", KUBE_CONFIG_MAX_SIZE);
        if (r < 0)
                return fail(&l, r, "cannot read: %s", strerror(-r));
        r = yaml_to_json_docs(data, size, &docs, &yerr);
        if (r < 0)
                return fail(&l, r, "%s", ck_error_message(yerr));
        if (json_array_size(docs) != 1) {
                r = fail(&l, -EINVAL,
                         json_array_size(docs) == 0 ? "no configuration has been provided" : "more than one document");
                goto finish;
        }
        root = json_array_get(docs, 0);
        if (!json_is_object(root)) {
                r = fail(&l, -EINVAL, "not a kubeconfig (the document is not a map)");
                goto finish;
        }
        if ((r = get_string(&l, root, "config", "kind", &s)) < 0)
                goto finish;
        if (s && !streq(s, "Config")) {
                r = fail(&l, -EINVAL, "kind: got \"%s\", want \"Config\"", s);
                goto finish;
        }
        if ((r = get_string(&l, root, "config", "apiVersion", &s)) < 0)
                goto finish;
        if (s && !streq(s, "v1")) {
                r = fail(&l, -EINVAL, "apiVersion: got \"%s\", want \"v1\"", s);
                goto finish;
        }

        if ((r = get_string(&l, root, "config", "current-context", &current)) < 0)
                goto finish;
        if (!current) {
                r = fail(&l, -EINVAL, "current-context is not set");
                goto finish;
        }
        if ((r = find_named(&l, root, "contexts", "context", current, &context, context_where)) < 0)
                goto finish;
        if (!context) {
                r = fail(&l, -ENOENT, "context \"%s\" not found", current);
                goto finish;
        }
        if (json_is_null(context))
                context = NULL;
        if ((r = get_string(&l, context, context_where, "cluster", &cluster_name)) < 0 ||
            (r = get_string(&l, context, context_where, "user", &user_name)) < 0)
                goto finish;
        if (!cluster_name) {
                r = fail(&l, -EINVAL, "%s.cluster: cluster was not specified for context \"%s\"", context_where,
                         current);
                goto finish;
        }
        if (!user_name) {
                r = fail(&l, -EINVAL, "%s.user: user was not specified for context \"%s\"", context_where, current);
                goto finish;
        }
        if ((r = find_named(&l, root, "clusters", "cluster", cluster_name, &cluster, cluster_where)) < 0)
                goto finish;
        if (!cluster) {
                r = fail(&l, -ENOENT, "cluster \"%s\" was not found for context \"%s\"", cluster_name, current);
                goto finish;
        }
        if ((r = find_named(&l, root, "users", "user", user_name, &user, user_where)) < 0)
                goto finish;
        if (!user) {
                r = fail(&l, -ENOENT, "user \"%s\" was not found for context \"%s\"", user_name, current);
                goto finish;
        }
        if ((r = load_cluster(&l, cluster, cluster_where, cluster_name, &c)) < 0 ||
            (r = load_user(&l, user, user_where, user_name, &c)) < 0)
                goto finish;

        *ret = c;
        c = (struct kube_config) {};
        r = 0;
finish:
        if (r == -ENOMEM && ret_error && !*ret_error)
                fail(&l, r, "out of memory");
        if (data)
                explicit_bzero(data, size); /* may hold tokens and keys */
        return r;
}
