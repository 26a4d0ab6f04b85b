/* SPDX-License-Identifier: Apache-2.0 */
/* A child process on the event loop: posix_spawn with pipes, a pidfd for its exit, a timer for its deadline. */
#include "basic/spawn.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/timer.h"

#define SPAWN_INPUT_MAX (64u * 1024u)

struct spawn_buf {
        char *data;
        size_t len, max;
};

struct spawn {
        struct event_base *base;
        pid_t pid;
        int pidfd, in_fd, out_fd, err_fd;
        struct event *ev_pid, *ev_in, *ev_out, *ev_err, *ev_timer;
        char *input;
        size_t input_len, input_off;
        struct spawn_buf out, err;
        bool timed_out, capped, killed;
        bool orphan; /* cancelled before it could be reaped: the pidfd event reaps and frees it */
        spawn_cb cb;
        void *userdata;
};

static void close_fd(int *fd) {
        if (*fd >= 0) {
                close(*fd);
                *fd = -1;
        }
}

static void free_event(struct event **ev) {
        if (*ev) {
                event_free(*ev);
                *ev = NULL;
        }
}

static void spawn_free(struct spawn *s) {
        free_event(&s->ev_pid);
        free_event(&s->ev_in);
        free_event(&s->ev_out);
        free_event(&s->ev_err);
        free_event(&s->ev_timer);
        close_fd(&s->pidfd);
        close_fd(&s->in_fd);
        close_fd(&s->out_fd);
        close_fd(&s->err_fd);
        free(s->input);
        free(s->out.data);
        free(s->err.data);
        free(s);
}

static void kill_group(struct spawn *s) {
        if (s->killed)
                return;
        s->killed = true;
        /* the child made its own process group; the group goes, the child's pid stays unreaped until we wait */
        (void) kill(-s->pid, SIGKILL);
        (void) kill(s->pid, SIGKILL);
}

/* Read what is there (non-blocking). false at EOF or an error (the fd is done). */
static bool drain(struct spawn *s, int *fd, struct spawn_buf *b, struct event **ev) {
        char tmp[16384];

        for (;;) {
                ssize_t n = read(*fd, tmp, sizeof(tmp));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return true;
                if (n <= 0) {
                        free_event(ev);
                        close_fd(fd);
                        return false;
                }
                if (b->len + (size_t) n > b->max) {
                        /* over the cap: keep what fits, stop reading, kill the child */
                        size_t fit = b->max - b->len;
                        char *nd = realloc(b->data, b->len + fit + 1);
                        if (nd) {
                                memcpy(nd + b->len, tmp, fit);
                                b->data = nd;
                                b->len += fit;
                                b->data[b->len] = '\0';
                        }
                        s->capped = true;
                        kill_group(s);
                        free_event(ev);
                        close_fd(fd);
                        return false;
                } else {
                        char *nd = realloc(b->data, b->len + (size_t) n + 1);
                        if (!nd) {
                                kill_group(s);
                                free_event(ev);
                                close_fd(fd);
                                return false;
                        }
                        memcpy(nd + b->len, tmp, (size_t) n);
                        b->data = nd;
                        b->len += (size_t) n;
                        b->data[b->len] = '\0';
                }
        }
}

static void on_out(evutil_socket_t fd, short what, void *userdata) {
        struct spawn *s = userdata;
        (void) drain(s, &s->out_fd, &s->out, &s->ev_out);
}

static void on_err(evutil_socket_t fd, short what, void *userdata) {
        struct spawn *s = userdata;
        (void) drain(s, &s->err_fd, &s->err, &s->ev_err);
}

static void on_in(evutil_socket_t fd, short what, void *userdata) {
        struct spawn *s = userdata;

        while (s->input_off < s->input_len) {
                ssize_t n = write(s->in_fd, s->input + s->input_off, s->input_len - s->input_off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                if (n < 0)
                        break; /* EPIPE: it does not read its input; its answer will say so */
                s->input_off += (size_t) n;
        }
        free_event(&s->ev_in);
        close_fd(&s->in_fd);
}

static void on_timeout(evutil_socket_t fd, short what, void *userdata) {
        struct spawn *s = userdata;

        s->timed_out = true;
        kill_group(s);
}

static void on_exit_(evutil_socket_t fd, short what, void *userdata) {
        struct spawn *s = userdata;
        siginfo_t info = {};
        struct spawn_result r = {};

        if (waitid(P_PID, (id_t) s->pid, &info, WEXITED | WNOHANG) < 0 || info.si_pid == 0)
                return; /* not yet (spurious wake-up) */
        if (s->orphan) {
                spawn_free(s);
                return;
        }
        /* what it wrote before it went; a descendant that keeps the pipes open is not waited for */
        if (s->out_fd >= 0)
                (void) drain(s, &s->out_fd, &s->out, &s->ev_out);
        if (s->err_fd >= 0)
                (void) drain(s, &s->err_fd, &s->err, &s->ev_err);
        if (!s->killed)
                (void) kill(-s->pid, SIGKILL); /* leftovers of its group */
        r = (struct spawn_result) {
                .exit_code = info.si_code == CLD_EXITED ? info.si_status : -1,
                .signal = info.si_code == CLD_EXITED ? 0 : info.si_status,
                .timed_out = s->timed_out,
                .output_capped = s->capped,
                .out = s->out.data ? s->out.data : "",
                .out_len = s->out.len,
                .err = s->err.data ? s->err.data : "",
                .err_len = s->err.len,
        };
        s->cb(&r, s->userdata);
        spawn_free(s);
}

static int set_nonblock(int fd) {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

int spawn_start(struct event_base *base, const char *path, char *const argv[], char *const envp[], const void *input,
                size_t input_len, size_t out_max, size_t err_max, uint64_t timeout_usec, spawn_cb cb, void *userdata,
                struct spawn **ret) {
        int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t all, none;
        struct spawn *s;
        int r;

        assert(base && path && argv && cb);
        if (input_len > SPAWN_INPUT_MAX)
                return -E2BIG;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (struct spawn) {
                .base = base,
                .pid = -1,
                .pidfd = -1,
                .in_fd = -1,
                .out_fd = -1,
                .err_fd = -1,
                .out = { .max = out_max },
                .err = { .max = err_max },
                .cb = cb,
                .userdata = userdata,
        };
        if (input_len > 0) {
                s->input = malloc(input_len);
                if (!s->input) {
                        free(s);
                        return -ENOMEM;
                }
                memcpy(s->input, input, input_len);
                s->input_len = input_len;
        }
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
                r = -errno;
                goto fail_pipes;
        }
        if (posix_spawn_file_actions_init(&fa) != 0) {
                r = -ENOMEM;
                goto fail_pipes;
        }
        if (posix_spawnattr_init(&attr) != 0) {
                posix_spawn_file_actions_destroy(&fa);
                r = -ENOMEM;
                goto fail_pipes;
        }
        sigfillset(&all);
        sigemptyset(&none);
        /* stdin/stdout/stderr to the pipes, nothing else inherited; its own process group; default signal
         * dispositions (the kubelet ignores SIGPIPE) and an empty mask */
        r = posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
        if (r == 0)
                r = posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
        if (r == 0)
                r = posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
        if (r == 0)
                r = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
        if (r == 0)
                r = posix_spawnattr_setflags(&attr,
                                             POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
        if (r == 0)
                r = posix_spawnattr_setpgroup(&attr, 0);
        if (r == 0)
                r = posix_spawnattr_setsigdefault(&attr, &all);
        if (r == 0)
                r = posix_spawnattr_setsigmask(&attr, &none);
        if (r == 0)
                r = posix_spawn(&s->pid, path, &fa, &attr, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        if (r != 0) {
                r = -r;
                s->pid = -1;
                goto fail_pipes;
        }
        close(in[0]);
        close(out[1]);
        close(err[1]);
        s->in_fd = in[1];
        s->out_fd = out[0];
        s->err_fd = err[0];
        in[0] = in[1] = out[0] = out[1] = err[0] = err[1] = -1;

        s->pidfd = pidfd_open(s->pid, 0);
        if (s->pidfd < 0) {
                r = -errno;
                goto fail_child;
        }
        (void) fcntl(s->pidfd, F_SETFD, FD_CLOEXEC);
        if (set_nonblock(s->in_fd) < 0 || set_nonblock(s->out_fd) < 0 || set_nonblock(s->err_fd) < 0) {
                r = -errno;
                goto fail_child;
        }
        s->ev_pid = event_new(base, s->pidfd, EV_READ | EV_PERSIST, on_exit_, s);
        s->ev_out = event_new(base, s->out_fd, EV_READ | EV_PERSIST, on_out, s);
        s->ev_err = event_new(base, s->err_fd, EV_READ | EV_PERSIST, on_err, s);
        s->ev_in = event_new(base, s->in_fd, EV_WRITE | EV_PERSIST, on_in, s);
        s->ev_timer = evtimer_new(base, on_timeout, s);
        if (!s->ev_pid || !s->ev_out || !s->ev_err || !s->ev_in || !s->ev_timer || event_add(s->ev_pid, NULL) < 0 ||
            event_add(s->ev_out, NULL) < 0 || event_add(s->ev_err, NULL) < 0 || event_add(s->ev_in, NULL) < 0) {
                r = -ENOMEM;
                goto fail_child;
        }
        if (timeout_usec > 0)
                evtimer_add_usec(s->ev_timer, timeout_usec);
        if (ret)
                *ret = s;
        return 0;

fail_child:
        kill_group(s);
        (void) waitpid(s->pid, NULL, 0); /* SIGKILLed a moment ago */
fail_pipes:
        for (size_t i = 0; i < 2; i++) {
                close_fd(&in[i]);
                close_fd(&out[i]);
                close_fd(&err[i]);
        }
        spawn_free(s);
        return r;
}

struct spawn *spawn_cancel(struct spawn *s) {
        if (!s)
                return NULL;
        kill_group(s);
        /* a SIGKILLed process is normally gone at once; if not, the pidfd event reaps it later */
        for (int i = 0; i < 20; i++) {
                pid_t p = waitpid(s->pid, NULL, WNOHANG);
                if (p == s->pid || (p < 0 && errno == ECHILD)) {
                        spawn_free(s);
                        return NULL;
                }
                struct timespec ts = { .tv_nsec = 1000000 };
                nanosleep(&ts, NULL);
        }
        s->orphan = true;
        free_event(&s->ev_in);
        free_event(&s->ev_out);
        free_event(&s->ev_err);
        free_event(&s->ev_timer);
        return NULL;
}
