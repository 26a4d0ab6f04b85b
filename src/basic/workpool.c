/* SPDX-License-Identifier: Apache-2.0 */
/* Worker threads whose results come back to the event loop (see workpool.h). */
#include "basic/workpool.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/macro.h"

struct job {
        struct job *next;
        workpool_work_t work;
        workpool_done_t done;
        void *userdata;
        int r;
};

struct workpool {
        struct event_base *base;
        char *name;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct job *queue, **queue_tail; /* not started, in order */
        struct job *finished;            /* done, not delivered (any order) */
        unsigned busy;                   /* queued + running + finished, not delivered (loop side) */
        bool stopping;
        pthread_t *threads;
        unsigned n_threads, n_started;
        int efd;
        struct event *ev;
};

static void *worker_main(void *arg) {
        struct workpool *p = arg;

        pthread_mutex_lock(&p->lock);
        for (;;) {
                struct job *j;
                uint64_t one = 1;

                while (!p->queue && !p->stopping)
                        pthread_cond_wait(&p->cond, &p->lock);
                if (!p->queue)
                        break; /* stopping, nothing left to start */
                if (p->stopping)
                        break; /* jobs not started are cancelled by workpool_free */
                j = p->queue;
                p->queue = j->next;
                if (!p->queue)
                        p->queue_tail = &p->queue;
                pthread_mutex_unlock(&p->lock);

                j->r = j->work(j->userdata);

                pthread_mutex_lock(&p->lock);
                j->next = p->finished;
                p->finished = j;
                /* the counter only wakes the loop; its value does not matter */
                if (write(p->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
                        log_error("%s: cannot wake the event loop: %s", p->name, strerror(errno));
        }
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

/* Deliver finished jobs on the loop. */
static void deliver(struct workpool *p) {
        struct job *list;

        pthread_mutex_lock(&p->lock);
        list = TAKE_PTR(p->finished);
        pthread_mutex_unlock(&p->lock);

        while (list) {
                struct job *j = list;
                list = j->next;
                p->busy--;
                j->done(j->r, j->userdata);
                free(j);
        }
}

static void on_wake(evutil_socket_t fd, short what, void *userdata) {
        struct workpool *p = userdata;
        uint64_t n;

        if (read(p->efd, &n, sizeof(n)) < 0 && errno != EAGAIN)
                log_error("%s: reading the eventfd: %s", p->name, strerror(errno));
        deliver(p);
}

int workpool_new(struct event_base *base, const char *name, unsigned n_threads, struct workpool **ret) {
        struct workpool *p;
        int r;

        assert(base);
        assert(n_threads >= 1);
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->base = base;
        p->efd = -1;
        p->queue_tail = &p->queue;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        p->name = strdup(name ? name : "workpool");
        p->threads = calloc(n_threads, sizeof(*p->threads));
        p->n_threads = n_threads;
        if (!p->name || !p->threads) {
                workpool_free(p);
                return -ENOMEM;
        }
        p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (p->efd < 0) {
                r = -errno;
                workpool_free(p);
                return r;
        }
        p->ev = event_new(base, p->efd, EV_READ | EV_PERSIST, on_wake, p);
        if (!p->ev || event_add(p->ev, NULL) < 0) {
                workpool_free(p);
                return -ENOMEM;
        }
        for (unsigned i = 0; i < n_threads; i++) {
                r = pthread_create(&p->threads[i], NULL, worker_main, p);
                if (r != 0) {
                        workpool_free(p);
                        return -r;
                }
                p->n_started++;
        }
        *ret = p;
        return 0;
}

struct workpool *workpool_free(struct workpool *p) {
        struct job *queued;

        if (!p)
                return NULL;
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        for (unsigned i = 0; i < p->n_started; i++)
                pthread_join(p->threads[i], NULL);

        /* the threads are gone: no lock needed any more */
        queued = TAKE_PTR(p->queue);
        p->queue_tail = &p->queue;
        while (queued) {
                struct job *j = queued;
                queued = j->next;
                p->busy--;
                j->done(-ECANCELED, j->userdata);
                free(j);
        }
        deliver(p);

        if (p->ev)
                event_free(p->ev);
        if (p->efd >= 0)
                close(p->efd);
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        free(p->threads);
        free(p->name);
        free(p);
        return NULL;
}

int workpool_submit(struct workpool *p, workpool_work_t work, workpool_done_t done, void *userdata) {
        struct job *j;

        assert(p);
        assert(work);
        assert(done);
        if (p->stopping)
                return -ESHUTDOWN;
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        *j = (struct job) { .work = work, .done = done, .userdata = userdata };
        pthread_mutex_lock(&p->lock);
        *p->queue_tail = j;
        p->queue_tail = &j->next;
        pthread_cond_signal(&p->cond);
        pthread_mutex_unlock(&p->lock);
        p->busy++;
        return 0;
}

unsigned workpool_busy(const struct workpool *p) {
        return p ? p->busy : 0;
}
