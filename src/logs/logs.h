/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Container logs in the CRI log format (upstream pkg/kubelet/kuberuntime/logs). The runtime writes one
 * line per chunk of a container's output:
 *
 *     2016-10-06T00:17:09.669794202Z stdout F log content\n
 *
 * timestamp (RFC 3339, fractional seconds optional), stream (stdout|stderr), tags (the first, before any
 * ':', is F = full or P = partial: the content continues in the next line of the same stream, without the
 * newline), one space, the content. Lines that are not in this format are skipped, as upstream does.
 *
 * Decoded output is the content of each line, with the newline of F lines; P lines are joined with the
 * following lines of their stream into one line, written when the F line arrives (or when the joined
 * line reaches LOGS_MAX_JOINED, or at the end of a non-follow read). With timestamps the line is
 * prefixed with the timestamp of its first piece in RFC3339NanoFixed ("2006-01-02T15:04:05.000000000Z",
 * in the offset the runtime wrote) and a space. sinceTime is compared with that first timestamp. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evbuffer;

enum logs_stream {
        LOGS_STDOUT,
        LOGS_STDERR,
};

struct logs_msg {
        int64_t timestamp_nsec; /* unix nanoseconds */
        int32_t tz_offset_sec;  /* offset the timestamp was written with (0 for "Z") */
        enum logs_stream stream;
        bool partial;        /* tag P */
        const char *content; /* points into the line; without the trailing newline */
        size_t content_len;
};

/* Parse one raw line (with or without its trailing '\n'). Pure. -EINVAL for a line not in CRI format
 * (missing timestamp, stream or tag delimiter, bad timestamp, unknown stream). *ret untouched on error. */
int logs_parse_line(const char *line, size_t len, struct logs_msg *ret);

/* Parse a log line's timestamp (RFC 3339, fractional seconds optional, "Z" or a numeric offset) of n bytes at s.
 * -EINVAL when it is not one. */
int logs_parse_timestamp(const char *s, size_t n, int64_t *ret_nsec, int32_t *ret_offset);

/* Format a timestamp as RFC3339NanoFixed with the given offset ("Z" when 0). buf >= 40 bytes.
 * Returns buf. */
char *logs_format_timestamp(int64_t unix_nsec, int32_t tz_offset_sec, char *buf, size_t size);

struct logs_options {
        bool timestamps;
        int64_t tail_lines;  /* -1 = all */
        int64_t limit_bytes; /* -1 = no limit */
        int64_t since_nsec;  /* 0 = none; unix nsec */
        bool follow;
        bool previous; /* the previous instance of the container was asked for */
};

/* Defaults: everything, no timestamps, no follow. */
void logs_options_init(struct logs_options *o);

/* Longest joined line kept in memory; longer ones are written out in pieces (the same bytes). */
#define LOGS_MAX_JOINED (256 * 1024)

/* Decoder state of one stream's line in progress. Internal; part of the cursor. */
struct logs_pending {
        char *data;
        size_t len, allocated;
        int64_t timestamp_nsec;
        int32_t tz_offset_sec;
        bool active;  /* a line of this stream is in progress */
        bool emitted; /* a first piece of it was already written (no timestamp prefix any more) */
        bool skip;    /* older than since: dropped */
};

/* Where a read stopped: the file offset of the first byte not consumed, the output bytes still allowed,
 * and the lines in progress, so that a follower continues exactly there. Owns memory: release with
 * logs_cursor_done(). */
struct logs_cursor {
        uint64_t offset;
        int64_t remaining;              /* output bytes still allowed, -1 = no limit */
        bool limit_reached;             /* limitBytes exhausted: nothing more is to be written */
        struct logs_pending pending[2]; /* by enum logs_stream */
        struct {                        /* a raw line longer than the read block, consumed piecewise */
                bool active;
                bool skip; /* not in CRI format: discarded up to its newline */
                bool partial;
                enum logs_stream stream;
        } line;
};

void logs_cursor_init(struct logs_cursor *c, const struct logs_options *o);
void logs_cursor_done(struct logs_cursor *c); /* accepts NULL */
int logs_cursor_copy(const struct logs_cursor *src, struct logs_cursor *ret);

/* Read the log in fd (pread, the fd's offset is not used) from the start or the last tail_lines lines
 * (counting joined lines; the file is scanned backwards in blocks), up to the file size when called, and
 * append the decoded output to out, honouring limit_bytes and since. Without follow, the last unfinished
 * line is written out as well (like upstream); with follow, an unterminated last line and unfinished
 * partial lines are left to the cursor. cursor (optional) is initialized and receives where the read
 * stopped; release it with logs_cursor_done(). Output already appended stays on failure. */
int logs_read(int fd, const struct logs_options *o, struct evbuffer *out, struct logs_cursor *cursor);

/* Where the last tail_lines lines of fd start (0 for tail_lines < 0, the size for 0). Exposed for tests. */
int logs_tail_offset(int fd, uint64_t size, int64_t tail_lines, uint64_t *ret_offset);

/* The same, a bounded piece at a time (the file is scanned backwards from size): init, then step until it
 * returns 1 (offset is the answer); 0 means more to scan; a negative errno on failure. A step reads about
 * budget bytes (whole blocks, plus the headers of lines it classifies), so that a file of nothing but partial
 * lines never holds the loop. */
struct logs_tail_scan {
        uint64_t size, right, e;
        int64_t tail_lines, count;
        bool seen_full, dangling, done;
        uint64_t offset;  /* the answer, once done */
        uint64_t scanned; /* bytes read so far (blocks) */
};
void logs_tail_scan_init(struct logs_tail_scan *t, uint64_t size, int64_t tail_lines);
int logs_tail_scan_step(int fd, struct logs_tail_scan *t, size_t budget);

/* Follow a log file on the loop: inotify (IN_MODIFY, IN_CLOSE_WRITE, IN_MOVE_SELF, IN_DELETE_SELF) plus a
 * 1 s timer. Starts at start (NULL: the beginning of the file with o's limit_bytes; the cursor is copied)
 * and writes complete decoded lines through write() as they appear; write() returns 0, or a negative
 * errno to stop (then done(that errno)).
 *
 * still_running() is asked at the first end of file and on every timer tick; once it returns false the
 * rest of the file is drained (unfinished lines included) and done(0) is called. With still_running NULL
 * the follower runs until the limit, an error or logs_follower_free(). done(0) also when limit_bytes
 * is reached; done(-errno) on read errors.
 *
 * If the file is replaced (rotation), the old one is read to its end and the new one followed from its
 * start; a truncated file is read again from its start. Callbacks run only from the loop, never inside
 * logs_follow(). write() and still_running() must not free the follower; done() (may be NULL) may.
 * After done() the follower is stopped and must still be freed.
 *
 * Without start, a tail_lines >= 0 in o is honoured: the last lines are found by a backward scan done from the
 * loop a piece at a time (logs_tail_scan). Without o->follow (and with a still_running), the file is read as it
 * is (up to its size at the first end of file) and the reading ends: a non-follow read, made in steps, with no
 * inotify watch. Followers share one inotify instance per loop.
 *
 * Work per loop iteration is bounded (128 KiB of file decoded, or 256 KiB scanned backwards), and so is memory:
 * write() may return -EAGAIN to take nothing now (back-pressure); the follower then keeps what it decoded (at
 * most a step's worth), reads nothing more, and goes on after logs_follower_resume(). */
struct logs_follower;

typedef int (*logs_write_t)(const void *data, size_t len, void *userdata);
typedef bool (*logs_running_t)(void *userdata);
typedef void (*logs_done_t)(int r, void *userdata);

int logs_follow(struct event_base *base, const char *path, const struct logs_options *o,
                const struct logs_cursor *start, logs_write_t write, logs_running_t still_running, logs_done_t done,
                void *userdata, struct logs_follower **ret);
/* After write() returned -EAGAIN: the consumer takes data again (from the loop, never inside this call). */
void logs_follower_resume(struct logs_follower *f);
/* Stop without calling done. Accepts NULL, returns NULL. Not from inside write(). */
struct logs_follower *logs_follower_free(struct logs_follower *f);
