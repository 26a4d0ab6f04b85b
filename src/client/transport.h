/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The apiserver client's transport (what Go's http.Transport with x/net/http2 is to client-go): HTTP/2 over TLS
 * (ALPN "h2") with every request a stream multiplexed on one connection, nghttp2 doing the framing and the flow
 * control (client-go's windows: 4 MiB a stream, 1 GiB the connection); HTTP/1.1 with keep-alive (our own
 * writer, http/http_response.c for responses, chunked watches included) where the server does not offer h2 or
 * the URL is plain http://. After a GOAWAY the connection finishes its streams and new ones go to a new
 * connection; streams the server refused (above its last stream id) end with refused = true (never acted on).
 *
 * Callbacks run from the transport's own libevent callbacks (never inside kube_stream_start()); they may not
 * free the transport; after on_close the stream is gone (the transport frees it). */

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ck_error;
struct ssl_ctx_st;
struct kube_transport;
struct kube_stream;

struct kube_transport_config {
        bool https;
        const char *host; /* to connect to (no brackets) */
        int port;
        const char *authority;   /* Host / :authority ("host:port" as the URL gives it) */
        const char *server_name; /* TLS: SNI and the name checked in the certificate (tls-server-name or host) */
        const char *ca_file, *ca_data;
        const char *cert_file, *cert_data;
        const char *key_file, *key_data;
        bool insecure;
        uint64_t connect_timeout_usec; /* TCP and TLS handshake */
};

/* A kubeconfig's TLS material: files or inline PEM data (the data wins), or no verification of the server. */
struct kube_tls_files {
        const char *ca_file, *ca_data;
        const char *cert_file, *cert_data;
        const char *key_file, *key_data;
        bool insecure;
};
/* A client SSL_CTX from them (tls.c); -EINVAL with the field named in *ret_error ("TLS: client-key-data: cannot use
 * the private key"), -ENOMEM. */
int kube_tls_client_ctx(const struct kube_tls_files *f, struct ssl_ctx_st **ret, struct ck_error **ret_error);

/* The TLS files are read when the first connection needs them: an error there fails that connection's requests
 * with the file named. */
int kube_transport_new(struct event_base *base, const struct kube_transport_config *cfg, struct kube_transport **ret);
/* Streams still open are dropped without callbacks. Accepts NULL. */
struct kube_transport *kube_transport_free(struct kube_transport *t);
/* No stream is open. */
bool kube_transport_idle(const struct kube_transport *t);

struct kube_stream_ops {
        /* the final response's status, Retry-After and Content-Encoding values (NULL if none) */
        void (*on_headers)(int status, const char *retry_after, const char *encoding, void *userdata);
        /* body bytes (all taken): 0 to go on, 1 to pause reading (kube_stream_resume), or a negative errno to
         * abort the stream (on_close then gets that errno) */
        int (*on_data)(const char *data, size_t n, void *userdata);
        /* the end: rc 0 when the response is complete, or a negative errno and why; refused: the request never
         * reached the server (connection not made, or refused by a GOAWAY) so it can be repeated whatever it is */
        void (*on_close)(int rc, const char *error, bool refused, void *userdata);
};

struct kube_stream_request {
        const char *method, *path;
        const char *const *headers; /* name, value, name, value, ..., NULL (lower-case names) */
        const char *body;           /* borrowed until on_close or cancel; NULL: none */
        size_t body_len;
};

int kube_stream_start(struct kube_transport *t, const struct kube_stream_request *req,
                      const struct kube_stream_ops *ops, void *userdata, struct kube_stream **ret);
/* No callback after this. Not from inside this stream's on_close. Accepts NULL. */
void kube_stream_cancel(struct kube_stream *s);
/* Read again after on_data asked for a pause (on_data may run inside this call). */
void kube_stream_resume(struct kube_stream *s);
