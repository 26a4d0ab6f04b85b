/* SPDX-License-Identifier: Apache-2.0 */
/* The file source (pkg/kubelet/config/file.go, file_linux.go).
 *
 * The manifest path is a directory (every regular file whose name does not start with '.', in name order,
 * no recursion) or a single file. Changes arrive through inotify on the directory (for a single file: on its
 * parent directory, filtered by name, so that editors that replace the file are followed), debounced by
 * FILE_DEBOUNCE_USEC; every check interval the whole path is read again anyway. A scan reads each file and
 * re-parses only files whose content changed.
 *
 *  - A file that cannot be read or parsed is logged once per change (keyed by a hash of its content, or by
 *    the error, size and mtime when it cannot be read) and keeps the pods it defined when it was last valid.
 *  - A file that disappears takes its pods with it. So does the whole path: a manifest path that does not
 *    exist is an empty source, as upstream, and is looked for again every second until it appears.
 *  - A directory that exists but cannot be listed keeps all its pods. */
#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/hash.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "config/config-internal.h"

#define FILE_DEBOUNCE_USEC (10 * USEC_PER_MSEC)
#define FILE_MISSING_RETRY_USEC USEC_PER_SEC
#define FILE_MAX_ENTRIES 4096
#define FILE_INOTIFY_MASK                                                                               \
        (IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | \
         IN_DELETE_SELF | IN_MOVE_SELF)

struct manifest_file {
        char *path;
        char *key;           /* what was last processed: "sha256:<hex>" of the content, or a read error */
        struct pod_set pods; /* the pods of the last valid content */
        bool has_error;      /* the content under key was not valid */
        bool seen;
};

struct file_source {
        struct pod_config *config;
        char *path;
        uint64_t interval_usec;

        int inotify_fd;
        int wd;
        char *watch_dir;  /* the watched directory */
        char *watch_name; /* single-file mode: the file name events are filtered on */
        dev_t watch_dev;
        ino_t watch_ino;
        bool watch_failed_logged;
        struct event *inotify_event;
        struct event *scan_timer;
        struct event *debounce_timer;

        struct manifest_file *files; /* sorted by path after each scan */
        size_t n_files;

        char *path_problem; /* the last logged problem with the path itself */
        bool delivered;
        char **removed; /* names deleted or moved away since the last scan (inotify), at most FILE_MAX_ENTRIES */
};

static void manifest_file_done(struct manifest_file *f) {
        free(f->path);
        free(f->key);
        pod_set_done(&f->pods);
}

static void watch_stop(struct file_source *s) {
        if (s->wd >= 0 && s->inotify_fd >= 0)
                (void) inotify_rm_watch(s->inotify_fd, s->wd);
        s->wd = -1;
        s->watch_dir = mfree(s->watch_dir);
        s->watch_name = mfree(s->watch_name);
}

static void file_source_free(void *data) {
        struct file_source *s = data;

        if (!s)
                return;
        if (s->inotify_event)
                event_free(s->inotify_event);
        if (s->scan_timer)
                event_free(s->scan_timer);
        if (s->debounce_timer)
                event_free(s->debounce_timer);
        strv_free(s->removed);
        watch_stop(s);
        if (s->inotify_fd >= 0)
                close(s->inotify_fd);
        for (size_t i = 0; i < s->n_files; i++)
                manifest_file_done(&s->files[i]);
        free(s->files);
        free(s->path_problem);
        free(s->path);
        free(s);
}

/* Log a problem with the path itself once, until it changes or goes away. */
static void path_problem(struct file_source *s, bool error, const char *fmt, ...) _printf_(3, 4);
static void path_problem(struct file_source *s, bool error, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        int r;

        r = VA_FORMAT(msg, fmt);
        if (r < 0)
                return;
        if (s->path_problem && streq(s->path_problem, msg))
                return;
        if (error)
                log_error("%s", msg);
        else
                log_info("%s", msg);
        free(s->path_problem);
        s->path_problem = TAKE_PTR(msg);
}

static void path_ok(struct file_source *s) {
        if (!s->path_problem)
                return;
        log_info("Manifest path \"%s\" is readable now", s->path);
        s->path_problem = mfree(s->path_problem);
}

static bool same_name(const char *a, const char *b) {
        return (!a && !b) || (a && b && streq(a, b));
}

static void watch_set(struct file_source *s, const char *dir, const char *name) {
        struct stat st;
        int wd;

        if (s->inotify_fd < 0)
                return;
        if (stat(dir, &st) < 0)
                return;
        if (s->wd >= 0 && streq(s->watch_dir, dir) && same_name(name, s->watch_name) && st.st_dev == s->watch_dev &&
            st.st_ino == s->watch_ino)
                return;
        watch_stop(s);
        wd = inotify_add_watch(s->inotify_fd, dir, FILE_INOTIFY_MASK | IN_ONLYDIR);
        if (wd < 0) {
                if (!s->watch_failed_logged)
                        log_warning("Cannot watch \"%s\" for changes (%m); relying on the check every interval", dir);
                s->watch_failed_logged = true;
                return;
        }
        s->watch_dir = strdup(dir);
        s->watch_name = strdup_or_null(name);
        if (!s->watch_dir || (name && !s->watch_name)) {
                watch_stop(s);
                return;
        }
        s->wd = wd;
        s->watch_dev = st.st_dev;
        s->watch_ino = st.st_ino;
        s->watch_failed_logged = false;
        log_v(4, "Watching \"%s\"%s%s for changes", dir, name ? " for " : "", strempty(name));
}

static struct manifest_file *file_find(struct file_source *s, const char *path) {
        for (size_t i = 0; i < s->n_files; i++)
                if (streq(s->files[i].path, path))
                        return &s->files[i];
        return NULL;
}

static struct manifest_file *file_get(struct file_source *s, const char *path) {
        struct manifest_file *f = file_find(s, path), *n;
        char *copy;

        if (f)
                return f;
        copy = strdup(path);
        if (!copy)
                return NULL;
        n = reallocarray(s->files, s->n_files + 1, sizeof(*n));
        if (!n) {
                free(copy);
                return NULL;
        }
        s->files = n;
        s->files[s->n_files] = (struct manifest_file) { .path = copy };
        return &s->files[s->n_files++];
}

/* Read and, if its content changed, parse one file. Returns true when its pods changed. A file that is gone
 * by the time we read it is left unseen (and so removed). */
static bool process_file(struct file_source *s, const char *path, const struct stat *st) {
        _cleanup_free_ char *data = NULL, *key = NULL;
        _cleanup_ck_error_ struct ck_error *error = NULL;
        struct pod_set set = {};
        struct manifest_file *f;
        char hex[65];
        size_t size = 0;
        int r;

        r = read_full_file(path, MANIFEST_MAX_SIZE, &data, &size);
        if (r == -ENOENT)
                return false;
        f = file_get(s, path);
        if (!f) {
                log_error("Out of memory processing manifest file \"%s\"", path);
                f = file_find(s, path);
                if (f)
                        f->seen = true;
                return false;
        }
        f->seen = true;

        if (r >= 0) {
                r = hash_hex("sha256", data, size, hex, sizeof(hex));
                if (r >= 0 && asprintf(&key, "sha256:%s", hex) < 0)
                        r = -ENOMEM;
                if (r < 0) {
                        log_error("Cannot hash manifest file \"%s\": %s", path, strerror(-r));
                        return false;
                }
        } else if (asprintf(&key, "error:%d:%lld:%lld.%09ld", -r, (long long) st->st_size,
                            (long long) st->st_mtim.tv_sec, st->st_mtim.tv_nsec) < 0)
                return false;

        if (f->key && streq(f->key, key))
                return false; /* nothing new: no parse, no log */
        free(f->key);
        f->key = TAKE_PTR(key);

        if (r == -EFBIG)
                ck_error_set(&error, r, "file is larger than %u bytes", MANIFEST_MAX_SIZE);
        else if (r < 0)
                ck_error_set(&error, r, "%s", strerror(-r));
        else if (size == 0)
                ck_error_set(&error, -EINVAL, "empty manifest file");
        else {
                log_v(3, "Reading manifest file \"%s\"", path);
                r = pod_config_static_pods_from_manifest(data, size, pod_config_get_node_name(s->config),
                                                         CONFIG_SOURCE_FILE, path, &set, &error);
                if (r >= 0) {
                        if (f->has_error)
                                log_info("Manifest file \"%s\" is valid again (%zu pods)", path, set.n);
                        f->has_error = false;
                        pod_set_done(&f->pods);
                        f->pods = set;
                        return true;
                }
                if (!error)
                        ck_error_set(&error, r, "%s", strerror(-r));
        }

        f->has_error = true;
        if (f->pods.n > 0)
                log_error("Could not process manifest file \"%s\": %s (keeping the %zu pod%s it defined before)", path,
                          ck_error_message(error), f->pods.n, f->pods.n == 1 ? "" : "s");
        else
                log_error("Could not process manifest file \"%s\": %s", path, ck_error_message(error));
        return false;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int cmp_file(const void *a, const void *b) {
        return strcmp(((const struct manifest_file *) a)->path, ((const struct manifest_file *) b)->path);
}

/* Returns true when pods changed, or a negative errno when the directory cannot be listed. */
static int scan_dir(struct file_source *s) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        size_t n = 0, skipped = 0;
        bool changed = false;

        d = opendir(s->path);
        if (!d)
                return negative_errno();
        for (;;) {
                errno = 0;
                de = readdir(d);
                if (!de)
                        break;
                if (de->d_name[0] == '.')
                        continue; /* also "." and ".." */
                if (n >= FILE_MAX_ENTRIES) {
                        skipped++;
                        continue;
                }
                if (strv_extend(&names, de->d_name) < 0)
                        return -ENOMEM;
                n++;
        }
        if (errno != 0) {
                int r = negative_errno();
                return r;
        }
        if (skipped > 0)
                log_error("Manifest directory \"%s\" has more than %d entries; %zu were not read", s->path,
                          FILE_MAX_ENTRIES, skipped);
        if (n > 1)
                qsort(names, n, sizeof(char *), cmp_str);

        for (size_t i = 0; i < s->n_files; i++)
                s->files[i].seen = false;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL;
                struct stat st;

                if (asprintf(&p, "%s/%s", s->path, names[i]) < 0)
                        return -ENOMEM;
                if (stat(p, &st) < 0) {
                        struct manifest_file *f;
                        if (errno == ENOENT)
                                continue; /* gone, or a dangling symlink: no pods */
                        log_v(2, "Cannot get metadata for \"%s\": %m", p);
                        f = file_find(s, p); /* unreadable for now: keeps its pods */
                        if (f)
                                f->seen = true;
                        continue;
                }
                if (S_ISDIR(st.st_mode))
                        log_v(4, "Not recursing into manifest path \"%s\"", p);
                else if (S_ISREG(st.st_mode)) {
                        if (process_file(s, p, &st))
                                changed = true;
                } else
                        log_v(4, "Manifest path \"%s\" is not a directory or file, ignored", p);
        }
        return changed;
}

/* Forget files not seen in this scan. Returns true when that removed pods. */
static bool sweep(struct file_source *s) {
        bool changed = false;
        size_t j = 0;

        for (size_t i = 0; i < s->n_files; i++) {
                if (s->files[i].seen) {
                        s->files[j++] = s->files[i];
                        continue;
                }
                if (s->files[i].pods.n > 0) {
                        log_v(2, "Manifest file \"%s\" is gone, removing its %zu pods", s->files[i].path,
                              s->files[i].pods.n);
                        changed = true;
                }
                manifest_file_done(&s->files[i]);
        }
        s->n_files = j;
        if (j > 1)
                qsort(s->files, j, sizeof(*s->files), cmp_file);
        return changed;
}

static void deliver(struct file_source *s) {
        struct pod_set set = {};
        int r = 0;

        for (size_t i = 0; i < s->n_files && r >= 0; i++)
                for (size_t k = 0; k < s->files[i].pods.n && r >= 0; k++)
                        r = pod_set_add(&set, pod_ref(s->files[i].pods.pods[k]));
        if (r < 0) {
                pod_set_done(&set);
                log_error("Out of memory delivering the pods of \"%s\"", s->path);
                return;
        }
        r = pod_config_set_source_pods(s->config, CONFIG_SOURCE_FILE, &set);
        if (r < 0)
                log_error("Cannot hand over the pods of \"%s\": %s", s->path, strerror(-r));
        else
                s->delivered = true;
}

/* A file deleted (or moved away) and written again before the scan is, as upstream's file source sees it, a
 * removal and then an addition: its pods go (the kubelet stops them) before they come back, even with the same
 * content (e2e_node's "should successfully recreate when file is removed and recreated"). Returns true when that
 * removed pods; the removal is then delivered alone, and the rest of the scan follows on the next loop iteration. */
static bool forget_removed(struct file_source *s) {
        for (size_t i = 0; i < s->n_files; i++) {
                const char *slash = strrchr(s->files[i].path, '/');

                s->files[i].seen = !strv_contains(s->removed, slash ? slash + 1 : s->files[i].path);
        }
        s->removed = strv_free(s->removed);
        return sweep(s);
}

static void scan(struct file_source *s) {
        uint64_t next = s->interval_usec;
        bool changed = false;
        struct stat st;
        int r;

        if (s->removed && forget_removed(s)) {
                deliver(s);
                evtimer_add_usec(s->debounce_timer, 0);
                return;
        }

        if (stat(s->path, &st) < 0) {
                r = negative_errno();
                if (r == -ENOENT || r == -ENOTDIR) {
                        path_problem(s, false,
                                     "Manifest path \"%s\" does not exist, ignoring it; checking again every second",
                                     s->path);
                        watch_stop(s);
                        for (size_t i = 0; i < s->n_files; i++)
                                s->files[i].seen = false;
                        changed = sweep(s);
                        next = MIN(next, FILE_MISSING_RETRY_USEC);
                        if (changed || !s->delivered)
                                deliver(s);
                } else {
                        path_problem(s, true, "Unable to read manifest path \"%s\": %s", s->path, strerror(-r));
                        pod_config_source_attempted(s->config, CONFIG_SOURCE_FILE);
                }
                evtimer_add_usec(s->scan_timer, next);
                return;
        }

        if (S_ISDIR(st.st_mode)) {
                watch_set(s, s->path, NULL);
                r = scan_dir(s);
                if (r < 0) {
                        path_problem(s, true, "Unable to read manifest directory \"%s\": %s (keeping its pods)",
                                     s->path, strerror(-r));
                        pod_config_source_attempted(s->config, CONFIG_SOURCE_FILE);
                        evtimer_add_usec(s->scan_timer, next);
                        return;
                }
                changed = r > 0;
        } else if (S_ISREG(st.st_mode)) {
                _cleanup_free_ char *dir = NULL;
                const char *slash = strrchr(s->path, '/');

                dir = slash ? (slash == s->path ? strdup("/") : strndup(s->path, (size_t) (slash - s->path)))
                            : strdup(".");
                if (dir)
                        watch_set(s, dir, slash ? slash + 1 : s->path);
                for (size_t i = 0; i < s->n_files; i++)
                        s->files[i].seen = false;
                changed = process_file(s, s->path, &st);
        } else {
                path_problem(s, true, "Manifest path \"%s\" is not a directory or file", s->path);
                pod_config_source_attempted(s->config, CONFIG_SOURCE_FILE);
                evtimer_add_usec(s->scan_timer, next);
                return;
        }
        path_ok(s);
        if (sweep(s))
                changed = true;
        if (changed || !s->delivered)
                deliver(s);
        evtimer_add_usec(s->scan_timer, next);
}

static void on_scan_timer(evutil_socket_t fd, short what, void *userdata) {
        scan(userdata);
}

static void on_debounce(evutil_socket_t fd, short what, void *userdata) {
        struct file_source *s = userdata;
        log_v(4, "Change in \"%s\", reading it again", s->path);
        scan(s);
}

static void on_inotify(evutil_socket_t fd, short what, void *userdata) {
        struct file_source *s = userdata;
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool relevant = false;

        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                log_warning("Error reading inotify events for \"%s\": %m", s->path);
                        break;
                }
                if (n == 0)
                        break;
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;

                        p += sizeof(*ev) + ev->len;
                        if (ev->mask & IN_Q_OVERFLOW) {
                                relevant = true;
                                continue;
                        }
                        if (ev->wd != s->wd || s->wd < 0)
                                continue;
                        if (ev->mask & IN_IGNORED) {
                                /* the directory went away: the kernel dropped the watch */
                                s->wd = -1;
                                s->watch_dir = mfree(s->watch_dir);
                                s->watch_name = mfree(s->watch_name);
                                relevant = true;
                                continue;
                        }
                        if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)) {
                                watch_stop(s);
                                relevant = true;
                                continue;
                        }
                        if (ev->len == 0)
                                continue;
                        if (s->watch_name ? !streq(ev->name, s->watch_name) : ev->name[0] == '.') {
                                log_v(6, "Ignoring change of \"%s\"", ev->name);
                                continue;
                        }
                        if ((ev->mask & (IN_DELETE | IN_MOVED_FROM)) && strv_length(s->removed) < FILE_MAX_ENTRIES &&
                            !strv_contains(s->removed, ev->name))
                                (void) strv_extend(&s->removed, ev->name);
                        relevant = true;
                }
        }
        if (relevant && !evtimer_pending(s->debounce_timer, NULL))
                evtimer_add_usec(s->debounce_timer, FILE_DEBOUNCE_USEC);
}

int pod_config_add_file_source(struct pod_config *c, const char *path, uint64_t check_interval_usec) {
        struct event_base *base;
        struct file_source *s;
        size_t l;
        int r;

        if (!c || isempty(path) || check_interval_usec == 0)
                return -EINVAL;
        base = pod_config_get_event_base(c);

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->config = c;
        s->interval_usec = check_interval_usec;
        s->inotify_fd = -1;
        s->wd = -1;
        s->path = strdup(path);
        if (!s->path) {
                file_source_free(s);
                return -ENOMEM;
        }
        /* as upstream: no trailing slashes (but "/" stays "/") */
        for (l = strlen(s->path); l > 1 && s->path[l - 1] == '/'; l--)
                s->path[l - 1] = '\0';

        s->scan_timer = evtimer_new(base, on_scan_timer, s);
        s->debounce_timer = evtimer_new(base, on_debounce, s);
        if (!s->scan_timer || !s->debounce_timer) {
                file_source_free(s);
                return -ENOMEM;
        }
        s->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (s->inotify_fd < 0)
                log_warning("Cannot use inotify (%m); \"%s\" is checked for changes every interval only", s->path);
        else {
                s->inotify_event = event_new(base, s->inotify_fd, EV_READ | EV_PERSIST, on_inotify, s);
                if (!s->inotify_event || event_add(s->inotify_event, NULL) < 0) {
                        file_source_free(s);
                        return -ENOMEM;
                }
        }

        r = pod_config_register_source(c, CONFIG_SOURCE_FILE, s, file_source_free);
        if (r < 0) {
                log_error("Cannot add the file source \"%s\": %s", s->path,
                          r == -EEXIST ? "a file source is already configured" : strerror(-r));
                file_source_free(s);
                return r;
        }
        log_v(1, "Watching path \"%s\"", s->path);
        evtimer_add_usec(s->scan_timer, 0); /* first read right away, on the loop */
        return 0;
}
