/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet API's request attributes (auth.go): path → subresource, method → verb; path splitting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <openssl/x509.h>

#include "basic/strv.h"
#include "basic/time.h"
#include "server/server-internal.h"

/* the first subresource a path is authorized against: "pods", "stats", "log", "proxy"... */
static const char *first_subresource(const char *path) {
        const char *subs[API_SUBRESOURCES_MAX];

        assert_true(api_subresources(path, subs) >= 1);
        return subs[0];
}

static void test_subresources(void **state) {
        assert_string_equal(first_subresource("/stats"), "stats");
        assert_string_equal(first_subresource("/stats/summary"), "stats");
        assert_string_equal(first_subresource("/statsfoo"), "proxy"); /* prefix on a '/' boundary only */
        assert_string_equal(first_subresource("/metrics"), "metrics");
        assert_string_equal(first_subresource("/metrics/resource"), "metrics");
        assert_string_equal(first_subresource("/metrics/probes"), "metrics");
        assert_string_equal(first_subresource("/metricsx"), "proxy");
        assert_string_equal(first_subresource("/logs"), "log");
        assert_string_equal(first_subresource("/logs/syslog"), "log");
        assert_string_equal(first_subresource("/containerLogs/a/b/c"), "proxy");
        assert_string_equal(first_subresource("/pods"), "pods");
        assert_string_equal(first_subresource("/exec/a/b/c"), "proxy");
        assert_string_equal(first_subresource("/checkpoint/a/b/c"), "checkpoint");
        assert_string_equal(first_subresource("/"), "proxy");
}

/* KubeletFineGrainedAuthz (GA, locked on since v1.36): upstream v1.37's GetRequestAttributes, fine-grained
 * subresource first, then proxy; the others one subresource */
static void check_subs(const char *path, const char *first, const char *second) {
        const char *subs[API_SUBRESOURCES_MAX];
        size_t n = api_subresources(path, subs);

        assert_int_equal(n, second ? 2 : 1);
        assert_string_equal(subs[0], first);
        if (second)
                assert_string_equal(subs[1], second);
}

static void test_fine_grained_subresources(void **state) {
        check_subs("/pods", "pods", "proxy");
        check_subs("/pods/", "pods", "proxy");
        check_subs("/runningpods", "pods", "proxy");
        check_subs("/runningpods/", "pods", "proxy");
        check_subs("/allocatedPods", "pods", "proxy");
        check_subs("/podsx", "proxy", NULL); /* on a '/' boundary only */
        check_subs("/healthz", "healthz", "proxy");
        check_subs("/healthz/ping", "healthz", "proxy");
        check_subs("/healthz/syncloop", "healthz", "proxy");
        check_subs("/configz", "configz", "proxy");
        check_subs("/configzz", "proxy", NULL);
        /* the zpages: one subresource each, no fallback (flagz is configz) */
        check_subs("/statusz", "statusz", NULL);
        check_subs("/flagz", "configz", NULL);
        check_subs("/stats/summary", "stats", NULL);
        check_subs("/metrics/cadvisor", "metrics", NULL);
        check_subs("/logs/", "log", NULL);
        check_subs("/checkpoint/a/b/c", "checkpoint", NULL);
        /* upstream has no fine-grained subresource for these */
        check_subs("/spec", "proxy", NULL);
        check_subs("/spec/", "proxy", NULL);
        check_subs("/containerLogs/ns/p/c", "proxy", NULL);
        check_subs("/exec/ns/p/c", "proxy", NULL);
        check_subs("/run/ns/p/c", "proxy", NULL);
        check_subs("/", "proxy", NULL);
}

/* upstream's 403 body: every subresource tried, as Go prints a []string */
static void test_forbidden_message(void **state) {
        _cleanup_free_ char *pods = api_forbidden_message("bob", "get", "/pods");
        _cleanup_free_ char *stats = api_forbidden_message("bob", "get", "/stats/summary");
        _cleanup_free_ char *flagz = api_forbidden_message("system:anonymous", "create", "/flagz");

        assert_string_equal(pods, "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[pods proxy])\n");
        assert_string_equal(stats, "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[stats])\n");
        assert_string_equal(
                flagz, "Forbidden (user=system:anonymous, verb=create, resource=nodes, subresource(s)=[configz])\n");
}

/* the order of the reviews and the fallback, on cached answers (no API server is asked: every key is cached) */
static void cache_answer(struct api_server *s, struct api_user *u, const char *sub, bool yes) {
        assert_non_null(
                api_cache_put_at(&s->authz_cache, api_authz_key(u, "get", sub), yes, 3600 * USEC_PER_SEC, now_usec()));
}

static void test_authorize_fallback(void **state) {
        struct kubelet_options o = { .authorization_mode = "Webhook" };
        struct api_server s = { .o = &o, .client = (struct kube_client *) 0x1 /* never called */ };
        char *groups[] = { "system:authenticated", NULL };
        struct api_user bob = { .name = "bob", .groups = groups };
        struct api_auth a = { .s = &s, .method = EVHTTP_REQ_GET, .user = bob };

        /* nodes/pods allowed: proxy is not asked (no answer for it in the cache) */
        cache_answer(&s, &bob, "pods", true);
        a.path = "/pods";
        assert_int_equal(api_auth_authorize(&a), 0);
        assert_int_equal(a.attempt, 0);
        api_cache_free(s.authz_cache);
        s.authz_cache = NULL;

        /* nodes/pods denied, nodes/proxy allowed: allowed */
        cache_answer(&s, &bob, "pods", false);
        cache_answer(&s, &bob, "proxy", true);
        assert_int_equal(api_auth_authorize(&a), 0);
        assert_int_equal(a.attempt, 1);
        assert_null(a.message);

        /* /configz: both denied, upstream's message names both */
        cache_answer(&s, &bob, "configz", false);
        api_cache_free(s.authz_cache);
        s.authz_cache = NULL;
        cache_answer(&s, &bob, "configz", false);
        cache_answer(&s, &bob, "proxy", false);
        a.path = "/configz";
        assert_int_equal(api_auth_authorize(&a), -EPERM);
        assert_int_equal(a.status, 403);
        assert_string_equal(a.message,
                            "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[configz proxy])\n");
        free(a.message);
        a.message = NULL;

        /* /flagz is configz only: proxy allowed does not matter */
        cache_answer(&s, &bob, "proxy", true);
        a.path = "/flagz";
        assert_int_equal(api_auth_authorize(&a), -EPERM);
        assert_string_equal(a.message, "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[configz])\n");
        free(a.message);
        a.message = NULL;
        /* and /configz with proxy now allowed is allowed */
        a.path = "/configz";
        assert_int_equal(api_auth_authorize(&a), 0);

        /* AlwaysAllow asks nothing */
        o.authorization_mode = "AlwaysAllow";
        a.path = "/statusz";
        assert_int_equal(api_auth_authorize(&a), 0);
        api_cache_free(s.authz_cache);
}

/* /statusz and /flagz content negotiation (apiserver's NegotiateMediaTypeOptions with the zpages' restrictions) */
static void test_zpage_negotiate(void **state) {
        const char *v = NULL;
        bool pretty = false;

        assert_int_equal(api_zpage_negotiate(NULL, "Statusz", &v, &pretty), API_ZPAGE_TEXT);
        assert_int_equal(api_zpage_negotiate("  ", "Statusz", &v, &pretty), API_ZPAGE_TEXT);
        assert_int_equal(api_zpage_negotiate("*/*", "Statusz", &v, &pretty), API_ZPAGE_TEXT);
        assert_int_equal(api_zpage_negotiate("text/plain", "Statusz", &v, &pretty), API_ZPAGE_TEXT);
        assert_int_equal(api_zpage_negotiate("text/*", "Flagz", &v, &pretty), API_ZPAGE_TEXT);
        /* structured only with the kind named in full */
        assert_int_equal(api_zpage_negotiate("application/json", "Statusz", &v, &pretty), API_ZPAGE_NOT_ACCEPTABLE);
        assert_int_equal(api_zpage_negotiate("application/json;as=Statusz;g=config.k8s.io", "Statusz", &v, &pretty),
                         API_ZPAGE_NOT_ACCEPTABLE);
        assert_int_equal(api_zpage_negotiate("application/json;as=Flagz;g=config.k8s.io;v=v1beta1", "Statusz", &v,
                                             &pretty),
                         API_ZPAGE_NOT_ACCEPTABLE);
        assert_int_equal(api_zpage_negotiate("text/html", "Statusz", &v, &pretty), API_ZPAGE_NOT_ACCEPTABLE);
        assert_int_equal(api_zpage_negotiate("text/plain;as=Statusz;g=config.k8s.io;v=v1beta1", "Statusz", &v, &pretty),
                         API_ZPAGE_NOT_ACCEPTABLE);
        assert_int_equal(api_zpage_negotiate("application/json;as=Statusz;g=config.k8s.io;v=v1beta1", "Statusz", &v,
                                             &pretty),
                         API_ZPAGE_JSON);
        assert_string_equal(v, "v1beta1");
        assert_false(pretty);
        assert_int_equal(api_zpage_negotiate("application/yaml; as=Flagz; g=config.k8s.io; v=v1alpha1; pretty=1",
                                             "Flagz", &v, &pretty),
                         API_ZPAGE_YAML);
        assert_string_equal(v, "v1alpha1");
        assert_true(pretty);
        /* the first acceptable clause by quality, then the next */
        assert_int_equal(api_zpage_negotiate("application/json, text/plain", "Statusz", &v, &pretty), API_ZPAGE_TEXT);
        assert_int_equal(api_zpage_negotiate("text/plain;q=0.5, application/json;as=Statusz;g=config.k8s.io;"
                                             "v=v1beta1",
                                             "Statusz", &v, &pretty),
                         API_ZPAGE_JSON);
        assert_int_equal(api_zpage_negotiate("text/plain, application/json;as=Statusz;g=config.k8s.io;v=v1beta1",
                                             "Statusz", &v, &pretty),
                         API_ZPAGE_TEXT);
        assert_int_equal(api_zpage_negotiate("application/*;as=Statusz;g=config.k8s.io;v=v1beta1", "Statusz", &v,
                                             &pretty),
                         API_ZPAGE_JSON);
}

static void test_verbs(void **state) {
        assert_string_equal(api_verb(EVHTTP_REQ_GET), "get");
        assert_string_equal(api_verb(EVHTTP_REQ_HEAD), "get");
        assert_string_equal(api_verb(EVHTTP_REQ_POST), "create");
        assert_string_equal(api_verb(EVHTTP_REQ_PUT), "update");
        assert_string_equal(api_verb(EVHTTP_REQ_PATCH), "patch");
        assert_string_equal(api_verb(EVHTTP_REQ_DELETE), "delete");
        assert_string_equal(api_verb(EVHTTP_REQ_OPTIONS), "");
}

static void test_path_components(void **state) {
        char **l = NULL;

        assert_int_equal(api_path_components("/default/web/c", &l), 0);
        assert_int_equal(strv_length(l), 3);
        assert_string_equal(l[0], "default");
        assert_string_equal(l[2], "c");
        l = strv_free(l);
        assert_int_equal(api_path_components("//a%20b///c/", &l), 0);
        assert_int_equal(strv_length(l), 2);
        assert_string_equal(l[0], "a b");
        l = strv_free(l);
        assert_int_equal(api_path_components("", &l), 0);
        assert_int_equal(strv_length(l), 0);
        l = strv_free(l);
        /* nothing that could walk out of a path when joined, no NUL */
        assert_int_equal(api_path_components("/a/../b", &l), -EINVAL);
        assert_int_equal(api_path_components("/a/%2e%2e/b", &l), -EINVAL);
        assert_int_equal(api_path_components("/a/./b", &l), -EINVAL);
        assert_int_equal(api_path_components("/a%2fb", &l), -EINVAL);
        assert_int_equal(api_path_components("/a%00b", &l), -EINVAL);
        assert_null(l);
}

static void test_query(void **state) {
        _cleanup_free_ char *v = api_query_get("a=1&cmd=ls+-l&a=2", "cmd");
        _cleanup_strv_free_ char **all = NULL;

        assert_string_equal(v, "ls -l");
        assert_int_equal(api_query_get_all("command=sh&command=-c&command=echo%20hi", "command", &all), 0);
        assert_int_equal(strv_length(all), 3);
        assert_string_equal(all[2], "echo hi");
        assert_null(api_query_get("a=1", "b"));
        assert_null(api_query_get(NULL, "b"));
}

/* a certificate with the given subject entries (field, value, value length: a NUL may be inside) */
static X509 *cert_with(const char *cn, size_t cn_len, const char *o, size_t o_len) {
        X509 *x = X509_new();
        X509_NAME *n = X509_get_subject_name(x);

        assert_non_null(x);
        if (o)
                assert_int_equal(X509_NAME_add_entry_by_txt(n, "O", MBSTRING_UTF8, (const unsigned char *) o,
                                                            (int) o_len, -1, 0),
                                 1);
        if (cn)
                assert_int_equal(X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *) cn,
                                                            (int) cn_len, -1, 0),
                                 1);
        return x;
}

/* x509.CommonNameUserConversion: CN is the user, O the groups; a NUL inside either is refused, never cut
 * ("admin\0.tenant" must not become "admin") */
static void test_user_from_cert(void **state) {
        struct api_user u = {};
        X509 *x;

        x = cert_with("alice", 5, "dev", 3);
        assert_int_equal(api_user_from_cert(x, &u), 0);
        assert_string_equal(u.name, "alice");
        assert_string_equal(u.groups[0], "dev");
        assert_string_equal(u.groups[1], "system:authenticated");
        assert_null(u.groups[2]);
        api_user_done(&u);
        X509_free(x);

        x = cert_with("admin\0.tenant", 13, NULL, 0);
        assert_int_equal(api_user_from_cert(x, &u), -EINVAL);
        assert_null(u.name);
        X509_free(x);

        x = cert_with("bob", 3, "system:masters\0x", 16);
        assert_int_equal(api_user_from_cert(x, &u), -EINVAL);
        assert_null(u.name);
        assert_null(u.groups);
        X509_free(x);

        x = cert_with(NULL, 0, "dev", 3); /* no CN */
        assert_int_equal(api_user_from_cert(x, &u), -EINVAL);
        X509_free(x);
}

/* the authorization cache key keeps users and groups apart: user "a" in group "x,y" is not user "a" in groups
 * "x" and "y", and no separator inside a name can make two requests share a key */
static void test_authz_key(void **state) {
        char *one[] = { "x,y", NULL }, *two[] = { "x", "y", NULL }, *nl[] = { "g\nget", NULL },
             *plain[] = { "g", NULL };
        struct api_user a = { .name = "a", .groups = one }, b = { .name = "a", .groups = two };
        struct api_user c = { .name = "u", .groups = nl }, d = { .name = "u", .groups = plain };
        _cleanup_free_ char *ka = api_authz_key(&a, "get", "proxy"), *kb = api_authz_key(&b, "get", "proxy");
        _cleanup_free_ char *kc = api_authz_key(&c, "get", "proxy"), *kd = api_authz_key(&d, "get\nget", "proxy");
        _cleanup_free_ char *ka2 = api_authz_key(&a, "get", "proxy");

        assert_non_null(ka);
        assert_non_null(kb);
        assert_string_not_equal(ka, kb);
        assert_string_not_equal(kc, kd);
        assert_string_equal(ka, ka2);
}

/* issue 26: the SubjectAccessReview carries the TokenReview user's uid and extra, as upstream's, and they are
 * part of the cache key (a review answered for one uid/extra is not another's) */
static void test_sar_uid_extra(void **state) {
        char *groups[] = { "system:authenticated", NULL };
        json_t *extra = json_pack("{s:[s]}", "authentication.kubernetes.io/credential-id", "JTI=abc");
        struct api_user u = { .name = "alice", .groups = groups, .uid = "u-123", .extra = extra },
                        plain = { .name = "alice", .groups = groups };
        json_t *body = api_sar_body(&u, "get", "proxy", "node1"), *spec = json_object_get(body, "spec");
        json_t *body2 = api_sar_body(&plain, "get", "proxy", "node1"), *spec2 = json_object_get(body2, "spec");
        _cleanup_free_ char *ku = api_authz_key(&u, "get", "proxy"), *kp = api_authz_key(&plain, "get", "proxy");

        assert_string_equal(json_string_value(json_object_get(spec, "user")), "alice");
        assert_string_equal(json_string_value(json_object_get(spec, "uid")), "u-123");
        assert_true(json_equal(json_object_get(spec, "extra"), extra));
        assert_string_equal(json_string_value(
                                    json_object_get(json_object_get(spec, "resourceAttributes"), "subresource")),
                            "proxy");
        assert_string_equal(json_string_value(json_object_get(json_object_get(spec, "resourceAttributes"), "name")),
                            "node1");
        /* none: left out, as upstream's omitempty */
        assert_null(json_object_get(spec2, "uid"));
        assert_null(json_object_get(spec2, "extra"));
        assert_string_not_equal(ku, kp);
        json_decref(body);
        json_decref(body2);
        json_decref(extra);
}

/* the webhook caches live as long as the configuration says (authentication.webhook.cacheTTL,
 * authorization.webhook.cacheAuthorizedTTL / cacheUnauthorizedTTL), not the defaults */
static void test_cache_ttls(void **state) {
        struct kubelet_options o = {
                .authentication_token_webhook_cache_ttl_usec = 7 * USEC_PER_SEC,
                .authorization_webhook_cache_authorized_ttl_usec = 11 * USEC_PER_SEC,
                .authorization_webhook_cache_unauthorized_ttl_usec = 13 * USEC_PER_SEC,
        };
        struct api_cache *c = NULL;

        assert_int_equal(api_webhook_ttl(&o, API_CACHE_TOKEN, true), 7 * USEC_PER_SEC);
        assert_int_equal(api_webhook_ttl(&o, API_CACHE_TOKEN, false), 7 * USEC_PER_SEC);
        assert_int_equal(api_webhook_ttl(&o, API_CACHE_AUTHZ, true), 11 * USEC_PER_SEC);
        assert_int_equal(api_webhook_ttl(&o, API_CACHE_AUTHZ, false), 13 * USEC_PER_SEC);

        /* an entry lives exactly its TTL */
        assert_non_null(api_cache_put_at(&c, strdup("k"), true, 5 * USEC_PER_SEC, 100));
        assert_non_null(api_cache_get_at(c, "k", 100 + 5 * USEC_PER_SEC - 1));
        assert_null(api_cache_get_at(c, "k", 100 + 5 * USEC_PER_SEC));
        /* a TTL of 0 caches nothing (as upstream's cache with a zero TTL) */
        assert_null(api_cache_put_at(&c, strdup("z"), true, 0, 100));
        assert_null(api_cache_get_at(c, "z", 100));
        api_cache_free(c);
}

/* exec, attach and port-forward are authorized as "create" whatever the method: a WebSocket upgrade is a GET, and
 * "get" on nodes/proxy must not be enough to run commands in containers (stricter than upstream) */
static void test_request_verb(void **state) {
        assert_string_equal(api_request_verb(EVHTTP_REQ_GET, "/exec/ns/pod/c"), "create");
        assert_string_equal(api_request_verb(EVHTTP_REQ_GET, "/attach/ns/pod/c"), "create");
        assert_string_equal(api_request_verb(EVHTTP_REQ_GET, "/portForward/ns/pod"), "create");
        assert_string_equal(api_request_verb(EVHTTP_REQ_HEAD, "/exec/ns/pod/c"), "create");
        assert_string_equal(api_request_verb(EVHTTP_REQ_POST, "/exec/ns/pod/c"), "create");
        assert_string_equal(api_request_verb(EVHTTP_REQ_GET, "/execx"), "get");
        assert_string_equal(api_request_verb(EVHTTP_REQ_GET, "/containerLogs/ns/pod/c"), "get");
        assert_string_equal(api_request_verb(EVHTTP_REQ_GET, "/pods"), "get");
        assert_string_equal(api_request_verb(EVHTTP_REQ_POST, "/run/ns/pod/c"), "create");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_subresources),      cmocka_unit_test(test_verbs),
                cmocka_unit_test(test_path_components),   cmocka_unit_test(test_query),
                cmocka_unit_test(test_user_from_cert),    cmocka_unit_test(test_authz_key),
                cmocka_unit_test(test_cache_ttls),        cmocka_unit_test(test_request_verb),
                cmocka_unit_test(test_sar_uid_extra),     cmocka_unit_test(test_fine_grained_subresources),
                cmocka_unit_test(test_forbidden_message), cmocka_unit_test(test_authorize_fallback),
                cmocka_unit_test(test_zpage_negotiate),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
