/* SPDX-License-Identifier: Apache-2.0 */
/* The pod's service account and its tokens for credential provider plugins (credprov_sa.h). */
#include "kubelet/credprov_sa.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/json.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"

struct credprov_sa_fetch {
        struct kube_client *c;
        struct credprov *cp;
        char *image;
        credprov_sa_done_t done;
        void *userdata;
        struct kube_request *req;
        char *ns, *pod_name, *pod_uid, *sa_name, *sa_uid;
        json_t *annotations;
        json_t *tokens; /* {"audience": "token"} */
        char **audiences;
        size_t next; /* the next audience to ask a token for */
        char *error;
};

static void fetch_free(struct credprov_sa_fetch *f) {
        const char *k;
        json_t *v;

        if (!f)
                return;
        kube_request_cancel(f->req);
        free(f->image);
        free(f->ns);
        free(f->pod_name);
        free(f->pod_uid);
        free(f->sa_name);
        free(f->sa_uid);
        json_decref(f->annotations);
        if (f->tokens)
                json_object_foreach(f->tokens, k, v) {
                        const char *t = json_string_value(v);
                        if (t)
                                explicit_bzero((char *) t, strlen(t));
                }
        json_decref(f->tokens);
        strv_free(f->audiences);
        free(f->error);
        free(f);
}

void credprov_sa_fetch_cancel(struct credprov_sa_fetch *f) {
        fetch_free(f);
}

json_t *credprov_sa_token_request(const char *sa_uid, const char *audience, const char *pod_name, const char *pod_uid) {
        return json_pack("{s:s, s:s, s:{s:s}, s:{s:[s], s:{s:s, s:s, s:s, s:s}}}", "apiVersion",
                         "authentication.k8s.io/v1", "kind", "TokenRequest", "metadata", "uid", strempty(sa_uid),
                         "spec", "audiences", audience, "boundObjectRef", "apiVersion", "v1", "kind", "Pod", "name",
                         pod_name, "uid", pod_uid);
}

static void finish(struct credprov_sa_fetch *f) {
        struct credprov_pod_sa sa = {
                .namespace = f->ns,
                .pod_name = f->pod_name,
                .pod_uid = f->pod_uid,
                .name = f->sa_name,
                .uid = f->sa_uid,
                .annotations = f->annotations,
                .tokens = f->tokens,
                .error = f->error,
        };

        f->req = NULL;
        f->done(&sa, f->userdata);
        fetch_free(f);
}

static void next_token(struct credprov_sa_fetch *f);

static void on_token(const struct kube_response *resp, void *userdata) {
        struct credprov_sa_fetch *f = userdata;
        const char *token = json_string_value(json_object_get(json_object_get(resp->body, "status"), "token"));

        f->req = NULL;
        if (resp->r < 0 || resp->status >= 300 || isempty(token)) {
                if (asprintf(&f->error, "failed to get service account token: %s",
                             !isempty(resp->error) ? resp->error : "no token in the TokenRequest status") < 0)
                        f->error = NULL;
                log_v(2, "pod %s/%s: credential provider: %s", f->ns, f->pod_name, strna(f->error));
                finish(f);
                return;
        }
        if (json_object_set_new(f->tokens, f->audiences[f->next], json_string(token)) < 0) {
                f->error = strdup("failed to get service account token: out of memory");
                finish(f);
                return;
        }
        f->next++;
        next_token(f);
}

static void next_token(struct credprov_sa_fetch *f) {
        _cleanup_free_ char *ns = NULL, *sa = NULL, *path = NULL;
        json_auto_t *body = NULL;
        int r;

        if (!f->audiences || !f->audiences[f->next]) {
                finish(f);
                return;
        }
        ns = kube_escape(f->ns);
        sa = kube_escape(f->sa_name);
        body = credprov_sa_token_request(f->sa_uid, f->audiences[f->next], f->pod_name, f->pod_uid);
        if (!ns || !sa || !body || asprintf(&path, "/api/v1/namespaces/%s/serviceaccounts/%s/token", ns, sa) < 0)
                r = -ENOMEM;
        else
                r = kube_request(f->c, "POST", path, body, NULL, 0, on_token, f, &f->req);
        if (r < 0) {
                f->req = NULL;
                if (asprintf(&f->error, "failed to get service account token: %s", strerror(-r)) < 0)
                        f->error = NULL;
                finish(f);
        }
}

static void on_service_account(const struct kube_response *resp, void *userdata) {
        struct credprov_sa_fetch *f = userdata;
        const json_t *meta = json_object_get(resp->body, "metadata");
        const char *uid = json_string_value(json_object_get(meta, "uid"));
        const json_t *annots = json_object_get(meta, "annotations");

        f->req = NULL;
        if (resp->r < 0 || resp->status >= 300 || isempty(uid)) {
                if (asprintf(&f->error, "failed to get service account: %s",
                             !isempty(resp->error) ? resp->error : "invalid ServiceAccount") < 0)
                        f->error = NULL;
                log_v(2, "pod %s/%s: credential provider: %s", f->ns, f->pod_name, strna(f->error));
                finish(f);
                return;
        }
        f->sa_uid = strdup(uid);
        f->annotations = json_is_object(annots) ? json_deep_copy(annots) : json_object();
        if (f->annotations)
                f->audiences = credprov_token_audiences(f->cp, f->image, f->annotations);
        if (!f->sa_uid || !f->annotations) {
                f->error = strdup("failed to get service account: out of memory");
                finish(f);
                return;
        }
        next_token(f);
}

int credprov_sa_fetch(struct kube_client *c, struct credprov *p, const char *image, const char *ns,
                      const char *pod_name, const char *pod_uid, const char *sa_name, credprov_sa_done_t done,
                      void *userdata, struct credprov_sa_fetch **ret) {
        struct credprov_sa_fetch *f;
        _cleanup_free_ char *ens = NULL, *esa = NULL, *path = NULL;
        int r;

        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        f->c = c;
        f->cp = p;
        f->image = strdup(image);
        f->done = done;
        f->userdata = userdata;
        f->ns = strdup(ns);
        f->pod_name = strdup(pod_name);
        f->pod_uid = strdup(pod_uid);
        f->sa_name = strdup(sa_name);
        f->tokens = json_object();
        ens = kube_escape(ns);
        esa = kube_escape(sa_name);
        if (!f->image || !f->ns || !f->pod_name || !f->pod_uid || !f->sa_name || !f->tokens || !ens || !esa ||
            asprintf(&path, "/api/v1/namespaces/%s/serviceaccounts/%s", ens, esa) < 0) {
                fetch_free(f);
                return -ENOMEM;
        }
        /* the audiences are known once the service account's annotations are (a required one missing: that
         * plugin is not run, and gets no token) */
        r = kube_request(c, "GET", path, NULL, NULL, 0, on_service_account, f, &f->req);
        if (r < 0) {
                fetch_free(f);
                return r;
        }
        *ret = f;
        return 0;
}
