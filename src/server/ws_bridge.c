/* SPDX-License-Identifier: Apache-2.0 */
/* The pure parts of the kubelet's WebSocket streaming: see ws_bridge.h. */
#include "server/ws_bridge.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool token_eq(const char *s, size_t l, const char *t) {
        return strlen(t) == l && memcmp(s, t, l) == 0;
}

/* the next comma-separated item of *p, trimmed; false at the end */
static bool next_item(const char **p, const char **ret_s, size_t *ret_l) {
        const char *s, *e;

        while (**p == ' ' || **p == '\t' || **p == ',')
                (*p)++;
        if (!**p)
                return false;
        s = *p;
        while (**p && **p != ',')
                (*p)++;
        e = *p;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
                e--;
        *ret_s = s;
        *ret_l = (size_t) (e - s);
        return true;
}

static bool is_tunnel_protocol(const char *s, size_t l) {
        size_t pl = strlen(WSB_TUNNEL_PREFIX), sl = strlen(".k8s.io");
        return l >= pl + sl && memcmp(s, WSB_TUNNEL_PREFIX, pl) == 0 && memcmp(s + l - sl, ".k8s.io", sl) == 0;
}

enum wsb_mode wsb_mode_of(const char *upgrade, const char *protocols, int portforward) {
        const char *p = protocols, *s;
        size_t l;

        if (!upgrade || strcasecmp(upgrade, "websocket") != 0 || !protocols)
                return WSB_PROXY;
        while (next_item(&p, &s, &l)) {
                if (!portforward && token_eq(s, l, WSB_V5))
                        return WSB_TRANSLATE;
                if (portforward && is_tunnel_protocol(s, l))
                        return WSB_TUNNEL;
        }
        return WSB_PROXY;
}

size_t wsb_tunnel_protocols(const char *protocols, char *buf, const char **ret, size_t cap) {
        const char *p = protocols, *s;
        size_t l, k = 0, off = 0;

        if (!protocols)
                return 0;
        while (k < cap && next_item(&p, &s, &l)) {
                size_t pl = strlen(WSB_TUNNEL_PREFIX);
                if (!is_tunnel_protocol(s, l))
                        continue;
                memcpy(buf + off, s + pl, l - pl);
                buf[off + l - pl] = 0;
                ret[k++] = buf + off;
                off += l - pl + 1;
        }
        return k;
}

int wsb_answer_header(const char *head, size_t n, const char *name, char *out, size_t cap) {
        const char *p = head, *end = head + n;
        size_t nl = strlen(name);

        /* skip the status line */
        while (p < end && *p != '\n')
                p++;
        while (p < end) {
                const char *line = ++p, *e, *v;
                while (p < end && *p != '\n')
                        p++;
                e = p;
                if (e > line && e[-1] == '\r')
                        e--;
                if (e == line)
                        break; /* the end of the head */
                if ((size_t) (e - line) > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0) {
                        size_t l;
                        v = line + nl + 1;
                        while (v < e && (*v == ' ' || *v == '\t'))
                                v++;
                        while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
                                e--;
                        l = (size_t) (e - v);
                        if (cap == 0)
                                return 1;
                        if (l > cap - 1)
                                l = cap - 1;
                        memcpy(out, v, l);
                        out[l] = 0;
                        return 1;
                }
        }
        return 0;
}

int wsb_protocol_version(const char *name) {
        static const char *const names[] = { "channel.k8s.io", "v2.channel.k8s.io", "v3.channel.k8s.io",
                                             "v4.channel.k8s.io", WSB_V5 };
        if (!name)
                return -EINVAL;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strcmp(name, names[i]) == 0)
                        return (int) i + 1;
        return -EINVAL;
}

static char *dump(json_t *o) {
        char *s;
        if (!o)
                return NULL;
        s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(o);
        return s;
}

char *wsb_internal_error_json(const char *msg) {
        char *m = NULL, *s;
        if (asprintf(&m, "Internal error occurred: %s", msg) < 0)
                return NULL;
        s = dump(json_pack("{s:{},s:s,s:s,s:s,s:{s:[{s:s}]},s:i}", "metadata", "status", "Failure", "message", m,
                           "reason", "InternalError", "details", "causes", "message", msg, "code", 500));
        free(m);
        return s;
}

static char *success_json(void) {
        return dump(json_pack("{s:{},s:s}", "metadata", "status", "Success"));
}

static char *exit_code_json(unsigned rc) {
        char m[128], c[8];
        snprintf(m, sizeof(m), "command terminated with non-zero exit code: command terminated with exit code %u", rc);
        snprintf(c, sizeof(c), "%u", rc);
        return dump(json_pack("{s:{},s:s,s:s,s:s,s:{s:[{s:s,s:s}]}}", "metadata", "status", "Failure", "message", m,
                              "reason", "NonZeroExitCode", "details", "causes", "reason", "ExitCode", "message", c));
}

static char *errorf_json(const char *prefix, const uint8_t *err, size_t n, const char *suffix) {
        char *text = strndup((const char *) err, n), *msg = NULL, *s;
        if (!text)
                return NULL;
        if (asprintf(&msg, "%s%s%s", prefix, text, suffix) < 0) {
                free(text);
                return NULL;
        }
        s = wsb_internal_error_json(msg);
        free(text);
        free(msg);
        return s;
}

/* client-go's errorDecoderV4, then the translator's own Status */
static char *decode_v4(const uint8_t *err, size_t n) {
        json_t *o = json_loadb((const char *) err, n, JSON_REJECT_DUPLICATES, NULL), *causes;
        const char *status, *reason, *message;
        char *s;
        size_t i;
        json_t *c;

        if (!o || !json_is_object(o)) {
                json_decref(o);
                return errorf_json("error stream protocol error: invalid Status in \"", err, n, "\"");
        }
        status = json_string_value(json_object_get(o, "status"));
        reason = json_string_value(json_object_get(o, "reason"));
        message = json_string_value(json_object_get(o, "message"));
        if (status && strcmp(status, "Success") == 0) {
                json_decref(o);
                return success_json();
        }
        if (!status || strcmp(status, "Failure") != 0) {
                json_decref(o);
                return wsb_internal_error_json("error stream protocol error: unknown error");
        }
        if (!reason || strcmp(reason, "NonZeroExitCode") != 0) {
                s = wsb_internal_error_json(message ? message : "");
                json_decref(o);
                return s;
        }
        causes = json_object_get(json_object_get(o, "details"), "causes");
        if (!json_is_object(json_object_get(o, "details"))) {
                json_decref(o);
                return wsb_internal_error_json("error stream protocol error: details must be set");
        }
        json_array_foreach(causes, i, c) {
                const char *t = json_string_value(json_object_get(c, "reason"));
                const char *v = json_string_value(json_object_get(c, "message"));
                char *end;
                unsigned long rc;

                if (!t || strcmp(t, "ExitCode") != 0)
                        continue;
                errno = 0;
                rc = v && *v >= '0' && *v <= '9' ? strtoul(v, &end, 10) : 256;
                if (rc > 255 || errno != 0 || *end) {
                        char m[160];
                        snprintf(m, sizeof(m), "error stream protocol error: invalid exit code value \"%.64s\"",
                                 v ? v : "");
                        json_decref(o);
                        return wsb_internal_error_json(m);
                }
                json_decref(o);
                return exit_code_json((unsigned) rc);
        }
        json_decref(o);
        return wsb_internal_error_json("error stream protocol error: no ExitCode cause given");
}

char *wsb_status_json(int version, const uint8_t *err, size_t n) {
        if (n == 0)
                return success_json();
        if (version >= 4)
                return decode_v4(err, n);
        return errorf_json("error executing remote command: ", err, n, "");
}
