/* SPDX-License-Identifier: Apache-2.0 */
/* The image garbage collector on the event loop (see image_gc_manager.h). A run lists what it needs over CRI in
 * parallel, decides with the pure functions of image_gc.c, then removes the chosen images one at a time. */
#include "images/image_gc_manager.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"

#define IMAGE_GC_PERIOD_USEC (5 * 60 * USEC_PER_SEC)   /* ImageGCPeriod */
#define IMAGE_GC_FIRST_USEC (30 * USEC_PER_SEC)        /* after start-up: the runtime is listed by then */
#define OBSERVED_MIN_INTERVAL_USEC (10 * USEC_PER_SEC) /* collections triggered by observations, at most */
#define STATE_WRITE_INTERVAL_USEC (60 * USEC_PER_SEC)  /* last-used times are saved at most this often */
#define STATE_MAX_SIZE (16u * 1024 * 1024)

enum run_mode {
        MODE_NONE,
        MODE_DETECT,        /* detectImages only: the records, nothing removed */
        MODE_COLLECT,       /* GarbageCollect: down to the low threshold, plus MaxAge */
        MODE_DELETE_UNUSED, /* DeleteUnusedImages: everything unused */
};

struct waiter {
        image_gc_done_fn done;
        void *userdata;
};

struct waiters {
        struct waiter *items;
        size_t n;
};

struct removal {
        char *id;
        uint64_t size;
};

struct gc_run {
        struct image_gc_manager *m;
        struct cri_calls calls; /* cancelled when the manager goes */
        enum run_mode mode;
        struct waiters waiters;
        unsigned pending; /* CRI calls in flight */
        bool cancelled;
        int error;
        char *error_message;

        /* what the listing found */
        struct image_gc_image *images;
        char **image_ids; /* owns the ids of images[] */
        size_t n_images;
        char **in_use;
        bool have_images, have_containers;
        bool have_fs;
        int64_t capacity, available;
        int64_t listed_usec; /* realtime, when ListImages was asked */

        /* what is removed */
        struct removal *removals;
        size_t n_removals, next_removal;
        int64_t to_free; /* the goal, for the space phase; -1: none */
        int64_t freed_space;
        char **removal_errors;
};

struct write_job {
        struct image_gc_manager *m; /* NULL once the manager is gone */
        char *path;
        char *data;
        size_t size;
};

struct image_gc_manager {
        struct event_base *base;
        struct cri_client *cri;
        struct workpool *pool;
        struct image_gc_policy policy;
        char *sandbox_image;
        char *state_path;
        image_gc_event_fn event;
        void *event_userdata;
        image_gc_listed_fn listed;
        void *listed_userdata;

        struct image_gc_records records;
        int64_t began_usec; /* realtime, when the manager started (MaxAge waits that long) */
        bool initialized;   /* the first detection is done */
        struct event *timer;
        struct gc_run *run;         /* in flight */
        enum run_mode pending_mode; /* asked for while a run is in flight */
        struct waiters pending_waiters;
        bool prev_failed; /* the last periodic collection failed */
        char *last_error; /* why the last run failed */
        uint64_t last_observed_run_usec;

        struct write_job *writing; /* a save in flight */
        bool dirty;                /* records changed since the last save */
        bool membership_changed;   /* images came or went: save at once */
        uint64_t last_write_usec;
};

static void run_free(struct gc_run *r);
static void run_start(struct image_gc_manager *m, enum run_mode mode, struct waiters *w);
static void run_next_removal(struct gc_run *r);

/* ---------------------------------------------------------------- waiters */

static int waiters_add(struct waiters *w, image_gc_done_fn done, void *userdata) {
        struct waiter *n;

        if (!done)
                return 0;
        n = reallocarray(w->items, w->n + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        w->items = n;
        n[w->n++] = (struct waiter) { done, userdata };
        return 0;
}

static void waiters_call(struct waiters *w, int r) {
        struct waiters copy = *w;

        *w = (struct waiters) {};
        for (size_t i = 0; i < copy.n; i++)
                copy.items[i].done(r, copy.items[i].userdata);
        free(copy.items);
}

/* ---------------------------------------------------------------- the state file */

static int write_work(void *userdata) {
        struct write_job *j = userdata;
        return write_file_atomic(j->path, j->data, j->size, 0600);
}

static void save_state(struct image_gc_manager *m);

static void write_done(int r, void *userdata) {
        struct write_job *j = userdata;
        struct image_gc_manager *m = j->m;

        if (r < 0 && r != -ECANCELED)
                log_error("image GC: cannot save its state to %s: %s", j->path, strerror(-r));
        if (m) {
                m->writing = NULL;
                if (r < 0)
                        m->dirty = true;
                else
                        m->last_write_usec = now_usec();
                if (m->dirty && m->membership_changed)
                        save_state(m);
        }
        free(j->path);
        free(j->data);
        free(j);
}

static void save_state(struct image_gc_manager *m) {
        _cleanup_free_ char *data = NULL;
        struct write_job *j;
        json_t *doc;
        int r;

        if (!m->dirty || m->writing || !m->pool || isempty(m->state_path))
                return;
        if (!m->membership_changed && m->last_write_usec && now_usec() - m->last_write_usec < STATE_WRITE_INTERVAL_USEC)
                return;
        doc = image_gc_records_to_json(&m->records);
        data = doc ? json_dumps(doc, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
        json_decref(doc);
        j = data ? calloc(1, sizeof(*j)) : NULL;
        if (!j || !(j->path = strdup(m->state_path))) {
                free(j);
                log_error("image GC: out of memory saving its state");
                return;
        }
        j->m = m;
        j->size = strlen(data);
        j->data = TAKE_PTR(data);
        r = workpool_submit(m->pool, write_work, write_done, j);
        if (r < 0) {
                free(j->path);
                free(j->data);
                free(j);
                return;
        }
        m->writing = j;
        m->dirty = false;
        m->membership_changed = false;
}

static void load_state(struct image_gc_manager *m) {
        _cleanup_free_ char *data = NULL;
        json_error_t err;
        size_t size = 0;
        json_t *doc;
        int r;

        if (isempty(m->state_path))
                return;
        r = read_full_file(m->state_path, STATE_MAX_SIZE, &data, &size);
        if (r == -ENOENT)
                return;
        if (r < 0) {
                log_warning("image GC: cannot read %s: %s; the last-used times start afresh", m->state_path,
                            strerror(-r));
                return;
        }
        doc = json_loadb(data, size, 0, &err);
        if (!doc || image_gc_records_from_json(doc, &m->records) < 0)
                log_warning("image GC: %s does not parse; the last-used times start afresh", m->state_path);
        else
                log_v(2, "image GC: %zu image records loaded from %s", m->records.n, m->state_path);
        json_decref(doc);
}

/* ---------------------------------------------------------------- a run */

static void run_fail(struct gc_run *r, int err, const char *fmt, ...) _printf_(3, 4);
static void run_fail(struct gc_run *r, int err, const char *fmt, ...) {
        va_list ap;

        if (r->error < 0)
                return;
        r->error = err;
        va_start(ap, fmt);
        if (vasprintf(&r->error_message, fmt, ap) < 0)
                r->error_message = NULL;
        va_end(ap);
}

static void run_free(struct gc_run *r) {
        if (!r)
                return;
        waiters_call(&r->waiters, -ECANCELED);
        free(r->images);
        strv_free(r->image_ids);
        strv_free(r->in_use);
        for (size_t i = 0; i < r->n_removals; i++)
                free(r->removals[i].id);
        free(r->removals);
        strv_free(r->removal_errors);
        free(r->error_message);
        free(r);
}

/* the end of a run: report, wake the waiters, start what was asked meanwhile */
static void run_finish(struct gc_run *r) {
        struct image_gc_manager *m = r->m;
        int err = r->error;

        m->run = NULL;
        free(m->last_error);
        m->last_error = err < 0 ? strdup_or_null(r->error_message ? r->error_message : strerror(-err)) : NULL;
        save_state(m);
        waiters_call(&r->waiters, err);
        run_free(r);
        if (m->pending_mode != MODE_NONE) {
                enum run_mode mode = m->pending_mode;
                struct waiters w = m->pending_waiters;

                m->pending_mode = MODE_NONE;
                m->pending_waiters = (struct waiters) {};
                run_start(m, mode, &w);
        }
}

static void on_removed(const struct cri_reply *reply, void *userdata) {
        struct gc_run *r = userdata;
        struct removal *x = &r->removals[r->next_removal - 1];

        r->pending--;
        if (reply->r == -ECANCELED) {
                r->cancelled = true;
                run_finish(r);
                return;
        }
        if (reply->r < 0 && reply->r != -ENOENT) {
                _cleanup_free_ char *e = NULL;
                log_error("image GC: failed to remove image %s: %s", x->id, reply->message);
                if (asprintf(&e, "rpc error: %s", reply->message) >= 0)
                        (void) strv_push(&r->removal_errors, TAKE_PTR(e));
        } else {
                image_gc_records_remove(&r->m->records, x->id);
                r->freed_space += (int64_t) x->size;
                r->m->dirty = true;
                r->m->membership_changed = true;
        }
        run_next_removal(r);
}

static void run_next_removal(struct gc_run *r) {
        Runtime__V1__RemoveImageRequest req = RUNTIME__V1__REMOVE_IMAGE_REQUEST__INIT;
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
        struct removal *x;
        int rr;

        if (r->next_removal >= r->n_removals) {
                /* all done: did it free enough? */
                if (r->removal_errors) {
                        _cleanup_free_ char *joined = strv_join(r->removal_errors, ", ");
                        run_fail(r, -EIO,
                                 "wanted to free %" PRId64 " bytes, but freed %" PRId64 " bytes space with "
                                 "errors in image deletion: [%s]",
                                 r->to_free > 0 ? r->to_free : 0, r->freed_space, strempty(joined));
                }
                run_finish(r);
                return;
        }
        x = &r->removals[r->next_removal++];
        log_info("Removing image to free bytes: imageID=\"%s\" size=%" PRIu64, x->id, x->size);
        spec.image = x->id;
        req.image = &spec;
        rr = cri_remove_image(r->m->cri, &req, 0, on_removed, r, &r->calls);
        if (rr < 0) {
                run_fail(r, rr, "failed to remove image %s: %s", x->id, strerror(-rr));
                run_finish(r);
                return;
        }
        r->pending++;
}

static int add_removal(struct gc_run *r, const struct image_gc_record *rec) {
        struct removal *n;

        for (size_t i = 0; i < r->n_removals; i++)
                if (streq(r->removals[i].id, rec->id))
                        return 0;
        n = reallocarray(r->removals, r->n_removals + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        r->removals = n;
        n[r->n_removals] = (struct removal) { .id = strdup(rec->id), .size = rec->size };
        if (!n[r->n_removals].id)
                return -ENOMEM;
        r->n_removals++;
        return 0;
}

/* everything is listed: decide */
static void run_decide(struct gc_run *r) {
        struct image_gc_manager *m = r->m;
        _cleanup_free_ struct image_gc_record **order = NULL, **old = NULL, **space = NULL;
        size_t n_order = 0, n_old = 0, n_space = 0;
        int64_t now = (int64_t) now_realtime_usec(), freed = 0;
        size_t before = m->records.n;
        int rr;

        if (r->error < 0 || !r->have_images || !r->have_containers) {
                run_fail(r, -EIO, "failed to list the images and containers");
                run_finish(r);
                return;
        }
        /* the first detection makes the images found "detected at an unknown time in the past", as upstream's */
        rr = image_gc_records_detect(&m->records, r->images, r->n_images, r->in_use, m->initialized ? now : 0, now);
        if (rr < 0)
                goto oom;
        m->initialized = true;
        m->dirty = true;
        if (m->records.n != before)
                m->membership_changed = true;
        if (m->listed)
                m->listed(m->listed_userdata, (const char *const *) r->image_ids, r->n_images, r->listed_usec);
        if (r->mode == MODE_DETECT) {
                run_finish(r);
                return;
        }
        rr = image_gc_records_eviction_order(&m->records, r->in_use, &order, &n_order);
        if (rr < 0)
                goto oom;

        if (r->mode == MODE_DELETE_UNUSED) {
                rr = image_gc_select_space(order, n_order, INT64_MAX, now, m->policy.min_age_usec, &space, &n_space,
                                           &freed);
                if (rr < 0)
                        goto oom;
                r->to_free = -1;
        } else {
                int usage;
                int64_t amount = 0;

                if (m->policy.max_age_usec > 0) {
                        rr = image_gc_select_old(order, n_order, now, m->began_usec, m->policy.max_age_usec, &old,
                                                 &n_old);
                        if (rr < 0)
                                goto oom;
                        for (size_t i = 0; i < n_old; i++) {
                                log_v(2, "image GC: image %s unused for longer than imageMaximumGCAge", old[i]->id);
                                if (add_removal(r, old[i]) < 0)
                                        goto oom;
                        }
                }
                if (!r->have_fs) {
                        run_fail(r, -ENODATA, "failed to get the image filesystem's usage");
                } else if (image_gc_amount_to_free(&m->policy, r->capacity, r->available, &usage, &amount) < 0) {
                        run_fail(r, -EINVAL, "invalid capacity 0 on image filesystem");
                        if (m->event)
                                m->event(m->event_userdata, "InvalidDiskCapacity",
                                         "invalid capacity 0 on image filesystem");
                } else if (amount > 0) {
                        /* the images MaxAge removes count towards the goal */
                        int64_t already = 0;
                        _cleanup_free_ struct image_gc_record **rest = calloc(n_order + 1, sizeof(*rest));
                        size_t n_rest = 0;

                        if (!rest)
                                goto oom;
                        for (size_t i = 0; i < n_order; i++) {
                                bool taken = false;
                                for (size_t k = 0; k < n_old && !taken; k++)
                                        taken = old[k] == order[i];
                                if (taken)
                                        already += (int64_t) order[i]->size;
                                else
                                        rest[n_rest++] = order[i];
                        }
                        log_info(
                                "Disk usage on image filesystem is over the high threshold, trying to free bytes down to "
                                "the low threshold: usage=%d highThreshold=%d amountToFree=%" PRId64 " lowThreshold=%d",
                                usage, m->policy.high_threshold_percent, amount, m->policy.low_threshold_percent);
                        rr = image_gc_select_space(rest, n_rest, amount - already, now, m->policy.min_age_usec, &space,
                                                   &n_space, &freed);
                        if (rr < 0)
                                goto oom;
                        r->to_free = amount;
                        if (freed + already < amount) {
                                _cleanup_free_ char *msg = NULL;
                                if (asprintf(&msg,
                                             "Failed to garbage collect required amount of images. Attempted to free "
                                             "%" PRId64 " bytes, but only found %" PRId64 " bytes eligible to free.",
                                             amount, freed + already) < 0)
                                        goto oom;
                                run_fail(r, -ENOSPC, "%s", msg);
                                if (m->event)
                                        m->event(m->event_userdata, "FreeDiskSpaceFailed", msg);
                        }
                }
        }
        for (size_t i = 0; i < n_space; i++)
                if (add_removal(r, space[i]) < 0)
                        goto oom;
        run_next_removal(r);
        return;
oom:
        run_fail(r, -ENOMEM, "out of memory");
        run_finish(r);
}

static void run_release(struct gc_run *r) {
        if (--r->pending > 0)
                return;
        if (r->cancelled) {
                run_finish(r);
                return;
        }
        run_decide(r);
}

static void on_sandbox_image(const struct cri_reply *reply, void *userdata) {
        struct gc_run *r = userdata;
        const Runtime__V1__ImageStatusResponse *resp = (const void *) reply->msg;

        if (reply->r == -ECANCELED)
                r->cancelled = true;
        else if (reply->r >= 0 && resp && resp->image && !isempty(resp->image->id) &&
                 strv_extend(&r->in_use, resp->image->id) < 0)
                run_fail(r, -ENOMEM, "out of memory");
        run_release(r);
}

static void on_images(const struct cri_reply *reply, void *userdata) {
        struct gc_run *r = userdata;
        const Runtime__V1__ListImagesResponse *resp = (const void *) reply->msg;

        if (reply->r == -ECANCELED)
                r->cancelled = true;
        else if (reply->r < 0)
                run_fail(r, reply->r, "failed to list images: %s", reply->message);
        else if (resp) {
                r->images = calloc(resp->n_images + 1, sizeof(*r->images));
                if (!r->images)
                        run_fail(r, -ENOMEM, "out of memory");
                for (size_t i = 0; r->images && i < resp->n_images; i++) {
                        const Runtime__V1__Image *img = resp->images[i];
                        if (isempty(img->id))
                                continue;
                        if (strv_extend(&r->image_ids, img->id) < 0) {
                                run_fail(r, -ENOMEM, "out of memory");
                                break;
                        }
                        r->images[r->n_images++] = (struct image_gc_image) { .size = img->size, .pinned = img->pinned };
                }
                for (size_t i = 0; r->images && i < r->n_images; i++)
                        r->images[i].id = r->image_ids[i];
                r->have_images = true;
        }
        run_release(r);
}

/* handleImageVolumes: an image mounted into a container as an image volume (its CRI mount's image) is in use */
static void on_container_status(const struct cri_reply *reply, void *userdata) {
        struct gc_run *r = userdata;
        const Runtime__V1__ContainerStatusResponse *resp = (const void *) reply->msg;

        if (reply->r == -ECANCELED)
                r->cancelled = true;
        else if (reply->r >= 0 && resp && resp->status)
                for (size_t i = 0; i < resp->status->n_mounts; i++) {
                        const Runtime__V1__Mount *mt = resp->status->mounts[i];
                        const char *id = mt && mt->image ? mt->image->image : NULL;
                        if (isempty(id) || strv_contains(r->in_use, id))
                                continue;
                        log_v(5, "image GC: container %s uses image %s as a mount", resp->status->id, id);
                        if (strv_extend(&r->in_use, id) < 0)
                                run_fail(r, -ENOMEM, "out of memory");
                }
        /* a container gone meanwhile, or a status that fails, keeps nothing more in use (as upstream, which skips
         * the whole pass then; the next pass sees it again) */
        run_release(r);
}

static void on_containers(const struct cri_reply *reply, void *userdata) {
        struct gc_run *r = userdata;
        const Runtime__V1__ListContainersResponse *resp = (const void *) reply->msg;

        if (reply->r == -ECANCELED)
                r->cancelled = true;
        else if (reply->r < 0)
                run_fail(r, reply->r, "failed to list containers: %s", reply->message);
        else if (resp) {
                /* every container, running or not, keeps its image */
                for (size_t i = 0; i < resp->n_containers; i++) {
                        const Runtime__V1__Container *c = resp->containers[i];
                        const char *ids[] = { c->image_ref, c->image_id, c->image ? c->image->image : NULL };
                        for (size_t k = 0; k < ELEMENTSOF(ids); k++)
                                if (!isempty(ids[k]) && !strv_contains(r->in_use, ids[k]) &&
                                    strv_extend(&r->in_use, ids[k]) < 0)
                                        run_fail(r, -ENOMEM, "out of memory");
                }
                /* and the images each mounts as image volumes: only its status has its mounts */
                for (size_t i = 0; i < resp->n_containers; i++) {
                        Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
                        req.container_id = resp->containers[i]->id;
                        if (!isempty(req.container_id) &&
                            cri_container_status(r->m->cri, &req, 0, on_container_status, r, &r->calls) >= 0)
                                r->pending++;
                }
                r->have_containers = true;
        }
        run_release(r);
}

static void on_image_fs(const struct cri_reply *reply, void *userdata) {
        struct gc_run *r = userdata;
        const Runtime__V1__ImageFsInfoResponse *resp = (const void *) reply->msg;

        if (reply->r == -ECANCELED)
                r->cancelled = true;
        else if (reply->r >= 0 && resp && resp->n_image_filesystems > 0 && resp->image_filesystems[0]->fs_id &&
                 !isempty(resp->image_filesystems[0]->fs_id->mountpoint)) {
                struct statvfs s;
                const char *mp = resp->image_filesystems[0]->fs_id->mountpoint;
                if (statvfs(mp, &s) < 0)
                        log_v(2, "image GC: statvfs %s: %s", mp, strerror(errno));
                else {
                        r->capacity = (int64_t) s.f_blocks * (int64_t) s.f_frsize;
                        r->available = (int64_t) s.f_bavail * (int64_t) s.f_frsize;
                        r->have_fs = true;
                }
        }
        run_release(r);
}

static void run_start(struct image_gc_manager *m, enum run_mode mode, struct waiters *w) {
        struct gc_run *r = calloc(1, sizeof(*r));
        int rr;

        if (!r) {
                waiters_call(w, -ENOMEM);
                return;
        }
        r->m = m;
        r->mode = mode;
        r->waiters = *w;
        *w = (struct waiters) {};
        m->run = r;
        r->pending = 1; /* held until every call is issued */
        if (!isempty(m->sandbox_image)) {
                Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
                Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
                spec.image = m->sandbox_image;
                req.image = &spec;
                if (cri_image_status(m->cri, &req, 0, on_sandbox_image, r, &r->calls) >= 0)
                        r->pending++;
        }
        {
                Runtime__V1__ListImagesRequest req = RUNTIME__V1__LIST_IMAGES_REQUEST__INIT;
                r->listed_usec = (int64_t) now_realtime_usec();
                rr = cri_list_images(m->cri, &req, 0, on_images, r, &r->calls);
                if (rr >= 0)
                        r->pending++;
                else
                        run_fail(r, rr, "failed to list images: %s", strerror(-rr));
        }
        {
                Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
                rr = cri_list_containers(m->cri, &req, 0, on_containers, r, &r->calls);
                if (rr >= 0)
                        r->pending++;
                else
                        run_fail(r, rr, "failed to list containers: %s", strerror(-rr));
        }
        if (mode == MODE_COLLECT) {
                Runtime__V1__ImageFsInfoRequest req = RUNTIME__V1__IMAGE_FS_INFO_REQUEST__INIT;
                if (cri_image_fs_info(m->cri, &req, 0, on_image_fs, r, &r->calls) >= 0)
                        r->pending++;
        }
        run_release(r);
}

static int request_run(struct image_gc_manager *m, enum run_mode mode, image_gc_done_fn done, void *userdata) {
        struct waiters w = {};
        int r;

        if (m->run) {
                /* after the one in flight; DeleteUnusedImages includes GarbageCollect's work */
                r = waiters_add(&m->pending_waiters, done, userdata);
                if (r < 0)
                        return r;
                if (mode > m->pending_mode)
                        m->pending_mode = mode;
                return 0;
        }
        r = waiters_add(&w, done, userdata);
        if (r < 0)
                return r;
        run_start(m, mode, &w);
        return 0;
}

/* GarbageCollect now (coalesced with one in flight). done may be NULL; it never runs inside the call. */
static int image_gc_collect(struct image_gc_manager *m, image_gc_done_fn done, void *userdata) {
        return request_run(m, MODE_COLLECT, done, userdata);
}

int image_gc_delete_unused(struct image_gc_manager *m, image_gc_done_fn done, void *userdata) {
        return request_run(m, MODE_DELETE_UNUSED, done, userdata);
}

/* ---------------------------------------------------------------- periodic */

static void periodic_done(int r, void *userdata) {
        struct image_gc_manager *m = userdata;

        if (r == -ECANCELED)
                return;
        if (r < 0) {
                const char *why = m->last_error ? m->last_error : strerror(-r);
                if (m->prev_failed) {
                        log_error("Image garbage collection failed multiple times in a row: %s", why);
                        if (m->event)
                                m->event(m->event_userdata, "ImageGCFailed", why);
                } else
                        log_error("Image garbage collection failed once. Stats initialization may not have completed "
                                  "yet: %s",
                                  why);
                m->prev_failed = true;
                return;
        }
        log_v(m->prev_failed ? 1 : 4, "Image garbage collection succeeded");
        m->prev_failed = false;
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        struct image_gc_manager *m = userdata;

        evtimer_add_usec(m->timer, IMAGE_GC_PERIOD_USEC);
        if (image_gc_collect(m, periodic_done, m) < 0)
                log_error("image GC: out of memory");
}

static void detect_done(int r, void *userdata) {
        struct image_gc_manager *m = userdata;

        if (r < 0 && r != -ECANCELED)
                log_warning("[imageGCManager] Failed to monitor images: %s",
                            m->last_error ? m->last_error : strerror(-r));
}

void image_gc_usage_observed(struct image_gc_manager *m, int64_t capacity, int64_t available) {
        int usage;
        int64_t amount;
        uint64_t now = now_usec();

        /* 100: image GC is off (upstream stubs it) */
        if (!m || m->run || m->policy.high_threshold_percent >= 100 ||
            image_gc_amount_to_free(&m->policy, capacity, available, &usage, &amount) < 0 || amount <= 0)
                return;
        if (m->last_observed_run_usec && now - m->last_observed_run_usec < OBSERVED_MIN_INTERVAL_USEC)
                return;
        m->last_observed_run_usec = now;
        log_v(2, "image GC: the image filesystem is at %d%%, collecting now", usage);
        (void) image_gc_collect(m, periodic_done, m);
}

/* ---------------------------------------------------------------- lifecycle */

int image_gc_manager_new(struct event_base *base, struct cri_client *cri, struct workpool *pool,
                         const struct image_gc_config *cfg, struct image_gc_manager **ret) {
        struct image_gc_manager *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        m->base = base;
        m->cri = cri;
        m->pool = pool;
        m->policy = cfg->policy;
        m->event = cfg->event;
        m->event_userdata = cfg->event_userdata;
        m->listed = cfg->listed;
        m->listed_userdata = cfg->listed_userdata;
        m->began_usec = (int64_t) now_realtime_usec();
        m->sandbox_image = strdup_or_null(cfg->sandbox_image);
        m->state_path = strdup_or_null(cfg->state_path);
        m->timer = evtimer_new(base, on_timer, m);
        if ((cfg->sandbox_image && !m->sandbox_image) || (cfg->state_path && !m->state_path) || !m->timer) {
                image_gc_manager_free(m);
                return -ENOMEM;
        }
        load_state(m);
        *ret = m;
        return 0;
}

int image_gc_manager_start(struct image_gc_manager *m) {
        evtimer_add_usec(m->timer, IMAGE_GC_FIRST_USEC);
        /* the initial detection, now */
        return request_run(m, MODE_DETECT, detect_done, m);
}

struct image_gc_manager *image_gc_manager_free(struct image_gc_manager *m) {
        if (!m)
                return NULL;
        if (m->run) {
                struct gc_run *r = TAKE_PTR(m->run);
                cri_calls_cancel(&r->calls);
                run_free(r); /* its waiters are told -ECANCELED */
        }
        waiters_call(&m->pending_waiters, -ECANCELED);
        if (m->writing)
                m->writing->m = NULL;
        if (m->timer)
                event_free(m->timer);
        image_gc_records_done(&m->records);
        free(m->last_error);
        free(m->sandbox_image);
        free(m->state_path);
        free(m);
        return NULL;
}
