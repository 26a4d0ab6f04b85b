/* SPDX-License-Identifier: Apache-2.0 */
/* node.status.declaredFeatures: see declared_features.h. */

#include "node/declared_features.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"

/* upstream v1.37.2 features.AllFeatures, each with its gate's v1.37 default (pkg/features/kube_features.go) */
static const struct node_declared_feature table[] = {
        /* restartPolicyRules action RestartAllContainers: ckubelet knows only the action Restart */
        { "RestartAllContainersOnContainerExits", true, false, false },
        /* resizing pod-level resources: allocated and applied with the containers' (kubelet/allocation.c) */
        { "InPlacePodLevelResourcesVerticalScaling", true, false, true },
        /* exec/attach over WebSocket v5 translated to SPDY, port-forward tunnelled (server/streaming.c) */
        { "ExtendWebSocketsToKubelet", true, false, true },
        /* resizing regular (non-sidecar) init containers: ckubelet resizes sidecars only */
        { "InPlacePodVerticalScalingInitContainers", true, false, false },
        /* resizing memory-backed emptyDir volumes: alpha, off */
        { "InPlacePodVerticalScalingMemoryBackedVolumes", false, false, false },
        /* user namespaces with hostNetwork: alpha, off; needs the runtime's UserNamespacesHostNetwork */
        { "UserNamespacesHostNetworkSupport", false, true, false },
        /* DRA node allocatable resources: alpha, off */
        { "DRANodeAllocatableResources", false, false, false },
        /* bind mount options of volumes: alpha, off; needs the runtime's MountOptions */
        { "VolumeBindMountOptions", false, true, false },
        /* DRA optional node operations: alpha, off */
        { "DRAOptionalNodeOperations", false, false, false },
};

const struct node_declared_feature *node_declared_feature_table(size_t *ret_n) {
        assert(ret_n);
        *ret_n = ELEMENTSOF(table);
        return table;
}

static int compare_names(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

size_t node_declared_features(const struct node_declared_feature *t, size_t n, const char **ret) {
        size_t k = 0;

        assert(t || n == 0);
        for (size_t i = 0; i < n; i++)
                if (t[i].implemented && t[i].gate_default && !t[i].needs_runtime)
                        ret[k++] = t[i].name;
        /* sorted by name: upstream's framework sorts its registry, and the apiserver refuses a list that is not
         * ("list must be sorted alphabetically") */
        qsort(ret, k, sizeof(ret[0]), compare_names);
        return k;
}
