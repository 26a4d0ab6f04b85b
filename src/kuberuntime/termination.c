/* SPDX-License-Identifier: Apache-2.0 */
#include "kuberuntime/termination.h"

#include <errno.h>
#include <event2/buffer.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/evbuffer.h"
#include "basic/fs.h"
#include "basic/string.h"
#include "basic/strmap.h"
#include "container/labels.h"
#include "logs/logs.h"

int kr_termination_message_mount(const struct pod *pod, const struct container *c, const char *root_dir,
                                 Runtime__V1__ContainerConfig *cfg) {
        _cleanup_free_ char *dir = NULL, *path = NULL;
        Runtime__V1__Mount *m, **mounts;
        uint32_t id;
        int fd, r;

        if (!root_dir || isempty(c->termination_message_path))
                return 0;
        if (getrandom(&id, sizeof(id), 0) != sizeof(id))
                return -errno ?: -EIO;
        if (asprintf(&dir, "%s/pods/%s/containers/%s", root_dir, pod->uid, c->name) < 0)
                return -ENOMEM;
        r = mkdir_p(dir, 0750);
        if (r < 0)
                return r;
        if (asprintf(&path, "%s/%08" PRIx32, dir, id) < 0)
                return -ENOMEM;
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0)
                return -errno;
        (void) fchmod(fd, 0666); /* writable whatever the container's user */
        close(fd);

        m = malloc(sizeof(*m));
        if (!m)
                return -ENOMEM;
        *m = (Runtime__V1__Mount) RUNTIME__V1__MOUNT__INIT;
        m->host_path = TAKE_PTR(path);
        m->container_path = strdup(c->termination_message_path);
        mounts = reallocarray(cfg->mounts, cfg->n_mounts + 1, sizeof(*mounts));
        if (!m->container_path || !mounts) {
                free(m->host_path);
                free(m->container_path);
                free(m);
                if (mounts)
                        cfg->mounts = mounts;
                return -ENOMEM;
        }
        cfg->mounts = mounts;
        cfg->mounts[cfg->n_mounts++] = m;
        return 0;
}

int (*kr_termination_read_test_hook)(const char *path) = NULL;

/* The message file of a container instance: where kr_termination_message_mount made it (<root>/pods/<uid>/
 * containers/<name>/<file>), resolved beneath <root>/pods with no symlink anywhere; a path elsewhere (a runtime that
 * reports another host path) with no symlink as its last component. Only regular files. */
static int open_message(const char *root_dir, const char *pod_uid, const char *name, const char *path) {
        _cleanup_free_ char *pods = NULL, *expect = NULL;
        _cleanup_close_ int dfd = -EBADF;
        const char *rel = NULL;
        int fd, r;

        if (kr_termination_read_test_hook) {
                r = kr_termination_read_test_hook(path);
                if (r < 0)
                        return r;
        }
        if (root_dir && pod_uid && name) {
                if (asprintf(&pods, "%s/pods/", root_dir) < 0 ||
                    asprintf(&expect, "%s/containers/%s/", pod_uid, name) < 0)
                        return -ENOMEM;
                rel = startswith(path, pods) ? path + strlen(pods) : NULL;
                if (rel &&
                    (!startswith(rel, expect) || strchr(rel + strlen(expect), '/') || isempty(rel + strlen(expect))))
                        rel = NULL;
        }
        if (rel) {
                dfd = open(pods, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0)
                        return -errno;
                return open_regular_beneath(dfd, rel);
        }
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        r = fd_verify_regular(fd);
        if (r < 0) {
                close(fd);
                return r;
        }
        return fd;
}

/* tail.ReadAtMost: the last max bytes of the file fd (taken over) */
static int read_at_most(int fd, size_t max, char **ret) {
        _cleanup_free_ char *buf = NULL;
        struct stat sb;
        off_t off = 0;
        ssize_t n;
        size_t len = 0;

        if (fstat(fd, &sb) < 0) {
                int e = -errno;
                close(fd);
                return e;
        }
        if (!S_ISREG(sb.st_mode)) {
                close(fd);
                return -EINVAL;
        }
        if ((uint64_t) sb.st_size > max)
                off = sb.st_size - (off_t) max;
        buf = malloc(max + 1);
        if (!buf) {
                close(fd);
                return -ENOMEM;
        }
        while (len < max && (n = pread(fd, buf + len, max - len, off + (off_t) len)) > 0)
                len += (size_t) n;
        close(fd);
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        return 0;
}

/* The log fd itself when it is small, else (closing it) a memfd with its last KR_TERMINATION_LOG_WINDOW bytes from
 * the first line boundary in them: what the tail is looked for in is bounded whatever the container wrote. */
static int log_window(int fd) {
        _cleanup_free_ char *buf = NULL;
        struct stat sb;
        size_t len = 0;
        ssize_t n;
        char *nl;
        int mfd;

        if (fstat(fd, &sb) < 0) {
                int e = -errno;
                close(fd);
                return e;
        }
        if (!S_ISREG(sb.st_mode)) {
                close(fd);
                return -EINVAL;
        }
        if (sb.st_size <= KR_TERMINATION_LOG_WINDOW)
                return fd;
        buf = malloc(KR_TERMINATION_LOG_WINDOW);
        if (!buf) {
                close(fd);
                return -ENOMEM;
        }
        while (len < KR_TERMINATION_LOG_WINDOW && (n = pread(fd, buf + len, KR_TERMINATION_LOG_WINDOW - len,
                                                             sb.st_size - KR_TERMINATION_LOG_WINDOW + (off_t) len)) > 0)
                len += (size_t) n;
        close(fd);
        nl = memchr(buf, '\n', len);
        mfd = memfd_create("termination-log", MFD_CLOEXEC);
        if (mfd < 0)
                return -errno;
        if (nl) {
                size_t off = (size_t) (nl + 1 - buf);
                if (len - off > 0 && write(mfd, nl + 1, len - off) != (ssize_t) (len - off)) {
                        int e = -errno ?: -EIO;
                        close(mfd);
                        return e;
                }
        }
        return mfd;
}

/* readLastStringFromContainerLogs: the first 2048 bytes of the last 80 lines (of the log's last
 * KR_TERMINATION_LOG_WINDOW bytes) */
static int read_log_tail(const char *log_path, char **ret) {
        struct logs_options o;
        _cleanup_evbuffer_ struct evbuffer *out = NULL;
        size_t len;
        char *s;
        int fd, r;

        if (isempty(log_path))
                return -ENOENT;
        if (kr_termination_read_test_hook) {
                r = kr_termination_read_test_hook(log_path);
                if (r < 0)
                        return r;
        }
        fd = open(log_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        r = log_window(fd);
        if (r < 0) {
                close(fd);
                return r;
        }
        fd = r;
        out = evbuffer_new();
        if (!out) {
                close(fd);
                return -ENOMEM;
        }
        logs_options_init(&o);
        o.tail_lines = KR_TERMINATION_LOG_LINES;
        o.limit_bytes = KR_TERMINATION_LOG_MAX;
        r = logs_read(fd, &o, out, NULL);
        close(fd);
        len = evbuffer_get_length(out);
        if (r >= 0 && len > KR_TERMINATION_LOG_MAX)
                len = KR_TERMINATION_LOG_MAX;
        s = r < 0 ? NULL : malloc(len + 1);
        if (s) {
                evbuffer_copyout(out, s, len);
                s[len] = '\0';
        }
        if (r < 0)
                return r;
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

struct kr_termination_read {
        char *root_dir, *pod_uid, *name; /* where the kubelet made the file, if known */
        char *host_path;                 /* the message file, NULL: none mounted */
        char *log_path;
        bool fallback; /* FallbackToLogsOnError, and the container failed */
        char *msg;     /* the result */
};

struct kr_termination_read *kr_termination_read_free(struct kr_termination_read *t) {
        if (!t)
                return NULL;
        free(t->root_dir);
        free(t->pod_uid);
        free(t->name);
        free(t->host_path);
        free(t->log_path);
        free(t->msg);
        free(t);
        return NULL;
}

static int strdup_ptr(const char *s, char **ret) {
        if (!s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

int kr_termination_read_new(const struct kc_container *c, const Runtime__V1__ContainerStatus *st, const char *root_dir,
                            struct kr_termination_read **ret) {
        const char *path = strmap_get(&c->annotations, ANNOTATION_TERMINATION_MESSAGE_PATH);
        const char *policy = strmap_get(&c->annotations, ANNOTATION_TERMINATION_MESSAGE_POLICY);
        struct kr_termination_read *t;
        const char *host_path = NULL;
        bool fallback = streq_ptr(policy, "FallbackToLogsOnError") && c->exit_code != 0 &&
                        !streq_ptr(c->reason, "ContainerCannotRun");

        if (c->state != KC_CONTAINER_EXITED) {
                *ret = NULL;
                return 0;
        }
        for (size_t i = 0; !isempty(path) && i < st->n_mounts; i++)
                if (st->mounts[i] && streq_ptr(st->mounts[i]->container_path, path)) {
                        host_path = st->mounts[i]->host_path;
                        break;
                }
        if (!host_path && !fallback) {
                *ret = NULL;
                return 0;
        }
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->fallback = fallback;
        if (strdup_ptr(host_path, &t->host_path) < 0 || strdup_ptr(c->log_path, &t->log_path) < 0 ||
            (root_dir && (strdup_ptr(root_dir, &t->root_dir) < 0 || strdup_ptr(c->pod_uid, &t->pod_uid) < 0 ||
                          strdup_ptr(c->name, &t->name) < 0))) {
                kr_termination_read_free(t);
                return -ENOMEM;
        }
        *ret = t;
        return 0;
}

int kr_termination_read_run(struct kr_termination_read *t) {
        bool check_logs = t->fallback;
        int r;

        if (t->host_path) {
                r = open_message(t->root_dir, t->pod_uid, t->name, t->host_path);
                if (r >= 0)
                        r = read_at_most(r, KR_TERMINATION_MESSAGE_MAX, &t->msg);
                if (r == -ENOMEM)
                        return r;
                if (r == -ENOENT) {
                        /* as when no file is mounted */
                } else if (r < 0) {
                        if (asprintf(&t->msg, "Error on reading termination log %s: %s", t->host_path, strerror(-r)) <
                            0) {
                                t->msg = NULL;
                                return -ENOMEM;
                        }
                        check_logs = false;
                } else
                        check_logs = t->fallback && isempty(t->msg);
        }
        if (check_logs) {
                t->msg = mfree(t->msg);
                r = read_log_tail(t->log_path, &t->msg);
                if (r == -ENOMEM)
                        return r;
        }
        return 0;
}

int kr_termination_read_apply(const struct kr_termination_read *t, struct kc_container *c) {
        char *joined;

        if (!t || isempty(t->msg))
                return 0;
        if (asprintf(&joined, "%s%s%s", strempty(c->message), isempty(c->message) ? "" : ": ", t->msg) < 0)
                return -ENOMEM;
        free(c->message);
        c->message = joined;
        return 0;
}
