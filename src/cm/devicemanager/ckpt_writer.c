/* SPDX-License-Identifier: Apache-2.0 */
/* The device manager's checkpoint writer: see ckpt_writer.h. */
#include "cm/devicemanager/ckpt_writer.h"
#include "cm/devicemanager/ckpt_writer-testing.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fs.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/workpool.h"
#include "cm/devicemanager/pod_devices.h"

struct dm_ckpt_writer {
        struct workpool *pool;
        char *path;
        char *pending;  /* the newest text not yet handed to the worker */
        bool in_flight; /* a write runs */
        bool stopping;
        uint64_t writes;
};

struct job {
        struct dm_ckpt_writer *w;
        char *path, *text;
};

static int work_write(void *userdata) {
        struct job *j = userdata;
        return write_file_atomic(j->path, j->text, strlen(j->text), 0600);
}

static void start(struct dm_ckpt_writer *w);

static void write_done(int r, void *userdata) {
        struct job *j = userdata;
        struct dm_ckpt_writer *w = j->w;

        if (r < 0 && r != -ECANCELED)
                log_warning("failed to write checkpoint file \"%s\": %s", DM_CHECKPOINT_FILE, strerror(-r));
        if (r >= 0)
                w->writes++;
        w->in_flight = false;
        if (r == -ECANCELED && !w->pending)
                w->pending = TAKE_PTR(j->text); /* never ran (the pool is going): written by the free */
        free(j->path);
        free(j->text);
        free(j);
        if (!w->stopping)
                start(w);
}

static void start(struct dm_ckpt_writer *w) {
        struct job *j;

        if (w->in_flight || !w->pending)
                return;
        j = calloc(1, sizeof(*j));
        if (j) {
                j->w = w;
                j->path = strdup(w->path);
        }
        if (!j || !j->path) {
                if (j)
                        free(j);
                log_warning("failed to write checkpoint file \"%s\": out of memory", DM_CHECKPOINT_FILE);
                return; /* the text stays pending: the next one retries */
        }
        j->text = TAKE_PTR(w->pending);
        w->in_flight = true;
        if (workpool_submit(w->pool, work_write, write_done, j) < 0) {
                w->in_flight = false;
                w->pending = j->text;
                free(j->path);
                free(j);
                log_warning("failed to write checkpoint file \"%s\": cannot queue the write", DM_CHECKPOINT_FILE);
        }
}

int dm_ckpt_writer_new(struct event_base *base, const char *path, struct dm_ckpt_writer **ret) {
        struct dm_ckpt_writer *w = calloc(1, sizeof(*w));
        int r;

        if (!w)
                return -ENOMEM;
        w->path = strdup(path);
        if (!w->path) {
                free(w);
                return -ENOMEM;
        }
        r = workpool_new(base, "device checkpoint", 1, &w->pool);
        if (r < 0) {
                free(w->path);
                free(w);
                return r;
        }
        *ret = w;
        return 0;
}

struct dm_ckpt_writer *dm_ckpt_writer_free(struct dm_ckpt_writer *w) {
        if (!w)
                return NULL;
        w->stopping = true;
        w->pool = workpool_free(w->pool); /* the write in flight ends first */
        if (w->pending) {
                int r = write_file_atomic(w->path, w->pending, strlen(w->pending), 0600);
                if (r < 0)
                        log_warning("failed to write checkpoint file \"%s\": %s", DM_CHECKPOINT_FILE, strerror(-r));
        }
        free(w->pending);
        free(w->path);
        free(w);
        return NULL;
}

void dm_ckpt_writer_set(struct dm_ckpt_writer *w, char *text) {
        assert(w && text);
        free(w->pending);
        w->pending = text;
        start(w);
}

uint64_t dm_ckpt_writer_writes(const struct dm_ckpt_writer *w) {
        return w->writes;
}

bool dm_ckpt_writer_busy(const struct dm_ckpt_writer *w) {
        return w->in_flight || w->pending;
}
