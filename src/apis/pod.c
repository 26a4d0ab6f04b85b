/* SPDX-License-Identifier: Apache-2.0 */
/* Pod objects: allocation, reference counting, field errors, pod sets, small shared helpers. */
#include "apis/pod.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "apis/apis-internal.h"
#include "apis/pod_volumes.h"
#include "basic/string.h"
#include "basic/strmap.h"
#include "basic/strv.h"

/* ---- field errors ---- */

void field_errors_done(struct field_errors *e) {
        if (!e)
                return;
        for (size_t i = 0; i < e->n; i++) {
                free(e->items[i].field);
                free(e->items[i].detail);
        }
        free(e->items);
        *e = (struct field_errors) {};
}

/* Hard cap: a hostile document could otherwise produce millions of errors. */
#define FIELD_ERRORS_MAX 1000

int field_errors_add(struct field_errors *e, const char *field, const char *fmt, ...) {
        _cleanup_free_ char *f = NULL, *d = NULL;
        struct field_error *items;
        int r;

        if (!e)
                return 0;
        if (e->n >= FIELD_ERRORS_MAX)
                return 0; /* drop the rest; the caller still fails */
        f = strdup(strempty(field));
        if (!f)
                return -ENOMEM;
        r = VA_FORMAT(d, fmt);
        if (r < 0)
                return r;
        items = reallocarray(e->items, e->n + 1, sizeof(*items));
        if (!items)
                return -ENOMEM;
        e->items = items;
        e->items[e->n++] = (struct field_error) { .field = TAKE_PTR(f), .detail = TAKE_PTR(d) };
        return 0;
}

char *field_errors_to_string(const struct field_errors *e) {
        size_t len = 1;
        char *s, *p;

        for (size_t i = 0; e && i < e->n; i++)
                len += strlen(e->items[i].field) + 2 + strlen(e->items[i].detail) + 2;
        s = malloc(len);
        if (!s)
                return NULL;
        p = s;
        *p = '\0';
        for (size_t i = 0; e && i < e->n; i++) {
                if (i > 0)
                        p = stpcpy(p, "; ");
                if (!isempty(e->items[i].field)) {
                        p = stpcpy(p, e->items[i].field);
                        p = stpcpy(p, ": ");
                }
                p = stpcpy(p, e->items[i].detail);
        }
        return s;
}

/* ---- paths ---- */

char *path_child(const char *parent, const char *child) {
        char *s;
        if (isempty(parent))
                return strdup(child);
        if (asprintf(&s, "%s.%s", parent, child) < 0)
                return NULL;
        return s;
}

char *path_index(const char *parent, size_t i) {
        char *s;
        if (asprintf(&s, "%s[%zu]", strempty(parent), i) < 0)
                return NULL;
        return s;
}

char *path_key(const char *parent, const char *key) {
        char *s;
        if (asprintf(&s, "%s[%s]", strempty(parent), key) < 0)
                return NULL;
        return s;
}

/* ---- pods ---- */

static void resource_list_done(struct resource_list *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->names[i]);
                quantity_done(&l->values[i]);
        }
        free(l->names);
        free(l->values);
        *l = (struct resource_list) {};
}

static void probe_free(struct probe *p) {
        if (!p)
                return;
        strv_free(p->exec_command);
        free(p->host);
        free(p->port.str_val);
        free(p->path);
        free(p->scheme);
        for (size_t i = 0; i < p->n_http_headers; i++) {
                free(p->http_headers[i].name);
                free(p->http_headers[i].value);
        }
        free(p->http_headers);
        free(p->grpc_service);
        free(p);
}

static void container_done(struct container *c) {
        if (!c)
                return;
        free(c->name);
        free(c->image);
        strv_free(c->command);
        strv_free(c->args);
        free(c->working_dir);
        for (size_t i = 0; i < c->n_env; i++) {
                free(c->env[i].name);
                free(c->env[i].value);
                env_var_source_free(c->env[i].value_from);
        }
        free(c->env);
        container_env_from_done(c);
        for (size_t i = 0; i < c->n_ports; i++) {
                free(c->ports[i].name);
                free(c->ports[i].protocol);
                free(c->ports[i].host_ip);
        }
        free(c->ports);
        resource_list_done(&c->resources.limits);
        resource_list_done(&c->resources.requests);
        free(c->termination_message_path);
        free(c->restart_policy);
        for (size_t i = 0; i < c->n_restart_rules; i++) {
                free(c->restart_rules[i].action);
                free(c->restart_rules[i].exit_codes_operator);
                free(c->restart_rules[i].exit_codes);
        }
        free(c->restart_rules);
        for (size_t i = 0; i < c->n_resize_policy; i++) {
                free(c->resize_policy[i].resource_name);
                free(c->resize_policy[i].restart_policy);
        }
        free(c->resize_policy);
        free(c->target_container_name);
        probe_free(c->liveness_probe);
        probe_free(c->readiness_probe);
        probe_free(c->startup_probe);
        lifecycle_handler_free(c->post_start);
        lifecycle_handler_free(c->pre_stop);
        free(c->stop_signal);
        security_context_free(c->security_context);
        json_decref(c->raw);
        *c = (struct container) {};
}

struct pod *pod_new(void) {
        struct pod *p = calloc(1, sizeof(*p));
        if (!p)
                return NULL;
        p->n_ref = 1;
        return p;
}

struct pod *pod_ref(struct pod *p) {
        if (p)
                p->n_ref++;
        return p;
}

static void pod_spec_done(struct pod_spec *s) {
        for (size_t i = 0; i < s->n_containers; i++)
                container_done(&s->containers[i]);
        free(s->containers);
        for (size_t i = 0; i < s->n_init_containers; i++)
                container_done(&s->init_containers[i]);
        free(s->init_containers);
        for (size_t i = 0; i < s->n_ephemeral_containers; i++)
                container_done(&s->ephemeral_containers[i]);
        free(s->ephemeral_containers);
        free(s->runtime_class_name);
        free(s->os_name);
        resource_list_done(&s->overhead);
        resource_list_done(&s->resources.limits);
        resource_list_done(&s->resources.requests);
        strv_free(s->readiness_gates);
        pod_volumes_free(s->volumes);
        free(s->node_name);
        free(s->hostname);
        free(s->subdomain);
        free(s->hostname_override);
        free(s->service_account_name);
        free(s->dns_policy);
        pod_security_context_free(s->security_context);
        pod_dns_config_free(s->dns_config);
        free(s->scheduler_name);
        *s = (struct pod_spec) {};
}

struct pod *pod_free(struct pod *p) {
        if (!p)
                return NULL;
        if (p->n_ref > 1) {
                p->n_ref--;
                return NULL;
        }
        free(p->name);
        free(p->namespace_);
        free(p->uid);
        free(p->resource_version);
        free(p->generate_name);
        strmap_done(&p->labels);
        strmap_done(&p->annotations);
        pod_spec_done(&p->spec);
        json_decref(p->raw);
        free(p);
        return NULL;
}

char *pod_hostname(const struct pod *pod) {
        const char *h = pod->spec.has_hostname_override ? strempty(pod->spec.hostname_override)
                        : !isempty(pod->spec.hostname)  ? pod->spec.hostname
                                                        : strempty(pod->name);
        size_t l = strlen(h);
        if (l > 63)
                l = 63;
        while (l > 0 && (h[l - 1] == '-' || h[l - 1] == '.'))
                l--;
        return strndup(h, l);
}

static bool policy_restarts(const char *policy, int32_t exit_code) {
        if (streq(policy, "Always"))
                return true;
        if (streq(policy, "OnFailure"))
                return exit_code != 0;
        return false;
}

bool container_should_restart_on_exit(const struct pod_spec *spec, const struct container *c, int32_t exit_code) {
        for (size_t i = 0; i < c->n_restart_rules; i++) {
                const struct container_restart_rule *rule = &c->restart_rules[i];
                bool in = false;

                if (!rule->has_exit_codes)
                        continue;
                for (size_t j = 0; j < rule->n_exit_codes; j++)
                        in = in || rule->exit_codes[j] == exit_code;
                if (streq_ptr(rule->exit_codes_operator, "NotIn"))
                        in = !in;
                else if (!streq_ptr(rule->exit_codes_operator, "In"))
                        continue;
                if (in)
                        return streq_ptr(rule->action, "Restart");
        }
        if (c->restart_policy)
                return policy_restarts(c->restart_policy, exit_code);
        return policy_restarts(spec->restart_policy == RESTART_POLICY_ALWAYS       ? "Always"
                               : spec->restart_policy == RESTART_POLICY_ON_FAILURE ? "OnFailure"
                                                                                   : "Never",
                               exit_code);
}

bool pod_may_restart_containers(const struct pod_spec *spec) {
        if (spec->restart_policy != RESTART_POLICY_NEVER)
                return true;
        for (size_t i = 0; i < spec->n_containers; i++) {
                const struct container *c = &spec->containers[i];
                if (c->n_restart_rules > 0 || (c->restart_policy && !streq(c->restart_policy, "Never")))
                        return true;
        }
        return false;
}

const struct container *pod_find_container(const struct pod *pod, const char *name) {
        for (size_t i = 0; i < pod->spec.n_containers; i++)
                if (streq_ptr(pod->spec.containers[i].name, name))
                        return &pod->spec.containers[i];
        for (size_t i = 0; i < pod->spec.n_init_containers; i++)
                if (streq_ptr(pod->spec.init_containers[i].name, name))
                        return &pod->spec.init_containers[i];
        for (size_t i = 0; i < pod->spec.n_ephemeral_containers; i++)
                if (streq_ptr(pod->spec.ephemeral_containers[i].name, name))
                        return &pod->spec.ephemeral_containers[i];
        return NULL;
}

const struct quantity *resource_list_get(const struct resource_list *l, const char *name) {
        for (size_t i = 0; l && name && i < l->n; i++)
                if (streq(l->names[i], name))
                        return &l->values[i];
        return NULL;
}

/* ---- pod sets ---- */

void pod_set_done(struct pod_set *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n; i++)
                pod_free(s->pods[i]);
        free(s->pods);
        *s = (struct pod_set) {};
}

int pod_set_add(struct pod_set *s, struct pod *p) {
        struct pod **n;

        if (!s || !p) {
                pod_free(p);
                return -EINVAL;
        }
        n = reallocarray(s->pods, s->n + 1, sizeof(*n));
        if (!n) {
                pod_free(p);
                return -ENOMEM;
        }
        s->pods = n;
        s->pods[s->n++] = p;
        return 0;
}

bool pod_uid_is_valid(const char *uid) {
        size_t n = uid ? strlen(uid) : 0;

        if (n == 0 || n > 128)
                return false;
        if (!((uid[0] >= 'a' && uid[0] <= 'z') || (uid[0] >= 'A' && uid[0] <= 'Z') || (uid[0] >= '0' && uid[0] <= '9')))
                return false;
        return strspn(uid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}
