/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* For the unit tests only: when the reaper (reaper.h) has finished removing a pod's directory, and how. */

#include "volumes/reaper.h"

/* Called on the loop after each removal (r: 0 removed, < 0 left for the next scan). */
void vol_reaper_set_notify(struct vol_reaper *r, void (*notify)(const char *uid, int r, void *userdata),
                           void *userdata);
