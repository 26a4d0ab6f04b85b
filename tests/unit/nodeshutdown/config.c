/* SPDX-License-Identifier: Apache-2.0 */
/* Graceful node shutdown's pure parts: the configuration read and validated with upstream's messages, the groups
 * (migrateConfig, sorted), which group a pod goes to (groupByPriority), each pod's grace period, the delay asked
 * of logind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/time.h"
#include "nodeshutdown/config.h"
#include "options/options.h"

#define SEC USEC_PER_SEC

static char tmpdir[] = "/tmp/ckubelet-nodeshutdown-XXXXXX";

static int setup_dir(void **state) {
        return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

/* the configuration file through the options parser; r, and the error's message in *ret_message */
static int parse_config(const char *body, struct kubelet_options *o, char **ret_message) {
        _cleanup_free_ char *path = NULL;
        struct ck_error *err = NULL;
        FILE *f;
        int r;

        assert_true(asprintf(&path, "%s/config.yaml", tmpdir) > 0);
        f = fopen(path, "we");
        assert_non_null(f);
        fprintf(f, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n%s", body);
        fclose(f);
        char *argv[] = { (char *) "ckubelet", (char *) "--config", path, NULL };
        assert_int_equal(kubelet_options_init(o), 0);
        r = kubelet_options_parse(o, 3, argv, &err);
        *ret_message = err ? strdup(ck_error_message(err)) : NULL;
        ck_error_free(err);
        return r;
}

static void expect_invalid(const char *body, const char *want) {
        struct kubelet_options o;
        _cleanup_free_ char *msg = NULL;

        assert_true(parse_config(body, &o, &msg) < 0);
        assert_non_null(msg);
        if (!strstr(msg, want))
                fail_msg("error \"%s\" does not contain \"%s\"", msg, want);
        kubelet_options_done(&o);
}

static void test_config(void **state) {
        struct kubelet_options o;
        _cleanup_free_ char *msg = NULL;

        /* default: off */
        assert_int_equal(parse_config("", &o, &msg), 0);
        assert_int_equal(o.shutdown_grace_period_usec, 0);
        assert_int_equal(o.shutdown_grace_period_critical_pods_usec, 0);
        assert_int_equal(o.n_shutdown_by_priority, 0);
        kubelet_options_done(&o);

        assert_int_equal(parse_config("shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n", &o, &msg), 0);
        assert_int_equal(o.shutdown_grace_period_usec, 30 * SEC);
        assert_int_equal(o.shutdown_grace_period_critical_pods_usec, 10 * SEC);
        kubelet_options_done(&o);

        assert_int_equal(parse_config("shutdownGracePeriodByPodPriority:\n"
                                      "- {priority: 100000, shutdownGracePeriodSeconds: 10}\n"
                                      "- {priority: 0, shutdownGracePeriodSeconds: 20}\n",
                                      &o, &msg),
                         0);
        assert_int_equal(o.n_shutdown_by_priority, 2);
        assert_int_equal(o.shutdown_by_priority[0].priority, 100000);
        assert_int_equal(o.shutdown_by_priority[0].seconds, 10);
        assert_int_equal(o.shutdown_by_priority[1].priority, 0);
        assert_int_equal(o.shutdown_by_priority[1].seconds, 20);
        kubelet_options_done(&o);

        /* upstream's validation messages */
        expect_invalid("shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s\n",
                       "invalid configuration: shutdownGracePeriodCriticalPods 20s must be <= shutdownGracePeriod "
                       "10s");
        expect_invalid("shutdownGracePeriod: 500ms\n",
                       "invalid configuration: shutdownGracePeriod 500ms must be either zero or otherwise >= 1 sec");
        expect_invalid("shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 500ms\n",
                       "invalid configuration: shutdownGracePeriodCriticalPods 500ms must be either zero or "
                       "otherwise >= 1 sec");
        expect_invalid("shutdownGracePeriod: 10s\nshutdownGracePeriodByPodPriority:\n"
                       "- {priority: 0, shutdownGracePeriodSeconds: 20}\n",
                       "invalid configuration: Cannot specify both shutdownGracePeriodByPodPriority and "
                       "shutdownGracePeriod at the same time");
        /* the feature gates (beta and on in v1.37) turned off */
        expect_invalid("featureGates: {GracefulNodeShutdown: false}\nshutdownGracePeriod: 10s\n",
                       "invalid configuration: specifying shutdownGracePeriod or shutdownGracePeriodCriticalPods "
                       "requires feature gate GracefulNodeShutdown");
        expect_invalid("featureGates: {GracefulNodeShutdownBasedOnPodPriority: false}\n"
                       "shutdownGracePeriodByPodPriority:\n- {priority: 0, shutdownGracePeriodSeconds: 20}\n",
                       "invalid configuration: Specifying shutdownGracePeriodByPodPriority requires feature gate "
                       "GracefulNodeShutdownBasedOnPodPriority");
        expect_invalid("shutdownGracePeriod: -1s\n", "shutdownGracePeriod: invalid duration \"-1s\"");
        expect_invalid("shutdownGracePeriodByPodPriority:\n- {priority: 0, seconds: 20}\n",
                       "unknown field \"shutdownGracePeriodByPodPriority[0].seconds\"");
        expect_invalid("shutdownGracePeriodByPodPriority:\n- {priority: 0, shutdownGracePeriodSeconds: -1}\n",
                       "shutdownGracePeriodByPodPriority[0].shutdownGracePeriodSeconds");
        expect_invalid("shutdownGracePeriodByPodPriority:\n- {priority: 3000000000, shutdownGracePeriodSeconds: 1}\n",
                       "shutdownGracePeriodByPodPriority[0].priority: expected a 32-bit integer");
        expect_invalid("shutdownGracePeriodByPodPriority: {a: 1}\n",
                       "shutdownGracePeriodByPodPriority: expected a list");
}

static void test_periods_migrated(void **state) {
        struct nodeshutdown_period *p = NULL;
        size_t n = 9;

        /* off */
        assert_int_equal(nodeshutdown_periods(0, 0, NULL, 0, &p, &n), 0);
        assert_int_equal(n, 0);
        assert_null(p);

        /* 30s with 10s for the critical pods: 20s at priority 0, 10s at 2000000000 */
        assert_int_equal(nodeshutdown_periods(30 * SEC, 10 * SEC, NULL, 0, &p, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(p[0].priority, 0);
        assert_int_equal(p[0].seconds, 20);
        assert_int_equal(p[1].priority, 2000000000);
        assert_int_equal(p[1].seconds, 10);
        assert_int_equal(nodeshutdown_period_requested_usec(p, n), 30 * SEC);
        free(p);

        /* no share for the critical pods: they get 0 s */
        assert_int_equal(nodeshutdown_periods(30 * SEC, 0, NULL, 0, &p, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(p[0].seconds, 30);
        assert_int_equal(p[1].seconds, 0);
        free(p);
}

static void test_periods_by_priority_sorted(void **state) {
        const struct nodeshutdown_period in[] = { { 100000, 10 }, { -5, 3 }, { 10000, 20 }, { 0, 5 } };
        struct nodeshutdown_period *p = NULL;
        size_t n = 0;

        /* by priority wins over the two periods (which validation refuses together anyway) */
        assert_int_equal(nodeshutdown_periods(0, 0, in, ELEMENTSOF(in), &p, &n), 0);
        assert_int_equal(n, 4);
        assert_int_equal(p[0].priority, -5);
        assert_int_equal(p[1].priority, 0);
        assert_int_equal(p[2].priority, 10000);
        assert_int_equal(p[3].priority, 100000);
        assert_int_equal(p[3].seconds, 10);
        assert_int_equal(nodeshutdown_period_requested_usec(p, n), 38 * SEC);
        free(p);
}

static void test_group_of(void **state) {
        /* upstream's groupByPriority cases */
        const struct nodeshutdown_period g[] = { { 1, 10 }, { 2, 20 }, { 3, 30 }, { 4, 40 } };

        assert_int_equal(nodeshutdown_group_of(g, 4, 0), 0); /* below every group: the lowest */
        assert_int_equal(nodeshutdown_group_of(g, 4, -9), 0);
        assert_int_equal(nodeshutdown_group_of(g, 4, 1), 0); /* a group's own priority */
        assert_int_equal(nodeshutdown_group_of(g, 4, 2), 1);
        assert_int_equal(nodeshutdown_group_of(g, 4, 4), 3);
        assert_int_equal(nodeshutdown_group_of(g, 4, 5), 3); /* above every group: the highest */
        assert_int_equal(nodeshutdown_group_of(g, 4, INT32_MAX), 3);

        const struct nodeshutdown_period h[] = { { 0, 20 }, { 10000, 10 }, { 2000000000, 5 } };
        assert_int_equal(nodeshutdown_group_of(h, 3, 9999), 0); /* between two groups: the lower one */
        assert_int_equal(nodeshutdown_group_of(h, 3, 10000), 1);
        assert_int_equal(nodeshutdown_group_of(h, 3, 1999999999), 1);
        assert_int_equal(nodeshutdown_group_of(h, 3, 2000001000), 2);
        assert_int_equal(nodeshutdown_group_of(h, 3, -1), 0);

        /* one group takes everything */
        const struct nodeshutdown_period one[] = { { 50, 7 } };
        assert_int_equal(nodeshutdown_group_of(one, 1, -100), 0);
        assert_int_equal(nodeshutdown_group_of(one, 1, 100), 0);
}

static void test_pod_grace(void **state) {
        const struct nodeshutdown_period g = { 0, 20 };

        assert_int_equal(nodeshutdown_pod_grace(&g, 30), 20); /* the budget caps it */
        assert_int_equal(nodeshutdown_pod_grace(&g, 5), 5);   /* the pod's own when smaller */
        assert_int_equal(nodeshutdown_pod_grace(&g, 20), 20);
        assert_int_equal(nodeshutdown_pod_grace(&g, 0), 0);
        assert_int_equal(nodeshutdown_pod_grace(&g, -1), 20); /* none: the budget */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_config),
                cmocka_unit_test(test_periods_migrated),
                cmocka_unit_test(test_periods_by_priority_sorted),
                cmocka_unit_test(test_group_of),
                cmocka_unit_test(test_pod_grace),
        };
        return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
