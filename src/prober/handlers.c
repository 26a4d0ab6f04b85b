/* SPDX-License-Identifier: Apache-2.0 */
#include <event2/dns.h>
#include <openssl/ssl.h>

#include "prober/handlers.h"

void probe_op_report(struct probe_op *op, enum probe_result result, bool warning, const char *output, int error) {
        probe_done_t done = op->done;

        op->done = NULL;
        if (done)
                done(op->userdata, result, warning, output, error);
}

void probe_op_cancel(struct probe_op *op) {
        if (op)
                op->cancel(op);
}

static void reap(evutil_socket_t fd, short what, void *userdata) {
        struct probe_env *env = userdata;
        while (env->dead) {
                struct probe_op *op = env->dead;
                env->dead = op->next_dead;
                op->free(op);
        }
}

void probe_env_bury(struct probe_env *env, struct probe_op *op) {
        op->next_dead = env->dead;
        env->dead = op;
        if (!env->reaper)
                env->reaper = event_new(env->base, -1, 0, reap, env);
        if (env->reaper)
                event_active(env->reaper, EV_TIMEOUT, 0);
}

void probe_env_done(struct probe_env *env) {
        cri_calls_cancel(&env->exec_calls);
        reap(-1, 0, env);
        if (env->reaper) {
                event_free(env->reaper);
                env->reaper = NULL;
        }
        if (env->ssl_ctx) {
                SSL_CTX_free(env->ssl_ctx);
                env->ssl_ctx = NULL;
        }
        if (env->dns) {
                evdns_base_free(env->dns, 1 /* fail pending requests */);
                env->dns = NULL;
        }
}
