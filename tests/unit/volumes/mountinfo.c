/* SPDX-License-Identifier: Apache-2.0 */
/* The mount table parser and its queries, and the fsGroup ownership decisions and walk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/strv.h"
#include "volumes/mountinfo.h"
#include "volumes/ownership.h"

static const char MI[] =
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
        "40 22 0:50 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~secret/tok rw,relatime - tmpfs tmpfs rw,size=1k\n"
        "41 22 7:3 / /var/lib/kubelet/plugins/kubernetes.io/csi/d/abc/globalmount rw shared:5 master:2 - ext4 "
        "/dev/loop3 rw\n"
        "42 22 7:3 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/pv\\040a/mount rw - ext4 /dev/loop3 rw\n"
        "43 22 7:3 /sub /elsewhere rw - ext4 /dev/loop3 rw\n"
        "garbage line\n"
        "44 22 0:60 / /mnt/nfs ro - nfs 10.0.0.1:/export ro,vers=4.2\n";

static void test_parse_and_find(void **state) {
        struct vol_mountinfo mi = {};
        const struct vol_mount *m;

        assert_int_equal(vol_mountinfo_parse(MI, &mi), 0);
        assert_int_equal(mi.n, 6); /* the garbage line skipped */
        m = vol_mountinfo_find(&mi, "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/pv a/mount");
        assert_non_null(m); /* \040 is a space */
        assert_int_equal(m->id, 42);
        assert_int_equal(m->parent_id, 22);
        assert_int_equal(m->major, 7);
        assert_int_equal(m->minor, 3);
        assert_string_equal(m->fstype, "ext4");
        assert_string_equal(m->source, "/dev/loop3");
        m = vol_mountinfo_find(&mi, "/mnt/nfs");
        assert_string_equal(m->source, "10.0.0.1:/export");
        assert_string_equal(m->options, "ro");
        assert_string_equal(m->super_options, "ro,vers=4.2");
        m = vol_mountinfo_find(&mi, "/var/lib/kubelet/plugins/kubernetes.io/csi/d/abc/globalmount");
        assert_string_equal(m->root, "/"); /* optional fields skipped */
        assert_null(vol_mountinfo_find(&mi, "/var/lib/kubelet"));
        vol_mountinfo_done(&mi);
        assert_int_equal(vol_mountinfo_parse("only garbage\n", &mi), -EBADMSG);
        assert_int_equal(vol_mountinfo_parse("", &mi), 0);
        assert_int_equal(mi.n, 0);
}

static void test_ownership_decisions(void **state) {
        struct stat st = { .st_gid = 2000, .st_mode = S_IFDIR | 02770 };

        assert_false(vol_ownership_root_mismatch(&st, 2000, false));
        st.st_gid = 0;
        assert_true(vol_ownership_root_mismatch(&st, 2000, false)); /* another group */
        st.st_gid = 2000;
        st.st_mode = S_IFDIR | 0770;
        assert_true(vol_ownership_root_mismatch(&st, 2000, false)); /* no setgid */
        st.st_mode = S_IFDIR | 02750;
        assert_true(vol_ownership_root_mismatch(&st, 2000, false)); /* group not writable */
        assert_false(vol_ownership_root_mismatch(&st, 2000, true)); /* read-only: r-x is enough */
        st.st_mode = S_IFREG | 0660;
        assert_true(vol_ownership_root_mismatch(&st, 2000, false)); /* not a directory: always changed */
        /* changeFilePermission's modes */
        assert_int_equal(vol_ownership_mode(S_IFREG | 0644, false), 0664);
        assert_int_equal(vol_ownership_mode(S_IFREG | 0600, true), 0640);
        assert_int_equal(vol_ownership_mode(S_IFDIR | 0755, false), 02775);
        assert_int_equal(vol_ownership_mode(S_IFDIR | 0700, true), 02750);
        assert_int_equal(vol_ownership_mode(S_IFREG | 04755, false), 04775); /* other special bits kept */
        assert_true(vol_ownership_policy_on_root_mismatch("OnRootMismatch"));
        assert_false(vol_ownership_policy_on_root_mismatch("Always"));
        assert_false(vol_ownership_policy_on_root_mismatch(NULL));
}

static void test_ownership_walk(void **state) {
        char tmp[] = "/tmp/ckubelet-own-XXXXXX", p[256];
        struct vol_ownership_result res;
        struct ck_error *err = NULL;
        struct stat st, target;

        if (geteuid() != 0)
                skip(); /* chown needs root */
        assert_non_null(mkdtemp(tmp));
        snprintf(p, sizeof(p), "%s/d", tmp);
        assert_int_equal(mkdir(p, 0700), 0);
        snprintf(p, sizeof(p), "%s/d/f", tmp);
        close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
        snprintf(p, sizeof(p), "%s/link", tmp);
        assert_int_equal(symlink("/etc/passwd", p), 0);
        assert_int_equal(chmod(tmp, 0755), 0);
        assert_int_equal(stat("/etc/passwd", &target), 0);

        /* Always: everything below, deepest first, symlinks left alone */
        assert_int_equal(vol_ownership_apply(tmp, 2000, "Always", false, &res, &err), 0);
        assert_false(res.skipped);
        assert_int_equal(res.entries, 3); /* d/f, d, the root */
        assert_int_equal(res.failures, 0);
        snprintf(p, sizeof(p), "%s/d/f", tmp);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_gid, 2000);
        assert_int_equal(st.st_mode & 07777, 0660);
        snprintf(p, sizeof(p), "%s/d", tmp);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 07777, 02770);
        assert_int_equal(stat("/etc/passwd", &st), 0); /* the link is not followed */
        assert_int_equal(st.st_gid, target.st_gid);
        assert_int_equal(st.st_mode, target.st_mode);
        snprintf(p, sizeof(p), "%s/link", tmp);
        assert_int_equal(lstat(p, &st), 0);
        assert_true(st.st_gid != 2000);

        /* OnRootMismatch with a matching root: a file's group changed afterwards stays */
        snprintf(p, sizeof(p), "%s/d/f", tmp);
        assert_int_equal(chown(p, 0, 3000), 0);
        assert_int_equal(vol_ownership_apply(tmp, 2000, "OnRootMismatch", false, &res, &err), 0);
        assert_true(res.skipped);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_gid, 3000);
        /* another fsGroup: the root mismatches, the walk happens */
        assert_int_equal(vol_ownership_apply(tmp, 4000, "OnRootMismatch", false, &res, &err), 0);
        assert_false(res.skipped);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_gid, 4000);

        assert_int_equal(vol_ownership_apply("/nonexistent/x", 1, NULL, false, &res, &err), -ENOENT);
        assert_non_null(strstr(ck_error_message(err), "/nonexistent/x"));
        ck_error_free(err);
        snprintf(p, sizeof(p), "rm -rf %s", tmp);
        assert_int_equal(system(p), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_and_find),
                cmocka_unit_test(test_ownership_decisions),
                cmocka_unit_test(test_ownership_walk),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
