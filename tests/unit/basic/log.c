/* SPDX-License-Identifier: Apache-2.0 */
/* The two log line formats: klog's text and component-base's JSON (ts, caller, msg, v, key/values). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "basic/log.h"

/* 2020-01-29T14:06:17.047280Z */
#define T0 (1580306777ULL * 1000000ULL + 47280ULL)

static const char *line(enum log_format f, enum log_level level, int v, const char *file, int l, const char *msg,
                        const char *const *kv) {
        static char buf[1024];
        size_t n = log_format_line(buf, sizeof(buf), f, T0, 4242, level, v, file, l, msg, kv);

        assert_true(n > 0 && n < sizeof(buf));
        assert_int_equal(buf[n - 1], '\n');
        buf[n - 1] = '\0'; /* compare without the newline */
        assert_int_equal(strlen(buf), n - 1);
        return buf;
}

static void test_json(void **state) {
        assert_string_equal(
                line(LOG_FORMAT_JSON, LOG_LEVEL_INFO, 0, "../src/kubelet/kubelet.c", 42, "Started", NULL),
                "{\"ts\":1580306777047.280,\"caller\":\"kubelet/kubelet.c:42\",\"msg\":\"Started\",\"v\":0}");
        /* the verbosity of the call; key/values after it, in order */
        assert_string_equal(
                line(LOG_FORMAT_JSON, LOG_LEVEL_INFO, 4, "src/certificate/manager.c", 7, "Rotating",
                     (const char *const[]) { "signer", "kubernetes.io/kubelet-serving", "csr", "csr-abc", NULL }),
                "{\"ts\":1580306777047.280,\"caller\":\"certificate/manager.c:7\",\"msg\":\"Rotating\",\"v\":4,"
                "\"signer\":\"kubernetes.io/kubelet-serving\",\"csr\":\"csr-abc\"}");
        /* errors carry no "v" (zapr's Error) */
        assert_string_equal(line(LOG_FORMAT_JSON, LOG_LEVEL_ERROR, 0, "main.c", 1, "boom", NULL),
                            "{\"ts\":1580306777047.280,\"caller\":\"main.c:1\",\"msg\":\"boom\"}");
        /* warnings are info lines at v 0 (klog's Warning through logr) */
        assert_string_equal(line(LOG_FORMAT_JSON, LOG_LEVEL_WARNING, 0, "a/b.c", 3, "careful", NULL),
                            "{\"ts\":1580306777047.280,\"caller\":\"a/b.c:3\",\"msg\":\"careful\",\"v\":0}");
        /* escaping: quotes, backslashes, control characters, invalid UTF-8; valid UTF-8 passes */
        assert_string_equal(
                line(LOG_FORMAT_JSON, LOG_LEVEL_INFO, 0, "x.c", 9, "a\"b\\c\nd\te\x01 \xff \xc3\xa9", NULL),
                "{\"ts\":1580306777047.280,\"caller\":\"x.c:9\",\"msg\":\"a\\\"b\\\\c\\nd\\te\\u0001 \\ufffd "
                "\xc3\xa9\",\"v\":0}");
}

static void test_text(void **state) {
        char want[256];
        struct tm tm;
        time_t t = (time_t) (T0 / 1000000);

        localtime_r(&t, &tm);
        snprintf(want, sizeof(want), "I%02d%02d %02d:%02d:%02d.047280    4242 kubelet.c:42] Started", tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        assert_string_equal(line(LOG_FORMAT_TEXT, LOG_LEVEL_INFO, 2, "../src/kubelet/kubelet.c", 42, "Started", NULL),
                            want);
        /* structured: klog's InfoS, the message and the values quoted */
        snprintf(want, sizeof(want),
                 "E%02d%02d %02d:%02d:%02d.047280    4242 m.c:5] \"Certificate request denied\" "
                 "csr=\"csr-1\" reason=\"said \\\"no\\\"\"",
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        assert_string_equal(line(LOG_FORMAT_TEXT, LOG_LEVEL_ERROR, 0, "m.c", 5, "Certificate request denied",
                                 (const char *const[]) { "csr", "csr-1", "reason", "said \"no\"", NULL }),
                            want);
}

static void test_truncation(void **state) {
        char buf[40];
        char *big = malloc(5000);
        size_t n;

        memset(big, 'x', 4999);
        big[4999] = '\0';
        n = log_format_line(buf, sizeof(buf), LOG_FORMAT_JSON, T0, 1, LOG_LEVEL_INFO, 0, "f.c", 1, big, NULL);
        assert_int_equal(n, sizeof(buf));
        assert_int_equal(buf[n - 1], '\n');
        free(big);
}

static void test_format_names(void **state) {
        enum log_format f;

        assert_int_equal(log_format_from_string("json", &f), 0);
        assert_int_equal(f, LOG_FORMAT_JSON);
        assert_int_equal(log_format_from_string("text", &f), 0);
        assert_int_equal(f, LOG_FORMAT_TEXT);
        assert_int_equal(log_format_from_string("xml", &f), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_json),
                cmocka_unit_test(test_text),
                cmocka_unit_test(test_truncation),
                cmocka_unit_test(test_format_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
