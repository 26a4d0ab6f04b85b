/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* For the unit tests only: what the DRA manager (manager.h) has in flight, which nothing in src/ needs to know. */

#include "cm/dra/manager.h"

/* NodeUnprepareResources calls in flight. */
unsigned dra_manager_unprepares_in_flight(const struct dra_manager *m);
