/* SPDX-License-Identifier: Apache-2.0 */
/* Decoding and validation of a pod's spec.dnsConfig (nameservers, searches, options; k8s.io/api/core/v1
 * PodDNSConfig), with the apiserver's wording (pkg/apis/core/validation validatePodDNSConfig). */

#include <arpa/inet.h>
#include <string.h>

#include "apis/apis-internal.h"
#include "basic/string.h"
#include "basic/strv.h"

void pod_dns_config_free(struct pod_dns_config *d) {
        if (!d)
                return;
        strv_free(d->nameservers);
        strv_free(d->searches);
        for (size_t i = 0; i < d->n_options; i++) {
                free(d->options[i].name);
                free(d->options[i].value);
        }
        free(d->options);
        free(d);
}

static int decode_dns_option(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct pod_dns_option *o = item;
        int r = dec_get_string(e, v, ip, "name", &o->name);
        if (r >= 0)
                r = dec_get_string(e, v, ip, "value", &o->value);
        return r;
}

int dec_pod_dns_config(struct field_errors *e, json_t *spec, struct pod_spec *ret) {
        static const char p[] = "spec.dnsConfig";
        struct pod_dns_config *d;
        json_t *o;
        int r;

        r = dec_get_object(e, spec, "spec", "dnsConfig", &o);
        if (r < 0 || !o)
                return r;
        d = ret->dns_config = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        r = dec_get_strv(e, o, p, "nameservers", &d->nameservers);
        if (r >= 0)
                r = dec_get_strv(e, o, p, "searches", &d->searches);
        if (r >= 0)
                r = dec_object_list(e, o, p, "options", sizeof(struct pod_dns_option), (void **) &d->options,
                                    &d->n_options, decode_dns_option);
        return r;
}

/* Go's %#v of a []string, as field.Invalid prints a list value */
static char *go_strv_literal(char *const *l) {
        char *s = strdup("[]string{"), *n;
        for (size_t i = 0; s && l && l[i]; i++) {
                _cleanup_free_ char *q = go_quote(l[i]);
                if (!q || asprintf(&n, "%s%s%s", s, i ? ", " : "", q) < 0)
                        n = NULL;
                free(s);
                s = n;
        }
        if (s && asprintf(&n, "%s}", s) >= 0) {
                free(s);
                return n;
        }
        free(s);
        return NULL;
}

/* validatePodDNSConfig (the dnsConfig values; the policy checks are in pod_validate.c) */
void val_pod_dns_config(struct vctx *c, const struct pod_spec *s) {
        const struct pod_dns_config *d = s->dns_config;
        size_t n, total = 0;

        if (!d)
                return;
        n = strv_length(d->nameservers);
        if (n > 3) {
                _cleanup_free_ char *v = go_strv_literal(d->nameservers);
                CHECK_OOM(c, v ? field_errors_add(c->errs, "spec.dnsConfig.nameservers",
                                                  "Invalid value: %s: must not have more than 3 nameservers", v)
                               : -ENOMEM);
        }
        for (size_t i = 0; i < n; i++) {
                unsigned char addr[16];
                _cleanup_free_ char *p = NULL;
                if (inet_pton(AF_INET, d->nameservers[i], addr) == 1 ||
                    inet_pton(AF_INET6, d->nameservers[i], addr) == 1)
                        continue;
                if (asprintf(&p, "spec.dnsConfig.nameservers[%zu]", i) < 0) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                val_invalid_str(c, p, d->nameservers[i],
                                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)");
        }
        n = strv_length(d->searches);
        for (size_t i = 0; i < n; i++)
                total += strlen(d->searches[i]) + (i > 0);
        if (n > 32 || total > 2048) {
                _cleanup_free_ char *v = go_strv_literal(d->searches);
                if (!v) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                if (n > 32)
                        CHECK_OOM(c, field_errors_add(c->errs, "spec.dnsConfig.searches",
                                                      "Invalid value: %s: must not have more than 32 search paths", v));
                if (total > 2048)
                        CHECK_OOM(c, field_errors_add(c->errs, "spec.dnsConfig.searches",
                                                      "Invalid value: %s: must not have more than 2048 characters "
                                                      "(including spaces) in the search list",
                                                      v));
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL, *trimmed = strdup(d->searches[i]);
                size_t l;
                if (!trimmed || asprintf(&p, "spec.dnsConfig.searches[%zu]", i) < 0) {
                        p = NULL;
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                l = strlen(trimmed);
                if (l > 0 && trimmed[l - 1] == '.')
                        trimmed[l - 1] = 0;
                val_check_name(c, p, trimmed, check_dns1123_subdomain);
        }
        for (size_t i = 0; i < d->n_options; i++) {
                _cleanup_free_ char *p = NULL;
                if (!isempty(d->options[i].name))
                        continue;
                if (asprintf(&p, "spec.dnsConfig.options[%zu]", i) < 0) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                val_required(c, p, "Option.Name must not be empty");
        }
}
