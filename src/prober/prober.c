/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "basic/error.h"
#include "basic/string.h"
#include "container/container.h"
#include "prober/prober.h"

int probe_resolve_port(const struct int_or_string *port, const struct container *c, int *ret_port,
                       struct ck_error **ret_error) {
        int v = -1;

        if (!port->is_string)
                v = port->int_val;
        else {
                const char *name = strempty(port->str_val);
                for (size_t i = 0; i < c->n_ports; i++)
                        if (c->ports[i].name && streq(c->ports[i].name, name)) {
                                v = c->ports[i].container_port;
                                break;
                        }
                if (v < 0 && safe_atoi(name, &v) < 0)
                        return ck_error_set(ret_error, -ENOENT,
                                            "port \"%s\" is neither a port name of container \"%s\" nor a number", name,
                                            strempty(c->name));
        }
        if (v < 1 || v > 65535)
                return ck_error_set(ret_error, -ERANGE, "invalid port number: %d", v);
        *ret_port = v;
        return 0;
}

char *probe_join_host_port(const char *host, int port) {
        char *s = NULL;
        bool v6 = host && strchr(host, ':');
        if (asprintf(&s, v6 ? "[%s]:%d" : "%s:%d", strempty(host), port) < 0)
                return NULL;
        return s;
}

void probe_state_init(struct probe_state *s, enum probe_type t) {
        *s = (struct probe_state) {
                .last = PROBE_RESULT_UNKNOWN,
                .published = t == PROBE_READINESS  ? PROBE_RESULT_FAILURE
                             : t == PROBE_LIVENESS ? PROBE_RESULT_SUCCESS
                                                   : PROBE_RESULT_UNKNOWN,
        };
}

bool probe_state_record(struct probe_state *s, const struct probe *spec, enum probe_result r) {
        if (r == s->last)
                s->run++;
        else {
                s->last = r;
                s->run = 1;
        }
        if ((r == PROBE_RESULT_FAILURE && s->run < spec->failure_threshold) ||
            (r == PROBE_RESULT_SUCCESS && s->run < spec->success_threshold))
                return false; /* not enough in a row yet */
        if (r == s->published)
                return false;
        s->published = r;
        return true;
}

static bool has_result(const struct probe_results *results, enum probe_type t, const struct kc_container *instance,
                       enum probe_result want) {
        enum probe_result r;
        return results && results->get(results->userdata, t, instance, &r) && r == want;
}

bool probe_container_started(const struct container *c, const struct kc_container *instance,
                             const struct probe_results *results) {
        if (!instance || instance->state != KC_CONTAINER_RUNNING)
                return false;
        return !c->startup_probe || has_result(results, PROBE_STARTUP, instance, PROBE_RESULT_SUCCESS);
}

bool probe_container_ready(const struct container *c, const struct kc_container *instance,
                           const struct probe_results *results) {
        if (!probe_container_started(c, instance, results))
                return false;
        return !c->readiness_probe || has_result(results, PROBE_READINESS, instance, PROBE_RESULT_SUCCESS);
}

/* RFC 7230 tchar */
static bool is_token_char(unsigned char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               strchr("!#$%&'*+-.^_`|~", c);
}

int probe_check_http_headers(const struct http_header *headers, size_t n, struct ck_error **ret_error) {
        for (size_t i = 0; i < n; i++) {
                const char *name = strempty(headers[i].name), *value = strempty(headers[i].value);
                bool name_ok = !isempty(name);

                for (const unsigned char *p = (const unsigned char *) name; name_ok && *p; p++)
                        name_ok = *p != 0 && is_token_char(*p);
                if (!name_ok) {
                        _cleanup_free_ char *q = go_quote(name);
                        return ck_error_set(ret_error, -EINVAL, "net/http: invalid header field name %s", strna(q));
                }
                for (const unsigned char *p = (const unsigned char *) value; *p; p++)
                        if ((*p < ' ' && *p != '\t') || *p == 0x7f) {
                                _cleanup_free_ char *q = go_quote(value);
                                return ck_error_set(ret_error, -EINVAL,
                                                    "net/http: invalid header field value %s for key %s", strna(q),
                                                    name);
                        }
        }
        return 0;
}
