/* SPDX-License-Identifier: Apache-2.0 */
/* env[].valueFrom.fileKeyRef: the env file parser (upstream's ParseEnv rules: single-quoted values, comments,
 * multi-line values, the errors and where parsing stops), the worker's read (below the volume only, no FIFO, the
 * size cap), the resolved result's messages, and the environment built from it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apis/manifest.h"
#include "basic/error.h"
#include "basic/fs.h"
#include "basic/string.h"
#include "basic/strmap.h"
#include "kuberuntime/env.h"
#include "kuberuntime/envfile.h"

static char tmp[PATH_MAX];

/* ---------------------------------------------------------------- the parser */

static void want_value(const char *data, const char *key, const char *want) {
        _cleanup_free_ char *v = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        int r = kr_env_file_parse(data, strlen(data), key, &v, &err);
        if (r != 1)
                fail_msg("%s in %s: %d (%s)", key, data, r, ck_error_message(err));
        assert_string_equal(v, want);
}

static void want_absent(const char *data, const char *key) {
        _cleanup_free_ char *v = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        assert_int_equal(kr_env_file_parse(data, strlen(data), key, &v, &err), 0);
        assert_null(v);
}

static void want_parse_error(const char *data, const char *key, const char *want) {
        _cleanup_free_ char *v = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        assert_int_equal(kr_env_file_parse(data, strlen(data), key, &v, &err), -EINVAL);
        assert_null(v);
        assert_non_null(err);
        assert_string_equal(ck_error_message(err), want);
}

static void test_parse(void **state) {
        want_value("A='1'\nB='2'\n", "B", "2");
        want_value("A='1'", "A", "1"); /* no final newline */
        want_absent("A='1'\n", "C");
        want_absent("", "C");
        want_value("  \tA='x'\n", "A", "x");                                   /* leading blanks */
        want_value("# c\n\n   \n\t# c2\nA='x' # note\n", "A", "x");            /* comments, blank lines */
        want_value("A='foo#bar'\n", "A", "foo#bar");                           /* '#' inside quotes */
        want_value("A='  a b  '\n", "A", "  a b  ");                           /* literal spaces */
        want_value("A='a=b=c'\n", "A", "a=b=c");                               /* '=' in the value */
        want_value("A='$HOME ${X} \\n \"q\"'\n", "A", "$HOME ${X} \\n \"q\""); /* nothing expanded */
        want_value("A=''\n", "A", "");                                         /* empty quotes */
        want_value("A= 'x'\n", "A", "");                                       /* a blank after '=': empty */
        want_value("A= oops no quotes\nB='b'\n", "B", "b");                    /* ... and the rest ignored */
        want_value("A='l1\nl2\n  l3'\nB='b'\n", "A", "l1\nl2\n  l3");          /* multi-line */
        want_value("A='l1\nl2' # c\nB='b'\n", "B", "b");
        want_value("A='x'\r\nB='y'\r\n", "B", "y"); /* CRLF, as bufio.ScanLines */
        want_value("A='1'\nA='2'\n", "A", "1");     /* the first wins */
        want_value("A='1'\nthis is not parsed\n", "A", "1");
        want_value("export A='1'\n", "export A", "1"); /* a name is what precedes '=' */

        want_parse_error("B='b'\nnoequals\nA='1'\n", "A", "invalid environment variable format at line 2: missing '='");
        want_parse_error("A = '1'\n", "A",
                         "invalid environment variable format at line 1: whitespace before '=' is not allowed");
        want_parse_error("='1'\n", "A", "invalid environment variable format at line 1: empty variable name");
        want_parse_error("A=1\n", "A",
                         "invalid environment variable format at line 1: value must be enclosed in single quotes");
        want_parse_error("A=\"1\"\n", "A",
                         "invalid environment variable format at line 1: value must be enclosed in single quotes");
        want_parse_error("A=\n", "A",
                         "invalid environment variable format at line 1: value must be enclosed in single quotes");
        want_parse_error("A='1'x\n", "A",
                         "invalid environment variable format at line 1: unexpected content after closing quote");
        want_parse_error("A='a''b'\n", "A",
                         "invalid environment variable format at line 1: unexpected content after closing quote");
        want_parse_error("A='it's'\n", "A",
                         "invalid environment variable format at line 1: unexpected content after closing quote");
        want_parse_error("X='1'\nA='l1\nl2\n", "A",
                         "invalid environment variable format starting at line 2: unclosed single quote");
        /* the line of the closing quote is the one named */
        want_parse_error("A='l1\nl2' junk\n", "A",
                         "invalid environment variable format at line 2: unexpected content after closing quote");
        /* an error before another key fails that key too (upstream reads from the top) */
        want_parse_error("A=1\nB='2'\n", "B",
                         "invalid environment variable format at line 1: value must be enclosed in single quotes");
}

static void test_parse_nul_and_long_lines(void **state) {
        static const char nul[] = "A='x\0y'\nB='b'\n";
        _cleanup_free_ char *v = NULL, *big = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        size_t n;

        /* a NUL byte in the wanted value is refused; in another entry it does not matter */
        assert_int_equal(kr_env_file_parse(nul, sizeof(nul) - 1, "A", &v, &err), -EINVAL);
        assert_null(v);
        assert_non_null(strstr(ck_error_message(err), "NUL"));
        assert_int_equal(kr_env_file_parse(nul, sizeof(nul) - 1, "B", &v, &err), 1);
        assert_string_equal(v, "b");
        v = mfree(v);

        /* bufio.Scanner's 64 KiB buffer: a line of 65535 bytes and its '\n' fit, one more byte does not */
        big = malloc(KR_ENV_FILE_LINE_MAX + 16);
        assert_non_null(big);
        n = KR_ENV_FILE_LINE_MAX - 1;
        memcpy(big, "A='", 3);
        memset(big + 3, 'x', n - 4);
        big[n - 1] = '\'';
        big[n] = '\n';
        assert_int_equal(kr_env_file_parse(big, n + 1, "A", &v, &err), 1);
        assert_int_equal(strlen(v), n - 4);
        v = mfree(v);
        memset(big + 3, 'x', n - 3);
        big[n] = '\'';
        big[n + 1] = '\n';
        assert_int_equal(kr_env_file_parse(big, n + 2, "A", &v, &err), -E2BIG);
        assert_null(v);
        assert_string_equal(ck_error_message(err), "bufio.Scanner: token too long");
        /* inside a multi-line value too */
        {
                _cleanup_free_ char *ml = malloc(n + 16);
                assert_non_null(ml);
                memcpy(ml, "A='x\n", 5);
                memset(ml + 5, 'y', n + 1);
                assert_int_equal(kr_env_file_parse(ml, n + 6, "A", &v, &err), -E2BIG);
                assert_string_equal(ck_error_message(err), "bufio.Scanner: token too long");
        }
        /* the key found before the long line: upstream stops reading there */
        {
                _cleanup_free_ char *two = malloc(n + 16);
                assert_non_null(two);
                memcpy(two, "B='b'\n", 6);
                memcpy(two + 6, big, n + 2);
                assert_int_equal(kr_env_file_parse(two, n + 8, "B", &v, &err), 1);
                assert_string_equal(v, "b");
        }
}

/* ---------------------------------------------------------------- the read */

static char *vol; /* <tmp>/vol: the "emptyDir" */

static void put(const char *rel, const char *content) {
        _cleanup_free_ char *p = NULL;
        FILE *f;
        assert_true(asprintf(&p, "%s/%s", tmp, rel) > 0);
        f = fopen(p, "we");
        assert_non_null(f);
        fputs(content, f);
        fclose(f);
}

static void link_at(const char *rel, const char *target) {
        _cleanup_free_ char *p = NULL;
        assert_true(asprintf(&p, "%s/%s", tmp, rel) > 0);
        assert_int_equal(symlink(target, p), 0);
}

static int setup(void **state) {
        _cleanup_free_ char *sub = NULL;
        strcpy(tmp, "/tmp/ckubelet-envfile-XXXXXX");
        if (!mkdtemp(tmp))
                return -1;
        if (asprintf(&vol, "%s/vol", tmp) < 0 || mkdir(vol, 0755) < 0)
                return -1;
        if (asprintf(&sub, "%s/vol/sub", tmp) < 0 || mkdir(sub, 0755) < 0)
                return -1;
        return 0;
}

static int teardown(void **state) {
        (void) fs_remove_tree_at(AT_FDCWD, tmp);
        free(vol);
        return 0;
}

static int read_in_vol(const char *path, char **ret) {
        size_t n;
        return kr_env_file_read(vol, path, KR_ENV_FILE_MAX, ret, &n);
}

static void test_read(void **state) {
        _cleanup_free_ char *abs_secret = NULL;
        char *d = NULL;

        put("secret", "S='outside'\n");
        put("vol/config.env", "A='1'\n");
        put("vol/sub/b.env", "B='2'\n");
        assert_int_equal(read_in_vol("config.env", &d), 0);
        assert_string_equal(d, "A='1'\n");
        d = mfree(d);
        /* an absolute path is taken inside the volume (securejoin) */
        assert_int_equal(read_in_vol("/sub/./b.env", &d), 0);
        assert_string_equal(d, "B='2'\n");
        d = mfree(d);

        /* a symlink inside the volume is followed, as securejoin does */
        link_at("vol/inner", "sub/b.env");
        assert_int_equal(read_in_vol("inner", &d), 0);
        assert_string_equal(d, "B='2'\n");
        d = mfree(d);

        /* symlinks out of the volume are never followed out of it: an absolute one resolves inside the volume
         * (where there is no such file), ".." stops at the volume's root */
        assert_true(asprintf(&abs_secret, "%s/secret", tmp) > 0);
        link_at("vol/abs", abs_secret);
        assert_int_equal(read_in_vol("abs", &d), -ENOENT);
        assert_null(d);
        link_at("vol/rel", "../secret");
        assert_int_equal(read_in_vol("rel", &d), -ENOENT);
        link_at("vol/sub/up", "../../../../../../secret");
        assert_int_equal(read_in_vol("sub/up", &d), -ENOENT);
        link_at("vol/dirlink", tmp);
        assert_int_equal(read_in_vol("dirlink/secret", &d), -ENOENT);
        assert_int_equal(read_in_vol("../secret", &d), -ENOENT);
        assert_null(d);
        /* no /proc magic link either */
        link_at("vol/magic", "/proc/self/root/etc/passwd");
        assert_true(read_in_vol("magic", &d) < 0);
        assert_null(d);

        /* not a regular file: refused, a FIFO without blocking */
        {
                _cleanup_free_ char *fifo = NULL;
                assert_true(asprintf(&fifo, "%s/vol/fifo", tmp) > 0);
                assert_int_equal(mkfifo(fifo, 0644), 0);
                assert_int_equal(read_in_vol("fifo", &d), -EBADFD);
                assert_int_equal(read_in_vol("sub", &d), -EISDIR);
                assert_int_equal(read_in_vol("missing.env", &d), -ENOENT);
                assert_null(d);
        }
}

static void test_read_cap(void **state) {
        _cleanup_free_ char *p = NULL, *d = NULL;
        size_t n = 0;
        FILE *f;

        assert_true(asprintf(&p, "%s/vol/big.env", tmp) > 0);
        f = fopen(p, "we");
        assert_non_null(f);
        for (size_t i = 0; i < KR_ENV_FILE_MAX; i++)
                fputc('#', f);
        fclose(f);
        assert_int_equal(kr_env_file_read(vol, "big.env", KR_ENV_FILE_MAX, &d, &n), 0);
        assert_int_equal(n, KR_ENV_FILE_MAX);
        d = mfree(d);
        f = fopen(p, "ae");
        assert_non_null(f);
        fputc('\n', f);
        fclose(f);
        assert_int_equal(kr_env_file_read(vol, "big.env", KR_ENV_FILE_MAX, &d, &n), -EFBIG);
        assert_null(d);
}

/* ---------------------------------------------------------------- resolve and build */

static struct pod *parse_pod(const char *containers) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct pod *p;

        assert_true(asprintf(&yaml,
                             "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: ns1, uid: u-1}\n"
                             "spec:\n  volumes: [{name: data, emptyDir: {}}, {name: host, hostPath: {path: /}}]\n"
                             "  containers:\n%s",
                             containers) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        assert_int_equal(set.n, 1);
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

static const char ENVS[] = "  - name: app\n    image: busybox\n    env:\n"
                           "    - {name: PLAIN, value: p}\n"
                           "    - {name: A, valueFrom: {fileKeyRef: {volumeName: data, path: config.env, key: A}}}\n"
                           "    - {name: E, valueFrom: {fileKeyRef: {volumeName: data, path: config.env, key: E}}}\n"
                           "    - {name: M, valueFrom: {fileKeyRef: {volumeName: data, path: config.env, key: M, "
                           "optional: true}}}\n"
                           "    - {name: X, valueFrom: {fileKeyRef: {volumeName: data, path: nofile, key: X, "
                           "optional: true}}}\n"
                           "    - {name: H, valueFrom: {fileKeyRef: {volumeName: host, path: etc/passwd, key: H}}}\n"
                           "    - {name: R, value: '$(A)-$(PLAIN)'}\n";

/* the requests for the pod above, resolved as the worker does, with <tmp> as the root directory */
static void resolve(struct pod *p, struct kr_env_file_req **ret, size_t *ret_n) {
        _cleanup_free_ char *dir = NULL;

        assert_true(asprintf(&dir, "%s/pods/u-1/volumes/kubernetes.io~empty-dir/data", tmp) > 0);
        assert_int_equal(mkdir_p(dir, 0755), 0);
        put("pods/u-1/volumes/kubernetes.io~empty-dir/data/config.env", "A='from file'\nE=''\n");
        assert_int_equal(kr_env_file_requests(p, &p->spec.containers[0], tmp, ret, ret_n), 0);
        for (size_t i = 0; i < *ret_n; i++)
                kr_env_file_resolve(&(*ret)[i]);
}

static void test_resolve(void **state) {
        struct pod *p = parse_pod(ENVS);
        struct kr_env_file_req *q = NULL;
        _cleanup_free_ char *want = NULL;
        size_t n = 0;

        resolve(p, &q, &n);
        assert_int_equal(n, 5);
        assert_int_equal(q[0].env_idx, 1);
        assert_int_equal(q[0].result.r, 1);
        assert_string_equal(q[0].result.value, "from file");
        assert_null(q[0].detail);
        /* an empty value counts as absent */
        assert_int_equal(q[1].result.r, 0);
        assert_true(asprintf(&want,
                             "environment variable key \"E\" not found in file "
                             "\"%s/pods/u-1/volumes/kubernetes.io~empty-dir/data/config.env\"",
                             tmp) > 0);
        assert_string_equal(q[1].result.message, want);
        assert_int_equal(q[2].result.r, 0);
        /* a missing file fails even an optional key, with upstream's generic message; the log says why */
        assert_true(q[3].result.r < 0);
        assert_string_equal(q[3].result.message, "couldn't parse env file");
        assert_non_null(strstr(q[3].detail, "nofile"));
        /* not an emptyDir (a static pod would not pass validation either): nothing is read */
        assert_int_equal(q[4].result.r, -ENOENT);
        assert_string_equal(q[4].result.message, "cannot find the volume \"host\" referenced by FileKeyRef");
        kr_env_file_reqs_free(q, n);
        pod_free(p);
}

/* kr_make_environment with the resolved values, as sync_start.c hands them over */
static int build(struct pod *p, struct kr_env_file_req *q, size_t n, struct kc_build_report *report,
                 struct strmap *env) {
        const struct container *c = &p->spec.containers[0];
        struct kc_env_file_value *vals = calloc(c->n_env, sizeof(*vals));
        struct kc_build_context ctx = { .report = report, .env_files = vals, .n_env_files = c->n_env };
        int r;

        assert_non_null(vals);
        for (size_t i = 0; i < n; i++)
                vals[q[i].env_idx] = q[i].result;
        r = kr_make_environment(p, c, &ctx, env);
        free(vals);
        return r;
}

static void test_build(void **state) {
        struct kc_build_report report = {};
        struct kr_env_file_req *q = NULL;
        struct strmap env = {};
        struct pod *p;
        size_t n = 0;

        /* only the keys that exist, and the optional ones */
        p = parse_pod("  - name: app\n    image: busybox\n    env:\n"
                      "    - {name: PLAIN, value: p}\n"
                      "    - {name: A, valueFrom: {fileKeyRef: {volumeName: data, path: config.env, key: A}}}\n"
                      "    - {name: M, valueFrom: {fileKeyRef: {volumeName: data, path: config.env, key: M, "
                      "optional: true}}}\n"
                      "    - {name: R, value: '$(A)-$(PLAIN)'}\n");
        resolve(p, &q, &n);
        assert_int_equal(build(p, q, n, &report, &env), 0);
        assert_string_equal(strmap_get(&env, "A"), "from file");
        assert_string_equal(strmap_get(&env, "R"), "from file-p"); /* defined for the variables after it */
        assert_null(strmap_get(&env, "M"));                        /* optional and absent: not set */
        assert_null(report.error);
        strmap_done(&env);
        kr_env_file_reqs_free(q, n);
        pod_free(p);

        /* the first error in env order is the container's */
        p = parse_pod(ENVS);
        resolve(p, &q, &n);
        assert_true(build(p, q, n, &report, &env) < 0);
        assert_non_null(report.error);
        assert_non_null(strstr(ck_error_message(report.error), "environment variable key \"E\" not found in file"));
        kc_build_report_done(&report);
        report = (struct kc_build_report) {};

        /* nothing read (the build before the worker): refused, never read on the loop */
        {
                struct kc_build_context ctx = { .report = &report };
                assert_int_equal(kr_make_environment(p, &p->spec.containers[0], &ctx, &env), -EAGAIN);
                kc_build_report_done(&report);
        }
        kr_env_file_reqs_free(q, n);
        pod_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),   cmocka_unit_test(test_parse_nul_and_long_lines),
                cmocka_unit_test(test_read),    cmocka_unit_test(test_read_cap),
                cmocka_unit_test(test_resolve), cmocka_unit_test(test_build),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
