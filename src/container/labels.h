/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Labels and annotations the kubelet puts on CRI sandboxes and containers (pkg/kubelet/types/labels.go,
 * pkg/kubelet/kuberuntime/labels.go). Everything ckubelet needs to adopt running pods after a restart is
 * stored here, so no local state file is needed (crash-only). */

#define LABEL_POD_NAME "io.kubernetes.pod.name"
#define LABEL_POD_NAMESPACE "io.kubernetes.pod.namespace"
#define LABEL_POD_UID "io.kubernetes.pod.uid"
#define LABEL_CONTAINER_NAME "io.kubernetes.container.name"

#define ANNOTATION_CONTAINER_HASH "io.kubernetes.container.hash"
#define ANNOTATION_CONTAINER_RESTART_COUNT "io.kubernetes.container.restartCount"
#define ANNOTATION_TERMINATION_MESSAGE_PATH "io.kubernetes.container.terminationMessagePath"
#define ANNOTATION_TERMINATION_MESSAGE_POLICY "io.kubernetes.container.terminationMessagePolicy"
#define ANNOTATION_POD_TERMINATION_GRACE_PERIOD "io.kubernetes.pod.terminationGracePeriod"
#define ANNOTATION_CONTAINER_PORTS "io.kubernetes.container.ports"
#define ANNOTATION_CONTAINER_PRESTOP_HANDLER "io.kubernetes.container.preStopHandler"
/* ckubelet's own: "true" on a sidecar's instances, so that a pod no longer known (removed, or after a restart)
 * still stops its sidecars after its other containers */
#define ANNOTATION_CONTAINER_SIDECAR "io.ckubelet.container.sidecar"
