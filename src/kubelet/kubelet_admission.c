/* SPDX-License-Identifier: Apache-2.0 */
/* Admission as the kubelet runs it (lifecycle.PredicateAdmitHandler and the handlers registered before it): the
 * eviction manager's, the node shutdown manager's, the device manager's, then the predicates (admission.c, pure)
 * and the CPU manager's; a pod refused is rejected for good. Also what admission compares requests with, set up at
 * start (kubelet_admission_setup, which parses --cluster-dns too), and the warning about the fields of a new pod
 * that are not acted on. */

#include <arpa/inet.h>
#include <string.h>

#include "basic/error.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "kubelet/kubelet-internal.h"
#include "kubelet/admission.h"
#include "kuberuntime/security.h"
#include "features/features.h"

/* The fields ckubelet does not act on, said once for the pod, by name */
void kubelet_warn_unsupported_fields(struct kubelet *k, const struct pod *p) {
        static char *const stop_signals[] = { (char *) "ContainerStopSignals", NULL };
        _cleanup_strv_free_ char **fields = NULL;
        _cleanup_free_ char *joined = NULL;
        bool gated = feature_enabled(k->opts->feature_gates, "ContainerStopSignals");

        if (pod_unsupported_fields_gated(p, gated ? stop_signals : NULL, &fields) < 0 || !fields)
                return;
        joined = strv_join(fields, ", ");
        log_warning("pod %s/%s: fields that are not acted on: %s", p->namespace_, p->name, strna(joined));
}

/* Admission (lifecycle.PredicateAdmitHandler): a pod that does not fit next to the admitted ones is rejected
 * for good, and an API pod is told so through its status (rejectPod). */
bool kubelet_pod_admit(struct kubelet *k, const struct pod *p) {
        _cleanup_free_ const struct pod **admitted = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        size_t n = 0;
        int r;

        admitted = kubelet_worker_pods(k, false, &n);
        if (!admitted)
                return false;
        /* the eviction manager's handler first, as upstream registers it, then the node shutdown manager's */
        r = kubelet_eviction_admit(k, p, &err);
        if (r >= 0)
                r = kubelet_shutdown_admit(k, &err);
        /* the device manager's handler first (resourceAllocator, registered before the predicates): the pod's
         * devices are allocated, which may take plugin calls; the pod waits for them */
        if (r >= 0 && k->devices) {
                kubelet_devices_gc(k);
                r = dm_admit(k->devices, p, &err);
                if (r == -EINPROGRESS || r == -ENOMEM)
                        return false; /* asked again when the allocation ends (or at the next change) */
                if (r < 0)
                        r = ck_error_set_reason(&err, -ENOSPC, "UnexpectedAdmissionError", "Pod was rejected: %s",
                                                ck_error_message(err));
                kubelet_admission_refresh(k);
        }
        if (r >= 0) {
                k->admission.supplemental_groups_policy = node_runtime_features_sgp(kubelet_runtime_features(k));
                r = kubelet_admit(p, admitted, n, &k->admission, &err);
                /* the CPU manager's exclusive CPUs (the topology manager's "none" policy allocating for each
                 * container), once the pod fits: a refused pod never holds CPUs */
                if (r >= 0)
                        r = kubelet_cpu_admit(k, p, &err);
                if (r >= 0)
                        return true;
        }
        /* a refusal carries its reason; anything else (out of memory) is tried again at the next change */
        if (r != -ENOSPC || !ck_error_reason(err))
                return false;
        log_error("Pod admission denied: pod=\"%s/%s\" podUID=\"%s\" reason=\"%s\" message=\"%s\"", p->namespace_,
                  p->name, p->uid, ck_error_reason(err), ck_error_message(err));
        (void) strv_extend(&k->rejected, p->uid);
        if (k->status && !pod_config_is_static(p))
                status_manager_set(k->status, p->uid, p->namespace_, p->name,
                                   json_pack("{s:s, s:s, s:s}", "phase", "Failed", "reason", ck_error_reason(err),
                                             "message", ck_error_message(err)));
        return false;
}

/* what admission compares requests with: allocatable, as the node reports it */
int kubelet_admission_setup(struct kubelet *k, struct ck_error **ret_error) {
        struct node_status_input in;
        int64_t storage;
        int r;

        in = (struct node_status_input) {
                .machine = &k->machine,
                .kube_reserved = k->opts->kube_reserved,
                .system_reserved = k->opts->system_reserved,
                .eviction_set = true,
        };
        kubelet_eviction_reservation(k, &in.eviction_memory_bytes, &in.eviction_memory_fraction,
                                     &in.eviction_storage_bytes, &in.eviction_storage_fraction);
        node_allocatable(&in, &k->admission.cpu_milli, &k->admission.memory_bytes, &storage);
        k->admission.max_pods = k->opts->max_pods;
        k->admission.apparmor_enabled = kr_apparmor_host_enabled("");
        log_v(1, "AppArmor is %s on this host", k->admission.apparmor_enabled ? "enabled" : "not enabled");
        /* pkg/kubelet/sysctl NewAllowlist: every unsafe sysctl allowed must be namespaced */
        if (!isempty(k->opts->allowed_unsafe_sysctls)) {
                _cleanup_free_ char *copy = strdup(k->opts->allowed_unsafe_sysctls);
                char *save = NULL;
                if (!copy)
                        return -ENOMEM;
                for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                        _cleanup_ck_error_ struct ck_error *error = NULL;
                        while (*t == ' ')
                                t++;
                        if (!*t)
                                continue;
                        r = kr_sysctl_check_allowed_unsafe(t, &error);
                        if (r < 0)
                                return ck_error_set(ret_error, r, "invalid --allowed-unsafe-sysctls: %s",
                                                    ck_error_message(error));
                        r = strv_extend(&k->admission.allowed_unsafe_sysctls, t);
                        if (r < 0)
                                return -ENOMEM;
                }
        }
        /* --cluster-dns: the pods' nameservers (dnsPolicy ClusterFirst) */
        if (!isempty(k->opts->cluster_dns)) {
                _cleanup_free_ char *copy = strdup(k->opts->cluster_dns);
                char *save = NULL;
                if (!copy)
                        return -ENOMEM;
                for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                        unsigned char addr[16];
                        while (*t == ' ')
                                t++;
                        if (!*t)
                                continue;
                        if (inet_pton(AF_INET, t, addr) != 1 && inet_pton(AF_INET6, t, addr) != 1)
                                return ck_error_set(ret_error, -EINVAL, "invalid --cluster-dns IP address \"%s\"", t);
                        if (strv_extend(&k->cluster_dns, t) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}
