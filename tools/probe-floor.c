/* SPDX-License-Identifier: Apache-2.0 */
/* ckubelet-probe-floor: what a probe costs the kernel alone, as the floor of the probe engine's cost.
 *
 *   ckubelet-probe-floor [--ops N] [--rate R] [--path /index.html] [--mode tcp|http|both] HOST:PORT...
 *
 * For each mode it runs N operations round-robin over the endpoints, each the least a non-blocking prober on
 * an event loop has to do, and nothing else:
 *
 *   tcp   socket (non-blocking), connect, wait until writable (poll), SO_ERROR, SO_LINGER 0, close
 *   http  socket (non-blocking), connect, wait until writable, SO_ERROR, send the GET the prober sends
 *         (Host, User-Agent kube-probe, Accept, Connection: close), read the response until the server closes,
 *         check the status line, close
 *
 * and prints the process's CPU time per operation (user and system, getrusage), the wall time per operation
 * and the system calls per operation (counted by construction). --rate paces the operations (R per second,
 * as a prober does: a nanosleep until each one is due, counted as a system call) instead of running them back to
 * back. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_ENDPOINTS 4096

struct endpoint {
        struct sockaddr_in sa;
        char hostport[64];
        char request[512];
        size_t request_len;
};

static uint64_t now_ns(int clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static uint64_t rusage_ns(bool sys) {
        struct rusage ru;
        const struct timeval *tv;
        getrusage(RUSAGE_SELF, &ru);
        tv = sys ? &ru.ru_stime : &ru.ru_utime;
        return (uint64_t) tv->tv_sec * 1000000000u + (uint64_t) tv->tv_usec * 1000u;
}

static unsigned long syscalls;

/* a non-blocking connect and the wait for it; returns the fd or -1 */
static int dial(const struct endpoint *e, int timeout_ms) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), err = 0;
        socklen_t len = sizeof(err);
        struct pollfd p;

        syscalls++;
        if (fd < 0)
                return -1;
        syscalls++;
        if (connect(fd, (const struct sockaddr *) &e->sa, sizeof(e->sa)) < 0 && errno != EINPROGRESS) {
                close(fd);
                syscalls++;
                return -1;
        }
        p = (struct pollfd) { .fd = fd, .events = POLLOUT };
        syscalls += 2;
        if (poll(&p, 1, timeout_ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0) {
                close(fd);
                syscalls++;
                return -1;
        }
        return fd;
}

static int op_tcp(const struct endpoint *e) {
        struct linger l = { .l_onoff = 1, .l_linger = 0 };
        int fd = dial(e, 1000);

        if (fd < 0)
                return -1;
        (void) setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
        close(fd);
        syscalls += 2;
        return 0;
}

static int op_http(const struct endpoint *e) {
        char buf[16384];
        size_t got = 0;
        int fd = dial(e, 1000), ok = -1;

        if (fd < 0)
                return -1;
        syscalls++;
        if (send(fd, e->request, e->request_len, MSG_NOSIGNAL) != (ssize_t) e->request_len)
                goto out;
        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                ssize_t n;
                syscalls++;
                if (poll(&p, 1, 1000) != 1)
                        goto out;
                syscalls++;
                n = recv(fd, buf + got, sizeof(buf) - got, 0);
                if (n < 0 && errno == EAGAIN)
                        continue;
                if (n <= 0)
                        break;
                got += (size_t) n;
                if (got == sizeof(buf))
                        got = 12; /* keep the status line */
        }
        ok = got >= 12 && memcmp(buf, "HTTP/1.", 7) == 0 && buf[9] >= '2' && buf[9] <= '3' ? 0 : -1;
out:
        close(fd);
        syscalls++;
        return ok;
}

static int parse_endpoint(const char *s, const char *path, struct endpoint *e) {
        char host[46];
        const char *colon = strrchr(s, ':');
        long port;
        int n;

        if (!colon || (size_t) (colon - s) >= sizeof(host))
                return -1;
        memcpy(host, s, (size_t) (colon - s));
        host[colon - s] = '\0';
        port = strtol(colon + 1, NULL, 10);
        if (port < 1 || port > 65535)
                return -1;
        *e = (struct endpoint) {};
        e->sa.sin_family = AF_INET;
        e->sa.sin_port = htons((uint16_t) port);
        if (inet_pton(AF_INET, host, &e->sa.sin_addr) != 1)
                return -1;
        snprintf(e->hostport, sizeof(e->hostport), "%s:%ld", host, port);
        n = snprintf(e->request, sizeof(e->request),
                     "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: kube-probe/1.31\r\nAccept: */*\r\n"
                     "Connection: close\r\n\r\n",
                     path, e->hostport);
        if (n < 0 || (size_t) n >= sizeof(e->request))
                return -1;
        e->request_len = (size_t) n;
        return 0;
}

static void run(const char *mode, int (*op)(const struct endpoint *), const struct endpoint *eps, size_t n_eps,
                unsigned long ops, double rate) {
        uint64_t w0, u0, s0, w1, u1, s1, step = rate > 0 ? (uint64_t) (1e9 / rate) : 0, next;
        unsigned long failed = 0;

        /* warm up: one round over the endpoints */
        for (size_t i = 0; i < n_eps; i++)
                (void) op(&eps[i]);
        syscalls = 0;
        w0 = now_ns(CLOCK_MONOTONIC);
        u0 = rusage_ns(false);
        s0 = rusage_ns(true);
        next = w0;
        for (unsigned long i = 0; i < ops; i++) {
                if (step) {
                        uint64_t now = now_ns(CLOCK_MONOTONIC);
                        next += step;
                        if (next > now) {
                                struct timespec ts = { .tv_sec = (time_t) ((next - now) / 1000000000u),
                                                       .tv_nsec = (long) ((next - now) % 1000000000u) };
                                nanosleep(&ts, NULL);
                                syscalls++; /* the sleep between operations, the prober's epoll_wait */
                        }
                }
                if (op(&eps[i % n_eps]) < 0)
                        failed++;
        }
        w1 = now_ns(CLOCK_MONOTONIC);
        u1 = rusage_ns(false);
        s1 = rusage_ns(true);
        printf("%-4s %lu ops over %zu endpoints%s: CPU %.1f µs/op (user %.1f, sys %.1f), wall %.1f µs/op, "
               "%.2f syscalls/op, %lu failed\n",
               mode, ops, n_eps, step ? " (paced)" : "", (double) (u1 - u0 + s1 - s0) / 1e3 / (double) ops,
               (double) (u1 - u0) / 1e3 / (double) ops, (double) (s1 - s0) / 1e3 / (double) ops,
               (double) (w1 - w0) / 1e3 / (double) ops, (double) syscalls / (double) ops, failed);
        fflush(stdout);
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "ops", required_argument, NULL, 'n' },  { "rate", required_argument, NULL, 'r' },
                { "path", required_argument, NULL, 'p' }, { "mode", required_argument, NULL, 'm' },
                { "help", no_argument, NULL, 'h' },       {},
        };
        static struct endpoint eps[MAX_ENDPOINTS];
        const char *path = "/index.html", *mode = "both";
        unsigned long ops = 20000;
        double rate = 0;
        size_t n = 0;
        int c;

        while ((c = getopt_long(argc, argv, "n:r:p:m:h", options, NULL)) >= 0)
                switch (c) {
                case 'n':
                        ops = strtoul(optarg, NULL, 10);
                        break;
                case 'r':
                        rate = strtod(optarg, NULL);
                        break;
                case 'p':
                        path = optarg;
                        break;
                case 'm':
                        mode = optarg;
                        break;
                default:
                        fprintf(stderr,
                                "usage: %s [--ops N] [--rate R] [--path P] [--mode tcp|http|both] HOST:PORT...\n",
                                argv[0]);
                        return c == 'h' ? 0 : 2;
                }
        for (int i = optind; i < argc; i++) {
                if (n == MAX_ENDPOINTS || parse_endpoint(argv[i], path, &eps[n]) < 0) {
                        fprintf(stderr, "invalid or too many endpoints: %s\n", argv[i]);
                        return 2;
                }
                n++;
        }
        if (n == 0 || ops == 0) {
                fprintf(stderr, "no endpoints or no operations\n");
                return 2;
        }
        if (strcmp(mode, "tcp") == 0 || strcmp(mode, "both") == 0)
                run("tcp", op_tcp, eps, n, ops, rate);
        if (strcmp(mode, "http") == 0 || strcmp(mode, "both") == 0)
                run("http", op_http, eps, n, ops, rate);
        return 0;
}
