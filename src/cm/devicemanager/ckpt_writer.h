/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The device manager's checkpoint, written off the loop and coalesced (issue 26): a plugin's ListAndWatch can
 * send updates without pause, and each used to write and fsync the checkpoint on the event loop. Now the loop
 * hands the newest text over; one worker thread writes it atomically (write_file_atomic); texts handed over
 * while a write runs replace each other, and only the last is written next. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

struct dm_ckpt_writer;

int dm_ckpt_writer_new(struct event_base *base, const char *path, struct dm_ckpt_writer **ret);
/* Writes the pending text, if any, before returning (shutdown: the last state is kept). Accepts NULL. */
struct dm_ckpt_writer *dm_ckpt_writer_free(struct dm_ckpt_writer *w);
/* Takes text (malloc'ed): written soon, unless a newer text replaces it first. */
void dm_ckpt_writer_set(struct dm_ckpt_writer *w, char *text);
