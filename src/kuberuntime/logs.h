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
 * line reaches CRI_LOG_MAX_JOINED, or at the end of a non-follow read). With timestamps the line is
 * prefixed with the timestamp of its first piece in RFC3339NanoFixed ("2006-01-02T15:04:05.000000000Z",
 * in the offset the runtime wrote) and a space. sinceTime is compared with that first timestamp. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evbuffer;

enum cri_log_stream {
        CRI_LOG_STDOUT,
        CRI_LOG_STDERR,
};

struct cri_log_msg {
        int64_t timestamp_nsec;   /* unix nanoseconds */
        int32_t tz_offset_sec;    /* offset the timestamp was written with (0 for "Z") */
        enum cri_log_stream stream;
        bool partial;             /* tag P */
        const char *content;      /* points into the line; without the trailing newline */
        size_t content_len;
};

/* Parse one raw line (with or without its trailing '\n'). Pure. -EINVAL for a line not in CRI format
 * (missing timestamp, stream or tag delimiter, bad timestamp, unknown stream). *ret untouched on error. */
int cri_log_parse_line(const char *line, size_t len, struct cri_log_msg *ret);

/* Format a timestamp as RFC3339NanoFixed with the given offset ("Z" when 0). buf >= 40 bytes.
 * Returns buf. */
char *cri_log_format_timestamp(int64_t unix_nsec, int32_t tz_offset_sec, char *buf, size_t size);

struct cri_log_options {
        bool timestamps;
        int64_t tail_lines;  /* -1 = all */
        int64_t limit_bytes; /* -1 = no limit */
        int64_t since_nsec;  /* 0 = none; unix nsec */
        bool follow;
        bool previous;       /* the previous instance of the container was asked for */
};

/* Defaults: everything, no timestamps, no follow. */
void cri_log_options_init(struct cri_log_options *o);

/* Build options from the query string of a /containerLogs request (without the '?'; NULL or "" for
 * none), as the kubelet's getContainerLogs does with v1.PodLogOptions: parameters follow, previous,
 * timestamps (false only for "0"/"false", any other value, also empty, is true), tailLines (and the old
 * "tail", where "all" means all lines), limitBytes, sinceSeconds, sinceTime (RFC 3339). Unknown
 * parameters are ignored, parameter names are case-sensitive, the first value of a repeated parameter
 * wins. sinceSeconds is converted relative to now_nsec (unix nsec; pass 0 for the current time).
 *
 * Errors, with a reason in *ret_error (optional, malloc'd; untouched on success):
 *   -EBADMSG  the query or a value cannot be decoded (upstream: 400 "Unable to decode query.")
 *   -EINVAL   validation failed (upstream: 422 "Invalid request."): negative tailLines, limitBytes < 1,
 *             sinceSeconds < 1, sinceSeconds together with sinceTime
 *   -ENOMEM */
int cri_log_options_from_query_at(const char *query_string, int64_t now_nsec, struct cri_log_options *ret,
                                  char **ret_error);
int cri_log_options_from_query(const char *query_string, struct cri_log_options *ret, char **ret_error);

/* Longest joined line kept in memory; longer ones are written out in pieces. */
#define CRI_LOG_MAX_JOINED (1024 * 1024)

/* Decoder state of one stream's line in progress. Internal; part of the cursor. */
struct cri_log_pending {
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
 * cri_log_cursor_done(). */
struct cri_log_cursor {
        uint64_t offset;
        int64_t remaining;    /* output bytes still allowed, -1 = no limit */
        bool limit_reached;   /* limitBytes exhausted: nothing more is to be written */
        struct cri_log_pending pending[2]; /* by enum cri_log_stream */
        struct {              /* a raw line longer than the read block, consumed piecewise */
                bool active;
                bool skip;    /* not in CRI format: discarded up to its newline */
                bool partial;
                enum cri_log_stream stream;
        } line;
};

void cri_log_cursor_init(struct cri_log_cursor *c, const struct cri_log_options *o);
void cri_log_cursor_done(struct cri_log_cursor *c); /* accepts NULL */
int cri_log_cursor_copy(const struct cri_log_cursor *src, struct cri_log_cursor *ret);

/* Read the log in fd (pread, the fd's offset is not used) from the start or the last tail_lines lines
 * (counting joined lines; the file is scanned backwards in blocks), up to the file size when called, and
 * append the decoded output to out, honouring limit_bytes and since. Without follow, the last unfinished
 * line is written out as well (like upstream); with follow, an unterminated last line and unfinished
 * partial lines are left to the cursor. cursor (optional) is initialized and receives where the read
 * stopped; release it with cri_log_cursor_done(). Output already appended stays on failure. */
int cri_log_read(int fd, const struct cri_log_options *o, struct evbuffer *out, struct cri_log_cursor *cursor);

/* Where the last tail_lines lines of fd start (0 for tail_lines < 0, the size for 0). Exposed for tests. */
int cri_log_tail_offset(int fd, uint64_t size, int64_t tail_lines, uint64_t *ret_offset);

/* Follow a log file on the loop: inotify (IN_MODIFY, IN_CLOSE_WRITE, IN_MOVE_SELF, IN_DELETE_SELF) plus a
 * 1 s timer. Starts at start (NULL: the beginning of the file with o's limit_bytes; the cursor is copied)
 * and writes complete decoded lines through write() as they appear; write() returns 0, or a negative
 * errno to stop (then done(that errno)).
 *
 * still_running() is asked at the first end of file and on every timer tick; once it returns false the
 * rest of the file is drained (unfinished lines included) and done(0) is called. With still_running NULL
 * the follower runs until the limit, an error or cri_log_follower_free(). done(0) also when limit_bytes
 * is reached; done(-errno) on read errors.
 *
 * If the file is replaced (rotation), the old one is read to its end and the new one followed from its
 * start; a truncated file is read again from its start. Callbacks run only from the loop, never inside
 * cri_log_follow(). write() and still_running() must not free the follower; done() (may be NULL) may.
 * After done() the follower is stopped and must still be freed. Work per loop iteration is bounded
 * (1 MiB of file per iteration). */
struct cri_log_follower;

typedef int (*cri_log_write_t)(const void *data, size_t len, void *userdata);
typedef bool (*cri_log_running_t)(void *userdata);
typedef void (*cri_log_done_t)(int r, void *userdata);

int cri_log_follow(struct event_base *base, const char *path, const struct cri_log_options *o,
                   const struct cri_log_cursor *start, cri_log_write_t write, cri_log_running_t still_running,
                   cri_log_done_t done, void *userdata, struct cri_log_follower **ret);
/* Stop without calling done. Accepts NULL, returns NULL. Not from inside write(). */
struct cri_log_follower *cri_log_follower_free(struct cri_log_follower *f);
