/* SPDX-License-Identifier: Apache-2.0 */
/* ckubelet: a Kubernetes node agent. Parses flags and the config file, then runs the kubelet on one
 * libevent loop until SIGTERM/SIGINT. Pods are left running on exit, as upstream. */

#include <event2/event.h>
#include <signal.h>
#include <string.h>

#include "basic/log.h"
#include "kubelet/kubelet.h"
#include "options/options.h"

static void on_signal(evutil_socket_t sig, short what, void *userdata) {
        struct event_base *base = userdata;
        log_info("received %s, shutting down (pods keep running)", strsignal((int) sig));
        event_base_loopbreak(base);
}

int main(int argc, char **argv) {
        struct kubelet_options opts;
        struct event_base *base = NULL;
        struct event *sigterm = NULL, *sigint = NULL;
        struct kubelet *k = NULL;
        _cleanup_free_ char *err = NULL;
        int r, ret = 1;

        r = kubelet_options_init(&opts);
        if (r < 0) {
                fprintf(stderr, "ckubelet: %s\n", strerror(-r));
                return 1;
        }
        r = kubelet_options_parse(&opts, argc, argv, &err);
        if (r < 0) {
                fprintf(stderr, "ckubelet: %s\n", err ? err : strerror(-r));
                kubelet_options_done(&opts);
                return 1;
        }
        if (r > 0) { /* --help / --version */
                kubelet_options_done(&opts);
                return 0;
        }
        log_set_verbosity(opts.verbosity);
        signal(SIGPIPE, SIG_IGN);

        base = event_base_new();
        if (!base) {
                log_error("cannot create the event loop");
                goto out;
        }
        sigterm = evsignal_new(base, SIGTERM, on_signal, base);
        sigint = evsignal_new(base, SIGINT, on_signal, base);
        if (!sigterm || !sigint || evsignal_add(sigterm, NULL) < 0 || evsignal_add(sigint, NULL) < 0) {
                log_error("cannot set up signal handling");
                goto out;
        }

        log_info("ckubelet %s starting: node=%s runtime=%s", CKUBELET_VERSION, opts.node_name,
                 opts.container_runtime_endpoint);
        r = kubelet_new(base, &opts, &k);
        if (r < 0)
                goto out;
        r = kubelet_start(k);
        if (r < 0) {
                log_error("failed to start: %s", strerror(-r));
                goto out;
        }
        event_base_dispatch(base);
        ret = 0;
out:
        kubelet_free(k);
        if (sigterm)
                event_free(sigterm);
        if (sigint)
                event_free(sigint);
        if (base)
                event_base_free(base);
        kubelet_options_done(&opts);
        return ret;
}
