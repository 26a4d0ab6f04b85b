/* SPDX-License-Identifier: Apache-2.0 */
/* CRI container logs: parsing, reading (tail, limit, since, timestamps) and following on the event loop.
 * See logs.h. */

#include "logs/logs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "basic/list.h"
#include "basic/log.h"
#include "basic/time.h"
#include "basic/timer.h"

/* Read block for forward and backward reading. A raw line longer than this is consumed in pieces. */
#define READ_BLOCK (64 * 1024)
/* Bytes of a line start read to classify it while scanning backwards (timestamp, stream, tag). */
#define HEADER_MAX 256
/* File bytes decoded by a follower per loop iteration: a step is well under a millisecond's work. */
#define PUMP_MAX (128 * 1024)
/* File bytes scanned backwards per loop iteration while looking for where the last tail_lines lines start. */
#define TAIL_SCAN_STEP (256 * 1024)
/* Joined line buffers bigger than this are released when the line is done. */
#define PENDING_KEEP (64 * 1024)

#define FOLLOW_PERIOD_USEC (1 * USEC_PER_SEC)
#define WATCH_MASK (IN_MODIFY | IN_CLOSE_WRITE | IN_MOVE_SELF | IN_DELETE_SELF)
#define WATCH_DIR_MASK (IN_CREATE | IN_MOVED_TO | IN_ONLYDIR)
/* After a rotation the runtime may still flush into the old file for a moment (containerd's old writer drains its
 * pipe when it is replaced): the old file is read until its writer closed it, or this long at most. */
#define ROTATION_GRACE_USEC (5 * USEC_PER_SEC)

/* ---- timestamps ---- */

static int64_t days_from_civil(int64_t y, int m, int d) {
        y -= m <= 2;
        int64_t era = (y >= 0 ? y : y - 399) / 400;
        int64_t yoe = y - era * 400;                                   /* [0, 399] */
        int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* [0, 365] */
        int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           /* [0, 146096] */
        return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *ret_y, int *ret_m, int *ret_d) {
        z += 719468;
        int64_t era = (z >= 0 ? z : z - 146096) / 146097;
        int64_t doe = z - era * 146097;
        int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        int64_t mp = (5 * doy + 2) / 153;
        int d = (int) (doy - (153 * mp + 2) / 5 + 1);
        int m = (int) (mp < 10 ? mp + 3 : mp - 9);
        *ret_y = yoe + era * 400 + (m <= 2);
        *ret_m = m;
        *ret_d = d;
}

static bool is_leap(int64_t y) {
        return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int64_t y, int m) {
        static const int d[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
        return m == 2 && is_leap(y) ? 29 : d[m - 1];
}

/* Fixed-width decimal field. */
static bool get_digits(const char **p, const char *end, int n, int *ret) {
        int v = 0;
        if (end - *p < n)
                return false;
        for (int i = 0; i < n; i++) {
                char c = (*p)[i];
                if (c < '0' || c > '9')
                        return false;
                v = v * 10 + (c - '0');
        }
        *p += n;
        *ret = v;
        return true;
}

/* RFC 3339 as Go's time.Parse with RFC3339Nano parses it (the kubelet's RFC3339NanoLenient): fractional
 * seconds optional ('.' or ',', any number of digits, nanoseconds kept), hour of one or two digits, "Z"
 * or a numeric offset. The whole of [s, s+n) must be the timestamp. */
int logs_parse_timestamp(const char *s, size_t n, int64_t *ret_nsec, int32_t *ret_offset) {
        const char *p = s, *end = s + n;
        int year, mon, day, hour, min, sec, off = 0;
        int64_t nsec = 0;

        if (!get_digits(&p, end, 4, &year) || p >= end || *p++ != '-')
                return -EINVAL;
        if (!get_digits(&p, end, 2, &mon) || p >= end || *p++ != '-')
                return -EINVAL;
        if (!get_digits(&p, end, 2, &day) || p >= end || *p++ != 'T')
                return -EINVAL;
        /* hour: one or two digits */
        if (p >= end || *p < '0' || *p > '9')
                return -EINVAL;
        hour = *p++ - '0';
        if (p < end && *p >= '0' && *p <= '9')
                hour = hour * 10 + (*p++ - '0');
        if (p >= end || *p++ != ':')
                return -EINVAL;
        if (!get_digits(&p, end, 2, &min) || p >= end || *p++ != ':')
                return -EINVAL;
        if (!get_digits(&p, end, 2, &sec))
                return -EINVAL;
        if (p + 1 < end && (*p == '.' || *p == ',') && p[1] >= '0' && p[1] <= '9') {
                int digits = 0;
                p++;
                while (p < end && *p >= '0' && *p <= '9') {
                        if (digits < 9) {
                                nsec = nsec * 10 + (*p - '0');
                                digits++;
                        }
                        p++;
                }
                for (; digits < 9; digits++)
                        nsec *= 10;
        }
        if (p >= end)
                return -EINVAL;
        if (*p == 'Z')
                p++;
        else if (*p == '+' || *p == '-') {
                int sign = *p++ == '-' ? -1 : 1, oh, om;
                if (!get_digits(&p, end, 2, &oh) || p >= end || *p++ != ':' || !get_digits(&p, end, 2, &om))
                        return -EINVAL;
                if (oh > 24 || om > 59)
                        return -EINVAL;
                off = sign * (oh * 3600 + om * 60);
        } else
                return -EINVAL;
        if (p != end)
                return -EINVAL;

        if (mon < 1 || mon > 12 || day < 1 || day > days_in_month(year, mon) || hour > 23 || min > 59 || sec > 59)
                return -EINVAL;

        int64_t secs = days_from_civil(year, mon, day) * 86400 + hour * 3600 + min * 60 + sec - off;
        /* int64 nanoseconds cover 1677..2262 */
        if (secs > INT64_MAX / NSEC_PER_SEC - 1 || secs < INT64_MIN / NSEC_PER_SEC + 1)
                return -ERANGE;
        *ret_nsec = secs * NSEC_PER_SEC + nsec;
        *ret_offset = off;
        return 0;
}

char *logs_format_timestamp(int64_t unix_nsec, int32_t tz_offset_sec, char *buf, size_t size) {
        int64_t secs = unix_nsec / NSEC_PER_SEC, frac = unix_nsec % NSEC_PER_SEC;
        int64_t y, days, sod;
        int m, d;
        char zone[8];

        if (frac < 0) {
                frac += NSEC_PER_SEC;
                secs--;
        }
        secs += tz_offset_sec;
        days = secs / 86400;
        sod = secs % 86400;
        if (sod < 0) {
                sod += 86400;
                days--;
        }
        civil_from_days(days, &y, &m, &d);
        if (tz_offset_sec == 0)
                strcpy(zone, "Z");
        else {
                int a = tz_offset_sec < 0 ? -tz_offset_sec : tz_offset_sec;
                snprintf(zone, sizeof(zone), "%c%02d:%02d", tz_offset_sec < 0 ? '-' : '+', (a / 3600) % 100,
                         (a / 60) % 60);
        }
        snprintf(buf, size, "%04" PRId64 "-%02d-%02dT%02d:%02d:%02d.%09" PRId64 "%s", y, m, d, (int) (sod / 3600),
                 (int) (sod / 60 % 60), (int) (sod % 60), frac, zone);
        return buf;
}

/* ---- parsing ---- */

int logs_parse_line(const char *line, size_t len, struct logs_msg *ret) {
        const char *p, *end, *sp;
        struct logs_msg m = {};
        int r;

        if (!line)
                return -EINVAL;
        end = line + len;
        if (len > 0 && end[-1] == '\n')
                end--;

        /* timestamp */
        sp = memchr(line, ' ', end - line);
        if (!sp)
                return -EINVAL;
        r = logs_parse_timestamp(line, sp - line, &m.timestamp_nsec, &m.tz_offset_sec);
        if (r < 0)
                return -EINVAL;

        /* stream */
        p = sp + 1;
        sp = memchr(p, ' ', end - p);
        if (!sp)
                return -EINVAL;
        if (sp - p == 6 && memcmp(p, "stdout", 6) == 0)
                m.stream = LOGS_STDOUT;
        else if (sp - p == 6 && memcmp(p, "stderr", 6) == 0)
                m.stream = LOGS_STDERR;
        else
                return -EINVAL;

        /* tags, ':'-separated; only the first one means something (forward compatible, as upstream) */
        p = sp + 1;
        sp = memchr(p, ' ', end - p);
        if (!sp)
                return -EINVAL;
        {
                const char *colon = memchr(p, ':', sp - p);
                size_t first = colon ? (size_t) (colon - p) : (size_t) (sp - p);
                m.partial = first == 1 && p[0] == 'P';
        }

        m.content = sp + 1;
        m.content_len = end - m.content;
        *ret = m;
        return 0;
}

/* ---- options ---- */

void logs_options_init(struct logs_options *o) {
        *o = (struct logs_options) {
                .tail_lines = -1,
                .limit_bytes = -1,
        };
}

/* ---- cursor ---- */

void logs_cursor_init(struct logs_cursor *c, const struct logs_options *o) {
        *c = (struct logs_cursor) {
                .remaining = o && o->limit_bytes >= 0 ? o->limit_bytes : -1,
        };
        c->limit_reached = c->remaining == 0;
}

void logs_cursor_done(struct logs_cursor *c) {
        if (!c)
                return;
        for (size_t i = 0; i < ELEMENTSOF(c->pending); i++) {
                free(c->pending[i].data);
                c->pending[i] = (struct logs_pending) {};
        }
}

int logs_cursor_copy(const struct logs_cursor *src, struct logs_cursor *ret) {
        struct logs_cursor c = *src;

        for (size_t i = 0; i < ELEMENTSOF(c.pending); i++) {
                c.pending[i].data = NULL;
                c.pending[i].allocated = 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(c.pending); i++) {
                if (src->pending[i].len == 0)
                        continue;
                c.pending[i].data = malloc(src->pending[i].len);
                if (!c.pending[i].data) {
                        logs_cursor_done(&c);
                        return -ENOMEM;
                }
                memcpy(c.pending[i].data, src->pending[i].data, src->pending[i].len);
                c.pending[i].allocated = src->pending[i].len;
        }
        *ret = c;
        return 0;
}

/* ---- decoding ---- */

struct decoder {
        const struct logs_options *o;
        struct logs_cursor *c;
        struct evbuffer *out;
};

/* Append output, cut at the bytes still allowed. */
static int put(struct decoder *d, const void *data, size_t len) {
        struct logs_cursor *c = d->c;

        if (c->limit_reached)
                return 0;
        if (c->remaining >= 0 && (uint64_t) c->remaining < len)
                len = (size_t) c->remaining;
        if (len > 0 && evbuffer_add(d->out, data, len) < 0)
                return -ENOMEM;
        if (c->remaining >= 0) {
                c->remaining -= (int64_t) len;
                if (c->remaining == 0)
                        c->limit_reached = true;
        }
        return 0;
}

static int emit(struct decoder *d, struct logs_pending *p, const char *data, size_t len, bool newline) {
        int r;

        if (p->skip || d->c->limit_reached)
                return 0;
        if (!p->emitted && d->o->timestamps) {
                char ts[48];
                size_t l;
                logs_format_timestamp(p->timestamp_nsec, p->tz_offset_sec, ts, sizeof(ts) - 1);
                l = strlen(ts);
                ts[l++] = ' ';
                r = put(d, ts, l);
                if (r < 0)
                        return r;
        }
        p->emitted = true;
        r = put(d, data, len);
        if (r < 0)
                return r;
        if (newline)
                return put(d, "\n", 1);
        return 0;
}

static void pending_start(struct decoder *d, struct logs_pending *p, const struct logs_msg *m) {
        if (p->active)
                return;
        p->active = true;
        p->emitted = false;
        p->len = 0;
        p->timestamp_nsec = m->timestamp_nsec;
        p->tz_offset_sec = m->tz_offset_sec;
        /* upstream: a line older than since is skipped */
        p->skip = d->o->since_nsec > 0 && m->timestamp_nsec < d->o->since_nsec;
}

static int pending_append(struct decoder *d, struct logs_pending *p, const char *data, size_t len) {
        int r;

        if (p->skip || len == 0)
                return 0;
        if (p->len + len > LOGS_MAX_JOINED) {
                /* too long to keep: write out what we have and go on in pieces */
                if (p->len > 0) {
                        r = emit(d, p, p->data, p->len, false);
                        if (r < 0)
                                return r;
                        p->len = 0;
                }
                if (len > LOGS_MAX_JOINED)
                        return emit(d, p, data, len, false);
        }
        if (p->len + len > p->allocated) {
                size_t a = MAX(p->len + len, MIN(p->allocated * 2, (size_t) LOGS_MAX_JOINED));
                char *n = realloc(p->data, a);
                if (!n)
                        return -ENOMEM;
                p->data = n;
                p->allocated = a;
        }
        memcpy(p->data + p->len, data, len);
        p->len += len;
        return 0;
}

static int pending_finish(struct decoder *d, struct logs_pending *p, bool newline) {
        int r = 0;

        if (!p->active)
                return 0;
        if (!p->skip && (p->len > 0 || newline || !p->emitted))
                r = emit(d, p, p->data, p->len, newline);
        p->active = false;
        p->emitted = false;
        p->skip = false;
        p->len = 0;
        if (p->allocated > PENDING_KEEP) {
                free(p->data);
                p->data = NULL;
                p->allocated = 0;
        }
        return r;
}

/* A whole raw line (or the rest of a long one), without its '\n'. */
static int process_line(struct decoder *d, const char *line, size_t len, bool terminated) {
        struct logs_cursor *c = d->c;
        struct logs_pending *p;
        struct logs_msg m;
        int r;

        if (c->line.active) {
                /* the end of a raw line whose beginning was consumed piecewise */
                c->line.active = false;
                if (c->line.skip)
                        return 0;
                p = &c->pending[c->line.stream];
                r = pending_append(d, p, line, len);
                if (r < 0)
                        return r;
                return c->line.partial ? 0 : pending_finish(d, p, terminated);
        }

        if (logs_parse_line(line, len, &m) < 0) {
                log_v(4, "Skipping a log line not in CRI format (%zu bytes)", len);
                return 0;
        }
        p = &c->pending[m.stream];
        pending_start(d, p, &m);
        r = pending_append(d, p, m.content, m.content_len);
        if (r < 0)
                return r;
        return m.partial ? 0 : pending_finish(d, p, terminated);
}

/* A piece of a raw line longer than the read block (no newline in it). */
static int process_piece(struct decoder *d, const char *data, size_t len) {
        struct logs_cursor *c = d->c;
        struct logs_pending *p;
        struct logs_msg m;

        if (c->line.active)
                return c->line.skip ? 0 : pending_append(d, &c->pending[c->line.stream], data, len);

        c->line.active = true;
        if (logs_parse_line(data, len, &m) < 0) {
                log_v(4, "Skipping a long log line not in CRI format");
                c->line.skip = true;
                return 0;
        }
        c->line.skip = false;
        c->line.partial = m.partial;
        c->line.stream = m.stream;
        p = &c->pending[m.stream];
        pending_start(d, p, &m);
        return pending_append(d, p, m.content, m.content_len);
}

/* End of input: write out everything unfinished, oldest first. */
static int finish_all(struct decoder *d) {
        struct logs_cursor *c = d->c;
        struct logs_pending *a = &c->pending[LOGS_STDOUT], *b = &c->pending[LOGS_STDERR];
        int r;

        if (c->line.active) {
                c->line.active = false;
                if (!c->line.skip && !c->line.partial) {
                        r = pending_finish(d, &c->pending[c->line.stream], false);
                        if (r < 0)
                                return r;
                }
        }
        if (a->active && b->active && b->timestamp_nsec < a->timestamp_nsec) {
                struct logs_pending *t = a;
                a = b;
                b = t;
        }
        r = pending_finish(d, a, false);
        if (r < 0)
                return r;
        return pending_finish(d, b, false);
}

static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t off) {
        size_t done = 0;
        while (done < len) {
                ssize_t n = pread(fd, (char *) buf + done, len - done, (off_t) (off + done));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                done += (size_t) n;
        }
        return (ssize_t) done;
}

/* Decode [c->offset, end) of fd. Complete lines are processed; with final, also an unterminated last
 * line. Without final the unterminated rest stays unconsumed (c->offset points at it), except pieces of
 * a line longer than the block. */
static int decode_range(int fd, struct decoder *d, uint64_t end, bool final) {
        struct logs_cursor *c = d->c;
        _cleanup_free_ char *buf = NULL;
        uint64_t off = c->offset;
        size_t len = 0;
        int r;

        if (off >= end || c->limit_reached)
                return 0;
        buf = malloc(READ_BLOCK);
        if (!buf)
                return -ENOMEM;

        for (;;) {
                size_t p = 0;
                bool eof;

                if (off + len < end && len < READ_BLOCK) {
                        size_t want = (size_t) MIN((uint64_t) (READ_BLOCK - len), end - (off + len));
                        ssize_t n = pread_full(fd, buf + len, want, off + len);
                        if (n < 0)
                                return (int) n;
                        len += (size_t) n;
                        if ((size_t) n < want)
                                end = off + len; /* the file shrank */
                }
                eof = off + len >= end;

                while (p < len && !c->limit_reached) {
                        char *nl = memchr(buf + p, '\n', len - p);
                        if (!nl)
                                break;
                        r = process_line(d, buf + p, (size_t) (nl - (buf + p)), true);
                        if (r < 0)
                                return r;
                        p = (size_t) (nl - buf) + 1;
                }
                if (!c->limit_reached && p < len) {
                        if (p == 0 && len == READ_BLOCK) {
                                /* a raw line longer than the block */
                                r = process_piece(d, buf, len);
                                if (r < 0)
                                        return r;
                                p = len;
                        } else if (eof && final) {
                                r = process_line(d, buf + p, len - p, false);
                                if (r < 0)
                                        return r;
                                p = len;
                        }
                }

                memmove(buf, buf + p, len - p);
                off += p;
                len -= p;
                c->offset = off;
                if (c->limit_reached || eof)
                        return 0;
        }
}

/* Classify the raw line starting at s (ending at e, '\n' included) by its tag. */
enum line_kind { LINE_INVALID, LINE_FULL, LINE_PARTIAL };

static int classify(int fd, const char *blk, uint64_t blk_start, uint64_t blk_end, uint64_t s, uint64_t e,
                    enum line_kind *ret) {
        char hdr[HEADER_MAX];
        const char *p;
        size_t l = (size_t) MIN(e - s, (uint64_t) HEADER_MAX);
        struct logs_msg m;

        if (s >= blk_start && s + l <= blk_end)
                p = blk + (s - blk_start);
        else {
                ssize_t n = pread_full(fd, hdr, l, s);
                if (n < 0)
                        return (int) n;
                l = (size_t) n;
                p = hdr;
        }
        if (logs_parse_line(p, l, &m) < 0)
                *ret = LINE_INVALID;
        else
                *ret = m.partial ? LINE_PARTIAL : LINE_FULL;
        return 0;
}

void logs_tail_scan_init(struct logs_tail_scan *t, uint64_t size, int64_t tail_lines) {
        *t = (struct logs_tail_scan) { .size = size, .tail_lines = tail_lines, .right = size, .e = size };
        if (tail_lines < 0) {
                t->done = true;
                t->offset = 0;
        } else if (tail_lines == 0 || size == 0) {
                t->done = true;
                t->offset = size;
        }
}

/* Lines end at F lines; unfinished P lines at the very end count as one more line. The start is the end of the
 * (tail_lines+1)-th F line from the end. The file is read backwards one block at a time; a step reads blocks
 * until budget bytes were read, so a file of nothing but partial lines is scanned a piece per loop iteration. */
int logs_tail_scan_step(int fd, struct logs_tail_scan *t, size_t budget) {
        _cleanup_free_ char *buf = NULL;
        size_t used = 0;
        int r;

        if (t->done)
                return 1;
        buf = malloc(READ_BLOCK);
        if (!buf)
                return -ENOMEM;
        while (used < budget) {
                uint64_t left = t->right > READ_BLOCK ? t->right - READ_BLOCK : 0;
                size_t blen = (size_t) (t->right - left), i = blen;
                ssize_t n;

                if (blen > 0) {
                        n = pread_full(fd, buf, blen, left);
                        if (n < 0)
                                return (int) n;
                        if ((size_t) n != blen)
                                return -EIO; /* truncated while reading */
                        used += blen;
                        t->scanned += blen;
                }
                for (;;) {
                        char *nl = i > 0 ? memrchr(buf, '\n', i) : NULL;
                        enum line_kind k;
                        uint64_t s;

                        if (nl) {
                                i = (size_t) (nl - buf);
                                s = left + i + 1;
                        } else if (left == 0)
                                s = 0; /* the first line of the file */
                        else
                                break;
                        if (s < t->e) {
                                r = classify(fd, buf, left, t->right, s, t->e, &k);
                                if (r < 0)
                                        return r;
                                if (k == LINE_FULL) {
                                        if (t->count == t->tail_lines) {
                                                t->offset = t->e;
                                                t->done = true;
                                                return 1;
                                        }
                                        t->count++;
                                        t->seen_full = true;
                                } else if (k == LINE_PARTIAL && !t->seen_full && !t->dangling) {
                                        t->dangling = true;
                                        t->count++;
                                }
                                t->e = s;
                        }
                        if (s == 0)
                                break;
                }
                if (left == 0) {
                        t->offset = 0;
                        t->done = true;
                        return 1;
                }
                t->right = left;
        }
        return 0;
}

int logs_tail_offset(int fd, uint64_t size, int64_t tail_lines, uint64_t *ret_offset) {
        struct logs_tail_scan t;
        int r;

        logs_tail_scan_init(&t, size, tail_lines);
        while ((r = logs_tail_scan_step(fd, &t, SIZE_MAX)) == 0)
                ;
        if (r < 0)
                return r;
        *ret_offset = t.offset;
        return 0;
}

int logs_read(int fd, const struct logs_options *o, struct evbuffer *out, struct logs_cursor *cursor) {
        struct logs_cursor c;
        struct decoder d = { .o = o, .c = &c, .out = out };
        struct stat st;
        uint64_t size;
        int r;

        if (fd < 0 || !o || !out)
                return -EINVAL;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        size = st.st_size > 0 ? (uint64_t) st.st_size : 0;

        logs_cursor_init(&c, o);
        r = logs_tail_offset(fd, size, o->tail_lines, &c.offset);
        if (r < 0)
                return r;
        r = decode_range(fd, &d, size, !o->follow);
        if (r >= 0 && !o->follow)
                r = finish_all(&d);
        if (r < 0) {
                logs_cursor_done(&c);
                return r;
        }
        if (cursor)
                *cursor = c;
        else
                logs_cursor_done(&c);
        return 0;
}

/* ---- following ---- */

/* One inotify instance for every follower on a loop: an instance per follower would meet the per-user limit
 * (fs.inotify.max_user_instances, 128 by default, shared with every other process of the user) with a few
 * hundred `kubectl logs -f`. A watch descriptor is shared by the followers of the same file (inotify gives
 * one per inode and instance); it is removed with its last follower. Events only kick the followers: they run
 * from their own timers, so that a follower freed by its done() never disturbs the hub's loop. */
struct hub_watch {
        int wd;
        struct logs_follower *f;
};

struct inotify_hub {
        struct event_base *base;
        int fd;
        struct event *io;
        struct hub_watch *w;
        size_t n, allocated, users;
        struct inotify_hub *next;
};

static struct inotify_hub *hubs;

static void follower_notified(struct logs_follower *f, const struct inotify_event *e);

static void on_hub_event(evutil_socket_t fd, short what, void *userdata) {
        struct inotify_hub *h = userdata;
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

        /* bounded: if more is queued the fd stays readable */
        for (int i = 0; i < 16; i++) {
                ssize_t n = read(h->fd, buf, sizeof(buf));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        break; /* EAGAIN */
                }
                if (n == 0)
                        break;
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *e = (const struct inotify_event *) p;
                        for (size_t j = 0; j < h->n; j++)
                                if (h->w[j].wd == e->wd || (e->mask & IN_Q_OVERFLOW))
                                        follower_notified(h->w[j].f, e);
                        p += sizeof(struct inotify_event) + e->len;
                }
        }
}

static struct inotify_hub *hub_ref(struct event_base *base) {
        struct inotify_hub *h;

        for (h = hubs; h; h = h->next)
                if (h->base == base) {
                        h->users++;
                        return h;
                }
        h = calloc(1, sizeof(*h));
        if (!h)
                return NULL;
        h->base = base;
        h->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (h->fd < 0) {
                free(h);
                return NULL;
        }
        h->io = event_new(base, h->fd, EV_READ | EV_PERSIST, on_hub_event, h);
        if (!h->io || event_add(h->io, NULL) < 0) {
                if (h->io)
                        event_free(h->io);
                close(h->fd);
                free(h);
                return NULL;
        }
        h->users = 1;
        FLIST_PREPEND(hubs, h);
        return h;
}

static void hub_unref(struct inotify_hub *h) {
        if (!h || --h->users > 0)
                return;
        FLIST_REMOVE(hubs, h);
        event_free(h->io);
        close(h->fd);
        free(h->w);
        free(h);
}

/* watch path for f; the wd, or a negative errno */
static int hub_watch(struct inotify_hub *h, const char *path, uint32_t mask, struct logs_follower *f) {
        int wd;

        if (h->n == h->allocated) {
                size_t a = h->allocated ? h->allocated * 2 : 16;
                struct hub_watch *w = reallocarray(h->w, a, sizeof(*w));
                if (!w)
                        return -ENOMEM;
                h->w = w;
                h->allocated = a;
        }
        wd = inotify_add_watch(h->fd, path, mask);
        if (wd < 0)
                return negative_errno();
        h->w[h->n++] = (struct hub_watch) { .wd = wd, .f = f };
        return wd;
}

static void hub_unwatch(struct inotify_hub *h, int wd, struct logs_follower *f) {
        bool shared = false;

        if (!h || wd < 0)
                return;
        for (size_t i = 0; i < h->n;) {
                if (h->w[i].f == f && h->w[i].wd == wd) {
                        h->w[i] = h->w[--h->n];
                        continue;
                }
                if (h->w[i].wd == wd)
                        shared = true;
                i++;
        }
        if (!shared)
                (void) inotify_rm_watch(h->fd, wd); /* may be gone already */
}

struct logs_follower {
        struct event_base *base;
        char *path;
        int fd;
        dev_t dev;
        ino_t ino;
        struct inotify_hub *hub; /* NULL when not following */
        int wd;
        int wd_dir;             /* the directory: a new file at the path */
        char *name;             /* the file's name in it */
        bool old_closed;        /* the writer closed the file we read (IN_CLOSE_WRITE) */
        uint64_t replaced_usec; /* when a new file was first seen at the path, 0: not yet */
        struct event *io, *timer, *kick;
        struct logs_options o;
        struct logs_cursor c;
        struct evbuffer *out;
        logs_write_t write;
        logs_running_t still_running;
        logs_done_t done;
        void *userdata;
        bool asked;          /* still_running() asked at least once */
        bool draining;       /* not running any more: read to drain_end, then done */
        uint64_t drain_end;  /* the size when draining began: a writer that goes on cannot keep it going */
        bool check_rotation; /* the file was moved or deleted */
        bool stopped;
        bool finished; /* draining: the last lines were decoded; what is left is handing them over */
        bool blocked;  /* write() said -EAGAIN: nothing is read until logs_follower_resume() */
        bool scanning; /* looking backwards for where the last tail_lines lines start */
        struct logs_tail_scan scan;
};

static void follower_kick(struct logs_follower *f) {
        /* a zero timeout rather than event_active(): I/O is polled before it runs again (with the virtual clock of
         * the unit tests, the seam makes it active at once) */
        (void) evtimer_add_usec(f->kick, 0);
}

static void follower_finish(struct logs_follower *f, int r) {
        logs_done_t done = f->done;
        void *ud = f->userdata;

        f->stopped = true;
        event_del(f->timer);
        event_del(f->kick);
        if (r < 0)
                log_v(2, "Stopped following %s: %s", f->path, strerror(-r));
        /* last: done may free f */
        if (done)
                done(r, ud);
}

/* Hand the decoded output to write(). -EAGAIN: it takes nothing more now (what it did not take stays here, and
 * nothing more is read until logs_follower_resume()). */
static int follower_flush(struct logs_follower *f) {
        while (evbuffer_get_length(f->out) > 0) {
                struct evbuffer_iovec v;
                int r;
                if (evbuffer_peek(f->out, -1, NULL, &v, 1) < 1)
                        break;
                r = f->write(v.iov_base, v.iov_len, f->userdata);
                if (r == -EAGAIN) {
                        f->blocked = true;
                        return r;
                }
                evbuffer_drain(f->out, v.iov_len);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* One bounded step of reading. 1: more to read, 0: caught up with the end of the file. */
static int follower_pump(struct logs_follower *f) {
        struct decoder d = { .o = &f->o, .c = &f->c, .out = f->out };
        struct stat st;
        uint64_t size, end;
        int r;

        if (f->c.limit_reached)
                return 0;
        if (fstat(f->fd, &st) < 0)
                return negative_errno();
        size = st.st_size > 0 ? (uint64_t) st.st_size : 0;
        if (size < f->c.offset) {
                /* truncated (copytruncate): start over */
                log_v(2, "Log file %s was truncated, reading it from the start", f->path);
                f->c.offset = 0;
                f->c.line.active = false;
        }
        if (f->draining && size > f->drain_end)
                size = MAX(f->drain_end, f->c.offset);
        end = MIN(size, f->c.offset + PUMP_MAX);
        r = decode_range(f->fd, &d, end, false);
        if (r < 0)
                return r;
        r = follower_flush(f);
        if (r < 0)
                return r;
        return end < size && !f->c.limit_reached ? 1 : 0;
}

/* Switch to a new file at the path if the old one was replaced: once the old one's writer closed it (everything it
 * wrote has been read by the caller's pump just before), after ROTATION_GRACE_USEC, or at once with force (the
 * container stopped: nothing more comes). 1 if switched. */
static int follower_reopen(struct logs_follower *f, bool force) {
        struct stat st;
        _cleanup_close_ int fd = -1;
        int wd;

        if (stat(f->path, &st) < 0)
                return errno == ENOENT ? 0 : negative_errno();
        if (st.st_dev == f->dev && st.st_ino == f->ino) {
                f->check_rotation = false;
                return 0;
        }
        if (!f->replaced_usec)
                f->replaced_usec = now_usec();
        if (!force && !f->old_closed && now_usec() - f->replaced_usec < ROTATION_GRACE_USEC)
                return 0; /* keep reading the old one */
        fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return errno == ENOENT ? 0 : negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return 0;

        log_v(2, "Log file %s was replaced, following the new one", f->path);
        hub_unwatch(f->hub, f->wd, f);
        wd = f->hub ? hub_watch(f->hub, f->path, WATCH_MASK, f) : -1;
        f->wd = wd; /* on failure the timer still notices new data */
        close(f->fd);
        f->fd = TAKE_FD(fd);
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        f->c.offset = 0;
        f->c.line.active = false;
        f->check_rotation = false;
        f->old_closed = false;
        f->replaced_usec = 0;
        if (f->draining)
                f->drain_end = st.st_size > 0 ? (uint64_t) st.st_size : 0; /* the new file as it is now */
        return 1;
}

/* What to do after a step: wait for events, read on at once, or stop with done(r). */
enum step_result { STEP_WAIT, STEP_AGAIN, STEP_DONE };

static enum step_result follower_step_internal(struct logs_follower *f, bool tick, int *ret) {
        int r;

        if (f->blocked) {
                /* the consumer takes nothing now: what was decoded waits, nothing more is read */
                r = follower_flush(f);
                if (r == -EAGAIN)
                        return STEP_WAIT;
                if (r < 0) {
                        *ret = r;
                        return STEP_DONE;
                }
                f->blocked = false;
        }
        if (f->scanning) {
                r = logs_tail_scan_step(f->fd, &f->scan, TAIL_SCAN_STEP);
                if (r < 0) {
                        *ret = r;
                        return STEP_DONE;
                }
                if (r == 0)
                        return STEP_AGAIN;
                f->scanning = false;
                f->c.offset = f->scan.offset;
                return STEP_AGAIN;
        }
        r = follower_pump(f);
        if (r == -EAGAIN)
                return STEP_WAIT;
        if (r < 0) {
                *ret = r;
                return STEP_DONE;
        }
        if (f->c.limit_reached) {
                *ret = 0;
                return STEP_DONE;
        }
        if (r > 0)
                return STEP_AGAIN;

        /* caught up with the end of the file; a follower whose container stopped goes on at once with a file that
         * replaced it (a rotation) and drains that one too; a read that does not follow ends with its file */
        if (f->hub && (f->check_rotation || tick || f->draining)) {
                r = follower_reopen(f, f->draining);
                if (r < 0) {
                        *ret = r;
                        return STEP_DONE;
                }
                if (r > 0)
                        return STEP_AGAIN;
        }
        if (f->draining) {
                /* caught up with drain_end (the pump stopped there): the unterminated rest and the unfinished
                 * partial lines, then done */
                struct decoder d = { .o = &f->o, .c = &f->c, .out = f->out };

                if (!f->finished) {
                        r = decode_range(f->fd, &d, MAX(f->drain_end, f->c.offset), true);
                        if (r >= 0)
                                r = finish_all(&d);
                        if (r < 0) {
                                *ret = r;
                                return STEP_DONE;
                        }
                        f->finished = true;
                }
                r = follower_flush(f);
                if (r == -EAGAIN)
                        return STEP_WAIT;
                *ret = r < 0 ? r : 0;
                return STEP_DONE;
        }
        if (tick || !f->asked) {
                f->asked = true;
                if (!f->hub || (f->still_running && !f->still_running(f->userdata))) {
                        struct stat st;
                        /* read what came in meanwhile (up to the size now), then the unfinished rest */
                        if (fstat(f->fd, &st) < 0) {
                                *ret = negative_errno();
                                return STEP_DONE;
                        }
                        f->draining = true;
                        f->drain_end = st.st_size > 0 ? (uint64_t) st.st_size : 0;
                        return STEP_AGAIN;
                }
        }
        return STEP_WAIT;
}

static void follower_step(struct logs_follower *f, bool tick) {
        int r = 0;

        if (f->stopped)
                return;
        switch (follower_step_internal(f, tick, &r)) {
        case STEP_WAIT:
                break;
        case STEP_AGAIN:
                follower_kick(f);
                break;
        case STEP_DONE:
                follower_finish(f, r); /* may free f */
                break;
        }
}

static void on_kick(evutil_socket_t fd, short what, void *userdata) {
        follower_step(userdata, false);
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        struct logs_follower *f = userdata;

        /* periodic: the next tick is armed before the step, which may end the follow (follower_finish stops it) */
        (void) evtimer_add_usec(f->timer, FOLLOW_PERIOD_USEC);
        follower_step(f, true);
}

static void follower_notified(struct logs_follower *f, const struct inotify_event *e) {
        if (e->mask & IN_Q_OVERFLOW)
                f->check_rotation = true;
        else if (e->wd == f->wd_dir) {
                if (e->len > 0 && streq(e->name, f->name))
                        f->check_rotation = true; /* a new file at the path */
        } else if (e->wd == f->wd) {
                if (e->mask & (IN_MOVE_SELF | IN_DELETE_SELF | IN_IGNORED))
                        f->check_rotation = true;
                if (e->mask & IN_CLOSE_WRITE)
                        f->old_closed = true;
        }
        if (!f->stopped && !f->blocked)
                follower_kick(f);
}

void logs_follower_resume(struct logs_follower *f) {
        if (!f || f->stopped || !f->blocked)
                return;
        follower_kick(f);
}

struct logs_follower *logs_follower_free(struct logs_follower *f) {
        if (!f)
                return NULL;
        hub_unwatch(f->hub, f->wd, f);
        hub_unwatch(f->hub, f->wd_dir, f);
        hub_unref(f->hub);
        if (f->timer)
                event_free(f->timer);
        if (f->kick)
                event_free(f->kick);
        if (f->fd >= 0)
                close(f->fd);
        if (f->out)
                evbuffer_free(f->out);
        logs_cursor_done(&f->c);
        free(f->path);
        free(f->name);
        free(f);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct logs_follower *, logs_follower_free)

int logs_follow(struct event_base *base, const char *path, const struct logs_options *o,
                const struct logs_cursor *start, logs_write_t write, logs_running_t still_running, logs_done_t done,
                void *userdata, struct logs_follower **ret) {
        _cleanup_(logs_follower_freep) struct logs_follower *f = NULL;
        struct stat st;
        int r;

        if (!base || !path || !o || !write || !ret)
                return -EINVAL;

        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        f->fd = f->wd = f->wd_dir = -1;
        f->base = base;
        f->o = *o;
        f->write = write;
        f->still_running = still_running;
        f->done = done;
        f->userdata = userdata;
        if (start) {
                r = logs_cursor_copy(start, &f->c);
                if (r < 0)
                        return r;
        } else
                logs_cursor_init(&f->c, o);

        f->path = strdup(path);
        f->out = evbuffer_new();
        if (!f->path || !f->out)
                return -ENOMEM;

        f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (f->fd < 0)
                return negative_errno();
        if (fstat(f->fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        if (!start && o->tail_lines >= 0) {
                /* the last tail_lines lines: found from the loop, a step at a time */
                logs_tail_scan_init(&f->scan, st.st_size > 0 ? (uint64_t) st.st_size : 0, o->tail_lines);
                f->scanning = true;
        }

        f->timer = evtimer_new(base, on_timer, f);
        f->kick = evtimer_new(base, on_kick, f);
        if (!f->timer || !f->kick)
                return -ENOMEM;
        if (o->follow || !still_running) {
                /* following: woken by inotify (one instance per loop), and by the timer should that fail */
                f->hub = hub_ref(base);
                if (!f->hub)
                        return errno > 0 ? -errno : -ENOMEM;
                r = hub_watch(f->hub, path, WATCH_MASK, f);
                if (r < 0)
                        return r;
                f->wd = r;
                {
                        /* the directory too: a rotation's new file is seen at once (else at the next tick) */
                        _cleanup_free_ char *dir = strdup(path);
                        char *slash = dir ? strrchr(dir, '/') : NULL;
                        if (!dir)
                                return -ENOMEM;
                        f->name = strdup(slash ? slash + 1 : path);
                        if (!f->name)
                                return -ENOMEM;
                        if (slash) {
                                *slash = '\0';
                                r = hub_watch(f->hub, *dir ? dir : "/", WATCH_DIR_MASK, f);
                                f->wd_dir = r >= 0 ? r : -1; /* without it the timer notices the new file */
                        }
                }
                if (evtimer_add_usec(f->timer, FOLLOW_PERIOD_USEC) < 0)
                        return -EIO;
        }
        /* the first read from the loop: callbacks never run inside this call */
        follower_kick(f);

        *ret = TAKE_PTR(f);
        return 0;
}
