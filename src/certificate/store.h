/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kubelet's certificate store (client-go's util/certificate FileStore): one PEM file per certificate and key
 * pair in the certificate directory, <prefix>-<timestamp>.pem (mode 0600, the certificates then the key), and the
 * symbolic link <prefix>-current.pem to the one in use. The current pair is looked for, in order, in
 * <prefix>-current.pem, in the given certificate and key files, and in <prefix>.crt and <prefix>.key.
 * Files are small: they are read and written on the loop. */

#include <stdint.h>

struct ck_error;

#include "certificate/csr.h"

struct cert_store {
        char *dir;       /* --cert-dir */
        char *prefix;    /* "kubelet-client", "kubelet-server" */
        char *cert_file; /* the fallback pair: the kubeconfig's client-certificate, tlsCertFile; NULL: none */
        char *key_file;
};

/* A pair in use: the certificate chain and the key as PEM, what the leaf says, where they came from. */
struct cert_pair {
        char *cert_pem;
        char *key_pem;
        struct cert_info info;
        char *path; /* the file it was read from or written to ("<cert>, <key>" for a separate pair) */
};
void cert_pair_done(struct cert_pair *p);

int cert_store_init(struct cert_store *s, const char *dir, const char *prefix, const char *cert_file,
                    const char *key_file);
void cert_store_done(struct cert_store *s);
/* <dir>/<prefix>-current.pem */
char *cert_store_current_path(const struct cert_store *s);

/* The current pair. -ENOENT when there is none anywhere (not an error: request one); any other error means a
 * file is there but unusable, and *ret_error names it and says why. An interrupted update (<prefix>-updated.pem
 * left without <prefix>-current.pem) is completed first, as upstream's recover(). */
int cert_store_load(struct cert_store *s, struct cert_pair *ret, struct ck_error **ret_error);

/* Store a new pair: <dir>/<prefix>-<YYYY-MM-DD-HH-MM-SS>.pem (local time of NOW_REALTIME_USEC) written with mode
 * 0600 and read back, then <prefix>-current.pem pointed at it (a new link renamed over the old one). A current
 * link that is a regular file is moved aside to <prefix>-current.pem.broken-<timestamp>. *ret (optional) is the
 * stored pair. Errors name the file and the reason. */
int cert_store_update(struct cert_store *s, const char *cert_pem, const char *key_pem, uint64_t now_realtime_usec,
                      struct cert_pair *ret, struct ck_error **ret_error);
