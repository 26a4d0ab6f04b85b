/* SPDX-License-Identifier: Apache-2.0 */
/* The node shutdown manager. Every D-Bus call is asynchronous, its reply handled on the loop; sd-bus is attached
 * to the libevent loop as the systemd cgroup driver's client (cm/systemd.c) is: the bus fd and sd-bus's own
 * timeout are one event, sd_bus_process() runs a bounded batch, then the event is armed again.
 *
 * Start: InhibitDelayMaxUSec read; when below the sum of the budgets, the drop-in written, KillUnit(SIGHUP) to
 * systemd-logind, and the value read again after 0.1, 0.2, 0.4, 0.8, 1.6 s until it is enough (else the error
 * upstream gives, and the manager stays off); then Inhibit("shutdown", "kubelet", ..., "delay") and the match on
 * PrepareForShutdown. A lost connection is made again after a second, and the steps run again. */
#include "nodeshutdown/manager.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "basic/duration.h"
#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/sdbus_loop.h"
#include "basic/timer.h"

#define LOGIND_DEST "org.freedesktop.login1"
#define LOGIND_PATH "/org/freedesktop/login1"
#define LOGIND_MANAGER "org.freedesktop.login1.Manager"
#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define CALL_TIMEOUT_USEC (30 * USEC_PER_SEC)
#define RECONNECT_USEC (1 * USEC_PER_SEC)  /* dbusReconnectPeriod */
#define DELAY_POLL_FIRST_USEC (100 * 1000) /* wait.Backoff{100ms, x2, 5 steps} */
#define DELAY_POLL_STEPS 5
#define POD_POLL_USEC (200 * 1000) /* how often a group's pods are looked at */

enum step {
        STEP_OFF,        /* not started, or failed for good */
        STEP_DELAY,      /* reading InhibitDelayMaxUSec */
        STEP_RELOAD,     /* KillUnit(systemd-logind, SIGHUP) in flight */
        STEP_DELAY_POLL, /* reading it again after the reload */
        STEP_INHIBIT,    /* Inhibit in flight */
        STEP_RUNNING,    /* the lock held (or released for a shutdown), watching PrepareForShutdown */
};

struct nodeshutdown_manager {
        struct event_base *base;
        struct nodeshutdown_period *periods;
        size_t n_periods;
        uint64_t requested_usec;
        char *conf_dir;
        const struct nodeshutdown_ops *ops;
        void *userdata;

        sd_bus *bus;
        sd_bus_slot *call, *match;
        struct event *ev;        /* the bus */
        struct event *timer;     /* the delay poll, the reconnect */
        struct event *pod_timer; /* a group's poll */
        struct event *budget;    /* a group's budget */
        enum step step;
        unsigned attempt;
        uint64_t delay_usec; /* the last InhibitDelayMaxUSec read */
        bool reconnecting;
        bool started_once;

        int lock_fd; /* the inhibitor lock, -1: none */
        bool shutting_down;

        /* a shutdown being processed */
        bool processing;
        bool cancel_pending; /* a PrepareForShutdown(false) came meanwhile */
        struct nodeshutdown_pod *pods;
        size_t n_pods;
        size_t *group_of; /* per pod */
        size_t group;     /* the group being stopped */
};

void nodeshutdown_pods_free(struct nodeshutdown_pod *l, size_t n) {
        for (size_t i = 0; l && i < n; i++) {
                free(l[i].uid);
                free(l[i].name);
        }
        free(l);
}

static void rearm(struct nodeshutdown_manager *m);
static void run_step(struct nodeshutdown_manager *m);
static void acquire_lock(struct nodeshutdown_manager *m);

static void release_lock(struct nodeshutdown_manager *m) {
        if (m->lock_fd < 0)
                return;
        if (close(m->lock_fd) < 0)
                log_error("unable to close systemd inhibitor lock: %s", strerror(errno));
        m->lock_fd = -1;
}

/* ---------------------------------------------------------------- the bus on the loop */

/* No flush on the way out: sd_bus_flush waits until the socket has taken every queued message, on the loop. */
static void disconnect(struct nodeshutdown_manager *m) {
        m->call = sd_bus_slot_unref(m->call);
        m->match = sd_bus_slot_unref(m->match);
        m->bus = sd_bus_close_unref(m->bus);
        if (m->ev)
                event_del(m->ev);
}

/* a failure of a step: off for good when the manager never ran (upstream's Start returns the error), else a new
 * connection and the steps again after a second (its restart loop) */
static void fail(struct nodeshutdown_manager *m, const char *what) {
        disconnect(m);
        if (!m->started_once) {
                log_error("Failed to start node shutdown manager: %s", what);
                m->step = STEP_OFF;
                return;
        }
        log_error("Unable to watch the node for shutdown events: %s", what);
        m->step = STEP_OFF;
        m->reconnecting = true;
        (void) evtimer_add_usec(m->timer, RECONNECT_USEC);
}

static void on_bus(evutil_socket_t fd, short what, void *userdata) {
        struct nodeshutdown_manager *m = userdata;
        int r;

        (void) fd;
        (void) what;
        for (unsigned i = 0; m->bus && i < 1024; i++) {
                r = sd_bus_process(m->bus, NULL);
                if (r < 0) {
                        _cleanup_free_ char *msg = NULL;
                        if (asprintf(&msg, "D-Bus connection: %s", strerror(-r)) < 0)
                                msg = NULL;
                        m->started_once = m->started_once || m->step == STEP_RUNNING;
                        log_error("Ended to watching the node for shutdown events");
                        fail(m, msg ? msg : "D-Bus connection lost");
                        return;
                }
                if (r == 0)
                        break;
        }
        rearm(m);
}

static void rearm(struct nodeshutdown_manager *m) {
        sdbus_event_rearm(m->bus, m->ev, m->base, on_bus, m);
}

static char *reply_error(sd_bus_message *reply, const char *what) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        char *msg;
        if (asprintf(&msg, "%s: %s", what, e ? strna(e->message) : "invalid reply") < 0)
                return NULL;
        return msg;
}

/* ---------------------------------------------------------------- the start steps */

static int on_delay(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        struct nodeshutdown_manager *m = userdata;
        uint64_t usec = 0;
        int r;

        (void) ret_error;
        m->call = sd_bus_slot_unref(m->call);
        if (sd_bus_message_is_method_error(reply, NULL) || (r = sd_bus_message_read(reply, "v", "t", &usec)) < 0) {
                _cleanup_free_ char *msg = sd_bus_message_is_method_error(reply, NULL)
                                                   ? reply_error(reply, "failed reading InhibitDelayMaxUSec property "
                                                                        "from logind")
                                                   : strdup("InhibitDelayMaxUSec from logind is not a uint64 as "
                                                            "expected");
                fail(m, msg ? msg : "InhibitDelayMaxUSec");
                return 0;
        }
        m->delay_usec = usec;
        if (m->step == STEP_DELAY) {
                if (m->requested_usec > usec) {
                        m->step = STEP_RELOAD;
                        run_step(m);
                } else {
                        m->step = STEP_INHIBIT;
                        run_step(m);
                }
                return 0;
        }
        /* STEP_DELAY_POLL */
        if (m->requested_usec <= usec) {
                m->step = STEP_INHIBIT;
                run_step(m);
                return 0;
        }
        if (m->attempt < DELAY_POLL_STEPS) {
                log_v(3,
                      "InhibitDelayMaxSec still less than requested, retrying attempt=%u current=%" PRIu64
                      "us requested=%" PRIu64 "us",
                      m->attempt, usec, m->requested_usec);
                (void) evtimer_add_usec(m->timer, DELAY_POLL_FIRST_USEC << (m->attempt - 1));
                return 0;
        }
        char a[GO_DURATION_MAX], b[GO_DURATION_MAX];
        _cleanup_free_ char *msg = NULL;
        if (asprintf(&msg,
                     "node shutdown manager was timed out after %u attempts waiting for logind InhibitDelayMaxSec to "
                     "update to %s (ShutdownGracePeriod), current value is %s",
                     m->attempt, go_duration_format((int64_t) m->requested_usec * 1000, a, sizeof(a)),
                     go_duration_format((int64_t) usec * 1000, b, sizeof(b))) < 0)
                msg = NULL;
        fail(m, msg ? msg : "logind InhibitDelayMaxSec");
        return 0;
}

/* OverrideInhibitDelay: the drop-in, whole (a temporary file renamed over it) */
static int write_dropin(struct nodeshutdown_manager *m, struct ck_error **ret_error) {
        _cleanup_free_ char *path = NULL, *tmp = NULL, *data = NULL;
        _cleanup_close_ int fd = -1;
        size_t n;
        int r;

        r = mkdir_p(m->conf_dir, 0755);
        if (r < 0)
                return ck_error_set(ret_error, r,
                                    "unable to override inhibit delay by shutdown manager: failed creating %s/ "
                                    "directory: %s",
                                    m->conf_dir, strerror(-r));
        if (asprintf(&path, "%s/" NODESHUTDOWN_LOGIND_CONF, m->conf_dir) < 0 ||
            asprintf(&tmp, "%s/.tmp-" NODESHUTDOWN_LOGIND_CONF, m->conf_dir) < 0 ||
            asprintf(&data, "# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=%" PRIu64 "\n",
                     (m->requested_usec + USEC_PER_SEC / 2) / USEC_PER_SEC) < 0)
                return -ENOMEM;
        n = strlen(data);
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        r = fd < 0 ? -errno : 0;
        if (r == 0 && (fchmod(fd, 0644) < 0 || write(fd, data, n) != (ssize_t) n))
                r = errno ? -errno : -EIO;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                if (fd >= 0)
                        (void) unlink(tmp);
                return ck_error_set(ret_error, r,
                                    "unable to override inhibit delay by shutdown manager: failed writing logind "
                                    "shutdown inhibit override file %s: %s",
                                    path, strerror(-r));
        }
        log_info("node shutdown manager: wrote %s (InhibitDelayMaxSec=%" PRIu64 ")", path,
                 (m->requested_usec + USEC_PER_SEC / 2) / USEC_PER_SEC);
        return 0;
}

static int on_reload(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        struct nodeshutdown_manager *m = userdata;

        (void) ret_error;
        m->call = sd_bus_slot_unref(m->call);
        if (sd_bus_message_is_method_error(reply, NULL)) {
                _cleanup_free_ char *msg = reply_error(reply, "unable to reload logind conf");
                fail(m, msg ? msg : "unable to reload logind conf");
                return 0;
        }
        /* the reload is asynchronous: read the value again, with back-off */
        m->step = STEP_DELAY_POLL;
        m->attempt = 0;
        (void) evtimer_add_usec(m->timer, DELAY_POLL_FIRST_USEC);
        return 0;
}

static int on_prepare_for_shutdown(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error);

static int on_inhibit(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        struct nodeshutdown_manager *m = userdata;
        int fd = -1, r;

        (void) ret_error;
        m->call = sd_bus_slot_unref(m->call);
        if (sd_bus_message_is_method_error(reply, NULL)) {
                _cleanup_free_ char *msg = reply_error(reply, "failed creating systemd inhibitor");
                if (m->step == STEP_RUNNING) { /* again after a cancelled shutdown: logged, as upstream */
                        log_error("%s", msg ? msg : "failed creating systemd inhibitor");
                        return 0;
                }
                fail(m, msg ? msg : "failed creating systemd inhibitor");
                return 0;
        }
        r = sd_bus_message_read(reply, "h", &fd);
        if (r >= 0) {
                /* the message owns its fd: ours is a copy, O_CLOEXEC */
                fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                r = fd < 0 ? -errno : 0;
        }
        if (r < 0) {
                _cleanup_free_ char *msg = NULL;
                if (asprintf(&msg, "failed storing inhibit lock file descriptor: %s", strerror(-r)) < 0)
                        msg = NULL;
                if (m->step == STEP_RUNNING) {
                        log_error("%s", msg ? msg : "inhibit lock");
                        return 0;
                }
                fail(m, msg ? msg : "inhibit lock");
                return 0;
        }
        release_lock(m); /* the previous one, if any, once the new one is held */
        m->lock_fd = fd;
        log_v(1, "node shutdown manager: took the inhibitor lock (delay, shutdown)");
        if (m->step == STEP_RUNNING)
                return 0;
        r = sd_bus_match_signal_async(m->bus, &m->match, LOGIND_DEST, LOGIND_PATH, LOGIND_MANAGER, "PrepareForShutdown",
                                      on_prepare_for_shutdown, NULL, m);
        if (r < 0) {
                _cleanup_free_ char *msg = NULL;
                release_lock(m);
                if (asprintf(&msg, "failed to monitor shutdown: %s", strerror(-r)) < 0)
                        msg = NULL;
                fail(m, msg ? msg : "failed to monitor shutdown");
                return 0;
        }
        m->step = STEP_RUNNING;
        m->started_once = true;
        log_info("node shutdown manager started: watching logind for shutdown events (InhibitDelayMaxUSec %" PRIu64
                 "us, requested %" PRIu64 "us)",
                 m->delay_usec, m->requested_usec);
        return 0;
}

static void acquire_lock(struct nodeshutdown_manager *m) {
        int r;

        if (!m->bus)
                return;
        m->call = sd_bus_slot_unref(m->call);
        r = sd_bus_call_method_async(m->bus, &m->call, LOGIND_DEST, LOGIND_PATH, LOGIND_MANAGER, "Inhibit", on_inhibit,
                                     m, "ssss", "shutdown", "kubelet", "Kubelet needs time to handle node shutdown",
                                     "delay");
        if (r < 0)
                log_error("failed creating systemd inhibitor: %s", strerror(-r));
        rearm(m);
}

static void run_step(struct nodeshutdown_manager *m) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        int r = 0;

        m->call = sd_bus_slot_unref(m->call);
        switch (m->step) {
        case STEP_DELAY:
        case STEP_DELAY_POLL:
                if (m->step == STEP_DELAY_POLL)
                        m->attempt++;
                r = sd_bus_call_method_async(m->bus, &m->call, LOGIND_DEST, LOGIND_PATH,
                                             "org.freedesktop.DBus.Properties", "Get", on_delay, m, "ss",
                                             LOGIND_MANAGER, "InhibitDelayMaxUSec");
                break;
        case STEP_RELOAD:
                r = write_dropin(m, &err);
                if (r < 0) {
                        fail(m, err ? ck_error_message(err) : "unable to override inhibit delay by shutdown manager");
                        return;
                }
                /* ReloadLogindConf: SIGHUP to systemd-logind.service, through systemd */
                r = sd_bus_call_method_async(m->bus, &m->call, SD_DEST, SD_PATH, SD_MANAGER, "KillUnit", on_reload, m,
                                             "ssi", "systemd-logind.service", "all", (int32_t) 1);
                break;
        case STEP_INHIBIT:
                acquire_lock(m);
                return;
        case STEP_OFF:
        case STEP_RUNNING:
                return;
        }
        if (r < 0) {
                ck_error_set(&err, r, "D-Bus call: %s", strerror(-r));
                fail(m, ck_error_message(err));
                return;
        }
        rearm(m);
}

static int connect_and_start(struct nodeshutdown_manager *m) {
        int r;

        disconnect(m);
        r = sd_bus_open_system(&m->bus);
        if (r < 0) {
                m->bus = sd_bus_close_unref(m->bus);
                return r;
        }
        m->step = STEP_DELAY;
        m->attempt = 0;
        run_step(m);
        return 0;
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        struct nodeshutdown_manager *m = userdata;

        (void) fd;
        (void) what;
        if (m->reconnecting) {
                int r;
                m->reconnecting = false;
                log_v(1, "Restarting watch for node shutdown events");
                r = connect_and_start(m);
                if (r < 0) {
                        log_error("Unable to watch the node for shutdown events: %s", strerror(-r));
                        m->reconnecting = true;
                        (void) evtimer_add_usec(m->timer, RECONNECT_USEC);
                }
                return;
        }
        if (m->step == STEP_DELAY_POLL && m->bus)
                run_step(m);
}

/* ---------------------------------------------------------------- a shutdown */

static void process_end(struct nodeshutdown_manager *m) {
        event_del(m->pod_timer);
        event_del(m->budget);
        nodeshutdown_pods_free(m->pods, m->n_pods);
        m->pods = NULL;
        m->n_pods = 0;
        free(m->group_of);
        m->group_of = NULL;
        m->processing = false;
        release_lock(m);
        log_info("Shutdown manager completed processing shutdown event, node will shutdown shortly");
        if (m->cancel_pending) {
                m->cancel_pending = false;
                m->shutting_down = false;
                m->ops->shutting_down(m->userdata, false);
                acquire_lock(m);
        }
}

static void group_start(struct nodeshutdown_manager *m);

static bool group_done(struct nodeshutdown_manager *m) {
        for (size_t i = 0; i < m->n_pods; i++)
                if (m->group_of[i] == m->group && !m->ops->pod_done(m->userdata, m->pods[i].uid))
                        return false;
        return true;
}

static void group_next(struct nodeshutdown_manager *m) {
        event_del(m->pod_timer);
        event_del(m->budget);
        m->group++;
        group_start(m);
}

static void on_pod_timer(evutil_socket_t fd, short what, void *userdata) {
        struct nodeshutdown_manager *m = userdata;

        (void) fd;
        (void) what;
        if (group_done(m)) {
                log_v(1, "Done waiting for all pods in group to terminate gracePeriod=%" PRId64 " priority=%" PRId32,
                      m->periods[m->group].seconds, m->periods[m->group].priority);
                group_next(m);
                return;
        }
        (void) evtimer_add_usec(m->pod_timer, POD_POLL_USEC);
}

static void on_budget(evutil_socket_t fd, short what, void *userdata) {
        struct nodeshutdown_manager *m = userdata;

        (void) fd;
        (void) what;
        log_v(1, "Shutdown manager pod killing time out gracePeriod=%" PRId64 " priority=%" PRId32,
              m->periods[m->group].seconds, m->periods[m->group].priority);
        group_next(m);
}

/* the pods of group m->group stopped at once; the next group when all are done or the budget is spent. Groups
 * without pods are skipped (not waited for). */
static void group_start(struct nodeshutdown_manager *m) {
        for (; m->group < m->n_periods; m->group++) {
                const struct nodeshutdown_period *g = &m->periods[m->group];
                size_t n = 0;

                for (size_t i = 0; i < m->n_pods; i++) {
                        int64_t grace;
                        int r;

                        if (m->group_of[i] != m->group)
                                continue;
                        n++;
                        grace = nodeshutdown_pod_grace(g, m->pods[i].grace);
                        log_v(1, "Shutdown manager killing pod with gracePeriod pod=\"%s\" gracePeriod=%" PRId64,
                              strna(m->pods[i].name), grace);
                        r = m->ops->kill(m->userdata, m->pods[i].uid, grace);
                        if (r < 0)
                                log_v(1, "Shutdown manager failed killing pod pod=\"%s\" err=\"%s\"",
                                      strna(m->pods[i].name), strerror(-r));
                }
                if (n == 0)
                        continue;
                (void) evtimer_add_usec(m->budget, (uint64_t) g->seconds * USEC_PER_SEC);
                (void) evtimer_add_usec(m->pod_timer, 0);
                return;
        }
        process_end(m);
}

static void process_shutdown(struct nodeshutdown_manager *m) {
        int r;

        log_v(1, "Shutdown manager processing shutdown event");
        m->processing = true;
        m->group = 0;
        r = m->ops->active_pods(m->userdata, &m->pods, &m->n_pods);
        if (r >= 0 && m->n_pods > 0 && !(m->group_of = calloc(m->n_pods, sizeof(*m->group_of))))
                r = -ENOMEM;
        if (r < 0) {
                log_error("Shutdown manager failed to process shutdown event: %s", strerror(-r));
                nodeshutdown_pods_free(m->pods, m->n_pods);
                m->pods = NULL;
                m->n_pods = 0;
        }
        for (size_t i = 0; i < m->n_pods; i++)
                m->group_of[i] = nodeshutdown_group_of(m->periods, m->n_periods, m->pods[i].priority);
        group_start(m);
}

static int on_prepare_for_shutdown(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        struct nodeshutdown_manager *m = userdata;
        int on = 0;

        (void) ret_error;
        if (sd_bus_message_read(msg, "b", &on) < 0) {
                log_error("Failed obtaining shutdown event, PrepareForShutdown event was not bool type as expected");
                return 0;
        }
        log_v(1, "Shutdown manager detected new shutdown event event=\"%s\"", on ? "shutdown" : "cancelled");
        if (m->processing) {
                /* the shutdown being processed runs to its end first, as upstream's serial loop does */
                m->cancel_pending = !on;
                return 0;
        }
        m->shutting_down = on;
        m->ops->shutting_down(m->userdata, on);
        if (on)
                process_shutdown(m);
        else
                acquire_lock(m);
        return 0;
}

/* ---------------------------------------------------------------- lifecycle */

int nodeshutdown_manager_new(struct event_base *base, const struct nodeshutdown_period *periods, size_t n,
                             const char *logind_conf_dir, const struct nodeshutdown_ops *ops, void *userdata,
                             struct nodeshutdown_manager **ret) {
        struct nodeshutdown_manager *m;

        assert(base && periods && n > 0 && ops);
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->lock_fd = -1;
        m->base = base;
        m->ops = ops;
        m->userdata = userdata;
        m->periods = calloc(n, sizeof(*periods));
        m->conf_dir = strdup(logind_conf_dir ? logind_conf_dir : NODESHUTDOWN_LOGIND_CONF_DIR);
        m->ev = event_new(base, -1, 0, on_bus, m);
        m->timer = evtimer_new(base, on_timer, m);
        m->pod_timer = evtimer_new(base, on_pod_timer, m);
        m->budget = evtimer_new(base, on_budget, m);
        if (!m->periods || !m->conf_dir || !m->ev || !m->timer || !m->pod_timer || !m->budget) {
                nodeshutdown_manager_free(m);
                return -ENOMEM;
        }
        memcpy(m->periods, periods, n * sizeof(*periods));
        m->n_periods = n;
        m->requested_usec = nodeshutdown_period_requested_usec(periods, n);
        *ret = m;
        return 0;
}

int nodeshutdown_manager_start(struct nodeshutdown_manager *m) {
        const char *addr = getenv("DBUS_SYSTEM_BUS_ADDRESS");
        int r = connect_and_start(m);

        if (r < 0)
                log_error("Failed to start node shutdown manager: cannot connect to the system bus %s: %s",
                          addr ? addr : "unix:path=/run/dbus/system_bus_socket", strerror(-r));
        return r;
}

struct nodeshutdown_manager *nodeshutdown_manager_free(struct nodeshutdown_manager *m) {
        if (!m)
                return NULL;
        disconnect(m);
        release_lock(m);
        if (m->ev)
                event_free(m->ev);
        if (m->timer)
                event_free(m->timer);
        if (m->pod_timer)
                event_free(m->pod_timer);
        if (m->budget)
                event_free(m->budget);
        nodeshutdown_pods_free(m->pods, m->n_pods);
        free(m->group_of);
        free(m->periods);
        free(m->conf_dir);
        free(m);
        return NULL;
}

bool nodeshutdown_manager_shutting_down(const struct nodeshutdown_manager *m) {
        return m && m->shutting_down;
}
