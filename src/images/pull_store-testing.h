/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* For the unit tests only: what the pull store (pull_store.h) holds in memory and has still to write. */

#include <jansson.h>
#include <stdbool.h>

#include "images/pull_store.h"

/* the record of image_ref in memory (borrowed), whether an intent for image is known, the writes not finished */
const json_t *pull_store_record(const struct pull_store *s, const char *image_ref);
bool pull_store_intent_known(const struct pull_store *s, const char *image);
unsigned pull_store_writes_in_flight(const struct pull_store *s);
