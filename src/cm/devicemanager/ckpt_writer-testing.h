/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* For the unit tests only: what the checkpoint writer (ckpt_writer.h) did, which nothing in src/ needs to know. */

#include <stdbool.h>
#include <stdint.h>

#include "cm/devicemanager/ckpt_writer.h"

/* Writes done so far, and whether one runs or waits. */
uint64_t dm_ckpt_writer_writes(const struct dm_ckpt_writer *w);
bool dm_ckpt_writer_busy(const struct dm_ckpt_writer *w);
