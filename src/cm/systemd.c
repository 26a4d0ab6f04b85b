/* SPDX-License-Identifier: Apache-2.0 */
/* sd-bus on the libevent loop: the bus fd and sd-bus's own timeout are one event, sd_bus_process() runs until it
 * has nothing more to do, then the event is armed again with what sd-bus waits for. */
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>

#include "basic/list.h"
#include "basic/error.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/sdbus_loop.h"
#include "basic/timer.h"
#include "cm/systemd.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define SD_CALL_TIMEOUT_USEC (30 * USEC_PER_SEC)
#define SD_JOB_WAIT_USEC (1 * USEC_PER_SEC) /* runc: time.After(time.Second) */
#define SD_OPS_MAX 4096                     /* calls in flight: beyond, a call fails at once */

struct sd_op {
        struct cm_sd *sd;
        struct sd_op *prev, *next;
        char *unit;
        bool stop;
        bool no_job; /* SetUnitProperties: done on the reply */
        sd_bus_slot *slot;
        char *job; /* once the reply came */
        struct event *timer;
        bool finished; /* the blocking variant */
        int r;
        char *message;
        cm_sd_done_fn done;
        void (*destroy)(void *userdata); /* dropped without done (cm_sd_free) */
        void *userdata;
};

struct cm_sd {
        struct event_base *base;
        sd_bus *bus;
        sd_bus_slot *match;
        struct event *ev;
        int version;
        struct sd_op *ops;
        size_t n_ops;
};

static void op_free(struct sd_op *op) {
        if (!op)
                return;
        if (op->sd) {
                DLIST_REMOVE(op->sd->ops, op);
                op->sd->n_ops--;
        }
        sd_bus_slot_unref(op->slot);
        if (op->timer)
                event_free(op->timer);
        free(op->unit);
        free(op->job);
        free(op->message);
        free(op);
}

/* ends the op: its callback with the result, then it is freed */
static void op_finish(struct sd_op *op, int r, const char *message) {
        cm_sd_done_fn done = op->done;
        void *userdata = op->userdata;
        _cleanup_free_ char *msg = message ? strdup(message) : NULL;

        if (!done) { /* the blocking variant keeps it for its caller */
                op->finished = true;
                op->r = r;
                op->message = TAKE_PTR(msg);
                op->slot = sd_bus_slot_unref(op->slot);
                if (op->timer)
                        event_del(op->timer);
                return;
        }
        op_free(op);
        done(r, msg, userdata);
}

static void rearm(struct cm_sd *sd);

static void on_job_timeout(evutil_socket_t fd, short what, void *userdata) {
        struct sd_op *op = userdata;
        (void) fd;
        (void) what;
        log_warning("Timed out while waiting for %s(%s) completion signal from dbus. Continuing...",
                    op->stop ? "StopUnit" : "StartTransientUnit", op->unit);
        op_finish(op, 0, NULL);
}

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        struct sd_op *op = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);
        const char *job = NULL;
        int r;

        (void) ret_error;
        op->slot = sd_bus_slot_unref(op->slot);
        if (e) {
                _cleanup_free_ char *msg = NULL;
                /* isUnitExists: a slice made before (by us, earlier) is what was asked for */
                if (!op->stop && sd_bus_error_has_name(e, "org.freedesktop.systemd1.UnitExists")) {
                        op_finish(op, 0, NULL);
                        return 0;
                }
                if (asprintf(&msg, "%s: %s", strna(e->name), strna(e->message)) < 0)
                        msg = NULL;
                r = sd_bus_error_get_errno(e);
                op_finish(op, r > 0 ? -r : -EIO, msg ? msg : "D-Bus error");
                return 0;
        }
        if (op->no_job) {
                op_finish(op, 0, NULL);
                return 0;
        }
        r = sd_bus_message_read(m, "o", &job);
        if (r < 0 || !(op->job = strdup(job))) {
                op_finish(op, r < 0 ? r : -ENOMEM, "cannot read the job of the reply");
                return 0;
        }
        log_v(4, "systemd job %s for %s(%s)", op->job, op->stop ? "StopUnit" : "StartTransientUnit", op->unit);
        if (op->timer)
                (void) evtimer_add_usec(op->timer, SD_JOB_WAIT_USEC);
        return 0;
}

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        struct cm_sd *sd = userdata;
        const char *job = NULL, *unit = NULL, *result = NULL;
        uint32_t id;
        _cleanup_free_ char *msg = NULL;

        (void) ret_error;
        if (sd_bus_message_read(m, "uoss", &id, &job, &unit, &result) < 0)
                return 0;
        for (struct sd_op *op = sd->ops; op; op = op->next) {
                if (!op->job || op->finished || !streq(op->job, job))
                        continue;
                log_v(4, "systemd job %s for %s(%s) removed: %s", job, op->stop ? "StopUnit" : "StartTransientUnit",
                      op->unit, result);
                if (streq(result, "done")) {
                        op_finish(op, 0, NULL);
                        return 0;
                }
                if (op->stop) {
                        log_warning("error removing unit `%s`: got `%s`. Continuing...", op->unit, result);
                        op_finish(op, 0, NULL);
                        return 0;
                }
                /* as runc: the failed unit is reset so that it can be started again */
                (void) sd_bus_call_method_async(sd->bus, NULL, SD_DEST, SD_PATH, SD_MANAGER, "ResetFailedUnit", NULL,
                                                NULL, "s", op->unit);
                if (asprintf(&msg, "error creating systemd unit `%s`: got `%s`", op->unit, result) < 0)
                        msg = NULL;
                op_finish(op, -EIO, msg ? msg : result);
                return 0;
        }
        return 0;
}

static void fail_all(struct cm_sd *sd, int r) {
        /* the ops in flight fail; a blocking one is only marked */
        struct sd_op *op = sd->ops;
        while (op) {
                struct sd_op *next = op->next;
                if (!op->finished)
                        op_finish(op, r, "the D-Bus connection to systemd was lost");
                op = next;
        }
}

static void on_bus(evutil_socket_t fd, short what, void *userdata) {
        struct cm_sd *sd = userdata;
        int r;

        (void) fd;
        (void) what;
        for (unsigned i = 0; i < 1024; i++) { /* a bounded batch, then the loop runs others */
                r = sd_bus_process(sd->bus, NULL);
                if (r < 0) {
                        log_error("systemd cgroup driver: D-Bus connection: %s", strerror(-r));
                        sd->bus = sd_bus_close_unref(sd->bus);
                        fail_all(sd, r);
                        return;
                }
                if (r == 0)
                        break;
        }
        rearm(sd);
}

static void rearm(struct cm_sd *sd) {
        sdbus_event_rearm(sd->bus, sd->ev, sd->base, on_bus, sd);
}

/* A lost or replaced connection is closed without a flush (sd_bus_flush would wait for the socket on the loop); only
 * the teardown, off the loop's work, flushes what is queued. */
static int connect_bus(struct cm_sd *sd) {
        int r;

        sd->match = sd_bus_slot_unref(sd->match);
        sd->bus = sd_bus_close_unref(sd->bus);
        r = sd_bus_open_system(&sd->bus);
        if (r < 0)
                return r;
        /* the jobs' completions (go-systemd adds the same match; systemd sends them to the job's client). Not waited
         * for: the bus handles AddMatch before the calls sent after it on this connection. */
        r = sd_bus_match_signal_async(sd->bus, &sd->match, NULL, SD_PATH, SD_MANAGER, "JobRemoved", on_job_removed,
                                      NULL, sd);
        if (r < 0)
                return r;
        return 0;
}

int cm_sd_open(struct event_base *base, struct cm_sd **ret) {
        _cleanup_free_ char *version = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *addr = getenv("DBUS_SYSTEM_BUS_ADDRESS");
        struct cm_sd *sd;
        int r;

        sd = calloc(1, sizeof(*sd));
        if (!sd)
                return -ENOMEM;
        sd->base = base;
        sd->ev = event_new(base, -1, 0, on_bus, sd);
        if (!sd->ev) {
                cm_sd_free(sd);
                return -ENOMEM;
        }
        r = connect_bus(sd);
        if (r >= 0)
                r = sd_bus_get_property_string(sd->bus, SD_DEST, SD_PATH, SD_MANAGER, "Version", &error, &version);
        if (r < 0) {
                log_error("failed to connect to systemd over D-Bus for --cgroup-driver=systemd (system bus %s): %s; "
                          "the systemd cgroup driver needs a running systemd (else use --cgroup-driver=cgroupfs)",
                          addr ? addr : "unix:path=/run/dbus/system_bus_socket",
                          sd_bus_error_is_set(&error) ? error.message : strerror(-r));
                sd_bus_error_free(&error);
                cm_sd_free(sd);
                return r;
        }
        sd->version = cm_systemd_version_parse(version);
        log_info("cgroup driver systemd: systemd %s on the system bus", version);
        rearm(sd);
        *ret = sd;
        return 0;
}

struct cm_sd *cm_sd_free(struct cm_sd *sd) {
        if (!sd)
                return NULL;
        while (sd->ops) {
                struct sd_op *op = sd->ops;
                if (op->destroy)
                        op->destroy(op->userdata);
                op_free(op);
        }
        sd->match = sd_bus_slot_unref(sd->match);
        sd->bus = sd_bus_flush_close_unref(sd->bus);
        if (sd->ev)
                event_free(sd->ev);
        free(sd);
        return NULL;
}

int cm_sd_version(const struct cm_sd *sd) {
        return sd ? sd->version : -1;
}

static int append_properties(sd_bus_message *m, const struct cm_slice_properties *p) {
        int r = sd_bus_message_open_container(m, 'a', "(sv)");
        for (size_t i = 0; r >= 0 && i < p->n; i++) {
                const struct cm_unit_property *x = &p->p[i];
                switch (x->type) {
                case CM_PROPERTY_STRING:
                        r = sd_bus_message_append(m, "(sv)", x->name, "s", x->s);
                        break;
                case CM_PROPERTY_BOOL:
                        r = sd_bus_message_append(m, "(sv)", x->name, "b", (int) !!x->u);
                        break;
                case CM_PROPERTY_U64:
                        r = sd_bus_message_append(m, "(sv)", x->name, "t", x->u);
                        break;
                case CM_PROPERTY_UNITS:
                        r = sd_bus_message_append(m, "(sv)", x->name, "as", 1, x->s);
                        break;
                case CM_PROPERTY_DEVICE_ALLOW:
                        r = sd_bus_message_append(m, "(sv)", x->name, "a(ss)", 0);
                        break;
                }
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

static int op_new(struct cm_sd *sd, const char *unit, bool stop, cm_sd_done_fn done, void (*destroy)(void *),
                  void *userdata, struct sd_op **ret) {
        struct sd_op *op;

        if (sd->n_ops >= SD_OPS_MAX)
                return -EBUSY;
        if (!sd->bus) {
                /* the connection was lost: a new one (the socket connect does not wait) */
                int r = connect_bus(sd);
                if (r < 0) {
                        sd->bus = sd_bus_close_unref(sd->bus);
                        return r;
                }
        }
        op = calloc(1, sizeof(*op));
        if (!op)
                return -ENOMEM;
        op->unit = strdup(unit);
        op->timer = evtimer_new(sd->base, on_job_timeout, op);
        if (!op->unit || !op->timer) {
                op_free(op);
                return -ENOMEM;
        }
        op->stop = stop;
        op->done = done;
        op->destroy = destroy;
        op->userdata = userdata;
        op->sd = sd;
        DLIST_PREPEND(sd->ops, op);
        sd->n_ops++;
        *ret = op;
        return 0;
}

static int send_start(struct cm_sd *sd, struct sd_op *op, const struct cm_slice_properties *p) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(sd->bus, &m, SD_DEST, SD_PATH, SD_MANAGER, "StartTransientUnit");
        if (r >= 0)
                r = sd_bus_message_append(m, "ss", op->unit, "replace");
        if (r >= 0)
                r = append_properties(m, p);
        if (r >= 0)
                r = sd_bus_message_append(m, "a(sa(sv))", 0); /* no auxiliary units */
        if (r >= 0)
                r = sd_bus_call_async(sd->bus, &op->slot, m, on_reply, op, SD_CALL_TIMEOUT_USEC);
        return r;
}

int cm_sd_start_slice(struct cm_sd *sd, const char *unit, const struct cm_slice_properties *p, cm_sd_done_fn done,
                      void (*destroy)(void *userdata), void *userdata) {
        struct sd_op *op;
        int r;

        assert(done);
        r = op_new(sd, unit, false, done, destroy, userdata, &op);
        if (r < 0)
                return r;
        r = send_start(sd, op, p);
        if (r < 0) {
                op_free(op);
                return r;
        }
        rearm(sd);
        return 0;
}

int cm_sd_set_properties(struct cm_sd *sd, const char *unit, const struct cm_slice_properties *p, cm_sd_done_fn done,
                         void (*destroy)(void *userdata), void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        struct sd_op *op;
        int r;

        assert(done);
        r = op_new(sd, unit, false, done, destroy, userdata, &op);
        if (r < 0)
                return r;
        op->no_job = true;
        r = sd_bus_message_new_method_call(sd->bus, &m, SD_DEST, SD_PATH, SD_MANAGER, "SetUnitProperties");
        if (r >= 0)
                r = sd_bus_message_append(m, "sb", unit, 1); /* runtime: gone at the next boot, as the slices */
        if (r >= 0)
                r = append_properties(m, p);
        if (r >= 0)
                r = sd_bus_call_async(sd->bus, &op->slot, m, on_reply, op, SD_CALL_TIMEOUT_USEC);
        if (r < 0) {
                op_free(op);
                return r;
        }
        rearm(sd);
        return 0;
}

int cm_sd_stop_unit(struct cm_sd *sd, const char *unit, cm_sd_done_fn done, void (*destroy)(void *userdata),
                    void *userdata) {
        struct sd_op *op;
        int r;

        assert(done);
        r = op_new(sd, unit, true, done, destroy, userdata, &op);
        if (r < 0)
                return r;
        r = sd_bus_call_method_async(sd->bus, &op->slot, SD_DEST, SD_PATH, SD_MANAGER, "StopUnit", on_reply, op, "ss",
                                     unit, "replace");
        if (r < 0) {
                op_free(op);
                return r;
        }
        rearm(sd);
        return 0;
}

int cm_sd_start_slice_sync(struct cm_sd *sd, const char *unit, const struct cm_slice_properties *p,
                           struct ck_error **ret_error) {
        struct sd_op *op;
        uint64_t deadline = now_usec() + SD_CALL_TIMEOUT_USEC, job_deadline = 0;
        int r;

        r = op_new(sd, unit, false, NULL, NULL, NULL, &op);
        if (r < 0)
                return r;
        r = send_start(sd, op, p);
        /* the loop does not run yet: the bus is driven here until the job ends, or a second after its reply */
        while (r >= 0 && !op->finished) {
                uint64_t now = now_usec(), until;
                if (op->job && !job_deadline)
                        job_deadline = now + SD_JOB_WAIT_USEC;
                until = job_deadline ? job_deadline : deadline;
                if (now >= until) {
                        if (job_deadline)
                                log_warning("Timed out while waiting for StartTransientUnit(%s) completion signal "
                                            "from dbus. Continuing...",
                                            unit);
                        else
                                r = -ETIMEDOUT;
                        break;
                }
                r = sd_bus_process(sd->bus, NULL);
                if (r > 0)
                        continue;
                if (r == 0)
                        r = sd_bus_wait(sd->bus, until - now);
        }
        if (r >= 0 && op->finished) {
                r = op->r;
                if (r < 0)
                        (void) ck_error_set(ret_error, r, "%s", op->message ? op->message : strerror(-r));
        } else if (r > 0)
                r = 0;
        else if (r < 0)
                (void) ck_error_set(ret_error, r, "%s", strerror(-r));
        op_free(op);
        rearm(sd);
        return r < 0 ? r : 0;
}
