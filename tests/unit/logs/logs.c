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
#include <event2/event.h>

#include "basic/macro.h"
#include "basic/string.h"
#include "basic/time.h"
#include "logs/logs.h"

#define TS1 "2016-10-06T00:17:09.669794202Z"
#define TS1_NSEC (INT64_C(1475713029) * NSEC_PER_SEC + 669794202)

/* ---- helpers ---- */

static char tmpdir[64];

static int setup_tmp(void **state) {
        strcpy(tmpdir, "/tmp/ckubelet-logs-XXXXXX");
        assert_non_null(mkdtemp(tmpdir));
        return 0;
}

static int teardown_tmp(void **state) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        assert_int_equal(system(cmd), 0);
        return 0;
}

static char *tmp_path(const char *name) {
        static char p[128];
        snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
        return p;
}

static void write_file(const char *path, const char *data, size_t len, bool append) {
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, len), (ssize_t) len);
        close(fd);
}

static int open_file(const char *path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        return fd;
}

/* the whole buffer as a string (drained) */
static char *take_str(struct evbuffer *b) {
        size_t n = evbuffer_get_length(b);
        char *s = malloc(n + 1);
        assert_non_null(s);
        evbuffer_remove(b, s, n);
        s[n] = '\0';
        return s;
}

static char *read_with(const char *content, const struct logs_options *o, struct logs_cursor *cursor) {
        struct evbuffer *b = evbuffer_new();
        char *s;
        int fd;

        write_file(tmp_path("log"), content, strlen(content), false);
        fd = open_file(tmp_path("log"));
        assert_int_equal(logs_read(fd, o, b, cursor), 0);
        close(fd);
        s = take_str(b);
        evbuffer_free(b);
        return s;
}

#define assert_read(content, o, expected)                   \
        do {                                                \
                char *_s = read_with((content), (o), NULL); \
                assert_string_equal(_s, (expected));        \
                free(_s);                                   \
        } while (0)

/* ---- parser ---- */

static void test_parse_full_and_partial(void **state) {
        struct logs_msg m;
        const char *l = TS1 " stdout F log content\n";

        assert_int_equal(logs_parse_line(l, strlen(l), &m), 0);
        assert_int_equal(m.timestamp_nsec, TS1_NSEC);
        assert_int_equal(m.tz_offset_sec, 0);
        assert_int_equal(m.stream, LOGS_STDOUT);
        assert_false(m.partial);
        assert_int_equal(m.content_len, strlen("log content"));
        assert_memory_equal(m.content, "log content", m.content_len);

        l = TS1 " stderr P part";
        assert_int_equal(logs_parse_line(l, strlen(l), &m), 0);
        assert_int_equal(m.stream, LOGS_STDERR);
        assert_true(m.partial);
        assert_int_equal(m.content_len, 4);
        assert_memory_equal(m.content, "part", 4);

        /* content may contain spaces and the delimiter; forward compatible tags */
        l = TS1 " stdout F:x a  b \n";
        assert_int_equal(logs_parse_line(l, strlen(l), &m), 0);
        assert_false(m.partial);
        assert_int_equal(m.content_len, 5);
        assert_memory_equal(m.content, "a  b ", 5);
        l = TS1 " stdout P:x y\n";
        assert_int_equal(logs_parse_line(l, strlen(l), &m), 0);
        assert_true(m.partial);

        /* empty content */
        l = TS1 " stdout F \n";
        assert_int_equal(logs_parse_line(l, strlen(l), &m), 0);
        assert_int_equal(m.content_len, 0);
        l = TS1 " stdout F ";
        assert_int_equal(logs_parse_line(l, strlen(l), &m), 0);
        assert_int_equal(m.content_len, 0);
}

static void test_parse_timestamps(void **state) {
        struct logs_msg m;
        const char *l;

        /* no fractional seconds, offsets, comma, more than 9 digits, one-digit hour (Go is lenient) */
        l = "2016-10-06T00:17:09Z stdout F x";
        assert_int_equal(logs_parse_line(l, strlen(l), &m), 0);
        assert_int_equal(m.timestamp_nsec, INT64_C(1475713029) * NSEC_PER_SEC);
        l = "2016-10-06T02:17:09.5+02:00 stdout F x";
        assert_int_equal(logs_parse_line(l, strlen(l), &m), 0);
        assert_int_equal(m.timestamp_nsec, INT64_C(1475713029) * NSEC_PER_SEC + 500000000);
        assert_int_equal(m.tz_offset_sec, 7200);
        l = "2016-10-05T23:17:09.1-01:00 stdout F x";
        assert_int_equal(logs_parse_line(l, strlen(l), &m), 0);
        assert_int_equal(m.timestamp_nsec, INT64_C(1475713029) * NSEC_PER_SEC + 100000000);
        assert_int_equal(m.tz_offset_sec, -3600);
        l = "2016-10-06T00:17:09,669794202999Z stdout F x";
        assert_int_equal(logs_parse_line(l, strlen(l), &m), 0);
        assert_int_equal(m.timestamp_nsec, TS1_NSEC);
        l = "2024-02-29T23:59:59Z stdout F x";
        assert_int_equal(logs_parse_line(l, strlen(l), &m), 0);
        assert_int_equal(m.timestamp_nsec, INT64_C(1709251199) * NSEC_PER_SEC);
        l = "1969-12-31T23:59:59.5Z stdout F x";
        assert_int_equal(logs_parse_line(l, strlen(l), &m), 0);
        assert_int_equal(m.timestamp_nsec, -500000000);

        /* bad ones */
        static const char *const bad[] = {
                "2016-13-06T00:17:09Z stdout F x",     /* month */
                "2023-02-29T00:17:09Z stdout F x",     /* not a leap year */
                "2016-10-06T24:00:00Z stdout F x",     /* hour */
                "2016-10-06T00:60:00Z stdout F x",     /* minute */
                "2016-10-06T00:00:60Z stdout F x",     /* second */
                "2016-10-06T00:17:09 stdout F x",      /* no zone */
                "2016-10-06 00:17:09Z stdout F x",     /* space instead of T */
                "2016-10-06t00:17:09Z stdout F x",     /* lower-case t */
                "2016-10-06T00:17:09.Z stdout F x",    /* dot without digits */
                "2016-10-06T00:17:09+0200 stdout F x", /* offset without colon */
                "16-10-06T00:17:09Z stdout F x",       /* year */
                "garbage stdout F x",
                "9999-12-31T23:59:59Z stdout F x", /* beyond int64 nanoseconds */
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                m.stream = 42;
                assert_int_equal(logs_parse_line(bad[i], strlen(bad[i]), &m), -EINVAL);
                assert_int_equal(m.stream, 42); /* untouched */
        }
}

static void test_parse_missing_fields(void **state) {
        static const char *const bad[] = {
                "",
                "\n",
                TS1,
                TS1 "\n",
                TS1 " stdout",
                TS1 " stdout\n",
                TS1 " stdout F", /* no delimiter after the tag */
                TS1 " stdout F\n",
                TS1 " stdin F x", /* unknown stream */
                TS1 " STDOUT F x",
                TS1 "  stdout F x", /* empty stream */
                "not a log line at all\n",
        };
        struct logs_msg m;
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(logs_parse_line(bad[i], strlen(bad[i]), &m), -EINVAL);
        assert_int_equal(logs_parse_line(NULL, 0, &m), -EINVAL);
}

static void test_format_timestamp(void **state) {
        char buf[48];
        assert_string_equal(logs_format_timestamp(TS1_NSEC, 0, buf, sizeof(buf)), TS1);
        assert_string_equal(logs_format_timestamp(INT64_C(1475713029) * NSEC_PER_SEC + 500000000, 7200, buf,
                                                  sizeof(buf)),
                            "2016-10-06T02:17:09.500000000+02:00");
        assert_string_equal(logs_format_timestamp(INT64_C(1475713029) * NSEC_PER_SEC, -3600, buf, sizeof(buf)),
                            "2016-10-05T23:17:09.000000000-01:00");
        assert_string_equal(logs_format_timestamp(-500000000, 0, buf, sizeof(buf)), "1969-12-31T23:59:59.500000000Z");
        assert_string_equal(logs_format_timestamp(0, 0, buf, sizeof(buf)), "1970-01-01T00:00:00.000000000Z");
}

/* ---- options ---- */

/* ---- reading ---- */

#define L(ts, stream, tag, text) ts " " stream " " tag " " text "\n"
#define T(s) "2020-01-01T00:00:0" #s ".000000000Z"

static const char *const basic_log = L(T(1), "stdout", "F", "one")
        L(T(2), "stderr", "F", "two") "this line is not CRI\n" L(T(3), "stdout", "P", "thr")
                L(T(4), "stdout", "F", "ee") L(T(5), "stdout", "F", "") L(T(6), "stderr", "F", "six");

static void test_read_all(void **state) {
        struct logs_options o;

        logs_options_init(&o);
        assert_read(basic_log, &o, "one\ntwo\nthree\n\nsix\n");
        assert_read("", &o, "");
        assert_read("garbage\n\n\n", &o, "");
}

static void test_read_timestamps(void **state) {
        struct logs_options o;

        logs_options_init(&o);
        o.timestamps = true;
        /* a joined line carries the timestamp of its first piece */
        assert_read(basic_log, &o, T(1) " one\n" T(2) " two\n" T(3) " three\n" T(5) " \n" T(6) " six\n");
        /* the offset the runtime wrote is kept; lenient input, fixed output */
        assert_read("2020-01-01T02:00:00.5+02:00 stdout F x\n", &o, "2020-01-01T02:00:00.500000000+02:00 x\n");
}

static void test_read_tail(void **state) {
        struct logs_options o;

        logs_options_init(&o);
        o.tail_lines = 0;
        assert_read(basic_log, &o, "");
        o.tail_lines = 1;
        assert_read(basic_log, &o, "six\n");
        o.tail_lines = 3;
        /* the joined line counts once */
        assert_read(basic_log, &o, "three\n\nsix\n");
        o.tail_lines = 4;
        assert_read(basic_log, &o, "two\nthree\n\nsix\n");
        o.tail_lines = 5;
        assert_read(basic_log, &o, "one\ntwo\nthree\n\nsix\n");
        o.tail_lines = 100;
        assert_read(basic_log, &o, "one\ntwo\nthree\n\nsix\n");

        /* an unterminated last line and unfinished partial lines count as one line */
        o.tail_lines = 1;
        assert_read(L(T(1), "stdout", "F", "a") L(T(2), "stdout", "F", "b") T(3) " stdout F c", &o, "c");
        assert_read(L(T(1), "stdout", "F", "a") L(T(2), "stdout", "P", "b") L(T(3), "stdout", "P", "c"), &o, "bc");
        o.tail_lines = 2;
        assert_read(L(T(1), "stdout", "F", "a") L(T(2), "stdout", "P", "b") L(T(3), "stdout", "P", "c"), &o, "a\nbc");
        /* a first line without newline before it */
        o.tail_lines = 2;
        assert_read(L(T(1), "stdout", "F", "a") L(T(2), "stdout", "F", "b"), &o, "a\nb\n");
}

static void test_read_limit(void **state) {
        struct logs_options o;
        struct logs_cursor c;
        char *s;

        logs_options_init(&o);
        o.limit_bytes = 6;
        assert_read(basic_log, &o, "one\ntw");
        o.limit_bytes = 4;
        assert_read(basic_log, &o, "one\n");
        o.timestamps = true;
        o.limit_bytes = 10;
        assert_read(basic_log, &o, "2020-01-01");
        o.timestamps = false;
        o.limit_bytes = 1000;
        s = read_with(basic_log, &o, &c);
        assert_string_equal(s, "one\ntwo\nthree\n\nsix\n");
        assert_int_equal(c.remaining, 1000 - (int64_t) strlen(s));
        assert_false(c.limit_reached);
        assert_int_equal(c.offset, strlen(basic_log));
        logs_cursor_done(&c);
        free(s);

        o.limit_bytes = 3;
        s = read_with(basic_log, &o, &c);
        assert_string_equal(s, "one");
        assert_true(c.limit_reached);
        assert_int_equal(c.remaining, 0);
        logs_cursor_done(&c);
        free(s);
}

static void test_read_since(void **state) {
        struct logs_options o;

        logs_options_init(&o);
        o.since_nsec = INT64_C(1577836803) * NSEC_PER_SEC; /* T(3) */
        /* the joined line starts at T(3): kept */
        assert_read(basic_log, &o, "three\n\nsix\n");
        o.since_nsec += 1;
        assert_read(basic_log, &o, "\nsix\n");
        /* tail counts lines before since filters them, as upstream */
        o.tail_lines = 1;
        o.since_nsec = INT64_C(1577836806) * NSEC_PER_SEC + 1;
        assert_read(basic_log, &o, "");
}

static void test_read_interleaved_partials(void **state) {
        struct logs_options o;
        const char *log = L(T(1), "stdout", "P", "out-a ") L(T(2), "stderr", "P", "err-a ")
                L(T(3), "stderr", "F", "err-b") L(T(4), "stdout", "F", "out-b") L(T(5), "stdout", "P", "dangling");

        logs_options_init(&o);
        assert_read(log, &o, "err-a err-b\nout-a out-b\ndangling");
        o.timestamps = true;
        assert_read(log, &o, T(2) " err-a err-b\n" T(1) " out-a out-b\n" T(5) " dangling");
}

static void test_read_follow_cursor(void **state) {
        struct logs_options o;
        struct logs_cursor c, copy;
        const char *log = L(T(1), "stdout", "F", "a") L(T(2), "stdout", "P", "b") T(3) " stdout F unterminated";
        char *s;

        logs_options_init(&o);
        o.follow = true;
        s = read_with(log, &o, &c);
        /* the unfinished joined line and the unterminated last line wait for the follower */
        assert_string_equal(s, "a\n");
        assert_int_equal(c.offset, strlen(L(T(1), "stdout", "F", "a") L(T(2), "stdout", "P", "b")));
        assert_true(c.pending[LOGS_STDOUT].active);
        assert_int_equal(c.pending[LOGS_STDOUT].len, 1);
        assert_int_equal(logs_cursor_copy(&c, &copy), 0);
        assert_int_equal(copy.pending[LOGS_STDOUT].len, 1);
        assert_ptr_not_equal(copy.pending[LOGS_STDOUT].data, c.pending[LOGS_STDOUT].data);
        logs_cursor_done(&copy);
        logs_cursor_done(&c);
        logs_cursor_done(NULL);
        free(s);

        /* with follow and tail 0: nothing, the cursor at the end */
        o.tail_lines = 0;
        s = read_with(log, &o, &c);
        assert_string_equal(s, "");
        assert_int_equal(c.offset, strlen(log));
        logs_cursor_done(&c);
        free(s);
}

/* a file larger than the read block: many lines, a long partial chain and a raw line longer than the block */
static void test_read_large(void **state) {
        struct logs_options o;
        struct evbuffer *in = evbuffer_new(), *expect = evbuffer_new();
        char *content, *expected, *s;
        size_t i;

        for (i = 0; i < 5000; i++) {
                evbuffer_add_printf(in, "%s stdout F line %zu\n", T(1), i);
                evbuffer_add_printf(expect, "line %zu\n", i);
        }
        /* 100 KiB joined from 25 partial pieces of 4 KiB */
        for (i = 0; i < 25; i++) {
                char piece[4096];
                memset(piece, 'a' + (char) i, sizeof(piece));
                evbuffer_add_printf(in, "%s stderr P ", T(2));
                evbuffer_add(in, piece, sizeof(piece));
                evbuffer_add(in, "\n", 1);
                evbuffer_add(expect, piece, sizeof(piece));
        }
        evbuffer_add_printf(in, "%s stderr F !\n", T(2));
        evbuffer_add(expect, "!\n", 2);
        /* one raw line of 200000 bytes */
        {
                char *big = malloc(200000);
                assert_non_null(big);
                memset(big, 'z', 200000);
                evbuffer_add_printf(in, "%s stdout F ", T(3));
                evbuffer_add(in, big, 200000);
                evbuffer_add(in, "\n", 1);
                evbuffer_add(expect, big, 200000);
                evbuffer_add(expect, "\n", 1);
                /* and a long line that is not CRI: skipped */
                evbuffer_add(in, big, 200000);
                evbuffer_add(in, "\n", 1);
                free(big);
        }
        evbuffer_add_printf(in, "%s stdout F last\n", T(4));
        evbuffer_add(expect, "last\n", 5);

        content = take_str(in);
        expected = take_str(expect);

        logs_options_init(&o);
        s = read_with(content, &o, NULL);
        assert_int_equal(strlen(s), strlen(expected));
        assert_string_equal(s, expected);
        free(s);

        /* tail over all of it: the last 3 lines are the 200000-byte line, the joined one and "last" */
        o.tail_lines = 3;
        s = read_with(content, &o, NULL);
        {
                const char *start = expected + strlen(expected) - (4096 * 25 + 2 + 200001 + 5);
                assert_string_equal(s, start);
        }
        free(s);
        o.tail_lines = 4000;
        s = read_with(content, &o, NULL);
        assert_true(startswith(s, "line 1003\n"));
        assert_true(endswith(s, "last\n"));
        free(s);

        /* limit in the middle of the joined line */
        o.tail_lines = -1;
        o.limit_bytes = (int64_t) strlen(expected) - 200001 - 5 - 100;
        s = read_with(content, &o, NULL);
        assert_int_equal(strlen(s), (size_t) o.limit_bytes);
        assert_memory_equal(s, expected, strlen(s));
        free(s);

        free(content);
        free(expected);
        evbuffer_free(in);
        evbuffer_free(expect);
}

/* ---- following ---- */

struct follow_test {
        struct event_base *base;
        struct evbuffer *got;
        struct logs_follower *f;
        const char *path;
        bool running;
        int done_calls;
        int done_r;
        int step;
        struct event *append;
};

static int ft_write(const void *data, size_t len, void *ud) {
        struct follow_test *t = ud;
        evbuffer_add(t->got, data, len);
        return 0;
}

static bool ft_running(void *ud) {
        return ((struct follow_test *) ud)->running;
}

static void ft_done(int r, void *ud) {
        struct follow_test *t = ud;
        t->done_calls++;
        t->done_r = r;
        event_base_loopbreak(t->base);
}

static void ft_append(evutil_socket_t fd, short what, void *ud) {
        struct follow_test *t = ud;
        static const char *const steps[] = {
                L(T(3), "stdout", "F", "three"),
                L(T(4), "stdout", "P", "fo"),
                T(5) " stdout F u", /* a line written in two pieces */
                "r\n" L(T(6), "stderr", "F", "five"),
                NULL, /* stop: the container exits */
        };
        struct timeval tv = { 0, 30 * 1000 };

        if (!steps[t->step]) {
                t->running = false;
                return;
        }
        write_file(t->path, steps[t->step], strlen(steps[t->step]), true);
        t->step++;
        evtimer_add(t->append, &tv);
}

static void ft_init(struct follow_test *t) {
        *t = (struct follow_test) { .running = true };
        t->base = event_base_new();
        t->got = evbuffer_new();
        assert_non_null(t->base);
        t->path = strdup(tmp_path("follow.log"));
}

static void ft_done_free(struct follow_test *t) {
        logs_follower_free(t->f);
        if (t->append)
                event_free(t->append);
        evbuffer_free(t->got);
        event_base_free(t->base);
        free((char *) t->path);
}

static void ft_run(struct follow_test *t, int timeout_sec) {
        struct timeval limit = { timeout_sec, 0 };
        event_base_loopexit(t->base, &limit);
        event_base_dispatch(t->base);
}

static void test_follow(void **state) {
        struct follow_test t;
        struct logs_options o;
        struct logs_cursor c;
        struct evbuffer *first = evbuffer_new();
        struct timeval tv = { 0, 30 * 1000 };
        char *s;
        int fd;

        ft_init(&t);
        write_file(t.path, L(T(1), "stdout", "F", "one") L(T(2), "stdout", "P", "tw"),
                   strlen(L(T(1), "stdout", "F", "one") L(T(2), "stdout", "P", "tw")), false);
        logs_options_init(&o);
        o.follow = true;
        o.timestamps = false;
        fd = open_file(t.path);
        assert_int_equal(logs_read(fd, &o, first, &c), 0);
        close(fd);
        s = take_str(first);
        assert_string_equal(s, "one\n");
        free(s);

        assert_int_equal(logs_follow(t.base, t.path, &o, &c, ft_write, ft_running, ft_done, &t, &t.f), 0);
        logs_cursor_done(&c);
        /* nothing is called from inside logs_follow */
        assert_int_equal(evbuffer_get_length(t.got), 0);

        /* a line completing the pending one, then more as the loop runs */
        write_file(t.path, L(T(2), "stdout", "F", "o"), strlen(L(T(2), "stdout", "F", "o")), true);
        t.append = evtimer_new(t.base, ft_append, &t);
        evtimer_add(t.append, &tv);
        ft_run(&t, 10);

        assert_int_equal(t.done_calls, 1);
        assert_int_equal(t.done_r, 0);
        s = take_str(t.got);
        assert_string_equal(s, "two\nthree\nfour\nfive\n");
        free(s);
        ft_done_free(&t);
        evbuffer_free(first);
}

static void test_follow_limit_and_unfinished(void **state) {
        struct follow_test t;
        struct logs_options o;
        char *s;

        /* the limit ends the follow without the container stopping */
        ft_init(&t);
        write_file(t.path, L(T(1), "stdout", "F", "0123456789"), strlen(L(T(1), "stdout", "F", "0123456789")), false);
        logs_options_init(&o);
        o.follow = true;
        o.limit_bytes = 5;
        assert_int_equal(logs_follow(t.base, t.path, &o, NULL, ft_write, ft_running, ft_done, &t, &t.f), 0);
        ft_run(&t, 5);
        assert_int_equal(t.done_calls, 1);
        assert_int_equal(t.done_r, 0);
        s = take_str(t.got);
        assert_string_equal(s, "01234");
        free(s);
        ft_done_free(&t);

        /* a container that is not running: drained at the first end of file, unfinished lines included */
        ft_init(&t);
        t.running = false;
        write_file(t.path, L(T(1), "stdout", "F", "a") L(T(2), "stdout", "P", "b") T(3) " stdout P c",
                   strlen(L(T(1), "stdout", "F", "a") L(T(2), "stdout", "P", "b") T(3) " stdout P c"), false);
        logs_options_init(&o);
        o.follow = true;
        assert_int_equal(logs_follow(t.base, t.path, &o, NULL, ft_write, ft_running, ft_done, &t, &t.f), 0);
        ft_run(&t, 5);
        assert_int_equal(t.done_calls, 1);
        assert_int_equal(t.done_r, 0);
        s = take_str(t.got);
        assert_string_equal(s, "a\nbc");
        free(s);
        ft_done_free(&t);

        /* a cursor whose limit is used up: done at once (from the loop) */
        {
                struct logs_cursor c;
                ft_init(&t);
                write_file(t.path, "x", 1, false);
                logs_options_init(&o);
                o.follow = true;
                o.limit_bytes = 0;
                logs_cursor_init(&c, &o);
                assert_true(c.limit_reached);
                assert_int_equal(logs_follow(t.base, t.path, &o, &c, ft_write, ft_running, ft_done, &t, &t.f), 0);
                assert_int_equal(t.done_calls, 0);
                ft_run(&t, 5);
                assert_int_equal(t.done_calls, 1);
                ft_done_free(&t);
        }

        /* missing file */
        ft_init(&t);
        logs_options_init(&o);
        assert_int_equal(logs_follow(t.base, tmp_path("nope.log"), &o, NULL, ft_write, ft_running, ft_done, &t, &t.f),
                         -ENOENT);
        assert_null(t.f);
        ft_done_free(&t);
}

static void rotate(evutil_socket_t fd, short what, void *ud) {
        struct follow_test *t = ud;
        char old[160];
        const char *a = L(T(2), "stdout", "F", "last of old");
        const char *b = L(T(3), "stdout", "F", "first of new");

        if (t->step == 0) {
                struct timeval tv = { 0, 100 * 1000 };
                /* write to the old file, move it away, create a new one */
                write_file(t->path, a, strlen(a), true);
                snprintf(old, sizeof(old), "%s.1", t->path);
                assert_int_equal(rename(t->path, old), 0);
                write_file(t->path, b, strlen(b), false);
                t->step++;
                evtimer_add(t->append, &tv);
        } else
                t->running = false;
}

static void test_follow_rotation(void **state) {
        struct follow_test t;
        struct logs_options o;
        struct timeval tv = { 0, 50 * 1000 };
        char *s;

        ft_init(&t);
        write_file(t.path, L(T(1), "stdout", "F", "first"), strlen(L(T(1), "stdout", "F", "first")), false);
        logs_options_init(&o);
        o.follow = true;
        assert_int_equal(logs_follow(t.base, t.path, &o, NULL, ft_write, ft_running, ft_done, &t, &t.f), 0);
        t.append = evtimer_new(t.base, rotate, &t);
        evtimer_add(t.append, &tv);
        ft_run(&t, 10);
        assert_int_equal(t.done_calls, 1);
        s = take_str(t.got);
        assert_string_equal(s, "first\nlast of old\nfirst of new\n");
        free(s);
        ft_done_free(&t);
}

/* containerd's reopen: the new file appears (and gets lines) while the old writer still flushes into the renamed
 * file; the follower reads the old file until its writer closes it, then the new one: nothing lost, nothing twice */
static int late_fd = -1;

static void rotate_late(evutil_socket_t fd, short what, void *ud) {
        struct follow_test *t = ud;
        struct timeval tv = { 0, 200 * 1000 };
        char old[160];
        const char *a = L(T(2), "stdout", "F", "last of old");
        const char *b = L(T(3), "stdout", "F", "first of new");
        const char *late = L(T(2), "stderr", "F", "flushed late into old");

        if (t->step == 0) {
                late_fd = open(t->path, O_WRONLY | O_APPEND | O_CLOEXEC);
                assert_true(late_fd >= 0);
                assert_int_equal(write(late_fd, a, strlen(a)), (ssize_t) strlen(a));
                snprintf(old, sizeof(old), "%s.20240101-000000", t->path);
                assert_int_equal(rename(t->path, old), 0);
                write_file(t->path, b, strlen(b), false);
        } else if (t->step == 1) {
                assert_int_equal(write(late_fd, late, strlen(late)), (ssize_t) strlen(late));
                close(late_fd);
                late_fd = -1;
        } else
                t->running = false;
        t->step++;
        evtimer_add(t->append, &tv);
}

static void test_follow_rotation_late_writes(void **state) {
        struct follow_test t;
        struct logs_options o;
        struct timeval tv = { 0, 50 * 1000 };
        char *s;

        ft_init(&t);
        write_file(t.path, L(T(1), "stdout", "F", "first"), strlen(L(T(1), "stdout", "F", "first")), false);
        logs_options_init(&o);
        o.follow = true;
        assert_int_equal(logs_follow(t.base, t.path, &o, NULL, ft_write, ft_running, ft_done, &t, &t.f), 0);
        t.append = evtimer_new(t.base, rotate_late, &t);
        evtimer_add(t.append, &tv);
        ft_run(&t, 10);
        assert_int_equal(t.done_calls, 1);
        s = take_str(t.got);
        assert_string_equal(s, "first\nlast of old\nflushed late into old\nfirst of new\n");
        free(s);
        ft_done_free(&t);
}

static int ft_write_fail(const void *data, size_t len, void *ud) {
        struct follow_test *t = ud;
        evbuffer_add(t->got, data, len);
        return -EPIPE;
}

/* more than a loop iteration's worth (1 MiB): read in several steps; a failing write stops it */
static void test_follow_large_and_write_error(void **state) {
        struct follow_test t;
        struct logs_options o;
        struct evbuffer *in = evbuffer_new();
        size_t expected_len = 0;
        char *content;

        for (size_t i = 0; i < 60000; i++) {
                char line[64];
                int n = snprintf(line, sizeof(line), "line %06zu\n", i);
                evbuffer_add_printf(in, "%s stdout F %s", T(1), line);
                expected_len += (size_t) n;
        }
        content = take_str(in);
        assert_true(strlen(content) > 2 * 1024 * 1024);

        ft_init(&t);
        t.running = false;
        write_file(t.path, content, strlen(content), false);
        logs_options_init(&o);
        o.follow = true;
        assert_int_equal(logs_follow(t.base, t.path, &o, NULL, ft_write, ft_running, ft_done, &t, &t.f), 0);
        ft_run(&t, 10);
        assert_int_equal(t.done_calls, 1);
        assert_int_equal(t.done_r, 0);
        assert_int_equal(evbuffer_get_length(t.got), expected_len);
        {
                char *s = take_str(t.got);
                assert_true(startswith(s, "line 000000\nline 000001\n"));
                assert_true(endswith(s, "line 059999\n"));
                free(s);
        }
        ft_done_free(&t);

        ft_init(&t);
        write_file(t.path, content, strlen(content), false);
        assert_int_equal(logs_follow(t.base, t.path, &o, NULL, ft_write_fail, ft_running, ft_done, &t, &t.f), 0);
        ft_run(&t, 10);
        assert_int_equal(t.done_calls, 1);
        assert_int_equal(t.done_r, -EPIPE);
        assert_true(evbuffer_get_length(t.got) > 0);
        ft_done_free(&t);

        free(content);
        evbuffer_free(in);
}

/* the backward scan of tailLines, a bounded piece at a time: over a file of nothing but partial lines (no F
 * line to stop at, so the whole file is scanned) each step reads about its budget, and the answer is the
 * one-shot scan's */
static void test_tail_scan_steps(void **state) {
        struct evbuffer *in = evbuffer_new();
        char *content, piece[600];
        struct logs_tail_scan t;
        uint64_t want, size;
        size_t steps = 0;
        int fd, r;

        memset(piece, 'x', sizeof(piece) - 1);
        piece[sizeof(piece) - 1] = '\0';
        for (int i = 0; i < 4000; i++) /* ~2.5 MiB of P lines */
                evbuffer_add_printf(in, "%s stdout P %s\n", T(1), piece);
        content = take_str(in);
        size = strlen(content);
        write_file(tmp_path("partials.log"), content, size, false);
        fd = open_file(tmp_path("partials.log"));
        for (int64_t tail = 0; tail <= 2; tail++) {
                assert_int_equal(logs_tail_offset(fd, size, tail, &want), 0);
                logs_tail_scan_init(&t, size, tail);
                steps = 0;
                for (;;) {
                        uint64_t before = t.scanned;
                        r = logs_tail_scan_step(fd, &t, 256 * 1024);
                        assert_true(r >= 0);
                        assert_true(t.scanned - before <= 256 * 1024 + 64 * 1024); /* whole blocks past the budget */
                        steps++;
                        if (r == 1)
                                break;
                }
                assert_int_equal(t.offset, want);
                if (tail > 0) {
                        /* one joined line: everything is scanned, in many steps */
                        assert_int_equal(want, 0);
                        assert_true(steps >= size / (320 * 1024));
                }
        }
        close(fd);
        free(content);
        evbuffer_free(in);
}

/* a consumer that takes at most 64 KiB and then says -EAGAIN until resumed from a timer */
struct bp_test {
        struct follow_test ft;
        size_t taken, window, max_in_flight;
        int blocks;
        struct event *resume;
};

static int bp_write(const void *data, size_t len, void *ud) {
        struct bp_test *b = ud;

        if (b->taken >= b->window) {
                struct timeval tv = { 0, 1000 };
                b->blocks++;
                evtimer_add(b->resume, &tv);
                return -EAGAIN;
        }
        evbuffer_add(b->ft.got, data, len);
        b->taken += len;
        b->max_in_flight = MAX(b->max_in_flight, b->taken);
        return 0;
}

static bool bp_running(void *ud) {
        return ((struct bp_test *) ud)->ft.running;
}

static void bp_done(int r, void *ud) {
        ft_done(r, &((struct bp_test *) ud)->ft);
}

static void bp_resume(evutil_socket_t fd, short what, void *ud) {
        struct bp_test *b = ud;
        b->taken = 0; /* the client read what it had */
        logs_follower_resume(b->ft.f);
}

/* a non-follow read of a big file made through the follower (still_running false at once), a consumer that
 * keeps pushing back: nothing is lost or repeated, what the consumer holds stays bounded, and the tail is
 * honoured with the backward scan done from the loop */
static void test_follow_backpressure_and_tail(void **state) {
        struct evbuffer *in = evbuffer_new();
        struct logs_options o;
        struct bp_test b;
        size_t expected = 0;
        char *content, *s;

        for (size_t i = 0; i < 60000; i++) {
                char line[64];
                int n = snprintf(line, sizeof(line), "line %06zu\n", i);
                evbuffer_add_printf(in, "%s stdout F %s", T(1), line);
                expected += (size_t) n;
        }
        evbuffer_add_printf(in, "%s stdout P unfinished", T(2)); /* a partial line at the end: written too */
        expected += strlen("unfinished");
        content = take_str(in);

        ft_init(&b.ft);
        b.ft.running = false;
        b.taken = b.max_in_flight = 0;
        b.blocks = 0;
        b.window = 64 * 1024;
        b.resume = evtimer_new(b.ft.base, bp_resume, &b);
        write_file(b.ft.path, content, strlen(content), false);
        logs_options_init(&o);
        assert_int_equal(logs_follow(b.ft.base, b.ft.path, &o, NULL, bp_write, bp_running, bp_done, &b, &b.ft.f), 0);
        ft_run(&b.ft, 30);
        assert_int_equal(b.ft.done_calls, 1);
        assert_int_equal(b.ft.done_r, 0);
        assert_int_equal(evbuffer_get_length(b.ft.got), expected);
        assert_true(b.blocks > 5);
        assert_true(b.max_in_flight <= b.window + 256 * 1024); /* at most one write past the window */
        s = take_str(b.ft.got);
        assert_true(startswith(s, "line 000000\nline 000001\n"));
        assert_true(endswith(s, "line 059999\nunfinished"));
        free(s);
        event_free(b.resume);
        ft_done_free(&b.ft);

        /* the last 3 lines (the unfinished one counts), found by the follower's backward scan */
        ft_init(&b.ft);
        b.ft.running = false;
        b.taken = b.max_in_flight = 0;
        b.window = 64 * 1024;
        b.resume = evtimer_new(b.ft.base, bp_resume, &b);
        write_file(b.ft.path, content, strlen(content), false);
        o.tail_lines = 3;
        assert_int_equal(logs_follow(b.ft.base, b.ft.path, &o, NULL, bp_write, bp_running, bp_done, &b, &b.ft.f), 0);
        ft_run(&b.ft, 30);
        assert_int_equal(b.ft.done_calls, 1);
        s = take_str(b.ft.got);
        assert_string_equal(s, "line 059998\nline 059999\nunfinished");
        free(s);
        event_free(b.resume);
        ft_done_free(&b.ft);

        free(content);
        evbuffer_free(in);
}

/* followers share one inotify instance per loop: 300 of them (more than the default per-user instance limit of
 * 128) all start and all see a new line */
struct many_test {
        struct event_base *base;
        size_t lines;
};

static int many_write(const void *data, size_t len, void *ud) {
        struct many_test *m = ud;
        if (memmem(data, len, "hello\n", 6))
                m->lines++;
        if (m->lines == 300)
                event_base_loopbreak(m->base);
        return 0;
}

static void many_append(evutil_socket_t fd, short what, void *ud) {
        write_file(tmp_path("many.log"), L(T(1), "stdout", "F", "hello"), strlen(L(T(1), "stdout", "F", "hello")),
                   true);
}

static void test_follow_many(void **state) {
        struct many_test m = { .base = event_base_new() };
        struct logs_follower *f[300];
        struct logs_options o;
        struct timeval tv = { 0, 50 * 1000 }, limit = { 20, 0 };
        struct event *append;

        write_file(tmp_path("many.log"), "", 0, false);
        logs_options_init(&o);
        o.follow = true;
        for (size_t i = 0; i < ELEMENTSOF(f); i++)
                assert_int_equal(logs_follow(m.base, tmp_path("many.log"), &o, NULL, many_write, NULL, NULL, &m, &f[i]),
                                 0);
        append = evtimer_new(m.base, many_append, NULL);
        evtimer_add(append, &tv);
        event_base_loopexit(m.base, &limit);
        event_base_dispatch(m.base);
        assert_int_equal(m.lines, 300);
        for (size_t i = 0; i < ELEMENTSOF(f); i++)
                logs_follower_free(f[i]);
        event_free(append);
        event_base_free(m.base);
}

static void stop_loop(evutil_socket_t fd, short what, void *ud) {
        event_base_loopbreak(ud);
}

static void test_follow_free_without_done(void **state) {
        struct follow_test t;
        struct logs_options o;
        struct timeval tv = { 0, 100 * 1000 };
        struct event *stop;
        char *s;

        ft_init(&t);
        write_file(t.path, L(T(1), "stdout", "F", "x"), strlen(L(T(1), "stdout", "F", "x")), false);
        logs_options_init(&o);
        o.follow = true;
        assert_int_equal(logs_follow(t.base, t.path, &o, NULL, ft_write, ft_running, ft_done, &t, &t.f), 0);
        stop = evtimer_new(t.base, stop_loop, t.base);
        evtimer_add(stop, &tv);
        event_base_dispatch(t.base); /* the follower's timer keeps the loop alive until stop */
        s = take_str(t.got);
        assert_string_equal(s, "x\n");
        free(s);
        t.f = logs_follower_free(t.f);
        assert_null(t.f);
        /* nothing of the follower is left on the loop */
        assert_int_equal(event_base_loop(t.base, EVLOOP_NONBLOCK), 1);
        assert_int_equal(t.done_calls, 0);
        event_free(stop);
        ft_done_free(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_full_and_partial),
                cmocka_unit_test(test_parse_timestamps),
                cmocka_unit_test(test_parse_missing_fields),
                cmocka_unit_test(test_format_timestamp),
                cmocka_unit_test(test_read_all),
                cmocka_unit_test(test_read_timestamps),
                cmocka_unit_test(test_read_tail),
                cmocka_unit_test(test_read_limit),
                cmocka_unit_test(test_read_since),
                cmocka_unit_test(test_read_interleaved_partials),
                cmocka_unit_test(test_read_follow_cursor),
                cmocka_unit_test(test_read_large),
                cmocka_unit_test(test_follow),
                cmocka_unit_test(test_follow_limit_and_unfinished),
                cmocka_unit_test(test_follow_rotation),
                cmocka_unit_test(test_follow_rotation_late_writes),
                cmocka_unit_test(test_follow_large_and_write_error),
                cmocka_unit_test(test_follow_free_without_done),
                cmocka_unit_test(test_tail_scan_steps),
                cmocka_unit_test(test_follow_backpressure_and_tail),
                cmocka_unit_test(test_follow_many),
        };
        return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
