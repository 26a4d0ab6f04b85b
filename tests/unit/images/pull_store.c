/* SPDX-License-Identifier: Apache-2.0 */
/* The pulled-image credential records on disk (KubeletEnsureSecretPulledImages): intents and records written
 * and removed off the loop, read back after a restart, an intent left by a killed kubelet, MustAttemptImagePull's
 * decision by policy and credentials */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <event2/event.h>

#include "basic/fs.h"
#include "images/pull_store-testing.h"

#define IMAGE "127.0.0.1:5000/private/busybox:1.36"
#define REF "sha256:0123456789abcdef"
/* upstream's testdata/pulling/sha256-ee81caca... holds the intent of this image */
#define UPSTREAM_IMAGE "repo.repo/test/test:v1"
#define UPSTREAM_INTENT "sha256-ee81caca15454863449fb55a1d942904d56d5ed9f9b20a7cb3453944ea2c7e11"

struct ctx {
        char dir[64];
        struct event_base *base;
        struct pull_store *s;
};

static const struct pull_secret_coord secret_a = { "uid-a", "ns1", "regcred", "hash-a" };
static const struct pull_secret_coord secret_a_rotated = { "uid-a", "ns1", "regcred", "hash-a2" };
static const struct pull_secret_coord secret_b = { "uid-b", "ns2", "other", "hash-b" };
static const struct pull_secret_coord secret_b_same_creds = { "uid-b", "ns2", "other", "hash-a" };

static struct pull_creds creds_of(const struct pull_secret_coord *c) {
        return (struct pull_creds) { .secrets = c, .n_secrets = c ? 1 : 0 };
}

static void drain(struct ctx *c) {
        while (pull_store_writes_in_flight(c->s) > 0)
                event_base_loop(c->base, EVLOOP_ONCE);
}

static char *path_of(struct ctx *c, const char *sub, const char *name) {
        char *p = NULL;
        assert_true(asprintf(&p, "%s/image_manager/%s/%s", c->dir, sub, name) >= 0);
        return p;
}

static char *record_path(struct ctx *c, const char *sub, const char *key) {
        char name[80];
        assert_int_equal(pull_record_file_name(key, name, sizeof(name)), 0);
        return path_of(c, sub, name);
}

static bool exists(const char *p) {
        return access(p, F_OK) == 0;
}

static int setup(void **state) {
        struct ctx *c = calloc(1, sizeof(*c));
        snprintf(c->dir, sizeof(c->dir), "/tmp/ck-pullstore-XXXXXX");
        assert_non_null(mkdtemp(c->dir));
        c->base = event_base_new();
        assert_int_equal(pull_store_new(c->base, c->dir, &c->s), 0);
        *state = c;
        return 0;
}

static int teardown(void **state) {
        struct ctx *c = *state;
        char *cmd = NULL;
        pull_store_free(c->s);
        event_base_free(c->base);
        assert_true(asprintf(&cmd, "rm -rf '%s'", c->dir) >= 0);
        assert_int_equal(system(cmd), 0);
        free(cmd);
        free(c);
        return 0;
}

static void restart(struct ctx *c) {
        c->s = pull_store_free(c->s);
        assert_int_equal(pull_store_new(c->base, c->dir, &c->s), 0);
}

static void test_intent_files(void **state) {
        struct ctx *c = *state;
        char *p = path_of(c, "pulling", UPSTREAM_INTENT), *data = NULL;
        size_t len;

        assert_int_equal(pull_store_intent_begin(c->s, UPSTREAM_IMAGE), 0);
        assert_int_equal(pull_store_intent_begin(c->s, UPSTREAM_IMAGE), 0); /* a second pod pulls it too */
        drain(c);
        assert_int_equal(read_full_file(p, 4096, &data, &len), 0);
        assert_string_equal(data, "{\"kind\":\"ImagePullIntent\",\"apiVersion\":\"kubelet.config.k8s.io/v1alpha1\","
                                  "\"image\":\"repo.repo/test/test:v1\"}");
        free(data);
        pull_store_intent_end(c->s, UPSTREAM_IMAGE);
        drain(c);
        assert_true(exists(p)); /* one pull still in flight */
        pull_store_intent_end(c->s, UPSTREAM_IMAGE);
        drain(c);
        assert_false(exists(p));
        assert_false(pull_store_intent_known(c->s, UPSTREAM_IMAGE));
        free(p);
}

static void test_pulled_record_and_match(void **state) {
        struct ctx *c = *state;
        struct pull_creds a = creds_of(&secret_a), none = creds_of(NULL), b = creds_of(&secret_b),
                          b_same = creds_of(&secret_b_same_creds), a_rot = creds_of(&secret_a_rotated);
        enum image_pull_verify_policy pre = IMAGE_PULL_NEVER_VERIFY_PRELOADED_IMAGES;
        char *p = record_path(c, "pulled", REF), *data = NULL;
        size_t len;

        /* not pulled by the kubelet: preloaded, not verified by default; verified with AlwaysVerify */
        assert_false(pull_store_must_pull(c->s, pre, NULL, IMAGE, REF, &none, 0));
        assert_true(pull_store_must_pull(c->s, IMAGE_PULL_ALWAYS_VERIFY, NULL, IMAGE, REF, &none, 0));

        assert_int_equal(pull_store_pulled(c->s, IMAGE, REF, &a, 1000000), 0);
        drain(c);
        assert_int_equal(read_full_file(p, PULL_RECORD_MAX_SIZE, &data, &len), 0);
        assert_non_null(strstr(data, "\"kind\":\"ImagePulledRecord\""));
        assert_non_null(strstr(data, "\"imageRef\":\"" REF "\""));
        assert_non_null(strstr(data, "\"127.0.0.1:5000/private/busybox\":{\"kubernetesSecretCoordinates\":"
                                     "[{\"uid\":\"uid-a\",\"namespace\":\"ns1\",\"name\":\"regcred\","
                                     "\"credentialHash\":\"hash-a\"}]}"));
        free(data);

        assert_true(pull_store_must_pull(c->s, pre, NULL, IMAGE, REF, &none, 0)); /* no secret */
        assert_true(pull_store_must_pull(c->s, pre, NULL, IMAGE, REF, &b, 0));    /* another secret */
        assert_false(pull_store_must_pull(c->s, pre, NULL, IMAGE, REF, &a, 0));   /* the one that pulled */
        assert_false(pull_store_must_pull(c->s, pre, NULL, "127.0.0.1:5000/private/busybox:other", REF, &a, 0));
        assert_false(pull_store_must_pull(c->s, IMAGE_PULL_NEVER_VERIFY, NULL, IMAGE, REF, &none, 0));
        assert_false(pull_store_must_pull(c->s, IMAGE_PULL_NEVER_VERIFY_ALLOWLISTED_IMAGES, "127.0.0.1:5000/private/*",
                                          IMAGE, REF, &none, 0));
        assert_true(pull_store_must_pull(c->s, IMAGE_PULL_NEVER_VERIFY_ALLOWLISTED_IMAGES, "docker.io/library/*", IMAGE,
                                         REF, &none, 0));
        assert_true(pull_store_must_pull(c->s, pre, NULL, IMAGE, "", &a, 0)); /* no imageRef */

        /* the same credentials in another secret match by hash, a rotated secret by its coordinates: both are
         * then recorded */
        assert_false(pull_store_must_pull(c->s, pre, NULL, IMAGE, REF, &b_same, 0));
        assert_false(pull_store_must_pull(c->s, pre, NULL, IMAGE, REF, &a_rot, 0));
        drain(c);
        assert_int_equal(read_full_file(p, PULL_RECORD_MAX_SIZE, &data, &len), 0);
        assert_non_null(strstr(data, "\"uid\":\"uid-b\""));
        assert_non_null(strstr(data, "\"credentialHash\":\"hash-a2\""));
        free(data);

        /* the records survive a restart */
        restart(c);
        assert_non_null(pull_store_record(c->s, REF));
        assert_true(pull_store_must_pull(c->s, pre, NULL, IMAGE, REF, &none, 0));
        assert_false(pull_store_must_pull(c->s, pre, NULL, IMAGE, REF, &a, 0));

        /* pulled without secrets (node-wide): any pod may use it */
        assert_int_equal(pull_store_pulled(c->s, IMAGE, REF, &(struct pull_creds) { .node_pods_accessible = true }, 0),
                         0);
        assert_false(pull_store_must_pull(c->s, pre, NULL, IMAGE, REF, &none, 0));
        drain(c);
        free(p);
}

static void test_leftover_intent(void **state) {
        struct ctx *c = *state;
        struct pull_creds none = creds_of(NULL), a = creds_of(&secret_a);
        enum image_pull_verify_policy pre = IMAGE_PULL_NEVER_VERIFY_PRELOADED_IMAGES;
        char *intent = record_path(c, "pulling", IMAGE), *rec = record_path(c, "pulled", REF);

        /* a kubelet killed during the pull: its intent stays */
        assert_int_equal(pull_store_intent_begin(c->s, IMAGE), 0);
        drain(c);
        restart(c);
        assert_true(pull_store_intent_known(c->s, IMAGE));
        /* the image is there: pulled by the kubelet, with credentials unknown: verified */
        assert_true(pull_store_must_pull(c->s, pre, NULL, IMAGE, REF, &a, 0));
        drain(c);
        assert_false(exists(intent));
        assert_true(exists(rec));
        assert_false(pull_store_intent_known(c->s, IMAGE));
        assert_true(pull_store_must_pull(c->s, pre, NULL, IMAGE, REF, &none, 0));
        free(intent);
        free(rec);
}

/* PruneUnknownRecords after an image listing: the records of images gone go, unless updated since the listing */
static void test_prune(void **state) {
        struct ctx *c = *state;
        struct pull_creds a = creds_of(&secret_a);
        char *kept = record_path(c, "pulled", REF), *gone = record_path(c, "pulled", "sha256:gone"),
             *late = record_path(c, "pulled", "sha256:late");
        const char *ids[] = { REF, "sha256:other" };

        assert_int_equal(pull_store_pulled(c->s, IMAGE, REF, &a, 1000000), 0);
        assert_int_equal(pull_store_pulled(c->s, "127.0.0.1:5000/x:1", "sha256:gone", &a, 1000000), 0);
        assert_int_equal(pull_store_pulled(c->s, "127.0.0.1:5000/y:1", "sha256:late", &a, 3000000), 0);
        drain(c);
        assert_true(exists(gone));
        pull_store_prune(c->s, ids, 2, 2000000);
        drain(c);
        assert_true(exists(kept));
        assert_false(exists(gone));
        assert_true(exists(late)); /* pulled after the listing began */
        assert_null(pull_store_record(c->s, "sha256:gone"));
        assert_non_null(pull_store_record(c->s, "sha256:late"));
        free(kept);
        free(gone);
        free(late);
}

static void write_raw(const char *p, const char *data, size_t len) {
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, len), (ssize_t) len);
        close(fd);
}

static void test_bad_files(void **state) {
        struct ctx *c = *state;
        char *garbage = record_path(c, "pulled", "x"), *misnamed = record_path(c, "pulled", "y"),
             *big = record_path(c, "pulling", "z"), *tmp = path_of(c, "pulled", "sha256-abc.tmp");
        const char *rec = "{\"kind\":\"ImagePulledRecord\",\"apiVersion\":\"kubelet.config.k8s.io/v1alpha1\","
                          "\"imageRef\":\"x\",\"credentialMapping\":{}}";
        char *huge = calloc(1, PULL_RECORD_MAX_SIZE + 2);

        write_raw(garbage, "not json", 8);
        write_raw(misnamed, rec, strlen(rec)); /* imageRef x in y's file */
        memset(huge, ' ', PULL_RECORD_MAX_SIZE + 1);
        write_raw(big, huge, PULL_RECORD_MAX_SIZE + 1);
        write_raw(tmp, rec, strlen(rec));
        restart(c);
        assert_null(pull_store_record(c->s, "x"));
        assert_false(pull_store_intent_known(c->s, "z"));
        free(huge);
        free(garbage);
        free(misnamed);
        free(big);
        free(tmp);
}

static void test_credential_hash(void **state) {
        char h1[65], h2[65], h3[65];
        (void) state;
        assert_int_equal(pull_store_credential_hash("user", "pass", h1, sizeof(h1)), 0);
        assert_int_equal(pull_store_credential_hash("user", "pass", h2, sizeof(h2)), 0);
        assert_int_equal(pull_store_credential_hash("user", "other", h3, sizeof(h3)), 0);
        assert_int_equal(strlen(h1), 64);
        assert_string_equal(h1, h2);
        assert_string_not_equal(h1, h3);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_intent_files, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pulled_record_and_match, setup, teardown),
                cmocka_unit_test_setup_teardown(test_leftover_intent, setup, teardown),
                cmocka_unit_test_setup_teardown(test_prune, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_files, setup, teardown),
                cmocka_unit_test(test_credential_hash),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
