/* SPDX-License-Identifier: Apache-2.0 */
/* Decoding and validation of the containers' lifecycle fields: an init container's restartPolicy (a
 * sidecar: restartPolicy Always) and the hooks lifecycle.postStart / lifecycle.preStop (LifecycleHandler:
 * exec, httpGet, tcpSocket, sleep), as the apiserver's validateLifecycle / validateHandler. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

#include "apis/apis-internal.h"
#include "basic/string.h"
#include "basic/strv.h"

void lifecycle_handler_free(struct lifecycle_handler *h) {
        if (!h)
                return;
        strv_free(h->action.exec_command);
        free(h->action.host);
        free(h->action.port.str_val);
        free(h->action.path);
        free(h->action.scheme);
        for (size_t i = 0; i < h->action.n_http_headers; i++) {
                free(h->action.http_headers[i].name);
                free(h->action.http_headers[i].value);
        }
        free(h->action.http_headers);
        free(h);
}

static int decode_header(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct http_header *hh = item;
        int r = dec_get_string(e, v, ip, "name", &hh->name);
        return r < 0 ? r : dec_get_string(e, v, ip, "value", &hh->value);
}

/* Marks one more handler; the first one given is the one kept. */
static void add_handler(struct lifecycle_handler *h, enum lifecycle_handler_type t) {
        if (h->type == LIFECYCLE_HANDLER_NONE)
                h->type = t;
        h->n_handlers++;
        h->given |= 1u << t;
}

/* one LifecycleHandler object o at path hp */
static int decode_handler(struct field_errors *e, json_t *o, const char *hp, struct lifecycle_handler *h) {
        json_t *a;
        int r;

        r = dec_get_object(e, o, hp, "exec", &a);
        if (r >= 0 && a) {
                _cleanup_free_ char *p = path_child(hp, "exec");
                if (!p)
                        return -ENOMEM;
                add_handler(h, LIFECYCLE_HANDLER_EXEC);
                r = dec_get_strv(e, a, p, "command", &h->action.exec_command);
        }
        if (r >= 0)
                r = dec_get_object(e, o, hp, "httpGet", &a);
        if (r >= 0 && a) {
                _cleanup_free_ char *p = path_child(hp, "httpGet");
                if (!p)
                        return -ENOMEM;
                add_handler(h, LIFECYCLE_HANDLER_HTTP_GET);
                r = dec_get_string(e, a, p, "host", &h->action.host);
                if (r >= 0)
                        r = dec_get_int_or_string(e, a, p, "port", &h->action.port);
                if (r >= 0)
                        r = dec_get_string(e, a, p, "path", &h->action.path);
                if (r >= 0)
                        r = dec_get_string(e, a, p, "scheme", &h->action.scheme);
                if (r >= 0)
                        r = dec_object_list(e, a, p, "httpHeaders", sizeof(struct http_header),
                                            (void **) &h->action.http_headers, &h->action.n_http_headers,
                                            decode_header);
        }
        if (r >= 0)
                r = dec_get_object(e, o, hp, "tcpSocket", &a);
        if (r >= 0 && a) {
                _cleanup_free_ char *p = path_child(hp, "tcpSocket");
                if (!p)
                        return -ENOMEM;
                add_handler(h, LIFECYCLE_HANDLER_TCP_SOCKET);
                r = dec_get_string(e, a, p, "host", &h->action.host);
                if (r >= 0)
                        r = dec_get_int_or_string(e, a, p, "port", &h->action.port);
        }
        if (r >= 0)
                r = dec_get_object(e, o, hp, "sleep", &a);
        if (r >= 0 && a) {
                _cleanup_free_ char *p = path_child(hp, "sleep");
                if (!p)
                        return -ENOMEM;
                add_handler(h, LIFECYCLE_HANDLER_SLEEP);
                r = dec_get_integer(e, a, p, "seconds", INT64_MIN, INT64_MAX, "int64", NULL, &h->sleep_seconds);
        }
        return r;
}

static int decode_hook(struct field_errors *e, json_t *lc, const char *lp, const char *key,
                       struct lifecycle_handler **ret) {
        _cleanup_free_ char *hp = NULL;
        struct lifecycle_handler *h;
        json_t *o;
        int r;

        r = dec_get_object(e, lc, lp, key, &o);
        if (r < 0 || !o)
                return r;
        hp = path_child(lp, key);
        h = calloc(1, sizeof(*h));
        if (!hp || !h) {
                free(h);
                return -ENOMEM;
        }
        *ret = h; /* owned by the container from here on */
        return decode_handler(e, o, hp, h);
}

static int decode_exit_code(struct field_errors *e, json_t *v, const char *ip, int32_t *ret) {
        json_auto_t *o = json_pack("{s:O}", "v", v);
        if (!o)
                return -ENOMEM;
        return dec_get_int32(e, o, ip, "v", ret);
}

static int decode_restart_rule(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct container_restart_rule *rule = item;
        _cleanup_free_ char *xp = NULL, *vp = NULL;
        json_t *x, *values, *code;
        size_t i;
        int r;

        r = dec_get_string(e, v, ip, "action", &rule->action);
        if (r >= 0)
                r = dec_get_object(e, v, ip, "exitCodes", &x);
        if (r < 0 || !x)
                return r;
        rule->has_exit_codes = true;
        xp = path_child(ip, "exitCodes");
        if (!xp)
                return -ENOMEM;
        r = dec_get_string(e, x, xp, "operator", &rule->exit_codes_operator);
        if (r >= 0)
                r = dec_get_array(e, x, xp, "values", MAX_LIST_ITEMS, &values);
        if (r < 0 || !values || json_array_size(values) == 0)
                return r;
        vp = path_child(xp, "values");
        rule->exit_codes = calloc(json_array_size(values), sizeof(int32_t));
        if (!vp || !rule->exit_codes)
                return -ENOMEM;
        json_array_foreach(values, i, code) {
                _cleanup_free_ char *cp = path_index(vp, i);
                if (!cp)
                        return -ENOMEM;
                r = decode_exit_code(e, code, cp, &rule->exit_codes[rule->n_exit_codes]);
                if (r < 0)
                        return r;
                rule->n_exit_codes++;
        }
        return 0;
}

int pod_decode_container_lifecycle(struct field_errors *e, json_t *c, const char *cpath, struct container *ret) {
        _cleanup_free_ char *lp = NULL;
        json_t *lc;
        int r;

        r = dec_get_string(e, c, cpath, "restartPolicy", &ret->restart_policy);
        if (r >= 0)
                r = dec_object_list(e, c, cpath, "restartPolicyRules", sizeof(struct container_restart_rule),
                                    (void **) &ret->restart_rules, &ret->n_restart_rules, decode_restart_rule);
        if (r >= 0)
                r = dec_get_object(e, c, cpath, "lifecycle", &lc);
        if (r < 0 || !lc)
                return r;
        lp = path_child(cpath, "lifecycle");
        if (!lp)
                return -ENOMEM;
        r = decode_hook(e, lc, lp, "postStart", &ret->post_start);
        if (r >= 0)
                r = decode_hook(e, lc, lp, "preStop", &ret->pre_stop);
        if (r >= 0)
                r = dec_get_string(e, lc, lp, "stopSignal", &ret->stop_signal);
        return r;
}

/* SetDefaults_HTTPGetAction */
static int default_handler(struct lifecycle_handler *h) {
        int r = 0;

        if (!h || h->type != LIFECYCLE_HANDLER_HTTP_GET)
                return 0;
        if (isempty(h->action.path))
                r = free_and_strdup(&h->action.path, "/");
        if (r >= 0 && isempty(h->action.scheme))
                r = free_and_strdup(&h->action.scheme, "HTTP");
        return r < 0 ? r : 0;
}

int pod_default_container_lifecycle(struct container *c) {
        int r = default_handler(c->post_start);
        return r < 0 ? r : default_handler(c->pre_stop);
}

int lifecycle_handler_from_json(json_t *obj, struct lifecycle_handler **ret) {
        struct field_errors errs = {};
        struct lifecycle_handler *h;
        int r;

        if (!json_is_object(obj))
                return -EINVAL;
        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        r = decode_handler(&errs, obj, "preStop", h);
        if (r >= 0 && (errs.n > 0 || h->n_handlers != 1))
                r = -EINVAL;
        if (r >= 0)
                r = default_handler(h);
        field_errors_done(&errs);
        if (r < 0) {
                lifecycle_handler_free(h);
                return r;
        }
        *ret = h;
        return 0;
}

#define MAX_RESTART_RULES 20
#define MAX_RESTART_RULE_EXIT_CODES 255

/* restartPolicyRules (ContainerRestartRules): every rule restarts on a set of exit codes */
static void validate_restart_rules(struct vctx *c, const struct container *ctr, const char *cpath, bool sidecar) {
        _cleanup_free_ char *rp = NULL;

        if (ctr->n_restart_rules == 0)
                return;
        rp = val_child(c, cpath, "restartPolicyRules");
        if (!rp)
                return;
        if (sidecar) {
                val_forbidden(c, rp, "may not be set for init containers with restartPolicy=Always");
                return;
        }
        if (!ctr->restart_policy) {
                _cleanup_free_ char *pp = val_child(c, cpath, "restartPolicy");
                if (pp)
                        val_required(c, pp, "must be set when restartPolicyRules are specified");
        }
        if (ctr->n_restart_rules > MAX_RESTART_RULES)
                CHECK_OOM(c, field_errors_add(c->errs, rp, "Too many: %zu: must have at most %d items",
                                              ctr->n_restart_rules, MAX_RESTART_RULES));
        for (size_t i = 0; i < ctr->n_restart_rules; i++) {
                const struct container_restart_rule *rule = &ctr->restart_rules[i];
                _cleanup_free_ char *ip = val_idx(c, rp, i), *ap = NULL, *xp = NULL, *op = NULL, *vp = NULL;

                if (!ip || !(ap = val_child(c, ip, "action")) || !(xp = val_child(c, ip, "exitCodes")) ||
                    !(op = val_child(c, xp, "operator")) || !(vp = val_child(c, xp, "values")))
                        return;
                if (isempty(rule->action))
                        val_required(c, ap, NULL);
                else if (!streq(rule->action, "Restart"))
                        val_not_supported(c, ap, rule->action, "\"Restart\"");
                if (!rule->has_exit_codes) {
                        val_required(c, xp, NULL);
                        continue;
                }
                if (isempty(rule->exit_codes_operator))
                        val_required(c, op, NULL);
                else if (!streq(rule->exit_codes_operator, "In") && !streq(rule->exit_codes_operator, "NotIn"))
                        val_not_supported(c, op, rule->exit_codes_operator, "\"In\", \"NotIn\"");
                if (rule->n_exit_codes > MAX_RESTART_RULE_EXIT_CODES)
                        CHECK_OOM(c, field_errors_add(c->errs, vp, "Too many: %zu: must have at most %d items",
                                                      rule->n_exit_codes, MAX_RESTART_RULE_EXIT_CODES));
        }
}

/* A container's restartPolicy: an init container's Always makes it a sidecar; a regular or init container may
 * also have its own OnFailure or Never (ContainerRestartRules); an ephemeral container none. */
static void validate_restart_policy(struct vctx *c, const struct container *ctr, const char *cpath, bool init) {
        _cleanup_free_ char *pp = NULL;

        validate_restart_rules(c, ctr, cpath, init && container_is_sidecar(ctr));
        if (!ctr->restart_policy)
                return;
        pp = val_child(c, cpath, "restartPolicy");
        if (!pp)
                return;
        if (ctr->restart_policy[0] == '\0')
                val_required(c, pp, NULL);
        else if (!streq(ctr->restart_policy, "Always") && !streq(ctr->restart_policy, "OnFailure") &&
                 !streq(ctr->restart_policy, "Never"))
                val_not_supported(c, pp, ctr->restart_policy, "\"Always\", \"Never\", \"OnFailure\"");
}

/* validateHandler: exactly one handler; a second one is "Forbidden" at its own path, as upstream (which checks
 * exec, httpGet, tcpSocket, sleep in this order: the first one given is the one validated). */
static void validate_handler(struct vctx *c, const struct lifecycle_handler *h, int64_t grace, const char *lp,
                             const char *key) {
        static const char *const names[] = {
                [LIFECYCLE_HANDLER_EXEC] = "exec",
                [LIFECYCLE_HANDLER_HTTP_GET] = "httpGet",
                [LIFECYCLE_HANDLER_TCP_SOCKET] = "tcpSocket",
                [LIFECYCLE_HANDLER_SLEEP] = "sleep",
        };
        _cleanup_free_ char *hp = NULL, *ap = NULL;

        if (!h)
                return;
        hp = val_child(c, lp, key);
        if (!hp)
                return;
        if (h->n_handlers == 0) {
                val_required(c, hp, "must specify a handler type");
                return;
        }
        ap = val_child(c, hp, names[h->type]);
        if (!ap)
                return;
        switch (h->type) {
        case LIFECYCLE_HANDLER_EXEC:
                if (strv_length(h->action.exec_command) == 0) {
                        _cleanup_free_ char *p = val_child(c, ap, "command");
                        if (p)
                                val_required(c, p, NULL);
                }
                break;
        case LIFECYCLE_HANDLER_HTTP_GET:
                val_http_get(c, &h->action, ap);
                break;
        case LIFECYCLE_HANDLER_TCP_SOCKET: {
                _cleanup_free_ char *p = val_child(c, ap, "port");
                if (p)
                        val_port_num_or_name(c, &h->action.port, p);
                break;
        }
        case LIFECYCLE_HANDLER_SLEEP:
                /* 0 is legal since v1.34 (PodLifecycleSleepActionAllowZero, KEP-4818): the hook returns at once */
                if (h->sleep_seconds < 0 || h->sleep_seconds > grace) {
                        _cleanup_free_ char *msg = NULL;
                        if (asprintf(&msg,
                                     "must be non-negative and less than terminationGracePeriodSeconds (%" PRId64 ")",
                                     grace) < 0)
                                CHECK_OOM(c, -ENOMEM);
                        else
                                val_invalid_int(c, ap, h->sleep_seconds, msg);
                }
                break;
        default:
                break;
        }
        for (enum lifecycle_handler_type t = LIFECYCLE_HANDLER_EXEC; t <= LIFECYCLE_HANDLER_SLEEP; t++)
                if (t != h->type && (h->given & (1u << t))) {
                        _cleanup_free_ char *p = val_child(c, hp, names[t]);
                        if (p)
                                val_forbidden(c, p, "may not specify more than 1 handler type");
                }
}

/* The signals a container may be stopped with, named as the API does, in the order of the CRI's Signal enum
 * (SIGNAL_SIGABRT = 1 ... SIGNAL_SIGRTMAX = 65): every one is allowed on linux (supportedStopSignalsLinux) */
static const char *const stop_signals[] = {
        "SIGABRT",     "SIGALRM",     "SIGBUS",      "SIGCHLD",     "SIGCLD",      "SIGCONT",     "SIGFPE",
        "SIGHUP",      "SIGILL",      "SIGINT",      "SIGIO",       "SIGIOT",      "SIGKILL",     "SIGPIPE",
        "SIGPOLL",     "SIGPROF",     "SIGPWR",      "SIGQUIT",     "SIGSEGV",     "SIGSTKFLT",   "SIGSTOP",
        "SIGSYS",      "SIGTERM",     "SIGTRAP",     "SIGTSTP",     "SIGTTIN",     "SIGTTOU",     "SIGURG",
        "SIGUSR1",     "SIGUSR2",     "SIGVTALRM",   "SIGWINCH",    "SIGXCPU",     "SIGXFSZ",     "SIGRTMIN",
        "SIGRTMIN+1",  "SIGRTMIN+2",  "SIGRTMIN+3",  "SIGRTMIN+4",  "SIGRTMIN+5",  "SIGRTMIN+6",  "SIGRTMIN+7",
        "SIGRTMIN+8",  "SIGRTMIN+9",  "SIGRTMIN+10", "SIGRTMIN+11", "SIGRTMIN+12", "SIGRTMIN+13", "SIGRTMIN+14",
        "SIGRTMIN+15", "SIGRTMAX-14", "SIGRTMAX-13", "SIGRTMAX-12", "SIGRTMAX-11", "SIGRTMAX-10", "SIGRTMAX-9",
        "SIGRTMAX-8",  "SIGRTMAX-7",  "SIGRTMAX-6",  "SIGRTMAX-5",  "SIGRTMAX-4",  "SIGRTMAX-3",  "SIGRTMAX-2",
        "SIGRTMAX-1",  "SIGRTMAX",
};

int stop_signal_number(const char *name) {
        for (size_t i = 0; name && i < ELEMENTSOF(stop_signals); i++)
                if (streq(stop_signals[i], name))
                        return (int) i + 1;
        return 0;
}

const char *stop_signal_name(int number) {
        return number >= 1 && (size_t) number <= ELEMENTSOF(stop_signals) ? stop_signals[number - 1] : NULL;
}

static int cmp_strp(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* validateStopSignal: spec.os.name must be set; its supported values (sets.List: sorted), quoted */
static void validate_stop_signal(struct vctx *c, const char *sig, const char *os_name, const char *lp) {
        _cleanup_free_ char *sp = val_child(c, lp, "stopSignal"), *supported = NULL;
        const char *sorted[ELEMENTSOF(stop_signals)];
        size_t n = 0, len = 0;

        if (!sp)
                return;
        if (isempty(os_name)) {
                val_forbidden(c, sp, "may not be set for containers with empty `spec.os.name`");
                return;
        }
        if (streq(os_name, "windows")) {
                if (!streq(sig, "SIGKILL") && !streq(sig, "SIGTERM"))
                        val_not_supported(c, sp, sig, "\"SIGKILL\", \"SIGTERM\"");
                return;
        }
        if (!streq(os_name, "linux") || stop_signal_number(sig) > 0)
                return;
        memcpy(sorted, stop_signals, sizeof(sorted));
        qsort(sorted, ELEMENTSOF(sorted), sizeof(sorted[0]), cmp_strp);
        for (size_t i = 0; i < ELEMENTSOF(sorted); i++)
                len += strlen(sorted[i]) + 4;
        supported = malloc(len + 1);
        if (!supported) {
                CHECK_OOM(c, -ENOMEM);
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(sorted); i++)
                n += (size_t) sprintf(supported + n, "%s\"%s\"", i > 0 ? ", " : "", sorted[i]);
        val_not_supported(c, sp, sig, supported);
}

static void validate_hooks(struct vctx *c, const struct container *ctr, const char *cpath, int64_t grace, bool allowed,
                           const char *os_name) {
        _cleanup_free_ char *lp = NULL;

        if (!ctr->post_start && !ctr->pre_stop && !ctr->stop_signal)
                return;
        lp = val_child(c, cpath, "lifecycle");
        if (!lp)
                return;
        if (!allowed) {
                val_forbidden(c, lp, "may not be set for init containers without restartPolicy=Always");
                return;
        }
        validate_handler(c, ctr->post_start, grace, lp, "postStart");
        validate_handler(c, ctr->pre_stop, grace, lp, "preStop");
        if (ctr->stop_signal)
                validate_stop_signal(c, ctr->stop_signal, os_name, lp);
}

void pod_validate_lifecycle(struct vctx *c, const struct pod_spec *s) {
        for (size_t i = 0; i < s->n_containers; i++) {
                _cleanup_free_ char *cp = val_idx(c, "spec.containers", i);
                if (!cp)
                        continue;
                validate_restart_policy(c, &s->containers[i], cp, false);
                validate_hooks(c, &s->containers[i], cp, s->termination_grace_period_seconds, true, s->os_name);
        }
        for (size_t i = 0; i < s->n_init_containers; i++) {
                _cleanup_free_ char *cp = val_idx(c, "spec.initContainers", i);
                if (!cp)
                        continue;
                validate_restart_policy(c, &s->init_containers[i], cp, true);
                validate_hooks(c, &s->init_containers[i], cp, s->termination_grace_period_seconds,
                               container_is_sidecar(&s->init_containers[i]), s->os_name);
        }
}
