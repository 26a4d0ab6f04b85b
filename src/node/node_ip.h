/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The node's IP address (nodeutil / utilnet.ChooseHostInterface): --node-ip when given, else the first IPv4
 * address of the default route's interface, else of any up non-loopback interface, else 127.0.0.1. */
int node_ip_detect(const char *node_ip_flag, char **ret);
