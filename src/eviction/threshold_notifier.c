/* SPDX-License-Identifier: Apache-2.0 */
/* Kernel memory threshold notifications on the loop (see threshold_notifier.h). */
#include "eviction/threshold_notifier.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/macro.h"

struct eviction_notifier {
        struct event_base *base;
        char *dir;
        bool unified;
        char *description;
        eviction_notifier_fn fn;
        void *userdata;
        uint64_t level; /* v1: the usage level registered, 0: none */
        int efd;        /* v1: the eventfd the kernel signals */
        struct event *ev;
        /* v2 */
        int psi_fd;     /* memory.pressure with a trigger */
        int epfd;       /* epoll on psi_fd for EPOLLPRI, polled by the loop */
        int inotify_fd; /* memory.events changes */
        struct event *psi_ev, *inotify_ev;
};

uint64_t eviction_notifier_level(int64_t capacity, int64_t threshold_quantity, uint64_t usage, uint64_t working_set) {
        int64_t inactive_file = usage > working_set ? (int64_t) (usage - working_set) : 0;
        int64_t level = capacity - threshold_quantity + inactive_file;
        return level > 0 ? (uint64_t) level : 0;
}

int eviction_notifier_control_line(int efd, int watch_fd, uint64_t level, char *buf, size_t size) {
        int n = snprintf(buf, size, "%d %d %" PRIu64, efd, watch_fd, level);
        return n < 0 || (size_t) n >= size ? -ENOBUFS : n;
}

const char *eviction_notifier_description(const struct eviction_notifier *n) {
        return n->description;
}

static void fire(struct eviction_notifier *n) {
        char what[256];
        snprintf(what, sizeof(what), "eviction manager: %s crossed", n->description);
        n->fn(n->userdata, what);
}

static void on_eventfd(evutil_socket_t fd, short what, void *userdata) {
        struct eviction_notifier *n = userdata;
        uint64_t count;

        if (read(n->efd, &count, sizeof(count)) < 0 && errno != EAGAIN) {
                log_warning("eviction manager: error reading memcg events: %s", strerror(errno));
                return;
        }
        fire(n);
}

static void on_psi(evutil_socket_t fd, short what, void *userdata) {
        struct eviction_notifier *n = userdata;
        struct epoll_event e[4];

        /* drain the epoll fd: the PSI fd stays "ready" until the next window */
        if (epoll_wait(n->epfd, e, (int) ELEMENTSOF(e), 0) > 0)
                fire(n);
}

static void on_events_file(evutil_socket_t fd, short what, void *userdata) {
        struct eviction_notifier *n = userdata;
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

        while (read(n->inotify_fd, buf, sizeof(buf)) > 0)
                ;
        fire(n);
}

static void v1_unregister(struct eviction_notifier *n) {
        if (n->ev) {
                event_free(n->ev);
                n->ev = NULL;
        }
        if (n->efd >= 0) {
                close(n->efd); /* closing the eventfd removes the registration */
                n->efd = -1;
        }
        n->level = 0;
}

static int v1_register(struct eviction_notifier *n, uint64_t level) {
        _cleanup_free_ char *watch_path = NULL, *control_path = NULL;
        _cleanup_close_ int watch_fd = -1, control_fd = -1, efd = -1;
        char line[96];
        int r;

        if (asprintf(&watch_path, "%s/memory.usage_in_bytes", n->dir) < 0 ||
            asprintf(&control_path, "%s/cgroup.event_control", n->dir) < 0)
                return -ENOMEM;
        watch_fd = open(watch_path, O_RDONLY | O_CLOEXEC);
        if (watch_fd < 0)
                return -errno;
        control_fd = open(control_path, O_WRONLY | O_CLOEXEC);
        if (control_fd < 0)
                return -errno;
        efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (efd < 0)
                return -errno;
        r = eviction_notifier_control_line(efd, watch_fd, level, line, sizeof(line));
        if (r < 0)
                return r;
        if (write(control_fd, line, (size_t) r) < 0)
                return -errno;
        v1_unregister(n);
        n->ev = event_new(n->base, efd, EV_READ | EV_PERSIST, on_eventfd, n);
        if (!n->ev || event_add(n->ev, NULL) < 0)
                return -ENOMEM;
        n->efd = TAKE_FD(efd);
        n->level = level;
        return 0;
}

/* Writes the PSI trigger to fd: the 1 s window first; a kernel (6.5 and later) that treats the opener as
 * unprivileged (no CAP_SYS_RESOURCE, as in a container) refuses any window that is not a multiple of 2 s with EINVAL:
 * then the same 10 % stall over 2 s. Returns the trigger written, or NULL with errno set. */
/* writes the trigger to a memory.pressure fd, falling back to the 2 s one on EINVAL; NULL with errno on failure */
static const char *eviction_notifier_write_psi_trigger(int fd) {
        static const char *const triggers[] = { EVICTION_NOTIFIER_PSI_TRIGGER, EVICTION_NOTIFIER_PSI_TRIGGER_2S };

        for (size_t i = 0; i < ELEMENTSOF(triggers); i++) {
                if (write(fd, triggers[i], strlen(triggers[i]) + 1) >= 0)
                        return triggers[i];
                if (errno != EINVAL)
                        return NULL;
        }
        return NULL;
}

static int v2_arm(struct eviction_notifier *n) {
        _cleanup_free_ char *psi_path = NULL, *events_path = NULL;
        _cleanup_close_ int psi_fd = -1;
        struct epoll_event e = { .events = EPOLLPRI };
        const char *trigger;
        int r = 0;

        if (n->psi_ev || n->inotify_ev)
                return 0;
        if (asprintf(&psi_path, "%s/memory.pressure", n->dir) < 0 ||
            asprintf(&events_path, "%s/memory.events", n->dir) < 0)
                return -ENOMEM;
        /* the root has no memory.pressure on older kernels: the system-wide one */
        psi_fd = open(psi_path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (psi_fd < 0 && errno == ENOENT)
                psi_fd = open("/proc/pressure/memory", O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (psi_fd < 0)
                r = -errno;
        else if (!(trigger = eviction_notifier_write_psi_trigger(psi_fd)))
                r = -errno;
        else {
                log_v(3, "eviction manager: %s: PSI trigger \"%s\" on %s", n->description, trigger, psi_path);
                if (n->epfd < 0)
                        n->epfd = epoll_create1(EPOLL_CLOEXEC);
                e.data.fd = psi_fd;
                if (n->epfd >= 0 && epoll_ctl(n->epfd, EPOLL_CTL_ADD, psi_fd, &e) == 0) {
                        n->psi_ev = event_new(n->base, n->epfd, EV_READ | EV_PERSIST, on_psi, n);
                        if (n->psi_ev && event_add(n->psi_ev, NULL) == 0)
                                n->psi_fd = TAKE_FD(psi_fd);
                        else if (n->psi_ev) {
                                event_free(n->psi_ev);
                                n->psi_ev = NULL;
                        }
                }
        }
        /* the root has no memory.events */
        if (n->inotify_fd < 0)
                n->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (n->inotify_fd >= 0 && inotify_add_watch(n->inotify_fd, events_path, IN_MODIFY) >= 0) {
                n->inotify_ev = event_new(n->base, n->inotify_fd, EV_READ | EV_PERSIST, on_events_file, n);
                if (n->inotify_ev)
                        (void) event_add(n->inotify_ev, NULL);
        }
        return n->psi_ev || n->inotify_ev ? 0 : (r < 0 ? r : -ENOTSUP);
}

int eviction_notifier_set_threshold(struct eviction_notifier *n, uint64_t usage_bytes) {
        if (n->unified)
                return v2_arm(n);
        if (usage_bytes == n->level && n->efd >= 0)
                return 0;
        log_v(3, "eviction manager: setting %s to %" PRIu64, n->description, usage_bytes);
        return v1_register(n, usage_bytes);
}

int eviction_notifier_new(struct event_base *base, const char *cgroup_dir, bool unified, const char *description,
                          eviction_notifier_fn fn, void *userdata, struct eviction_notifier **ret) {
        struct eviction_notifier *n = calloc(1, sizeof(*n));

        if (!n)
                return -ENOMEM;
        *n = (struct eviction_notifier) { .base = base,
                                          .unified = unified,
                                          .fn = fn,
                                          .userdata = userdata,
                                          .efd = -1,
                                          .psi_fd = -1,
                                          .epfd = -1,
                                          .inotify_fd = -1 };
        n->dir = strdup(cgroup_dir);
        n->description = strdup(description);
        if (!n->dir || !n->description) {
                eviction_notifier_free(n);
                return -ENOMEM;
        }
        log_info("eviction manager: created %s", n->description);
        *ret = n;
        return 0;
}

struct eviction_notifier *eviction_notifier_free(struct eviction_notifier *n) {
        if (!n)
                return NULL;
        v1_unregister(n);
        if (n->psi_ev)
                event_free(n->psi_ev);
        if (n->inotify_ev)
                event_free(n->inotify_ev);
        if (n->epfd >= 0)
                close(n->epfd);
        if (n->psi_fd >= 0)
                close(n->psi_fd);
        if (n->inotify_fd >= 0)
                close(n->inotify_fd);
        free(n->dir);
        free(n->description);
        free(n);
        return NULL;
}
