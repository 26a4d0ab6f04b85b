/* SPDX-License-Identifier: Apache-2.0 */
/* The credential verification policies of KubeletEnsureSecretPulledImages (upstream's image_pull_policies.go) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "options/image_pull_policy.h"

static void test_policy_names(void **state) {
        (void) state;
        assert_int_equal(image_pull_verify_policy_from_string("NeverVerify"), IMAGE_PULL_NEVER_VERIFY);
        assert_int_equal(image_pull_verify_policy_from_string("NeverVerifyPreloadedImages"),
                         IMAGE_PULL_NEVER_VERIFY_PRELOADED_IMAGES);
        assert_int_equal(image_pull_verify_policy_from_string("NeverVerifyAllowlistedImages"),
                         IMAGE_PULL_NEVER_VERIFY_ALLOWLISTED_IMAGES);
        assert_int_equal(image_pull_verify_policy_from_string("AlwaysVerify"), IMAGE_PULL_ALWAYS_VERIFY);
        assert_true(image_pull_verify_policy_from_string("alwaysverify") < 0);
        assert_true(image_pull_verify_policy_from_string("") < 0);
        assert_true(image_pull_verify_policy_from_string(NULL) < 0);
}

static void check_name(const char *image, const char *want) {
        char *n = image_pull_normalized_name(image);
        assert_non_null(n);
        assert_string_equal(n, want);
        free(n);
}

static void test_normalized_name(void **state) {
        (void) state;
        check_name("busybox", "docker.io/library/busybox");
        check_name("busybox:1.36", "docker.io/library/busybox");
        check_name("library/busybox@sha256:abcd", "docker.io/library/busybox");
        check_name("index.docker.io/user/app:v1", "docker.io/user/app");
        check_name("127.0.0.1:5000/private/app:1", "127.0.0.1:5000/private/app");
        check_name("localhost/app", "localhost/app");
        check_name("registry.k8s.io/pause:3.10", "registry.k8s.io/pause");
        assert_null(image_pull_normalized_name(""));
}

static void check_pattern(const char *pattern, const char *want_why) {
        char why[256];
        int r = image_pull_allowlist_pattern_check(pattern, why, sizeof(why));
        if (!want_why) {
                assert_int_equal(r, 0);
                return;
        }
        assert_int_equal(r, -EINVAL);
        assert_string_equal(why, want_why);
}

static void test_allowlist_patterns(void **state) {
        (void) state;
        check_pattern("registry.k8s.io/pause", NULL);
        check_pattern("quay.io/org/*", NULL);
        check_pattern("busybox", NULL);
        check_pattern(" busybox", "leading/trailing spaces are not allowed:  busybox");
        check_pattern("", "the supplied pattern is too short: ");
        check_pattern("/*", "at least registry hostname is required");
        check_pattern("quay.io/org*", "not a valid wildcard pattern, only patterns ending with '/*' are allowed: "
                                      "quay.io/org*");
        check_pattern("quay.io/*/app", "not a valid wildcard pattern, only patterns ending with '/*' are allowed: "
                                       "quay.io/*/app");
        check_pattern("registry.k8s.io/pause:3.10",
                      "neither tag nor digest is accepted in an image reference: registry.k8s.io/pause:3.10");
        check_pattern("registry.k8s.io/pause@sha256:0123",
                      "neither tag nor digest is accepted in an image reference: registry.k8s.io/pause@sha256:0123");
        check_pattern("bad name!", "failed to parse as an image name: invalid reference format");
}

/* RequireCredentialVerificationForImage for each policy, an image pulled by the kubelet or preloaded */
static void test_require_verification(void **state) {
        const char *allow = "registry.k8s.io/pause,quay.io/org/*,busybox";
        (void) state;

        for (int pulled = 0; pulled <= 1; pulled++) {
                assert_false(image_pull_require_verification(IMAGE_PULL_NEVER_VERIFY, NULL, "private/app", pulled));
                assert_true(image_pull_require_verification(IMAGE_PULL_ALWAYS_VERIFY, NULL, "private/app", pulled));
                assert_int_equal(image_pull_require_verification(IMAGE_PULL_NEVER_VERIFY_PRELOADED_IMAGES, NULL,
                                                                 "private/app", pulled),
                                 pulled);
                /* the allowlist exempts its images, preloaded or not, and only them */
                assert_false(image_pull_require_verification(IMAGE_PULL_NEVER_VERIFY_ALLOWLISTED_IMAGES, allow,
                                                             "registry.k8s.io/pause:3.10", pulled));
                assert_false(image_pull_require_verification(IMAGE_PULL_NEVER_VERIFY_ALLOWLISTED_IMAGES, allow,
                                                             "quay.io/org/team/app@sha256:00", pulled));
                assert_false(image_pull_require_verification(IMAGE_PULL_NEVER_VERIFY_ALLOWLISTED_IMAGES, allow,
                                                             "docker.io/library/busybox:1", pulled));
                assert_true(image_pull_require_verification(IMAGE_PULL_NEVER_VERIFY_ALLOWLISTED_IMAGES, allow,
                                                            "quay.io/organisation/app", pulled));
                assert_true(image_pull_require_verification(IMAGE_PULL_NEVER_VERIFY_ALLOWLISTED_IMAGES, allow,
                                                            "registry.k8s.io/pause-evil", pulled));
                assert_true(image_pull_require_verification(IMAGE_PULL_NEVER_VERIFY_ALLOWLISTED_IMAGES, NULL,
                                                            "registry.k8s.io/pause", pulled));
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_policy_names),
                cmocka_unit_test(test_normalized_name),
                cmocka_unit_test(test_allowlist_patterns),
                cmocka_unit_test(test_require_verification),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
