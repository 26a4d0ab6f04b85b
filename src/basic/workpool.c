/* SPDX-License-Identifier: Apache-2.0 */
/* Worker threads whose results come back to the event loop (see workpool.h). */
#include "basic/workpool.h"
#include "basic/workpool-testing.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/timer.h"

enum job_state {
        JOB_QUEUED,
        JOB_RUNNING,
        JOB_FINISHED,
};

struct job {
        struct job *next; /* in the queue, the running list or the finished list */
        struct workpool *p;
        workpool_work_t work;
        workpool_done_t done;
        workpool_free_t destroy;
        void *userdata;
        char *key;
        struct event *deadline; /* loop side */
        int r;
        enum job_state state; /* under the lock */
        bool abandoned;       /* done(-ETIMEDOUT) ran: under the lock */
};

struct workpool {
        struct event_base *base;
        char *name;
        pthread_mutex_t lock;
        pthread_cond_t cond;             /* work to do, or stopping */
        pthread_cond_t exited;           /* a thread left */
        struct job *queue, **queue_tail; /* not started, in order */
        struct job *running;             /* started, not finished (any order) */
        struct job *finished;            /* done, not delivered (any order) */
        unsigned stuck_jobs;             /* abandoned jobs still running (loop side copy in n_stuck) */
        bool stopping;
        unsigned n_threads, max_threads;
        unsigned n_alive, n_stuck; /* under the lock */
        int efd;
        struct event *ev;
};

/* every pool's busy jobs, for workpool_in_flight() */
static atomic_uint in_flight;

static void busy_dec(struct workpool *p) {
        atomic_fetch_sub(&in_flight, 1);
}

static bool key_running(const struct workpool *p, const char *key) {
        for (const struct job *j = p->running; j; j = j->next)
                if (streq_ptr(j->key, key))
                        return true;
        return false;
}

/* under the lock: the first queued job whose key has no job running */
static struct job *pick(struct workpool *p) {
        for (struct job **q = &p->queue; *q; q = &(*q)->next) {
                struct job *j = *q;
                if (j->key && key_running(p, j->key))
                        continue;
                *q = j->next;
                if (!*q)
                        p->queue_tail = q;
                return j;
        }
        return NULL;
}

static void unlink_job(struct job **head, struct job *j) {
        for (struct job **q = head; *q; q = &(*q)->next)
                if (*q == j) {
                        *q = j->next;
                        return;
                }
}

/* under the lock: more threads than wanted, once the stuck ones are set aside */
static bool surplus(const struct workpool *p) {
        return p->n_alive - p->n_stuck > p->n_threads;
}

static void *worker_main(void *arg) {
        struct workpool *p = arg;

        pthread_mutex_lock(&p->lock);
        for (;;) {
                struct job *j = NULL;
                uint64_t one = 1;

                while (!p->stopping && !surplus(p) && !(j = pick(p)))
                        pthread_cond_wait(&p->cond, &p->lock);
                if (!j)
                        break; /* stopping (jobs not started are cancelled by workpool_free), or surplus */
                j->state = JOB_RUNNING;
                j->next = p->running;
                p->running = j;
                pthread_mutex_unlock(&p->lock);

                j->r = j->work(j->userdata);

                pthread_mutex_lock(&p->lock);
                unlink_job(&p->running, j);
                j->state = JOB_FINISHED;
                j->next = p->finished;
                p->finished = j;
                if (j->abandoned)
                        p->n_stuck--;
                /* a key free again may let a queued job start */
                pthread_cond_broadcast(&p->cond);
                /* the counter only wakes the loop; its value does not matter */
                if (write(p->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
                        log_error("%s: cannot wake the event loop: %s", p->name, strerror(errno));
        }
        p->n_alive--;
        pthread_cond_broadcast(&p->exited);
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

/* under the lock */
static int spawn_thread(struct workpool *p) {
        pthread_attr_t attr;
        pthread_t t;
        int r;

        if (pthread_attr_init(&attr) != 0)
                return -ENOMEM;
        (void) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        r = pthread_create(&t, &attr, worker_main, p);
        pthread_attr_destroy(&attr);
        if (r != 0)
                return -r;
        p->n_alive++;
        return 0;
}

static void job_free(struct job *j) {
        if (!j)
                return;
        if (j->deadline)
                event_free(j->deadline);
        free(j->key);
        free(j);
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
                if (j->abandoned) {
                        /* done(-ETIMEDOUT) ran already: the late result is thrown away */
                        p->stuck_jobs--;
                        log_warning("%s: a job finished %s after its deadline (%s)", p->name,
                                    j->key ? j->key : "(no key)", j->r < 0 ? strerror(-j->r) : "ok");
                } else {
                        busy_dec(p);
                        j->done(j->r, j->userdata);
                }
                if (j->destroy)
                        j->destroy(j->userdata);
                job_free(j);
        }
}

static void on_wake(evutil_socket_t fd, short what, void *userdata) {
        struct workpool *p = userdata;
        uint64_t n;

        if (read(p->efd, &n, sizeof(n)) < 0 && errno != EAGAIN)
                log_error("%s: reading the eventfd: %s", p->name, strerror(errno));
        deliver(p);
}

static void on_deadline(evutil_socket_t fd, short what, void *userdata) {
        struct job *j = userdata;
        struct workpool *p = j->p;
        enum job_state state;

        pthread_mutex_lock(&p->lock);
        state = j->state;
        if (state == JOB_QUEUED) {
                unlink_job(&p->queue, j);
                /* the tail may have been j */
                p->queue_tail = &p->queue;
                while (*p->queue_tail)
                        p->queue_tail = &(*p->queue_tail)->next;
        } else if (state == JOB_RUNNING) {
                j->abandoned = true;
                p->n_stuck++;
                /* replace the thread written off, within the bound */
                if (p->n_alive - p->n_stuck < p->n_threads && p->n_alive < p->max_threads && !p->stopping &&
                    spawn_thread(p) < 0)
                        log_error("%s: cannot start a thread to replace a stuck one", p->name);
        }
        pthread_mutex_unlock(&p->lock);

        if (state == JOB_FINISHED)
                return; /* delivered at the next wake-up, with its result */
        log_warning("%s: job %s passed its deadline %s", p->name, j->key ? j->key : "(no key)",
                    state == JOB_QUEUED ? "before it started" : "while running: its thread is written off");
        busy_dec(p);
        j->done(-ETIMEDOUT, j->userdata);
        if (state == JOB_QUEUED) {
                if (j->destroy)
                        j->destroy(j->userdata);
                job_free(j);
        } else
                p->stuck_jobs++;
}

int workpool_new_bounded(struct event_base *base, const char *name, unsigned n_threads, unsigned max_threads,
                         struct workpool **ret) {
        struct workpool *p;
        int r;

        assert(base);
        assert(n_threads >= 1);
        assert(max_threads >= n_threads);
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->base = base;
        p->efd = -1;
        p->queue_tail = &p->queue;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        pthread_cond_init(&p->exited, NULL);
        p->name = strdup(name ? name : "workpool");
        p->n_threads = n_threads;
        p->max_threads = max_threads;
        if (!p->name) {
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
        pthread_mutex_lock(&p->lock);
        for (unsigned i = 0; i < n_threads; i++) {
                r = spawn_thread(p);
                if (r < 0) {
                        pthread_mutex_unlock(&p->lock);
                        workpool_free(p);
                        return r;
                }
        }
        pthread_mutex_unlock(&p->lock);
        *ret = p;
        return 0;
}

int workpool_new(struct event_base *base, const char *name, unsigned n_threads, struct workpool **ret) {
        return workpool_new_bounded(base, name, n_threads, n_threads, ret);
}

struct workpool *workpool_free(struct workpool *p) {
        struct job *queued;
        unsigned stuck;

        if (!p)
                return NULL;
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        pthread_cond_broadcast(&p->cond);
        /* every thread but the stuck ones finishes its job and leaves */
        while (p->n_alive > p->n_stuck)
                pthread_cond_wait(&p->exited, &p->lock);
        stuck = p->n_stuck;
        queued = TAKE_PTR(p->queue);
        p->queue_tail = &p->queue;
        pthread_mutex_unlock(&p->lock);

        while (queued) {
                struct job *j = queued;
                queued = j->next;
                busy_dec(p);
                j->done(-ECANCELED, j->userdata);
                if (j->destroy)
                        j->destroy(j->userdata);
                job_free(j);
        }
        deliver(p);

        if (stuck > 0) {
                /* the stuck threads still use the lock and the eventfd: left to them */
                log_warning("%s: %u thread(s) still stuck in a job past its deadline at exit", p->name, stuck);
                if (p->ev)
                        event_free(TAKE_PTR(p->ev));
                pthread_mutex_lock(&p->lock);
                for (struct job *j = p->running; j; j = j->next)
                        if (j->deadline)
                                event_free(TAKE_PTR(j->deadline));
                pthread_mutex_unlock(&p->lock);
                return NULL;
        }
        if (p->ev)
                event_free(p->ev);
        if (p->efd >= 0)
                close(p->efd);
        pthread_cond_destroy(&p->cond);
        pthread_cond_destroy(&p->exited);
        pthread_mutex_destroy(&p->lock);
        free(p->name);
        free(p);
        return NULL;
}

int workpool_submit_full(struct workpool *p, const char *key, uint64_t timeout_usec, workpool_work_t work,
                         workpool_done_t done, workpool_free_t destroy, void *userdata) {
        struct job *j;

        assert(p);
        assert(work);
        assert(done);
        assert(timeout_usec == 0 || destroy);
        if (p->stopping)
                return -ESHUTDOWN;
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        *j = (struct job) { .p = p, .work = work, .done = done, .destroy = destroy, .userdata = userdata };
        if (key && !(j->key = strdup(key))) {
                free(j);
                return -ENOMEM;
        }
        if (timeout_usec > 0) {
                j->deadline = evtimer_new(p->base, on_deadline, j);
                if (!j->deadline) {
                        job_free(j);
                        return -ENOMEM;
                }
                evtimer_add_usec(j->deadline, timeout_usec);
        }
        pthread_mutex_lock(&p->lock);
        *p->queue_tail = j;
        p->queue_tail = &j->next;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        atomic_fetch_add(&in_flight, 1);
        return 0;
}

int workpool_submit(struct workpool *p, workpool_work_t work, workpool_done_t done, void *userdata) {
        return workpool_submit_full(p, NULL, 0, work, done, NULL, userdata);
}

unsigned workpool_in_flight(void) {
        return atomic_load(&in_flight);
}

unsigned workpool_stuck(const struct workpool *p) {
        return p ? p->stuck_jobs : 0;
}
