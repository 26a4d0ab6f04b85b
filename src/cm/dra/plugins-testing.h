/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* For the unit tests only: which plugin the registry (plugins.h) would call, and its health streams. */

#include "cm/dra/plugins.h"

/* Health streams open now. */
unsigned dra_plugins_health_streams(const struct dra_plugins *p);

/* The newest plugin of the driver (the one dra_plugins_call calls): its endpoint and service (borrowed), NULL when
 * none. */
const char *dra_plugins_endpoint(struct dra_plugins *p, const char *driver, const char **ret_service);
