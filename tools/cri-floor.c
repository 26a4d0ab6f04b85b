/* SPDX-License-Identifier: Apache-2.0 */
/* ckubelet-cri-floor: the true CRI floor of starting static pods. It takes ckubelet's own flags, reads the
 * manifests of --pod-manifest-path as ckubelet's file source does, builds every request with ckubelet's own
 * builders (src/kuberuntime) and then starts all the pods at once, with ckubelet's concurrency (on one CRI
 * connection, each pod's calls in order, at most --max-parallel-sandbox-creations RunPodSandbox calls in flight
 * as ckubelet, the rest of the calls all together), issuing only what a pod start needs:
 *
 *   RunPodSandbox → PodSandboxStatus (the pod IP: /etc/hosts and the env depend on it) →
 *   per container in spec order: CreateContainer → StartContainer
 *
 * plus the local file work those requests depend on (the container log directory, the pod's etc-hosts). What
 * ckubelet does besides is done once before the clock starts (ImageStatus of each distinct image, the QoS and
 * pod cgroups, the pod log directories, the sandbox configs) or not at all (listing, status, probes).
 *
 *   ckubelet-cri-floor [--json] [--parallel K | --parallel-sandboxes K] -- CKUBELET-FLAGS...
 *
 * --parallel-sandboxes K instead keeps at most K RunPodSandbox calls in flight (0: all at once), and --parallel K
 * at most K pods (a pod ends with its last StartContainer reply, then the next one's RunPodSandbox goes out): how
 * the runtime's throughput depends on the concurrency it is offered.
 * Prints the time from the first request to the last StartContainer reply. With --json, one JSON object:
 * {"pods", "containers", "t0_unix", "last_start_reply_unix", "seconds", "errors"} (unix times in seconds, as
 * reals); the caller compares t0 with the containers' startedAt. Images must be present (no pulls), and pods
 * with init containers are refused: their start waits for exits, which is no CRI floor. */

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/slots.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "cm/cm.h"
#include "config/config.h"
#include "cri/cri.h"
#include "kuberuntime/config.h"
#include "node/node_ip.h"
#include "node/node_status.h"
#include "options/options.h"
#include "stats/machine.h"
#include "volumes/volumes.h"

#define FLOOR_MAX_MANIFESTS 4096 /* as the file source */

struct floor;

struct image {
        struct floor *f;
        char *name;
        char *id;
        bool uid_set;
        int64_t uid;
        char *username;
};

struct pod_run {
        struct floor *f;
        struct pod *pod;
        Runtime__V1__PodSandboxConfig *sandbox_config;
        char *cgroup_parent;
        char *sandbox_id;
        char *pod_ip;
        size_t step;             /* the container being started */
        unsigned calls;          /* this pod's calls in flight */
        struct slot_ticket slot; /* its turn (f->slots): RunPodSandbox, or with --parallel the whole pod */
        bool failed;
};

struct floor {
        struct event_base *base;
        struct cri_client *cri;
        struct kubelet_options opts;
        char *node_ip;
        char **cluster_dns;
        int64_t alloc_cpu_milli, alloc_memory_bytes;
        struct cm *cm;

        struct pod_set pods;
        struct pod_run *runs;
        size_t n_runs;
        struct image *images;
        size_t n_images;

        size_t pending;      /* calls in flight and pods waiting for their turn (image status before t0) */
        size_t parallel;     /* pods (or RunPodSandbox calls) in flight at most; 0: all at once */
        bool gate_sandboxes; /* K counts RunPodSandbox calls in flight (ckubelet's way), not whole pods (--parallel) */
        bool parallel_given; /* --parallel or --parallel-sandboxes; else ckubelet's --max-parallel-sandbox-creations */
        struct slots *slots; /* the turns, kept by ckubelet's own queue (src/basic/slots.c) */
        size_t containers, started;
        unsigned errors;
        int64_t t0_realtime_usec, last_reply_realtime_usec;
};

static void floor_context(const struct pod_run *p, const struct image *img, struct kc_build_context *ret) {
        const struct floor *f = p->f;
        *ret = (struct kc_build_context) {
                .pod_logs_dir = f->opts.pod_logs_dir,
                .root_dir = f->opts.root_dir,
                .node_name = f->opts.node_name,
                .node_ip = f->node_ip,
                .pod_ip = p->pod->spec.host_network ? f->node_ip : p->pod_ip,
                .cgroup_parent = p->cgroup_parent,
                .alloc_cpu_milli = f->alloc_cpu_milli,
                .alloc_memory_bytes = f->alloc_memory_bytes,
                .image_user_known = img != NULL,
                .image_uid_set = img && img->uid_set,
                .image_uid = img ? img->uid : 0,
                .image_username = img ? img->username : NULL,
                .cluster_dns = f->cluster_dns,
                .cluster_domain = f->opts.cluster_domain,
                .resolv_conf = f->opts.resolv_conf,
        };
}

static struct image *find_image(struct floor *f, const char *name) {
        for (size_t i = 0; i < f->n_images; i++)
                if (streq(f->images[i].name, name))
                        return &f->images[i];
        return NULL;
}

static void pod_failed(struct pod_run *p, const char *what, const char *message) {
        log_error("pod %s/%s: %s: %s", p->pod->namespace_, p->pod->name, what, message);
        p->failed = true;
        p->f->errors++;
}

static void call_done(struct floor *f) {
        assert(f->pending > 0);
        if (--f->pending == 0)
                event_base_loopbreak(f->base);
}

static void pod_issued(struct pod_run *p) {
        p->calls++;
        p->f->pending++;
}

/* the end of one of a pod's calls: when it issued no further call, the pod has ended and the next may start */
static void pod_call_done(struct pod_run *p) {
        assert(p->calls > 0);
        if (--p->calls == 0 && !p->f->gate_sandboxes)
                slots_release(p->f->slots, &p->slot);
        call_done(p->f);
}

/* ---------------------------------------------------------------- before the clock: manifests, images */

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int load_manifests(struct floor *f) {
        _cleanup_strv_free_ char **names = NULL;
        struct dirent *de;
        size_t n = 0;
        DIR *d;

        if (isempty(f->opts.pod_manifest_path))
                return log_error_errno(-EINVAL, "--pod-manifest-path is required");
        d = opendir(f->opts.pod_manifest_path);
        if (!d)
                return log_error_errno(-errno, "cannot read %s: %m", f->opts.pod_manifest_path);
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                if (n >= FLOOR_MAX_MANIFESTS || strv_extend(&names, de->d_name) < 0) {
                        closedir(d);
                        return log_error_errno(-ENOMEM, "too many manifests in %s", f->opts.pod_manifest_path);
                }
                n++;
        }
        closedir(d);
        if (n > 1)
                qsort(names, n, sizeof(char *), cmp_str);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL, *data = NULL;
                _cleanup_ck_error_ struct ck_error *error = NULL;
                struct pod_set set = {};
                size_t size = 0;
                int r;

                if (asprintf(&path, "%s/%s", f->opts.pod_manifest_path, names[i]) < 0)
                        return -ENOMEM;
                r = read_full_file(path, MANIFEST_MAX_SIZE, &data, &size);
                if (r < 0)
                        return log_error_errno(r, "%s: %s", path, strerror(-r));
                r = pod_config_static_pods_from_manifest(data, size, f->opts.node_name, CONFIG_SOURCE_FILE, path, &set,
                                                         &error);
                if (r < 0)
                        return log_error_errno(r, "%s: %s", path, ck_error_message(error));
                for (size_t j = 0; j < set.n; j++) {
                        r = pod_set_add(&f->pods, TAKE_PTR(set.pods[j]));
                        if (r < 0) {
                                pod_set_done(&set);
                                return r;
                        }
                }
                pod_set_done(&set);
        }
        if (f->pods.n == 0)
                return log_error_errno(-ENOENT, "no pods in %s", f->opts.pod_manifest_path);
        return 0;
}

static void on_image_status(const struct cri_reply *reply, void *userdata) {
        struct image *img = userdata;
        struct floor *f = img->f;
        const Runtime__V1__ImageStatusResponse *resp = (const void *) reply->msg;

        if (reply->r < 0 || !resp->image || isempty(resp->image->id)) {
                log_error("image %s: %s", img->name,
                          reply->r < 0 ? reply->message : "not present (the floor never pulls)");
                f->errors++;
        } else {
                img->id = strdup(resp->image->id);
                img->uid_set = resp->image->uid != NULL;
                img->uid = resp->image->uid ? resp->image->uid->value : 0;
                img->username = isempty(resp->image->username) ? NULL : strdup(resp->image->username);
                if (!img->id || (!isempty(resp->image->username) && !img->username)) {
                        log_error("image %s: out of memory", img->name);
                        f->errors++;
                }
        }
        call_done(f);
}

static int resolve_images(struct floor *f) {
        size_t n = 0;

        for (size_t i = 0; i < f->pods.n; i++)
                n += f->pods.pods[i]->spec.n_containers;
        f->images = calloc(MAX(n, (size_t) 1), sizeof(*f->images));
        if (!f->images)
                return -ENOMEM;
        for (size_t i = 0; i < f->pods.n; i++) {
                const struct pod *pod = f->pods.pods[i];
                for (size_t j = 0; j < pod->spec.n_containers; j++) {
                        Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
                        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
                        struct image *img;
                        int r;

                        if (find_image(f, pod->spec.containers[j].image))
                                continue;
                        img = &f->images[f->n_images++];
                        img->f = f;
                        img->name = strdup(pod->spec.containers[j].image);
                        if (!img->name)
                                return -ENOMEM;
                        spec.image = img->name;
                        req.image = &spec;
                        r = cri_image_status(f->cri, &req, 0, on_image_status, img, NULL);
                        if (r < 0)
                                return log_error_errno(r, "ImageStatus %s: %s", img->name, strerror(-r));
                        f->pending++;
                }
        }
        event_base_dispatch(f->base);
        return f->errors ? -ENOENT : 0;
}

/* the node's allocatable (resourceFieldRef defaults) and --cluster-dns, as kubelet.c admission_setup() */
static int node_setup(struct floor *f) {
        struct machine_info machine = {};
        struct node_status_input in;
        int64_t storage;
        int r;

        r = node_ip_detect(f->opts.node_ip, &f->node_ip);
        if (r < 0)
                return r;
        r = stats_machine_info_read(NULL, &machine);
        if (r < 0)
                return log_error_errno(r, "cannot read the machine's description: %s", strerror(-r));
        in = (struct node_status_input) {
                .machine = &machine,
                .kube_reserved = f->opts.kube_reserved,
                .system_reserved = f->opts.system_reserved,
        };
        node_allocatable(&in, &f->alloc_cpu_milli, &f->alloc_memory_bytes, &storage);
        if (!f->parallel_given) { /* ckubelet's own limit of RunPodSandbox calls in flight */
                f->parallel = kubelet_options_sandbox_creations(&f->opts, (long) machine.num_cores);
                f->gate_sandboxes = true;
        }
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                r = cm_new(f->base, &f->opts, (int64_t) machine.num_cores * 1000, (int64_t) machine.memory_capacity,
                           &f->cm, &err);
                stats_machine_info_done(&machine);
                if (r < 0)
                        return log_error_errno(r, "%s", ck_error_message_or(err, r));
        }
        if (!isempty(f->opts.cluster_dns)) {
                _cleanup_free_ char *copy = strdup(f->opts.cluster_dns);
                char *save = NULL;
                if (!copy)
                        return -ENOMEM;
                for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                        while (*t == ' ')
                                t++;
                        if (*t && strv_extend(&f->cluster_dns, t) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

/* What ckubelet does for a pod before its RunPodSandbox, done here before the clock: the pod cgroup, the pod
 * log directory, the sandbox config. */
static int prepare_pods(struct floor *f) {
        int r;

        f->runs = calloc(f->pods.n, sizeof(*f->runs));
        if (!f->runs)
                return -ENOMEM;
        f->n_runs = f->pods.n;
        if (cm_enabled(f->cm)) {
                r = cm_update_qos(f->cm, (const struct pod *const *) f->pods.pods, f->pods.n);
                if (r < 0)
                        return log_error_errno(r, "updating the QoS cgroups: %s", strerror(-r));
        }
        for (size_t i = 0; i < f->pods.n; i++) {
                struct pod_run *p = &f->runs[i];
                _cleanup_ck_error_ struct ck_error *err = NULL;
                _cleanup_free_ char *logdir = NULL;
                struct kc_build_context ctx;
                struct kc_build_report report = {};

                p->f = f;
                p->pod = f->pods.pods[i];
                if (p->pod->spec.n_init_containers > 0)
                        return log_error_errno(-EOPNOTSUPP, "pod %s: init containers are not supported by the floor",
                                               p->pod->name);
                f->containers += p->pod->spec.n_containers;
                r = cm_pod_cgroup_parent(f->cm, p->pod, &p->cgroup_parent);
                if (r >= 0)
                        r = cm_pod_ensure(f->cm, p->pod, &err);
                if (r < 0)
                        return log_error_errno(r, "pod %s: the pod cgroup: %s", p->pod->name,
                                               ck_error_message_or(err, r));
                logdir = kr_pod_log_dir(f->opts.pod_logs_dir, p->pod);
                if (!logdir)
                        return -ENOMEM;
                r = mkdir_p(logdir, 0755);
                if (r < 0)
                        return log_error_errno(r, "cannot create %s: %s", logdir, strerror(-r));
                floor_context(p, NULL, &ctx);
                ctx.report = &report;
                r = kr_build_sandbox_config(p->pod, 0, &ctx, &p->sandbox_config);
                if (r < 0)
                        log_error("pod %s: the sandbox config: %s", p->pod->name, ck_error_message_or(report.error, r));
                kc_build_report_done(&report);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---------------------------------------------------------------- the timed part */

static void start_next(struct pod_run *p);

static void on_start(const struct cri_reply *reply, void *userdata) {
        struct pod_run *p = userdata;

        if (reply->r < 0)
                pod_failed(p, "StartContainer", reply->message);
        else {
                p->f->started++;
                p->f->last_reply_realtime_usec = (int64_t) now_realtime_usec();
        }
        p->step++;
        start_next(p);
        pod_call_done(p);
}

static void on_create(const struct cri_reply *reply, void *userdata) {
        struct pod_run *p = userdata;
        Runtime__V1__StartContainerRequest req = RUNTIME__V1__START_CONTAINER_REQUEST__INIT;
        const Runtime__V1__CreateContainerResponse *resp = (const void *) reply->msg;
        int r;

        if (reply->r < 0) {
                pod_failed(p, "CreateContainer", reply->message);
                pod_call_done(p);
                return;
        }
        req.container_id = resp->container_id;
        r = cri_start_container(p->f->cri, &req, 0, on_start, p, NULL);
        if (r < 0)
                pod_failed(p, "StartContainer", strerror(-r));
        else
                pod_issued(p);
        pod_call_done(p);
}

static void start_next(struct pod_run *p) {
        Runtime__V1__CreateContainerRequest req = RUNTIME__V1__CREATE_CONTAINER_REQUEST__INIT;
        Runtime__V1__ContainerConfig *cfg = NULL;
        _cleanup_free_ char *podlog = NULL, *dir = NULL;
        const struct container *c;
        struct kc_build_context ctx;
        struct kc_build_report report = {};
        int r;

        if (p->failed || p->step >= p->pod->spec.n_containers)
                return;
        c = &p->pod->spec.containers[p->step];
        podlog = kr_pod_log_dir(p->f->opts.pod_logs_dir, p->pod);
        if (!podlog || asprintf(&dir, "%s/%s", podlog, c->name) < 0)
                r = -ENOMEM;
        else
                r = mkdir_p(dir, 0755);
        if (r < 0) {
                pod_failed(p, "the container log directory", strerror(-r));
                return;
        }
        floor_context(p, find_image(p->f, c->image), &ctx);
        ctx.report = &report;
        r = kr_build_container_config(p->pod, c, 0, find_image(p->f, c->image)->id, &ctx, &cfg);
        if (r < 0) {
                pod_failed(p, "the container config", ck_error_message_or(report.error, r));
                kc_build_report_done(&report);
                return;
        }
        kc_build_report_done(&report);
        req.pod_sandbox_id = p->sandbox_id;
        req.config = cfg;
        req.sandbox_config = p->sandbox_config;
        r = cri_create_container(p->f->cri, &req, 0, on_create, p, NULL);
        pb_free(cfg);
        if (r < 0)
                pod_failed(p, "CreateContainer", strerror(-r));
        else
                pod_issued(p);
}

static void on_sandbox_status(const struct cri_reply *reply, void *userdata) {
        struct pod_run *p = userdata;
        const Runtime__V1__PodSandboxStatusResponse *resp = (const void *) reply->msg;
        _cleanup_ck_error_ struct ck_error *msg = NULL;
        struct kc_build_context ctx;
        int r;

        if (reply->r < 0) {
                pod_failed(p, "PodSandboxStatus", reply->message);
                pod_call_done(p);
                return;
        }
        if (resp->status && resp->status->network && !isempty(resp->status->network->ip)) {
                p->pod_ip = strdup(resp->status->network->ip);
                if (!p->pod_ip) {
                        pod_failed(p, "PodSandboxStatus", strerror(ENOMEM));
                        pod_call_done(p);
                        return;
                }
        }
        /* the volumes and etc-hosts the container mounts, as the sync does before its first CreateContainer */
        floor_context(p, NULL, &ctx);
        r = vol_setup_pod(p->pod, &ctx, &msg);
        if (r < 0)
                pod_failed(p, "volumes", ck_error_message(msg));
        else
                start_next(p);
        pod_call_done(p);
}

static void on_run_sandbox(const struct cri_reply *reply, void *userdata) {
        struct pod_run *p = userdata;
        Runtime__V1__PodSandboxStatusRequest req = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
        const Runtime__V1__RunPodSandboxResponse *resp = (const void *) reply->msg;
        int r;

        if (p->f->gate_sandboxes)
                slots_release(p->f->slots, &p->slot);
        if (reply->r < 0) {
                pod_failed(p, "RunPodSandbox", reply->message);
                pod_call_done(p);
                return;
        }
        p->sandbox_id = strdup(resp->pod_sandbox_id);
        if (!p->sandbox_id) {
                pod_failed(p, "RunPodSandbox", strerror(ENOMEM));
                pod_call_done(p);
                return;
        }
        req.pod_sandbox_id = p->sandbox_id;
        r = cri_pod_sandbox_status(p->f->cri, &req, 0, on_sandbox_status, p, NULL);
        if (r < 0)
                pod_failed(p, "PodSandboxStatus", strerror(-r));
        else
                pod_issued(p);
        pod_call_done(p);
}

/* the pod's turn: its RunPodSandbox goes out */
static void on_turn(void *userdata, int r) {
        Runtime__V1__RunPodSandboxRequest req = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;
        struct pod_run *p = userdata;

        assert(r == 0); /* nothing is withdrawn */
        req.config = p->sandbox_config;
        r = cri_run_pod_sandbox(p->f->cri, &req, 0, on_run_sandbox, p, NULL);
        if (r < 0) {
                pod_failed(p, "RunPodSandbox", strerror(-r));
                slots_release(p->f->slots, &p->slot);
        } else
                pod_issued(p);
        call_done(p->f); /* the wait for the turn */
}

static int run_all(struct floor *f) {
        int r;

        r = slots_new(f->base, (unsigned) f->parallel, &f->slots);
        if (r < 0)
                return r;
        f->t0_realtime_usec = (int64_t) now_realtime_usec();
        for (size_t i = 0; i < f->n_runs; i++) {
                f->pending++;
                slots_enqueue(f->slots, &f->runs[i].slot, on_turn, &f->runs[i]);
        }
        if (f->pending > 0)
                event_base_dispatch(f->base);
        return 0;
}

/* ---------------------------------------------------------------- main */

static void floor_done(struct floor *f) {
        f->slots = slots_free(f->slots);
        for (size_t i = 0; i < f->n_runs; i++) {
                pb_free(f->runs[i].sandbox_config);
                free(f->runs[i].cgroup_parent);
                free(f->runs[i].sandbox_id);
                free(f->runs[i].pod_ip);
        }
        free(f->runs);
        for (size_t i = 0; i < f->n_images; i++) {
                free(f->images[i].name);
                free(f->images[i].id);
                free(f->images[i].username);
        }
        free(f->images);
        pod_set_done(&f->pods);
        cm_free(f->cm);
        strv_free(f->cluster_dns);
        free(f->node_ip);
        cri_client_free(f->cri);
        if (f->base)
                event_base_free(f->base);
        kubelet_options_done(&f->opts);
}

static void usage(void) {
        printf("usage: ckubelet-cri-floor [--json] [--parallel K | --parallel-sandboxes K] -- CKUBELET-FLAGS...\n"
               "Starts every pod of --pod-manifest-path with only the CRI calls a start needs and prints the time.\n"
               "--parallel K: at most K pods in flight (the next starts when one's last StartContainer returns);\n"
               "--parallel-sandboxes K: at most K RunPodSandbox calls in flight (the rest of a pod's calls run freely);\n"
               "0: all at once. Without either, ckubelet's --max-parallel-sandbox-creations (4 per CPU by default).\n");
}

int main(int argc, char **argv) {
        static const struct option longopts[] = {
                { "json", no_argument, NULL, 'j' },
                { "parallel", required_argument, NULL, 'p' },
                { "parallel-sandboxes", required_argument, NULL, 's' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct floor f = {};
        _cleanup_ck_error_ struct ck_error *err = NULL;
        bool json = false;
        int r, c, ret = 1;

        while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) >= 0) {
                switch (c) {
                case 'j':
                        json = true;
                        break;
                case 'p':
                case 's': {
                        char *end;
                        unsigned long v;

                        errno = 0;
                        v = strtoul(optarg, &end, 10);
                        if (errno != 0 || end == optarg || *end != '\0' || v > FLOOR_MAX_MANIFESTS) {
                                fprintf(stderr, "ckubelet-cri-floor: %s: not a count: %s\n",
                                        c == 's' ? "--parallel-sandboxes" : "--parallel", optarg);
                                return 2;
                        }
                        f.parallel = v;
                        f.gate_sandboxes = c == 's';
                        f.parallel_given = true;
                        break;
                }
                case 'h':
                        usage();
                        return 0;
                default:
                        usage();
                        return 2;
                }
        }
        /* the rest are ckubelet's flags; getopt stopped after "--" */
        r = kubelet_options_init(&f.opts);
        if (r < 0) {
                fprintf(stderr, "ckubelet-cri-floor: %s\n", strerror(-r));
                return 1;
        }
        argv[optind - 1] = argv[0];
        r = kubelet_options_parse(&f.opts, argc - optind + 1, argv + optind - 1, &err);
        if (r != 0) {
                if (r < 0)
                        fprintf(stderr, "ckubelet-cri-floor: %s\n", ck_error_message(err));
                kubelet_options_done(&f.opts);
                return r < 0 ? 1 : 0;
        }
        log_set_verbosity(f.opts.verbosity);

        f.base = event_base_new();
        if (!f.base)
                goto out;
        r = cri_client_new(f.base, f.opts.container_runtime_endpoint, f.opts.image_service_endpoint,
                           f.opts.runtime_request_timeout_usec, &f.cri);
        if (r < 0) {
                log_error("invalid --container-runtime-endpoint %s: %s", f.opts.container_runtime_endpoint,
                          strerror(-r));
                goto out;
        }
        if (mkdir_p(f.opts.root_dir, 0750) < 0 || mkdir_p(f.opts.pod_logs_dir, 0755) < 0) {
                log_error("cannot create --root-dir or podLogsDir: %m");
                goto out;
        }
        if (load_manifests(&f) < 0 || node_setup(&f) < 0 || resolve_images(&f) < 0 || prepare_pods(&f) < 0)
                goto out;
        r = run_all(&f);
        if (r < 0) {
                log_error("cannot start the pods: %s", strerror(-r));
                goto out;
        }

        {
                double t0 = (double) f.t0_realtime_usec / 1e6, t1 = (double) f.last_reply_realtime_usec / 1e6;
                double secs = f.last_reply_realtime_usec ? t1 - t0 : 0;
                if (json) {
                        json_t *o = json_pack("{s:I, s:I, s:I, s:f, s:f, s:f, s:I}", "pods", (json_int_t) f.n_runs,
                                              "containers", (json_int_t) f.containers, "started",
                                              (json_int_t) f.started, "t0_unix", t0, "last_start_reply_unix", t1,
                                              "seconds", secs, "errors", (json_int_t) f.errors);
                        if (!o || json_dumpf(o, stdout, JSON_COMPACT) < 0)
                                log_error("cannot print the result");
                        putchar('\n');
                        json_decref(o);
                } else
                        printf("%zu pods, %zu of %zu containers started in %.3f s (first RunPodSandbox to the last "
                               "StartContainer reply), %u errors\n",
                               f.n_runs, f.started, f.containers, secs, f.errors);
        }
        ret = f.errors ? 1 : 0;
out:
        floor_done(&f);
        return ret;
}
