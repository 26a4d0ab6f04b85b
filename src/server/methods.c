/* SPDX-License-Identifier: Apache-2.0 */
/* The methods an endpoint takes: see methods.h. */

#include "server/methods.h"

#include <assert.h>
#include <string.h>

#include <event2/http.h>

#include "basic/macro.h"

const char *api_allow_header(int allowed, char buf[static API_ALLOW_MAX]) {
        static const struct {
                int bit;
                const char *name;
        } order[] = {
                { EVHTTP_REQ_GET, "GET" },         { EVHTTP_REQ_POST, "POST" },     { EVHTTP_REQ_HEAD, "HEAD" },
                { EVHTTP_REQ_PUT, "PUT" },         { EVHTTP_REQ_DELETE, "DELETE" }, { EVHTTP_REQ_PATCH, "PATCH" },
                { EVHTTP_REQ_OPTIONS, "OPTIONS" },
        };
        size_t n = 0;

        assert(buf);
        buf[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(order); i++) {
                size_t l = strlen(order[i].name);
                if (!(allowed & order[i].bit))
                        continue;
                /* the names of all seven with their separators fit API_ALLOW_MAX */
                assert(n + 2 + l < API_ALLOW_MAX);
                if (n > 0) {
                        memcpy(buf + n, ", ", 2);
                        n += 2;
                }
                memcpy(buf + n, order[i].name, l);
                n += l;
                buf[n] = '\0';
        }
        return buf;
}
