/* SPDX-License-Identifier: Apache-2.0 */
/* exec probe (pkg/probe/exec): CRI ExecSync with the probe's timeout; exit code 0 is success, anything else
 * a failure whose output (stdout then stderr, capped at 10 KiB) is kept for the message. A runtime timeout
 * (DeadlineExceeded) is a failure "command ... timed out", as with upstream's ExecProbeTimeout. */
#include <assert.h>
#include <string.h>

#include "basic/strv.h"
#include "basic/time.h"
#include "prober/handlers.h"

struct exec_op {
        struct probe_op op;
        char *command; /* joined, for messages */
};

static void exec_cancel(struct probe_op *op) {
        op->done = NULL; /* freed when the runtime answers */
}

/* also the drop of env->exec_calls: the environment goes while the runtime still runs the command */
static void exec_op_free(void *userdata) {
        struct exec_op *e = userdata;
        free(e->command);
        free(e);
}

static void on_exec_reply(const struct cri_reply *reply, void *userdata) {
        struct exec_op *e = userdata;

        if (reply->r < 0) {
                if (reply->grpc_status == GRPC_DEADLINE_EXCEEDED) {
                        _cleanup_free_ char *msg = NULL;
                        if (asprintf(&msg, "command \"%s\" timed out", e->command) < 0)
                                msg = NULL;
                        probe_op_report(&e->op, PROBE_RESULT_FAILURE, false, msg ? msg : "command timed out", 0);
                } else
                        probe_op_report(&e->op, PROBE_RESULT_UNKNOWN, false, reply->message, reply->r);
        } else {
                const Runtime__V1__ExecSyncResponse *resp = (const void *) reply->msg;
                size_t n1 = MIN(resp->stdout.len, (size_t) PROBE_MAX_OUTPUT);
                size_t n2 = MIN(resp->stderr.len, (size_t) PROBE_MAX_OUTPUT - n1);
                _cleanup_free_ char *out = malloc(n1 + n2 + 1);

                if (out) {
                        if (n1)
                                memcpy(out, resp->stdout.data, n1);
                        if (n2)
                                memcpy(out + n1, resp->stderr.data, n2);
                        out[n1 + n2] = '\0';
                }
                probe_op_report(&e->op, resp->exit_code == 0 ? PROBE_RESULT_SUCCESS : PROBE_RESULT_FAILURE, false,
                                out ? out : "", 0);
        }
        exec_op_free(e);
}

int probe_exec_start(struct probe_env *env, const struct probe_request *req, probe_done_t done, void *userdata,
                     struct probe_op **ret) {
        Runtime__V1__ExecSyncRequest r = RUNTIME__V1__EXEC_SYNC_REQUEST__INIT;
        uint64_t timeout_sec = MAX(req->timeout_usec / USEC_PER_SEC, (uint64_t) 1);
        struct exec_op *e;
        int k;

        if (!req->container_id || !req->spec->exec_command)
                return -EINVAL;
        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->op = (struct probe_op) { .cancel = exec_cancel, .done = done, .userdata = userdata };
        e->command = strv_join(req->spec->exec_command, " ");
        if (!e->command) {
                free(e);
                return -ENOMEM;
        }
        r.container_id = (char *) req->container_id;
        r.n_cmd = strv_length(req->spec->exec_command);
        r.cmd = req->spec->exec_command;
        r.timeout = (int64_t) timeout_sec;
        /* as upstream: the call's deadline leaves the runtime its request timeout to clean up */
        assert(!env->exec_calls.drop ||
               env->exec_calls.drop == exec_op_free); /* the hooks have an environment of their own */
        env->exec_calls.drop = exec_op_free;
        k = cri_exec_sync(env->cri, &r, timeout_sec * USEC_PER_SEC + env->request_timeout_usec, on_exec_reply, e,
                          &env->exec_calls);
        if (k < 0) {
                exec_op_free(e);
                return k;
        }
        *ret = &e->op;
        return 0;
}
