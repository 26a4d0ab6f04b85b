/* SPDX-License-Identifier: Apache-2.0 */
/* The atomic writer, downward API formatting, configMap/secret/projected payloads from fetched objects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "basic/error.h"
#include "apis/manifest.h"
#include "basic/base64.h"
#include "basic/fs.h"
#include "objects/objects.h"
#include "volumes/contents.h"

static char tmp[] = "/tmp/ckubelet-aw-XXXXXX";

static struct pod *parse(const char *meta, const char *spec) {
        struct pod_set set = {};
        char *yaml = NULL;
        struct ck_error *err = NULL;
        struct pod *p;
        struct field_errors errs = {};

        assert_true(asprintf(&yaml, "apiVersion: v1\nkind: Pod\nmetadata: %s\nspec: %s\n", meta, spec) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest_parse: %s\n%s", ck_error_message(err), yaml);
        free(yaml);
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        if (pod_validate(p, &errs) != 0)
                fail_msg("invalid: %s", field_errors_to_string(&errs));
        return p;
}

static char *readf(const char *dir, const char *rel) {
        char *path = NULL, *data = NULL;
        assert_true(asprintf(&path, "%s/%s", dir, rel) > 0);
        if (read_full_file(path, 1 << 20, &data, NULL) < 0)
                data = NULL;
        free(path);
        return data;
}

static int mode_of(const char *dir, const char *rel) {
        char *path = NULL;
        struct stat st;
        assert_true(asprintf(&path, "%s/%s", dir, rel) > 0);
        assert_int_equal(stat(path, &st), 0);
        free(path);
        return st.st_mode & 07777;
}

static size_t count_versions(const char *dir) {
        DIR *d = opendir(dir);
        struct dirent *e;
        size_t n = 0;
        assert_non_null(d);
        while ((e = readdir(d)))
                if (strncmp(e->d_name, "..", 2) == 0 && e->d_name[2] != '\0' && strcmp(e->d_name, "..data") != 0)
                        n++;
        closedir(d);
        return n;
}

static void test_atomic_writer(void **state) {
        struct vol_payload p = {};
        char *dir = NULL, *s, link[256];
        struct stat st;
        ssize_t l;

        assert_true(asprintf(&dir, "%s/aw", tmp) > 0);
        assert_int_equal(mkdir(dir, 0755), 0);
        assert_int_equal(vol_payload_add(&p, "a", "one", 3, 0644), 0);
        assert_int_equal(vol_payload_add(&p, "sub/dir/b", "two", 3, 0400), 0);
        assert_int_equal(vol_atomic_write(dir, &p), 0);
        assert_string_equal(s = readf(dir, "a"), "one");
        free(s);
        assert_string_equal(s = readf(dir, "sub/dir/b"), "two");
        free(s);
        assert_int_equal(mode_of(dir, "a"), 0644);
        assert_int_equal(mode_of(dir, "sub/dir/b"), 0400);
        /* user-visible names are symlinks into ..data, which points at the version directory */
        {
                char *a = NULL;
                assert_true(asprintf(&a, "%s/a", dir) > 0);
                assert_int_equal(lstat(a, &st), 0);
                assert_true(S_ISLNK(st.st_mode));
                l = readlink(a, link, sizeof(link) - 1);
                link[l > 0 ? l : 0] = '\0';
                assert_string_equal(link, "..data/a");
                free(a);
                assert_true(asprintf(&a, "%s/..data", dir) > 0);
                l = readlink(a, link, sizeof(link) - 1);
                link[l > 0 ? l : 0] = '\0';
                assert_true(strncmp(link, "..20", 4) == 0);
                free(a);
        }
        assert_int_equal(count_versions(dir), 1);

        /* the same content: nothing changes */
        {
                char before[256], *dl = NULL;
                assert_true(asprintf(&dl, "%s/..data", dir) > 0);
                l = readlink(dl, before, sizeof(before) - 1);
                before[l] = '\0';
                assert_int_equal(vol_atomic_write(dir, &p), 0);
                l = readlink(dl, link, sizeof(link) - 1);
                link[l] = '\0';
                assert_string_equal(link, before);
                free(dl);
        }

        /* an update: a changed, sub gone, c new; old version removed */
        vol_payload_done(&p);
        assert_int_equal(vol_payload_add(&p, "a", "uno", 3, 0600), 0);
        assert_int_equal(vol_payload_add(&p, "c", "three", 5, 0644), 0);
        assert_int_equal(vol_atomic_write(dir, &p), 0);
        assert_string_equal(s = readf(dir, "a"), "uno");
        free(s);
        assert_int_equal(mode_of(dir, "a"), 0600);
        assert_string_equal(s = readf(dir, "c"), "three");
        free(s);
        assert_null(readf(dir, "sub/dir/b"));
        {
                char *sub = NULL;
                assert_true(asprintf(&sub, "%s/sub", dir) > 0);
                assert_int_equal(lstat(sub, &st), -1);
                free(sub);
        }
        assert_int_equal(count_versions(dir), 1);

        /* invalid paths are refused before anything is written */
        vol_payload_done(&p);
        assert_int_equal(vol_payload_add(&p, "../escape", "x", 1, 0644), 0);
        assert_int_equal(vol_atomic_write(dir, &p), -EINVAL);
        vol_payload_done(&p);
        assert_int_equal(vol_payload_add(&p, "/abs", "x", 1, 0644), 0);
        assert_int_equal(vol_atomic_write(dir, &p), -EINVAL);
        vol_payload_done(&p);
        assert_int_equal(vol_payload_add(&p, "ok/../../x", "x", 1, 0644), 0);
        assert_int_equal(vol_atomic_write(dir, &p), -EINVAL);
        assert_string_equal(s = readf(dir, "a"), "uno");
        free(s);

        /* empty payload: everything user-visible goes */
        vol_payload_done(&p);
        assert_int_equal(vol_atomic_write(dir, &p), 0);
        assert_null(readf(dir, "a"));
        assert_null(readf(dir, "c"));
        free(dir);
}

/* the path of a file inside the current version directory (what a container sees as <mount>/..data/<rel>) */
static char *in_version(const char *dir, const char *rel) {
        char *dl = NULL, link[256], *p = NULL;
        ssize_t l;

        assert_true(asprintf(&dl, "%s/..data", dir) > 0);
        l = readlink(dl, link, sizeof(link) - 1);
        assert_true(l > 0);
        link[l] = '\0';
        assert_true(asprintf(&p, "%s/%s/%s", dir, link, rel) > 0);
        free(dl);
        return p;
}

/* A container that can write to its volume (or anything else that can) replaces a file of the current version
 * with a FIFO, a device node, or a directory of it with a symlink to where a FIFO waits. The next write
 * compares the contents on the event loop: it must neither block nor follow anything, and must put the
 * payload back. (The test would hang on a blocking open; the unit test timeout fails it.) */
static void test_atomic_writer_hostile_version(void **state) {
        struct vol_payload p = {};
        char *dir = NULL, *f = NULL, *s, *fifo_dir = NULL, *fifo = NULL;
        struct stat st;

        assert_true(asprintf(&dir, "%s/hostile", tmp) > 0);
        assert_int_equal(mkdir(dir, 0755), 0);
        assert_int_equal(vol_payload_add(&p, "labels", "app=\"x\"", 7, 0644), 0);
        assert_int_equal(vol_payload_add(&p, "nested/value", "42", 2, 0644), 0);
        assert_int_equal(vol_atomic_write(dir, &p), 0);

        /* a FIFO in place of a file: opening it for reading would wait for a writer for ever */
        f = in_version(dir, "labels");
        assert_int_equal(unlink(f), 0);
        assert_int_equal(mkfifo(f, 0644), 0);
        free(f);
        assert_int_equal(vol_atomic_write(dir, &p), 0);
        assert_string_equal(s = readf(dir, "labels"), "app=\"x\"");
        free(s);
        f = in_version(dir, "labels");
        assert_int_equal(lstat(f, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        free(f);

        /* a character device (a tty would block; /dev/zero would be read for ever) */
        f = in_version(dir, "labels");
        assert_int_equal(unlink(f), 0);
        assert_int_equal(mknod(f, S_IFCHR | 0644, makedev(5, 0)), 0); /* /dev/tty */
        free(f);
        assert_int_equal(vol_atomic_write(dir, &p), 0);
        assert_string_equal(s = readf(dir, "labels"), "app=\"x\"");
        free(s);

        /* a directory of the version replaced by a symlink to a directory outside, where a FIFO waits under the
         * same name: O_NOFOLLOW guards only the last component */
        assert_true(asprintf(&fifo_dir, "%s/outside", tmp) > 0);
        assert_int_equal(mkdir(fifo_dir, 0755), 0);
        assert_true(asprintf(&fifo, "%s/value", fifo_dir) > 0);
        assert_int_equal(mkfifo(fifo, 0644), 0);
        f = in_version(dir, "nested/value");
        assert_int_equal(unlink(f), 0);
        free(f);
        f = in_version(dir, "nested");
        assert_int_equal(rmdir(f), 0);
        assert_int_equal(symlink(fifo_dir, f), 0);
        free(f);
        assert_int_equal(vol_atomic_write(dir, &p), 0);
        assert_string_equal(s = readf(dir, "nested/value"), "42");
        free(s);
        f = in_version(dir, "nested");
        assert_int_equal(lstat(f, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        free(f);
        /* nothing outside was touched */
        assert_int_equal(lstat(fifo, &st), 0);
        assert_true(S_ISFIFO(st.st_mode));

        vol_payload_done(&p);
        free(fifo);
        free(fifo_dir);
        free(dir);
}

static void test_downward_values(void **state) {
        struct pod *p = parse("{name: web, namespace: prod, uid: u-1, labels: {app: web, tier: front}, "
                              "annotations: {b: \"two\\nlines\", a: 'x\"y'}}",
                              "{containers: [{name: app, image: b, resources: {limits: {cpu: 250m, memory: 64Mi}}}, "
                              "{name: side, image: b}]}");
        struct downward_item it = {};
        struct kc_build_context ctx = { .root_dir = tmp };
        char *v = NULL;

#define FIELD(f, want)                                                      \
        do {                                                                \
                it = (struct downward_item) { .field_path = (char *) (f) }; \
                assert_int_equal(vol_downward_value(p, &it, &ctx, &v), 0);  \
                assert_string_equal(v, want);                               \
                free(v);                                                    \
        } while (0)
        FIELD("metadata.name", "web");
        FIELD("metadata.namespace", "prod");
        FIELD("metadata.uid", "u-1");
        FIELD("metadata.labels", "app=\"web\"\ntier=\"front\"");
        FIELD("metadata.annotations", "a=\"x\\\"y\"\nb=\"two\\nlines\"");
        FIELD("metadata.labels['app']", "web");
        FIELD("metadata.annotations['missing']", "");
#undef FIELD
#define RES(c, r, div, want)                                                   \
        do {                                                                   \
                it = (struct downward_item) { .has_resource_field_ref = true,  \
                                              .container_name = (char *) (c),  \
                                              .resource = (char *) (r) };      \
                if (div)                                                       \
                        assert_int_equal(quantity_parse(div, &it.divisor), 0); \
                assert_int_equal(vol_downward_value(p, &it, &ctx, &v), 0);     \
                assert_string_equal(v, (const char *) (want));                 \
                free(v);                                                       \
                quantity_done(&it.divisor);                                    \
        } while (0)
        RES("app", "limits.cpu", NULL, "1"); /* 250m rounded up to cores */
        RES("app", "limits.cpu", "1m", "250");
        RES("app", "requests.cpu", "1m", "250"); /* requests default to limits */
        RES("app", "limits.memory", NULL, "67108864");
        RES("app", "limits.memory", "1Mi", "64");
        RES("app", "limits.memory", "1G", "1");
        RES("side", "requests.memory", NULL, "0");
        {
                char want[32];
                snprintf(want, sizeof(want), "%ld", sysconf(_SC_NPROCESSORS_ONLN));
                RES("side", "limits.cpu", NULL, want); /* unset limit: the node's allocatable */
        }
#undef RES
        it = (struct downward_item) { .has_resource_field_ref = true,
                                      .container_name = (char *) "nope",
                                      .resource = (char *) "limits.cpu" };
        assert_int_equal(vol_downward_value(p, &it, &ctx, &v), -ESRCH);
        pod_free(p);
}

static void test_base64(void **state) {
        char *s = NULL;
        size_t n;
        assert_int_equal(base64_decode("aGVsbG8=", 1 << 20, &s, &n), 0);
        assert_int_equal(n, 5);
        assert_string_equal(s, "hello");
        free(s);
        assert_int_equal(base64_decode("", 1 << 20, &s, &n), 0);
        assert_int_equal(n, 0);
        free(s);
        assert_int_equal(base64_decode("AAEC/w==", 1 << 20, &s, &n), 0);
        assert_int_equal(n, 4);
        assert_int_equal((unsigned char) s[3], 0xff);
        free(s);
        assert_int_equal(base64_decode("aGVs\r\nbG8=\n", 1 << 20, &s, &n), 0); /* line breaks are ignored */
        assert_string_equal(s, "hello");
        free(s);
        s = NULL;
        assert_int_equal(base64_decode("aGVsbG8=", 4, &s, &n), -E2BIG);
        assert_int_equal(base64_decode("aGVsbG8", 1 << 20, &s, &n), -EINVAL);
        assert_int_equal(base64_decode("aG=sbG8=", 1 << 20, &s, &n), -EINVAL);
        assert_int_equal(base64_decode("a$==", 1 << 20, &s, &n), -EINVAL);
}

static struct vol_payload payload_of(const struct pod *p, const struct kc_build_context *ctx, size_t vi, int expect_r,
                                     const char *expect_msg) {
        struct vol_payload pl = {};
        struct ck_error *msg = NULL;
        int r = vol_volume_payload(p, &p->spec.volumes->volumes[vi], ctx, &pl, &msg);
        if (r != expect_r)
                fail_msg("volume %zu: r=%d msg=%s", vi, r, msg ? ck_error_message(msg) : "(none)");
        if (expect_msg)
                assert_string_equal(ck_error_message(msg), expect_msg);
        ck_error_free(msg);
        return pl;
}

static const char *file(const struct vol_payload *pl, const char *path, int *mode) {
        for (size_t i = 0; i < pl->n; i++)
                if (strcmp(pl->files[i].path, path) == 0) {
                        if (mode)
                                *mode = pl->files[i].mode;
                        return pl->files[i].data;
                }
        return NULL;
}

static void test_object_payloads(void **state) {
        struct pod_objects *o = NULL;
        struct pod *p = parse(
                "{name: web, namespace: ns, uid: u}",
                "{serviceAccountName: robot, volumes: ["
                " {name: all, configMap: {name: cm}},"
                " {name: items, configMap: {name: cm, defaultMode: 256, items: [{key: a, path: x/a}, {key: bin, path: b, mode: 384}]}},"
                " {name: missingkey, configMap: {name: cm, items: [{key: nope, path: n}]}},"
                " {name: optkey, configMap: {name: cm, optional: true, items: [{key: nope, path: n}, {key: a, path: a}]}},"
                " {name: gone, configMap: {name: absent}},"
                " {name: optgone, configMap: {name: absent, optional: true}},"
                " {name: sec, secret: {secretName: s}},"
                " {name: secgone, secret: {secretName: absent}},"
                " {name: broken, configMap: {name: forbidden}},"
                " {name: proj, projected: {defaultMode: 288, sources: [{configMap: {name: cm, items: [{key: a, path: cm-a}]}},"
                "   {secret: {name: s}}, {downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}},"
                "   {serviceAccountToken: {path: token, audience: vault, expirationSeconds: 7200}}]}},"
                " {name: notoken, projected: {sources: [{serviceAccountToken: {path: token}}]}}],"
                " containers: [{name: app, image: b}]}");
        struct kc_build_context ctx = { .root_dir = tmp };
        struct vol_payload pl;
        int mode = 0;

        assert_int_equal(objects_pod_new(&o), 0);
        ctx.objects = o;
        {
                json_t *cm = json_pack("{s:{s:s, s:s}, s:{s:s}}", "data", "a", "alpha", "b", "beta", "binaryData",
                                       "bin", "AAEC");
                json_t *sec = json_pack("{s:{s:s}}", "data", "password", "czNjcjN0");
                json_t *tok = json_pack("{s:s}", "token", "tok-123");
                assert_int_equal(objects_pod_put(o, "ConfigMap", "ns", "cm", cm), 0);
                assert_int_equal(objects_pod_put(o, "Secret", "ns", "s", sec), 0);
                assert_int_equal(objects_pod_put_token(o, "ns", "robot", "vault", 7200, tok), 0);
                json_decref(cm);
                json_decref(sec);
                json_decref(tok);
        }
        assert_int_equal(objects_pod_put_error(o, "ConfigMap", "ns", "forbidden", -EACCES,
                                               "configmaps \"forbidden\" is forbidden"),
                         0);

        pl = payload_of(p, &ctx, 0, 0, NULL);
        assert_int_equal(pl.n, 3);
        assert_string_equal(file(&pl, "a", &mode), "alpha");
        assert_int_equal(mode, 0644);
        assert_string_equal(file(&pl, "b", NULL), "beta");
        assert_memory_equal(file(&pl, "bin", NULL), "\0\1\2", 3);
        vol_payload_done(&pl);

        pl = payload_of(p, &ctx, 1, 0, NULL);
        assert_int_equal(pl.n, 2);
        assert_string_equal(file(&pl, "x/a", &mode), "alpha");
        assert_int_equal(mode, 0400);
        assert_non_null(file(&pl, "b", &mode));
        assert_int_equal(mode, 0600);
        vol_payload_done(&pl);

        payload_of(p, &ctx, 2, -ENOENT, "configmap references non-existent config key: nope");
        pl = payload_of(p, &ctx, 3, 0, NULL);
        assert_int_equal(pl.n, 1);
        vol_payload_done(&pl);
        payload_of(p, &ctx, 4, -ENOENT, "configmap \"absent\" not found");
        pl = payload_of(p, &ctx, 5, 0, NULL);
        assert_int_equal(pl.n, 0);
        vol_payload_done(&pl);

        pl = payload_of(p, &ctx, 6, 0, NULL);
        assert_string_equal(file(&pl, "password", NULL), "s3cr3t");
        vol_payload_done(&pl);
        payload_of(p, &ctx, 7, -ENOENT, "secret \"absent\" not found");
        payload_of(p, &ctx, 8, -EACCES, "cannot get configmap \"forbidden\": configmaps \"forbidden\" is forbidden");

        pl = payload_of(p, &ctx, 9, 0, NULL);
        assert_int_equal(pl.n, 4);
        assert_string_equal(file(&pl, "cm-a", &mode), "alpha");
        assert_int_equal(mode, 0440);
        assert_string_equal(file(&pl, "password", NULL), "s3cr3t");
        assert_string_equal(file(&pl, "name", NULL), "web");
        assert_string_equal(file(&pl, "token", NULL), "tok-123");
        vol_payload_done(&pl);
        payload_of(p, &ctx, 10, -ENOENT, "failed to fetch token: no token for the service account (no API server)");

        /* standalone (no objects at all): required references fail, optional ones are empty */
        ctx.objects = NULL;
        payload_of(p, &ctx, 0, -ENOENT, "configmap \"cm\" not found");
        pl = payload_of(p, &ctx, 5, 0, NULL);
        vol_payload_done(&pl);
        objects_pod_free(o);
        pod_free(p);
}

static int setup(void **state) {
        return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state) {
        char *c = NULL;
        if (asprintf(&c, "rm -rf %s", tmp) > 0)
                (void) !system(c);
        free(c);
        return 0;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_atomic_writer),   cmocka_unit_test(test_atomic_writer_hostile_version),
                cmocka_unit_test(test_downward_values), cmocka_unit_test(test_base64),
                cmocka_unit_test(test_object_payloads),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
