/* SPDX-License-Identifier: Apache-2.0 */
/* ckubelet-probe-bench: ckubelet's probe engine alone (src/prober: the manager, its timers and the HTTP and
 * TCP handlers), on its own event loop, without the rest of the kubelet, against real endpoints.
 *
 *   ckubelet-probe-bench [--seconds S] [--warmup W] [--period P] [--port 8080] [--path /index.html]
 *                        [--kind both|http|tcp] IP...
 *
 * Every IP is a pod with one container ("web", port "http" = --port) with an HTTP readiness probe (GET --path
 * on the named port) and a TCP liveness probe on the same port (--kind: only one of them), both every P
 * seconds: the work of
 * bench/probes.py and bench/compare.py's probe scenario. After W seconds it measures S seconds: the probes run,
 * the process's CPU time per probe (getrusage: user and system), and how late the probes started against their
 * schedule (the prober's own lateness histogram). Under callgrind (valgrind's callgrind.h at build time) the
 * window is a callgrind dump of its own ("window"), so its instruction count excludes the set-up. */
#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "apis/manifest.h"
#include "basic/error.h"
#include "basic/histogram.h"
#include "basic/macro.h"
#include "basic/time.h"
#include "container/container.h"
#include "prober/manager.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HAVE_CALLGRIND 1
#endif
#endif
#ifndef HAVE_CALLGRIND
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(x)
#define RUNNING_ON_VALGRIND 0
#endif

static const char manifest[] = "apiVersion: v1\n"
                               "kind: Pod\n"
                               "metadata:\n"
                               "  name: p%zu\n"
                               "  namespace: default\n"
                               "spec:\n"
                               "  containers:\n"
                               "  - name: web\n"
                               "    image: busybox:1.36\n"
                               "    ports:\n"
                               "    - name: http\n"
                               "      containerPort: %d\n"
                               "%s%s";
static const char http_probe[] = "    readinessProbe:\n"
                                 "      httpGet:\n"
                                 "        path: %s\n"
                                 "        port: http\n"
                                 "      periodSeconds: %d\n";
static const char tcp_probe[] = "    livenessProbe:\n"
                                "      tcpSocket:\n"
                                "        port: %d\n"
                                "      periodSeconds: %d\n";

struct bench {
        struct event_base *base;
        struct prober *prober;
        struct event *phase;
        int stage; /* 0 warm-up, 1 measuring */
        uint64_t seconds;
        uint64_t probes0, cpu_user0, cpu_sys0, wall0, vcsw0, ivcsw0;
        struct histogram late0;
        uint64_t results[3];
        uint64_t changed;
};

static void switches(uint64_t *ret_voluntary, uint64_t *ret_involuntary) {
        struct rusage ru;

        getrusage(RUSAGE_SELF, &ru);
        *ret_voluntary = (uint64_t) ru.ru_nvcsw;
        *ret_involuntary = (uint64_t) ru.ru_nivcsw;
}

static uint64_t cpu_usec(bool sys) {
        struct rusage ru;
        const struct timeval *tv;

        getrusage(RUSAGE_SELF, &ru);
        tv = sys ? &ru.ru_stime : &ru.ru_utime;
        return (uint64_t) tv->tv_sec * USEC_PER_SEC + (uint64_t) tv->tv_usec;
}

static void count(const struct prober_count *c, void *ud) {
        uint64_t *total = ud;
        total[c->result] += c->count;
}

static uint64_t probes_run(struct bench *b, uint64_t *by_result) {
        uint64_t t[3] = {};
        probe_manager_foreach_count(b->prober, count, t);
        if (by_result)
                memcpy(by_result, t, sizeof(t));
        return t[0] + t[1] + t[2];
}

static void on_changed(void *userdata, const char *pod_uid, const char *container_name, enum probe_type type,
                       enum probe_result result) {
        struct bench *b = userdata;
        b->changed++;
}

/* the p-quantile of the observations in (a - b), from the buckets (the bucket's upper bound) */
static double quantile(const struct histogram *a, const struct histogram *b, double p) {
        uint64_t n = a->count - b->count, seen = 0;

        if (n == 0)
                return 0;
        for (size_t i = 0; i < a->n_buckets; i++) {
                seen += a->counts[i] - b->counts[i];
                if ((double) seen >= p * (double) n)
                        return a->bounds[i];
        }
        return INFINITY;
}

static void on_phase(evutil_socket_t fd, short what, void *userdata) {
        struct bench *b = userdata;
        const struct histogram *late = probe_manager_lateness(b->prober);

        if (b->stage == 0) {
                CALLGRIND_ZERO_STATS;
                b->stage = 1;
                b->probes0 = probes_run(b, NULL);
                b->cpu_user0 = cpu_usec(false);
                b->cpu_sys0 = cpu_usec(true);
                b->wall0 = now_usec();
                switches(&b->vcsw0, &b->ivcsw0);
                b->late0 = *late;
                struct timeval tv = { .tv_sec = (time_t) b->seconds };
                evtimer_add(b->phase, &tv);
                return;
        }
        CALLGRIND_DUMP_STATS_AT("window");
        {
                uint64_t by[3];
                uint64_t n = probes_run(b, by) - b->probes0;
                uint64_t user = cpu_usec(false) - b->cpu_user0, sys = cpu_usec(true) - b->cpu_sys0;
                double secs = (double) (now_usec() - b->wall0) / 1e6;

                printf("probes run: %" PRIu64 " in %.1f s (%.1f/s); %" PRIu64 " successful, %" PRIu64
                       " failed (since start)\n",
                       n, secs, (double) n / secs, by[PROBE_RESULT_SUCCESS], by[PROBE_RESULT_FAILURE]);
                printf("CPU per probe: %.1f µs (user %.1f, sys %.1f)%s\n", n ? (double) (user + sys) / (double) n : 0,
                       n ? (double) user / (double) n : 0, n ? (double) sys / (double) n : 0,
                       RUNNING_ON_VALGRIND ? " [under valgrind: not a CPU figure]" : "");
                printf("lateness (timer start vs schedule): %" PRIu64 " starts, p50 <= %.4f s, p99 <= %.4f s, "
                       "max %.4f s (since start), mean %.6f s\n",
                       late->count - b->late0.count, quantile(late, &b->late0, 0.5), quantile(late, &b->late0, 0.99),
                       probe_manager_lateness_max(b->prober),
                       late->count > b->late0.count
                               ? (late->sum - b->late0.sum) / (double) (late->count - b->late0.count)
                               : 0);
                {
                        uint64_t v, iv;
                        switches(&v, &iv);
                        printf("wake-ups (voluntary context switches) per probe: %.2f; preempted (involuntary) per "
                               "probe: %.2f\n",
                               n ? (double) (v - b->vcsw0) / (double) n : 0,
                               n ? (double) (iv - b->ivcsw0) / (double) n : 0);
                }
                printf("published changes: %" PRIu64 "\n", b->changed);
                fflush(stdout);
        }
        event_base_loopbreak(b->base);
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "seconds", required_argument, NULL, 's' }, { "warmup", required_argument, NULL, 'w' },
                { "period", required_argument, NULL, 'P' },  { "port", required_argument, NULL, 'p' },
                { "path", required_argument, NULL, 'u' },    { "kind", required_argument, NULL, 'k' },
                { "help", no_argument, NULL, 'h' },          {},
        };
        static const struct prober_callbacks cb = { .changed = on_changed };
        struct bench b = { .seconds = 20 };
        const char *path = "/index.html", *kind = "both";
        int port = 8080, period = 1, warmup = 3, c, r;
        struct pod **pods;
        struct kc_pod_status **status;
        size_t n;

        while ((c = getopt_long(argc, argv, "s:w:P:p:u:k:h", options, NULL)) >= 0)
                switch (c) {
                case 'k':
                        kind = optarg;
                        break;
                case 's':
                        b.seconds = strtoull(optarg, NULL, 10);
                        break;
                case 'w':
                        warmup = atoi(optarg);
                        break;
                case 'P':
                        period = atoi(optarg);
                        break;
                case 'p':
                        port = atoi(optarg);
                        break;
                case 'u':
                        path = optarg;
                        break;
                default:
                        fprintf(stderr,
                                "usage: %s [--seconds S] [--warmup W] [--period P] [--port N] [--path P] "
                                "[--kind both|http|tcp] IP...\n",
                                argv[0]);
                        return c == 'h' ? 0 : 2;
                }
        n = (size_t) (argc - optind);
        if (!streq(kind, "both") && !streq(kind, "http") && !streq(kind, "tcp")) {
                fprintf(stderr, "--kind: both, http or tcp\n");
                return 2;
        }
        if (n == 0 || period < 1 || b.seconds == 0) {
                fprintf(stderr, "no pod IPs given\n");
                return 2;
        }
        b.base = event_base_new();
        pods = calloc(n, sizeof(*pods));
        status = calloc(n, sizeof(*status));
        if (!b.base || !pods || !status)
                return 1;
        r = probe_manager_new(b.base, NULL, 120 * USEC_PER_SEC, &cb, &b, &b.prober);
        if (r < 0)
                return 1;
        for (size_t i = 0; i < n; i++) {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                _cleanup_free_ char *text = NULL, *http = NULL, *tcp = NULL;
                struct pod_set set = {};
                struct kc_container *ctr = calloc(1, sizeof(*ctr));
                char id[64];

                if (!ctr || asprintf(&http, http_probe, path, period) < 0 ||
                    asprintf(&tcp, tcp_probe, port, period) < 0 ||
                    asprintf(&text, manifest, i, port, streq(kind, "tcp") ? "" : http, streq(kind, "http") ? "" : tcp) <
                            0)
                        return 1;
                r = manifest_parse(text, strlen(text), &set, &err);
                if (r < 0 || set.n != 1) {
                        fprintf(stderr, "manifest: %s\n", err ? ck_error_message(err) : "not one pod");
                        return 1;
                }
                pods[i] = pod_ref(set.pods[0]);
                pod_set_done(&set);
                snprintf(id, sizeof(id), "00000000-0000-0000-0000-%012zu", i);
                free(pods[i]->uid);
                pods[i]->uid = strdup(id);
                snprintf(id, sizeof(id), "c%zu", i);
                *ctr = (struct kc_container) { .id = strdup(id),
                                               .name = strdup("web"),
                                               .state = KC_CONTAINER_RUNNING,
                                               .have_status = true,
                                               .started_at = now_realtime_nsec() - 10 * (int64_t) NSEC_PER_SEC };
                if (!pods[i]->uid || !ctr->id || !ctr->name || kc_pod_status_new(pods[i]->uid, &status[i]) < 0 ||
                    kc_pod_status_add_container(status[i], ctr) < 0)
                        return 1;
                r = probe_manager_update_pod(b.prober, pods[i], argv[optind + i], status[i]);
                if (r < 0) {
                        fprintf(stderr, "probe_manager_update_pod: %s\n", strerror(-r));
                        return 1;
                }
        }
        printf("%zu pods × (%s) on port %d every %d s: %zu probes/s nominal; warm-up %d s, window %" PRIu64 " s\n", n,
               streq(kind, "both")   ? "HTTP readiness + TCP liveness"
               : streq(kind, "http") ? "HTTP readiness"
                                     : "TCP liveness",
               port, period, (streq(kind, "both") ? 2 : 1) * n / (size_t) period, warmup, b.seconds);
        fflush(stdout);
        b.phase = evtimer_new(b.base, on_phase, &b);
        if (!b.phase)
                return 1;
        {
                struct timeval tv = { .tv_sec = warmup };
                evtimer_add(b.phase, &tv);
        }
        event_base_dispatch(b.base);

        event_free(b.phase);
        probe_manager_free(b.prober);
        for (size_t i = 0; i < n; i++) {
                kc_pod_status_free(status[i]);
                pod_free(pods[i]);
        }
        free(pods);
        free(status);
        event_base_free(b.base);
        return 0;
}
