/* SPDX-License-Identifier: Apache-2.0 */
/* What the runtime answers, decoded (protobuf-c) and converted into the kubelet's model (kr_*_from_cri,
 * kr_*_set_status) and a pod's runtime status, as the sync loop and PLEG do. The first byte picks the reply. */
#include "cri.pb-c.h"
#include "kuberuntime/convert.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct kc_pod_status *ps = NULL;

        if (size < 1)
                return 0;
        if (kc_pod_status_new("uid", &ps) < 0)
                abort();
        switch (data[0] % 4) {
        case 0: {
                Runtime__V1__ListContainersResponse *r = runtime__v1__list_containers_response__unpack(NULL, size - 1,
                                                                                                       data + 1);
                for (size_t i = 0; r && i < r->n_containers; i++) {
                        struct kc_container *c = NULL;
                        if (kr_container_from_cri(r->containers[i], &c) >= 0 && kc_pod_status_add_container(ps, c) < 0)
                                kc_container_free(c);
                }
                if (r)
                        runtime__v1__list_containers_response__free_unpacked(r, NULL);
                break;
        }
        case 1: {
                Runtime__V1__ListPodSandboxResponse *r = runtime__v1__list_pod_sandbox_response__unpack(NULL, size - 1,
                                                                                                        data + 1);
                for (size_t i = 0; r && i < r->n_items; i++) {
                        struct kc_sandbox *s = NULL;
                        if (kr_sandbox_from_cri(r->items[i], &s) >= 0 && kc_pod_status_add_sandbox(ps, s) < 0)
                                kc_sandbox_free(s);
                }
                if (r)
                        runtime__v1__list_pod_sandbox_response__free_unpacked(r, NULL);
                break;
        }
        case 2: {
                Runtime__V1__ContainerStatusResponse *r = runtime__v1__container_status_response__unpack(NULL, size - 1,
                                                                                                         data + 1);
                struct kc_container *c = calloc(1, sizeof(*c));
                if (!c)
                        abort();
                if (r && r->status)
                        (void) kr_container_set_status(c, r->status);
                if (kc_pod_status_add_container(ps, c) < 0)
                        kc_container_free(c);
                if (r)
                        runtime__v1__container_status_response__free_unpacked(r, NULL);
                break;
        }
        case 3: {
                Runtime__V1__PodSandboxStatusResponse *r = runtime__v1__pod_sandbox_status_response__unpack(NULL,
                                                                                                            size - 1,
                                                                                                            data + 1);
                struct kc_sandbox *s = calloc(1, sizeof(*s));
                if (!s)
                        abort();
                if (r && r->status)
                        (void) kr_sandbox_set_status(s, r->status);
                if (kc_pod_status_add_sandbox(ps, s) < 0)
                        kc_sandbox_free(s);
                if (r)
                        runtime__v1__pod_sandbox_status_response__free_unpacked(r, NULL);
                break;
        }
        }
        kc_pod_status_sort(ps);
        kc_pod_status_free(ps);
        return 0;
}
