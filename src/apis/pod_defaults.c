/* SPDX-License-Identifier: Apache-2.0 */
/* The apiserver's defaults for a v1 Pod (pkg/apis/core/v1/defaults.go): SetDefaults_Pod, SetDefaults_PodSpec,
 * SetDefaults_Container, SetDefaults_ContainerPort. */
#include <stdbool.h>
#include <string.h>

#include "apis/apis-internal.h"
#include "apis/pod.h"
#include "basic/string.h"

#define DEFAULT_TERMINATION_GRACE_PERIOD 30
#define DEFAULT_TERMINATION_MESSAGE_PATH "/dev/termination-log"
#define DEFAULT_SCHEDULER_NAME "default-scheduler"
#define DEFAULT_DNS_POLICY "ClusterFirst"

static bool is_lower_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_word(char c) {
        return is_lower_alnum(c) || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_hex(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* path-component: [a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)* */
static bool valid_path_component(const char *s, size_t n) {
        if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++) {
                if (is_lower_alnum(s[i]) || s[i] == '-')
                        continue;
                if (s[i] == '.' && is_lower_alnum(s[i + 1]))
                        continue;
                if (s[i] == '_' && (is_lower_alnum(s[i + 1]) || (s[i + 1] == '_' && is_lower_alnum(s[i + 2])))) {
                        if (s[i + 1] == '_')
                                i++;
                        continue;
                }
                return false;
        }
        return true;
}

/* domain[:port]: alphanumerics, '-', '.', and an optional numeric port */
static bool valid_domain(const char *s, size_t n) {
        size_t i;
        if (n == 0)
                return false;
        for (i = 0; i < n && s[i] != ':'; i++)
                if (!is_lower_alnum(s[i]) && !(s[i] >= 'A' && s[i] <= 'Z') && s[i] != '-' && s[i] != '.')
                        return false;
        if (i == 0)
                return false;
        if (i < n) {
                if (i + 1 == n)
                        return false;
                for (i++; i < n; i++)
                        if (s[i] < '0' || s[i] > '9')
                                return false;
        }
        return true;
}

static bool has_upper(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (s[i] >= 'A' && s[i] <= 'Z')
                        return true;
        return false;
}

/* A light version of the docker reference grammar (ParseNormalizedNamed): returns false if the name does not
 * parse; otherwise whether a tag and/or a digest is present and whether the tag is "latest". */
static bool parse_image(const char *image, bool *ret_has_tag, bool *ret_latest, bool *ret_has_digest) {
        const char *at, *name_end, *slash, *colon, *p;
        size_t n;

        if (isempty(image) || strlen(image) > 4096)
                return false;
        at = strchr(image, '@');
        *ret_has_digest = at;
        if (at) {
                const char *d = at + 1, *c = strchr(d, ':');
                if (!c || c == d || strlen(c + 1) < 32)
                        return false;
                for (p = c + 1; *p; p++)
                        if (!is_hex(*p))
                                return false;
                name_end = at;
        } else
                name_end = image + strlen(image);

        slash = NULL;
        for (p = image; p < name_end; p++)
                if (*p == '/')
                        slash = p;
        colon = NULL;
        for (p = slash ? slash : image; p < name_end; p++)
                if (*p == ':')
                        colon = p;
        *ret_has_tag = colon;
        *ret_latest = false;
        if (colon) {
                n = (size_t) (name_end - colon - 1);
                if (n == 0 || n > 128 || !is_word(colon[1]))
                        return false;
                for (p = colon + 1; p < name_end; p++)
                        if (!is_word(*p) && *p != '.' && *p != '-')
                                return false;
                *ret_latest = n == 6 && strneq(colon + 1, "latest", 6);
                name_end = colon;
        }

        /* components: the first one is a domain if it has '.' or ':' or is "localhost" (and is not the only one) */
        p = image;
        for (bool first = true; p <= name_end; first = false) {
                const char *e = memchr(p, '/', (size_t) (name_end - p));
                size_t len;
                if (!e)
                        e = name_end;
                len = (size_t) (e - p);
                if (first && e != name_end &&
                    (memchr(p, '.', len) || memchr(p, ':', len) || (len == 9 && strneq(p, "localhost", 9)) ||
                     has_upper(p, len))) {
                        if (!valid_domain(p, len))
                                return false;
                } else if (!valid_path_component(p, len))
                        return false;
                p = e + 1;
        }
        return true;
}

enum pull_policy image_default_pull_policy(const char *image) {
        bool has_tag = false, latest = false, has_digest = false;

        if (!parse_image(image, &has_tag, &latest, &has_digest))
                return PULL_POLICY_IF_NOT_PRESENT; /* ParseImageName failed: tag "" */
        if (latest || (!has_tag && !has_digest))
                return PULL_POLICY_ALWAYS;
        return PULL_POLICY_IF_NOT_PRESENT;
}

static int default_requests(struct resource_requirements *r) {
        /* SetDefaults_Pod: requests default to limits, key by key */
        for (size_t i = 0; i < r->limits.n; i++) {
                struct quantity q = {};
                char **names;
                struct quantity *values;
                char *n;
                int k;

                if (resource_list_get(&r->requests, r->limits.names[i]))
                        continue;
                k = quantity_parse(r->limits.values[i].str, &q);
                if (k < 0)
                        return k;
                n = strdup(r->limits.names[i]);
                names = reallocarray(r->requests.names, r->requests.n + 1, sizeof(*names));
                if (names)
                        r->requests.names = names;
                values = reallocarray(r->requests.values, r->requests.n + 1, sizeof(*values));
                if (values)
                        r->requests.values = values;
                if (!n || !names || !values) {
                        free(n);
                        quantity_done(&q);
                        return -ENOMEM;
                }
                r->requests.names[r->requests.n] = n;
                r->requests.values[r->requests.n] = q;
                r->requests.n++;
        }
        return 0;
}

/* SetDefaults_Probe, SetDefaults_HTTPGetAction */
static int default_probe(struct probe *p) {
        int r;

        if (!p)
                return 0;
        if (p->timeout_seconds == 0)
                p->timeout_seconds = 1;
        if (p->period_seconds == 0)
                p->period_seconds = 10;
        if (p->success_threshold == 0)
                p->success_threshold = 1;
        if (p->failure_threshold == 0)
                p->failure_threshold = 3;
        if (p->handler == PROBE_HANDLER_HTTP_GET) {
                if (isempty(p->path)) {
                        r = free_and_strdup(&p->path, "/");
                        if (r < 0)
                                return r;
                }
                if (isempty(p->scheme)) {
                        r = free_and_strdup(&p->scheme, "HTTP");
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int default_container(struct container *c, bool host_network) {
        int r;

        r = default_probe(c->liveness_probe);
        if (r >= 0)
                r = default_probe(c->readiness_probe);
        if (r >= 0)
                r = default_probe(c->startup_probe);
        if (r >= 0)
                r = pod_default_container_lifecycle(c);
        if (r < 0)
                return r;

        if (c->image_pull_policy == PULL_POLICY_UNSET)
                c->image_pull_policy = image_default_pull_policy(c->image);
        if (isempty(c->termination_message_path)) {
                r = free_and_strdup(&c->termination_message_path, DEFAULT_TERMINATION_MESSAGE_PATH);
                if (r < 0)
                        return r;
        }
        /* termination_message_policy: the zero value is File already */
        for (size_t i = 0; i < c->n_ports; i++) {
                struct container_port *p = &c->ports[i];
                if (isempty(p->protocol)) {
                        r = free_and_strdup(&p->protocol, "TCP");
                        if (r < 0)
                                return r;
                }
                if (host_network && p->host_port == 0)
                        p->host_port = p->container_port;
        }
        return default_requests(&c->resources);
}

int pod_apply_defaults_checked(struct pod *p) {
        struct pod_spec *s;
        int r;

        if (!p)
                return -EINVAL;
        s = &p->spec;
        for (size_t i = 0; i < s->n_containers; i++) {
                r = default_container(&s->containers[i], s->host_network);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < s->n_init_containers; i++) {
                r = default_container(&s->init_containers[i], s->host_network);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < s->n_ephemeral_containers; i++) {
                r = default_container(&s->ephemeral_containers[i], s->host_network);
                if (r < 0)
                        return r;
        }
        /* restart_policy: the zero value is Always already */
        if (!s->termination_grace_period_set) {
                s->termination_grace_period_seconds = DEFAULT_TERMINATION_GRACE_PERIOD;
                s->termination_grace_period_set = true;
        }
        if (isempty(s->dns_policy)) {
                r = free_and_strdup(&s->dns_policy, DEFAULT_DNS_POLICY);
                if (r < 0)
                        return r;
        }
        if (isempty(s->scheduler_name)) {
                r = free_and_strdup(&s->scheduler_name, DEFAULT_SCHEDULER_NAME);
                if (r < 0)
                        return r;
        }
        return 0;
}
