/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "objects/manager.h"
#include "objects/refs.h"

static const char POD[] =
        "{\"metadata\": {\"name\": \"p\", \"namespace\": \"ns\"}, \"spec\": {"
        "\"serviceAccountName\": \"builder\","
        "\"volumes\": ["
        " {\"name\": \"v1\", \"configMap\": {\"name\": \"cm1\"}},"
        " {\"name\": \"v2\", \"secret\": {\"secretName\": \"s1\", \"optional\": true}},"
        " {\"name\": \"v3\", \"emptyDir\": {}},"
        " {\"name\": \"v4\", \"projected\": {\"sources\": ["
        "   {\"configMap\": {\"name\": \"cm2\", \"optional\": false}},"
        "   {\"secret\": {\"name\": \"s2\"}},"
        "   {\"serviceAccountToken\": {\"path\": \"t\"}},"
        "   {\"serviceAccountToken\": {\"path\": \"t2\", \"audience\": \"vault\", \"expirationSeconds\": 7200}},"
        "   {\"serviceAccountToken\": {\"path\": \"t3\"}}]}}],"
        "\"initContainers\": [{\"name\": \"init\", \"envFrom\": [{\"configMapRef\": {\"name\": \"cm3\"}}]}],"
        "\"containers\": [{\"name\": \"c\", \"envFrom\": [{\"secretRef\": {\"name\": \"s3\", \"optional\": true}}],"
        "  \"env\": [{\"name\": \"A\", \"value\": \"x\"},"
        "           {\"name\": \"B\", \"valueFrom\": {\"configMapKeyRef\": {\"name\": \"cm1\", \"key\": \"k\"}}},"
        "           {\"name\": \"C\", \"valueFrom\": {\"secretKeyRef\": {\"name\": \"s4\", \"key\": \"k\", \"optional\": true}}},"
        "           {\"name\": \"D\", \"valueFrom\": {\"fieldRef\": {\"fieldPath\": \"metadata.name\"}}}]}],"
        "\"imagePullSecrets\": [{\"name\": \"regcred\"}, {}]}}";

static void check(const struct obj_ref *r, const char *kind, const char *name, bool optional, enum obj_ref_use use,
                  const char *where) {
        assert_string_equal(r->kind, kind);
        assert_string_equal(r->name, name);
        assert_int_equal(r->optional, optional);
        assert_int_equal(r->use, use);
        if (where)
                assert_string_equal(r->where, where);
        else
                assert_null(r->where);
}

static void test_collect(void **state) {
        json_t *pod = json_loads(POD, 0, NULL);
        struct pod_refs r = {};

        assert_non_null(pod);
        assert_int_equal(objects_refs_collect(pod, &r), 0);
        assert_int_equal(r.n_objs, 9);
        check(&r.objs[0], "ConfigMap", "cm1", false, OBJ_REF_VOLUME, "v1");
        check(&r.objs[1], "Secret", "s1", true, OBJ_REF_VOLUME, "v2");
        check(&r.objs[2], "ConfigMap", "cm2", false, OBJ_REF_VOLUME, "v4");
        check(&r.objs[3], "Secret", "s2", false, OBJ_REF_VOLUME, "v4");
        check(&r.objs[4], "ConfigMap", "cm3", false, OBJ_REF_ENV, "init");
        check(&r.objs[5], "Secret", "s3", true, OBJ_REF_ENV, "c");
        check(&r.objs[6], "ConfigMap", "cm1", false, OBJ_REF_ENV, "c");
        check(&r.objs[7], "Secret", "s4", true, OBJ_REF_ENV, "c");
        check(&r.objs[8], "Secret", "regcred", false, OBJ_REF_PULL_SECRET, NULL);
        /* the empty imagePullSecrets entry is skipped */
        assert_int_equal(r.n_tokens, 2); /* t and t3 are the same request */
        assert_string_equal(r.tokens[0].service_account, "builder");
        assert_string_equal(r.tokens[0].audience, "");
        assert_int_equal(r.tokens[0].expiration_seconds, 3600);
        assert_string_equal(r.tokens[0].volume, "v4");
        assert_string_equal(r.tokens[1].audience, "vault");
        assert_int_equal(r.tokens[1].expiration_seconds, 7200);
        objects_refs_done(&r);
        objects_refs_done(NULL);
        json_decref(pod);
}

static void test_collect_none(void **state) {
        json_t *pod = json_pack("{s:{s:[{s:s}]}}", "spec", "containers", "name", "c");
        struct pod_refs r = {};

        assert_int_equal(objects_refs_collect(pod, &r), 0);
        assert_int_equal(r.n_objs, 0);
        assert_int_equal(r.n_tokens, 0);
        objects_refs_done(&r);
        json_decref(pod);
}

static void test_service_account(void **state) {
        json_t *a = json_pack("{s:{}}", "spec");
        json_t *b = json_pack("{s:{s:s}}", "spec", "serviceAccount", "old");
        json_t *c = json_pack("{s:{s:s, s:s}}", "spec", "serviceAccount", "old", "serviceAccountName", "new");

        assert_string_equal(objects_refs_service_account(a), "default");
        assert_string_equal(objects_refs_service_account(b), "old");
        assert_string_equal(objects_refs_service_account(c), "new");
        json_decref(a);
        json_decref(b);
        json_decref(c);
}

static void test_not_found_message(void **state) {
        char *m = objects_not_found_message("ConfigMap", "x");
        assert_string_equal(m, "configmap \"x\" not found");
        free(m);
        m = objects_not_found_message("Secret", "y");
        assert_string_equal(m, "secret \"y\" not found");
        free(m);
}

static void test_token_refresh(void **state) {
        const int64_t iat = 1000000, ttl = 3600, exp = iat + ttl;

        /* fresh, and up to 80% of the TTL: kept */
        assert_false(objects_token_requires_refresh(iat, exp, ttl));
        assert_false(objects_token_requires_refresh(iat + ttl * 80 / 100, exp, ttl));
        /* past 80% of the TTL: refreshed */
        assert_true(objects_token_requires_refresh(iat + ttl * 80 / 100 + 1, exp, ttl));
        assert_true(objects_token_requires_refresh(exp + 10, exp, ttl));
        /* a long-lived token is refreshed after 24 h even though 80% of its TTL is far */
        assert_false(objects_token_requires_refresh(iat + 24 * 3600, iat + 7 * 24 * 3600, 7 * 24 * 3600));
        assert_true(objects_token_requires_refresh(iat + 24 * 3600 + 1, iat + 7 * 24 * 3600, 7 * 24 * 3600));
}

static void changed(const char *uid, void *userdata) {
        (*(int *) userdata)++;
}

/* Without an API server every object and token is -ENOENT and nothing waits. */
static void test_manager_without_api(void **state) {
        json_t *pod = json_loads(POD, 0, NULL), *got = NULL;
        struct objects_manager *m = NULL;
        struct pod_objects *o = NULL;
        struct pod_refs r = {};
        int calls = 0;

        assert_int_equal(objects_manager_new(NULL, NULL, changed, &calls, &m), 0);
        assert_int_equal(objects_refs_collect(pod, &r), 0);
        assert_int_equal(objects_manager_register(m, "uid1", "ns", "p", true, &r), 0);
        assert_int_equal(objects_manager_register(m, "uid1", "ns", "p", true, &r), 0);
        assert_int_equal(objects_manager_wait(m, "uid1", NULL, NULL), 0);
        assert_int_equal(objects_pod_new(&o), 0);
        assert_int_equal(objects_manager_fill(m, "uid1", o), 0);
        assert_int_equal(objects_pod_lookup(o, "ConfigMap", "ns", "cm1", &got, NULL), -ENOENT);
        assert_int_equal(objects_pod_lookup_token(o, "ns", "builder", "", 3600, &got, NULL), -ENOENT);
        objects_manager_unregister(m, "uid1");
        objects_manager_unregister(m, "unknown");
        assert_int_equal(calls, 0);
        objects_pod_free(o);
        objects_refs_done(&r);
        assert_null(objects_manager_free(m));
        assert_null(objects_manager_free(NULL));
        json_decref(pod);
}

static void test_collect_certificates(void **state) {
        json_t *pod = json_loads(
                "{\"spec\": {\"volumes\": [{\"name\": \"c\", \"projected\": {\"sources\": ["
                "{\"clusterTrustBundle\": {\"name\": \"b\", \"path\": \"ca\"}},"
                "{\"podCertificate\": {\"signerName\": \"example.com/s\", \"keyType\": \"ED25519\", "
                "\"keyPath\": \"k\", \"maxExpirationSeconds\": 7200, \"userAnnotations\": {\"a.io/x\": \"y\"}}},"
                "{\"podCertificate\": {\"signerName\": \"example.com/t\", \"keyType\": \"RSA3072\", "
                "\"keyPath\": \"k2\"}}]}}]}}",
                0, NULL);
        struct pod_refs r = {};

        assert_non_null(pod);
        assert_int_equal(objects_refs_collect(pod, &r), 0);
        assert_true(r.trust_bundles);
        assert_int_equal(r.n_certs, 2);
        assert_string_equal(r.certs[0].volume, "c");
        assert_int_equal(r.certs[0].index, 1); /* its index among the volume's sources */
        assert_string_equal(r.certs[0].service_account, "default");
        assert_string_equal(r.certs[0].signer_name, "example.com/s");
        assert_string_equal(r.certs[0].key_type, "ED25519");
        assert_true(r.certs[0].has_max_expiration);
        assert_int_equal(r.certs[0].max_expiration_seconds, 7200);
        assert_string_equal(json_string_value(json_object_get(r.certs[0].user_annotations, "a.io/x")), "y");
        assert_int_equal(r.certs[1].index, 2);
        assert_false(r.certs[1].has_max_expiration);
        assert_null(r.certs[1].user_annotations);
        objects_refs_done(&r);
        json_decref(pod);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_collect),
                cmocka_unit_test(test_collect_none),
                cmocka_unit_test(test_collect_certificates),
                cmocka_unit_test(test_service_account),
                cmocka_unit_test(test_not_found_message),
                cmocka_unit_test(test_token_refresh),
                cmocka_unit_test(test_manager_without_api),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
