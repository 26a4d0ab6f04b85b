/* SPDX-License-Identifier: Apache-2.0 */
/* The node log query's parameters and checks, with upstream v1.37's messages (kubelet_server_journal.go). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "basic/error.h"
#include "server/node_log_query.h"

static char *take_message(struct ck_error *err) {
        char *m;
        assert_non_null(err);
        m = strdup(ck_error_message(err));
        assert_non_null(m);
        ck_error_free(err);
        return m;
}

static char *parse_error(const char *raw) {
        struct node_log_query *q = NULL;
        struct ck_error *err = NULL;
        assert_int_equal(node_log_query_parse(raw, &q, &err), -EINVAL);
        assert_null(q);
        return take_message(err);
}

static char *validate_error(const char *raw, int dirfd) {
        struct node_log_query *q = NULL;
        struct ck_error *err = NULL;
        assert_int_equal(node_log_query_parse(raw, &q, &err), 0);
        assert_non_null(q);
        assert_int_equal(node_log_query_validate(q, dirfd, &err), -EINVAL);
        node_log_query_free(q);
        return take_message(err);
}

#define ASSERT_PARSE_ERROR(raw, msg)          \
        do {                                  \
                char *_e = parse_error(raw);  \
                assert_string_equal(_e, msg); \
                free(_e);                     \
        } while (0)
#define ASSERT_VALIDATE_ERROR(raw, dirfd, msg)         \
        do {                                           \
                char *_e = validate_error(raw, dirfd); \
                assert_string_equal(_e, msg);          \
                free(_e);                              \
        } while (0)

static void test_parse(void **state) {
        struct node_log_query *q = NULL;
        struct ck_error *err = NULL;
        (void) state;

        /* no parameter of the query: a plain file request */
        assert_int_equal(node_log_query_parse(NULL, &q, &err), 0);
        assert_null(q);
        assert_int_equal(node_log_query_parse("foo=bar", &q, &err), 0);
        assert_null(q);

        assert_int_equal(node_log_query_parse("query=kubelet&query=%2Fsyslog&tailLines=5&boot=-1&pattern=err", &q,
                                              &err),
                         0);
        assert_string_equal(q->services[0], "kubelet");
        assert_string_equal(q->files[0], "/syslog");
        assert_true(q->has_tail_lines && q->tail_lines == 5);
        assert_true(q->has_boot && q->boot == -1);
        assert_string_equal(q->pattern, "err");
        q = node_log_query_free(q);

        ASSERT_PARSE_ERROR("query=%20%20", "query: Invalid value: [\"  \"]: may not be empty");
        ASSERT_PARSE_ERROR("query=a&sinceTime=yesterday",
                           "sinceTime: Invalid value: \"yesterday\": invalid time format");
        ASSERT_PARSE_ERROR("query=a&tailLines=x",
                           "tailLines: Invalid value: \"x\": strconv.Atoi: parsing \"x\": invalid syntax");
        ASSERT_PARSE_ERROR("query=a&boot=1.5&untilTime=no",
                           "[untilTime: Invalid value: \"no\": invalid time format, boot: Invalid value: \"1.5\": "
                           "strconv.Atoi: parsing \"1.5\": invalid syntax]");
}

static void test_validate(void **state) {
        char dir[] = "/tmp/ckubelet-nlq-XXXXXX", path[64];
        struct node_log_query *q = NULL;
        struct ck_error *err = NULL;
        int fd;
        (void) state;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/app.log", dir);
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        close(fd);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);

        assert_int_equal(node_log_query_parse("query=/app.log", &q, &err), 0);
        assert_int_equal(node_log_query_validate(q, fd, &err), 0);
        q = node_log_query_free(q);
        assert_int_equal(node_log_query_parse("query=kubelet&query=containerd&tailLines=100000", &q, &err), 0);
        assert_int_equal(node_log_query_validate(q, fd, &err), 0);
        q = node_log_query_free(q);

        ASSERT_VALIDATE_ERROR("tailLines=5", fd, "query: Required value: cannot be empty with options");
        ASSERT_VALIDATE_ERROR("query=/app.log&query=kubelet", fd,
                              "query: Invalid value: \"[/app.log], [kubelet]\": cannot specify a file and service");
        ASSERT_VALIDATE_ERROR("query=/app.log&query=/b.log", fd,
                              "query: Invalid value: [\"/app.log\",\"/b.log\"]: cannot specify more than one file");
        ASSERT_VALIDATE_ERROR("query=/app.log&tailLines=1", fd,
                              "query: Invalid value: [\"/app.log\"]: cannot specify file with options");
        ASSERT_VALIDATE_ERROR("query=/nope.log", fd,
                              "query: Invalid value: [\"/nope.log\"]: statat /nope.log: no such file or directory");
        ASSERT_VALIDATE_ERROR("query=../etc/passwd", fd,
                              "query: Invalid value: [\"../etc/passwd\"]: statat ../etc/passwd: path escapes from "
                              "parent");
        ASSERT_VALIDATE_ERROR("query=kube%24let", fd,
                              "query: Invalid value: \"kube$let\": input contains unsupported characters");
        ASSERT_VALIDATE_ERROR("query=a&query=b&query=c&query=d&query=e", fd,
                              "query: Too many: 5: must have at most 4 items");
        ASSERT_VALIDATE_ERROR("query=kubelet&boot=1", fd, "boot: Invalid value: 1: must be less than 1");
        ASSERT_VALIDATE_ERROR("query=kubelet&tailLines=100001", fd,
                              "tailLines: Invalid value: 100001: must be between 0 and 100000, inclusive");
        ASSERT_VALIDATE_ERROR("query=kubelet&sinceTime=2024-01-02T00:00:00Z&untilTime=2024-01-01T00:00:00Z", fd,
                              "untilTime: Invalid value: \"2024-01-01T00:00:00Z\": must be after `sinceTime`");
        ASSERT_VALIDATE_ERROR("query=kubelet&sinceTime=3000-01-01T00:00:00Z&untilTime=2999-01-01T00:00:00Z", fd,
                              "untilTime: Invalid value: \"2999-01-01T00:00:00Z\": must be after `sinceTime`");
        ASSERT_VALIDATE_ERROR("query=kubelet&tailLines=-1&boot=2", fd,
                              "[boot: Invalid value: 2: must be less than 1, tailLines: Invalid value: -1: must be "
                              "between 0 and 100000, inclusive]");

        close(fd);
        unlink(path);
        rmdir(dir);
}

/* the arguments joined by '|' */
static char *journal_args(const char *raw, const char *const *services) {
        struct node_log_query *q = NULL;
        struct ck_error *err = NULL;
        char **argv = NULL, *joined;
        size_t len = 1;

        assert_int_equal(node_log_query_parse(raw, &q, &err), 0);
        assert_non_null(q);
        assert_int_equal(node_log_query_journal_argv(q, (char *const *) services, &argv), 0);
        for (size_t i = 0; argv[i]; i++)
                len += strlen(argv[i]) + 1;
        joined = calloc(1, len);
        assert_non_null(joined);
        for (size_t i = 0; argv[i]; i++) {
                if (i)
                        strcat(joined, "|");
                strcat(joined, argv[i]);
                free(argv[i]);
        }
        free(argv);
        node_log_query_free(q);
        return joined;
}

#define ASSERT_JOURNAL_ARGS(raw, services, want)        \
        do {                                            \
                char *_a = journal_args(raw, services); \
                assert_string_equal(_a, want);          \
                free(_a);                               \
        } while (0)

static void test_journal_argv(void **state) {
        const char *const one[] = { "kubelet", NULL };
        const char *const two[] = { "ckubelet", "", "containerd", NULL };
        (void) state;

        ASSERT_JOURNAL_ARGS("query=kubelet", one, "journalctl|--utc|--no-pager|--output=short-precise|--unit=kubelet");
        /* upstream's order; an empty service is skipped; times in UTC, "2006-1-2 15:4:5" */
        ASSERT_JOURNAL_ARGS("query=ckubelet&query=containerd&pattern=Err&tailLines=5&boot=-1&"
                            "sinceTime=2026-01-02T03:04:05Z&untilTime=2026-11-28T20:30:00%2B02:00",
                            two,
                            "journalctl|--utc|--no-pager|--output=short-precise|--since=2026-1-2 3:4:5|"
                            "--until=2026-11-28 18:30:0|--pager-end|--lines=5|--unit=ckubelet|--unit=containerd|"
                            "--grep=Err|--boot|-1");
        ASSERT_JOURNAL_ARGS("query=kubelet&tailLines=0&boot=0", one,
                            "journalctl|--utc|--no-pager|--output=short-precise|--pager-end|--lines=0|--unit=kubelet|"
                            "--boot|0");
        /* past 2262 (Go's time has no such limit; int64 nanoseconds do) */
        ASSERT_JOURNAL_ARGS("query=kubelet&sinceTime=2999-01-01T00:00:00Z", one,
                            "journalctl|--utc|--no-pager|--output=short-precise|--since=2999-1-1 0:0:0|--unit=kubelet");
        /* the services as resolved (none logs to journald) */
        ASSERT_JOURNAL_ARGS("query=kubelet&pattern=a.*b", NULL,
                            "journalctl|--utc|--no-pager|--output=short-precise|--grep=a.*b");
}

static void test_native_and_files(void **state) {
        const char *field = "containerd.service\nckubelet.service\nsystemd-journald.service\n";
        char **l = NULL;
        (void) state;

        assert_true(node_log_query_is_native_logger(field, "ckubelet"));
        assert_true(node_log_query_is_native_logger(field, "containerd"));
        /* strings.Contains, as upstream: a suffix of a unit's name matches too */
        assert_true(node_log_query_is_native_logger(field, "journald"));
        assert_false(node_log_query_is_native_logger(field, "kubelet.svc"));
        assert_false(node_log_query_is_native_logger(field, "nginx"));
        assert_false(node_log_query_is_native_logger(NULL, "ckubelet"));

        assert_int_equal(node_log_query_heuristic_files("nginx", &l), 0);
        assert_string_equal(l[0], "nginx");
        assert_string_equal(l[1], "nginx.log");
        assert_string_equal(l[2], "nginx/nginx.log");
        assert_null(l[3]);
        for (size_t i = 0; l[i]; i++)
                free(l[i]);
        free(l);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_validate),
                cmocka_unit_test(test_journal_argv),
                cmocka_unit_test(test_native_and_files),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
