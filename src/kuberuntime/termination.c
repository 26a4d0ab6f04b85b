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
        mounts = realloc(cfg->mounts, sizeof(*mounts) * (cfg->n_mounts + 1));
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

/* tail.ReadAtMost: the last max bytes of the file */
static int read_at_most(const char *path, size_t max, char **ret) {
        _cleanup_free_ char *buf = NULL;
        struct stat sb;
        off_t off = 0;
        ssize_t n;
        size_t len = 0;
        int fd;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
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
        fd = open_regular(log_path);
        if (fd < 0)
                return fd;
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

int kr_container_read_termination_message(struct kc_container *c, const Runtime__V1__ContainerStatus *st) {
        const char *path = strmap_get(&c->annotations, ANNOTATION_TERMINATION_MESSAGE_PATH);
        const char *policy = strmap_get(&c->annotations, ANNOTATION_TERMINATION_MESSAGE_POLICY);
        bool fallback = streq_ptr(policy, "FallbackToLogsOnError") && c->exit_code != 0 &&
                        !streq_ptr(c->reason, "ContainerCannotRun");
        bool check_logs = fallback;
        _cleanup_free_ char *msg = NULL;
        char *joined = NULL;
        int r;

        if (c->state != KC_CONTAINER_EXITED)
                return 0;
        for (size_t i = 0; !isempty(path) && i < st->n_mounts; i++) {
                if (!st->mounts[i] || !streq_ptr(st->mounts[i]->container_path, path))
                        continue;
                r = read_at_most(st->mounts[i]->host_path, KR_TERMINATION_MESSAGE_MAX, &msg);
                if (r == -ENOENT)
                        break;
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        if (asprintf(&msg, "Error on reading termination log %s: %s", st->mounts[i]->host_path,
                                     strerror(-r)) < 0)
                                return -ENOMEM;
                        check_logs = false;
                } else
                        check_logs = fallback && isempty(msg);
                break;
        }
        if (check_logs) {
                free(msg);
                msg = NULL;
                r = read_log_tail(c->log_path, &msg);
                if (r == -ENOMEM)
                        return r;
        }
        if (isempty(msg))
                return 0;
        if (asprintf(&joined, "%s%s%s", strempty(c->message), isempty(c->message) ? "" : ": ", msg) < 0)
                return -ENOMEM;
        free(c->message);
        c->message = joined;
        return 0;
}
