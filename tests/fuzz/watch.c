/* SPDX-License-Identifier: Apache-2.0 */
/* The API server's watch stream: newline-framed JSON events, each a {type, object}; the pods in them decoded and
 * defaulted as the API source does. */
#include "apis/pod.h"
#include "basic/error.h"
#include "client/client-internal.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *p = (const char *) data, *end = p + size;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
                json_t *ev = NULL;
                struct ck_error *why = NULL;

                if (kube_watch_parse_event(p, n, &ev, &why) >= 0 && ev) {
                        json_t *obj = json_object_get(ev, "object");
                        struct field_errors errs = {};
                        struct pod *pod = NULL;

                        if (pod_decode(obj, &pod, &errs) >= 0 && pod) {
                                (void) pod_uid_is_valid(pod->uid);
                                (void) pod_apply_defaults_checked(pod);
                        }
                        pod_free(pod);
                        field_errors_done(&errs);
                        json_decref(ev);
                } else if (!ev && why == NULL && n > 0) {
                        /* an empty line, or out of memory */
                }
                ck_error_free(why);
                p += n + (nl ? 1 : 0);
        }
        return 0;
}
