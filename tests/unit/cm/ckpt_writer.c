/* SPDX-License-Identifier: Apache-2.0 */
/* The device manager's checkpoint writer (issue 26): updates handed over while a write runs are coalesced, the
 * write happens on a worker thread, the newest text is what ends up in the file, and freeing writes what is
 * pending. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/macro.h"
#include "cm/devicemanager/ckpt_writer-testing.h"

static void test_coalesced(void **state) {
        char tmpl[] = "/tmp/ckubelet-ckpt-XXXXXX", path[128];
        struct event_base *base = event_base_new();
        struct dm_ckpt_writer *w = NULL;
        _cleanup_free_ char *got = NULL, *got2 = NULL;
        (void) state;

        assert_non_null(mkdtemp(tmpl));
        snprintf(path, sizeof(path), "%s/kubelet_internal_checkpoint", tmpl);
        assert_int_equal(dm_ckpt_writer_new(base, path, &w), 0);
        /* 500 updates at once from the loop (a plugin's ListAndWatch without pause): the loop never writes */
        for (int i = 0; i < 500; i++) {
                char *t = NULL;
                assert_true(asprintf(&t, "{\"v\":%d}", i) > 0);
                dm_ckpt_writer_set(w, t);
        }
        while (dm_ckpt_writer_busy(w))
                event_base_loop(base, EVLOOP_ONCE);
        assert_int_equal(read_full_file(path, 4096, &got, NULL), 0);
        assert_string_equal(got, "{\"v\":499}");
        print_message("500 updates, %llu writes\n", (unsigned long long) dm_ckpt_writer_writes(w));
        assert_true(dm_ckpt_writer_writes(w) >= 1);
        assert_true(dm_ckpt_writer_writes(w) <= 2); /* the first one, and the last after it */
        /* pending at free: written then */
        dm_ckpt_writer_set(w, strdup("{\"v\":\"last\"}"));
        w = dm_ckpt_writer_free(w);
        assert_int_equal(read_full_file(path, 4096, &got2, NULL), 0);
        assert_string_equal(got2, "{\"v\":\"last\"}");
        unlink(path);
        rmdir(tmpl);
        event_base_free(base);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_coalesced),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
