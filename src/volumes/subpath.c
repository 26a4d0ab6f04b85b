/* SPDX-License-Identifier: Apache-2.0 */
/* subPath bind mounts: see subpath.h. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apis/pod_volumes.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "volumes/subpath.h"
#include "volumes/volumes.h"

#define SUBPATH_MAX 4096

int vol_subpath_expand(const struct container *c, const char *expr, char **ret) {
        _cleanup_free_ char *out = NULL;
        size_t len = 0, cap = strlen(expr) + 1;
        const char *p = expr;

        out = malloc(cap);
        if (!out)
                return -ENOMEM;
#define PUT(s, n)                                  \
        do {                                       \
                size_t _n = (n);                   \
                if (len + _n + 1 > cap) {          \
                        char *_x;                  \
                        cap = (len + _n + 1) * 2;  \
                        if (cap > SUBPATH_MAX * 4) \
                                return -E2BIG;     \
                        _x = realloc(out, cap);    \
                        if (!_x)                   \
                                return -ENOMEM;    \
                        out = _x;                  \
                }                                  \
                memcpy(out + len, (s), _n);        \
                len += _n;                         \
        } while (0)
        while (*p) {
                if (p[0] == '$' && p[1] == '$') {
                        PUT("$", 1);
                        p += 2;
                } else if (p[0] == '$' && p[1] == '(') {
                        const char *end = strchr(p + 2, ')');
                        const char *val = NULL;
                        if (!end) {
                                PUT(p, strlen(p));
                                break;
                        }
                        /* the last definition wins, as in a Go map built in order */
                        for (size_t i = 0; i < c->n_env; i++)
                                if (c->env[i].value && strlen(c->env[i].name) == (size_t) (end - p - 2) &&
                                    strncmp(c->env[i].name, p + 2, (size_t) (end - p - 2)) == 0)
                                        val = c->env[i].value;
                        if (val)
                                PUT(val, strlen(val));
                        else
                                PUT(p, (size_t) (end - p + 1));
                        p = end + 1;
                } else {
                        PUT(p, 1);
                        p++;
                }
        }
#undef PUT
        out[len] = '\0';
        *ret = TAKE_PTR(out);
        return 0;
}

int vol_subpath_open(int rootfd, const char *sub, int *ret_fd) {
        _cleanup_free_ char *prefix = NULL;
        struct stat rst;
        size_t n = strlen(sub);
        int fd;

        if (n == 0 || n > SUBPATH_MAX)
                return -EINVAL;
        if (sub[0] == '/')
                return -EXDEV;
        fd = openat2_beneath(rootfd, sub, O_PATH);
        if (fd >= 0) {
                *ret_fd = fd;
                return 0;
        }
        if (fd != -ENOENT)
                return fd;
        /* create what is missing, one component at a time, each below a directory resolved beneath the root */
        if (fstat(rootfd, &rst) < 0)
                return -errno;
        prefix = strdup(sub);
        if (!prefix)
                return -ENOMEM;
        for (size_t i = 0; i <= n; i++) {
                _cleanup_close_ int parent = -EBADF;
                const char *seg;
                char saved;
                int r;

                if (prefix[i] != '/' && prefix[i] != '\0')
                        continue;
                if (i == 0 || prefix[i - 1] == '/')
                        continue; /* "a//b" */
                saved = prefix[i];
                prefix[i] = '\0';
                fd = openat2_beneath(rootfd, prefix, O_PATH);
                if (fd >= 0) {
                        close(fd);
                        prefix[i] = saved;
                        continue;
                }
                if (fd != -ENOENT)
                        return fd;
                seg = strrchr(prefix, '/');
                if (seg) {
                        *(char *) seg = '\0';
                        parent = openat2_beneath(rootfd, prefix, O_PATH | O_DIRECTORY);
                        *(char *) seg = '/';
                        seg++;
                } else {
                        parent = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
                        seg = prefix;
                }
                if (parent < 0)
                        return parent < -1 ? parent : -errno;
                /* mkdirat never follows a symlink at seg: a dangling one gives EEXIST and the next open refuses it */
                r = mkdirat(parent, seg, rst.st_mode & 07777);
                if (r < 0 && errno != EEXIST)
                        return -errno;
                if (r >= 0) {
                        /* the umask narrowed mkdirat's mode: each created directory gets the volume root's mode,
                         * set-group-ID and sticky bits included, as upstream's doSafeMakeDir does (a tmpfs emptyDir
                         * with an fsGroup: 1777 plus set-group-ID) */
                        _cleanup_close_ int child = openat(parent, seg,
                                                           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (child < 0)
                                return -errno;
                        if (fchmod(child, rst.st_mode & 07777) < 0)
                                return -errno;
                }
                prefix[i] = saved;
        }
        fd = openat2_beneath(rootfd, sub, O_PATH);
        if (fd < 0)
                return fd;
        *ret_fd = fd;
        return 0;
}

static int is_mounted(const char *path, bool *ret) {
        return vol_is_mount_point(AT_FDCWD, path, ret);
}

void vol_subpath_req_done(struct vol_subpath_req *q) {
        if (!q)
                return;
        free(q->volume_path);
        free(q->sub);
        free(q->dir);
        free(q->target);
        free(q->pod_name);
        free(q->container_name);
        free(q->volume_name);
        *q = (struct vol_subpath_req) {};
}

int vol_subpath_request(const struct pod *pod, const struct container *c, size_t idx, const char *volume_path,
                        const struct kc_build_context *ctx, struct vol_subpath_req *ret) {
        const struct volume_mounts *m = pod_container_mounts(pod, c);
        const struct volume_mount *vm;
        _cleanup_free_ char *sub = NULL, *pd = NULL;
        struct vol_subpath_req q = {};
        int r;

        if (!m || idx >= m->n)
                return -EINVAL;
        vm = &m->items[idx];
        if (!isempty(vm->sub_path_expr)) {
                r = vol_subpath_expand(c, vm->sub_path_expr, &sub);
                if (r < 0)
                        return r;
        } else if (!(sub = strdup(vm->sub_path)))
                return -ENOMEM;
        if (sub[0] == '/' || pod_path_has_backsteps(sub)) {
                log_error("pod %s: container %s: SubPath `%s` must be relative and must not contain '..'", pod->name,
                          c->name, sub);
                return -EINVAL;
        }
        pd = vol_pod_dir(ctx->root_dir, pod->uid);
        q.idx = idx;
        q.sub = TAKE_PTR(sub);
        q.volume_path = strdup(volume_path);
        q.pod_name = strdup(strempty(pod->name));
        q.container_name = strdup(c->name);
        q.volume_name = strdup(vm->name);
        if (!pd || !q.volume_path || !q.pod_name || !q.container_name || !q.volume_name ||
            asprintf(&q.dir, "%s/volume-subpaths/%s/%s", pd, vm->name, c->name) < 0 ||
            asprintf(&q.target, "%s/%zu", q.dir, idx) < 0) {
                vol_subpath_req_done(&q);
                return -ENOMEM;
        }
        *ret = q;
        return 0;
}

int (*vol_subpath_bind_test_hook)(const struct vol_subpath_req *q) = NULL;

int vol_subpath_bind(const struct vol_subpath_req *q, struct ck_error **ret_error) {
        _cleanup_close_ int rootfd = -EBADF, fd = -EBADF;
        char src[64];
        struct stat st;
        bool mounted = false;
        int r;

        if (vol_subpath_bind_test_hook) {
                r = vol_subpath_bind_test_hook(q);
                if (r < 0)
                        return r;
        }
        rootfd = open(q->volume_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return -errno;
        r = vol_subpath_open(rootfd, q->sub, &fd);
        if (r < 0)
                return ck_error_set(ret_error, r,
                                    "subPath \"%s\" of volume \"%s\" cannot be resolved inside the volume: %s", q->sub,
                                    q->volume_name, strerror(-r));
        if (fstat(fd, &st) < 0)
                return -errno;
        r = mkdir_p(q->dir, 0750);
        if (r < 0)
                return r;
        /* a bind mount left from the previous instance of the container is replaced: its subPath may have changed */
        if (is_mounted(q->target, &mounted) >= 0 && mounted && umount2(q->target, MNT_DETACH) < 0)
                return -errno;
        if (unlinkat(AT_FDCWD, q->target, 0) < 0 && errno != ENOENT && errno != EISDIR &&
            !(errno == EPERM && rmdir(q->target) >= 0))
                return -errno;
        (void) rmdir(q->target);
        if (S_ISDIR(st.st_mode)) {
                if (mkdir(q->target, 0750) < 0 && errno != EEXIST)
                        return -errno;
        } else {
                int t = open(q->target, O_CREAT | O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0640);
                if (t < 0)
                        return -errno;
                close(t);
        }
        snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
        if (mount(src, q->target, NULL, MS_BIND, NULL) < 0)
                return -errno;
        return 0;
}

/* volume-subpaths/<volume>/<container>/<index>: three levels, every entry a bind mount target */
int vol_subpath_unmount_all(const char *pod_dir) {
        _cleanup_free_ char *base = NULL;
        int r = 0;

        if (asprintf(&base, "%s/volume-subpaths", pod_dir) < 0)
                return -ENOMEM;
        for (int level = 0; level < 1; level++) {
                _cleanup_closedir_ DIR *d1 = opendir(base);
                struct dirent *e1;
                if (!d1)
                        return errno == ENOENT ? 0 : -errno;
                while ((e1 = readdir(d1))) {
                        _cleanup_free_ char *p1 = NULL;
                        _cleanup_closedir_ DIR *d2 = NULL;
                        struct dirent *e2;
                        if (e1->d_name[0] == '.' || e1->d_type != DT_DIR ||
                            asprintf(&p1, "%s/%s", base, e1->d_name) < 0)
                                continue;
                        d2 = opendir(p1);
                        while (d2 && (e2 = readdir(d2))) {
                                _cleanup_free_ char *p2 = NULL;
                                _cleanup_closedir_ DIR *d3 = NULL;
                                struct dirent *e3;
                                if (e2->d_name[0] == '.' || e2->d_type != DT_DIR ||
                                    asprintf(&p2, "%s/%s", p1, e2->d_name) < 0)
                                        continue;
                                d3 = opendir(p2);
                                while (d3 && (e3 = readdir(d3))) {
                                        _cleanup_free_ char *p3 = NULL;
                                        bool mounted = false;
                                        if (e3->d_name[0] == '.' || asprintf(&p3, "%s/%s", p2, e3->d_name) < 0)
                                                continue;
                                        if (is_mounted(p3, &mounted) >= 0 && mounted &&
                                            umount2(p3, MNT_DETACH | UMOUNT_NOFOLLOW) < 0) {
                                                log_warning("cannot unmount %s: %m", p3);
                                                r = -errno;
                                        }
                                }
                        }
                }
        }
        return r;
}
