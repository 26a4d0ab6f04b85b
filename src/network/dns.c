/* SPDX-License-Identifier: Apache-2.0 */
#include "network/dns.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/protobuf.h"
#include "basic/strv.h"
#include "container/build.h"

static int strv_add_unique(char ***l, const char *s) {
        if (strv_contains(*l, s))
                return 0;
        return strv_extend(l, s);
}

int dns_parse_resolv_conf(const char *text, char ***ret_servers, char ***ret_searches, char ***ret_options) {
        _cleanup_strv_free_ char **servers = NULL, **searches = NULL, **options = NULL;
        _cleanup_free_ char *copy = strdup(text);
        char *save = NULL;
        int r = 0;

        if (!copy)
                return -ENOMEM;
        for (char *line = strtok_r(copy, "\n", &save); line && r >= 0; line = strtok_r(NULL, "\n", &save)) {
                char *fsave = NULL, *key;
                if (line[0] == '#' || line[0] == ';')
                        continue;
                key = strtok_r(line, " \t\r\f\v", &fsave);
                if (!key)
                        continue;
                if (streq(key, "nameserver")) {
                        char *v = strtok_r(NULL, " \t\r\f\v", &fsave);
                        if (v)
                                r = strv_extend(&servers, v);
                } else if (streq(key, "domain") || streq(key, "search")) {
                        searches = strv_free(searches);
                        for (char *v; r >= 0 && (v = strtok_r(NULL, " \t\r\f\v", &fsave));) {
                                size_t l = strlen(v);
                                if (streq(v, "."))
                                        continue;
                                if (l > 0 && v[l - 1] == '.')
                                        v[l - 1] = 0;
                                r = strv_extend(&searches, v);
                        }
                } else if (streq(key, "options")) {
                        /* appendOptions: a later option with the same name replaces the earlier one */
                        for (char *v; r >= 0 && (v = strtok_r(NULL, " \t\r\f\v", &fsave));) {
                                size_t nl = strcspn(v, ":");
                                for (size_t i = 0; options && options[i]; i++)
                                        if (strncmp(options[i], v, nl) == 0 &&
                                            (options[i][nl] == 0 || options[i][nl] == ':')) {
                                                strv_remove_at(options, i);
                                                break;
                                        }
                                r = strv_extend(&options, v);
                        }
                }
        }
        if (r < 0)
                return r;
        *ret_servers = TAKE_PTR(servers);
        *ret_searches = TAKE_PTR(searches);
        *ret_options = TAKE_PTR(options);
        return 0;
}

static int read_resolv_conf(const char *path, char ***servers, char ***searches, char ***options) {
        _cleanup_free_ char *buf = NULL;
        size_t n = 0, cap = 0;
        int fd, r;

        fd = open_regular(path);
        if (fd < 0)
                return fd;
        for (;;) {
                ssize_t k;
                if (n + 4096 + 1 > cap) {
                        char *p;
                        cap = n + 4096 + 1;
                        p = realloc(buf, cap);
                        if (!p) {
                                close(fd);
                                return -ENOMEM;
                        }
                        buf = p;
                }
                k = read(fd, buf + n, cap - n - 1);
                if (k < 0) {
                        r = -errno;
                        close(fd);
                        return r;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > DNS_RESOLV_CONF_MAX) {
                        close(fd);
                        return -EFBIG;
                }
        }
        close(fd);
        buf[n] = 0;
        return dns_parse_resolv_conf(buf, servers, searches, options);
}

/* formDNSSearchFitsLimits: 32 paths, none over 253 characters, a line of at most 2048 */
static int search_fits_limits(char ***searches, const struct kc_build_context *ctx) {
        char **s = *searches;
        size_t n = strv_length(s), total = 0;
        bool exceeded = false;

        while (n > 32) {
                strv_remove_at(s, --n);
                exceeded = true;
        }
        for (size_t i = 0; i < n;) {
                if (strlen(s[i]) > 253) {
                        strv_remove_at(s, i);
                        n--;
                        exceeded = true;
                } else
                        i++;
        }
        for (size_t i = 0; i < n; i++)
                total += strlen(s[i]) + (i > 0);
        if (total > 2048) {
                while (n > 0 && total > 2048) {
                        total -= strlen(s[n - 1]) + (n > 1);
                        strv_remove_at(s, --n);
                }
                exceeded = true;
        }
        if (exceeded) {
                _cleanup_free_ char *line = strv_join(s, " "), *msg = NULL;
                if (!line || asprintf(&msg,
                                      "Search Line limits were exceeded, some search paths have been omitted, "
                                      "the applied search line is: %s",
                                      line) < 0) {
                        msg = NULL;
                        return -ENOMEM;
                }
                return kc_build_report_event(ctx->report, "DNSConfigForming", msg);
        }
        return 0;
}

static int servers_fit_limits(char **servers, const struct kc_build_context *ctx) {
        size_t n = strv_length(servers);
        _cleanup_free_ char *line = NULL, *msg = NULL;

        if (n <= 3)
                return 0;
        while (n > 3)
                strv_remove_at(servers, --n);
        line = strv_join(servers, " ");
        if (!line || asprintf(&msg,
                              "Nameserver limits were exceeded, some nameservers have been omitted, the "
                              "applied nameserver line is: %s",
                              line) < 0) {
                msg = NULL;
                return -ENOMEM;
        }
        return kc_build_report_event(ctx->report, "DNSConfigForming", msg);
}

enum dns_type { DNS_CLUSTER, DNS_HOST, DNS_NONE };

int dns_pod_config(const struct pod *pod, const struct kc_build_context *ctx, Runtime__V1__DNSConfig **ret) {
        _cleanup_strv_free_ char **servers = NULL, **searches = NULL, **options = NULL;
        const char *policy = pod->spec.dns_policy ? pod->spec.dns_policy : "ClusterFirst";
        const struct pod_dns_config *pd = pod->spec.dns_config;
        Runtime__V1__DNSConfig *d;
        enum dns_type type;
        int r = 0;

        if (!isempty(ctx->resolv_conf)) {
                r = read_resolv_conf(ctx->resolv_conf, &servers, &searches, &options);
                if (r < 0)
                        return ck_error_set(ctx->report ? &ctx->report->error : NULL, r,
                                            "cannot read --resolv-conf %s: %s", ctx->resolv_conf, strerror(-r));
        }
        /* getPodDNSType */
        if (streq(policy, "None"))
                type = DNS_NONE;
        else if (streq(policy, "ClusterFirstWithHostNet"))
                type = DNS_CLUSTER;
        else if (streq(policy, "Default") || (streq(policy, "ClusterFirst") && pod->spec.host_network))
                type = DNS_HOST;
        else
                type = DNS_CLUSTER;

        if (type == DNS_NONE) {
                servers = strv_free(servers);
                searches = strv_free(searches);
                options = strv_free(options);
        } else if (type == DNS_CLUSTER && ctx->cluster_dns && ctx->cluster_dns[0]) {
                _cleanup_strv_free_ char **s = NULL;
                servers = strv_free(servers);
                for (size_t i = 0; r >= 0 && ctx->cluster_dns[i]; i++)
                        r = strv_extend(&servers, ctx->cluster_dns[i]);
                if (r >= 0 && !isempty(ctx->cluster_domain)) {
                        _cleanup_free_ char *ns = NULL, *svc = NULL;
                        if (asprintf(&ns, "%s.svc.%s", pod->namespace_, ctx->cluster_domain) < 0 ||
                            asprintf(&svc, "svc.%s", ctx->cluster_domain) < 0)
                                return -ENOMEM;
                        r = strv_add_unique(&s, ns);
                        if (r >= 0)
                                r = strv_add_unique(&s, svc);
                        if (r >= 0)
                                r = strv_add_unique(&s, ctx->cluster_domain);
                        for (size_t i = 0; r >= 0 && searches && searches[i]; i++)
                                r = strv_add_unique(&s, searches[i]);
                        if (r >= 0) {
                                strv_free(searches);
                                searches = TAKE_PTR(s);
                        }
                }
                options = strv_free(options);
                if (r >= 0)
                        r = strv_extend(&options, "ndots:5");
                if (r < 0)
                        return r;
        } else {
                if (type == DNS_CLUSTER) {
                        _cleanup_free_ char *msg = NULL;
                        if (asprintf(&msg,
                                     "pod: \"%s_%s(%s)\". kubelet does not have ClusterDNS IP configured and "
                                     "cannot create Pod using \"ClusterFirst\" policy. Falling back to "
                                     "\"Default\" policy.",
                                     pod->name, pod->namespace_, pod->uid) < 0)
                                return -ENOMEM;
                        r = kc_build_report_event(ctx->report, "MissingClusterDNS", msg);
                        if (r < 0)
                                return r;
                }
                if (isempty(ctx->resolv_conf)) {
                        /* no resolv.conf: effectively no DNS (the local machine's resolver) */
                        servers = strv_free(servers);
                        searches = strv_free(searches);
                        r = strv_extend(&servers, ctx->node_ip && strchr(ctx->node_ip, ':') ? "::1" : "127.0.0.1");
                        if (r >= 0)
                                r = strv_extend(&searches, ".");
                        if (r < 0)
                                return r;
                }
        }

        /* appendDNSConfig */
        if (pd) {
                for (size_t i = 0; r >= 0 && pd->nameservers && pd->nameservers[i]; i++)
                        r = strv_add_unique(&servers, pd->nameservers[i]);
                for (size_t i = 0; r >= 0 && pd->searches && pd->searches[i]; i++)
                        r = strv_add_unique(&searches, pd->searches[i]);
                for (size_t i = 0; r >= 0 && i < pd->n_options; i++) {
                        const struct pod_dns_option *o = &pd->options[i];
                        _cleanup_free_ char *opt = NULL;
                        size_t nl = strlen(strempty(o->name));
                        for (size_t j = 0; options && options[j]; j++)
                                if (strncmp(options[j], strempty(o->name), nl) == 0 &&
                                    (options[j][nl] == 0 || options[j][nl] == ':')) {
                                        strv_remove_at(options, j);
                                        break;
                                }
                        if (asprintf(&opt, "%s%s%s", strempty(o->name), isempty(o->value) ? "" : ":",
                                     strempty(o->value)) < 0) {
                                opt = NULL;
                                return -ENOMEM;
                        }
                        r = strv_extend(&options, opt);
                }
                if (r < 0)
                        return r;
        }
        r = servers_fit_limits(servers, ctx);
        if (r >= 0 && searches)
                r = search_fits_limits(&searches, ctx);
        if (r < 0)
                return r;

        d = malloc(sizeof(*d));
        if (!d)
                return -ENOMEM;
        *d = (Runtime__V1__DNSConfig) RUNTIME__V1__DNSCONFIG__INIT;
        r = pb_strv_copy(servers, &d->n_servers, &d->servers);
        if (r >= 0)
                r = pb_strv_copy(searches, &d->n_searches, &d->searches);
        if (r >= 0)
                r = pb_strv_copy(options, &d->n_options, &d->options);
        if (r < 0) {
                pb_free(d);
                return r;
        }
        *ret = d;
        return 0;
}
