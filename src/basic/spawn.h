/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Run a program as a child process watched by the event loop (exec credential plugins): its stdin gets a small
 * input, stdout and stderr are collected up to a cap, a timeout kills it. The child runs in its own process
 * group, and a kill (timeout, cap, cancel) is sent to the whole group, so a shell script's children go too.
 * Its exit is seen through a pidfd on the loop; nothing here blocks or installs a SIGCHLD handler. The process
 * must ignore SIGPIPE (ckubelet's main does): a child that does not read its input makes the write fail. */

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct spawn_result {
        int exit_code;      /* 0..255 when it exited, -1 when killed by a signal */
        int signal;         /* the signal that killed it, 0 if it exited */
        bool timed_out;     /* killed at the timeout */
        bool output_capped; /* killed because stdout or stderr went over its cap */
        const char *out;    /* stdout (NUL-terminated, may hold NULs), valid during the callback */
        size_t out_len;
        const char *err; /* stderr, likewise */
        size_t err_len;
};

typedef void (*spawn_cb)(const struct spawn_result *r, void *userdata);

struct spawn;

/* Starts path with argv (argv[0] included) and envp; writes input to its stdin and closes it. The callback runs
 * exactly once, on the loop, never from inside this call, after the child has been reaped. Returns a negative
 * errno when nothing could be started (the callback will not run): -E2BIG for an input over 64 KiB. */
int spawn_start(struct event_base *base, const char *path, char *const argv[], char *const envp[], const void *input,
                size_t input_len, size_t out_max, size_t err_max, uint64_t timeout_usec, spawn_cb cb, void *userdata,
                struct spawn **ret);
/* Kills the child's process group (SIGKILL), reaps it and frees; the callback does not run. Accepts NULL. */
struct spawn *spawn_cancel(struct spawn *s);
