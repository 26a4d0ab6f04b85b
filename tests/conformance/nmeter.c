/* A stand-in for busybox's nmeter applet in the node conformance tier's test images (Debian's busybox-static
 * lacks it). Upstream's container lifecycle specs take millisecond timestamps with
 *     date -u +%FT$(nmeter -d0 '%3t' | head -n1)Z
 * so this prints, like nmeter, one line per interval (-d MSEC, default 1000; 0: no pause) made of the format's
 * text, where %t is the time of day (UTC, as the containers have no TZ) HH:MM:SS and %Nt adds N digits of the
 * second's fraction (N at most 6). Other %-items (nmeter's system counters) print nothing. It stops when it
 * cannot write (head closed the pipe) or on SIGPIPE. Written for the tests; no busybox code. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int put_time(char *buf, size_t size, int digits) {
        struct timespec ts;
        struct tm tm;
        long frac;
        int n;

        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        n = snprintf(buf, size, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
        if (digits > 0) {
                frac = ts.tv_nsec;
                for (int i = digits; i < 9; i++)
                        frac /= 10;
                n += snprintf(buf + n, size - n, ".%0*ld", digits, frac);
        }
        return n;
}

int main(int argc, char **argv) {
        long delay_ms = 1000;
        const char *fmt = NULL;

        for (int i = 1; i < argc; i++) {
                if (strncmp(argv[i], "-d", 2) == 0) {
                        const char *v = argv[i][2] ? argv[i] + 2 : (i + 1 < argc ? argv[++i] : "1000");
                        delay_ms = strtol(v, NULL, 10);
                } else if (!fmt)
                        fmt = argv[i];
        }
        if (!fmt) {
                fprintf(stderr, "usage: nmeter [-d MSEC] FORMAT\n");
                return 1;
        }
        for (;;) {
                char line[4096];
                size_t n = 0;
                for (const char *p = fmt; *p && n < sizeof(line) - 64; p++) {
                        if (*p != '%') {
                                line[n++] = *p;
                                continue;
                        }
                        int digits = 0;
                        if (p[1] >= '0' && p[1] <= '9')
                                digits = *++p - '0';
                        if (digits > 6)
                                digits = 6;
                        if (!p[1])
                                break;
                        p++;
                        if (*p == 't')
                                n += put_time(line + n, sizeof(line) - n, digits);
                        else if (*p == '%')
                                line[n++] = '%';
                }
                line[n++] = '\n';
                if (fwrite(line, 1, n, stdout) != n || fflush(stdout) != 0)
                        return 0;
                if (delay_ms > 0) {
                        struct timespec d = { delay_ms / 1000, (delay_ms % 1000) * 1000000L };
                        while (nanosleep(&d, &d) < 0 && errno == EINTR)
                                ;
                }
        }
}
