/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* For the unit tests only: what a pool (workpool.h) holds, which nothing in src/ needs to know. */

#include "basic/workpool.h"

/* Threads written off: still inside a job whose deadline passed. */
unsigned workpool_stuck(const struct workpool *p);

/* Jobs of every pool in the process not yet delivered, those past their deadline excepted: work whose done() the
 * loop will run without any timer firing. Tests on the virtual clock wait for them before moving it. */
unsigned workpool_in_flight(void);
