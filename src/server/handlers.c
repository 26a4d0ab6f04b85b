/* SPDX-License-Identifier: Apache-2.0 */
/* The simple endpoints: /healthz, /pods, /runningpods/, /spec/, /configz, /run, /stats/summary and
 * /metrics/resource. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/duration.h"
#include "basic/error.h"
#include "basic/evbuffer.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "cri/cri.h"
#include "server/server-internal.h"
#include "stats/machine.h"
#include "stats/summary.h"

/* ---------------------------------------------------------------- /healthz */

void api_handle_healthz(struct api_request *r, const char *check) {
        _cleanup_ck_error_ struct ck_error *why = NULL;
        int sync = api_host_sync_loop_health(r->s, &why);

        if (check) {
                if (streq(check, "syncloop") && sync < 0)
                        api_reply_text(r->req, 500, "internal server error: %s\n", ck_error_message(why));
                else
                        api_reply_text(r->req, 200, "ok");
                return;
        }
        /* the root handler runs every check and records its result (healthz.handleRootHealth) */
        api_sli_observe(r->s, API_SLI_PING, true);
        api_sli_observe(r->s, API_SLI_LOG, true);
        api_sli_observe(r->s, API_SLI_SYNCLOOP, sync >= 0);
        if (sync < 0) {
                log_info("healthz check failed: syncloop: %s", ck_error_message(why));
                api_reply_text(r->req, 500,
                               "[+]ping ok\n[+]log ok\n[-]syncloop failed: reason withheld\n"
                               "healthz check failed\n");
                return;
        }
        api_reply_text(r->req, 200, "ok");
}

/* ---------------------------------------------------------------- pods */

void api_handle_pods(struct api_request *r) {
        json_t *list = NULL;
        int k = api_host_pods_json(r->s, &list);
        if (k < 0) {
                api_reply_text(r->req, 500, "Internal Error: %s\n", strerror(-k));
                return;
        }
        api_reply_json(r->req, 200, list);
}

void api_handle_running_pods(struct api_request *r) {
        json_t *list = NULL;
        int k = api_host_running_pods_json(r->s, &list);
        if (k < 0) {
                api_reply_text(r->req, 500, "Internal Error: %s\n", strerror(-k));
                return;
        }
        api_reply_json(r->req, 200, list);
}

/* ---------------------------------------------------------------- /spec, /configz */

void api_handle_spec(struct api_request *r) {
        json_t *j = NULL;
        int k;

        k = stats_machine_info_to_json(r->s->machine, &j);
        if (k < 0) {
                api_reply_text(r->req, 500, "Internal Error: cannot read the machine info: %s\n", strerror(-k));
                return;
        }
        api_reply_json(r->req, 200, j);
}

static json_t *duration_json(uint64_t usec) {
        char buf[64];
        return json_string(go_duration_format((int64_t) usec * 1000, buf, sizeof(buf)));
}

void api_handle_configz(struct api_request *r) {
        const struct kubelet_options *o = r->s->o;
        json_t *c;

        c = json_pack("{s:s, s:s, s:b, s:s, s:i, s:i, s:s, s:i, s:s, s:s, s:o, s:o, s:o, s:o, s:i, s:s, s:s, s:s, s:b, "
                      "s:s, s:{s:i}}",
                      "kind", "KubeletConfiguration", "apiVersion", "kubelet.config.k8s.io/v1beta1", "enableServer",
                      o->enable_server, "address", o->address, "port", o->port, "readOnlyPort", o->read_only_port,
                      "healthzBindAddress", o->healthz_bind_address, "healthzPort", o->healthz_port, "staticPodPath",
                      strempty(o->pod_manifest_path), "staticPodURL", strempty(o->manifest_url), "syncFrequency",
                      duration_json(o->sync_frequency_usec), "fileCheckFrequency",
                      duration_json(o->file_check_frequency_usec), "httpCheckFrequency",
                      duration_json(o->http_check_frequency_usec), "runtimeRequestTimeout",
                      duration_json(o->runtime_request_timeout_usec), "maxPods", o->max_pods,
                      "containerRuntimeEndpoint", o->container_runtime_endpoint, "podLogsDir", o->pod_logs_dir,
                      "tlsCertFile", strempty(o->tls_cert_file), "enableDebuggingHandlers",
                      o->enable_debugging_handlers, "imageServiceEndpoint", strempty(o->image_service_endpoint),
                      "logging", "verbosity", o->verbosity);
        if (!c) {
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        json_object_set_new(c, "authentication",
                            json_pack("{s:{s:s}, s:{s:b, s:o}, s:{s:b}}", "x509", "clientCAFile",
                                      strempty(o->client_ca_file), "webhook", "enabled",
                                      o->authentication_token_webhook, "cacheTTL",
                                      duration_json(o->authentication_token_webhook_cache_ttl_usec), "anonymous",
                                      "enabled", o->anonymous_auth));
        json_object_set_new(c, "authorization",
                            json_pack("{s:s, s:{s:o, s:o}}", "mode", o->authorization_mode, "webhook",
                                      "cacheAuthorizedTTL",
                                      duration_json(o->authorization_webhook_cache_authorized_ttl_usec),
                                      "cacheUnauthorizedTTL",
                                      duration_json(o->authorization_webhook_cache_unauthorized_ttl_usec)));
        /* the cgroup settings the node e2e suite reads (the driver as the runtime decided it, as upstream) */
        json_object_set_new(c, "cgroupsPerQOS", json_boolean(o->cgroups_per_qos));
        json_object_set_new(c, "cgroupRoot", json_string(strempty(o->cgroup_root)));
        json_object_set_new(c, "cgroupDriver", json_string(strempty(o->cgroup_driver)));
        json_object_set_new(c, "clusterDomain", json_string(strempty(o->cluster_domain)));
        {
                json_t *dns = json_array();
                _cleanup_free_ char *copy = strdup(strempty(o->cluster_dns));
                char *save = NULL;
                for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; dns && t; t = strtok_r(NULL, ",", &save))
                        json_array_append_new(dns, json_string(t));
                if (dns)
                        json_object_set_new(c, "clusterDNS", dns);
        }
        /* graceful node shutdown (the list omitted when empty, as omitempty does) */
        json_object_set_new(c, "shutdownGracePeriod", duration_json(o->shutdown_grace_period_usec));
        json_object_set_new(c, "shutdownGracePeriodCriticalPods",
                            duration_json(o->shutdown_grace_period_critical_pods_usec));
        if (o->n_shutdown_by_priority > 0) {
                json_t *l = json_array();
                for (size_t i = 0; l && i < o->n_shutdown_by_priority; i++)
                        json_array_append_new(l, json_pack("{s:i, s:I}", "priority",
                                                           (int) o->shutdown_by_priority[i].priority,
                                                           "shutdownGracePeriodSeconds",
                                                           (json_int_t) o->shutdown_by_priority[i].seconds));
                if (l)
                        json_object_set_new(c, "shutdownGracePeriodByPodPriority", l);
        }
        api_reply_json(r->req, 200, json_pack("{s:o}", "kubeletconfig", c));
}

/* ---------------------------------------------------------------- async calls */

/* A request waiting for a CRI call or the stats provider. If the server goes away first, cancel() answers 503
 * and forgets the request; the call's callback then only frees the op. */
struct api_op {
        struct api_stream stream;
        struct evhttp_request *req; /* NULL once answered */
        bool resource_metrics;
};

static void op_cancel(struct api_stream *st) {
        struct api_op *op = (struct api_op *) st;
        if (op->req)
                api_reply_text(op->req, 503, "Service Unavailable: the kubelet is shutting down\n");
        op->req = NULL;
        api_stream_unregister(st);
}

static struct api_op *op_new(struct api_request *r) {
        struct api_op *op = calloc(1, sizeof(*op));
        if (!op) {
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return NULL;
        }
        op->stream.cancel = op_cancel;
        op->stream.kind = API_STREAM_SHORT;
        op->req = r->req;
        if (api_stream_register(r->s, &op->stream) < 0) {
                free(op);
                api_reply_text(r->req, 503, "Service Unavailable: too many requests in progress\n");
                return NULL;
        }
        return op;
}

/* the op's callback ran: unregister (if still) and return the request to answer, or NULL */
static struct evhttp_request *op_finish(struct api_op *op) {
        struct evhttp_request *req = op->req;
        api_stream_unregister(&op->stream);
        op->req = NULL;
        return req;
}

/* ---------------------------------------------------------------- /stats/summary, /metrics/resource */

static void on_summary(int k, struct stats_summary *summary, void *userdata) {
        _cleanup_(stats_summary_freep) _unused_ struct stats_summary *owned = summary; /* freed when done */
        json_t *doc = NULL;
        struct api_op *op = userdata;
        struct evhttp_request *req = op_finish(op);
        bool metrics = op->resource_metrics;

        free(op);
        if (!req)
                return;
        if ((k < 0 || !summary) && !metrics) {
                api_reply_text(req, 500, "Internal Error: failed to get node info: %s\n", strerror(-k));
                return;
        }
        if (metrics) {
                /* as upstream's collector: a failed collection is scrape_error 1, not an HTTP error */
                _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
                if (!b || stats_resource_metrics(summary, b) < 0) {
                        api_reply_text(req, 500, "Internal Error: out of memory\n");
                        return;
                }
                api_reply_buffer(req, 200, "text/plain; version=0.0.4; charset=utf-8", b);
                return;
        }
        /* JSON only here, at the server's edge */
        k = stats_summary_to_json(summary, &doc);
        if (k < 0) {
                api_reply_text(req, 500, "Internal Error: failed to get node info: %s\n", strerror(-k));
                return;
        }
        api_reply_json(req, 200, doc);
}

void api_handle_stats_summary(struct api_request *r, bool resource_metrics) {
        struct api_op *op;
        int k;

        if (!resource_metrics) {
                _cleanup_free_ char *only = api_query_get(r->query, "only_cpu_and_memory");
                bool b;
                if (only && parse_bool(only, &b) < 0) {
                        api_reply_text(r->req, 400, "invalid only_cpu_and_memory value \"%s\": must be a boolean\n",
                                       only);
                        return;
                }
        }
        op = op_new(r);
        if (!op)
                return;
        op->resource_metrics = resource_metrics;
        k = stats_summary_get(r->s->stats, on_summary, op);
        if (k < 0) {
                struct evhttp_request *req = op_finish(op);
                free(op);
                api_reply_text(req, 500, "Internal Error: %s\n", strerror(-k));
        }
}

/* ---------------------------------------------------------------- /run */

static void on_exec_sync(const struct cri_reply *reply, void *userdata) {
        struct api_op *op = userdata;
        struct evhttp_request *req = op_finish(op);
        const Runtime__V1__ExecSyncResponse *resp = (const void *) reply->msg;
        _cleanup_evbuffer_ struct evbuffer *b = NULL;

        free(op);
        if (!req)
                return;
        if (reply->r < 0) {
                api_reply_text(req, 500, "Internal Error: failed to run in container: %s\n", reply->message);
                return;
        }
        b = evbuffer_new();
        if (!b) {
                api_reply_text(req, 500, "Internal Error: out of memory\n");
                return;
        }
        /* as upstream's RunInContainer: stdout and stderr together */
        evbuffer_add(b, resp->stdout.data, resp->stdout.len);
        evbuffer_add(b, resp->stderr.data, resp->stderr.len);
        api_reply_buffer(req, 200, "text/plain; charset=utf-8", b);
}

static char *form_value(struct api_request *r, const char *key) {
        struct evbuffer *in = evhttp_request_get_input_buffer(r->req);
        const char *ct = evhttp_find_header(evhttp_request_get_input_headers(r->req), "Content-Type");
        char *v = api_query_get(r->query, key);
        size_t n;

        if (v || !in || !ct || !startswith(ct, "application/x-www-form-urlencoded"))
                return v;
        n = evbuffer_get_length(in);
        if (n == 0 || n > API_MAX_BODY_SIZE)
                return NULL;
        {
                _cleanup_free_ char *body = malloc(n + 1);
                if (!body)
                        return NULL;
                evbuffer_copyout(in, body, n);
                body[n] = '\0';
                return api_query_get(body, key);
        }
}

/* strings.Split(cmd, " "), as upstream's /run (empty elements are kept) */
static int split_spaces(const char *s, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        for (;;) {
                const char *e = strchr(s, ' ');
                size_t n = e ? (size_t) (e - s) : strlen(s);
                if (strv_push(&l, strndup(s, n)) < 0)
                        return -ENOMEM;
                if (!e)
                        break;
                s = e + 1;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

void api_handle_run(struct api_request *r, const char *rest) {
        _cleanup_strv_free_ char **parts = NULL, **cmd = NULL;
        _cleanup_free_ char *cmdline = NULL;
        _cleanup_(kc_container_freep) struct kc_container *c = NULL;
        Runtime__V1__ExecSyncRequest req = RUNTIME__V1__EXEC_SYNC_REQUEST__INIT;
        const char *ns, *pod, *container;
        struct api_op *op;
        int k;

        /* /run/{podNamespace}/{podID}/{containerName} or /run/{podNamespace}/{podID}/{uid}/{containerName} */
        if (api_path_components(rest, &parts) < 0 || (strv_length(parts) != 3 && strv_length(parts) != 4)) {
                api_reply_text(r->req, 400, "invalid path: want /run/{podNamespace}/{podID}/{containerName}\n");
                return;
        }
        ns = parts[0];
        pod = parts[1];
        container = parts[strv_length(parts) - 1];
        cmdline = form_value(r, "cmd");
        if (isempty(cmdline) || split_spaces(cmdline, &cmd) < 0 || !cmd) {
                api_reply_text(r->req, 400, "missing \"cmd\" parameter\n");
                return;
        }
        k = api_host_lookup_container(r->s, ns, pod, container, false, &c, NULL);
        if (k < 0) {
                api_reply_lookup_error(r->req, k, ns, pod, container);
                return;
        }
        if (strv_length(parts) == 4 && !api_host_pod_exists(r->s, ns, pod, NULL)) {
                api_reply_lookup_error(r->req, -ENXIO, ns, pod, container);
                return;
        }
        if (c->state != KC_CONTAINER_RUNNING) {
                api_reply_text(r->req, 500, "Internal Error: container \"%s\" in pod \"%s/%s\" is not running\n",
                               container, ns, pod);
                return;
        }
        op = op_new(r);
        if (!op)
                return;
        req.container_id = c->id;
        req.cmd = cmd;
        req.n_cmd = strv_length(cmd);
        req.timeout = 0;
        k = cri_exec_sync(r->s->cri, &req, 0, on_exec_sync, op, NULL);
        if (k < 0) {
                struct evhttp_request *hr = op_finish(op);
                free(op);
                api_reply_text(hr, 500, "Internal Error: %s\n", strerror(-k));
        }
}
