/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* For the unit tests only: how much the correlator (correlator.h) holds, which nothing in src/ needs to know. */

#include <stddef.h>

#include "events/correlator.h"

/* Entries held by the three caches together (each at most lru_size). */
size_t event_correlator_entries(const struct event_correlator *c);
