/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pod's DNS configuration (pkg/kubelet/network/dns): dnsPolicy ClusterFirst / ClusterFirstWithHostNet /
 * Default / None from --cluster-dns, --cluster-domain and --resolv-conf, then spec.dnsConfig merged, then
 * upstream's limits (3 nameservers, 32 search domains of at most 253 characters, a 2048-character search
 * line). */

#include "apis/pod.h"
#include "cri/cri.h"

struct kc_build_context;

#define DNS_RESOLV_CONF_MAX (10 * 1024 * 1024)

/* resolv.conf text: nameservers, the last search/domain line (trailing dots removed, "." dropped), options. */
int dns_parse_resolv_conf(const char *text, char ***ret_servers, char ***ret_searches, char ***ret_options);

/* NULL *ret when the pod gets the runtime's default (never: upstream always sends one). Events
 * (MissingClusterDNS, DNSConfigForming) go to ctx->report. */
int dns_pod_config(const struct pod *pod, const struct kc_build_context *ctx, Runtime__V1__DNSConfig **ret);
