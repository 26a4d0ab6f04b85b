/* SPDX-License-Identifier: Apache-2.0 */
/* What the kubelet API takes from a request line: the path split into decoded components (nothing that walks
 * out of a directory), the query, the attributes authorization sees, the /logs/ path under a directory. */
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/strv.h"
#include "server/logs_dir.h"
#include "server/server-internal.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = fuzz_strndup(data, size), *query = strchr(s, '?'), **parts = NULL, **values = NULL;
        static int rootfd = -1;
        int fd = -1;
        bool is_dir = false;

        if (query)
                *query++ = '\0';
        if (api_path_components(s, &parts) >= 0) {
                for (char **p = parts; *p; p++)
                        if (!**p || streq(*p, ".") || streq(*p, "..") || strchr(*p, '/'))
                                abort();
                strv_free(parts);
        }
        {
                const char *subs[API_SUBRESOURCES_MAX];
                size_t n = api_subresources(s, subs);
                if (n < 1 || n > API_SUBRESOURCES_MAX)
                        abort();
        }
        (void) api_request_verb(EVHTTP_REQ_GET, s);
        if (api_query_get_all(query, "command", &values) >= 0)
                strv_free(values);
        free(api_query_get(query, "cmd"));
        /* /logs/<rest> resolved beneath an empty directory: never anything outside it */
        if (rootfd < 0) {
                rootfd = open(fuzz_dir(), O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (rootfd < 0)
                        abort();
        }
        if (api_logs_dir_openat(rootfd, s, 0, &fd, &is_dir) >= 0) {
                if (!is_dir)
                        abort(); /* the directory is empty: only itself can be found */
                close(fd);
        }
        free(s);
        return 0;
}
