/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "fake/test_kubelet.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "basic/error.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "config/config.h"
#include "kubelet/kubelet-internal.h"

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) remove(path);
        return 0;
}

/* the mounts a kubelet left beneath dir (the tmpfs of a projected or secret volume of a pod still there at the
 * end of a test), deepest first, so that the directory can be removed; mountinfo escapes no character of the
 * test's own paths (no space in them) */
static void unmount_beneath(const char *dir) {
        size_t n = strlen(dir);

        for (;;) {
                FILE *f = fopen("/proc/self/mountinfo", "re");
                char line[4096], mnt[4096], deepest[4096] = "";

                if (!f)
                        return;
                while (fgets(line, sizeof(line), f))
                        if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 && strncmp(mnt, dir, n) == 0 &&
                            mnt[n] == '/' && strlen(mnt) > strlen(deepest))
                                snprintf(deepest, sizeof(deepest), "%s", mnt);
                fclose(f);
                if (!deepest[0] || umount2(deepest, MNT_DETACH) < 0)
                        return;
        }
}

struct test_kubelet *tk_new(void) {
        struct test_kubelet *t = calloc(1, sizeof(*t));
        char tmpl[] = "/tmp/ckubelet-unit-XXXXXX";
        _cleanup_free_ char *root = NULL, *ep = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        const char *v = getenv("CKUBELET_TEST_V");

        assert_non_null(t);
        assert_non_null(mkdtemp(tmpl));
        t->dir = strdup(tmpl);
        t->base = event_base_new();
        assert_non_null(t->dir);
        assert_non_null(t->base);
        /* quiet unless asked: a failing test can be rerun with CKUBELET_TEST_V=4 */
        log_set_verbosity(v ? atoi(v) : 0);
        vloop_enable(t->base);
        assert_int_equal(fake_runtime_new(t->base, &t->rt), 0);
        assert_int_equal(fake_runtime_add_image(t->rt, TK_IMAGE, -1, NULL), 0);

        assert_int_equal(kubelet_options_init(&t->opts), 0);
        assert_true(asprintf(&root, "--root-dir=%s/root", t->dir) > 0);
        assert_true(asprintf(&ep, "--container-runtime-endpoint=%s", fake_runtime_endpoint(t->rt)) > 0);
        {
                /* the host's memory and disks must not count: no eviction thresholds, no periodic image GC (the
                 * fake's image filesystem is a path on the host) */
                char *argv[] = { (char *) "ckubelet",
                                 (char *) "--hostname-override=" TK_NODE,
                                 (char *) "--node-ip=10.0.0.1",
                                 root,
                                 ep,
                                 (char *) "--cgroups-per-qos=false",
                                 (char *) "--enforce-node-allocatable=",
                                 (char *) "--enable-server=false",
                                 (char *) "--resolv-conf=",
                                 (char *) "--eviction-hard=",
                                 (char *) "--image-gc-high-threshold=100",
                                 NULL };
                if (kubelet_options_parse(&t->opts, (int) ELEMENTSOF(argv) - 1, argv, &err) < 0)
                        fail_msg("options: %s", ck_error_message(err));
        }
        free(t->opts.pod_logs_dir);
        assert_true(asprintf(&t->opts.pod_logs_dir, "%s/logs", t->dir) > 0);
        return t;
}

void tk_free(struct test_kubelet *t) {
        if (!t)
                return;
        tk_stop(t);
        json_decref(t->pods);
        t->rt = fake_runtime_free(t->rt);
        /* what the kubelet left on the loop (nothing, unless a test leaks) goes with the base */
        event_base_free(t->base);
        vloop_disable();
        kubelet_options_done(&t->opts);
        if (t->dir) {
                unmount_beneath(t->dir);
                (void) nftw(t->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        }
        free(t->dir);
        free(t->yaml);
        free(t);
}

static void deliver_pods(struct test_kubelet *t) {
        _cleanup_free_ char *source_id = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};

        if (!t->k || !t->yaml)
                return;
        assert_true(asprintf(&source_id, "%s/manifests/pods.yaml", t->dir) > 0);
        if (!isempty(t->yaml) && pod_config_static_pods_from_manifest(t->yaml, strlen(t->yaml), TK_NODE,
                                                                      CONFIG_SOURCE_FILE, source_id, &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        /* what the file source does with a directory it read: the whole set, to the merger */
        assert_int_equal(pod_config_set_source_pods(t->k->config, CONFIG_SOURCE_FILE, &set), 0);
}

void tk_set_pods(struct test_kubelet *t, const char *yaml) {
        free(t->yaml);
        t->yaml = strdup(yaml);
        assert_non_null(t->yaml);
        deliver_pods(t);
}

void tk_start(struct test_kubelet *t) {
        assert_null(t->k);
        assert_int_equal(kubelet_new(t->base, &t->opts, &t->k), 0);
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                if (kubelet_start(t->k, &err) < 0)
                        fail_msg("kubelet_start: %s", ck_error_message(err));
        }
        /* before the loop runs: the first desired set the kubelet sees already has them */
        deliver_pods(t);
}

void tk_stop(struct test_kubelet *t) {
        t->k = kubelet_free(t->k);
        /* what the kubelet had in flight ends now (cancelled calls); nothing of it may be left */
        vloop_settle(t->base);
}

bool tk_run_until(struct test_kubelet *t, bool (*pred)(void *userdata), void *userdata, uint64_t cap_usec) {
        return vloop_run_until(t->base, pred, userdata, cap_usec);
}

void tk_run_for(struct test_kubelet *t, uint64_t usec) {
        vloop_run_for(t->base, usec);
}

json_t *tk_pod(struct test_kubelet *t, const char *uid) {
        json_t *list = NULL, *item;
        size_t i;

        json_decref(t->pods);
        t->pods = NULL;
        if (!t->k)
                return NULL;
        assert_int_equal(kubelet_pods_json(t->k, &list), 0);
        t->pods = list;
        json_array_foreach(json_object_get(list, "items"), i, item)
                if (streq_ptr(json_string_value(json_object_get(json_object_get(item, "metadata"), "uid")), uid))
                        return item;
        return NULL;
}

json_t *tk_container_status(struct test_kubelet *t, const char *uid, const char *container) {
        json_t *pod = tk_pod(t, uid), *status = json_object_get(pod, "status"), *c;
        static const char *const lists[] = { "containerStatuses", "initContainerStatuses" };
        size_t i;

        for (size_t l = 0; l < ELEMENTSOF(lists); l++)
                json_array_foreach(json_object_get(status, lists[l]), i, c)
                        if (streq_ptr(json_string_value(json_object_get(c, "name")), container))
                                return c;
        return NULL;
}

const char *tk_phase(struct test_kubelet *t, const char *uid) {
        const char *p = json_string_value(json_object_get(json_object_get(tk_pod(t, uid), "status"), "phase"));
        return p ? p : "";
}

const char *tk_condition(struct test_kubelet *t, const char *uid, const char *type) {
        json_t *c;
        size_t i;

        json_array_foreach(json_object_get(json_object_get(tk_pod(t, uid), "status"), "conditions"), i, c)
                if (streq_ptr(json_string_value(json_object_get(c, "type")), type))
                        return json_string_value(json_object_get(c, "status"));
        return NULL;
}

const char *tk_waiting_reason(struct test_kubelet *t, const char *uid, const char *container) {
        json_t *c = tk_container_status(t, uid, container);
        return json_string_value(json_object_get(json_object_get(json_object_get(c, "state"), "waiting"), "reason"));
}

bool tk_running(void *want) {
        const struct tk_want *w = want;
        const struct fake_container *c = fake_runtime_find(w->t->rt, w->uid, w->container);
        return c && c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
}

void tk_wait_running(struct test_kubelet *t, size_t n, const char *container, uint64_t cap_usec) {
        for (size_t i = 0; i < n; i++) {
                char uid[24];
                snprintf(uid, sizeof(uid), "u%zu", i);
                tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = uid, .container = container }), cap_usec);
        }
}

bool tk_restarts(void *want) {
        const struct tk_want *w = want;
        const struct fake_container *c = fake_runtime_find(w->t->rt, w->uid, w->container);
        const char *v = c ? fake_container_annotation(c, "io.kubernetes.container.restartCount") : NULL;
        int n;
        return v && safe_atoi(v, &n) >= 0 && n >= (int) w->n;
}

bool tk_waiting(void *want) {
        const struct tk_want *w = want;
        return streq_ptr(tk_waiting_reason(w->t, w->uid, w->container), w->what);
}

bool tk_phase_is(void *want) {
        const struct tk_want *w = want;
        return streq(tk_phase(w->t, w->uid), w->what);
}

bool tk_pod_gone(void *want) {
        const struct tk_want *w = want;
        return !fake_runtime_pod_sandbox(w->t->rt, w->uid) &&
               fake_runtime_count_instances(w->t->rt, w->uid, NULL, -1) == 0;
}

bool tk_calls(void *want) {
        const struct tk_want *w = want;
        return fake_runtime_count(w->t->rt, w->what) >= w->n;
}
