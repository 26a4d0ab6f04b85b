/* SPDX-License-Identifier: Apache-2.0 */
#include "kuberuntime/config.h"
#include "apis/resource.h"
#include "stats/machine.h"

#include <inttypes.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "basic/error.h"
#include "basic/strmap.h"
#include "kuberuntime/actions.h"
#include "network/dns.h"
#include "kuberuntime/env.h"
#include "kuberuntime/security.h"
#include "container/labels.h"
#include "kuberuntime/resources.h"
#include "kuberuntime/termination.h"
#include "volumes/volumes.h"

char *kr_pod_log_dir(const char *pod_logs_dir, const struct pod *pod) {
        char *s = NULL;
        if (asprintf(&s, "%s/%s_%s_%s", pod_logs_dir, pod->namespace_, pod->name, pod->uid) < 0)
                return NULL;
        return s;
}

/* Build a protobuf-c map (array of entries) from a strmap. Entry types differ per message but share the
 * { base, key, value } shape, so this is a macro over the entry type and its INIT. */
#define PB_MAP_FROM_STRMAP(EntryType, ENTRY_INIT, src, ret_n, ret_entries)             \
        ({                                                                             \
                int _r = 0;                                                            \
                EntryType **_e = calloc((src)->n ? (src)->n : 1, sizeof(EntryType *)); \
                if (!_e)                                                               \
                        _r = -ENOMEM;                                                  \
                for (size_t _i = 0; _r == 0 && _i < (src)->n; _i++) {                  \
                        _e[_i] = malloc(sizeof(EntryType));                            \
                        if (!_e[_i]) {                                                 \
                                _r = -ENOMEM;                                          \
                                break;                                                 \
                        }                                                              \
                        *_e[_i] = (EntryType) ENTRY_INIT;                              \
                        (ret_n) = _i + 1;                                              \
                        _e[_i]->key = strdup((src)->keys[_i]);                         \
                        _e[_i]->value = strdup((src)->values[_i]);                     \
                        if (!_e[_i]->key || !_e[_i]->value)                            \
                                _r = -ENOMEM;                                          \
                }                                                                      \
                (ret_entries) = _e;                                                    \
                _r;                                                                    \
        })

/* Labels: pod labels + io.kubernetes.pod.{name,namespace,uid} */
static int kr_sandbox_labels(const struct pod *pod, struct strmap *ret) {
        struct strmap m = {};
        int r = strmap_copy(&pod->labels, &m);
        if (r >= 0)
                r = strmap_set(&m, LABEL_POD_NAME, pod->name);
        if (r >= 0)
                r = strmap_set(&m, LABEL_POD_NAMESPACE, pod->namespace_);
        if (r >= 0)
                r = strmap_set(&m, LABEL_POD_UID, pod->uid);
        if (r < 0) {
                strmap_done(&m);
                return r;
        }
        strmap_sort(&m);
        *ret = m;
        return 0;
}

static int kr_container_labels(const struct pod *pod, const struct container *c, struct strmap *ret) {
        struct strmap m = {};
        int r = strmap_set(&m, LABEL_POD_NAME, pod->name);
        if (r >= 0)
                r = strmap_set(&m, LABEL_POD_NAMESPACE, pod->namespace_);
        if (r >= 0)
                r = strmap_set(&m, LABEL_POD_UID, pod->uid);
        if (r >= 0)
                r = strmap_set(&m, LABEL_CONTAINER_NAME, c->name);
        if (r < 0) {
                strmap_done(&m);
                return r;
        }
        *ret = m;
        return 0;
}

static int ports_json(const struct container *c, char **ret) {
        json_auto_t *a = json_array();
        char *s;
        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_ports; i++) {
                const struct container_port *p = &c->ports[i];
                json_t *o = json_object();
                if (!o)
                        return -ENOMEM;
                if (!isempty(p->name))
                        json_object_set_new(o, "name", json_string(p->name));
                if (p->host_port)
                        json_object_set_new(o, "hostPort", json_integer(p->host_port));
                json_object_set_new(o, "containerPort", json_integer(p->container_port));
                json_object_set_new(o, "protocol", json_string(p->protocol ? p->protocol : "TCP"));
                json_array_append_new(a, o);
        }
        s = json_dumps(a, JSON_COMPACT);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int kr_container_annotations(const struct pod *pod, const struct container *c, uint32_t restart_count,
                                    struct strmap *ret) {
        struct strmap m = {};
        char hash[KR_HASH_MAX], num[32];
        int r;

        r = kr_container_hash(c, hash);
        if (r < 0)
                return r;
        r = strmap_set(&m, ANNOTATION_CONTAINER_HASH, hash);
        snprintf(num, sizeof(num), "%" PRIu32, restart_count);
        if (r >= 0)
                r = strmap_set(&m, ANNOTATION_CONTAINER_RESTART_COUNT, num);
        if (r >= 0)
                r = strmap_set(&m, ANNOTATION_TERMINATION_MESSAGE_PATH,
                               c->termination_message_path ? c->termination_message_path : "/dev/termination-log");
        if (r >= 0)
                r = strmap_set(&m, ANNOTATION_TERMINATION_MESSAGE_POLICY,
                               c->termination_message_policy == TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR
                                       ? "FallbackToLogsOnError"
                                       : "File");
        snprintf(num, sizeof(num), "%" PRId64, pod->spec.termination_grace_period_seconds);
        if (r >= 0)
                r = strmap_set(&m, ANNOTATION_POD_TERMINATION_GRACE_PERIOD, num);
        if (r >= 0 && container_is_sidecar(c))
                r = strmap_set(&m, ANNOTATION_CONTAINER_SIDECAR, "true");
        if (r >= 0 && c->n_ports > 0) {
                _cleanup_free_ char *pj = NULL;
                r = ports_json(c, &pj);
                if (r >= 0)
                        r = strmap_set(&m, ANNOTATION_CONTAINER_PORTS, pj);
        }
        if (r >= 0 && c->pre_stop) {
                /* the handler as given, so that it still runs once the pod is gone (lifecycle_handler_from_json) */
                json_t *h = json_object_get(json_object_get(c->raw, "lifecycle"), "preStop");
                _cleanup_free_ char *hj = h ? json_dumps(h, JSON_COMPACT) : NULL;
                if (h)
                        r = hj ? strmap_set(&m, ANNOTATION_CONTAINER_PRESTOP_HANDLER, hj) : -ENOMEM;
        }
        if (r < 0) {
                strmap_done(&m);
                return r;
        }
        *ret = m;
        return 0;
}

static Runtime__V1__Protocol protocol_to_cri(const char *p) {
        if (p && streq(p, "UDP"))
                return RUNTIME__V1__PROTOCOL__UDP;
        if (p && streq(p, "SCTP"))
                return RUNTIME__V1__PROTOCOL__SCTP;
        return RUNTIME__V1__PROTOCOL__TCP;
}

/* namespacesForPod: the pid namespace is the node's (hostPID), the pod's (shareProcessNamespace) or the
 * container's own; an ephemeral container with a target joins the target's (NamespaceMode TARGET) */
/* the user namespace (GetOrCreateUserNamespaceMappings): the pod's own with its range (hostUsers false), else the
 * node's, said explicitly as upstream does with the feature on */
static int userns_options(const struct kc_build_context *ctx, Runtime__V1__UserNamespace **ret) {
        Runtime__V1__UserNamespace *u = calloc(1, sizeof(*u));

        if (!u)
                return -ENOMEM;
        *u = (Runtime__V1__UserNamespace) RUNTIME__V1__USER_NAMESPACE__INIT;
        *ret = u;
        u->mode = RUNTIME__V1__NAMESPACE_MODE__NODE;
        if (!ctx || !ctx->userns)
                return 0;
        u->mode = RUNTIME__V1__NAMESPACE_MODE__POD;
        u->uids = calloc(1, sizeof(*u->uids));
        u->gids = calloc(1, sizeof(*u->gids));
        if (!u->uids || !u->gids)
                return -ENOMEM;
        u->n_uids = u->n_gids = 1;
        for (int i = 0; i < 2; i++) {
                Runtime__V1__IDMapping *m = malloc(sizeof(*m));
                if (!m)
                        return -ENOMEM;
                *m = (Runtime__V1__IDMapping) RUNTIME__V1__IDMAPPING__INIT;
                m->host_id = ctx->userns_host_id;
                m->container_id = 0;
                m->length = ctx->userns_length;
                if (i == 0)
                        u->uids[0] = m;
                else
                        u->gids[0] = m;
        }
        return 0;
}

static int namespace_options(const struct pod *pod, const char *target_id, const struct kc_build_context *ctx,
                             Runtime__V1__NamespaceOption **ret) {
        Runtime__V1__NamespaceOption *o = malloc(sizeof(*o));
        int r;

        if (!o)
                return -ENOMEM;
        *o = (Runtime__V1__NamespaceOption) RUNTIME__V1__NAMESPACE_OPTION__INIT;
        o->network = pod->spec.host_network ? RUNTIME__V1__NAMESPACE_MODE__NODE : RUNTIME__V1__NAMESPACE_MODE__POD;
        o->ipc = pod->spec.host_ipc ? RUNTIME__V1__NAMESPACE_MODE__NODE : RUNTIME__V1__NAMESPACE_MODE__POD;
        o->pid = pod->spec.host_pid                  ? RUNTIME__V1__NAMESPACE_MODE__NODE
                 : pod->spec.share_process_namespace ? RUNTIME__V1__NAMESPACE_MODE__POD
                                                     : RUNTIME__V1__NAMESPACE_MODE__CONTAINER;
        *ret = o;
        r = userns_options(ctx, &o->userns_options);
        if (r < 0)
                return r;
        if (!isempty(target_id) && o->pid == RUNTIME__V1__NAMESPACE_MODE__CONTAINER) {
                o->pid = RUNTIME__V1__NAMESPACE_MODE__TARGET;
                o->target_id = strdup(target_id);
                if (!o->target_id)
                        return -ENOMEM;
        }
        return 0;
}

int kr_sandbox_hostname(const struct pod *pod, const char *cluster_domain, char **ret, struct ck_error **ret_error) {
        _cleanup_free_ char *hostname = pod_hostname(pod), *fqdn = NULL;

        if (!hostname)
                return -ENOMEM;
        /* GeneratePodHostNameAndDomain, then GetNodenameForKernel: the FQDN with setHostnameAsFQDN and a subdomain */
        if (pod->spec.set_hostname_as_fqdn && !isempty(pod->spec.subdomain) && !pod->spec.has_hostname_override) {
                if (asprintf(&fqdn, "%s.%s.%s.svc.%s", hostname, pod->spec.subdomain, pod->namespace_,
                             strempty(cluster_domain)) < 0)
                        return -ENOMEM;
                if (strlen(fqdn) > KR_FQDN_MAX)
                        return ck_error_set(ret_error, -EINVAL,
                                            "failed to construct FQDN from pod hostname and cluster domain, FQDN %s "
                                            "is too long (%d characters is the max, %zu characters requested)",
                                            fqdn, KR_FQDN_MAX, strlen(fqdn));
                *ret = TAKE_PTR(fqdn);
                return 0;
        }
        *ret = TAKE_PTR(hostname);
        return 0;
}

int kr_build_sandbox_config(const struct pod *pod, uint32_t attempt, const struct kc_build_context *ctx,
                            Runtime__V1__PodSandboxConfig **ret) {
        _cleanup_pb_ Runtime__V1__PodSandboxConfig *cfg = NULL;
        Runtime__V1__PodSandboxMetadata *md;
        Runtime__V1__LinuxPodSandboxConfig *lx;
        Runtime__V1__LinuxSandboxSecurityContext *sc;
        _cleanup_(strmap_done) struct strmap labels = {};
        size_t nports = 0;
        int r;

        cfg = malloc(sizeof(*cfg));
        if (!cfg)
                return -ENOMEM;
        *cfg = (Runtime__V1__PodSandboxConfig) RUNTIME__V1__POD_SANDBOX_CONFIG__INIT;

        md = cfg->metadata = malloc(sizeof(*md));
        if (!md)
                return -ENOMEM;
        *md = (Runtime__V1__PodSandboxMetadata) RUNTIME__V1__POD_SANDBOX_METADATA__INIT;
        md->name = strdup(pod->name);
        md->uid = strdup(pod->uid);
        md->namespace_ = strdup(pod->namespace_);
        md->attempt = attempt;
        if (!md->name || !md->uid || !md->namespace_)
                return -ENOMEM;

        if (!pod->spec.host_network) {
                r = kr_sandbox_hostname(pod, ctx ? ctx->cluster_domain : NULL, &cfg->hostname,
                                        ctx && ctx->report ? &ctx->report->error : NULL);
                if (r < 0)
                        return r;
        }
        cfg->log_directory = kr_pod_log_dir(ctx->pod_logs_dir, pod);
        if (!cfg->log_directory)
                return -ENOMEM;
        r = dns_pod_config(pod, ctx, &cfg->dns_config);
        if (r < 0)
                return r;

        for (size_t i = 0; i < pod->spec.n_containers; i++)
                nports += pod->spec.containers[i].n_ports;
        if (nports > 0) {
                cfg->port_mappings = calloc(nports, sizeof(*cfg->port_mappings));
                if (!cfg->port_mappings)
                        return -ENOMEM;
                for (size_t i = 0; i < pod->spec.n_containers; i++)
                        for (size_t j = 0; j < pod->spec.containers[i].n_ports; j++) {
                                const struct container_port *p = &pod->spec.containers[i].ports[j];
                                Runtime__V1__PortMapping *pm = malloc(sizeof(*pm));
                                if (!pm)
                                        return -ENOMEM;
                                *pm = (Runtime__V1__PortMapping) RUNTIME__V1__PORT_MAPPING__INIT;
                                cfg->port_mappings[cfg->n_port_mappings++] = pm;
                                pm->protocol = protocol_to_cri(p->protocol);
                                pm->container_port = p->container_port;
                                pm->host_port = p->host_port;
                                if (!isempty(p->host_ip) && !(pm->host_ip = strdup(p->host_ip)))
                                        return -ENOMEM;
                        }
        }

        r = kr_sandbox_labels(pod, &labels);
        if (r < 0)
                return r;
        r = PB_MAP_FROM_STRMAP(Runtime__V1__PodSandboxConfig__LabelsEntry,
                               RUNTIME__V1__POD_SANDBOX_CONFIG__LABELS_ENTRY__INIT, &labels, cfg->n_labels,
                               cfg->labels);
        if (r < 0)
                return r;
        r = PB_MAP_FROM_STRMAP(Runtime__V1__PodSandboxConfig__AnnotationsEntry,
                               RUNTIME__V1__POD_SANDBOX_CONFIG__ANNOTATIONS_ENTRY__INIT, &pod->annotations,
                               cfg->n_annotations, cfg->annotations);
        if (r < 0)
                return r;

        lx = cfg->linux = malloc(sizeof(*lx));
        if (!lx)
                return -ENOMEM;
        *lx = (Runtime__V1__LinuxPodSandboxConfig) RUNTIME__V1__LINUX_POD_SANDBOX_CONFIG__INIT;
        sc = lx->security_context = malloc(sizeof(*sc));
        if (!sc)
                return -ENOMEM;
        *sc = (Runtime__V1__LinuxSandboxSecurityContext) RUNTIME__V1__LINUX_SANDBOX_SECURITY_CONTEXT__INIT;
        r = namespace_options(pod, NULL, ctx, &sc->namespace_options);
        if (r >= 0)
                r = kr_sandbox_security_context(pod, ctx, lx);
        if (r < 0)
                return r;
        if (ctx && !isempty(ctx->cgroup_parent)) {
                lx->cgroup_parent = strdup(ctx->cgroup_parent);
                if (!lx->cgroup_parent)
                        return -ENOMEM;
        }

        *ret = TAKE_PTR(cfg);
        return 0;
}

/* The node's memory capacity, for the OOM score of burstable containers. */
static uint64_t node_memory_bytes(void) {
        static uint64_t cached;
        struct sysinfo si;

        if (cached == 0 && sysinfo(&si) == 0)
                cached = (uint64_t) si.totalram * si.mem_unit;
        return cached;
}

/* GetHugepageLimitsFromResources: every page size of the machine, 0 unless the container (or, with pod-level
 * resources, the pod) asks for pages of that size */
static int hugepage_limits(const struct pod *pod, const struct container *c,
                           Runtime__V1__LinuxContainerResources *res) {
        const uint64_t *sizes;
        size_t n = machine_hugepage_sizes(&sizes);

        if (n == 0)
                return 0;
        res->hugepage_limits = calloc(n, sizeof(*res->hugepage_limits));
        if (!res->hugepage_limits)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                Runtime__V1__HugepageLimit *l = malloc(sizeof(*l));
                char unit[RESOURCE_HUGEPAGE_UNIT_MAX];

                if (!l)
                        return -ENOMEM;
                *l = (Runtime__V1__HugepageLimit) RUNTIME__V1__HUGEPAGE_LIMIT__INIT;
                res->hugepage_limits[res->n_hugepage_limits++] = l;
                resource_hugepage_unit(sizes[i], unit);
                l->page_size = strdup(unit);
                if (!l->page_size)
                        return -ENOMEM;
                l->limit = (uint64_t) MAX(resource_container_hugepages(pod, c, sizes[i]), (int64_t) 0);
        }
        return 0;
}

int kr_build_container_config(const struct pod *pod, const struct container *c, uint32_t restart_count,
                              const char *image_ref, const struct kc_build_context *ctx,
                              Runtime__V1__ContainerConfig **ret) {
        _cleanup_pb_ Runtime__V1__ContainerConfig *cfg = NULL;
        Runtime__V1__LinuxContainerConfig *lx;
        Runtime__V1__LinuxContainerSecurityContext *sc;
        _cleanup_(strmap_done) struct strmap labels = {}, annotations = {};
        int r;

        cfg = malloc(sizeof(*cfg));
        if (!cfg)
                return -ENOMEM;
        *cfg = (Runtime__V1__ContainerConfig) RUNTIME__V1__CONTAINER_CONFIG__INIT;

        cfg->metadata = malloc(sizeof(*cfg->metadata));
        if (!cfg->metadata)
                return -ENOMEM;
        *cfg->metadata = (Runtime__V1__ContainerMetadata) RUNTIME__V1__CONTAINER_METADATA__INIT;
        cfg->metadata->attempt = restart_count;
        if (!(cfg->metadata->name = strdup(c->name)))
                return -ENOMEM;

        cfg->image = malloc(sizeof(*cfg->image));
        if (!cfg->image)
                return -ENOMEM;
        *cfg->image = (Runtime__V1__ImageSpec) RUNTIME__V1__IMAGE_SPEC__INIT;
        if (!(cfg->image->image = strdup(image_ref)))
                return -ENOMEM;
        if (!(cfg->image->user_specified_image = strdup(c->image)))
                return -ENOMEM;

        r = kr_build_env(pod, c, ctx, cfg); /* environment, and command and args expanded with it */
        if (r < 0)
                return r;
        if (!isempty(c->working_dir) && !(cfg->working_dir = strdup(c->working_dir)))
                return -ENOMEM;

        r = vol_container_mounts(pod, c, ctx, &cfg->mounts, &cfg->n_mounts);
        if (r < 0)
                return r;
        r = kr_container_labels(pod, c, &labels);
        if (r < 0)
                return r;
        r = kr_container_annotations(pod, c, restart_count, &annotations);
        if (r < 0)
                return r;
        r = PB_MAP_FROM_STRMAP(Runtime__V1__ContainerConfig__LabelsEntry,
                               RUNTIME__V1__CONTAINER_CONFIG__LABELS_ENTRY__INIT, &labels, cfg->n_labels, cfg->labels);
        if (r < 0)
                return r;
        r = PB_MAP_FROM_STRMAP(Runtime__V1__ContainerConfig__AnnotationsEntry,
                               RUNTIME__V1__CONTAINER_CONFIG__ANNOTATIONS_ENTRY__INIT, &annotations, cfg->n_annotations,
                               cfg->annotations);
        if (r < 0)
                return r;

        if (asprintf(&cfg->log_path, "%s/%" PRIu32 ".log", c->name, restart_count) < 0) {
                cfg->log_path = NULL;
                return -ENOMEM;
        }
        cfg->stdin = c->stdin_;
        cfg->stdin_once = c->stdin_once;
        cfg->tty = c->tty;
        /* getContainerConfigStopSignal: lifecycle.stopSignal with ContainerStopSignals on; a runtime that does not
         * know the field ignores it and reports no stop signal in its ContainerStatus */
        if (ctx && ctx->stop_signals && c->stop_signal)
                cfg->stop_signal = (Runtime__V1__Signal) stop_signal_number(c->stop_signal);

        lx = cfg->linux = malloc(sizeof(*lx));
        if (!lx)
                return -ENOMEM;
        *lx = (Runtime__V1__LinuxContainerConfig) RUNTIME__V1__LINUX_CONTAINER_CONFIG__INIT;
        lx->resources = malloc(sizeof(*lx->resources));
        if (!lx->resources)
                return -ENOMEM;
        *lx->resources = (Runtime__V1__LinuxContainerResources) RUNTIME__V1__LINUX_CONTAINER_RESOURCES__INIT;
        {
                struct kr_linux_resources res;
                kr_container_resources(pod, c, node_memory_bytes(), &res);
                lx->resources->cpu_period = res.cpu_period;
                lx->resources->cpu_quota = res.cpu_quota;
                lx->resources->cpu_shares = res.cpu_shares;
                lx->resources->memory_limit_in_bytes = res.memory_limit_in_bytes;
                lx->resources->oom_score_adj = res.oom_score_adj;
        }
        r = hugepage_limits(pod, c, lx->resources);
        if (r < 0)
                return r;
        if (ctx->swap_v2) {
                /* configureContainerSwapResources: memory.swap.max through the unified map (NoSwap: 0) */
                _cleanup_(strmap_done) struct strmap unified = {};
                char v[32];
                snprintf(v, sizeof(v), "%" PRId64,
                         kr_container_swap_limit(pod, c, ctx->limited_swap, ctx->critical_pod, ctx->node_memory_bytes,
                                                 ctx->swap_capacity_bytes));
                r = strmap_set(&unified, "memory.swap.max", v);
                if (r >= 0)
                        r = PB_MAP_FROM_STRMAP(Runtime__V1__LinuxContainerResources__UnifiedEntry,
                                               RUNTIME__V1__LINUX_CONTAINER_RESOURCES__UNIFIED_ENTRY__INIT, &unified,
                                               lx->resources->n_unified, lx->resources->unified);
                if (r < 0)
                        return r;
        }
        sc = lx->security_context = malloc(sizeof(*sc));
        if (!sc)
                return -ENOMEM;
        *sc = (Runtime__V1__LinuxContainerSecurityContext) RUNTIME__V1__LINUX_CONTAINER_SECURITY_CONTEXT__INIT;
        r = namespace_options(pod, ctx->target_id, ctx, &sc->namespace_options);
        if (r >= 0)
                r = kr_container_security_context(pod, c, ctx, sc);
        if (r >= 0) {
                /* getImageUser: no numeric user and no name is root, and so is an image ImageStatus did not
                 * describe (unknown is never taken as non-root: runAsNonRoot must not fail open) */
                const int64_t root = 0, *uid = ctx->image_uid_set             ? &ctx->image_uid
                                               : isempty(ctx->image_username) ? &root
                                                                              : NULL;
                r = kr_verify_run_as_non_root(pod, c, uid, ctx->image_username,
                                              ctx->report ? &ctx->report->error : NULL);
        }
        if (r < 0)
                return r;
        r = kr_termination_message_mount(pod, c, ctx->root_dir, cfg);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(cfg);
        return 0;
}
