/* SPDX-License-Identifier: Apache-2.0 */
/* The container log manager on the loop (see container_log_manager.h): the monitor pass over CRI, the rotation's
 * steps (file work on the worker pool, the rename and ReopenContainerLog on the loop), the links, and the cleanup
 * of what removed containers and pods leave behind. */
#include "logs/container_log_manager.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/list.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "basic/workpool.h"
#include "container/labels.h"
#include "logs/rotation.h"

#define LINKS_SWEEP_MAX 10000                /* directory entries looked at per sweep */
#define LINK_MIN_AGE_USEC (2 * USEC_PER_SEC) /* a link younger than the listing's start plus this is left alone */
#define CLEAN_MAX_DIRS 10000

/* one container being rotated */
struct rotation {
        struct logs_manager *m; /* NULL once the manager is gone */
        struct rotation *next;
        char *id;
        char *log;
        char *rotated;
        int max_files;
};

/* one monitor pass: ListContainers, then ContainerStatus for each */
struct monitor {
        struct logs_manager *m; /* NULL once the manager is gone */
        unsigned pending;
};

/* a cleanup on the worker pool */
struct prune {
        char *dir; /* <pod logs dir>/<pod dir>/<container> */
        int *keep; /* restart counts of the instances the runtime still has */
        size_t n_keep;
};

struct clean_job {
        struct logs_manager *m;
        char **remove_dirs; /* whole pod log directories */
        struct prune *prunes;
        size_t n_prunes;
        unsigned removed_dirs, removed_files;
};

struct logs_manager {
        struct event_base *base;
        struct cri_client *cri;
        struct workpool *pool;
        int64_t max_size;
        int max_files;
        uint64_t interval_usec;
        char *pod_logs_dir;
        char *links_dir;
        struct event *timer;
        struct monitor *monitor; /* in flight */
        struct rotation *rotations;
        struct clean_job *cleaning;
        struct logs_manager_counts stats;
};

static void rotation_free(struct rotation *r) {
        if (!r)
                return;
        free(r->id);
        free(r->log);
        free(r->rotated);
        free(r);
}

static void rotation_unlink(struct logs_manager *m, struct rotation *r) {
        FLIST_REMOVE(m->rotations, r);
}

static bool rotating(struct logs_manager *m, const char *id) {
        for (struct rotation *r = m->rotations; r; r = r->next)
                if (streq(r->id, id))
                        return true;
        return false;
}

/* ---------------------------------------------------------------- links */

static void link_ensure(struct logs_manager *m, const char *pod, const char *ns, const char *container, const char *id,
                        const char *log) {
        _cleanup_free_ char *link = NULL;
        struct stat st;

        if (isempty(m->links_dir) || isempty(pod) || isempty(ns) || isempty(container) || isempty(id) || isempty(log))
                return;
        link = logs_link_path(m->links_dir, pod, ns, container, id);
        if (!link || lstat(link, &st) == 0)
                return;
        if (stat(log, &st) < 0)
                return; /* as upstream: only to a log that exists */
        if (symlink(log, link) < 0 && errno != EEXIST)
                log_error(
                        "Failed to create symbolic link \"%s\" to the container log file \"%s\" for container \"%s\": %s",
                        link, log, id, strerror(errno));
        else
                log_v(4, "Created container log link %s -> %s", link, log);
}

void logs_manager_link(struct logs_manager *m, const char *pod, const char *ns, const char *container,
                       const char *container_id, const char *log_path) {
        if (m)
                link_ensure(m, pod, ns, container, container_id, log_path);
}

void logs_manager_sweep_links(struct logs_manager *m, bool (*has_container)(const char *id, void *ud), void *userdata,
                              uint64_t listed_realtime_usec) {
        _cleanup_free_ char *prefix = NULL;
        struct dirent *e;
        unsigned seen = 0;
        DIR *d;

        if (!m || isempty(m->links_dir) || listed_realtime_usec < LINK_MIN_AGE_USEC)
                return;
        d = opendir(m->links_dir);
        if (!d)
                return;
        if (asprintf(&prefix, "%s/", m->pod_logs_dir) < 0) {
                closedir(d);
                return;
        }
        while ((e = readdir(d)) && seen++ < LINKS_SWEEP_MAX) {
                _cleanup_free_ char *id = NULL;
                char target[4096];
                struct stat st;
                ssize_t n;
                uint64_t mtime;

                if (!endswith(e->d_name, ".log") || logs_link_container_id(e->d_name, &id) < 0)
                        continue;
                if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode))
                        continue;
                n = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);
                if (n < 0)
                        continue;
                target[n] = '\0';
                if (!startswith(target, prefix))
                        continue; /* not a link of ours */
                mtime = (uint64_t) st.st_mtim.tv_sec * USEC_PER_SEC + (uint64_t) st.st_mtim.tv_nsec / 1000;
                if (mtime + LINK_MIN_AGE_USEC > listed_realtime_usec || has_container(id, userdata))
                        continue;
                if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT)
                        log_error("Failed to remove container log dead symlink %s/%s: %s", m->links_dir, e->d_name,
                                  strerror(errno));
                else
                        log_v(4, "removed symlink %s/%s", m->links_dir, e->d_name);
        }
        closedir(d);
}

/* ---------------------------------------------------------------- rotation */

static int prepare_work(void *userdata) {
        struct rotation *r = userdata;
        /* the file work only: r->log and r->max_files are read, nothing the loop changes meanwhile */
        return logs_prepare_rotation(r->log, r->max_files);
}

static void on_reopened(const struct cri_reply *reply, void *userdata) {
        struct rotation *r = userdata;
        struct logs_manager *m = r->m;

        if (m)
                rotation_unlink(m, r);
        if (reply->r < 0) {
                /* rename it back so that it is rotated again next time (a kill -9 here loses nothing either: the
                 * runtime still writes to the renamed file, and the next pass reopens the missing live log) */
                if (rename(r->rotated, r->log) < 0)
                        log_error(
                                "Failed to rename rotated log \"%s\" back to \"%s\": %s, reopen container log error: %s",
                                r->rotated, r->log, strerror(errno), reply->message);
                if (reply->r != -ECANCELED) {
                        log_error(
                                "Failed to rotate log \"%s\" for container \"%s\": failed to reopen container log \"%s\": %s",
                                r->log, r->id, r->id, reply->message);
                        if (m)
                                m->stats.rotation_errors++;
                }
        } else {
                log_v(2, "Rotated container log \"%s\" to \"%s\"", r->log, r->rotated);
                if (m)
                        m->stats.rotations++;
        }
        rotation_free(r);
}

static void on_prepared(int rr, void *userdata) {
        struct rotation *r = userdata;
        struct logs_manager *m = r->m;
        Runtime__V1__ReopenContainerLogRequest req = RUNTIME__V1__REOPEN_CONTAINER_LOG_REQUEST__INIT;
        struct stat st;
        int k;

        if (!m || rr == -ECANCELED) {
                if (m)
                        rotation_unlink(m, r);
                rotation_free(r);
                return;
        }
        if (rr < 0) {
                log_error("Failed to rotate log \"%s\" for container \"%s\": %s", r->log, r->id, strerror(-rr));
                m->stats.rotation_errors++;
                goto drop;
        }
        /* rotateLatestLog: rename without compressing, so that the runtime can still write and shippers finish
         * reading; never over an existing file (two rotations within one second) */
        r->rotated = logs_rotated_name(r->log, (int64_t) now_realtime_usec());
        if (!r->rotated)
                goto drop;
        if (lstat(r->rotated, &st) == 0) {
                log_v(2, "Rotated log %s exists already, rotating %s next time", r->rotated, r->log);
                goto drop;
        }
        if (rename(r->log, r->rotated) < 0) {
                log_error("Failed to rotate log \"%s\" for container \"%s\": failed to rotate log \"%s\" to \"%s\": %s",
                          r->log, r->id, r->log, r->rotated, strerror(errno));
                m->stats.rotation_errors++;
                goto drop;
        }
        req.container_id = r->id;
        k = cri_reopen_container_log(m->cri, &req, 0, on_reopened, r, NULL);
        if (k < 0) {
                struct cri_reply reply = { .r = k, .message = strerror(-k) };
                on_reopened(&reply, r);
        }
        return;
drop:
        rotation_unlink(m, r);
        rotation_free(r);
}

static void rotate(struct logs_manager *m, const char *id, const char *log) {
        struct rotation *r = calloc(1, sizeof(*r));

        if (!r || !(r->id = strdup(id)) || !(r->log = strdup(log))) {
                rotation_free(r);
                return;
        }
        r->m = m;
        r->max_files = m->max_files;
        if (workpool_submit(m->pool, prepare_work, on_prepared, r) < 0) {
                rotation_free(r);
                return;
        }
        FLIST_PREPEND(m->rotations, r);
}

/* ---------------------------------------------------------------- the monitor pass */

struct monitor_call {
        struct monitor *mon;
        char *id;
};

static void monitor_release(struct monitor *mon) {
        if (--mon->pending > 0)
                return;
        if (mon->m)
                mon->m->monitor = NULL;
        free(mon);
}

static void on_reopen_missing(const struct cri_reply *reply, void *userdata) {
        struct monitor_call *c = userdata;

        if (reply->r < 0 && reply->r != -ECANCELED)
                log_error("Container \"%s\" log doesn't exist, reopen container log failed: %s", c->id, reply->message);
        else if (reply->r >= 0 && c->mon->m) {
                c->mon->m->stats.reopens++;
                log_v(2, "Reopened the missing log of container %s", c->id);
        }
        monitor_release(c->mon);
        free(c->id);
        free(c);
}

static const char *status_label(const Runtime__V1__ContainerStatus *s, const char *key) {
        for (size_t i = 0; i < s->n_labels; i++)
                if (streq_ptr(s->labels[i]->key, key))
                        return s->labels[i]->value;
        return NULL;
}

static void on_status(const struct cri_reply *reply, void *userdata) {
        struct monitor_call *c = userdata;
        struct logs_manager *m = c->mon->m;
        const Runtime__V1__ContainerStatusResponse *resp = (const void *) reply->msg;
        const Runtime__V1__ContainerStatus *st = resp ? resp->status : NULL;
        struct stat info;

        if (!m || reply->r < 0 || !st || isempty(st->log_path)) {
                if (m && reply->r < 0 && reply->r != -ECANCELED && reply->r != -ENOENT)
                        log_error("Failed to get container status for \"%s\": %s", c->id, reply->message);
                goto done;
        }
        if (st->state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING)
                goto done; /* a stopped container writes nothing more */
        link_ensure(m, status_label(st, LABEL_POD_NAME), status_label(st, LABEL_POD_NAMESPACE),
                    status_label(st, LABEL_CONTAINER_NAME), c->id, st->log_path);
        if (rotating(m, c->id))
                goto done;
        if (stat(st->log_path, &info) < 0) {
                Runtime__V1__ReopenContainerLogRequest req = RUNTIME__V1__REOPEN_CONTAINER_LOG_REQUEST__INIT;
                struct monitor_call *rc;

                if (errno != ENOENT) {
                        log_error("Failed to stat container log \"%s\": %s", st->log_path, strerror(errno));
                        goto done;
                }
                /* a rotation was interrupted between the rename and the reopen: get the live file back */
                rc = calloc(1, sizeof(*rc));
                if (!rc || !(rc->id = strdup(c->id))) {
                        free(rc);
                        goto done;
                }
                rc->mon = c->mon;
                req.container_id = rc->id;
                if (cri_reopen_container_log(m->cri, &req, 0, on_reopen_missing, rc, NULL) < 0) {
                        free(rc->id);
                        free(rc);
                        goto done;
                }
                c->mon->pending++;
                goto done;
        }
        if (m->max_size >= 0 && info.st_size >= m->max_size)
                rotate(m, c->id, st->log_path);
done:
        monitor_release(c->mon);
        free(c->id);
        free(c);
}

static void on_list(const struct cri_reply *reply, void *userdata) {
        struct monitor *mon = userdata;
        struct logs_manager *m = mon->m;
        const Runtime__V1__ListContainersResponse *resp = (const void *) reply->msg;

        if (!m || reply->r < 0 || !resp) {
                if (m && reply->r < 0 && reply->r != -ECANCELED)
                        log_error("Failed to rotate container logs: failed to list containers: %s", reply->message);
                monitor_release(mon);
                return;
        }
        for (size_t i = 0; i < resp->n_containers; i++) {
                Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
                struct monitor_call *c = calloc(1, sizeof(*c));

                if (!c || !(c->id = strdup(resp->containers[i]->id))) {
                        free(c);
                        break;
                }
                c->mon = mon;
                req.container_id = c->id;
                if (cri_container_status(m->cri, &req, 0, on_status, c, NULL) < 0) {
                        free(c->id);
                        free(c);
                        continue;
                }
                mon->pending++;
        }
        monitor_release(mon);
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        struct logs_manager *m = userdata;
        Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
        Runtime__V1__ContainerFilter filter = RUNTIME__V1__CONTAINER_FILTER__INIT;
        Runtime__V1__ContainerStateValue state = RUNTIME__V1__CONTAINER_STATE_VALUE__INIT;
        struct monitor *mon;

        evtimer_add_usec(m->timer, m->interval_usec);
        if (m->monitor)
                return; /* the last pass is still going */
        mon = calloc(1, sizeof(*mon));
        if (!mon)
                return;
        mon->m = m;
        mon->pending = 1;
        /* only running containers: a stopped one writes nothing more, there is no point in an empty live log */
        state.state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
        filter.state = &state;
        req.filter = &filter;
        if (cri_list_containers(m->cri, &req, 0, on_list, mon, NULL) < 0) {
                free(mon);
                return;
        }
        m->monitor = mon;
}

/* ---------------------------------------------------------------- cleanup */

static void clean_job_free(struct clean_job *j) {
        if (!j)
                return;
        strv_free(j->remove_dirs);
        for (size_t i = 0; i < j->n_prunes; i++) {
                free(j->prunes[i].dir);
                free(j->prunes[i].keep);
        }
        free(j->prunes);
        free(j);
}

static int clean_work(void *userdata) {
        struct clean_job *j = userdata;

        for (char **d = j->remove_dirs; d && *d; d++)
                if (logs_remove_tree(*d) >= 0)
                        j->removed_dirs++;
        for (size_t i = 0; i < j->n_prunes; i++) {
                int n = logs_prune_instances(j->prunes[i].dir, j->prunes[i].keep, j->prunes[i].n_keep);
                if (n > 0)
                        j->removed_files += (unsigned) n;
        }
        return 0;
}

static void clean_done(int r, void *userdata) {
        struct clean_job *j = userdata;

        if (j->m) {
                j->m->cleaning = NULL;
                if (j->removed_dirs || j->removed_files)
                        log_v(2,
                              "container log cleanup: removed %u pod log directories and %u log files of removed "
                              "containers",
                              j->removed_dirs, j->removed_files);
        }
        clean_job_free(j);
}

static const char *map_get(size_t n, Runtime__V1__Container__LabelsEntry **e, const char *key) {
        for (size_t i = 0; i < n; i++)
                if (streq_ptr(e[i]->key, key))
                        return e[i]->value;
        return NULL;
}

static const char *annotation_get(size_t n, Runtime__V1__Container__AnnotationsEntry **e, const char *key) {
        for (size_t i = 0; i < n; i++)
                if (streq_ptr(e[i]->key, key))
                        return e[i]->value;
        return NULL;
}

static int add_keep(struct clean_job *j, const char *dir, int n) {
        struct prune *p = NULL;
        int *k;

        for (size_t i = 0; i < j->n_prunes && !p; i++)
                if (streq(j->prunes[i].dir, dir))
                        p = &j->prunes[i];
        if (!p) {
                struct prune *np = reallocarray(j->prunes, j->n_prunes + 1, sizeof(*np));
                if (!np)
                        return -ENOMEM;
                j->prunes = np;
                p = &np[j->n_prunes];
                *p = (struct prune) { .dir = strdup(dir) };
                if (!p->dir)
                        return -ENOMEM;
                j->n_prunes++;
        }
        k = reallocarray(p->keep, p->n_keep + 1, sizeof(*k));
        if (!k)
                return -ENOMEM;
        p->keep = k;
        k[p->n_keep++] = n;
        return 0;
}

void logs_manager_clean(struct logs_manager *m, const Runtime__V1__ListContainersResponse *containers,
                        bool (*pod_deleted)(const char *uid, void *ud), void *userdata) {
        struct clean_job *j;
        struct dirent *e;
        unsigned seen = 0;
        DIR *d;

        if (!m || m->cleaning || !containers)
                return;
        j = calloc(1, sizeof(*j));
        if (!j)
                return;
        j->m = m;
        /* the directories of pods that are gone (evictPodLogsDirectories) */
        d = opendir(m->pod_logs_dir);
        if (d) {
                while ((e = readdir(d)) && seen++ < CLEAN_MAX_DIRS) {
                        const char *uid;
                        char *path;

                        if (e->d_name[0] == '.' || !(uid = strrchr(e->d_name, '_')) || isempty(uid + 1))
                                continue;
                        if (!pod_deleted(uid + 1, userdata))
                                continue;
                        if (asprintf(&path, "%s/%s", m->pod_logs_dir, e->d_name) < 0 ||
                            strv_push(&j->remove_dirs, path) < 0) {
                                closedir(d);
                                clean_job_free(j);
                                return;
                        }
                }
                closedir(d);
        }
        /* the log files of removed instances of containers still there */
        for (size_t i = 0; i < containers->n_containers; i++) {
                const Runtime__V1__Container *c = containers->containers[i];
                const char *ns = map_get(c->n_labels, c->labels, LABEL_POD_NAMESPACE);
                const char *name = map_get(c->n_labels, c->labels, LABEL_POD_NAME);
                const char *uid = map_get(c->n_labels, c->labels, LABEL_POD_UID);
                const char *cname = map_get(c->n_labels, c->labels, LABEL_CONTAINER_NAME);
                const char *rc = annotation_get(c->n_annotations, c->annotations, ANNOTATION_CONTAINER_RESTART_COUNT);
                _cleanup_free_ char *dir = NULL;
                int n;

                if (!ns || !name || !uid || !cname || !rc || safe_atoi(rc, &n) < 0 || n < 0 || strchr(cname, '/'))
                        continue;
                if (asprintf(&dir, "%s/%s_%s_%s/%s", m->pod_logs_dir, ns, name, uid, cname) < 0 ||
                    add_keep(j, dir, n) < 0) {
                        clean_job_free(j);
                        return;
                }
        }
        if (!j->remove_dirs && j->n_prunes == 0) {
                clean_job_free(j);
                return;
        }
        if (workpool_submit(m->pool, clean_work, clean_done, j) < 0) {
                clean_job_free(j);
                return;
        }
        m->cleaning = j;
}

/* ---------------------------------------------------------------- lifecycle */

int logs_manager_new(struct event_base *base, struct cri_client *cri, const struct logs_manager_config *cfg,
                     struct logs_manager **ret) {
        struct logs_manager *m = calloc(1, sizeof(*m));
        int r;

        if (!m)
                return -ENOMEM;
        m->base = base;
        m->cri = cri;
        m->max_size = cfg->max_size;
        m->max_files = cfg->max_files;
        m->interval_usec = cfg->monitor_interval_usec;
        m->pod_logs_dir = strdup(cfg->pod_logs_dir);
        m->links_dir = strdup_or_null(cfg->links_dir);
        m->timer = evtimer_new(base, on_timer, m);
        if (!m->pod_logs_dir || (cfg->links_dir && !m->links_dir) || !m->timer) {
                logs_manager_free(m);
                return -ENOMEM;
        }
        r = workpool_new(base, "container log manager", (unsigned) MAX(cfg->max_workers, 1), &m->pool);
        if (r < 0) {
                logs_manager_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

int logs_manager_start(struct logs_manager *m) {
        if (!isempty(m->links_dir)) {
                int r = mkdir_p(m->links_dir, 0755);
                if (r < 0)
                        log_error("cannot create the container log links directory %s: %s", m->links_dir, strerror(-r));
        }
        evtimer_add_usec(m->timer, m->interval_usec);
        return 0;
}

struct logs_manager *logs_manager_free(struct logs_manager *m) {
        if (!m)
                return NULL;
        if (m->monitor)
                m->monitor->m = NULL;
        for (struct rotation *r = m->rotations, *next; r; r = next) {
                next = r->next;
                r->m = NULL; /* freed by its callback */
        }
        m->rotations = NULL;
        if (m->cleaning)
                m->cleaning->m = NULL;
        /* waits for the file work running now; the rest is cancelled */
        m->pool = workpool_free(m->pool);
        if (m->timer)
                event_free(m->timer);
        free(m->pod_logs_dir);
        free(m->links_dir);
        free(m);
        return NULL;
}
