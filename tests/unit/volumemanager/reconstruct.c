/* SPDX-License-Identifier: Apache-2.0 */
/* Reconstruction: what the volume manager finds on the node at start (pod volume directories with their
 * vol_data.json, CSI global mount directories, the mount table), and the unique names it gives them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "csi/csi.h"
#include "volumemanager/reconstruct.h"
#include "volumemanager/volumemanager-internal.h"

static char root[] = "/tmp/ckubelet-reconstruct-XXXXXX";

static void put(const char *rel, const char *content) {
        char *p = NULL, *dir;
        assert_true(asprintf(&p, "%s/%s", root, rel) > 0);
        dir = strdup(p);
        *strrchr(dir, '/') = '\0';
        assert_int_equal(mkdir_p(dir, 0750), 0);
        if (content)
                assert_int_equal(write_file_atomic(p, content, strlen(content), 0600), 0);
        else
                assert_int_equal(mkdir_p(p, 0750), 0);
        free(dir);
        free(p);
}

static const struct volmgr_found *find(const struct volmgr_found *l, size_t n, const char *uid, const char *name) {
        for (size_t i = 0; i < n; i++)
                if ((uid ? l[i].pod_uid && !strcmp(l[i].pod_uid, uid) : !l[i].pod_uid) &&
                    (!name || (l[i].spec_name && !strcmp(l[i].spec_name, name))))
                        return &l[i];
        return NULL;
}

static void test_scan(void **state) {
        struct volmgr_found *l = NULL;
        struct vol_mountinfo mi = {};
        const struct volmgr_found *f;
        char *mitext = NULL, *gdir, *u;
        size_t n = 0;

        assert_non_null(mkdtemp(root));
        put("pods/u1/volumes/kubernetes.io~csi/pv-a/vol_data.json",
            "{\"specVolID\":\"pv-a\",\"volumeHandle\":\"h1\",\"driverName\":\"d.example.com\","
            "\"volumeLifecycleMode\":\"Persistent\"}");
        put("pods/u1/volumes/kubernetes.io~csi/pv-a/mount", NULL);
        put("pods/u2/volumes/kubernetes.io~csi/eph/vol_data.json",
            "{\"specVolID\":\"eph\",\"volumeHandle\":\"csi-x\",\"driverName\":\"d.example.com\","
            "\"volumeLifecycleMode\":\"Ephemeral\"}");
        put("pods/u2/volumes/kubernetes.io~csi/broken/vol_data.json", "not json");
        put("pods/u2/volumes/kubernetes.io~local-volume/pv-local", NULL);
        put("pods/u2/volumes/kubernetes.io~nfs/share", NULL);
        put("pods/u2/volumes/kubernetes.io~empty-dir/scratch", NULL); /* not the manager's */
        gdir = csi_global_dir(root, "d.example.com", "h1");
        assert_true(asprintf(&u, "%s/vol_data.json", gdir + strlen(root) + 1) > 0);
        put(u, "{\"volumeHandle\":\"h1\",\"driverName\":\"d.example.com\"}");
        free(u);
        /* the pod's target and the staging path are mounted, the local volume is not */
        assert_true(asprintf(&mitext,
                             "22 1 8:1 / / rw - ext4 /dev/vda rw\n"
                             "41 22 7:3 / %s/globalmount rw - ext4 /dev/loop3 rw\n"
                             "42 22 7:3 / %s/pods/u1/volumes/kubernetes.io~csi/pv-a/mount rw - ext4 /dev/loop3 rw\n",
                             gdir, root) > 0);
        assert_int_equal(vol_mountinfo_parse(mitext, &mi), 0);

        assert_int_equal(volmgr_reconstruct_scan(root, &mi, &l, &n), 0);
        assert_int_equal(n, 5); /* the broken one is skipped (logged) */
        f = find(l, n, "u1", "pv-a");
        assert_non_null(f);
        assert_int_equal(f->kind, VM_KIND_CSI);
        assert_true(f->mounted);
        assert_string_equal(f->handle, "h1");
        u = volmgr_found_unique_name(f);
        assert_string_equal(u, "kubernetes.io/csi/d.example.com^h1");
        free(u);
        f = find(l, n, "u2", "eph");
        assert_int_equal(f->kind, VM_KIND_CSI_INLINE);
        assert_false(f->mounted);
        u = volmgr_found_unique_name(f);
        assert_string_equal(u, "kubernetes.io/csi/u2-eph");
        free(u);
        f = find(l, n, "u2", "pv-local");
        assert_int_equal(f->kind, VM_KIND_LOCAL);
        assert_false(f->mounted);
        u = volmgr_found_unique_name(f);
        assert_string_equal(u, "kubernetes.io/local-volume/pv-local");
        free(u);
        f = find(l, n, "u2", "share");
        u = volmgr_found_unique_name(f);
        assert_string_equal(u, "kubernetes.io/nfs/u2-share");
        free(u);
        f = find(l, n, NULL, NULL); /* the staged volume */
        assert_true(f->global);
        assert_true(f->mounted);
        u = volmgr_found_unique_name(f);
        assert_string_equal(u, "kubernetes.io/csi/d.example.com^h1");
        free(u);
        volmgr_found_free(l, n);

        /* without a mount table nothing is mounted */
        assert_int_equal(volmgr_reconstruct_scan(root, NULL, &l, &n), 0);
        for (size_t i = 0; i < n; i++)
                assert_false(l[i].mounted);
        volmgr_found_free(l, n);
        vol_mountinfo_done(&mi);
        free(mitext);
        free(gdir);
        {
                char *cmd = NULL;
                assert_true(asprintf(&cmd, "rm -rf %s", root) > 0);
                assert_int_equal(system(cmd), 0);
                free(cmd);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = { cmocka_unit_test(test_scan) };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
