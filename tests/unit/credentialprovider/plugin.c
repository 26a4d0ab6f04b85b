/* SPDX-License-Identifier: Apache-2.0 */
/* Credential provider plugins: the config (decoding, upstream's validation messages), matchImages globs, the
 * response decoding, the cache keys and expiry, and real exec plugins (shell scripts) on an event loop: an
 * answer, the cache, one run for concurrent lookups, a hang cut at the timeout, garbage, a crash. */
#include <errno.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <event2/event.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/spawn.h"
#include "basic/json.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "credentialprovider/plugin/plugin.h"
#include "kubelet/credprov_sa.h"

/* ---------------------------------------------------------------- config */

static int write_text(const char *path, const char *text) {
        return write_file_atomic(path, text, strlen(text), 0644);
}

/* the config text as the kubelet reads it: a file given to credprov_config_load */
static int parse(const char *text, struct credprov_config *c, struct ck_error **err) {
        char path[] = "/tmp/ckubelet-credprov-XXXXXX";
        int fd = mkstemp(path), r;

        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(write_text(path, text), 0);
        r = credprov_config_load(path, c, err);
        unlink(path);
        return r;
}

static void test_config_ok(void **state) {
        struct credprov_config c = {};
        struct ck_error *err = NULL;

        assert_int_equal(parse("apiVersion: kubelet.config.k8s.io/v1\n"
                               "kind: CredentialProviderConfig\n"
                               "providers:\n"
                               "- name: ecr\n"
                               "  matchImages: ['*.dkr.ecr.*.amazonaws.com', 'registry.io:8080/path']\n"
                               "  defaultCacheDuration: 12h\n"
                               "  apiVersion: credentialprovider.kubelet.k8s.io/v1\n"
                               "  args: [get-credentials]\n"
                               "  env: [{name: AWS_PROFILE, value: prod}]\n",
                               &c, &err),
                         0);
        assert_null(err);
        assert_int_equal(c.n, 1);
        assert_string_equal(c.providers[0].name, "ecr");
        assert_string_equal(c.providers[0].match_images[1], "registry.io:8080/path");
        assert_int_equal(c.providers[0].default_cache_duration_nsec, INT64_C(12) * 3600 * 1000000000);
        assert_string_equal(c.providers[0].args[0], "get-credentials");
        assert_int_equal(c.providers[0].n_env, 1);
        assert_string_equal(c.providers[0].env[0].value, "prod");
        credprov_config_done(&c);
}

static void check_error(const char *text, const char *want) {
        struct credprov_config c = {};
        struct ck_error *err = NULL;

        assert_int_equal(parse(text, &c, &err), -EINVAL);
        assert_non_null(err);
        if (!strstr(ck_error_message(err), want))
                fail_msg("error \"%s\" does not contain \"%s\"", ck_error_message(err), want);
        ck_error_free(err);
}

static void test_config_errors(void **state) {
        check_error("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: []\n",
                    "failed to validate credential provider config: providers: Required value: at least 1 item in "
                    "plugins is required");
        check_error("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
                    "- name: a/b\n  matchImages: [x.io]\n  defaultCacheDuration: 1m\n"
                    "  apiVersion: credentialprovider.kubelet.k8s.io/v1\n",
                    "failed to validate credential provider config: providers.name: Invalid value: \"a/b\": provider "
                    "name cannot contain '/'");
        /* several errors: an aggregate in brackets */
        check_error("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
                    "- name: p\n  apiVersion: credentialprovider.kubelet.k8s.io/v2\n",
                    "failed to validate credential provider config: [providers.apiVersion: Unsupported value: "
                    "\"credentialprovider.kubelet.k8s.io/v2\": supported values: "
                    "\"credentialprovider.kubelet.k8s.io/v1\", \"credentialprovider.kubelet.k8s.io/v1alpha1\", "
                    "\"credentialprovider.kubelet.k8s.io/v1beta1\", providers.matchImages: Required value: at least 1 "
                    "item in matchImages is required, providers.defaultCacheDuration: Required value]");
        check_error("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
                    "- {name: p, matchImages: [x.io], defaultCacheDuration: 1m, apiVersion: "
                    "credentialprovider.kubelet.k8s.io/v1}\n"
                    "- {name: p, matchImages: ['x.io:port'], defaultCacheDuration: -1s, apiVersion: "
                    "credentialprovider.kubelet.k8s.io/v1}\n",
                    "providers.name: Duplicate value: \"p\", providers.matchImages: Invalid value: \"x.io:port\": "
                    "match image is invalid: parse \"https://x.io:port\": invalid port after host, "
                    "providers.defaultCacheDuration: Invalid value: \"-1s\": defaultCacheDuration must be greater than "
                    "or equal to 0]");
        check_error("apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n",
                    "failed to decode \"KubeletConfiguration\" (wrong Kind)");
        check_error("apiVersion: v1\nkind: CredentialProviderConfig\n",
                    "failed to decode CredentialProviderConfig, unexpected Group: ");
        check_error("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nprovider: []\n",
                    "strict decoding error: unknown field \"provider\"");
        check_error("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
                    "- {name: p, matchImages: [x.io], defaultCacheDuration: 1m, cacheDuration: 1m, apiVersion: "
                    "credentialprovider.kubelet.k8s.io/v1}\n",
                    "strict decoding error: unknown field \"providers[0].cacheDuration\"");
        check_error("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
                    "- {name: p, matchImages: [x.io], defaultCacheDuration: 1m, apiVersion: "
                    "credentialprovider.kubelet.k8s.io/v1, tokenAttributes: {serviceAccountTokenAudience: a}}\n",
                    "failed to validate credential provider config: [providers.tokenAttributes.requireServiceAccount: "
                    "Required value, providers.tokenAttributes.cacheType: Required value: cacheType is required to be "
                    "set when tokenAttributes is specified. Supported values are: ServiceAccount, Token]");
        /* upstream's rules on tokenAttributes (KubeletServiceAccountTokenForCredentialProviders on) */
        check_error(
                "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
                "- {name: p, matchImages: [x.io], defaultCacheDuration: 1m, apiVersion: "
                "credentialprovider.kubelet.k8s.io/v1beta1, tokenAttributes: {requireServiceAccount: false, "
                "requiredServiceAccountAnnotationKeys: [a.io/k, 'Bad Key'], optionalServiceAccountAnnotationKeys: "
                "[a.io/k, b], cacheType: Bogus}}\n",
                "failed to validate credential provider config: [providers.tokenAttributes."
                "serviceAccountTokenAudience: Required value, providers.tokenAttributes: Forbidden: tokenAttributes "
                "is only supported for credentialprovider.kubelet.k8s.io/v1 API version, providers.tokenAttributes."
                "requiredServiceAccountAnnotationKeys: Forbidden: requireServiceAccount cannot be false when "
                "requiredServiceAccountAnnotationKeys is set, providers.tokenAttributes."
                "requiredServiceAccountAnnotationKeys: Invalid value: \"Bad Key\": name part must consist of "
                "alphanumeric characters");
        check_error("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
                    "- {name: p, matchImages: [x.io], defaultCacheDuration: 1m, apiVersion: "
                    "credentialprovider.kubelet.k8s.io/v1, tokenAttributes: {serviceAccountTokenAudience: aud, "
                    "requireServiceAccount: true, requiredServiceAccountAnnotationKeys: [a.io/k, a.io/k], "
                    "optionalServiceAccountAnnotationKeys: [a.io/k], cacheType: Bogus}}\n",
                    "[providers.tokenAttributes.requiredServiceAccountAnnotationKeys: Duplicate value: \"a.io/k\", "
                    "providers.tokenAttributes: Invalid value: [a.io/k]: annotation keys cannot be both required and "
                    "optional, providers.tokenAttributes.cacheType: Unsupported value: \"Bogus\": supported values: "
                    "\"ServiceAccount\", \"Token\"]");
        check_error("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
                    "- {name: p, matchImages: [x.io], defaultCacheDuration: 1m, apiVersion: "
                    "credentialprovider.kubelet.k8s.io/v1, tokenAttributes: {audience: a}}\n",
                    "strict decoding error: unknown field \"providers[0].tokenAttributes.audience\"");
}

static void test_config_token_attributes(void **state) {
        struct credprov_config c = {};
        struct ck_error *err = NULL;
        const struct credprov_token_attributes *a;

        assert_int_equal(parse("apiVersion: kubelet.config.k8s.io/v1\n"
                               "kind: CredentialProviderConfig\n"
                               "providers:\n"
                               "- name: sa\n"
                               "  matchImages: [reg.io]\n"
                               "  defaultCacheDuration: 1m\n"
                               "  apiVersion: credentialprovider.kubelet.k8s.io/v1\n"
                               "  tokenAttributes:\n"
                               "    serviceAccountTokenAudience: my-registry\n"
                               "    requireServiceAccount: false\n"
                               "    optionalServiceAccountAnnotationKeys: [example.com/role]\n"
                               "    cacheType: Token\n",
                               &c, &err),
                         0);
        assert_null(err);
        a = c.providers[0].token_attributes;
        assert_non_null(a);
        assert_string_equal(a->audience, "my-registry");
        assert_true(a->has_require_service_account);
        assert_false(a->require_service_account);
        assert_string_equal(a->optional_annotation_keys[0], "example.com/role");
        assert_null(a->required_annotation_keys);
        assert_string_equal(a->cache_type, "Token");
        credprov_config_done(&c);
}

/* the cache key's service account part as upstream builds it (cryptobyte: 16-bit lengths, a 32-bit count) */
static void test_sa_cache_key(void **state) {
        json_auto_t *annots = json_pack("{s:s, s:s}", "b", "2", "a", "1");
        json_auto_t *none = json_object();
        _cleanup_free_ char *k1 = credprov_sa_cache_key("ns", "sa", "u1", annots, "ServiceAccount", "tok1");
        _cleanup_free_ char *k2 = credprov_sa_cache_key("ns", "sa", "u1", annots, "ServiceAccount", "tok2");
        _cleanup_free_ char *k3 = credprov_sa_cache_key("ns", "sa", "u1", annots, "Token", "tok1");
        _cleanup_free_ char *k4 = credprov_sa_cache_key("ns", "sa", "u1", annots, "Token", "tok2");
        _cleanup_free_ char *k5 = credprov_sa_cache_key("ns", "sa", "u2", annots, "ServiceAccount", "tok1");
        _cleanup_free_ char *k6 = credprov_sa_cache_key("ns", "sa", "u1", none, "ServiceAccount", NULL);
        _cleanup_free_ char *h = credprov_token_hash("tok");
        _cleanup_free_ char *f1 = credprov_flight_key("reg.io/app", "tok1", annots);
        _cleanup_free_ char *f2 = credprov_flight_key("reg.io/app", "tok2", annots);
        struct credprov_token_attributes attrs = {};
        char *req_keys[] = { "a", NULL }, *opt_keys[] = { "c", "b", NULL };
        json_auto_t *sel = NULL;
        const char *missing;

        /* "ns" "sa" "u1", then 2 annotations in key order: a=1, b=2 */
        assert_string_equal(k1, "00026e73"
                                "00027361"
                                "00027531"
                                "00000002"
                                "000161"
                                "000131"
                                "000162"
                                "000132");
        assert_string_equal(k1, k2); /* ServiceAccount: one entry whatever the token */
        assert_string_not_equal(k3, k4);
        assert_true(strncmp(k3, k1, strlen(k1)) == 0); /* Token: then "token" and the token's hash */
        assert_string_not_equal(k1, k5);               /* a service account made again (new UID) */
        assert_string_equal(k6, "00026e730002736100027531"
                                "00000000");
        assert_string_equal(h, "sha256:1a7674eb4ee78df7e1ac439a93c3fa8e3c945784d4dec9fd8e3011738b2f1d62");
        assert_string_not_equal(f1, f2);

        attrs.required_annotation_keys = req_keys;
        attrs.optional_annotation_keys = opt_keys;
        sel = credprov_sa_annotations(&attrs, annots, &missing);
        assert_non_null(sel);
        assert_int_equal(json_object_size(sel), 2); /* a (required), b (optional, present); c absent */
        assert_null(missing);
        json_decref(sel);
        req_keys[0] = "z";
        sel = credprov_sa_annotations(&attrs, annots, &missing);
        assert_null(sel);
        assert_string_equal(missing, "z");
}

static void test_config_directory(void **state) {
        char tmpl[] = "/tmp/ckubelet-credprov-XXXXXX";
        char *d = mkdtemp(tmpl), path[256];
        struct credprov_config c = {};
        struct ck_error *err = NULL;

        assert_non_null(d);
        snprintf(path, sizeof(path), "%s/b.yaml", d);
        assert_int_equal(write_text(path, "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\n"
                                          "providers:\n- {name: second, matchImages: [b.io], "
                                          "defaultCacheDuration: 0s, apiVersion: "
                                          "credentialprovider.kubelet.k8s.io/v1}\n"),
                         0);
        snprintf(path, sizeof(path), "%s/a.json", d);
        {
                const char *j =
                        "{\"apiVersion\":\"kubelet.config.k8s.io/v1\",\"kind\":\"CredentialProviderConfig\","
                        "\"providers\":[{\"name\":\"first\",\"matchImages\":[\"a.io\"],"
                        "\"defaultCacheDuration\":\"1m\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\"}]}";
                assert_int_equal(write_file_atomic(path, j, strlen(j), 0644), 0);
        }
        snprintf(path, sizeof(path), "%s/ignored.txt", d);
        assert_int_equal(write_file_atomic(path, "x", 1, 0644), 0);
        assert_int_equal(credprov_config_load(d, &c, &err), 0);
        assert_int_equal(c.n, 2);
        assert_string_equal(c.providers[0].name, "first"); /* files in name order */
        assert_string_equal(c.providers[1].name, "second");
        credprov_config_done(&c);
        /* the same name in two files */
        snprintf(path, sizeof(path), "%s/c.yml", d);
        assert_int_equal(write_text(path, "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\n"
                                          "providers:\n- {name: first, matchImages: [c.io], "
                                          "defaultCacheDuration: 0s, apiVersion: "
                                          "credentialprovider.kubelet.k8s.io/v1}\n"),
                         0);
        assert_int_equal(credprov_config_load(d, &c, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "duplicate provider name \"first\" found in configuration file(s)");
        err = ck_error_free(err);
        assert_int_equal(credprov_config_load("/nonexistent/x.yaml", &c, &err), -EINVAL);
        assert_true(startswith(ck_error_message(err), "unable to access path \"/nonexistent/x.yaml\": "));
        ck_error_free(err);
        for (const char *f = "a.json\0b.yaml\0c.yml\0ignored.txt\0"; *f; f += strlen(f) + 1) {
                snprintf(path, sizeof(path), "%s/%s", d, f);
                unlink(path);
        }
        rmdir(d);
}

/* ---------------------------------------------------------------- matching, wire, cache */

static void test_match_images(void **state) {
        /* URLsMatchStr as the plugin provider uses it: same number of host parts, each glob matching one part,
         * port equal, path a prefix */
        assert_int_equal(cred_url_match("*.azurecr.io", "myreg.azurecr.io/app"), 1);
        assert_int_equal(cred_url_match("*.azurecr.io", "a.b.azurecr.io/app"), 0);
        assert_int_equal(cred_url_match("*.io", "k8s.gcr.io/pause"), 0);
        assert_int_equal(cred_url_match("k8s.*.io", "k8s.gcr.io/pause"), 1);
        assert_int_equal(cred_url_match("app*.k8s.io", "app1.k8s.io/x"), 1);
        assert_int_equal(cred_url_match("registry.io:8080/path", "registry.io:8080/path/img"), 1);
        assert_int_equal(cred_url_match("registry.io:8080/path", "registry.io/path/img"), 0);
        assert_int_equal(cred_url_match("registry.io/path", "registry.io/other"), 0);
        assert_int_equal(cred_url_match("127.0.0.1:5000", "127.0.0.1:5000/busybox"), 1);
        assert_null(credprov_match_image_invalid("*.*.registry.io"));
        assert_non_null(credprov_match_image_invalid("reg.io:80a"));
        assert_non_null(credprov_match_image_invalid(""));
}

static void test_request_and_response(void **state) {
        _cleanup_free_ char *req = credprov_request_encode("credentialprovider.kubelet.k8s.io/v1", "reg.io/app", NULL,
                                                           NULL);
        struct credprov_response r = {};
        struct ck_error *err = NULL;
        const char *ok =
                "{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\","
                "\"cacheKeyType\":\"Registry\",\"cacheDuration\":\"5m\","
                "\"auth\":{\"reg.io\":{\"username\":\"u\",\"password\":\"p\"}}}";

        assert_string_equal(req, "{\"kind\":\"CredentialProviderRequest\",\"apiVersion\":"
                                 "\"credentialprovider.kubelet.k8s.io/v1\",\"image\":\"reg.io/app\"}");
        {
                json_auto_t *annots = json_pack("{s:s}", "example.com/role", "puller");
                _cleanup_free_ char *with = credprov_request_encode("credentialprovider.kubelet.k8s.io/v1",
                                                                    "reg.io/app", "eyJ.tok", annots);
                assert_string_equal(with, "{\"kind\":\"CredentialProviderRequest\",\"apiVersion\":"
                                          "\"credentialprovider.kubelet.k8s.io/v1\",\"image\":\"reg.io/app\","
                                          "\"serviceAccountToken\":\"eyJ.tok\",\"serviceAccountAnnotations\":"
                                          "{\"example.com/role\":\"puller\"}}");
        }
        assert_int_equal(credprov_response_decode(ok, strlen(ok), "credentialprovider.kubelet.k8s.io/v1", &r, &err), 0);
        assert_int_equal(r.cache_key_type, CREDPROV_CACHE_REGISTRY);
        assert_true(r.has_cache_duration);
        assert_int_equal(r.cache_duration_nsec, INT64_C(300000000000));
        assert_string_equal(json_string_value(json_object_get(json_object_get(r.auth, "reg.io"), "username")), "u");
        credprov_response_done(&r);

#define BAD(text, want)                                                                                               \
        do {                                                                                                          \
                assert_int_equal(credprov_response_decode(text, strlen(text), "credentialprovider.kubelet.k8s.io/v1", \
                                                          &r, &err),                                                  \
                                 -EINVAL);                                                                            \
                if (!strstr(ck_error_message(err), want))                                                             \
                        fail_msg("\"%s\" lacks \"%s\"", ck_error_message(err), want);                                 \
                err = ck_error_free(err);                                                                             \
        } while (0)
        BAD("garbage", "error reading GVK from response: couldn't get version/kind; json parse error:");
        BAD("{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1beta1\"}",
            "apiVersion from credential plugin response did not match expected "
            "apiVersion:credentialprovider.kubelet.k8s.io/v1, actual apiVersion:credentialprovider.kubelet.k8s.io/v1beta1");
        BAD("{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\","
            "\"cacheKeyType\":\"Forever\"}",
            "credential provider plugin did not return a valid cacheKeyType: \"Forever\"");
        /* an unknown field or a wrong type: one message that never quotes the output */
        BAD("{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\","
            "\"cacheKeyType\":\"Image\",\"auth\":{\"r\":{\"username\":\"u\",\"passwd\":\"secret\"}}}",
            "error decoding credential provider plugin response from stdout");
        BAD("{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\","
            "\"cacheKeyType\":\"Image\",\"cacheDuration\":5}",
            "error decoding credential provider plugin response from stdout");
#undef BAD
}

static void test_cache(void **state) {
        struct credprov_cache c = {};
        struct credprov_response img = { .cache_key_type = CREDPROV_CACHE_IMAGE, .auth = json_pack("{s:{}}", "a") };
        struct credprov_response reg = { .cache_key_type = CREDPROV_CACHE_REGISTRY,
                                         .auth = json_pack("{s:{}}", "b"),
                                         .has_cache_duration = true,
                                         .cache_duration_nsec = INT64_C(10000000000) };
        struct credprov_response glob = { .cache_key_type = CREDPROV_CACHE_GLOBAL, .auth = json_pack("{s:{}}", "c") };
        struct credprov_response nocache = { .cache_key_type = CREDPROV_CACHE_GLOBAL,
                                             .auth = json_object(),
                                             .has_cache_duration = true,
                                             .cache_duration_nsec = 0 };
        const int64_t minute = INT64_C(60000000000);
        char *r;

        r = credprov_registry_of("reg.io:5000/team/app");
        assert_string_equal(r, "reg.io:5000");
        free(r);
        assert_null(credprov_cache_get(&c, "reg.io/app", NULL, 0));
        assert_int_equal(credprov_cache_add(&c, "reg.io/app", NULL, &img, minute, 0), 0);
        assert_ptr_equal(credprov_cache_get(&c, "reg.io/app", NULL, 1000), img.auth);
        assert_null(credprov_cache_get(&c, "reg.io/other", NULL, 1000)); /* Image: only that image */
        assert_int_equal(credprov_cache_add(&c, "reg.io/other", NULL, &reg, minute, 0), 0);
        /* Registry: every image of it, for the response's own duration (10 s) */
        assert_ptr_equal(credprov_cache_get(&c, "reg.io/third", NULL, 1000), reg.auth);
        assert_ptr_equal(credprov_cache_get(&c, "reg.io/app", NULL, 1000), img.auth); /* the image key first */
        assert_null(credprov_cache_get(&c, "reg.io/third", NULL, 10000001));          /* expired after 10 s */
        assert_ptr_equal(credprov_cache_get(&c, "reg.io/app", NULL, 10000001), img.auth);
        assert_null(credprov_cache_get(&c, "reg.io/app", NULL, 60000001)); /* the default minute */
        assert_int_equal(c.n, 0);
        assert_int_equal(credprov_cache_add(&c, "x.io/y", NULL, &glob, minute, 0), 0);
        assert_ptr_equal(credprov_cache_get(&c, "any.io/thing", NULL, 1), glob.auth);
        /* a duration of 0, or a default of 0 without one, caches nothing */
        assert_int_equal(credprov_cache_add(&c, "x.io/y", NULL, &nocache, minute, 0), 0);
        assert_int_equal(credprov_cache_add(&c, "x.io/z", NULL, &img, 0, 0), 0);
        assert_int_equal(c.n, 1);
        credprov_cache_done(&c);
        credprov_response_done(&img);
        credprov_response_done(&reg);
        credprov_response_done(&glob);
        credprov_response_done(&nocache);
}

/* ---------------------------------------------------------------- spawn */

struct spawn_out {
        bool done;
        int exit_code, signal;
        bool timed_out, capped;
        char out[256], err[256];
        size_t out_len;
};

static void on_spawn(const struct spawn_result *r, void *userdata) {
        struct spawn_out *o = userdata;
        o->done = true;
        o->exit_code = r->exit_code;
        o->signal = r->signal;
        o->timed_out = r->timed_out;
        o->capped = r->output_capped;
        o->out_len = r->out_len;
        snprintf(o->out, sizeof(o->out), "%.*s", (int) r->out_len, r->out);
        snprintf(o->err, sizeof(o->err), "%.*s", (int) r->err_len, r->err);
}

static void run_loop(struct event_base *base, bool *done) {
        while (!*done)
                event_base_loop(base, EVLOOP_ONCE);
}

static void test_spawn(void **state) {
        struct event_base *base = event_base_new();
        char *sh_cat[] = { "/bin/sh", "-c", "cat; echo err >&2; exit 3", NULL };
        char *sh_hang[] = { "/bin/sh", "-c", "sleep 30 & sleep 30; echo never", NULL };
        char *sh_big[] = { "/bin/sh", "-c", "yes", NULL };
        char *envp[] = { "PATH=/usr/bin:/bin", NULL };
        struct spawn_out o = {};
        struct spawn *s = NULL;

        assert_int_equal(spawn_start(base, "/bin/sh", sh_cat, envp, "hello", 5, 1024, 1024, 10000000, on_spawn, &o, &s),
                         0);
        assert_false(o.done); /* never from inside */
        run_loop(base, &o.done);
        assert_int_equal(o.exit_code, 3);
        assert_string_equal(o.out, "hello");
        assert_string_equal(o.err, "err\n");

        /* a hang is cut at the timeout, with its background child (the whole process group) */
        memset(&o, 0, sizeof(o));
        assert_int_equal(spawn_start(base, "/bin/sh", sh_hang, envp, NULL, 0, 1024, 1024, 200000, on_spawn, &o, NULL),
                         0);
        run_loop(base, &o.done);
        assert_true(o.timed_out);
        assert_int_equal(o.signal, 9);
        assert_string_equal(o.out, "");

        /* endless output is cut at the cap */
        memset(&o, 0, sizeof(o));
        assert_int_equal(spawn_start(base, "/bin/sh", sh_big, envp, NULL, 0, 100, 1024, 10000000, on_spawn, &o, NULL),
                         0);
        run_loop(base, &o.done);
        assert_true(o.capped);
        assert_int_equal(o.out_len, 100);

        /* cancel: no callback */
        memset(&o, 0, sizeof(o));
        assert_int_equal(spawn_start(base, "/bin/sh", sh_hang, envp, NULL, 0, 1024, 1024, 0, on_spawn, &o, &s), 0);
        spawn_cancel(s);
        event_base_loop(base, EVLOOP_NONBLOCK);
        assert_false(o.done);
        /* a program that is not there */
        assert_int_equal(spawn_start(base, "/nonexistent", sh_cat, envp, NULL, 0, 1, 1, 0, on_spawn, &o, NULL),
                         -ENOENT);
        event_base_free(base);
}

/* ---------------------------------------------------------------- providers, on a loop */

struct lookup_out {
        bool done;
        size_t n;
        char user[64];
        char error[512];
};

static void on_lookup(struct cred_keyring *creds, const char *error, void *userdata) {
        struct lookup_out *o = userdata;
        o->done = true;
        o->n = creds->n;
        snprintf(o->user, sizeof(o->user), "%s", creds->n ? creds->auths[0].username : "");
        snprintf(o->error, sizeof(o->error), "%s", strempty(error));
}

static void write_exec(const char *path, const char *script) {
        assert_int_equal(write_file_atomic(path, script, strlen(script), 0755), 0);
}

static void test_providers(void **state) {
        char tmpl[] = "/tmp/ckubelet-credprov-XXXXXX";
        char *d = mkdtemp(tmpl), cfg[256], p[256], count[256];
        struct event_base *base = event_base_new();
        struct credprov *cp = NULL;
        struct lookup_out a = {}, b = {}, c = {};
        struct ck_error *err = NULL;
        _cleanup_free_ char *runs = NULL;
        const char *config;

        assert_non_null(d);
        snprintf(count, sizeof(count), "%s/count", d);
        /* "good" counts its runs and answers for the registry for 1h; "garbage"; "crash" */
        snprintf(p, sizeof(p), "%s/good", d);
        {
                _cleanup_free_ char *script = NULL;
                assert_true(asprintf(&script,
                                     "#!/bin/sh\nread req\necho run >> %s\n"
                                     "case \"$req\" in *'\"image\":\"reg.io/app\"'*) ;; *) exit 9;; esac\n"
                                     "echo '{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":"
                                     "\"credentialprovider.kubelet.k8s.io/v1\",\"cacheKeyType\":\"Registry\","
                                     "\"auth\":{\"reg.io\":{\"username\":\"'$CRED_USER'\",\"password\":\"pw\"}}}'\n",
                                     count) > 0);
                write_exec(p, script);
        }
        snprintf(p, sizeof(p), "%s/garbage", d);
        write_exec(p, "#!/bin/sh\necho 'not json, and a s3cret'\n");
        snprintf(p, sizeof(p), "%s/crash", d);
        write_exec(p, "#!/bin/sh\necho 'plugin: no such account' >&2\nexit 2\n");
        snprintf(cfg, sizeof(cfg), "%s/config.yaml", d);
        config = "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
                 "- {name: good, matchImages: ['reg.io'], defaultCacheDuration: 1h, apiVersion: "
                 "credentialprovider.kubelet.k8s.io/v1, env: [{name: CRED_USER, value: alice}]}\n"
                 "- {name: garbage, matchImages: ['bad.io'], defaultCacheDuration: 1h, apiVersion: "
                 "credentialprovider.kubelet.k8s.io/v1}\n"
                 "- {name: crash, matchImages: ['bad.io'], defaultCacheDuration: 1h, apiVersion: "
                 "credentialprovider.kubelet.k8s.io/v1}\n";
        assert_int_equal(write_file_atomic(cfg, config, strlen(config), 0644), 0);

        assert_int_equal(credprov_new(base, cfg, "/nonexistent-dir", &cp, &err), -ENOENT);
        assert_string_equal(ck_error_message(err), "plugin binary directory /nonexistent-dir did not exist");
        err = ck_error_free(err);
        assert_int_equal(credprov_new(base, cfg, d, &cp, &err), 0);

        /* two lookups at once: one run; a third later comes from the cache */
        assert_int_equal(credprov_lookup(cp, "reg.io/app", NULL, on_lookup, &a, NULL), 0);
        assert_int_equal(credprov_lookup(cp, "reg.io/app", NULL, on_lookup, &b, NULL), 0);
        assert_false(a.done);
        run_loop(base, &a.done);
        run_loop(base, &b.done);
        assert_int_equal(a.n, 1);
        assert_string_equal(a.user, "alice");
        assert_string_equal(a.error, "");
        assert_string_equal(b.user, "alice");
        assert_int_equal(credprov_lookup(cp, "reg.io/other", NULL, on_lookup, &c, NULL), 0); /* Registry key: cached */
        run_loop(base, &c.done);
        assert_string_equal(c.user, "alice");
        assert_int_equal(read_full_file(count, 4096, &runs, NULL), 0);
        assert_string_equal(runs, "run\n");

        /* nothing matches: no credentials, no error */
        memset(&a, 0, sizeof(a));
        assert_int_equal(credprov_lookup(cp, "other.io/x", NULL, on_lookup, &a, NULL), 0);
        run_loop(base, &a.done);
        assert_int_equal(a.n, 0);
        assert_string_equal(a.error, "");

        /* garbage and a crash: no credentials, both errors, the output not repeated */
        memset(&a, 0, sizeof(a));
        assert_int_equal(credprov_lookup(cp, "bad.io/x", NULL, on_lookup, &a, NULL), 0);
        run_loop(base, &a.done);
        assert_int_equal(a.n, 0);
        assert_non_null(strstr(a.error, "error reading GVK from response"));
        assert_null(strstr(a.error, "s3cret"));
        assert_non_null(strstr(a.error, "error execing credential provider plugin crash for image bad.io/x: exit "
                                        "status 2: plugin: no such account"));

        /* a lookup cancelled while its plugin runs: no callback */
        memset(&b, 0, sizeof(b));
        {
                struct credprov_lookup *l = NULL;
                assert_int_equal(credprov_lookup(cp, "bad.io/y", NULL, on_lookup, &b, &l), 0);
                credprov_lookup_cancel(l);
        }
        credprov_free(cp); /* kills the run */
        assert_false(b.done);
        event_base_free(base);
        for (const char *f = "good\0garbage\0crash\0config.yaml\0count\0"; *f; f += strlen(f) + 1) {
                snprintf(p, sizeof(p), "%s/%s", d, f);
                unlink(p);
        }
        rmdir(d);
}

/* tokenAttributes: the service account's token and annotations in the request, no run without a service account
 * (requireServiceAccount) or without a required annotation, the cache keyed by the service account (cacheType
 * ServiceAccount: another token of the same account hits it; another account does not) */
static void test_service_account_tokens(void **state) {
        char tmpl[] = "/tmp/ckubelet-credprov-XXXXXX";
        char *d = mkdtemp(tmpl), cfg[256], p[256], reqs[256];
        struct event_base *base = event_base_new();
        struct credprov *cp = NULL;
        struct ck_error *err = NULL;
        struct lookup_out o = {};
        _cleanup_free_ char *seen = NULL;
        json_auto_t *annots = json_pack("{s:s, s:s}", "example.com/role", "puller", "other", "x");
        json_auto_t *none = json_object();
        json_auto_t *tok1 = json_pack("{s:s}", "my-registry", "tok1");
        json_auto_t *tok2 = json_pack("{s:s}", "my-registry", "tok2");
        struct credprov_pod_sa sa = { .namespace = "ns",
                                      .pod_name = "pod",
                                      .pod_uid = "puid",
                                      .name = "builder",
                                      .uid = "sauid1",
                                      .annotations = annots,
                                      .tokens = tok1 };
        char **auds;
        const char *config;

        assert_non_null(d);
        snprintf(reqs, sizeof(reqs), "%s/requests", d);
        snprintf(p, sizeof(p), "%s/sa", d);
        {
                _cleanup_free_ char *script = NULL;
                assert_true(asprintf(&script,
                                     "#!/bin/sh\ncat >> %s\necho >> %s\n"
                                     "echo '{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":"
                                     "\"credentialprovider.kubelet.k8s.io/v1\",\"cacheKeyType\":\"Image\","
                                     "\"auth\":{\"reg.io\":{\"username\":\"u\",\"password\":\"pw\"}}}'\n",
                                     reqs, reqs) > 0);
                write_exec(p, script);
        }
        snprintf(cfg, sizeof(cfg), "%s/config.yaml", d);
        config = "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
                 "- {name: sa, matchImages: ['reg.io'], defaultCacheDuration: 1h, apiVersion: "
                 "credentialprovider.kubelet.k8s.io/v1, tokenAttributes: {serviceAccountTokenAudience: my-registry, "
                 "requireServiceAccount: true, requiredServiceAccountAnnotationKeys: [example.com/role], "
                 "cacheType: ServiceAccount}}\n";
        assert_int_equal(write_file_atomic(cfg, config, strlen(config), 0644), 0);
        assert_int_equal(credprov_new(base, cfg, d, &cp, &err), 0);

        assert_true(credprov_wants_service_account(cp, "reg.io/app"));
        assert_false(credprov_wants_service_account(cp, "other.io/app"));
        auds = credprov_token_audiences(cp, "reg.io/app", annots);
        assert_non_null(auds);
        assert_string_equal(auds[0], "my-registry");
        assert_null(auds[1]);
        strv_free(auds);
        assert_null(credprov_token_audiences(cp, "reg.io/app", none)); /* the required annotation missing */

        /* no service account: required, so no run and no error */
        assert_int_equal(credprov_lookup(cp, "reg.io/app", NULL, on_lookup, &o, NULL), 0);
        run_loop(base, &o.done);
        assert_int_equal(o.n, 0);
        assert_string_equal(o.error, "");
        /* the required annotation missing: no run either */
        memset(&o, 0, sizeof(o));
        sa.annotations = none;
        assert_int_equal(credprov_lookup(cp, "reg.io/app", &sa, on_lookup, &o, NULL), 0);
        run_loop(base, &o.done);
        assert_int_equal(o.n, 0);
        assert_string_equal(o.error, "");
        assert_int_equal(access(reqs, F_OK), -1);

        /* with both: one run, given the token and the listed annotations only */
        memset(&o, 0, sizeof(o));
        sa.annotations = annots;
        assert_int_equal(credprov_lookup(cp, "reg.io/app", &sa, on_lookup, &o, NULL), 0);
        run_loop(base, &o.done);
        assert_int_equal(o.n, 1);
        assert_string_equal(o.user, "u");
        /* another token of the same account: from the cache */
        memset(&o, 0, sizeof(o));
        sa.tokens = tok2;
        assert_int_equal(credprov_lookup(cp, "reg.io/app", &sa, on_lookup, &o, NULL), 0);
        run_loop(base, &o.done);
        assert_int_equal(o.n, 1);
        /* another account (a new UID): a run of its own */
        memset(&o, 0, sizeof(o));
        sa.uid = "sauid2";
        assert_int_equal(credprov_lookup(cp, "reg.io/app", &sa, on_lookup, &o, NULL), 0);
        run_loop(base, &o.done);
        assert_int_equal(o.n, 1);
        assert_int_equal(read_full_file(reqs, 65536, &seen, NULL), 0);
        assert_string_equal(seen, "{\"kind\":\"CredentialProviderRequest\",\"apiVersion\":"
                                  "\"credentialprovider.kubelet.k8s.io/v1\",\"image\":\"reg.io/app\","
                                  "\"serviceAccountToken\":\"tok1\",\"serviceAccountAnnotations\":"
                                  "{\"example.com/role\":\"puller\"}}\n"
                                  "{\"kind\":\"CredentialProviderRequest\",\"apiVersion\":"
                                  "\"credentialprovider.kubelet.k8s.io/v1\",\"image\":\"reg.io/app\","
                                  "\"serviceAccountToken\":\"tok2\",\"serviceAccountAnnotations\":"
                                  "{\"example.com/role\":\"puller\"}}\n");
        /* the service account could not be had: its error */
        memset(&o, 0, sizeof(o));
        sa.uid = "sauid3";
        sa.error = "failed to get service account: serviceaccounts \"builder\" not found";
        assert_int_equal(credprov_lookup(cp, "reg.io/app", &sa, on_lookup, &o, NULL), 0);
        run_loop(base, &o.done);
        assert_int_equal(o.n, 0);
        assert_string_equal(o.error, "failed to get service account: serviceaccounts \"builder\" not found");

        credprov_free(cp);
        event_base_free(base);
        for (const char *f = "sa\0config.yaml\0requests\0"; *f; f += strlen(f) + 1) {
                snprintf(p, sizeof(p), "%s/%s", d, f);
                unlink(p);
        }
        rmdir(d);
}

/* the TokenRequest the kubelet sends for a plugin: bound to the pod, the service account's UID, the audience */
static void test_token_request_body(void **state) {
        json_auto_t *b = credprov_sa_token_request("sauid", "my-registry", "pod", "puid");
        _cleanup_free_ char *s = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);

        assert_string_equal(s, "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\","
                               "\"metadata\":{\"uid\":\"sauid\"},\"spec\":{\"audiences\":[\"my-registry\"],"
                               "\"boundObjectRef\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":\"pod\","
                               "\"uid\":\"puid\"}}}");
}

/* issue 26: each provider's plugin runs are serialized: four lookups of four images through two providers, each
 * plugin notes when a run of its own overlaps another (a lock directory per plugin), and every lookup still gets its
 * answer */
static void test_serialized(void **state) {
        char tmpl[] = "/tmp/ckubelet-credprov-XXXXXX";
        char *d = mkdtemp(tmpl), cfg[256], p[256], log[256];
        struct event_base *base = event_base_new();
        struct credprov *cp = NULL;
        struct lookup_out o[4] = {};
        struct ck_error *err = NULL;
        _cleanup_free_ char *runs = NULL, *script = NULL;
        const char *config, *images[] = { "a.io/one", "a.io/two", "b.io/one", "b.io/two" };

        assert_non_null(d);
        snprintf(log, sizeof(log), "%s/log", d);
        assert_true(asprintf(&script,
                             "#!/bin/sh\nread req\n"
                             "if mkdir %s/lock-${0##*/} 2>/dev/null; then echo run >> %s; else echo OVERLAP >> %s; fi\n"
                             "sleep 0.2; rmdir %s/lock-${0##*/} 2>/dev/null\n"
                             "echo '{\"kind\":\"CredentialProviderResponse\",\"apiVersion\":"
                             "\"credentialprovider.kubelet.k8s.io/v1\",\"cacheKeyType\":\"Image\","
                             "\"auth\":{\"*.io\":{\"username\":\"u\",\"password\":\"pw\"}}}'\n",
                             d, log, log, d) > 0);
        snprintf(p, sizeof(p), "%s/pa", d);
        write_exec(p, script);
        snprintf(p, sizeof(p), "%s/pb", d);
        write_exec(p, script);
        snprintf(cfg, sizeof(cfg), "%s/config.yaml", d);
        config = "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
                 "- {name: pa, matchImages: ['a.io'], defaultCacheDuration: 1h, apiVersion: "
                 "credentialprovider.kubelet.k8s.io/v1}\n"
                 "- {name: pb, matchImages: ['b.io'], defaultCacheDuration: 1h, apiVersion: "
                 "credentialprovider.kubelet.k8s.io/v1}\n";
        assert_int_equal(write_file_atomic(cfg, config, strlen(config), 0644), 0);
        assert_int_equal(credprov_new(base, cfg, d, &cp, &err), 0);
        for (size_t i = 0; i < 4; i++)
                assert_int_equal(credprov_lookup(cp, images[i], NULL, on_lookup, &o[i], NULL), 0);
        for (size_t i = 0; i < 4; i++) {
                run_loop(base, &o[i].done);
                assert_string_equal(o[i].user, "u");
                assert_string_equal(o[i].error, "");
        }
        assert_int_equal(read_full_file(log, 4096, &runs, NULL), 0);
        assert_string_equal(runs, "run\nrun\nrun\nrun\n"); /* no OVERLAP */
        credprov_free(cp);
        event_base_free(base);
        for (const char *f = "pa\0pb\0config.yaml\0log\0"; *f; f += strlen(f) + 1) {
                snprintf(p, sizeof(p), "%s/%s", d, f);
                unlink(p);
        }
        rmdir(d);
}

int main(void) {
        /* as ckubelet's main: a child that does not read its stdin must not kill us */
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_config_ok),
                cmocka_unit_test(test_config_errors),
                cmocka_unit_test(test_config_token_attributes),
                cmocka_unit_test(test_sa_cache_key),
                cmocka_unit_test(test_config_directory),
                cmocka_unit_test(test_match_images),
                cmocka_unit_test(test_request_and_response),
                cmocka_unit_test(test_cache),
                cmocka_unit_test(test_spawn),
                cmocka_unit_test(test_providers),
                cmocka_unit_test(test_serialized),
                cmocka_unit_test(test_service_account_tokens),
                cmocka_unit_test(test_token_request_body),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
