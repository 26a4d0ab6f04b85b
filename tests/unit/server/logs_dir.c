/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "basic/macro.h"
#include "server/logs_dir.h"

/* tmp/
 *   outside.txt
 *   root/
 *     a.log                  "A"
 *     noext                  "N"
 *     fifo                   (FIFO)
 *     in_link -> sub/b.txt   (inside: allowed)
 *     dir_link -> sub        (inside: allowed)
 *     abs_in -> <tmp>/root/a.log   (absolute: refused even though inside)
 *     abs_out -> /etc/passwd (refused)
 *     rel_out -> ../outside.txt (refused)
 *     loop -> loop
 *     sub/
 *       b.txt                "B"
 *       up -> ../a.log       (inside: allowed)
 *       esc -> ../../outside.txt (refused)
 *       deep_esc -> ../sub/../../root/../outside.txt (refused)
 *       round -> ../../root/a.log  (leaves the root on the way: refused)
 *       deeper/c             "C" */

static char tmpdir[64];
static char root[128];

static void put_file(const char *rel, const char *content) {
        char p[256];
        int fd;
        snprintf(p, sizeof(p), "%s/%s", tmpdir, rel);
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, content, strlen(content)), (ssize_t) strlen(content));
        close(fd);
}

static void put_link(const char *target, const char *rel) {
        char p[256];
        snprintf(p, sizeof(p), "%s/%s", tmpdir, rel);
        assert_int_equal(symlink(target, p), 0);
}

static void put_dir(const char *rel) {
        char p[256];
        snprintf(p, sizeof(p), "%s/%s", tmpdir, rel);
        assert_int_equal(mkdir(p, 0755), 0);
}

static int setup(void **state) {
        char p[256];

        strcpy(tmpdir, "/tmp/ckubelet-logsdir-XXXXXX");
        assert_non_null(mkdtemp(tmpdir));
        snprintf(root, sizeof(root), "%s/root", tmpdir);
        put_file("outside.txt", "SECRET");
        put_dir("root");
        put_file("root/a.log", "A");
        put_file("root/noext", "N");
        snprintf(p, sizeof(p), "%s/fifo", root);
        assert_int_equal(mkfifo(p, 0644), 0);
        put_dir("root/sub");
        put_file("root/sub/b.txt", "B");
        put_dir("root/sub/deeper");
        put_file("root/sub/deeper/c", "C");
        put_link("sub/b.txt", "root/in_link");
        put_link("sub", "root/dir_link");
        snprintf(p, sizeof(p), "%s/a.log", root);
        put_link(p, "root/abs_in");
        put_link("/etc/passwd", "root/abs_out");
        put_link("../outside.txt", "root/rel_out");
        put_link("loop", "root/loop");
        put_link("../a.log", "root/sub/up");
        put_link("../../outside.txt", "root/sub/esc");
        put_link("../sub/../../root/../outside.txt", "root/sub/deep_esc");
        put_link("../../root/a.log", "root/sub/round");
        return 0;
}

static int teardown(void **state) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        assert_int_equal(system(cmd), 0);
        return 0;
}

static unsigned modes[] = { 0, LOGS_DIR_NO_OPENAT2 };

static int open_in(unsigned flags, const char *url_path, int *ret_fd, bool *ret_is_dir) {
        int rootfd, r;
        if (flags == 0)
                return api_logs_dir_open(root, url_path, ret_fd, ret_is_dir);
        rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(rootfd >= 0);
        r = api_logs_dir_openat(rootfd, url_path, flags, ret_fd, ret_is_dir);
        close(rootfd);
        return r;
}

static void expect_file(const char *url_path, const char *content) {
        for (size_t m = 0; m < ELEMENTSOF(modes); m++) {
                int fd = -1;
                bool is_dir = true;
                char buf[64] = {};
                int r = open_in(modes[m], url_path, &fd, &is_dir);
                if (r != 0)
                        fail_msg("%s (mode %u): %s", url_path, modes[m], strerror(-r));
                assert_false(is_dir);
                assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
                assert_false(fcntl(fd, F_GETFL) & O_NONBLOCK);
                assert_true(read(fd, buf, sizeof(buf) - 1) >= 0);
                assert_string_equal(buf, content);
                close(fd);
        }
}

static void expect_dir(const char *url_path) {
        for (size_t m = 0; m < ELEMENTSOF(modes); m++) {
                int fd = -1;
                bool is_dir = false;
                int r = open_in(modes[m], url_path, &fd, &is_dir);
                if (r != 0)
                        fail_msg("%s (mode %u): %s", url_path, modes[m], strerror(-r));
                assert_true(is_dir);
                assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
                close(fd);
        }
}

static void expect_error(const char *url_path, int error) {
        for (size_t m = 0; m < ELEMENTSOF(modes); m++) {
                int fd = -42;
                bool is_dir = false;
                int r = open_in(modes[m], url_path, &fd, &is_dir);
                if (r != error)
                        fail_msg("%s (mode %u): got %d (%s), want %d", url_path, modes[m], r, strerror(-r), error);
                assert_int_equal(fd, -42); /* untouched */
        }
}

static void test_open_inside(void **state) {
        expect_dir("");
        expect_dir(NULL);
        expect_dir("/");
        expect_dir(".");
        expect_dir("sub");
        expect_dir("sub/");
        expect_dir("sub//deeper/./");
        expect_dir("dir_link");
        expect_dir("dir_link/deeper");
        expect_file("a.log", "A");
        expect_file("%61.log", "A");
        expect_file("/a.log", "A"); /* "/logs//a.log": still beneath the root */
        expect_file("noext", "N");
        expect_file("sub/b.txt", "B");
        expect_file("sub%2Fb.txt", "B");
        expect_file("sub/deeper/c", "C");
        expect_file("in_link", "B"); /* relative symlink staying inside */
        expect_file("dir_link/deeper/c", "C");
        expect_file("sub/up", "A"); /* "../" inside a link that stays inside */
        expect_file("dir_link/up", "A");
}

static void test_open_refused(void **state) {
        /* ".." in the request, plain or encoded */
        expect_error("..", -EACCES);
        expect_error("../outside.txt", -EACCES);
        expect_error("%2e%2e/outside.txt", -EACCES);
        expect_error("%2E%2E/outside.txt", -EACCES);
        expect_error("%2e%2E%2foutside.txt", -EACCES);
        expect_error("..%2foutside.txt", -EACCES);
        expect_error("..%2Foutside.txt", -EACCES);
        expect_error("sub/../a.log", -EACCES); /* even when it would stay inside */
        expect_error("sub/..%2f..%2foutside.txt", -EACCES);
        expect_error("sub/%2e%2e", -EACCES);
        /* symlinks leaving the root */
        expect_error("abs_out", -EACCES);
        expect_error("abs_in", -EACCES);
        expect_error("rel_out", -EACCES);
        expect_error("sub/esc", -EACCES);
        expect_error("dir_link/esc", -EACCES);
        expect_error("sub/deep_esc", -EACCES);
        expect_error("sub/round", -EACCES);
        expect_error("loop", -EACCES);
        /* not a file or directory */
        expect_error("fifo", -EACCES);
        /* bad encoding */
        expect_error("a%00.log", -EINVAL);
        expect_error("a.log%00", -EINVAL);
        /* nothing there */
        expect_error("missing", -ENOENT);
        expect_error("sub/missing", -ENOENT);
        expect_error("a.log/x", -ENOTDIR);
        expect_error("in_link/x", -ENOTDIR);
}

static char *list(const char *rel, int *ret_fd) {
        struct evbuffer *b = evbuffer_new();
        int fd = -1;
        bool is_dir = false;
        size_t n;
        char *s;

        assert_int_equal(api_logs_dir_open(root, rel, &fd, &is_dir), 0);
        assert_true(is_dir);
        assert_int_equal(api_logs_dir_list_html(fd, rel, b), 0);
        if (ret_fd)
                *ret_fd = fd;
        n = evbuffer_get_length(b);
        s = malloc(n + 1);
        assert_non_null(s);
        evbuffer_remove(b, s, n);
        s[n] = '\0';
        evbuffer_free(b);
        return s;
}

static void test_list(void **state) {
        char *s;
        int fd;

        s = list("sub", &fd);
        /* the fd was taken over and closed */
        assert_int_equal(fcntl(fd, F_GETFD), -1);
        assert_int_equal(errno, EBADF);
        assert_string_equal(s, "<pre>\n"
                               "<a href=\"b.txt\">b.txt</a>\n"
                               "<a href=\"deep_esc\">deep_esc</a>\n"
                               "<a href=\"deeper/\">deeper/</a>\n"
                               "<a href=\"esc\">esc</a>\n"
                               "<a href=\"round\">round</a>\n"
                               "<a href=\"up\">up</a>\n"
                               "</pre>\n");
        free(s);

        /* symlinks to directories are not directories (as os.ReadDir) */
        s = list("", NULL);
        assert_string_equal(s, "<pre>\n"
                               "<a href=\"a.log\">a.log</a>\n"
                               "<a href=\"abs_in\">abs_in</a>\n"
                               "<a href=\"abs_out\">abs_out</a>\n"
                               "<a href=\"dir_link\">dir_link</a>\n"
                               "<a href=\"fifo\">fifo</a>\n"
                               "<a href=\"in_link\">in_link</a>\n"
                               "<a href=\"loop\">loop</a>\n"
                               "<a href=\"noext\">noext</a>\n"
                               "<a href=\"rel_out\">rel_out</a>\n"
                               "<a href=\"sub/\">sub/</a>\n"
                               "</pre>\n");
        free(s);
}

static void test_list_escaping(void **state) {
        char *s;

        put_dir("root/esc");
        put_file("root/esc/a&b<c>\"q\"'s'.log", "");
        put_file("root/esc/sp ace%.txt", "");
        put_file("root/esc/x:y", "");
        put_file("root/esc/q?#frag", "");
        put_file("root/esc/Z~$&+,;=@-_.", "");
        put_file("root/esc/\xc3\xa9t\xc3\xa9", "");
        put_file("root/esc/*", "");
        put_dir("root/esc/d:ir");
        put_dir("root/esc/empty");

        s = list("esc/", NULL);
        assert_string_equal(s,
                            "<pre>\n"
                            "<a href=\"*\">*</a>\n" /* bytewise order: '*' < 'Z' < 'a' ... */
                            "<a href=\"Z~$&+,;=@-_.\">Z~$&amp;+,;=@-_.</a>\n"
                            "<a href=\"a&b%3Cc%3E%22q%22%27s%27.log\">a&amp;b&lt;c&gt;&#34;q&#34;&#39;s&#39;.log</a>\n"
                            "<a href=\"./d:ir/\">d:ir/</a>\n"
                            "<a href=\"empty/\">empty/</a>\n"
                            "<a href=\"q%3F%23frag\">q?#frag</a>\n"
                            "<a href=\"sp%20ace%25.txt\">sp ace%.txt</a>\n"
                            "<a href=\"./x:y\">x:y</a>\n"
                            "<a href=\"%C3%A9t%C3%A9\">\xc3\xa9t\xc3\xa9</a>\n"
                            "</pre>\n");
        free(s);

        s = list("esc/empty", NULL);
        assert_string_equal(s, "<pre>\n</pre>\n");
        free(s);
}

/* the type of a file by its name alone: nothing to sniff */
static const char *by_name(const char *name) {
        return api_logs_dir_sniff_content_type(name, NULL, 0);
}

static void test_content_type(void **state) {
        int fd;

        assert_string_equal(by_name("kubelet.log"), "text/plain; charset=utf-8");
        assert_string_equal(by_name("pods/x/c/0.LOG"), "text/plain; charset=utf-8");
        assert_string_equal(by_name("notes.txt"), "text/plain; charset=utf-8");
        assert_string_equal(by_name("syslog"), "text/plain; charset=utf-8");
        assert_string_equal(by_name("syslog.1"), "text/plain; charset=utf-8");
        assert_string_equal(by_name("dir.d/syslog"), "text/plain; charset=utf-8");
        assert_string_equal(by_name("syslog.2.gz"), "application/gzip");
        assert_string_equal(by_name("x.json"), "application/json");
        assert_string_equal(by_name("x.css"), "text/css; charset=utf-8");
        assert_string_equal(by_name("x.png"), "image/png");
        /* nothing a browser would run */
        assert_string_equal(by_name("x.html"), "text/plain; charset=utf-8");
        assert_string_equal(by_name("x.svg"), "text/plain; charset=utf-8");
        assert_string_equal(by_name("x.js"), "text/plain; charset=utf-8");

        /* sniffing for unknown extensions */
        assert_string_equal(api_logs_dir_sniff_content_type("wtmp", "\x07\x00\x00\x00", 4), "application/octet-stream");
        assert_string_equal(api_logs_dir_sniff_content_type("syslog", "Jan  1 kernel: hi\r\n\tmore\x1b[0m\n", 29),
                            "text/plain; charset=utf-8");
        assert_string_equal(api_logs_dir_sniff_content_type("old", "\x1f\x8b\x08\x00", 4), "application/x-gzip");
        assert_string_equal(api_logs_dir_sniff_content_type("x", "<html><script>", 14), "text/plain; charset=utf-8");
        assert_string_equal(api_logs_dir_sniff_content_type("x", "", 0), "text/plain; charset=utf-8");
        assert_string_equal(api_logs_dir_sniff_content_type("x.log", "\x00\x01", 2), "text/plain; charset=utf-8");
        assert_string_equal(api_logs_dir_sniff_content_type("x", "\xff\xfeh\x00", 4), "text/plain; charset=utf-16le");

        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        close(fd);
        {
                bool is_dir;
                assert_int_equal(api_logs_dir_open(root, "noext", &fd, &is_dir), 0);
                assert_string_equal(api_logs_dir_content_type_fd(fd, "noext"), "text/plain; charset=utf-8");
                /* the fd offset is not moved */
                assert_int_equal(lseek(fd, 0, SEEK_CUR), 0);
                close(fd);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_open_inside),   cmocka_unit_test(test_open_refused), cmocka_unit_test(test_list),
                cmocka_unit_test(test_list_escaping), cmocka_unit_test(test_content_type),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
