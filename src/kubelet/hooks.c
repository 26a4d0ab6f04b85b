/* SPDX-License-Identifier: Apache-2.0 */
/* Container lifecycle hooks: see hooks.h. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "basic/error.h"
#include "basic/list.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "kubelet/hooks.h"

struct hook_run {
        struct hook_run *prev, *next; /* in the owner's list */
        struct hook_run **list;       /* its head */
        struct probe_env *env;
        const struct lifecycle_handler *h;
        struct hook_target t;
        hook_done_t done;
        void *userdata;
        struct probe_op *op; /* httpGet in flight */
        struct event *timer; /* sleep, or the immediate failure of tcpSocket */
        struct event *deadline;
        struct hook_exec *exec;       /* exec in flight */
        struct ck_error *early_error; /* a failure known at start (no pod IP, unknown port), reported by timer */
};

/* An ExecSync in flight: outlives its run when the run ends first (freed by the reply). */
struct hook_exec {
        struct hook_run *run; /* NULL once abandoned */
};

/* Go's %q of the command's output (printable ASCII kept, the rest escaped; UTF-8 sequences escaped bytewise) */
static char *quote(const char *s) {
        size_t n = strlen(s);
        char *q = malloc(4 * n + 3), *p = q;

        if (!q)
                return NULL;
        *p++ = '"';
        for (; *s; s++) {
                unsigned char ch = (unsigned char) *s;
                if (ch == '"' || ch == '\\') {
                        *p++ = '\\';
                        *p++ = (char) ch;
                } else if (ch == '\n') {
                        *p++ = '\\';
                        *p++ = 'n';
                } else if (ch == '\t') {
                        *p++ = '\\';
                        *p++ = 't';
                } else if (ch == '\r') {
                        *p++ = '\\';
                        *p++ = 'r';
                } else if (ch < 0x20 || ch >= 0x7f)
                        p += sprintf(p, "\\x%02x", ch);
                else
                        *p++ = (char) ch;
        }
        *p++ = '"';
        *p = '\0';
        return q;
}

/* Go's %v of a []string: "[a b c]" */
static char *format_command(char **argv) {
        _cleanup_free_ char *j = strv_join(argv, " ");
        char *s;
        if (!j || asprintf(&s, "[%s]", j) < 0)
                return NULL;
        return s;
}

char *kubelet_hook_failure_message(const struct lifecycle_handler *h, const struct hook_target *t, const char *error,
                                   const char *output) {
        _cleanup_free_ char *cmd = NULL, *out = NULL;
        char *m = NULL;
        int k = -1;

        switch (h->type) {
        case LIFECYCLE_HANDLER_EXEC:
                cmd = format_command(h->action.exec_command);
                out = quote(strempty(output));
                if (cmd && out)
                        k = asprintf(&m,
                                     "Exec lifecycle hook (%s) for Container \"%s\" in Pod \"%s\" failed - error: %s, "
                                     "message: %s",
                                     cmd, t->container_name, t->pod_desc, error, out);
                break;
        case LIFECYCLE_HANDLER_HTTP_GET:
                k = asprintf(&m, "HTTP lifecycle hook (%s) for Container \"%s\" in Pod \"%s\" failed - error: %s",
                             strempty(h->action.path), t->container_name, t->pod_desc, error);
                break;
        case LIFECYCLE_HANDLER_SLEEP:
                k = asprintf(&m,
                             "Sleep lifecycle hook (%" PRId64 ") for Container \"%s\" in Pod \"%s\" failed - error: %s",
                             h->sleep_seconds, t->container_name, t->pod_desc, error);
                break;
        default:
                k = asprintf(&m, "Cannot run handler: %s", error);
                break;
        }
        return k < 0 ? NULL : m;
}

static void run_free(struct hook_run *r) {
        if (r->list)
                DLIST_REMOVE(*r->list, r);
        if (r->op)
                probe_op_cancel(r->op);
        if (r->exec)
                r->exec->run = NULL; /* the reply frees it */
        if (r->timer)
                event_free(r->timer);
        if (r->deadline)
                event_free(r->deadline);
        ck_error_free(r->early_error);
        free(r);
}

/* End the run: the callback, then the run is gone. */
static void run_finish(struct hook_run *r, int error, const char *error_text, const char *output) {
        _cleanup_free_ char *msg = NULL;
        hook_done_t done = r->done;
        void *ud = r->userdata;

        if (error < 0 && error != -ECANCELED) {
                msg = kubelet_hook_failure_message(r->h, &r->t, error_text ? error_text : strerror(-error), output);
                if (!msg)
                        error = -ENOMEM;
        }
        run_free(r);
        done(ud, error, msg);
}

static void on_deadline(evutil_socket_t fd, short what, void *userdata) {
        struct hook_run *r = userdata;
        (void) fd;
        (void) what;
        run_finish(r, -ETIME, "context deadline exceeded", NULL);
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        struct hook_run *r = userdata;
        (void) fd;
        (void) what;
        if (r->early_error) {
                _cleanup_ck_error_ struct ck_error *e = TAKE_PTR(r->early_error);
                run_finish(r, -EINVAL, ck_error_message(e), NULL);
        } else if (r->h->type == LIFECYCLE_HANDLER_SLEEP)
                run_finish(r, 0, NULL, NULL);
        else
                run_finish(r, -EOPNOTSUPP, "invalid handler: tcpSocket is not supported as a lifecycle handler", NULL);
}

static void on_exec_reply(const struct cri_reply *reply, void *userdata) {
        struct hook_exec *e = userdata;
        struct hook_run *r = e->run;
        const Runtime__V1__ExecSyncResponse *resp = (const void *) reply->msg;
        _cleanup_free_ char *cmd = NULL, *err = NULL, *out = NULL;

        free(e);
        if (!r)
                return;
        r->exec = NULL;
        if (reply->r < 0) {
                run_finish(r, reply->r, reply->message, NULL);
                return;
        }
        /* RunInContainer: stdout then stderr; a nonzero exit is utilexec.CodeExitError */
        size_t n1 = MIN(resp->stdout.len, (size_t) PROBE_MAX_OUTPUT);
        size_t n2 = MIN(resp->stderr.len, (size_t) PROBE_MAX_OUTPUT - n1);
        out = malloc(n1 + n2 + 1);
        if (!out) {
                run_finish(r, -ENOMEM, NULL, NULL);
                return;
        }
        if (n1)
                memcpy(out, resp->stdout.data, n1);
        if (n2)
                memcpy(out + n1, resp->stderr.data, n2);
        out[n1 + n2] = '\0';
        if (resp->exit_code == 0) {
                run_finish(r, 0, NULL, NULL);
                return;
        }
        cmd = strv_join(r->h->action.exec_command, " ");
        if (!cmd ||
            asprintf(&err, "command '%s' exited with %d: %.*s", cmd, resp->exit_code,
                     (int) MIN(resp->stderr.len, (size_t) PROBE_MAX_OUTPUT), (const char *) resp->stderr.data) < 0) {
                err = NULL;
                run_finish(r, -ENOMEM, NULL, NULL);
                return;
        }
        run_finish(r, -EIO, err, out);
}

static void on_http_done(void *userdata, enum probe_result result, bool warning, const char *output, int error) {
        struct hook_run *r = userdata;
        (void) warning;

        r->op = NULL; /* the probe operation is done: not to be cancelled */
        /* any HTTP status is a success for a hook (upstream only discards the body): a failure the probe
         * reports for a status code is one */
        if (error < 0)
                run_finish(r, error, output, NULL);
        else if (result == PROBE_RESULT_SUCCESS || startswith(strempty(output), "HTTP probe failed with statuscode"))
                run_finish(r, 0, NULL, NULL);
        else
                run_finish(r, -EIO, output, NULL);
}

/* resolvePort: a number, or the named port of the container */
static int resolve_port(const struct hook_run *r, int *ret, struct ck_error **ret_error) {
        const struct int_or_string *p = &r->h->action.port;

        if (!p->is_string) {
                *ret = p->int_val;
                return 0;
        }
        for (size_t i = 0; r->t.spec && i < r->t.spec->n_ports; i++)
                if (streq_ptr(r->t.spec->ports[i].name, p->str_val)) {
                        *ret = r->t.spec->ports[i].container_port;
                        return 0;
                }
        if (!r->t.spec && r->t.ports_json) {
                json_auto_t *a = json_loads(r->t.ports_json, JSON_REJECT_DUPLICATES, NULL);
                json_t *o;
                size_t i;
                int found = 0;
                json_array_foreach(a, i, o)
                        if (!found && streq_ptr(json_string_value(json_object_get(o, "name")), p->str_val) &&
                            json_is_integer(json_object_get(o, "containerPort"))) {
                                *ret = (int) json_integer_value(json_object_get(o, "containerPort"));
                                found = 1;
                        }
                if (found)
                        return 0;
        }
        return ck_error_set(ret_error, -ENOENT, "couldn't find port: %s in container %s", strempty(p->str_val),
                            r->t.container_name);
}

static int start_http(struct hook_run *r, uint64_t timeout_usec, struct ck_error **ret_error) {
        const char *host = isempty(r->h->action.host) ? r->t.pod_ip : r->h->action.host;
        struct probe_request req = {
                .spec = &r->h->action,
                .host = host,
                .timeout_usec = timeout_usec,
        };
        int k;

        if (isempty(host))
                return ck_error_set(ret_error, -EADDRNOTAVAIL, "failed to find networking container: no pod IP");
        k = resolve_port(r, &req.port, ret_error);
        if (k < 0)
                return k;
        if (req.port < 1 || req.port > 65535)
                return ck_error_set(ret_error, -EINVAL, "invalid port %d", req.port);
        return probe_http_start(r->env, &req, on_http_done, r, &r->op);
}

/* the environment goes while the runtime still runs an abandoned command (the runs are gone by then) */
static void hook_exec_drop(void *userdata) {
        struct hook_exec *e = userdata;
        assert(!e->run);
        free(e);
}

/* RunInContainer with no timeout, as upstream's handler runs it: the runtime does not kill the command when the
 * hook's deadline passes. A preStop command still running then goes on, abandoned, until StopContainer ends its
 * container (upstream's preStop that loops for ever lives the grace period plus the 2 s minimum of the stop). The
 * call itself is cancelled, and the command with it, only well after that: its deadline is the hook's plus the
 * stop's minimum grace period and the request timeout. */
static int start_exec(struct hook_run *r, uint64_t timeout_usec) {
        Runtime__V1__ExecSyncRequest req = RUNTIME__V1__EXEC_SYNC_REQUEST__INIT;
        struct hook_exec *e = calloc(1, sizeof(*e));
        int k;

        if (!e)
                return -ENOMEM;
        e->run = r;
        req.container_id = (char *) r->t.container_id;
        req.n_cmd = strv_length(r->h->action.exec_command);
        req.cmd = r->h->action.exec_command;
        req.timeout = 0;
        assert(!r->env->exec_calls.drop || r->env->exec_calls.drop == hook_exec_drop); /* not the probes' one */
        r->env->exec_calls.drop = hook_exec_drop;
        k = cri_exec_sync(r->env->cri, &req,
                          timeout_usec + MINIMUM_GRACE_PERIOD_SECONDS * USEC_PER_SEC + r->env->request_timeout_usec,
                          on_exec_reply, e, &r->env->exec_calls);
        if (k < 0) {
                free(e);
                return k;
        }
        r->exec = e;
        return 0;
}

int kubelet_hook_run_start(struct probe_env *env, struct hook_run **list, const struct lifecycle_handler *h,
                           const struct hook_target *t, uint64_t timeout_usec, hook_done_t done, void *userdata) {
        struct hook_run *r;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        int k = 0;

        if (!h || !t || !t->container_id || !done)
                return -EINVAL;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        *r = (struct hook_run) { .env = env, .h = h, .t = *t, .done = done, .userdata = userdata };
        r->deadline = evtimer_new(env->base, on_deadline, r);
        if (!r->deadline || evtimer_add_usec(r->deadline, timeout_usec) < 0) {
                run_free(r);
                return -ENOMEM;
        }
        switch (h->type) {
        case LIFECYCLE_HANDLER_EXEC:
                k = start_exec(r, timeout_usec);
                break;
        case LIFECYCLE_HANDLER_HTTP_GET:
                k = start_http(r, timeout_usec, &err);
                break;
        case LIFECYCLE_HANDLER_SLEEP:
        case LIFECYCLE_HANDLER_TCP_SOCKET: {
                /* capped at 31 years, so that the product cannot overflow */
                uint64_t usec = h->type == LIFECYCLE_HANDLER_SLEEP
                                        ? (uint64_t) MIN(MAX(h->sleep_seconds, (int64_t) 0), (int64_t) 1000000000) *
                                                  USEC_PER_SEC
                                        : 0;
                r->timer = evtimer_new(env->base, on_timer, r);
                if (!r->timer || evtimer_add_usec(r->timer, usec) < 0)
                        k = -ENOMEM;
                break;
        }
        default:
                k = -EINVAL;
                break;
        }
        if (k < 0 && err) {
                /* a failure known at once: reported from the loop like any other */
                r->early_error = TAKE_PTR(err);
                r->timer = evtimer_new(env->base, on_timer, r);
                k = r->timer && evtimer_add_usec(r->timer, 0) >= 0 ? 0 : -ENOMEM;
        }
        if (k < 0) {
                run_free(r);
                return k;
        }
        DLIST_PREPEND(*list, r);
        r->list = list;
        return 0;
}

void kubelet_hook_run_cancel_all(struct hook_run **list) {
        while (*list)
                run_finish(*list, -ECANCELED, NULL, NULL);
}
