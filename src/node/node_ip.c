/* SPDX-License-Identifier: Apache-2.0 */
#include "node/node_ip.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"

/* the interface of the IPv4 default route, from /proc/net/route */
static int default_route_interface(char ret[static IF_NAMESIZE]) {
        _cleanup_fclose_ FILE *f = fopen("/proc/net/route", "re");
        char line[512];

        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                char ifname[IF_NAMESIZE + 1];
                unsigned long dest;
                if (sscanf(line, "%16s %lx", ifname, &dest) == 2 && dest == 0 && strlen(ifname) < IF_NAMESIZE) {
                        strcpy(ret, ifname);
                        return 0;
                }
        }
        return -ENOENT;
}

int node_ip_detect(const char *node_ip_flag, char **ret) {
        char ifname[IF_NAMESIZE] = "", buf[INET6_ADDRSTRLEN], best[INET6_ADDRSTRLEN] = "";
        struct ifaddrs *ifa = NULL;
        char *s;

        if (!isempty(node_ip_flag))
                s = strdup(node_ip_flag);
        else {
                (void) default_route_interface(ifname);
                if (getifaddrs(&ifa) == 0) {
                        for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
                                if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) ||
                                    (i->ifa_flags & IFF_LOOPBACK))
                                        continue;
                                if (!inet_ntop(AF_INET, &((struct sockaddr_in *) i->ifa_addr)->sin_addr, buf,
                                               sizeof(buf)))
                                        continue;
                                if (streq(i->ifa_name, ifname)) {
                                        strcpy(best, buf);
                                        break;
                                }
                                if (!best[0])
                                        strcpy(best, buf);
                        }
                        freeifaddrs(ifa);
                }
                s = strdup(best[0] ? best : "127.0.0.1");
        }
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}
