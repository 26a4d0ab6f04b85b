/* SPDX-License-Identifier: Apache-2.0 */
/* The node side of volumes in a temporary directory: /etc/hosts content, hostPath type checks, emptyDir
 * directories, subPath resolution against hostile symlinks, subPathExpr expansion (orphan removal: removal.c). (Mounts — tmpfs, bind mounts — are covered by tests/e2e/test_volumes.py.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "basic/error.h"
#include "apis/manifest.h"
#include "apis/pod_volumes.h"
#include "basic/fs.h"
#include "volumes/subpath.h"
#include "volumes/volumes.h"

static char tmp[] = "/tmp/ckubelet-volumes-XXXXXX";

static struct pod *parse(const char *meta, const char *spec) {
        struct pod_set set = {};
        char *yaml = NULL;
        struct ck_error *err = NULL;
        struct pod *p;

        assert_true(asprintf(&yaml, "apiVersion: v1\nkind: Pod\nmetadata: %s\nspec: %s\n", meta, spec) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest_parse: %s\n%s", ck_error_message(err), yaml);
        free(yaml);
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        {
                struct field_errors errs = {};
                if (pod_validate(p, &errs) != 0) {
                        char *m = field_errors_to_string(&errs);
                        fail_msg("invalid: %s", m);
                }
        }
        return p;
}

static void run(const char *cmd) {
        char *c = NULL;
        assert_true(asprintf(&c, "cd %s && %s", tmp, cmd) > 0);
        assert_int_equal(system(c), 0);
        free(c);
}

static char *in_tmp(const char *rel) {
        char *p = NULL;
        assert_true(asprintf(&p, "%s/%s", tmp, rel) > 0);
        return p;
}

static void test_hosts_content(void **state) {
        struct pod *p =
                parse("{name: web, namespace: prod, uid: u1}",
                      "{hostname: h1, subdomain: sub, hostAliases: [{ip: 10.1.2.3, hostnames: [foo.local, bar]}, "
                      "{ip: 'fd00::1', hostnames: [six]}], containers: [{name: a, image: b}]}");
        char *s = NULL;

        assert_int_equal(vol_hosts_file_content(p, "10.88.0.5", "cluster.local", NULL, &s), 0);
        assert_string_equal(s, "# Kubernetes-managed hosts file.\n"
                               "127.0.0.1\tlocalhost\n"
                               "::1\tlocalhost ip6-localhost ip6-loopback\n"
                               "fe00::0\tip6-localnet\n"
                               "fe00::0\tip6-mcastprefix\n"
                               "fe00::1\tip6-allnodes\n"
                               "fe00::2\tip6-allrouters\n"
                               "10.88.0.5\th1.sub.prod.svc.cluster.local\th1\n"
                               "\n# Entries added by HostAliases.\n"
                               "10.1.2.3\tfoo.local\tbar\n"
                               "fd00::1\tsix\n");
        free(s);
        pod_free(p);

        /* no subdomain, no IP yet, no aliases; the hostname is the pod name */
        p = parse("{name: plain, namespace: default, uid: u2}", "{containers: [{name: a, image: b}]}");
        assert_int_equal(vol_hosts_file_content(p, "10.0.0.9", "", NULL, &s), 0);
        assert_non_null(strstr(s, "fe00::2\tip6-allrouters\n10.0.0.9\tplain\n"));
        assert_null(strstr(s, "HostAliases"));
        free(s);
        assert_int_equal(vol_hosts_file_content(p, NULL, "", NULL, &s), 0);
        assert_true(strlen(s) > 0 && strstr(s, "plain") == NULL);
        free(s);
        pod_free(p);

        /* hostnameOverride: the name as it is, no domain (GeneratePodHostNameAndDomain) */
        p = parse("{name: web, namespace: prod, uid: u4}",
                  "{hostname: h1, subdomain: sub, hostnameOverride: my.host, containers: [{name: a, image: b}]}");
        assert_int_equal(vol_hosts_file_content(p, "10.0.0.7", "cluster.local", NULL, &s), 0);
        assert_non_null(strstr(s, "fe00::2\tip6-allrouters\n10.0.0.7\tmy.host\n"));
        assert_null(strstr(s, "svc"));
        free(s);
        pod_free(p);

        /* host network: the node's file, then the aliases */
        p = parse("{name: hn, namespace: default, uid: u3}",
                  "{hostNetwork: true, hostAliases: [{ip: 1.2.3.4, hostnames: [x]}], "
                  "containers: [{name: a, image: b}]}");
        assert_int_equal(vol_hosts_file_content(p, "192.168.1.1", "", "127.0.0.1 localhost\n", &s), 0);
        assert_string_equal(s, "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n"
                               "\n# Entries added by HostAliases.\n1.2.3.4\tx\n");
        free(s);
        pod_free(p);
}

static void test_setup_host_path_and_empty_dir(void **state) {
        char *spec = NULL, *dir = NULL, *sock = NULL, *hosts = NULL, *data = NULL;
        struct ck_error *msg = NULL;
        struct kc_build_context ctx = { .root_dir = tmp, .pod_ip = "10.0.0.7" };
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct stat st;
        struct pod *p;
        int fd;

        run("mkdir -p host/dir && touch host/file");
        sock = in_tmp("host/sock");
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
        assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        assert_true(
                asprintf(
                        &spec,
                        "{volumes: [{name: e, emptyDir: {}}, {name: d, hostPath: {path: %s/host/dir, type: Directory}},"
                        " {name: f, hostPath: {path: %s/host/file, type: File}},"
                        " {name: s, hostPath: {path: %s, type: Socket}},"
                        " {name: c, hostPath: {path: /dev/null, type: CharDevice}},"
                        " {name: dc, hostPath: {path: %s/host/new/deep, type: DirectoryOrCreate}},"
                        " {name: fc, hostPath: {path: %s/host/newfile, type: FileOrCreate}},"
                        " {name: any, hostPath: {path: /nonexistent-is-fine-without-type}}],"
                        " containers: [{name: a, image: b, volumeMounts: [{name: e, mountPath: /e},"
                        " {name: d, mountPath: /d, readOnly: true, mountPropagation: HostToContainer}]}]}",
                        tmp, tmp, sock, tmp, tmp) > 0);
        p = parse("{name: web, namespace: default, uid: uid-1}", spec);
        free(spec);
        if (vol_setup_pod(p, &ctx, &msg) < 0)
                fail_msg("setup: %s", ck_error_message(msg));
        dir = in_tmp("pods/uid-1/volumes/kubernetes.io~empty-dir/e");
        assert_int_equal(stat(dir, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0777);
        free(dir);
        dir = in_tmp("host/new/deep");
        assert_int_equal(stat(dir, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0755);
        free(dir);
        dir = in_tmp("host/newfile");
        assert_int_equal(stat(dir, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        free(dir);
        hosts = in_tmp("pods/uid-1/etc-hosts");
        assert_int_equal(read_full_file(hosts, 1 << 20, &data, NULL), 0);
        assert_non_null(strstr(data, "10.0.0.7\tweb\n"));
        free(data);
        /* idempotent */
        assert_int_equal(vol_setup_pod(p, &ctx, &msg), 0);

        {
                Runtime__V1__Mount **m = NULL;
                size_t n = 0;
                assert_int_equal(vol_container_mounts(p, &p->spec.containers[0], &ctx, &m, &n), 0);
                assert_int_equal(n, 3);
                assert_string_equal(m[0]->container_path, "/e");
                assert_non_null(strstr(m[0]->host_path, "/pods/uid-1/volumes/kubernetes.io~empty-dir/e"));
                assert_false(m[0]->readonly);
                assert_int_equal(m[0]->propagation, RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_PRIVATE);
                assert_true(m[1]->readonly);
                assert_int_equal(m[1]->propagation, RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_HOST_TO_CONTAINER);
                assert_false(m[1]->recursive_read_only);
                assert_string_equal(m[2]->container_path, "/etc/hosts");
                assert_string_equal(m[2]->host_path, hosts);
                for (size_t i = 0; i < n; i++)
                        protobuf_c_message_free_unpacked(&m[i]->base, NULL);
                free(m);
        }
        /* recursiveReadOnly: sent as the CRI mount's recursive_read_only where the runtime handler does it; Enabled
         * without it fails the container's config with upstream's message */
        {
                struct volume_mounts *vms = (struct volume_mounts *) pod_container_mounts(p, &p->spec.containers[0]);
                struct kc_build_report report = {};
                Runtime__V1__Mount **m = NULL;
                size_t n = 0;

                vms->items[1].mount_propagation = mfree(vms->items[1].mount_propagation);
                vms->items[1].recursive_read_only = strdup("IfPossible");
                ctx.runtime_supports_rro = true;
                assert_int_equal(vol_container_mounts(p, &p->spec.containers[0], &ctx, &m, &n), 0);
                assert_true(m[1]->readonly);
                assert_true(m[1]->recursive_read_only);
                assert_false(m[0]->recursive_read_only);
                for (size_t i = 0; i < n; i++)
                        protobuf_c_message_free_unpacked(&m[i]->base, NULL);
                m = mfree(m);
                ctx.runtime_supports_rro = false;
                assert_int_equal(vol_container_mounts(p, &p->spec.containers[0], &ctx, &m, &n), 0);
                assert_true(m[1]->readonly);
                assert_false(m[1]->recursive_read_only); /* IfPossible: plain read-only */
                for (size_t i = 0; i < n; i++)
                        protobuf_c_message_free_unpacked(&m[i]->base, NULL);
                m = mfree(m);
                free(vms->items[1].recursive_read_only);
                vms->items[1].recursive_read_only = strdup("Enabled");
                ctx.report = &report;
                assert_int_equal(vol_container_mounts(p, &p->spec.containers[0], &ctx, &m, &n), -EINVAL);
                assert_null(m);
                assert_string_equal(ck_error_message(report.error),
                                    "failed to resolve recursive read-only mode: volume \"d\" requested recursive "
                                    "read-only mode, but it is not supported by the runtime");
                kc_build_report_done(&report);
                ctx.report = NULL;
        }
        free(hosts);
        pod_free(p);

        /* each failing type check, with upstream's message */
        struct {
                const char *type, *path, *what;
        } bad[] = {
                { "Directory", "host/file", "a directory" },
                { "Directory", "host/missing", "a directory" },
                { "File", "host/dir", "a file" },
                { "Socket", "host/file", "a socket file" },
                { "CharDevice", "host/file", "a character device" },
                { "BlockDevice", "host/file", "a block device" },
                { "DirectoryOrCreate", "host/file", "a directory" },
                { "FileOrCreate", "host/dir", "a file" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char *want = NULL, *inner = NULL;
                assert_true(asprintf(&spec,
                                     "{volumes: [{name: v, hostPath: {path: %s/%s, type: %s}}], "
                                     "containers: [{name: a, image: b}]}",
                                     tmp, bad[i].path, bad[i].type) > 0);
                p = parse("{name: web, namespace: default, uid: uid-2}", spec);
                free(spec);
                msg = NULL;
                assert_true(vol_setup_pod(p, &ctx, &msg) < 0);
                assert_true(asprintf(&inner, "hostPath type check failed: %s/%s is not %s", tmp, bad[i].path,
                                     bad[i].what) > 0);
                assert_true(asprintf(&want, "MountVolume.SetUp failed for volume \"v\" : %s", inner) > 0);
                assert_string_equal(ck_error_message(msg), want);
                free(want);
                free(inner);
                ck_error_free(msg);
                pod_free(p);
        }

        /* a type ckubelet does not handle */
        p = parse("{name: web, namespace: default, uid: uid-3}",
                  "{volumes: [{name: data, iscsi: {targetPortal: p, iqn: q, lun: 0}}], "
                  "containers: [{name: a, image: b}]}");
        msg = NULL;
        assert_true(vol_setup_pod(p, &ctx, &msg) < 0);
        assert_string_equal(ck_error_message(msg),
                            "MountVolume.SetUp failed for volume \"data\" : unsupported volume type \"iscsi\"");
        ck_error_free(msg);
        pod_free(p);
        close(fd);
        free(sock);
}

static void test_subpath_hostile_symlinks(void **state) {
        char *vol = NULL;
        int root, fd = -1;
        struct stat st;

        run("mkdir -p vol/a/b outside && echo secret > outside/s && echo ok > vol/a/b/f && "
            "ln -s / vol/abs && ln -s ../outside vol/up && ln -s ../../../outside vol/a/deep && "
            "ln -s a/b vol/inside && ln -s b vol/a/rel && ln -s /nonexistent vol/dangling");
        vol = in_tmp("vol");
        root = open(vol, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(root >= 0);

        /* refused: absolute symlinks, ".." through a symlink, absolute and ".." paths */
        assert_int_equal(vol_subpath_open(root, "abs", &fd), -EXDEV);
        assert_int_equal(vol_subpath_open(root, "abs/etc", &fd), -EXDEV);
        assert_int_equal(vol_subpath_open(root, "up", &fd), -EXDEV);
        assert_int_equal(vol_subpath_open(root, "up/s", &fd), -EXDEV);
        assert_int_equal(vol_subpath_open(root, "a/deep/s", &fd), -EXDEV);
        assert_int_equal(vol_subpath_open(root, "../outside", &fd), -EXDEV);
        assert_int_equal(vol_subpath_open(root, "/etc", &fd), -EXDEV);
        /* a dangling symlink is not replaced by a directory, nor followed */
        assert_true(vol_subpath_open(root, "dangling/x", &fd) < 0);
        assert_int_equal(lstat(vol, &st), 0);
        {
                char *o = in_tmp("vol/dangling");
                assert_int_equal(lstat(o, &st), 0);
                assert_true(S_ISLNK(st.st_mode));
                free(o);
        }

        /* accepted: symlinks that stay inside */
        assert_int_equal(vol_subpath_open(root, "inside/f", &fd), 0);
        assert_int_equal(fstat(fd, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        close(fd);
        assert_int_equal(vol_subpath_open(root, "a/rel/f", &fd), 0);
        close(fd);
        /* missing directories are created below the root, with the root's mode */
        assert_int_equal(chmod(vol, 0751), 0);
        assert_int_equal(vol_subpath_open(root, "new/dir//x", &fd), 0);
        assert_int_equal(fstat(fd, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0751);
        close(fd);
        /* whatever the umask: a tmpfs root (1777) with an fsGroup's set-group-ID bit gives its mode to each created
         * directory (e2e_node's "nonexistent volume subPath should have the correct mode and owner using FSGroup") */
        {
                mode_t old_umask = umask(022);
                assert_int_equal(chmod(vol, 03777), 0);
                assert_int_equal(vol_subpath_open(root, "sticky/sub", &fd), 0);
                assert_int_equal(fstat(fd, &st), 0);
                assert_int_equal(st.st_mode & 07777, 03777);
                close(fd);
                char *o = in_tmp("vol/sticky");
                assert_int_equal(stat(o, &st), 0);
                assert_int_equal(st.st_mode & 07777, 03777);
                free(o);
                umask(old_umask);
        }
        /* but not through a symlink that leaves */
        assert_int_equal(vol_subpath_open(root, "up/created", &fd), -EXDEV);
        {
                char *o = in_tmp("outside/created");
                assert_int_equal(stat(o, &st), -1);
                free(o);
        }
        close(root);
        free(vol);
}

static void test_subpath_expand(void **state) {
        struct pod *p = parse("{name: web, namespace: default, uid: u}",
                              "{containers: [{name: a, image: b, env: [{name: POD, value: web-1}, {name: X, value: x}, "
                              "{name: X, value: y}]}]}");
        char *s = NULL;
        assert_int_equal(vol_subpath_expand(&p->spec.containers[0], "logs/$(POD)/$(X)/$(NOPE)/$$(POD)/$(", &s), 0);
        assert_string_equal(s, "logs/web-1/y/$(NOPE)/$(POD)/$(");
        free(s);
        pod_free(p);
}

static const char *test_image_ref(void *userdata, const char *name) {
        return streq(name, "iv") ? userdata : NULL;
}

/* an image volume's CRI mount (makeMounts with imageVolumes): no host path, the resolved image and the reference as
 * written, read-only whatever the volumeMount says, subPath and subPathExpr (expanded) as image_sub_path, no subPath
 * bind on the host; nothing set up on the host for it; a volume not pulled fails the config */
static void test_image_volume_mounts(void **state) {
        struct pod *p = parse(
                "{name: web, namespace: default, uid: uid-iv}",
                "{volumes: [{name: iv, image: {reference: \"reg.example/data:1\"}}],"
                " containers: [{name: a, image: b, env: [{name: DIR, value: sub}, {name: UP, value: ../x}], volumeMounts: ["
                "{name: iv, mountPath: /iv}, {name: iv, mountPath: /s, subPath: data/sub, readOnly: false},"
                " {name: iv, mountPath: /e, subPathExpr: 'data/$(DIR)', mountPropagation: HostToContainer},"
                " {name: iv, mountPath: /bad, subPathExpr: '$(UP)'}]}]}");
        struct kc_build_context ctx = { .root_dir = tmp,
                                        .image_volume_ref = test_image_ref,
                                        .image_volume_userdata = (void *) "sha256:abc" };
        struct volume_mounts *vms = (struct volume_mounts *) pod_container_mounts(p, &p->spec.containers[0]);
        struct kc_build_report report = {};
        struct ck_error *err = NULL;
        struct vol_subpath_req *reqs = NULL;
        Runtime__V1__Mount **m = NULL;
        size_t n = 0, n_reqs = 5;

        assert_int_equal(vol_setup_pod(p, &ctx, &err), 0);
        /* the last one expands to a path with "..": refused as upstream's makeMounts does */
        ctx.report = &report;
        assert_int_equal(vol_container_mounts(p, &p->spec.containers[0], &ctx, &m, &n), -EINVAL);
        assert_string_equal(ck_error_message(report.error),
                            "unable to provision SubPath `../x`: must not contain '..'");
        kc_build_report_done(&report);
        vms->n = 3;
        /* no subPath bind for an image volume: the runtime resolves image_sub_path inside the image */
        assert_int_equal(vol_container_subpath_requests(p, &p->spec.containers[0], &ctx, &reqs, &n_reqs), 0);
        assert_int_equal(n_reqs, 0);
        vol_subpath_reqs_free(reqs, n_reqs);
        assert_int_equal(vol_container_mounts(p, &p->spec.containers[0], &ctx, &m, &n), 0);
        assert_int_equal(n, 3); /* no pod IP: no /etc/hosts */
        for (size_t i = 0; i < n; i++) {
                assert_string_equal(m[i]->host_path, "");
                assert_true(m[i]->readonly);
                assert_non_null(m[i]->image);
                assert_string_equal(m[i]->image->image, "sha256:abc");
                assert_string_equal(m[i]->image->user_specified_image, "reg.example/data:1");
        }
        assert_string_equal(m[0]->container_path, "/iv");
        assert_string_equal(m[0]->image_sub_path, "");
        assert_string_equal(m[1]->image_sub_path, "data/sub");
        assert_string_equal(m[2]->image_sub_path, "data/sub");
        assert_int_equal(m[2]->propagation, RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_HOST_TO_CONTAINER);
        for (size_t i = 0; i < n; i++)
                protobuf_c_message_free_unpacked(&m[i]->base, NULL);
        m = mfree(m);
        /* not pulled in this pass */
        ctx.image_volume_userdata = NULL;
        assert_int_equal(vol_container_mounts(p, &p->spec.containers[0], &ctx, &m, &n), -ENOENT);
        assert_null(m);
        assert_string_equal(ck_error_message(report.error), "image volume \"iv\" has not been pulled");
        kc_build_report_done(&report);
        vms->n = 4;
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
                cmocka_unit_test(test_hosts_content),
                cmocka_unit_test(test_setup_host_path_and_empty_dir),
                cmocka_unit_test(test_subpath_hostile_symlinks),
                cmocka_unit_test(test_subpath_expand),
                cmocka_unit_test(test_image_volume_mounts),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
