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

#include "server/node_log_query.h"

static char *parse_error(const char *raw) {
        struct node_log_query *q = NULL;
        char *err = NULL;
        assert_int_equal(node_log_query_parse(raw, &q, &err), -EINVAL);
        assert_null(q);
        return err;
}

static char *validate_error(const char *raw, int dirfd) {
        struct node_log_query *q = NULL;
        char *err = NULL;
        assert_int_equal(node_log_query_parse(raw, &q, &err), 0);
        assert_non_null(q);
        assert_int_equal(node_log_query_validate(q, dirfd, &err), -EINVAL);
        node_log_query_free(q);
        return err;
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
        char *err = NULL;
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
        char *err = NULL;
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
        ASSERT_VALIDATE_ERROR("query=kubelet&tailLines=-1&boot=2", fd,
                              "[boot: Invalid value: 2: must be less than 1, tailLines: Invalid value: -1: must be "
                              "between 0 and 100000, inclusive]");

        close(fd);
        unlink(path);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_validate),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
