/* SPDX-License-Identifier: Apache-2.0 */
#include "kuberuntime/envfile.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "apis/pod_volumes.h"
#include "basic/fs.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "volumes/volumes.h"

void (*kr_env_file_read_test_hook)(const struct kr_env_file_req *q) = NULL;

/* ---------------------------------------------------------------- the parser */

/* bufio.ScanLines over data: the next line (without its '\n', and without one '\r' before it), false at the end */
struct line_scanner {
        const char *data;
        size_t size, pos;
};

static int next_line(struct line_scanner *s, const char **ret, size_t *ret_len) {
        const char *start = s->data + s->pos, *nl;
        size_t rest = s->size - s->pos, len;

        if (rest == 0)
                return 0;
        nl = memchr(start, '\n', rest);
        len = nl ? (size_t) (nl - start) : rest;
        /* the scanner's buffer holds at most KR_ENV_FILE_LINE_MAX bytes, the '\n' included */
        if (len >= KR_ENV_FILE_LINE_MAX)
                return -E2BIG;
        s->pos += nl ? len + 1 : len;
        if (len > 0 && start[len - 1] == '\r')
                len--;
        *ret = start;
        *ret_len = len;
        return 1;
}

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

/* a format error in upstream's words: -EINVAL */
#define format_error(ret_error, ...) ck_error_set((ret_error), -EINVAL, __VA_ARGS__)

/* a failure of next_line (0 passes), in bufio.Scanner's words */
static int scan_error(int r, struct ck_error **ret_error) {
        if (r == -E2BIG)
                return ck_error_set(ret_error, r, "bufio.Scanner: token too long");
        return r;
}

struct value_buf {
        char *s;
        size_t n;
};

static int value_add(struct value_buf *b, const char *s, size_t n, bool newline) {
        char *p;

        if (b->n + n + 1 > KR_ENV_FILE_MAX + 1)
                return -E2BIG;
        p = realloc(b->s, b->n + n + 2);
        if (!p)
                return -ENOMEM;
        b->s = p;
        memcpy(b->s + b->n, s, n);
        b->n += n;
        if (newline)
                b->s[b->n++] = '\n';
        b->s[b->n] = 0;
        return 0;
}

int kr_env_file_parse(const char *data, size_t size, const char *key, char **ret_value, struct ck_error **ret_error) {
        struct line_scanner sc = { .data = data, .size = size };
        size_t key_len = strlen(key), line_num = 0;
        const char *line;
        size_t len;
        int r;

        while ((r = next_line(&sc, &line, &len)) > 0) {
                _cleanup_free_ char *value = NULL;
                struct value_buf b = {};
                const char *eq, *name, *v, *rest;
                size_t name_len, start_line;
                bool is_key;

                line_num++;
                while (len > 0 && is_blank(*line)) {
                        line++;
                        len--;
                }
                if (len == 0 || line[0] == '#')
                        continue;
                eq = memchr(line, '=', len);
                if (!eq)
                        return format_error(ret_error, "invalid environment variable format at line %zu: missing '='",
                                            line_num);
                name = line;
                name_len = (size_t) (eq - line);
                while (name_len > 0 && is_blank(name[name_len - 1]))
                        name_len--;
                if (name_len == 0)
                        return format_error(ret_error,
                                            "invalid environment variable format at line %zu: empty variable name",
                                            line_num);
                if (name_len != (size_t) (eq - line))
                        return format_error(ret_error,
                                            "invalid environment variable format at line %zu: whitespace before '=' "
                                            "is not allowed",
                                            line_num);
                is_key = name_len == key_len && memcmp(name, key, key_len) == 0;
                v = eq + 1;
                len -= (size_t) (v - line);
                if (len > 0 && is_blank(*v)) {
                        /* "KEY= 'x'": as a shell, an empty assignment (the rest of the line is not looked at) */
                        if (!is_key)
                                continue;
                        value = strdup("");
                        if (!value)
                                return -ENOMEM;
                        *ret_value = TAKE_PTR(value);
                        return 1;
                }
                if (len == 0 || *v != '\'')
                        return format_error(ret_error,
                                            "invalid environment variable format at line %zu: value must be enclosed "
                                            "in single quotes",
                                            line_num);
                rest = v + 1;
                len--;
                start_line = line_num;
                for (;;) {
                        const char *close = memchr(rest, '\'', len);
                        if (close) {
                                const char *after = close + 1;
                                size_t after_len = len - (size_t) (after - rest);

                                r = value_add(&b, rest, (size_t) (close - rest), false);
                                if (r < 0) {
                                        free(b.s);
                                        return r;
                                }
                                while (after_len > 0 && is_blank(*after)) {
                                        after++;
                                        after_len--;
                                }
                                if (after_len > 0 && *after != '#') {
                                        free(b.s);
                                        return format_error(ret_error,
                                                            "invalid environment variable format at line %zu: "
                                                            "unexpected content after closing quote",
                                                            line_num);
                                }
                                break;
                        }
                        r = value_add(&b, rest, len, true);
                        if (r >= 0)
                                r = next_line(&sc, &rest, &len);
                        if (r <= 0) {
                                free(b.s);
                                if (r == 0)
                                        return format_error(ret_error,
                                                            "invalid environment variable format starting at line "
                                                            "%zu: unclosed single quote",
                                                            start_line);
                                return scan_error(r, ret_error);
                        }
                        line_num++;
                }
                if (!is_key) {
                        free(b.s);
                        continue;
                }
                if (!b.s && !(b.s = strdup("")))
                        return -ENOMEM;
                if (strlen(b.s) != b.n) {
                        free(b.s);
                        return format_error(ret_error,
                                            "invalid environment variable format at line %zu: the value of %s has a "
                                            "NUL byte",
                                            start_line, key);
                }
                *ret_value = b.s;
                return 1;
        }
        return scan_error(r, ret_error);
}

/* ---------------------------------------------------------------- requests (on the loop) */

static void req_done(struct kr_env_file_req *q) {
        free(q->volume_dir);
        free(q->volume_name);
        free(q->path);
        free(q->key);
        free(q->detail);
        free(q->result.value);
        free(q->result.message);
}

void kr_env_file_reqs_free(struct kr_env_file_req *l, size_t n) {
        for (size_t i = 0; i < n; i++)
                req_done(&l[i]);
        free(l);
}

int kr_env_file_requests(const struct pod *pod, const struct container *c, const char *root_dir,
                         struct kr_env_file_req **ret, size_t *ret_n) {
        struct kr_env_file_req *l = NULL;
        size_t n = 0;

        for (size_t i = 0; i < c->n_env; i++) {
                const struct env_var_source *vf = c->env[i].value_from;
                const struct file_key_selector *f = vf ? vf->file_key_ref : NULL;
                const struct volume *v;
                struct kr_env_file_req *nl, *q;

                /* the sources as makeEnvironmentVariables tries them: value first, then the other kinds */
                if (!f || !isempty(c->env[i].value) || vf->field_ref || vf->resource_field_ref ||
                    vf->config_map_key_ref || vf->secret_key_ref)
                        continue;
                nl = reallocarray(l, n + 1, sizeof(*nl));
                if (!nl) {
                        kr_env_file_reqs_free(l, n);
                        return -ENOMEM;
                }
                l = nl;
                q = &l[n++];
                *q = (struct kr_env_file_req) { .env_idx = i };
                q->volume_name = strdup(strempty(f->volume_name));
                q->path = strdup(strempty(f->path));
                q->key = strdup(strempty(f->key));
                v = pod_volume_find(pod, strempty(f->volume_name));
                /* the volume manager's podVolumes hold only mounted volumes; validation lets only emptyDirs through:
                 * any other stays without a directory ("cannot find the volume") */
                if (v && v->type == VOLUME_EMPTY_DIR)
                        q->volume_dir = vol_volume_host_path(pod, v, root_dir);
                if (!q->volume_name || !q->path || !q->key || (v && v->type == VOLUME_EMPTY_DIR && !q->volume_dir)) {
                        kr_env_file_reqs_free(l, n);
                        return -ENOMEM;
                }
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

/* ---------------------------------------------------------------- the read (on a worker) */

int kr_env_file_read(const char *volume_dir, const char *path, size_t max, char **ret_data, size_t *ret_size) {
        struct open_how how = {
                .flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
        };
        _cleanup_close_ int root = -EBADF, fd = -EBADF;

        /* the volume's directory: the kubelet's own path, the pod cannot replace it; its contents are the pod's */
        root = open(volume_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (root < 0)
                return negative_errno();
        fd = openat2_retry(root, path, &how);
        if (fd < 0)
                return fd;
        /* a regular file only (a FIFO or a device put there cannot block: O_NONBLOCK), at most max bytes, also when
         * it grows while read */
        return read_full_fd(fd, max, ret_data, ret_size);
}

/* filepath.Join(volume_dir, path) as securejoin returns it (symlinks aside): for the messages */
static char *joined_path(const char *volume_dir, const char *path) {
        size_t vl = strlen(volume_dir), pl = strlen(path);
        char *s = malloc(vl + pl + 2), *p;

        if (!s)
                return NULL;
        memcpy(s, volume_dir, vl);
        p = s + vl;
        for (const char *c = path; *c;) {
                const char *slash = strchr(c, '/');
                size_t l = slash ? (size_t) (slash - c) : strlen(c);
                if (l > 0 && !(l == 1 && c[0] == '.')) {
                        *p++ = '/';
                        memcpy(p, c, l);
                        p += l;
                }
                c += l + (slash ? 1 : 0);
        }
        *p = 0;
        return s;
}

_printf_(2, 3) static char *format(char **ret, const char *fmt, ...) {
        va_list ap;

        free(*ret);
        va_start(ap, fmt);
        if (vasprintf(ret, fmt, ap) < 0)
                *ret = NULL;
        va_end(ap);
        return *ret;
}

void kr_env_file_resolve(struct kr_env_file_req *q) {
        _cleanup_free_ char *data = NULL, *file = NULL, *qkey = NULL, *qfile = NULL;
        _cleanup_ck_error_ struct ck_error *error = NULL;
        struct kc_env_file_value *res = &q->result;
        size_t size = 0;
        int r;

        res->resolved = true;
        if (!q->volume_dir) {
                _cleanup_free_ char *qv = go_quote(q->volume_name);
                res->r = -ENOENT;
                format(&res->message, "cannot find the volume %s referenced by FileKeyRef", strna(qv));
                return;
        }
        if (kr_env_file_read_test_hook)
                kr_env_file_read_test_hook(q);
        file = joined_path(q->volume_dir, q->path);
        r = kr_env_file_read(q->volume_dir, q->path, KR_ENV_FILE_MAX, &data, &size);
        if (r == -EFBIG) {
                res->r = r;
                format(&q->detail, "env file %s is larger than %d bytes", strna(file), KR_ENV_FILE_MAX);
                format(&res->message, "couldn't parse env file: larger than %d bytes", KR_ENV_FILE_MAX);
                return;
        }
        if (r < 0) {
                /* ParseEnv's error, for the log; the message stays generic as upstream's */
                res->r = r;
                format(&q->detail, "failed to open environment variable file %s: %s", strna(file), strerror(-r));
                format(&res->message, "couldn't parse env file");
                return;
        }
        r = kr_env_file_parse(data, size, q->key, &res->value, &error);
        if (r < 0) {
                res->r = r == -ENOMEM ? r : -EINVAL;
                if (r == -E2BIG)
                        format(&q->detail, "error reading environment variable file %s: %s", strna(file),
                               ck_error_message(error));
                else
                        format(&q->detail, "%s: %s", strna(file), ck_error_message(error));
                format(&res->message, "couldn't parse env file");
                return;
        }
        if (r > 0 && !isempty(res->value)) {
                res->r = 1;
                return;
        }
        /* an empty value counts as absent (runtimeVal == "") */
        res->value = mfree(res->value);
        res->r = 0;
        qkey = go_quote(q->key);
        qfile = file ? go_quote(file) : NULL;
        format(&res->message, "environment variable key %s not found in file %s", strna(qkey), strna(qfile));
}
