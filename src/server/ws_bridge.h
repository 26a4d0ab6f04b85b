/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pure parts of the kubelet's WebSocket streaming (ExtendWebSocketsToKubelet, issue 37; upstream's
 * pkg/kubelet/server getExec/getAttach/getPortForward with apiserver's util/proxy StreamTranslatorHandler and
 * TunnelingHandler): which requests are translated or tunnelled, the SPDY protocol versions asked of the runtime,
 * and the Status written on the v5 error channel when the command ends. Prefix wsb_. */

#include <stddef.h>
#include <stdint.h>

#define WSB_V5 "v5.channel.k8s.io"
#define WSB_TUNNEL_PREFIX "SPDY/3.1+"

enum wsb_mode {
        WSB_PROXY,     /* passed to the runtime's streaming server as it is */
        WSB_TRANSLATE, /* exec/attach: WebSocket v5 here, SPDY to the runtime */
        WSB_TUNNEL,    /* portforward: SPDY inside WebSocket binary messages */
};

/* The mode of an upgrade request to /exec, /attach (portforward false) or /portForward: a WebSocket upgrade
 * (Upgrade: websocket; the caller checked Connection: upgrade) offering v5.channel.k8s.io (exec, attach) or a
 * "SPDY/3.1+*.k8s.io" protocol (portforward) in Sec-WebSocket-Protocol is handled here (upstream's
 * IsWebSocketRequestWithStreamCloseProtocol and IsWebSocketRequestWithTunnelingProtocol); anything else is proxied. */
enum wsb_mode wsb_mode_of(const char *upgrade, const char *protocols, int portforward);

/* The SPDY protocols a tunnelling request asks for: each offered "SPDY/3.1+X.k8s.io" without its prefix, in the
 * client's order, into ret[0..cap); returns how many (pointers into buf, a copy of protocols the caller provides,
 * of at least strlen(protocols) + 1 bytes). */
size_t wsb_tunnel_protocols(const char *protocols, char *buf, const char **ret, size_t cap);

/* The value of header name in an HTTP answer head (head[0..n), its status line first), trimmed, into out
 * (NUL-terminated, cut at cap - 1); returns 1 when found, 0 when not. */
int wsb_answer_header(const char *head, size_t n, const char *name, char *out, size_t cap);

/* The remote command protocol version (1-5) of an X-Stream-Protocol-Version value, or -EINVAL. */
int wsb_protocol_version(const char *name);

/* The Status to write on the v5 error channel once the SPDY session ended, from what the runtime wrote on its error
 * stream (err[0..n)) under protocol version: as upstream's translator does, the runtime's Status decoded as
 * client-go's remotecommand client decodes it (v4/v5 a JSON Status, v1-v3 a text) and written again: Success, a
 * NonZeroExitCode Failure with the ExitCode cause, or an InternalError. Returns a malloc'ed JSON text, NULL on ENOMEM. */
char *wsb_status_json(int version, const uint8_t *err, size_t n);

/* Upstream's apierrors.NewInternalError(msg) as JSON; NULL on ENOMEM. */
char *wsb_internal_error_json(const char *msg);
