/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* For the unit tests only: the size of the stats provider's (summary.h) CPU sample cache. */

#include <stddef.h>

#include "stats/summary.h"

/* Number of entries in the CPU sample cache. */
size_t stats_provider_cache_size(struct stats_provider *p);
