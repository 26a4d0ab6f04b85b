/* SPDX-License-Identifier: Apache-2.0 */
/* ckubelet: a Kubernetes node agent. Parses flags and the config file, then runs the kubelet and its HTTP API
 * on one libevent loop until SIGTERM/SIGINT. Pods are left running on exit, as upstream. main() is where the
 * two meet: the API server reads the kubelet through the host interface filled here (server.h), so neither
 * includes the other. */

#include <errno.h>
#include <event2/event.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "basic/error.h"
#include "basic/daemon.h"
#include "basic/log.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "kubelet/kubelet.h"
#include "kubelet/runtime_config.h"
#include "options/options.h"
#include "server/server.h"
#include "volumemanager/volumemanager.h"

/* Connections, followed logs, pods' files: the kubelet needs more descriptors than a shell's default soft limit
 * (1024). Raise the soft limit to the hard one, as Go does for every program since 1.19. */
static void raise_open_files_limit(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_warning("cannot raise the open files limit (RLIMIT_NOFILE) to %llu: %s",
                            (unsigned long long) rl.rlim_max, strerror(errno));
}

/* glibc's malloc keeps the pages of freed chunks: it gives memory back to the kernel only from the top of the
 * heap, so the short-lived buffers of pods that came and went (syncs, probes, API replies) leave free pages
 * in the middle of the heap and the resident size creeps up although what is in use does not (bench/soak.py:
 * about 100 kB/min at 2 pods/s, all of it given back by malloc_trim). Hand the free pages back once a minute,
 * as Go's scavenger does for the upstream kubelet (a walk of malloc's free chunks, on a heap of a few MB). */
#define MALLOC_TRIM_PERIOD_SEC 60

static void on_malloc_trim(evutil_socket_t fd, short what, void *userdata) {
        struct event *self = userdata;

        (void) evtimer_add_usec(self, MALLOC_TRIM_PERIOD_SEC * USEC_PER_SEC); /* periodic: the next one */
#ifdef __GLIBC__
        (void) malloc_trim(0);
#endif
}

static void on_signal(evutil_socket_t sig, short what, void *userdata) {
        struct event_base *base = userdata;
        log_info("received %s, shutting down (pods keep running)", strsignal((int) sig));
        (void) daemon_notify("STOPPING=1");
        event_base_loopbreak(base);
}

/* ---- the host interface of the API server, on the kubelet ---- */

static int host_pods_json(void *userdata, json_t **ret) {
        return kubelet_pods_json(userdata, ret);
}

static int host_running_pods_json(void *userdata, json_t **ret) {
        return kubelet_running_pods_json(userdata, ret);
}

static int host_lookup_container(void *userdata, const char *ns, const char *pod_name, const char *container,
                                 bool previous, struct kc_container **ret, char **ret_pod_uid) {
        return kubelet_lookup_container(userdata, ns, pod_name, container, previous, ret, ret_pod_uid);
}

static bool host_pod_exists(void *userdata, const char *ns, const char *pod_name, char **ret_uid) {
        return kubelet_pod_exists(userdata, ns, pod_name, ret_uid);
}

static int host_pod_sandbox_id(void *userdata, const char *ns, const char *pod_name, char **ret) {
        return kubelet_pod_sandbox_id(userdata, ns, pod_name, ret);
}

static int host_sync_loop_health(void *userdata, struct ck_error **ret_error) {
        return kubelet_sync_loop_health(userdata, ret_error);
}

static void host_counts(void *userdata, struct api_host_counts *ret) {
        struct kubelet_counts n;

        kubelet_counts(userdata, &n);
        *ret = (struct api_host_counts) {
                .running_pods = n.running_pods,
                .running_containers = n.running_containers,
                .desired_pods = n.desired_pods,
                .orphaned_runtime_pods = n.orphaned_runtime_pods,
                .pod_start = n.pod_start,
                .pleg_relist_duration = n.pleg_relist_duration,
                .pleg_relist_interval = n.pleg_relist_interval,
                .cm = n.cm,
        };
}

/* the volume manager's measurements as the Summary API and the metrics read them */
static size_t host_volume_stats(void *userdata, const char *pod_uid, const struct stats_volume **ret) {
        return kubelet_volume_stats(userdata, pod_uid, ret);
}

struct host_foreach {
        void (*cb)(const struct api_host_container *c, void *userdata);
        void *userdata;
};

static void host_container(const struct kubelet_container_info *c, void *userdata) {
        const struct host_foreach *f = userdata;
        const struct api_host_container hc = {
                .id = c->id,
                .pod_uid = c->pod_uid,
                .pod_name = c->pod_name,
                .pod_namespace = c->pod_namespace,
                .name = c->name,
                .image = c->image,
                .created_at_nsec = c->created_at_nsec,
                .sandbox = c->sandbox,
        };
        f->cb(&hc, f->userdata);
}

static void host_foreach_container(void *userdata, void (*cb)(const struct api_host_container *c, void *cb_userdata),
                                   void *cb_userdata) {
        struct host_foreach f = { .cb = cb, .userdata = cb_userdata };
        kubelet_foreach_container(userdata, host_container, &f);
}

static struct kube_client *host_kube_client(void *userdata) {
        return kubelet_kube_client(userdata);
}

/* serverTLSBootstrap: the kubelet's serving pair from the certificates API, served to new connections */
static void on_serving_cert(const char *cert_pem, const char *key_pem, void *userdata) {
        (void) api_server_set_serving_cert(userdata, cert_pem, key_pem);
}

static int api_server_start(struct event_base *base, struct kubelet *k, struct api_server **ret,
                            struct ck_error **ret_error) {
        const struct api_server_config cfg = {
                .opts = kubelet_opts(k),
                .cri = kubelet_cri(k),
                .prober = kubelet_prober(k),
                .client = kubelet_kube_client(k),
                .node_ip = kubelet_node_ip(k),
                .machine = kubelet_machine_info(k),
                .pods_cgroup = kubelet_pods_cgroup(k),
                .stats = kubelet_stats(k),
                .host = {
                        .pods_json = host_pods_json,
                        .running_pods_json = host_running_pods_json,
                        .lookup_container = host_lookup_container,
                        .pod_exists = host_pod_exists,
                        .pod_sandbox_id = host_pod_sandbox_id,
                        .sync_loop_health = host_sync_loop_health,
                        .counts = host_counts,
                        .volume_stats = host_volume_stats,
                        .foreach_container = host_foreach_container,
                        .kube_client = host_kube_client,
                        .userdata = k,
                },
        };
        return api_server_new(base, &cfg, ret, ret_error);
}

int main(int argc, char **argv) {
        struct kubelet_options opts;
        struct event_base *base = NULL;
        struct event *sigterm = NULL, *sigint = NULL, *trim = NULL;
        struct kubelet *k = NULL;
        _cleanup_ck_error_ struct ck_error *start_error = NULL;
        struct api_server *server = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        int r, ret = 1;

        r = kubelet_options_init(&opts);
        if (r < 0) {
                fprintf(stderr, "ckubelet: %s\n", strerror(-r));
                return 1;
        }
        r = kubelet_options_parse(&opts, argc, argv, &err);
        if (r < 0) {
                fprintf(stderr, "ckubelet: %s\n", ck_error_message_or(err, r));
                kubelet_options_done(&opts);
                return 1;
        }
        if (r > 0) { /* --help / --version */
                kubelet_options_done(&opts);
                return 0;
        }
        log_set_verbosity(opts.verbosity);
        {
                enum log_format f = LOG_FORMAT_TEXT;
                (void) log_format_from_string(opts.logging_format, &f); /* validated by the parser */
                log_set_format(f);
        }
        signal(SIGPIPE, SIG_IGN);
        raise_open_files_limit();

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
        trim = evtimer_new(base, on_malloc_trim, event_self_cbarg());
        if (!trim || evtimer_add_usec(trim, MALLOC_TRIM_PERIOD_SEC * USEC_PER_SEC) < 0) {
                log_error("cannot set up the periodic malloc trim");
                goto out;
        }

        log_info("ckubelet v%s (Kubernetes %s) starting: node=%s runtime=%s", CKUBELET_VERSION,
                 opts.reported_version ? opts.reported_version : KUBE_VERSION, opts.node_name,
                 opts.container_runtime_endpoint);
        r = kubelet_cgroup_driver_from_cri(base, &opts, &start_error);
        if (r < 0)
                goto start_failed;
        r = kubelet_new(base, &opts, &k);
        if (r < 0)
                goto out;
        r = kubelet_start(k, &start_error);
        if (r < 0)
                goto start_failed;
        if (opts.enable_server) {
                r = api_server_start(base, k, &server, &start_error);
                if (r < 0)
                        goto start_failed;
                kubelet_set_serving_cert_handler(k, on_serving_cert, server);
        }
        event_base_dispatch(base);
        ret = 0;
        goto out;
start_failed:
        log_error("failed to start: %s", ck_error_message_or(start_error, r));
out:
        /* the API first: its streams and calls hold the kubelet's CRI client and containers */
        if (k)
                kubelet_set_serving_cert_handler(k, NULL, NULL);
        api_server_free(server);
        kubelet_free(k);
        if (sigterm)
                event_free(sigterm);
        if (sigint)
                event_free(sigint);
        if (trim)
                event_free(trim);
        if (base)
                event_base_free(base);
        kubelet_options_done(&opts);
        return ret;
}
