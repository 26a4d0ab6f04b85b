/* SPDX-License-Identifier: Apache-2.0 */
/* KubeletEnsureSecretPulledImages in the image step, against the fake runtime: an image present on the node
 * whose record says a pull secret pulled it is pulled again by a pod without that secret (IfNotPresent) or
 * refused (Never, ErrImageNeverPull); an image the kubelet never pulled (preloaded) is used as it is; the pull
 * records the node-wide access it had; with the gate off nothing is verified. */
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

#include "basic/fs.h"
#include "basic/time.h"
#include "fake/fake_runtime.h"
#include "fake/test_kubelet.h"
#include "features/features.h"
#include "images/pull_records.h"

#define MIN_USEC (60 * USEC_PER_SEC)
#define IMG "reg.example/app:1"

static int setup(void **state) {
        *state = tk_new();
        return 0;
}

static int teardown(void **state) {
        tk_free(*state);
        return 0;
}

static char *record_path(struct test_kubelet *t, const char *image_ref) {
        char name[80], *p = NULL;
        assert_int_equal(pull_record_file_name(image_ref, name, sizeof(name)), 0);
        assert_true(asprintf(&p, "%s/root/image_manager/pulled/%s", t->dir, name) > 0);
        return p;
}

/* IMG on the node, recorded as pulled with a secret's credentials */
static char *seed(struct test_kubelet *t) {
        const struct fake_image *im;
        char *dir = NULL, *p, *rec = NULL;

        assert_int_equal(fake_runtime_add_image(t->rt, IMG, 0, NULL), 0);
        im = fake_runtime_image(t->rt, IMG);
        assert_non_null(im);
        assert_true(asprintf(&dir, "%s/root/image_manager/pulled/", t->dir) > 0);
        assert_int_equal(mkdir_p(dir, 0700), 0);
        p = record_path(t, im->id);
        assert_true(asprintf(&rec,
                             "{\"kind\":\"ImagePulledRecord\",\"apiVersion\":\"kubelet.config.k8s.io/v1alpha1\","
                             "\"lastUpdatedTime\":\"2023-01-01T00:00:00Z\",\"imageRef\":\"%s\",\"credentialMapping\":"
                             "{\"reg.example/app\":{\"kubernetesSecretCoordinates\":[{\"uid\":\"su\",\"namespace\":"
                             "\"ns\",\"name\":\"regcred\",\"credentialHash\":\"h\"}]}}}",
                             im->id) > 0);
        assert_int_equal(write_file_atomic(p, rec, strlen(rec), 0600), 0);
        free(rec);
        free(dir);
        return p;
}

static void test_secret_pulled_image_pulled_again(void **state) {
        struct test_kubelet *t = *state;
        _cleanup_free_ char *p = seed(t), *data = NULL;
        size_t len;

        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p0, uid: u0}\nspec:\n  containers:\n"
                       "  - {name: c, image: '" IMG "', imagePullPolicy: IfNotPresent}\n"
                       "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p1, uid: u1}\nspec:\n  containers:\n"
                       "  - {name: c, image: '" TK_IMAGE "', imagePullPolicy: IfNotPresent}\n");
        tk_start(t);
        tk_wait(t, tk_running, &((struct tk_want) { t, "u0", "c" }), 5 * MIN_USEC);
        tk_wait(t, tk_running, &((struct tk_want) { t, "u1", "c" }), 5 * MIN_USEC);
        assert_int_equal(fake_runtime_count_subject(t->rt, "PullImage", IMG), 1);
        assert_int_equal(fake_runtime_count(t->rt, "PullImage"), 1); /* the preloaded image is not verified */
        /* pulled without a secret: the record now says any pod may use it */
        tk_run_for(t, USEC_PER_SEC);
        assert_int_equal(read_full_file(p, PULL_RECORD_MAX_SIZE, &data, &len), 0);
        assert_non_null(strstr(data, "\"nodePodsAccessible\":true"));
        assert_null(strstr(data, "\"name\":\"regcred\"")); /* moot now, dropped as upstream */
}

static void test_never_refused(void **state) {
        struct test_kubelet *t = *state;
        _cleanup_free_ char *p = seed(t);
        json_t *c;

        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p0, uid: u0}\nspec:\n  containers:\n"
                       "  - {name: c, image: '" IMG "', imagePullPolicy: Never}\n");
        tk_start(t);
        tk_wait(t, tk_waiting, &((struct tk_want) { t, "u0", "c", .what = "ErrImageNeverPull" }), 5 * MIN_USEC);
        c = tk_container_status(t, "u0", "c");
        assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(c, "state"), "waiting"),
                                                              "message")),
                            "Container image \"" IMG "\" is present with pull policy of \"Never\" but does not have "
                            "the proper auth (image secret) that was used to pull the image");
        assert_int_equal(fake_runtime_count(t->rt, "PullImage"), 0);
}

/* the image GC's listing prunes the records of images the runtime no longer has */
static void test_record_of_removed_image_pruned(void **state) {
        struct test_kubelet *t = *state;
        _cleanup_free_ char *p = seed(t);

        assert_int_equal(fake_runtime_remove_image(t->rt, IMG), 0);
        t->opts.image_gc_high_threshold_percent = 99; /* the periodic image GC on: its listings prune */
        tk_set_pods(t, "");
        tk_start(t);
        tk_run_for(t, 6 * MIN_USEC);
        assert_int_not_equal(access(p, F_OK), 0);
}

static void test_gate_off(void **state) {
        struct test_kubelet *t = *state;
        _cleanup_free_ char *p = seed(t);

        assert_int_equal(feature_gates_set(&t->opts.feature_gates, "KubeletEnsureSecretPulledImages", false, false,
                                           NULL),
                         0);
        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p0, uid: u0}\nspec:\n  containers:\n"
                       "  - {name: c, image: '" IMG "', imagePullPolicy: IfNotPresent}\n");
        tk_start(t);
        tk_wait(t, tk_running, &((struct tk_want) { t, "u0", "c" }), 5 * MIN_USEC);
        assert_int_equal(fake_runtime_count(t->rt, "PullImage"), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_secret_pulled_image_pulled_again, setup, teardown),
                cmocka_unit_test_setup_teardown(test_never_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_record_of_removed_image_pruned, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gate_off, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
