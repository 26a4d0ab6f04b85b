/* SPDX-License-Identifier: Apache-2.0 */
/* JSON → protobuf for Kubernetes API objects, driven by the schema table generated from upstream's .proto files. */
#include "apis/k8sproto.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/base64.h"
#include "basic/duration.h"
#include "basic/dynbuf.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/time.h"

#include "apis/k8sproto_schema.inc"

#define WIRE_VARINT 0
#define WIRE_FIXED64 1
#define WIRE_LEN 2

/* nesting beyond this is no API object */
#define MAX_DEPTH 64
/* a length is written in a reserved 5-byte varint slot, then moved down to its real size */
#define LEN_SLOT 5

struct enc {
        struct dynbuf o; /* capped at K8SPROTO_MAX_SIZE */
        char path[512];  /* the JSON path of the value being encoded, for errors */
        struct ck_error **error;
};

static const char *str_at(uint16_t off) {
        assert(off < sizeof(k8sproto_strings));
        return k8sproto_strings + off;
}

int k8sproto_message_find(const char *full_name) {
        for (size_t i = 0; i < ELEMENTSOF(k8sproto_messages); i++)
                if (streq(str_at(k8sproto_messages[i].name), full_name))
                        return (int) i;
        return -ENOENT;
}

static int reserve(struct enc *e, size_t n) {
        int r = dynbuf_reserve(&e->o, n);
        if (r == -E2BIG)
                return ck_error_set(e->error, r, "the encoding of the object passes %u bytes", K8SPROTO_MAX_SIZE);
        return r;
}

static size_t varint_size(uint64_t v) {
        size_t n = 1;
        while (v >= 0x80) {
                v >>= 7;
                n++;
        }
        return n;
}

static void varint_write(uint8_t *p, uint64_t v) {
        while (v >= 0x80) {
                *p++ = (uint8_t) (v | 0x80);
                v >>= 7;
        }
        *p = (uint8_t) v;
}

static int put_varint(struct enc *e, uint64_t v) {
        size_t n = varint_size(v);
        int r = reserve(e, n);
        if (r < 0)
                return r;
        varint_write(e->o.data + e->o.len, v);
        dynbuf_grew(&e->o, n);
        return 0;
}

static int put_tag(struct enc *e, unsigned number, unsigned wire) {
        return put_varint(e, ((uint64_t) number << 3) | wire);
}

static int put_bytes(struct enc *e, unsigned number, const void *p, size_t n) {
        int r = put_tag(e, number, WIRE_LEN);
        if (r >= 0)
                r = put_varint(e, n);
        if (r >= 0)
                r = reserve(e, n);
        if (r < 0)
                return r;
        if (n > 0)
                memcpy(e->o.data + e->o.len, p, n);
        dynbuf_grew(&e->o, n);
        return 0;
}

static int put_int(struct enc *e, unsigned number, int64_t v) {
        int r = put_tag(e, number, WIRE_VARINT);
        return r < 0 ? r : put_varint(e, (uint64_t) v); /* negative: ten bytes, as int32 and int64 are sent */
}

/* A length-delimited field whose body is written by the caller between begin and end. */
static int begin_len(struct enc *e, unsigned number, size_t *ret_slot) {
        int r = put_tag(e, number, WIRE_LEN);
        if (r >= 0)
                r = reserve(e, LEN_SLOT);
        if (r < 0)
                return r;
        *ret_slot = e->o.len;
        dynbuf_grew(&e->o, LEN_SLOT);
        return 0;
}

static void end_len(struct enc *e, size_t slot) {
        size_t body = e->o.len - slot - LEN_SLOT, n = varint_size(body);

        assert(n <= LEN_SLOT);
        varint_write(e->o.data + slot, body);
        memmove(e->o.data + slot + n, e->o.data + slot + LEN_SLOT, body);
        dynbuf_truncate(&e->o, e->o.len - (LEN_SLOT - n));
}

static int bad(struct enc *e, const char *what) {
        return ck_error_set(e->error, -EINVAL, "%s: %s", e->path[0] ? e->path : "(the object)", what);
}

/* the path grows by ".name" or "[i]" while a child is encoded, then goes back */
static size_t path_push(struct enc *e, const char *fmt_name, size_t index, bool is_index) {
        size_t old = strlen(e->path);
        if (is_index)
                snprintf(e->path + old, sizeof(e->path) - old, "[%zu]", index);
        else
                snprintf(e->path + old, sizeof(e->path) - old, "%s%s", old ? "." : "", fmt_name);
        return old;
}

static int encode_body(struct enc *e, const json_t *v, int message, unsigned depth);

static int encode_value(struct enc *e, const struct k8sproto_field *f, const json_t *v, unsigned depth) {
        _cleanup_free_ char *raw = NULL;
        size_t slot, n;
        int r;

        switch (f->type) {
        case K8SPROTO_T_STRING:
                if (!json_is_string(v))
                        return bad(e, "expected a string");
                return put_bytes(e, f->number, json_string_value(v), json_string_length(v));
        case K8SPROTO_T_BYTES:
                if (!json_is_string(v))
                        return bad(e, "expected a base64 string");
                if (base64_decode(json_string_value(v), K8SPROTO_MAX_SIZE, &raw, &n) < 0)
                        return bad(e, "invalid base64");
                return put_bytes(e, f->number, raw, n);
        case K8SPROTO_T_BOOL:
                if (!json_is_boolean(v))
                        return bad(e, "expected a boolean");
                return put_int(e, f->number, json_is_true(v));
        case K8SPROTO_T_INT32:
        case K8SPROTO_T_INT64: {
                json_int_t i;
                if (json_is_integer(v))
                        i = json_integer_value(v);
                else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
                         fabs(json_real_value(v)) < 9.007199254740992e15)
                        i = (json_int_t) json_real_value(v);
                else
                        return bad(e, "expected an integer");
                if (f->type == K8SPROTO_T_INT32 && (i < INT32_MIN || i > INT32_MAX))
                        return bad(e, "out of the range of a 32-bit integer");
                return put_int(e, f->number, i);
        }
        case K8SPROTO_T_DOUBLE: {
                double d;
                uint64_t bits;
                if (!json_is_number(v))
                        return bad(e, "expected a number");
                d = json_number_value(v);
                memcpy(&bits, &d, sizeof(bits));
                r = put_tag(e, f->number, WIRE_FIXED64);
                if (r >= 0)
                        r = reserve(e, 8);
                if (r < 0)
                        return r;
                for (unsigned b = 0; b < 8; b++)
                        e->o.data[e->o.len + b] = (uint8_t) (bits >> (8 * b));
                dynbuf_grew(&e->o, 8);
                return 0;
        }
        case K8SPROTO_T_MESSAGE: {
                size_t start = e->o.len;
                r = begin_len(e, f->number, &slot);
                if (r >= 0)
                        r = encode_body(e, v, f->message, depth + 1);
                if (r < 0)
                        return r;
                if ((f->flags & K8SPROTO_F_INLINE) && e->o.len == slot + LEN_SLOT) {
                        dynbuf_truncate(&e->o, start); /* an inlined struct none of whose fields is there */
                        return 0;
                }
                end_len(e, slot);
                return 0;
        }
        }
        assert(false); /* every type is handled above */
        return -EINVAL;
}

static int encode_time(struct enc *e, const json_t *v) {
        int64_t ns, sec, nanos;
        int r;

        if (!json_is_string(v) || parse_rfc3339(json_string_value(v), &ns) < 0)
                return bad(e, "expected an RFC 3339 time");
        sec = ns / 1000000000;
        nanos = ns % 1000000000;
        if (nanos < 0) {
                nanos += 1000000000;
                sec--;
        }
        r = put_int(e, 1, sec);
        if (r >= 0 && nanos != 0)
                r = put_int(e, 2, nanos);
        return r;
}

static int cmp_keys(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* a map's entries (key 1, value 2) in key order */
static int encode_map(struct enc *e, const struct k8sproto_field *f, const json_t *obj, unsigned depth) {
        const struct k8sproto_message *entry = &k8sproto_messages[f->message];
        const struct k8sproto_field *kf = NULL, *vf = NULL;
        _cleanup_free_ const char **keys = NULL;
        size_t n = json_object_size(obj), i = 0;
        const char *key;
        json_t *value;
        int r;

        for (size_t j = 0; j < entry->n_fields; j++) {
                const struct k8sproto_field *ef = &k8sproto_fields[entry->first_field + j];
                if (ef->number == 1)
                        kf = ef;
                else if (ef->number == 2)
                        vf = ef;
        }
        assert(kf && vf && kf->type == K8SPROTO_T_STRING);
        keys = calloc(MAX(n, (size_t) 1), sizeof(*keys));
        if (!keys)
                return -ENOMEM;
        json_object_foreach((json_t *) obj, key, value)
                keys[i++] = key;
        qsort(keys, n, sizeof(*keys), cmp_keys);
        for (i = 0; i < n; i++) {
                size_t slot, old;
                value = json_object_get(obj, keys[i]);
                if (json_is_null(value))
                        continue;
                old = path_push(e, keys[i], 0, false);
                r = begin_len(e, f->number, &slot);
                if (r >= 0)
                        r = put_bytes(e, 1, keys[i], strlen(keys[i]));
                if (r >= 0)
                        r = encode_value(e, vf, value, depth + 1);
                if (r < 0)
                        return r;
                end_len(e, slot);
                e->path[old] = '\0';
        }
        return 0;
}

static int encode_body(struct enc *e, const json_t *v, int message, unsigned depth) {
        const struct k8sproto_message *m;
        _cleanup_free_ char *text = NULL;
        int r;

        assert(message >= 0 && (size_t) message < ELEMENTSOF(k8sproto_messages));
        if (depth > MAX_DEPTH)
                return bad(e, "nested too deeply");
        m = &k8sproto_messages[message];
        switch (m->kind) {
        case K8SPROTO_QUANTITY:
                if (json_is_string(v))
                        return put_bytes(e, 1, json_string_value(v), json_string_length(v));
                if (json_is_integer(v)) {
                        char buf[32];
                        snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                        return put_bytes(e, 1, buf, strlen(buf));
                }
                if (json_is_real(v)) {
                        char buf[64];
                        snprintf(buf, sizeof(buf), "%.17g", json_real_value(v));
                        return put_bytes(e, 1, buf, strlen(buf));
                }
                return bad(e, "expected a quantity");
        case K8SPROTO_TIME:
        case K8SPROTO_MICROTIME:
                return encode_time(e, v);
        case K8SPROTO_INTORSTRING:
                if (json_is_integer(v)) {
                        if (json_integer_value(v) < INT32_MIN || json_integer_value(v) > INT32_MAX)
                                return bad(e, "out of the range of a 32-bit integer");
                        r = put_int(e, 1, 0);
                        return r < 0 ? r : put_int(e, 2, json_integer_value(v));
                }
                if (json_is_string(v)) {
                        r = put_int(e, 1, 1);
                        return r < 0 ? r : put_bytes(e, 3, json_string_value(v), json_string_length(v));
                }
                return bad(e, "expected an integer or a string");
        case K8SPROTO_DURATION: {
                _cleanup_ck_error_ struct ck_error *why = NULL;
                int64_t ns;
                if (!json_is_string(v) || go_duration_parse(json_string_value(v), &ns, &why) < 0)
                        return bad(e, "expected a duration");
                return put_int(e, 1, ns);
        }
        case K8SPROTO_RAWJSON:
                text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
                if (!text)
                        return -ENOMEM;
                return put_bytes(e, 1, text, strlen(text));
        case K8SPROTO_MAP_ENTRY:
                assert(false); /* encoded by encode_map */
                return -EINVAL;
        case K8SPROTO_PLAIN:
                break;
        }
        if (!json_is_object(v))
                return bad(e, "expected an object");
        for (size_t i = 0; i < m->n_fields; i++) {
                const struct k8sproto_field *f = &k8sproto_fields[m->first_field + i];
                const json_t *fv;
                size_t old;

                if (f->flags & K8SPROTO_F_INLINE) {
                        /* its fields are this object's */
                        r = encode_value(e, f, v, depth);
                        if (r < 0)
                                return r;
                        continue;
                }
                fv = json_object_get(v, str_at(f->name));
                if (!fv || json_is_null(fv))
                        continue;
                old = path_push(e, str_at(f->name), 0, false);
                if (f->type == K8SPROTO_T_MESSAGE && k8sproto_messages[f->message].kind == K8SPROTO_MAP_ENTRY) {
                        if (!json_is_object(fv))
                                return bad(e, "expected an object");
                        r = encode_map(e, f, fv, depth);
                } else if (f->flags & K8SPROTO_F_REPEATED) {
                        const json_t *item;
                        size_t j;
                        if (!json_is_array(fv))
                                return bad(e, "expected an array");
                        r = 0;
                        json_array_foreach(fv, j, item) {
                                size_t o2;
                                if (json_is_null(item))
                                        continue;
                                o2 = path_push(e, NULL, j, true);
                                r = encode_value(e, f, item, depth);
                                if (r < 0)
                                        break;
                                e->path[o2] = '\0';
                        }
                } else
                        r = encode_value(e, f, fv, depth);
                if (r < 0)
                        return r;
                e->path[old] = '\0';
        }
        return 0;
}

int k8sproto_encode(const json_t *obj, int message, uint8_t **ret_data, size_t *ret_size, struct ck_error **ret_error) {
        struct enc e = { .o = DYNBUF_INIT(K8SPROTO_MAX_SIZE), .error = ret_error };
        uint8_t *data;
        size_t len;
        int r;

        assert(obj && ret_data && ret_size);
        r = encode_body(&e, obj, message, 0);
        data = r >= 0 ? dynbuf_take(&e.o, &len) : NULL;
        dynbuf_done(&e.o);
        if (r >= 0 && !data)
                r = -ENOMEM;
        if (r == -ENOMEM)
                return ck_error_set(ret_error, r, "out of memory");
        if (r < 0)
                return r;
        *ret_data = data;
        *ret_size = len;
        return 0;
}
