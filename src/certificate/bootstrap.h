/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kubeconfig side of TLS bootstrapping (pkg/kubelet/certificate/bootstrap): is the --kubeconfig usable as it
 * is, and the kubeconfig written once a certificate has been issued. */

struct ck_error;
struct kube_config;

/* isClientConfigStillValid: 1 when PATH exists, loads, and holds a client certificate and key (files or data)
 * that belong together and have not expired; 0 when it does not, with *ret_reason saying why, naming the file
 * ("/etc/kubernetes/kubelet.conf does not exist", "... the client certificate expired at ..."); a negative errno
 * only for errors that stop everything (out of memory). */
int cert_kubeconfig_usable(const char *path, struct ck_error **ret_reason);

/* writeKubeconfigFromBootstrapping: a kubeconfig at PATH (mode 0600, written atomically) with the bootstrap
 * kubeconfig's cluster (server, certificate-authority or its data, insecure-skip-tls-verify, tls-server-name) and
 * a user whose client-certificate and client-key are both PEM_PATH (<cert-dir>/kubelet-client-current.pem). */
int cert_kubeconfig_write(const char *path, const struct kube_config *bootstrap, const char *pem_path,
                          struct ck_error **ret_error);
