/* SPDX-License-Identifier: Apache-2.0 */
/* The probes' HTTP/1.x response parser (http/http_response.c): good responses fed whole and a byte at a time,
 * the three body framings, the caps, and the malformed responses it must reject. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "http/http_response.h"

/* Feed s in pieces of step bytes (0: whole), keeping the body; returns the last event or the error, with the
 * headers event counted in *headers. eof: end the connection after the bytes. */
static int run(struct http_resp *p, const char *s, size_t len, size_t step, bool eof, int *headers) {
        size_t off = 0;
        int k = HTTP_RESP_MORE;

        http_resp_init(p);
        *headers = 0;
        /* after HTTP_RESP_HEADERS, feed again even with nothing left (a response without a body is then done) */
        while (off < len || k == HTTP_RESP_HEADERS) {
                size_t n = step == 0 || len - off < step ? len - off : step, used = 0;
                k = http_resp_feed(p, s + off, n, &used);
                assert_true(used <= n);
                off += used;
                if (k < 0)
                        return k;
                if (k == HTTP_RESP_HEADERS) {
                        (*headers)++;
                        p->keep_body = true;
                        continue;
                }
                if (k == HTTP_RESP_DONE)
                        return k;
                assert_int_equal(used, n);
                if (n == 0)
                        break;
        }
        if (eof)
                return http_resp_eof(p);
        return k;
}

static struct http_resp *new_parser(void) {
        struct http_resp *p = malloc(sizeof(*p));
        assert_non_null(p);
        return p;
}

#define RUN_ALL_STEPS(p, s, eof, expect, check)                                                    \
        do {                                                                                       \
                static const size_t steps[] = { 0, 1, 2, 3, 7, 64 };                               \
                for (size_t i_ = 0; i_ < sizeof(steps) / sizeof(steps[0]); i_++) {                 \
                        int h_;                                                                    \
                        assert_int_equal(run((p), (s), strlen(s), steps[i_], (eof), &h_), expect); \
                        check;                                                                     \
                }                                                                                  \
        } while (0)

static void test_content_length(void **state) {
        struct http_resp *p = new_parser();
        const char *s = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: x\r\n\r\nhelloEXTRA";

        RUN_ALL_STEPS(p, s, false, HTTP_RESP_DONE, {
                assert_int_equal(p->status, 200);
                assert_int_equal(p->minor, 1);
                assert_string_equal(p->body, "hello");
                assert_false(p->truncated);
                assert_int_equal(h_, 1);
        });
        /* no reason phrase, bare LF line ends (Go accepts both) */
        RUN_ALL_STEPS(p, "HTTP/1.0 404\nContent-Length: 0\n\n", false, HTTP_RESP_DONE,
                      assert_int_equal(p->status, 404));
        /* the same length twice is fine */
        RUN_ALL_STEPS(p, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", false, HTTP_RESP_DONE,
                      assert_string_equal(p->body, "ok"));
        free(p);
}

static void test_chunked(void **state) {
        struct http_resp *p = new_parser();
        const char *s = "HTTP/1.1 302 Found\r\nLocation: /ok\r\nTransfer-Encoding: chunked\r\n\r\n"
                        "5;ext=1\r\nhello\r\n6 \r\n world\r\n0\r\nX-Trailer: t\r\n\r\n";

        RUN_ALL_STEPS(p, s, false, HTTP_RESP_DONE, {
                assert_int_equal(p->status, 302);
                assert_true(p->chunked);
                assert_string_equal(p->location, "/ok");
                assert_string_equal(p->body, "hello world");
        });
        /* Transfer-Encoding wins over Content-Length */
        RUN_ALL_STEPS(p,
                      "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: Chunked\r\n\r\n1\r\na\r\n0\r\n\r\n",
                      false, HTTP_RESP_DONE, assert_string_equal(p->body, "a"));
        free(p);
}

static void test_close_delimited(void **state) {
        struct http_resp *p = new_parser();

        RUN_ALL_STEPS(p, "HTTP/1.1 200 OK\r\n\r\nuntil the end", true, HTTP_RESP_DONE,
                      assert_string_equal(p->body, "until the end"));
        /* HTTP/1.0 ignores Transfer-Encoding */
        RUN_ALL_STEPS(p, "HTTP/1.0 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nraw", true, HTTP_RESP_DONE,
                      assert_string_equal(p->body, "raw"));
        free(p);
}

static void test_no_body(void **state) {
        struct http_resp *p = new_parser();

        /* 204 and 304 have no body whatever the headers say; 1xx are skipped */
        RUN_ALL_STEPS(p, "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n", false, HTTP_RESP_DONE,
                      assert_int_equal(p->status, 204));
        RUN_ALL_STEPS(p, "HTTP/1.1 304 Not Modified\r\n\r\n", false, HTTP_RESP_DONE, assert_int_equal(p->status, 304));
        RUN_ALL_STEPS(p,
                      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 500 Oops\r\n"
                      "Content-Length: 1\r\n\r\nx",
                      false, HTTP_RESP_DONE, {
                              assert_int_equal(p->status, 500);
                              assert_int_equal(h_, 1);
                      });
        RUN_ALL_STEPS(p,
                      "HTTP/1.1 100 a\r\n\r\nHTTP/1.1 100 a\r\n\r\nHTTP/1.1 100 a\r\n\r\nHTTP/1.1 100 a\r\n\r\n"
                      "HTTP/1.1 100 a\r\n\r\nHTTP/1.1 100 a\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
                      false, -EBADMSG, assert_string_equal(p->error, "too many 1xx informational responses"));
        free(p);
}

static void test_body_cap(void **state) {
        struct http_resp *p = new_parser();
        size_t n = 3 * HTTP_RESP_MAX_BODY;
        char *s = malloc(n + 100), *b;
        int h, len;

        assert_non_null(s);
        len = sprintf(s, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", n);
        b = s + len;
        memset(b, 'x', n);
        /* the cap is reached: done, truncated, the rest never read */
        assert_int_equal(run(p, s, (size_t) len + n, 1000, false, &h), HTTP_RESP_DONE);
        assert_true(p->truncated);
        assert_int_equal(p->body_len, HTTP_RESP_MAX_BODY);
        assert_int_equal(strlen(p->body), HTTP_RESP_MAX_BODY);
        /* close-delimited and chunked too */
        len = sprintf(s, "HTTP/1.1 200 OK\r\n\r\n");
        memset(s + len, 'y', n);
        assert_int_equal(run(p, s, (size_t) len + n, 0, false, &h), HTTP_RESP_DONE);
        assert_true(p->truncated);
        len = sprintf(s, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%zx\r\n", n);
        memset(s + len, 'z', n);
        assert_int_equal(run(p, s, (size_t) len + n, 333, false, &h), HTTP_RESP_DONE);
        assert_true(p->truncated);
        assert_int_equal(p->body_seen, HTTP_RESP_MAX_BODY);
        free(s);
        free(p);
}

static void expect_bad(struct http_resp *p, const char *s, bool eof, const char *why) {
        static const size_t steps[] = { 0, 1, 5 };
        for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
                int h;
                int k = run(p, s, strlen(s), steps[i], eof, &h);
                if (k != -EBADMSG)
                        fail_msg("accepted (%d): %s", k, s);
                assert_string_equal(p->error, why);
                /* and it stays failed */
                size_t used;
                assert_int_equal(http_resp_feed(p, "x", 1, &used), -EBADMSG);
        }
}

static void test_malformed_status(void **state) {
        struct http_resp *p = new_parser();

        expect_bad(p, "garbage\r\n\r\n", false, "malformed HTTP response");
        expect_bad(p, "\r\n", false, "malformed HTTP response");
        expect_bad(p, "HTTP/2.0 200 OK\r\n\r\n", false, "malformed HTTP version");
        expect_bad(p, "HTTP/1.x 200 OK\r\n\r\n", false, "malformed HTTP version");
        expect_bad(p, "HTTP/1.1 20 OK\r\n\r\n", false, "malformed HTTP status code");
        expect_bad(p, "HTTP/1.1 2000 OK\r\n\r\n", false, "malformed HTTP status code");
        expect_bad(p, "HTTP/1.1 200OK\r\n\r\n", false, "malformed HTTP status code");
        expect_bad(p, "HTTP/1.1  200 OK\r\n\r\n", false, "malformed HTTP status code");
        expect_bad(p, "HTTP/1.1 abc OK\r\n\r\n", false, "malformed HTTP status code");
        expect_bad(p, "HTTP/1.1 200 O\x01K\r\n\r\n", false, "malformed HTTP status line");
        free(p);
}

static void test_malformed_headers(void **state) {
        struct http_resp *p = new_parser();

        expect_bad(p, "HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", false, "malformed MIME header line");
        expect_bad(p, "HTTP/1.1 200 OK\r\n: empty name\r\n\r\n", false, "malformed MIME header line");
        expect_bad(p, "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", false, "malformed MIME header line");
        expect_bad(p, "HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n", false, "malformed MIME header: continuation line");
        expect_bad(p, "HTTP/1.1 200 OK\r\nA: b\x01\r\n\r\n", false, "malformed MIME header value");
        expect_bad(p, "HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", false, "malformed MIME header value");
        expect_bad(p, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", false,
                   "message cannot contain multiple Content-Length headers");
        expect_bad(p, "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false, "bad Content-Length");
        expect_bad(p, "HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\n", false, "bad Content-Length");
        expect_bad(p, "HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\n", false, "bad Content-Length");
        expect_bad(p, "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", false, "bad Content-Length");
        expect_bad(p, "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n", false,
                   "bad Content-Length");
        expect_bad(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", false, "unsupported transfer encoding");
        expect_bad(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", false,
                   "unsupported transfer encoding");
        expect_bad(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", false,
                   "too many transfer encodings");
        free(p);
}

static void test_oversized(void **state) {
        struct http_resp *p = new_parser();
        size_t n = HTTP_RESP_MAX_HEADER_BYTES + 4096;
        char *s = malloc(n + 1);
        int h;

        assert_non_null(s);
        /* one line past the line cap */
        strcpy(s, "HTTP/1.1 200 OK\r\nX-Long: ");
        memset(s + strlen(s), 'a', HTTP_RESP_MAX_LINE);
        strcpy(s + 26 + HTTP_RESP_MAX_LINE, "\r\n\r\n");
        assert_int_equal(run(p, s, strlen(s), 100, false, &h), -EBADMSG);
        assert_string_equal(p->error, "header line too long");
        /* a status line with no end */
        memset(s, 'H', n);
        s[n] = '\0';
        assert_int_equal(run(p, s, n, 0, false, &h), -EBADMSG);
        /* many short headers past the byte cap */
        {
                size_t off = (size_t) sprintf(s, "HTTP/1.1 200 OK\r\n");
                while (off + 64 < n)
                        off += (size_t) sprintf(s + off, "X-%zu: %048d\r\n", off, 0);
                s[off] = '\0';
                assert_int_equal(run(p, s, off, 0, false, &h), -EBADMSG);
                assert_true(strcmp(p->error, "too many headers") == 0 ||
                            strcmp(p->error, "server response headers exceeded the limit") == 0);
        }
        /* too many headers */
        {
                size_t off = (size_t) sprintf(s, "HTTP/1.1 200 OK\r\n");
                for (unsigned i = 0; i <= HTTP_RESP_MAX_HEADERS; i++)
                        off += (size_t) sprintf(s + off, "A: b\r\n");
                off += (size_t) sprintf(s + off, "\r\n");
                assert_int_equal(run(p, s, off, 0, false, &h), -EBADMSG);
                assert_string_equal(p->error, "too many headers");
        }
        free(s);
        free(p);
}

static void test_bad_chunks(void **state) {
        struct http_resp *p = new_parser();
#define CH "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

        expect_bad(p, CH "zz\r\n", false, "invalid byte in chunk length");
        expect_bad(p, CH "\r\n", false, "invalid byte in chunk length");
        expect_bad(p, CH "-1\r\n", false, "invalid byte in chunk length");
        expect_bad(p, CH "5x\r\nhello\r\n", false, "invalid byte in chunk length");
        expect_bad(p, CH "ffffffffffffffffff\r\n", false, "http chunk length too large");
        expect_bad(p, CH "1\r\nabc\r\n", false, "malformed chunked encoding");
        expect_bad(p, CH "1;a\x01\r\na\r\n", false, "invalid byte in chunk extension");
        expect_bad(p, CH "0\r\nno colon\r\n\r\n", false, "malformed MIME header line");
        free(p);
}

static void test_truncated(void **state) {
        struct http_resp *p = new_parser();

        expect_bad(p, "", true, "EOF");
        expect_bad(p, "HTTP/1.1 200", true, "unexpected EOF");
        expect_bad(p, "HTTP/1.1 200 OK\r\nA: b\r\n", true, "unexpected EOF");
        expect_bad(p, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", true, "unexpected EOF");
        expect_bad(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", true, "unexpected EOF");
        expect_bad(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n", true, "unexpected EOF");
        expect_bad(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n", true, "unexpected EOF");
        free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_content_length),    cmocka_unit_test(test_chunked),
                cmocka_unit_test(test_close_delimited),   cmocka_unit_test(test_no_body),
                cmocka_unit_test(test_body_cap),          cmocka_unit_test(test_malformed_status),
                cmocka_unit_test(test_malformed_headers), cmocka_unit_test(test_oversized),
                cmocka_unit_test(test_bad_chunks),        cmocka_unit_test(test_truncated),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
