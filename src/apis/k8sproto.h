/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Kubernetes API objects in their protobuf encoding (k8s.io/api's generated.proto, what client-go's
 * `application/vnd.kubernetes.protobuf` and the kubelet's pods API carry), from their JSON form: a schema table
 * generated from upstream's .proto files (src/apis/k8sproto_schema.inc, scripts/gen-k8s-proto-schema.sh) drives
 * one encoder, so each field goes out under upstream's number and wire type. Fields of the JSON the schema does
 * not know are left out (as a Go client decoding the JSON would drop them); null is an absent field. An embedded
 * struct that Go's JSON inlines (ProbeHandler in a Probe, VolumeSource in a Volume, ...) is read from its
 * parent's object and sent as its message field, left out when it holds nothing.
 *
 * The apimachinery types whose JSON differs from their message: resource.Quantity (a string or number → its
 * `string` field), metav1.Time and MicroTime (RFC 3339 → seconds and nanos), intstr.IntOrString (a number →
 * type 0 and intVal, a string → type 1 and strVal), metav1.Duration (a Go duration string → nanoseconds),
 * runtime.RawExtension and metav1.FieldsV1 (any JSON value → its compact text in `raw`); maps go out as their
 * entries (key 1, value 2) in key order. Quantities keep the text they were given (a Go decoder parses any
 * valid form). */

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"

/* The encoding of a message can never exceed this (the gRPC message cap of the kubelet's servers). */
#define K8SPROTO_MAX_SIZE (4u * 1024u * 1024u)

enum k8sproto_type {
        K8SPROTO_T_STRING,
        K8SPROTO_T_BYTES, /* base64 in JSON */
        K8SPROTO_T_BOOL,
        K8SPROTO_T_INT32,
        K8SPROTO_T_INT64,
        K8SPROTO_T_DOUBLE,
        K8SPROTO_T_MESSAGE,
};

enum k8sproto_kind {
        K8SPROTO_PLAIN,
        K8SPROTO_MAP_ENTRY,
        K8SPROTO_QUANTITY,
        K8SPROTO_TIME,
        K8SPROTO_MICROTIME,
        K8SPROTO_INTORSTRING,
        K8SPROTO_RAWJSON,
        K8SPROTO_DURATION,
};

enum {
        K8SPROTO_F_REPEATED = 1 << 0,
        /* an embedded Go struct whose JSON fields sit in the parent's object (a Probe's ProbeHandler, a Volume's
         * VolumeSource, the LocalObjectReference of a key selector): its message is read from the same object */
        K8SPROTO_F_INLINE = 1 << 1,
};

/* the generated table's rows: names are offsets into one string, messages are indexes (no relocations) */
struct k8sproto_field {
        uint16_t name;    /* offset of the JSON (and proto) field name */
        uint16_t number;  /* the field number */
        uint8_t type;     /* enum k8sproto_type */
        uint8_t flags;    /* K8SPROTO_F_* */
        uint16_t message; /* for K8SPROTO_T_MESSAGE: the message's index */
};

struct k8sproto_message {
        uint16_t name; /* offset of the full name ("k8s.io.api.core.v1.Pod") */
        uint16_t first_field, n_fields;
        uint8_t kind; /* enum k8sproto_kind */
};

/* The message's index by full name ("k8s.io.api.core.v1.Pod"); -ENOENT when the table lacks it. */
int k8sproto_message_find(const char *full_name);

/* Encodes obj (a JSON object) as the message; *ret_data (malloc'ed, caller frees) and *ret_size are set on
 * success and untouched on failure. -EINVAL (with the field's JSON path in the error) when a value has the wrong
 * JSON type or does not parse, -E2BIG beyond K8SPROTO_MAX_SIZE, -ENOMEM. */
int k8sproto_encode(const json_t *obj, int message, uint8_t **ret_data, size_t *ret_size, struct ck_error **ret_error);
