/* SPDX-License-Identifier: Apache-2.0 */
/* The file source against a temporary directory, on a real event loop: initial scan, create / modify /
 * delete through inotify (each seen well within 100 ms), dot files, bad files logged once and keeping their
 * last good pods, oversized files, a directory that appears later and disappears, single-file mode. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "basic/fs.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "config/config.h"

#define NODE "node-1"
/* A change seen by the inotify watch must reach the kubelet within this. It only has to be well below the slowest
 * other path that could deliver the change: the periodic re-read (10-20 s here, which wait_update's own 1 s limit
 * already excludes) and, for a directory that appeared, the 1 s retry while it was missing (test_missing_directory
 * _appears writes right after that retry's update, so a retry would take about a second). 100 ms failed on a
 * loaded 2-core machine (load average 15-26, several builds) although the watch worked. */
#define FAST_MS 500

struct ctx {
        struct event_base *base;
        struct pod_config *config;
        unsigned calls;
        char **names; /* pod names of the last update, in order */
        char **images;
        char dir[64];
        char log_path[96];
        int saved_stderr;
};

static void on_update(const struct pod_set *pods, void *userdata) {
        struct ctx *t = userdata;

        t->calls++;
        t->names = strv_free(t->names);
        t->images = strv_free(t->images);
        for (size_t i = 0; i < pods->n; i++) {
                assert_int_equal(strv_extend(&t->names, pods->pods[i]->name), 0);
                assert_int_equal(strv_extend(&t->images, pods->pods[i]->spec.containers[0].image), 0);
        }
        event_base_loopbreak(t->base);
}

static void on_deadline(evutil_socket_t fd, short what, void *userdata) {
        *(bool *) userdata = true;
}

/* Run the loop until an update arrives after "prev" calls, or for ms when until_update is false. Returns the
 * elapsed ms, or -1 when no update came. */
static long loop_for(struct ctx *t, unsigned prev, long ms, bool until_update) {
        uint64_t start = now_usec();
        bool expired = false;
        struct event *deadline = evtimer_new(t->base, on_deadline, &expired);
        struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

        assert_non_null(deadline);
        evtimer_add(deadline, &tv);
        while (!expired && !(until_update && t->calls != prev))
                event_base_loop(t->base, EVLOOP_ONCE);
        event_free(deadline);
        return t->calls == prev ? -1 : (long) ((now_usec() - start) / 1000);
}

static long wait_update(struct ctx *t, unsigned prev, long timeout_ms) {
        return loop_for(t, prev, timeout_ms, true);
}

static void run_for(struct ctx *t, long ms) {
        loop_for(t, t->calls, ms, false);
}

static void expect_update(struct ctx *t, long timeout_ms) {
        unsigned prev = t->calls;
        long ms = wait_update(t, prev, timeout_ms);
        if (ms < 0)
                fail_msg("no update within %ld ms", timeout_ms);
}

static void expect_no_update(struct ctx *t, long ms) {
        unsigned prev = t->calls;
        run_for(t, ms);
        if (t->calls != prev)
                fail_msg("unexpected update (%u pods)", (unsigned) strv_length(t->names));
}

static char *pod_yaml(const char *name, const char *image) {
        char *s;
        assert_true(asprintf(&s,
                             "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  containers:\n  - name: c\n"
                             "    image: %s\n",
                             name, image) > 0);
        return s;
}

static void write_at(const char *path, const char *content) {
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fputs(content, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
}

static char *path_in(struct ctx *t, const char *name) {
        char *p;
        assert_true(asprintf(&p, "%s/%s", t->dir, name) > 0);
        return p;
}

static void write_file(struct ctx *t, const char *name, const char *content) {
        _cleanup_free_ char *p = path_in(t, name);
        write_at(p, content);
}

static void write_pod(struct ctx *t, const char *file, const char *name, const char *image) {
        _cleanup_free_ char *y = pod_yaml(name, image);
        write_file(t, file, y);
}

/* like an editor: write a dot file, rename it over the target */
static void replace_pod(struct ctx *t, const char *file, const char *name, const char *image) {
        _cleanup_free_ char *y = pod_yaml(name, image), *tmp = NULL, *dst = path_in(t, file);
        assert_true(asprintf(&tmp, "%s/.%s.swp", t->dir, file) > 0);
        write_at(tmp, y);
        assert_int_equal(rename(tmp, dst), 0);
}

static void remove_file(struct ctx *t, const char *name) {
        _cleanup_free_ char *p = path_in(t, name);
        assert_int_equal(unlink(p), 0);
}

static void capture_stderr(struct ctx *t) {
        int fd;

        snprintf(t->log_path, sizeof(t->log_path), "%s.log", t->dir);
        fflush(stderr);
        t->saved_stderr = dup(STDERR_FILENO);
        fd = open(t->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0 && t->saved_stderr >= 0);
        assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
        close(fd);
}

/* how often "needle" occurs in what was logged so far */
static unsigned count_logged(struct ctx *t, const char *needle) {
        _cleanup_free_ char *data = NULL;
        unsigned n = 0;

        fflush(stderr);
        assert_int_equal(read_full_file(t->log_path, 64 * 1024 * 1024, &data, NULL), 0);
        for (const char *p = data; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

static void restore_stderr(struct ctx *t) {
        _cleanup_free_ char *data = NULL;

        if (t->saved_stderr < 0)
                return;
        fflush(stderr);
        dup2(t->saved_stderr, STDERR_FILENO);
        close(t->saved_stderr);
        t->saved_stderr = -1;
        /* show what was logged, for failures */
        if (read_full_file(t->log_path, 64 * 1024 * 1024, &data, NULL) >= 0)
                fputs(data, stderr);
        unlink(t->log_path);
}

static int setup(void **state) {
        struct ctx *t = calloc(1, sizeof(*t));

        if (!t)
                return -1;
        snprintf(t->dir, sizeof(t->dir), "/tmp/ckubelet-file-XXXXXX");
        if (!mkdtemp(t->dir))
                return -1;
        t->base = event_base_new();
        t->saved_stderr = -1;
        if (!t->base || pod_config_new(t->base, NODE, on_update, t, &t->config) < 0)
                return -1;
        *state = t;
        return 0;
}

static int teardown(void **state) {
        struct ctx *t = *state;
        char cmd[128];

        restore_stderr(t);
        pod_config_free(t->config);
        event_base_free(t->base);
        strv_free(t->names);
        strv_free(t->images);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
        if (system(cmd) != 0)
                return -1;
        free(t);
        return 0;
}

static void expect_names(struct ctx *t, const char *const *want) {
        size_t n = 0;
        while (want[n])
                n++;
        if (strv_length(t->names) != n)
                fail_msg("got %zu pods, want %zu", strv_length(t->names), n);
        for (size_t i = 0; i < n; i++)
                assert_string_equal(t->names[i], want[i]);
}
#define EXPECT_NAMES(t, ...) expect_names(t, (const char *const[]) { __VA_ARGS__, NULL })

/* A file deleted and written again at once, with the same content (e2e_node's "should successfully recreate when file
 * is removed and recreated"): as upstream's source, the pods go and then come back, two updates, not none. */
static void test_removed_and_recreated(void **state) {
        struct ctx *t = *state;

        write_pod(t, "a.yaml", "a", "busybox:1");
        write_pod(t, "b.yaml", "b", "busybox:1");
        assert_int_equal(pod_config_add_file_source(t->config, t->dir, 20 * USEC_PER_SEC), 0);
        expect_update(t, 1000);
        EXPECT_NAMES(t, "a-" NODE, "b-" NODE);
        remove_file(t, "a.yaml");
        write_pod(t, "a.yaml", "a", "busybox:1");
        expect_update(t, FAST_MS);
        EXPECT_NAMES(t, "b-" NODE);
        expect_update(t, FAST_MS);
        EXPECT_NAMES(t, "a-" NODE, "b-" NODE);
        expect_no_update(t, 300);
        /* replaced by a rename (an editor's save) is a change, not a removal: no update for the same content */
        replace_pod(t, "a.yaml", "a", "busybox:1");
        expect_no_update(t, 300);
}

static void test_directory(void **state) {
        struct ctx *t = *state;
        _cleanup_free_ char *sub = path_in(t, "sub"), *subfile = NULL;
        long ms;

        write_pod(t, "b.yaml", "b", "busybox:1");
        write_pod(t, "a.yaml", "a", "busybox:1");
        write_pod(t, ".hidden.yaml", "hidden", "busybox:1");
        assert_int_equal(mkdir(sub, 0755), 0);
        assert_true(asprintf(&subfile, "%s/c.yaml", sub) > 0);
        write_at(subfile,
                 "apiVersion: v1\nkind: Pod\nmetadata: {name: nested}\nspec: {containers: [{name: c, image: x}]}\n");

        /* trailing slashes are fine */
        {
                _cleanup_free_ char *p = NULL;
                assert_true(asprintf(&p, "%s//", t->dir) > 0);
                assert_int_equal(pod_config_add_file_source(t->config, p, 10 * USEC_PER_SEC), 0);
        }
        assert_int_equal(pod_config_add_file_source(t->config, t->dir, 10 * USEC_PER_SEC), -EEXIST);
        assert_int_equal(t->calls, 0); /* the first read happens on the loop */
        expect_update(t, 1000);
        EXPECT_NAMES(t, "a-" NODE, "b-" NODE); /* name order; no dot files, no recursion */

        /* create */
        write_pod(t, "c.yaml", "c", "busybox:1");
        ms = wait_update(t, t->calls, 1000);
        assert_true(ms >= 0 && ms < FAST_MS);
        EXPECT_NAMES(t, "a-" NODE, "b-" NODE, "c-" NODE);

        /* modify in place */
        write_pod(t, "b.yaml", "b", "busybox:2");
        ms = wait_update(t, t->calls, 1000);
        assert_true(ms >= 0 && ms < FAST_MS);
        EXPECT_NAMES(t, "a-" NODE, "b-" NODE, "c-" NODE);
        assert_string_equal(t->images[1], "busybox:2");

        /* replace through a dot file and rename */
        replace_pod(t, "a.yaml", "a", "busybox:3");
        ms = wait_update(t, t->calls, 1000);
        assert_true(ms >= 0 && ms < FAST_MS);
        assert_string_equal(t->images[0], "busybox:3");

        /* delete */
        remove_file(t, "c.yaml");
        ms = wait_update(t, t->calls, 1000);
        assert_true(ms >= 0 && ms < FAST_MS);
        EXPECT_NAMES(t, "a-" NODE, "b-" NODE);

        /* dot files, touching a file without changing it, subdirectories: nothing */
        write_pod(t, ".other.yaml", "other", "busybox:1");
        write_pod(t, "a.yaml", "a", "busybox:3");
        write_at(subfile, "garbage: [");
        expect_no_update(t, 200);
}

static void test_bad_file_logged_once(void **state) {
        struct ctx *t = *state;
        _cleanup_free_ char *bad = path_in(t, "bad.yaml"), *good = path_in(t, "good.yaml"), *needle_bad = NULL,
                            *needle_good = NULL, *big = NULL;

        write_pod(t, "good.yaml", "good", "nginx:1");
        capture_stderr(t);
        assert_int_equal(pod_config_add_file_source(t->config, t->dir, 30 * USEC_PER_MSEC), 0);
        expect_update(t, 1000);
        EXPECT_NAMES(t, "good-" NODE);

        /* a new bad file: logged once with file, document, field and reason, however often we look */
        write_file(t, "bad.yaml",
                   "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - name: c\n");
        expect_no_update(t, 300);
        assert_true(asprintf(&needle_bad, "Could not process manifest file \"%s\"", bad) > 0);
        assert_int_equal(count_logged(t, needle_bad), 1);
        {
                _cleanup_free_ char *full = NULL;
                assert_true(asprintf(&full,
                                     "Could not process manifest file \"%s\": document 1 (pod \"x\"): "
                                     "spec.containers[0].image: Required value",
                                     bad) > 0);
                assert_int_equal(count_logged(t, full), 1);
        }

        /* a good file turning bad keeps its pods, and says so */
        write_file(t, "good.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: good\n");
        expect_no_update(t, 300);
        EXPECT_NAMES(t, "good-" NODE);
        assert_true(asprintf(&needle_good, "Could not process manifest file \"%s\"", good) > 0);
        assert_int_equal(count_logged(t, needle_good), 1);
        assert_int_equal(count_logged(t, "(keeping the 1 pod it defined before)"), 1);

        /* a different bad content is a new change: logged again */
        write_file(t, "bad.yaml", "kind: Pod\n");
        expect_no_update(t, 200);
        assert_int_equal(count_logged(t, needle_bad), 2);

        /* fixed: the new content replaces the kept pods */
        write_pod(t, "good.yaml", "good", "nginx:2");
        expect_update(t, 1000);
        EXPECT_NAMES(t, "good-" NODE);
        assert_string_equal(t->images[0], "nginx:2");
        assert_int_equal(count_logged(t, "is valid again"), 1);

        /* too large: a clear error, once */
        big = malloc(MANIFEST_MAX_SIZE + 2);
        assert_non_null(big);
        memset(big, '#', MANIFEST_MAX_SIZE + 1);
        big[MANIFEST_MAX_SIZE + 1] = '\0';
        write_file(t, "big.yaml", big);
        expect_no_update(t, 300);
        assert_int_equal(count_logged(t, "big.yaml\": file is larger than 10485760 bytes"), 1);

        /* an empty file is not a valid manifest */
        write_file(t, "empty.yaml", "");
        expect_no_update(t, 200);
        assert_int_equal(count_logged(t, "empty.yaml\": empty manifest file"), 1);

        /* deleting the file takes its pods */
        remove_file(t, "good.yaml");
        expect_update(t, 1000);
        assert_int_equal(strv_length(t->names), 0);
        restore_stderr(t);
}

static void test_missing_directory_appears(void **state) {
        struct ctx *t = *state;
        _cleanup_free_ char *later = path_in(t, "later"), *p = NULL, *q = NULL, *cmd = NULL;
        long ms;

        assert_int_equal(pod_config_add_file_source(t->config, later, 20 * USEC_PER_SEC), 0);
        expect_update(t, 1000); /* an empty source, as upstream */
        assert_int_equal(strv_length(t->names), 0);

        assert_int_equal(mkdir(later, 0755), 0);
        assert_true(asprintf(&p, "%s/p.yaml", later) > 0);
        {
                _cleanup_free_ char *y = pod_yaml("p", "busybox");
                write_at(p, y);
        }
        expect_update(t, 2500); /* looked for every second while missing */
        EXPECT_NAMES(t, "p-" NODE);

        /* watched now */
        assert_true(asprintf(&q, "%s/q.yaml", later) > 0);
        {
                _cleanup_free_ char *y = pod_yaml("q", "busybox");
                write_at(q, y);
        }
        ms = wait_update(t, t->calls, 1000);
        assert_true(ms >= 0 && ms < FAST_MS);
        EXPECT_NAMES(t, "p-" NODE, "q-" NODE);

        /* the whole directory goes: its pods go */
        assert_true(asprintf(&cmd, "rm -rf '%s'", later) > 0);
        assert_int_equal(system(cmd), 0);
        ms = wait_update(t, t->calls, 2500);
        assert_true(ms >= 0 && ms < FAST_MS);
        assert_int_equal(strv_length(t->names), 0);

        /* and comes back */
        assert_int_equal(mkdir(later, 0755), 0);
        {
                _cleanup_free_ char *y = pod_yaml("p", "busybox");
                write_at(p, y);
        }
        expect_update(t, 2500);
        EXPECT_NAMES(t, "p-" NODE);
}

static void test_single_file(void **state) {
        struct ctx *t = *state;
        _cleanup_free_ char *single = path_in(t, "single.yaml");
        long ms;

        write_pod(t, "single.yaml", "one", "busybox:1");
        write_pod(t, "other.yaml", "other", "busybox:1");
        assert_int_equal(pod_config_add_file_source(t->config, single, 10 * USEC_PER_SEC), 0);
        expect_update(t, 1000);
        EXPECT_NAMES(t, "one-" NODE);

        /* an editor replacing the file: still followed */
        replace_pod(t, "single.yaml", "one", "busybox:2");
        ms = wait_update(t, t->calls, 1000);
        assert_true(ms >= 0 && ms < FAST_MS);
        assert_string_equal(t->images[0], "busybox:2");
        replace_pod(t, "single.yaml", "one", "busybox:3");
        ms = wait_update(t, t->calls, 1000);
        assert_true(ms >= 0 && ms < FAST_MS);
        assert_string_equal(t->images[0], "busybox:3");

        /* other files next to it do not matter */
        write_pod(t, "other.yaml", "other", "busybox:2");
        expect_no_update(t, 200);

        remove_file(t, "single.yaml");
        ms = wait_update(t, t->calls, 1000);
        assert_true(ms >= 0 && ms < FAST_MS);
        assert_int_equal(strv_length(t->names), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_directory, setup, teardown),
                cmocka_unit_test_setup_teardown(test_removed_and_recreated, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_file_logged_once, setup, teardown),
                cmocka_unit_test_setup_teardown(test_missing_directory_appears, setup, teardown),
                cmocka_unit_test_setup_teardown(test_single_file, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
