/* SPDX-License-Identifier: Apache-2.0 */
/* Pod validation: the subset of ValidatePodCreate (pkg/apis/core/validation) that covers the fields in struct
 * pod, in the same order and with the same wording, e.g.
 *   metadata.name: Invalid value: "Foo": a lowercase RFC 1123 subdomain must consist of ...
 *   spec.containers[1].name: Duplicate value: "app"
 * Differences from upstream: a negative terminationGracePeriodSeconds is refused (upstream's registry
 * silently changes it to 1); map keys (labels, resources) are visited in document order, not Go's random
 * map order. */
#include <inttypes.h>
#include <string.h>

#include "apis/apis-internal.h"
#include "apis/pod.h"
#include "apis/pod_volumes.h"
#include "apis/resource.h"
#include "basic/string.h"
#include "basic/strmap.h"
#include "basic/strv.h"

#define TOTAL_ANNOTATION_SIZE_LIMIT (256 * 1024)
#define MIRROR_POD_ANNOTATION "kubernetes.io/config.mirror"

void val_required(struct vctx *c, const char *path, const char *detail) {
        if (isempty(detail))
                CHECK_OOM(c, field_errors_add(c->errs, path, "Required value"));
        else
                CHECK_OOM(c, field_errors_add(c->errs, path, "Required value: %s", detail));
}

void val_invalid_str(struct vctx *c, const char *path, const char *value, const char *msg) {
        _cleanup_free_ char *q = go_quote(value);
        if (!q) {
                CHECK_OOM(c, -ENOMEM);
                return;
        }
        CHECK_OOM(c, field_errors_add(c->errs, path, "Invalid value: %s: %s", q, msg));
}

void val_invalid_int(struct vctx *c, const char *path, int64_t value, const char *msg) {
        CHECK_OOM(c, field_errors_add(c->errs, path, "Invalid value: %" PRId64 ": %s", value, msg));
}

void val_duplicate_str(struct vctx *c, const char *path, const char *value) {
        _cleanup_free_ char *q = go_quote(value);
        if (!q) {
                CHECK_OOM(c, -ENOMEM);
                return;
        }
        CHECK_OOM(c, field_errors_add(c->errs, path, "Duplicate value: %s", q));
}

void val_not_supported(struct vctx *c, const char *path, const char *value, const char *supported) {
        _cleanup_free_ char *q = go_quote(value);
        if (!q) {
                CHECK_OOM(c, -ENOMEM);
                return;
        }
        CHECK_OOM(c, field_errors_add(c->errs, path, "Unsupported value: %s: supported values: %s", q, supported));
}

/* Run a name check and report every message as Invalid(path, value, msg). */
void val_check_name(struct vctx *c, const char *path, const char *value,
                    size_t (*check)(const char *, const char * [static NAME_MAX_MSGS])) {
        const char *msgs[NAME_MAX_MSGS];
        size_t n = check(value, msgs);
        for (size_t i = 0; i < n; i++)
                val_invalid_str(c, path, value, msgs[i]);
}

/* Build a path and keep track of allocation failure; returns NULL (and records -ENOMEM) on failure. */
char *val_child(struct vctx *c, const char *parent, const char *name) {
        char *p = path_child(parent, name);
        if (!p)
                CHECK_OOM(c, -ENOMEM);
        return p;
}

char *val_idx(struct vctx *c, const char *parent, size_t i) {
        char *p = path_index(parent, i);
        if (!p)
                CHECK_OOM(c, -ENOMEM);
        return p;
}

static char *val_key(struct vctx *c, const char *parent, const char *k) {
        char *p = path_key(parent, k);
        if (!p)
                CHECK_OOM(c, -ENOMEM);
        return p;
}

/* ---- metadata ---- */

static void validate_metadata(struct vctx *c, const struct pod *p) {
        size_t total = 0;

        if (!isempty(p->generate_name)) {
                /* NameIsDNSSubdomain(prefix=true): a trailing '-' is allowed */
                _cleanup_free_ char *masked = strdup(p->generate_name);
                if (!masked) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                if (strlen(masked) > 1 && endswith(masked, "-"))
                        masked[strlen(masked) - 1] = 'a';
                const char *msgs[NAME_MAX_MSGS];
                size_t n = check_dns1123_subdomain(masked, msgs);
                for (size_t i = 0; i < n; i++)
                        val_invalid_str(c, "metadata.generateName", p->generate_name, msgs[i]);
        }
        if (isempty(p->name))
                val_required(c, "metadata.name", "name or generateName is required");
        else
                val_check_name(c, "metadata.name", p->name, check_dns1123_subdomain);

        if (!isempty(p->uid) && !pod_uid_is_valid(p->uid))
                val_invalid_str(c, "metadata.uid", p->uid, POD_UID_INVALID_MSG);

        if (isempty(p->namespace_))
                val_required(c, "metadata.namespace", NULL);
        else
                val_check_name(c, "metadata.namespace", p->namespace_, check_dns1123_label);

        for (size_t i = 0; i < p->labels.n; i++) {
                val_check_name(c, "metadata.labels", p->labels.keys[i], check_qualified_name);
                val_check_name(c, "metadata.labels", p->labels.values[i], check_label_value);
        }

        for (size_t i = 0; i < p->annotations.n; i++) {
                /* the rule is a qualified name, case-insensitively */
                _cleanup_free_ char *lower = strdup(p->annotations.keys[i]);
                const char *msgs[NAME_MAX_MSGS];
                size_t n;

                if (!lower) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                for (char *s = lower; *s; s++)
                        if (*s >= 'A' && *s <= 'Z')
                                *s = (char) (*s - 'A' + 'a');
                n = check_qualified_name(lower, msgs);
                for (size_t j = 0; j < n; j++)
                        val_invalid_str(c, "metadata.annotations", p->annotations.keys[i], msgs[j]);
                total += strlen(p->annotations.keys[i]) + strlen(p->annotations.values[i]);
        }
        if (total > TOTAL_ANNOTATION_SIZE_LIMIT)
                CHECK_OOM(c, field_errors_add(c->errs, "metadata.annotations",
                                              "Too long: may not be more than %d bytes", TOTAL_ANNOTATION_SIZE_LIMIT));

        /* ValidatePodSpecificAnnotations */
        const char *mirror = strmap_get(&p->annotations, MIRROR_POD_ANNOTATION);
        if (mirror && isempty(p->spec.node_name))
                val_invalid_str(c, "metadata.annotations[" MIRROR_POD_ANNOTATION "]", mirror,
                                "must set spec.nodeName if mirror pod annotation is set");
}

/* ---- containers ---- */

static void validate_ports(struct vctx *c, const struct container *ctr, const char *cpath) {
        _cleanup_free_ char *pp = val_child(c, cpath, "ports");
        if (!pp)
                return;
        for (size_t i = 0; i < ctr->n_ports; i++) {
                const struct container_port *port = &ctr->ports[i];
                _cleanup_free_ char *ip = val_idx(c, pp, i), *np = NULL, *cp = NULL, *hp = NULL, *pr = NULL;
                if (!ip)
                        return;
                np = val_child(c, ip, "name");
                cp = val_child(c, ip, "containerPort");
                hp = val_child(c, ip, "hostPort");
                pr = val_child(c, ip, "protocol");
                if (!np || !cp || !hp || !pr)
                        return;

                if (!isempty(port->name)) {
                        const char *msgs[NAME_MAX_MSGS];
                        size_t n = check_iana_svc_name(port->name, msgs);
                        bool dup = false;
                        for (size_t j = 0; j < n; j++)
                                val_invalid_str(c, np, port->name, msgs[j]);
                        for (size_t j = 0; n == 0 && j < i; j++)
                                if (ctr->ports[j].name && streq(ctr->ports[j].name, port->name) &&
                                    check_iana_svc_name(ctr->ports[j].name, msgs) == 0)
                                        dup = true;
                        if (dup)
                                val_duplicate_str(c, np, port->name);
                }
                if (port->container_port == 0)
                        val_required(c, cp, NULL);
                else if (port->container_port < 1 || port->container_port > 65535)
                        val_invalid_int(c, cp, port->container_port, "must be between 1 and 65535, inclusive");
                if (port->host_port != 0 && (port->host_port < 1 || port->host_port > 65535))
                        val_invalid_int(c, hp, port->host_port, "must be between 1 and 65535, inclusive");
                if (isempty(port->protocol))
                        val_required(c, pr, NULL);
                else if (!streq(port->protocol, "TCP") && !streq(port->protocol, "UDP") &&
                         !streq(port->protocol, "SCTP"))
                        val_not_supported(c, pr, port->protocol, "\"SCTP\", \"TCP\", \"UDP\"");
        }
}

static void validate_env(struct vctx *c, const struct container *ctr, const char *cpath) {
        _cleanup_free_ char *ep = val_child(c, cpath, "env");
        if (!ep)
                return;
        for (size_t i = 0; i < ctr->n_env; i++) {
                const struct env_var *ev = &ctr->env[i];
                _cleanup_free_ char *ip = val_idx(c, ep, i), *np = NULL, *vp = NULL;
                if (!ip)
                        return;
                np = val_child(c, ip, "name");
                vp = val_child(c, ip, "valueFrom");
                if (!np || !vp)
                        return;
                if (isempty(ev->name))
                        val_required(c, np, NULL);
                else
                        val_check_name(c, np, ev->name, check_relaxed_env_var_name);
                val_env_value_from(c, ev, vp);
        }
}

/* helper.IsNativeResource: no domain, or a kubernetes.io domain */
static bool is_native_resource(const char *name) {
        return !strchr(name, '/') || strstr(name, "kubernetes.io/");
}

static bool is_hugepages(const char *name) {
        return startswith(name, "hugepages-");
}

bool resource_is_extended(const char *name) {
        _cleanup_free_ char *quota = NULL;
        const char *msgs[NAME_MAX_MSGS];

        if (is_native_resource(name) || startswith(name, "requests."))
                return false;
        if (asprintf(&quota, "requests.%s", name) < 0)
                return false;
        return check_qualified_name(quota, msgs) == 0;
}

static bool is_standard_resource(const char *name) {
        static const char *const standard[] = {
                "cpu",
                "memory",
                "ephemeral-storage",
                "requests.cpu",
                "requests.memory",
                "requests.ephemeral-storage",
                "limits.cpu",
                "limits.memory",
                "limits.ephemeral-storage",
                "pods",
                "quotas",
                "services",
                "replicationcontrollers",
                "resourcequotas",
                "secrets",
                "configmaps",
                "persistentvolumeclaims",
                "storage",
                "requests.storage",
                "services.nodeports",
                "services.loadbalancers",
        };
        for (size_t i = 0; i < ELEMENTSOF(standard); i++)
                if (streq(standard[i], name))
                        return true;
        return is_hugepages(name) || startswith(name, "requests.hugepages-");
}

static bool is_integer_resource(const char *name) {
        static const char *const integer[] = {
                "pods",
                "quotas",
                "services",
                "replicationcontrollers",
                "secrets",
                "configmaps",
                "persistentvolumeclaims",
                "services.nodeports",
                "services.loadbalancers",
        };
        for (size_t i = 0; i < ELEMENTSOF(integer); i++)
                if (streq(integer[i], name))
                        return true;
        return resource_is_extended(name);
}

/* validateResourceName; false when it reported an error */
static bool validate_base_resource_name(struct vctx *c, const char *path, const char *name) {
        const char *msgs[NAME_MAX_MSGS];
        size_t n = check_qualified_name(name, msgs);

        for (size_t i = 0; i < n; i++)
                val_invalid_str(c, path, name, msgs[i]);
        if (n > 0)
                return false;
        if (!strchr(name, '/') && !is_standard_resource(name)) {
                val_invalid_str(c, path, name, "must be a standard resource type or fully qualified");
                return false;
        }
        return true;
}

/* validatePodResourceName: a resource that pod-level resources support */
static void validate_pod_resource_name(struct vctx *c, const char *path, const char *name) {
        if (validate_base_resource_name(c, path, name) && !resource_is_pod_level_supported(name))
                val_not_supported(c, path, name, "\"cpu\", \"hugepages-\", \"memory\"");
}

static void validate_resource_name(struct vctx *c, const char *path, const char *name) {
        validate_base_resource_name(c, path, name);
        /* validateContainerResourceName */
        if (!strchr(name, '/')) {
                if (!streq(name, "cpu") && !streq(name, "memory") && !streq(name, "ephemeral-storage") &&
                    !is_hugepages(name))
                        val_invalid_str(c, path, name, "must be a standard resource for containers");
        } else if (!is_native_resource(name) && !resource_is_extended(name))
                val_invalid_str(c, path, name, "doesn't follow extended resource name standard");
}

static void invalid_quantity(struct vctx *c, const char *path, const struct quantity *q, const char *msg) {
        _cleanup_free_ char *s = quantity_canonical(q);
        val_invalid_str(c, path, s ? s : q->str, msg);
}

static void validate_quantity_value(struct vctx *c, const char *path, const char *name, const struct quantity *q) {
        struct quantity zero = { .str = (char *) "0" };
        if (quantity_cmp(q, &zero) < 0)
                invalid_quantity(c, path, q, "must be greater than or equal to 0");
        if (is_integer_resource(name) && q->milli % 1000 != 0)
                invalid_quantity(c, path, q, "must be an integer");
}

/* validateResourceRequirements, with the container's or (pod_level) the pod's resource names */
static void validate_resource_requirements(struct vctx *c, const struct resource_requirements *res, const char *rp,
                                           bool pod_level) {
        void (*validate_name)(struct vctx *, const char *, const char *) = pod_level ? validate_pod_resource_name
                                                                                     : validate_resource_name;
        bool cpu_or_memory = false, hugepages = false;
        _cleanup_free_ char *lp = NULL, *qp = NULL;

        lp = val_child(c, rp, "limits");
        qp = val_child(c, rp, "requests");
        if (!lp || !qp)
                return;
        for (size_t i = 0; i < res->limits.n; i++) {
                _cleanup_free_ char *kp = val_key(c, lp, res->limits.names[i]);
                if (!kp)
                        return;
                validate_name(c, kp, res->limits.names[i]);
                validate_quantity_value(c, kp, res->limits.names[i], &res->limits.values[i]);
                hugepages = hugepages || is_hugepages(res->limits.names[i]);
                cpu_or_memory = cpu_or_memory || streq(res->limits.names[i], "cpu") ||
                                streq(res->limits.names[i], "memory");
        }
        for (size_t i = 0; i < res->requests.n; i++) {
                const char *name = res->requests.names[i];
                const struct quantity *q = &res->requests.values[i], *lim;
                _cleanup_free_ char *kp = val_key(c, qp, name);
                bool overcommit = is_native_resource(name) && !is_hugepages(name);

                if (!kp)
                        return;
                validate_name(c, kp, name);
                validate_quantity_value(c, kp, name, q);
                hugepages = hugepages || is_hugepages(name);
                cpu_or_memory = cpu_or_memory || streq(name, "cpu") || streq(name, "memory");
                lim = resource_list_get(&res->limits, name);
                if (lim) {
                        _cleanup_free_ char *ls = quantity_canonical(lim), *msg = NULL;
                        int cmp = quantity_cmp(q, lim);
                        if (!ls) {
                                CHECK_OOM(c, -ENOMEM);
                                return;
                        }
                        if (cmp != 0 && !overcommit) {
                                if (asprintf(&msg, "must be equal to %s limit of %s", name, ls) < 0) {
                                        CHECK_OOM(c, -ENOMEM);
                                        return;
                                }
                                invalid_quantity(c, qp, q, msg);
                        } else if (cmp > 0) {
                                if (asprintf(&msg, "must be less than or equal to %s limit of %s", name, ls) < 0) {
                                        CHECK_OOM(c, -ENOMEM);
                                        return;
                                }
                                invalid_quantity(c, qp, q, msg);
                        }
                } else if (!overcommit)
                        val_required(c, lp, "Limit must be set for non overcommitable resources");
        }
        if (hugepages && !cpu_or_memory)
                val_forbidden(c, rp, "HugePages require cpu or memory");
}

static void validate_resources(struct vctx *c, const struct container *ctr, const char *cpath) {
        _cleanup_free_ char *rp = val_child(c, cpath, "resources");
        if (rp)
                validate_resource_requirements(c, &ctr->resources, rp, false);
}

/* validateResizePolicy */
static void validate_resize_policy(struct vctx *c, const struct container *ctr, const char *cpath,
                                   enum restart_policy pod_policy) {
        _cleanup_free_ char *pp = NULL;

        if (ctr->n_resize_policy == 0)
                return;
        pp = val_child(c, cpath, "resizePolicy");
        if (!pp)
                return;
        for (size_t i = 0; i < ctr->n_resize_policy; i++) {
                const struct container_resize_policy *p = &ctr->resize_policy[i];
                const char *name = strempty(p->resource_name), *policy = strempty(p->restart_policy);

                for (size_t j = 0; j < i; j++)
                        if (streq(strempty(ctr->resize_policy[j].resource_name), name)) {
                                _cleanup_free_ char *ip = val_idx(c, pp, i);
                                if (ip)
                                        val_duplicate_str(c, ip, name);
                                break;
                        }
                if (isempty(name))
                        val_required(c, pp, NULL);
                else if (!streq(name, "cpu") && !streq(name, "memory"))
                        val_not_supported(c, pp, name, "\"cpu\", \"memory\"");
                if (isempty(policy))
                        val_required(c, pp, NULL);
                else if (!streq(policy, "NotRequired") && !streq(policy, "RestartContainer"))
                        val_not_supported(c, pp, policy, "\"NotRequired\", \"RestartContainer\"");
                if (pod_policy == RESTART_POLICY_NEVER && !streq(policy, "NotRequired"))
                        val_invalid_str(c, pp, policy, "must be 'NotRequired' when `restartPolicy` is 'Never'");
        }
}

static void validate_container_common(struct vctx *c, const struct container *ctr, const char *cpath) {
        _cleanup_free_ char *np = val_child(c, cpath, "name"), *ip = val_child(c, cpath, "image"),
                            *pp = val_child(c, cpath, "imagePullPolicy");
        if (!np || !ip || !pp)
                return;
        if (isempty(ctr->name))
                val_required(c, np, NULL);
        else
                val_check_name(c, np, ctr->name, check_dns1123_label);
        if (isempty(ctr->image))
                val_required(c, ip, NULL);
        validate_ports(c, ctr, cpath);
        validate_env(c, ctr, cpath);
        val_env_from(c, ctr, cpath);
        val_container_security_context(c, ctr, cpath);
        if (ctr->image_pull_policy == PULL_POLICY_UNSET)
                val_required(c, pp, NULL);
        validate_resources(c, ctr, cpath);
        validate_resize_policy(c, ctr, cpath, c->restart_policy);
}

/* AccumulateUniqueHostPorts over containers[from, to) */
static void check_host_port_conflicts(struct vctx *c, const struct container *ctrs, size_t from, size_t to,
                                      const char *lpath) {
        for (size_t ci = from; ci < to; ci++)
                for (size_t pi = 0; pi < ctrs[ci].n_ports; pi++) {
                        const struct container_port *p = &ctrs[ci].ports[pi];
                        bool dup = false;

                        if (p->host_port == 0)
                                continue;
                        for (size_t cj = from; !dup && cj <= ci; cj++)
                                for (size_t pj = 0; pj < ctrs[cj].n_ports && !(cj == ci && pj >= pi); pj++) {
                                        const struct container_port *o = &ctrs[cj].ports[pj];
                                        if (o->host_port == p->host_port &&
                                            streq(strempty(o->protocol), strempty(p->protocol)) &&
                                            streq(strempty(o->host_ip), strempty(p->host_ip))) {
                                                dup = true;
                                                break;
                                        }
                                }
                        if (dup) {
                                _cleanup_free_ char *s = NULL, *path = NULL;
                                if (asprintf(&s, "%s/%s/%" PRId32, strempty(p->protocol), strempty(p->host_ip),
                                             p->host_port) < 0 ||
                                    asprintf(&path, "%s[%zu].ports[%zu].hostPort", lpath, ci, pi) < 0) {
                                        CHECK_OOM(c, -ENOMEM);
                                        return;
                                }
                                val_duplicate_str(c, path, s);
                        }
                }
}

/* ---- probes ---- */

void val_forbidden(struct vctx *c, const char *path, const char *detail) {
        CHECK_OOM(c, field_errors_add(c->errs, path, "Forbidden: %s", detail));
}

static void val_nonnegative(struct vctx *c, const char *parent, const char *name, int64_t v) {
        _cleanup_free_ char *p = NULL;
        if (v >= 0)
                return;
        p = val_child(c, parent, name);
        if (p)
                val_invalid_int(c, p, v, "must be greater than or equal to 0");
}

/* validatePortNumOrName */
void val_port_num_or_name(struct vctx *c, const struct int_or_string *port, const char *path) {
        if (!port->is_string) {
                if (port->int_val < 1 || port->int_val > 65535)
                        val_invalid_int(c, path, port->int_val, "must be between 1 and 65535, inclusive");
        } else if (isempty(port->str_val))
                val_required(c, path, NULL);
        else
                val_check_name(c, path, port->str_val, check_iana_svc_name);
}

static bool is_http_header_name(const char *s) {
        if (isempty(s))
                return false;
        for (; *s; s++)
                if (!(*s == '-' || (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
                        return false;
        return true;
}

/* validateHTTPGetAction: probes and lifecycle hooks */
void val_http_get(struct vctx *c, const struct probe *p, const char *hp) {
        _cleanup_free_ char *pathp = val_child(c, hp, "path"), *portp = val_child(c, hp, "port"),
                            *schemep = val_child(c, hp, "scheme"), *headersp = val_child(c, hp, "httpHeaders");
        if (!pathp || !portp || !schemep || !headersp)
                return;
        if (isempty(p->path))
                val_required(c, pathp, NULL);
        val_port_num_or_name(c, &p->port, portp);
        if (!p->scheme || (!streq(p->scheme, "HTTP") && !streq(p->scheme, "HTTPS")))
                val_not_supported(c, schemep, strempty(p->scheme), "\"HTTP\", \"HTTPS\"");
        for (size_t i = 0; i < p->n_http_headers; i++) {
                _cleanup_free_ char *ip = val_idx(c, headersp, i), *np = NULL;
                if (!ip || !(np = val_child(c, ip, "name")))
                        return;
                if (!is_http_header_name(p->http_headers[i].name))
                        val_invalid_str(c, np, strempty(p->http_headers[i].name),
                                        "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. "
                                        "'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')");
        }
}

/* validateProbe + validateHandler; kind: "livenessProbe", "readinessProbe", "startupProbe" */
static void validate_probe(struct vctx *c, const struct probe *p, const char *cpath, const char *kind) {
        static const char *const handler_names[] = {
                [PROBE_HANDLER_EXEC] = "exec",
                [PROBE_HANDLER_HTTP_GET] = "httpGet",
                [PROBE_HANDLER_TCP_SOCKET] = "tcpSocket",
                [PROBE_HANDLER_GRPC] = "grpc",
        };
        _cleanup_free_ char *pp = NULL, *hp = NULL;

        if (!p)
                return;
        pp = val_child(c, cpath, kind);
        if (!pp)
                return;
        if (p->n_handlers == 0) {
                val_required(c, pp, "must specify a handler type");
        } else {
                hp = val_child(c, pp, handler_names[p->handler]);
                if (!hp)
                        return;
                if (p->n_handlers > 1)
                        val_forbidden(c, pp, "may not specify more than 1 handler type");
                switch (p->handler) {
                case PROBE_HANDLER_EXEC:
                        if (strv_length(p->exec_command) == 0) {
                                _cleanup_free_ char *cmdp = val_child(c, hp, "command");
                                if (cmdp)
                                        val_required(c, cmdp, NULL);
                        }
                        break;
                case PROBE_HANDLER_HTTP_GET:
                        val_http_get(c, p, hp);
                        break;
                case PROBE_HANDLER_TCP_SOCKET: {
                        _cleanup_free_ char *portp = val_child(c, hp, "port");
                        if (portp)
                                val_port_num_or_name(c, &p->port, portp);
                        break;
                }
                case PROBE_HANDLER_GRPC:
                        if (p->grpc_port < 1 || p->grpc_port > 65535) {
                                _cleanup_free_ char *portp = val_child(c, hp, "port");
                                if (portp)
                                        val_invalid_int(c, portp, p->grpc_port,
                                                        "must be between 1 and 65535, inclusive");
                        }
                        break;
                default:
                        break;
                }
        }
        val_nonnegative(c, pp, "initialDelaySeconds", p->initial_delay_seconds);
        val_nonnegative(c, pp, "timeoutSeconds", p->timeout_seconds);
        val_nonnegative(c, pp, "periodSeconds", p->period_seconds);
        val_nonnegative(c, pp, "successThreshold", p->success_threshold);
        val_nonnegative(c, pp, "failureThreshold", p->failure_threshold);
        if (p->has_termination_grace_period) {
                _cleanup_free_ char *gp = val_child(c, pp, "terminationGracePeriodSeconds");
                if (gp && streq(kind, "readinessProbe"))
                        val_invalid_int(c, gp, p->termination_grace_period_seconds,
                                        "must not be set for readinessProbes");
                else if (gp && p->termination_grace_period_seconds <= 0)
                        val_invalid_int(c, gp, p->termination_grace_period_seconds, "must be greater than 0");
        }
        if (!streq(kind, "readinessProbe") && p->success_threshold != 1) {
                _cleanup_free_ char *sp = val_child(c, pp, "successThreshold");
                if (sp)
                        val_invalid_int(c, sp, p->success_threshold, "must be 1");
        }
}

static void validate_probes(struct vctx *c, const struct container *ctr, const char *cpath) {
        validate_probe(c, ctr->liveness_probe, cpath, "livenessProbe");
        validate_probe(c, ctr->readiness_probe, cpath, "readinessProbe");
        validate_probe(c, ctr->startup_probe, cpath, "startupProbe");
}

/* Init containers without restartPolicy Always (sidecars) may not have probes. */
static void forbid_probes(struct vctx *c, const struct container *ctr, const char *cpath) {
        const struct {
                const struct probe *p;
                const char *name;
        } probes[] = {
                { ctr->liveness_probe, "livenessProbe" },
                { ctr->readiness_probe, "readinessProbe" },
                { ctr->startup_probe, "startupProbe" },
        };
        for (size_t i = 0; i < ELEMENTSOF(probes); i++)
                if (probes[i].p) {
                        _cleanup_free_ char *pp = val_child(c, cpath, probes[i].name);
                        if (pp)
                                val_forbidden(c, pp, "may not be set for init containers without restartPolicy=Always");
                }
}

static void validate_containers(struct vctx *c, const struct pod_spec *s) {
        if (s->n_containers == 0) {
                val_required(c, "spec.containers", NULL);
                return;
        }
        for (size_t i = 0; i < s->n_containers; i++) {
                _cleanup_free_ char *cp = val_idx(c, "spec.containers", i), *np = NULL;
                if (!cp)
                        return;
                validate_container_common(c, &s->containers[i], cp);
                validate_probes(c, &s->containers[i], cp);
                for (size_t j = 0; j < i; j++)
                        if (streq(strempty(s->containers[j].name), strempty(s->containers[i].name))) {
                                np = val_child(c, cp, "name");
                                if (np)
                                        val_duplicate_str(c, np, strempty(s->containers[i].name));
                                break;
                        }
        }
        check_host_port_conflicts(c, s->containers, 0, s->n_containers, "spec.containers");
}

static void validate_init_containers(struct vctx *c, const struct pod_spec *s) {
        for (size_t i = 0; i < s->n_init_containers; i++) {
                const struct container *ctr = &s->init_containers[i];
                _cleanup_free_ char *cp = val_idx(c, "spec.initContainers", i);
                bool dup = false;

                if (!cp)
                        return;
                validate_container_common(c, ctr, cp);
                if (container_is_sidecar(ctr))
                        validate_probes(c, ctr, cp);
                else
                        forbid_probes(c, ctr, cp);
                /* names are unique across regular and init containers */
                for (size_t j = 0; !dup && j < s->n_containers; j++)
                        dup = streq(strempty(s->containers[j].name), strempty(ctr->name));
                for (size_t j = 0; !dup && j < i; j++)
                        dup = !isempty(s->init_containers[j].name) &&
                              streq(s->init_containers[j].name, strempty(ctr->name));
                if (dup) {
                        _cleanup_free_ char *np = val_child(c, cp, "name");
                        if (np)
                                val_duplicate_str(c, np, strempty(ctr->name));
                }
                /* init containers run one by one: conflicts only within one */
                check_host_port_conflicts(c, s->init_containers, i, i + 1, "spec.initContainers");
                if (ctr->n_resize_policy > 0 && !container_is_sidecar(ctr)) {
                        _cleanup_free_ char *rp = val_child(c, cp, "resizePolicy");
                        _cleanup_free_ char *v = json_dumps(json_object_get(ctr->raw, "resizePolicy"),
                                                            JSON_COMPACT | JSON_ENCODE_ANY);
                        if (rp && v)
                                CHECK_OOM(c, field_errors_add(c->errs, rp,
                                                              "Invalid value: %s: must not be set for init containers",
                                                              v));
                }
        }
}

/* validateEphemeralContainers: names unique across all containers, the target a regular or init container, and
 * only the fields of allowedEphemeralContainerFields */
static void validate_ephemeral_containers(struct vctx *c, const struct pod_spec *s) {
        static const char *const forbidden[] = { "ports",          "resources",     "livenessProbe",
                                                 "readinessProbe", "startupProbe",  "lifecycle",
                                                 "resizePolicy",   "restartPolicy", "restartPolicyRules" };

        for (size_t i = 0; i < s->n_ephemeral_containers; i++) {
                const struct container *ec = &s->ephemeral_containers[i];
                _cleanup_free_ char *cp = val_idx(c, "spec.ephemeralContainers", i);
                bool dup = false, target = false;

                if (!cp)
                        return;
                validate_container_common(c, ec, cp);
                for (size_t j = 0; j < s->n_containers; j++) {
                        dup = dup || streq(strempty(s->containers[j].name), strempty(ec->name));
                        target = target || streq(strempty(s->containers[j].name), strempty(ec->target_container_name));
                }
                for (size_t j = 0; j < s->n_init_containers; j++) {
                        dup = dup || streq(strempty(s->init_containers[j].name), strempty(ec->name));
                        target = target ||
                                 streq(strempty(s->init_containers[j].name), strempty(ec->target_container_name));
                }
                for (size_t j = 0; j < i; j++)
                        dup = dup || streq(strempty(s->ephemeral_containers[j].name), strempty(ec->name));
                if (dup) {
                        _cleanup_free_ char *np = val_child(c, cp, "name");
                        if (np)
                                val_duplicate_str(c, np, strempty(ec->name));
                }
                if (!isempty(ec->target_container_name) && !target) {
                        _cleanup_free_ char *tp = val_child(c, cp, "targetContainerName");
                        _cleanup_free_ char *q = go_quote(ec->target_container_name);
                        if (tp && q)
                                CHECK_OOM(c, field_errors_add(c->errs, tp, "Not found: %s", q));
                }
                for (size_t j = 0; j < ELEMENTSOF(forbidden); j++) {
                        json_t *v = json_object_get(ec->raw, forbidden[j]);
                        if (v && !json_is_null(v) && !(json_is_array(v) && json_array_size(v) == 0) &&
                            !(json_is_object(v) && json_object_size(v) == 0)) {
                                _cleanup_free_ char *fp = val_child(c, cp, forbidden[j]);
                                if (fp)
                                        val_forbidden(c, fp, "cannot be set for an Ephemeral Container");
                        }
                }
                for (size_t j = 0; ec->raw && j < json_array_size(json_object_get(ec->raw, "volumeMounts")); j++) {
                        json_t *vm = json_array_get(json_object_get(ec->raw, "volumeMounts"), j);
                        static const char *const sub[] = { "subPath", "subPathExpr" };
                        for (size_t k = 0; k < ELEMENTSOF(sub); k++)
                                if (!isempty(json_string_value(json_object_get(vm, sub[k])))) {
                                        _cleanup_free_ char *fp = NULL;
                                        if (asprintf(&fp, "%s.volumeMounts[%zu].%s", cp, j, sub[k]) < 0) {
                                                CHECK_OOM(c, -ENOMEM);
                                                return;
                                        }
                                        val_forbidden(c, fp, "cannot be set for an Ephemeral Container");
                                }
                }
        }
}

static void validate_host_network(struct vctx *c, const struct pod_spec *s) {
        if (!s->host_network)
                return;
        for (size_t i = 0; i < s->n_containers; i++)
                for (size_t j = 0; j < s->containers[i].n_ports; j++) {
                        const struct container_port *p = &s->containers[i].ports[j];
                        _cleanup_free_ char *path = NULL;
                        if (p->host_port == p->container_port)
                                continue;
                        if (asprintf(&path, "spec.containers[%zu].ports[%zu].hostPort", i, j) < 0) {
                                CHECK_OOM(c, -ENOMEM);
                                return;
                        }
                        val_invalid_int(c, path, p->host_port, "must match `containerPort` when `hostNetwork` is true");
                }
}

static void validate_dns(struct vctx *c, const struct pod *p) {
        const char *d = p->spec.dns_policy;
        json_t *cfg;

        if (isempty(d)) {
                val_required(c, "spec.dnsPolicy", NULL);
                return;
        }
        if (!streq(d, "ClusterFirstWithHostNet") && !streq(d, "ClusterFirst") && !streq(d, "Default") &&
            !streq(d, "None")) {
                val_not_supported(c, "spec.dnsPolicy", d,
                                  "\"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"");
                return;
        }
        if (!streq(d, "None"))
                return;
        cfg = json_object_get(json_object_get(p->raw, "spec"), "dnsConfig");
        if (!json_is_object(cfg))
                val_required(c, "spec.dnsConfig", "must provide `dnsConfig` when `dnsPolicy` is None");
        else if (json_array_size(json_object_get(cfg, "nameservers")) == 0)
                val_required(c, "spec.dnsConfig.nameservers",
                             "must provide at least one DNS nameserver when `dnsPolicy` is None");
}

static void validate_image_whitespace(struct vctx *c, const struct container *ctrs, size_t n, const char *lpath) {
        for (size_t i = 0; i < n; i++) {
                const char *img = ctrs[i].image;
                size_t len;
                _cleanup_free_ char *path = NULL;
                if (isempty(img))
                        continue;
                len = strlen(img);
                if (!strchr(" \t\n\r\v\f", img[0]) && !strchr(" \t\n\r\v\f", img[len - 1]))
                        continue;
                if (asprintf(&path, "%s[%zu].image", lpath, i) < 0) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                val_invalid_str(c, path, img, "must not have leading or trailing whitespace");
        }
}

/* an aggregate of container values as Quantity.String() prints it, in the format of the first container's value */
static char *aggregate_string(const struct pod *p, const char *name, bool limits, int64_t v) {
        static const char *const lists[] = { "containers", "initContainers" };
        bool binary = false;

        for (size_t k = 0; k < ELEMENTSOF(lists) && !binary; k++) {
                const struct container *cs = k == 0 ? p->spec.containers : p->spec.init_containers;
                size_t n = k == 0 ? p->spec.n_containers : p->spec.n_init_containers;
                for (size_t i = 0; i < n; i++) {
                        const struct quantity *q = resource_list_get(&cs[i].resources.limits, name);
                        if (!limits && resource_list_get(&cs[i].resources.requests, name))
                                q = resource_list_get(&cs[i].resources.requests, name);
                        if (q) {
                                binary = q->str && strchr(q->str, 'i');
                                break;
                        }
                }
        }
        if (streq(name, "cpu")) {
                _cleanup_free_ char *m = NULL;
                struct quantity q = {};
                if (asprintf(&m, "%" PRId64 "m", v) < 0)
                        return NULL;
                q.str = m;
                return quantity_canonical(&q);
        }
        return quantity_format_int(v, binary);
}

/* validatePodResources, validatePodResourceConsistency: spec.resources */
static void validate_pod_resources(struct vctx *c, const struct pod *p) {
        const struct resource_requirements *res = &p->spec.resources;

        if (!p->spec.has_resources)
                return;
        if (p->spec.resources_has_claims)
                val_forbidden(c, "spec.resources.claims", "claims may not be set for Resources at pod-level");
        validate_resource_requirements(c, res, "spec.resources", true);

        /* the pod-level requests at least the aggregate container requests */
        for (size_t i = 0; i < res->requests.n; i++) {
                const char *name = res->requests.names[i];
                bool found;
                int64_t agg = resource_aggregate_containers(p, name, false, &found);
                _cleanup_free_ char *kp = NULL, *as = NULL, *msg = NULL;

                if (!found ||
                    agg <= (streq(name, "cpu") ? res->requests.values[i].milli : res->requests.values[i].value))
                        continue;
                kp = val_key(c, "spec.resources.requests", name);
                as = aggregate_string(p, name, false, agg);
                if (!kp || !as ||
                    asprintf(&msg, "must be greater than or equal to aggregate container requests of %s", as) < 0) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                invalid_quantity(c, kp, &res->requests.values[i], msg);
        }
        /* the pod-level hugepages limits at least the aggregate container limits */
        for (size_t i = 0; i < res->limits.n; i++) {
                const char *name = res->limits.names[i];
                bool found;
                int64_t agg;
                _cleanup_free_ char *kp = NULL, *as = NULL, *msg = NULL;

                if (!is_hugepages(name))
                        continue;
                agg = resource_aggregate_containers(p, name, true, &found);
                if (!found || agg <= res->limits.values[i].value)
                        continue;
                kp = val_key(c, "spec.resources.limits", name);
                as = aggregate_string(p, name, true, agg);
                if (!kp || !as ||
                    asprintf(&msg, "must be greater than or equal to aggregate container limits of %s", as) < 0) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                invalid_quantity(c, kp, &res->limits.values[i], msg);
        }
        /* each app container's limit at most the pod's (upstream's path: spec.resources.containers[i][name].limits) */
        for (size_t i = 0; i < p->spec.n_containers; i++) {
                const struct resource_list *cl = &p->spec.containers[i].resources.limits;
                for (size_t j = 0; j < cl->n; j++) {
                        const struct quantity *pl = resource_list_get(&res->limits, cl->names[j]);
                        _cleanup_free_ char *path = NULL, *ps = NULL, *msg = NULL;

                        if (!pl || quantity_cmp(&cl->values[j], pl) <= 0)
                                continue;
                        ps = quantity_canonical(pl);
                        if (!ps || asprintf(&path, "spec.resources.containers[%zu][%s].limits", i, cl->names[j]) < 0 ||
                            asprintf(&msg, "must be less than or equal to pod limits of %s", ps) < 0) {
                                CHECK_OOM(c, -ENOMEM);
                                return;
                        }
                        invalid_quantity(c, path, &cl->values[j], msg);
                }
        }
}

static void validate_spec(struct vctx *c, const struct pod *p) {
        const struct pod_spec *s = &p->spec;

        if (!s->termination_grace_period_set)
                val_required(c, "spec.terminationGracePeriodSeconds", NULL);
        else if (s->termination_grace_period_seconds < 0)
                val_invalid_int(c, "spec.terminationGracePeriodSeconds", s->termination_grace_period_seconds,
                                "must be greater than or equal to 0");
        validate_containers(c, s);
        validate_init_containers(c, s);
        validate_ephemeral_containers(c, s);
        pod_validate_lifecycle(c, s);
        validate_host_network(c, s);
        /* restartPolicy: an enum, checked when decoding */
        validate_dns(c, p);
        pod_volumes_validate(c, p);
        val_pod_security_context(c, s);
        val_pod_dns_config(c, s);
        if (!isempty(s->service_account_name))
                val_check_name(c, "spec.serviceAccountName", s->service_account_name, check_dns1123_subdomain);
        if (!isempty(s->node_name))
                val_check_name(c, "spec.nodeName", s->node_name, check_dns1123_subdomain);
        if (s->has_active_deadline && (s->active_deadline_seconds < 1 || s->active_deadline_seconds > INT32_MAX))
                val_invalid_int(c, "spec.activeDeadlineSeconds", s->active_deadline_seconds,
                                "must be between 1 and 2147483647, inclusive");
        if (!isempty(s->hostname))
                val_check_name(c, "spec.hostname", s->hostname, check_dns1123_label);
        if (!isempty(s->subdomain))
                val_check_name(c, "spec.subdomain", s->subdomain, check_dns1123_label);
        /* validatePodHostName */
        if (s->has_hostname_override) {
                if (s->set_hostname_as_fqdn)
                        val_forbidden(c, "spec.hostnameOverride",
                                      "may not be specified when setHostnameAsFQDN is true");
                if (s->host_network)
                        val_forbidden(c, "spec.hostnameOverride", "may not be specified when hostNetwork is true");
                if (strlen(strempty(s->hostname_override)) > 64)
                        CHECK_OOM(c, field_errors_add(c->errs, "spec.hostnameOverride",
                                                      "Too long: may not be more than 64 bytes"));
                val_check_name(c, "spec.hostnameOverride", strempty(s->hostname_override), check_dns1123_subdomain);
        }
        for (size_t i = 0; s->readiness_gates && s->readiness_gates[i]; i++) {
                _cleanup_free_ char *gp = NULL;
                if (asprintf(&gp, "spec.readinessGates[%zu].conditionType", i) < 0) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                val_check_name(c, gp, s->readiness_gates[i], check_qualified_name);
        }
        if (s->runtime_class_name)
                val_check_name(c, "spec.runtimeClassName", s->runtime_class_name, check_dns1123_subdomain);
        if (s->overhead.n > 0) {
                /* validateOverhead: the container resource rules, as limits */
                const struct resource_requirements res = { .limits = s->overhead };
                validate_resource_requirements(c, &res, "spec.overhead", false);
        }
        /* validateHostUsers: a user namespace goes with none of the host's */
        if (s->has_host_users && !s->host_users) {
                if (s->host_network)
                        val_forbidden(c, "spec.hostNetwork", "when `pod.Spec.HostUsers` is false");
                if (s->host_pid)
                        val_forbidden(c, "spec.HostPID", "when `pod.Spec.HostUsers` is false");
                if (s->host_ipc)
                        val_forbidden(c, "spec.HostIPC", "when `pod.Spec.HostUsers` is false");
        }
        if (s->share_process_namespace && s->host_pid)
                CHECK_OOM(c, field_errors_add(c->errs, "spec.securityContext.shareProcessNamespace",
                                              "Invalid value: true: ShareProcessNamespace and HostPID cannot both be "
                                              "enabled"));
        val_file_key_ref_volumes(c, p);
        validate_pod_resources(c, p);
}

int pod_validate(const struct pod *p, struct field_errors *errs) {
        _cleanup_(field_errors_done) struct field_errors local = {};
        struct vctx c = { .errs = errs ? errs : &local,
                          .restart_policy = p ? p->spec.restart_policy : 0,
                          .host_users = !p || !p->spec.has_host_users || p->spec.host_users };
        size_t before = c.errs->n;

        if (!p)
                return -EINVAL;
        validate_metadata(&c, p);
        val_apparmor_annotations(&c, p);
        validate_spec(&c, p);
        validate_image_whitespace(&c, p->spec.containers, p->spec.n_containers, "spec.containers");
        validate_image_whitespace(&c, p->spec.init_containers, p->spec.n_init_containers, "spec.initContainers");
        validate_image_whitespace(&c, p->spec.ephemeral_containers, p->spec.n_ephemeral_containers,
                                  "spec.ephemeralContainers");
        if (c.r < 0)
                return c.r;
        return c.errs->n > before ? -EINVAL : 0;
}
