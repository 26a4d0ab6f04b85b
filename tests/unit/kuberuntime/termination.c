/* SPDX-License-Identifier: Apache-2.0 */
/* Termination messages: the message file's mount, reading it back (getTerminationMessage) and the log
 * fallback (readLastStringFromContainerLogs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <sys/stat.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "apis/manifest.h"
#include "basic/strmap.h"
#include "container/labels.h"
#include "kuberuntime/termination.h"

static char tmpdir[] = "/tmp/ckubelet-term-XXXXXX";

static void write_file(const char *path, const char *data) {
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(data, f);
        fclose(f);
}

static const char *tmp_root(void) {
        static char root[sizeof(tmpdir) + 8];
        snprintf(root, sizeof(root), "%s/root", tmpdir);
        return root;
}

static struct kc_container *exited(int exit_code, const char *policy, const char *log_path) {
        struct kc_container *c = calloc(1, sizeof(*c));
        c->state = KC_CONTAINER_EXITED;
        c->exit_code = exit_code;
        c->message = strdup("");
        c->log_path = strdup(log_path);
        assert_int_equal(strmap_set(&c->annotations, ANNOTATION_TERMINATION_MESSAGE_PATH, "/dev/termination-log"), 0);
        assert_int_equal(strmap_set(&c->annotations, ANNOTATION_TERMINATION_MESSAGE_POLICY, policy), 0);
        return c;
}

/* the message read in the three steps, as the kubelet does (the middle one on a worker there), with no root_dir */
static int read_message(struct kc_container *c, const Runtime__V1__ContainerStatus *st) {
        struct kr_termination_read *t = NULL;
        int r = kr_termination_read_new(c, st, NULL, &t);

        if (r < 0 || !t)
                return r;
        r = kr_termination_read_run(t);
        if (r >= 0)
                r = kr_termination_read_apply(t, c);
        kr_termination_read_free(t);
        return r;
}

static void test_mount_and_read(void **state) {
        const char *yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: u1}\nspec:\n"
                           "  containers:\n  - {name: c, image: busybox}\n";
        _cleanup_free_ char *log = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        Runtime__V1__ContainerConfig cfg = RUNTIME__V1__CONTAINER_CONFIG__INIT;
        Runtime__V1__ContainerStatus st = RUNTIME__V1__CONTAINER_STATUS__INIT;
        struct kc_container *c;
        char big[5001];

        assert_int_equal(manifest_parse(yaml, strlen(yaml), &set, &err), 0);
        assert_int_equal(kr_termination_message_mount(set.pods[0], &set.pods[0]->spec.containers[0], tmpdir, &cfg), 0);
        assert_int_equal(cfg.n_mounts, 1);
        assert_string_equal(cfg.mounts[0]->container_path, "/dev/termination-log");
        assert_non_null(strstr(cfg.mounts[0]->host_path, "/pods/u1/containers/c/"));
        st.n_mounts = cfg.n_mounts;
        st.mounts = cfg.mounts;

        /* the message from the file, after the runtime's own */
        assert_true(asprintf(&log, "%s/0.log", tmpdir) > 0);
        write_file(log, "2024-01-01T00:00:00.000000000Z stdout F one\n2024-01-01T00:00:00.000000000Z stdout F two\n");
        write_file(cfg.mounts[0]->host_path, "written by the app");
        c = exited(1, "File", log);
        free(c->message);
        c->message = strdup("runtime says");
        assert_int_equal(read_message(c, &st), 0);
        assert_string_equal(c->message, "runtime says: written by the app");
        kc_container_free(c);

        /* at most the last 4096 bytes */
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        big[sizeof(big) - 2] = 'Z';
        write_file(cfg.mounts[0]->host_path, big);
        c = exited(0, "File", log);
        assert_int_equal(read_message(c, &st), 0);
        assert_int_equal(strlen(c->message), KR_TERMINATION_MESSAGE_MAX);
        assert_int_equal(c->message[KR_TERMINATION_MESSAGE_MAX - 1], 'Z');
        kc_container_free(c);

        /* empty file: the log only with FallbackToLogsOnError and a failure */
        write_file(cfg.mounts[0]->host_path, "");
        c = exited(2, "FallbackToLogsOnError", log);
        assert_int_equal(read_message(c, &st), 0);
        assert_string_equal(c->message, "one\ntwo\n");
        kc_container_free(c);
        c = exited(0, "FallbackToLogsOnError", log);
        assert_int_equal(read_message(c, &st), 0);
        assert_string_equal(c->message, "");
        kc_container_free(c);
        c = exited(2, "File", log);
        assert_int_equal(read_message(c, &st), 0);
        assert_string_equal(c->message, "");
        kc_container_free(c);

        /* issue 26: a log whose last line is huge (partial lines) is not read from its start: only its last
         * KR_TERMINATION_LOG_WINDOW bytes are looked at */
        {
                FILE *f = fopen(log, "we");
                char chunk[1024];
                assert_non_null(f);
                fputs("2024-01-01T00:00:00.000000000Z stdout P START-OF-THE-LINE\n", f);
                memset(chunk, 'x', sizeof(chunk) - 1);
                chunk[sizeof(chunk) - 1] = '\0';
                for (int i = 0; i < 2 * KR_TERMINATION_LOG_WINDOW / 1024; i++)
                        fprintf(f, "2024-01-01T00:00:00.000000000Z stdout P %s\n", chunk);
                fputs("2024-01-01T00:00:00.000000000Z stdout F end\n", f);
                fclose(f);
        }
        c = exited(2, "FallbackToLogsOnError", log);
        assert_int_equal(read_message(c, &st), 0);
        assert_null(strstr(c->message, "START-OF-THE-LINE"));
        assert_int_equal(strlen(c->message), KR_TERMINATION_LOG_MAX);
        assert_true(c->message[0] == 'x');
        kc_container_free(c);
        write_file(log, "2024-01-01T00:00:00.000000000Z stdout F one\n2024-01-01T00:00:00.000000000Z stdout F two\n");

        /* a running container: nothing read */
        write_file(cfg.mounts[0]->host_path, "x");
        c = exited(0, "File", log);
        c->state = KC_CONTAINER_RUNNING;
        assert_int_equal(read_message(c, &st), 0);
        assert_string_equal(c->message, "");
        kc_container_free(c);

        for (size_t i = 0; i < cfg.n_mounts; i++)
                protobuf_c_message_free_unpacked(&cfg.mounts[i]->base, NULL);
        free(cfg.mounts);
        pod_set_done(&set);
}

/* Issue 26 item 4: read in three steps (the middle one on a worker in the kubelet), the message file opened
 * without following a symlink: beneath <root>/pods through no symlink at all where the kubelet made it, with
 * O_NOFOLLOW on its last component elsewhere; a FIFO in its place neither blocks nor is read. */
static char *read_through_steps(const char *uid, const char *name, const char *host_path, const char *root) {
        Runtime__V1__Mount m = RUNTIME__V1__MOUNT__INIT, *mp = &m;
        Runtime__V1__ContainerStatus st = RUNTIME__V1__CONTAINER_STATUS__INIT;
        struct kr_termination_read *t = NULL;
        struct kc_container *c = exited(1, "File", "/nonexistent.log");
        char *msg;

        c->pod_uid = strdup(uid);
        c->name = strdup(name);
        m.container_path = (char *) "/dev/termination-log";
        m.host_path = (char *) host_path;
        st.n_mounts = 1;
        st.mounts = &mp;
        assert_int_equal(kr_termination_read_new(c, &st, root, &t), 0);
        assert_non_null(t);
        assert_int_equal(kr_termination_read_run(t), 0);
        assert_int_equal(kr_termination_read_apply(t, c), 0);
        kr_termination_read_free(t);
        msg = TAKE_PTR(c->message);
        kc_container_free(c);
        return msg;
}

static void test_no_symlink_followed(void **state) {
        _cleanup_free_ char *dir = NULL, *file = NULL, *secret = NULL, *link = NULL, *linkdir = NULL, *via = NULL,
                            *fifo = NULL, *msg = NULL;

        assert_true(asprintf(&dir, "%s/root/pods/u9/containers/c", tmpdir) > 0);
        assert_int_equal(mkdir_p(dir, 0750), 0);
        assert_true(asprintf(&file, "%s/0001", dir) > 0);
        assert_true(asprintf(&secret, "%s/secret", tmpdir) > 0);
        write_file(file, "the message");
        write_file(secret, "host secret");

        /* where the kubelet made it: read */
        msg = read_through_steps("u9", "c", file, tmp_root());
        assert_string_equal(msg, "the message");
        msg = mfree(msg);

        /* a symlink in its place, where the kubelet makes it and elsewhere: not followed */
        assert_true(asprintf(&link, "%s/0002", dir) > 0);
        assert_int_equal(symlink(secret, link), 0);
        msg = read_through_steps("u9", "c", link, tmp_root());
        assert_null(strstr(msg, "host secret"));
        assert_non_null(strstr(msg, "Error on reading termination log"));
        msg = mfree(msg);
        msg = read_through_steps("u9", "c", link, NULL);
        assert_null(strstr(msg, "host secret"));
        assert_non_null(strstr(msg, "Error on reading termination log"));
        msg = mfree(msg);

        /* a symlinked directory on the way below <root>/pods: not crossed */
        assert_true(asprintf(&linkdir, "%s/root/pods/u8", tmpdir) > 0);
        assert_int_equal(symlink(tmpdir, linkdir), 0);
        assert_true(asprintf(&via, "%s/root/pods/u8/containers/c/secret", tmpdir) > 0);
        {
                _cleanup_free_ char *d = NULL;
                assert_true(asprintf(&d, "%s/containers/c", tmpdir) > 0);
                assert_int_equal(mkdir_p(d, 0750), 0);
                free(secret);
                assert_true(asprintf(&secret, "%s/secret", d) > 0);
                write_file(secret, "host secret");
        }
        msg = read_through_steps("u8", "c", via, tmp_root());
        assert_null(strstr(msg, "host secret"));
        assert_non_null(strstr(msg, "Error on reading termination log"));
        msg = mfree(msg);

        /* a FIFO: neither blocks nor is read */
        assert_true(asprintf(&fifo, "%s/0003", dir) > 0);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        msg = read_through_steps("u9", "c", fifo, tmp_root());
        assert_non_null(strstr(msg, "Error on reading termination log"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mount_and_read),
                cmocka_unit_test(test_no_symlink_followed),
        };
        char cmd[64];
        int r;

        if (!mkdtemp(tmpdir))
                return 1;
        r = cmocka_run_group_tests(tests, NULL, NULL);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
                fprintf(stderr, "could not remove %s\n", tmpdir);
        return r;
}
