/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Helpers shared by the files of src/apis/ only. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apis/pod.h"
#include "basic/error.h"
#include "basic/json.h"
#include "basic/string.h"
#include "basic/strmap.h"

/* Upper bound on the error messages one validator returns for one value. */
#define NAME_MAX_MSGS 6

/* Name checks of k8s.io/apimachinery/pkg/util/validation: each fills msgs[] with static strings, in upstream
 * order, and returns how many (0 = valid). */
size_t check_dns1123_label(const char *s, const char *msgs[static NAME_MAX_MSGS]);
size_t check_dns1123_subdomain(const char *s, const char *msgs[static NAME_MAX_MSGS]);
size_t check_iana_svc_name(const char *s, const char *msgs[static NAME_MAX_MSGS]);
size_t check_qualified_name(const char *s, const char *msgs[static NAME_MAX_MSGS]);
size_t check_label_value(const char *s, const char *msgs[static NAME_MAX_MSGS]);
size_t check_relaxed_env_var_name(const char *s, const char *msgs[static NAME_MAX_MSGS]);

/* The exact value of a quantity in nano units (|value| capped at INT64_MAX units), and its format. On a syntax
 * error returns -EINVAL and *ret_error holds upstream's message (ErrFormatWrong or ErrSuffix). */
enum quantity_format {
        QUANTITY_DECIMAL_SI,
        QUANTITY_BINARY_SI,
        QUANTITY_DECIMAL_EXPONENT,
};
int quantity_parse_exact(const char *s, __int128 *ret_nano, enum quantity_format *ret_format,
                         struct ck_error **ret_error);

/* Field path helpers: "parent.child", "parent[3]", "parent[key]". Caller frees; NULL on OOM. */
char *path_child(const char *parent, const char *child);
char *path_index(const char *parent, size_t i);
char *path_key(const char *parent, const char *key);

/* ---- decoding helpers (pod_decode.c), for the files that decode one area of the pod each ----
 * Each returns 0 or -ENOMEM; a type error is recorded in e (and 0 returned) with the apiserver's wording
 * ("<path>: Invalid value: \"string\": must be of type array"). Absent and null values leave *ret as is. */
#define MAX_LIST_ITEMS 10000

int dec_type_error(struct field_errors *e, const char *path, const json_t *v, const char *expected);
int dec_child_error(struct field_errors *e, const char *parent, const char *key, const json_t *v, const char *expected);
json_t *dec_get(json_t *obj, const char *key);
int dec_get_string(struct field_errors *e, json_t *obj, const char *parent, const char *key, char **ret);
int dec_get_bool(struct field_errors *e, json_t *obj, const char *parent, const char *key, bool *ret);
int dec_get_integer(struct field_errors *e, json_t *obj, const char *parent, const char *key, int64_t min, int64_t max,
                    const char *type, bool *ret_set, int64_t *ret);
int dec_get_int32(struct field_errors *e, json_t *obj, const char *parent, const char *key, int32_t *ret);
int dec_get_object(struct field_errors *e, json_t *obj, const char *parent, const char *key, json_t **ret);
int dec_get_array(struct field_errors *e, json_t *obj, const char *parent, const char *key, size_t max, json_t **ret);
int dec_get_strv(struct field_errors *e, json_t *obj, const char *parent, const char *key, char ***ret);
int dec_get_string_map(struct field_errors *e, json_t *obj, const char *parent, const char *key, struct strmap *ret);
int dec_get_quantity(struct field_errors *e, json_t *obj, const char *parent, const char *key, struct quantity *ret);
int dec_get_int_or_string(struct field_errors *e, json_t *obj, const char *parent, const char *key,
                          struct int_or_string *ret);
/* A list of objects: every element must be an object; fn decodes one into the next item (the array grows
 * only for objects). Items are allocated for the whole list at once (calloc). */
typedef int (*decode_item_fn)(struct field_errors *e, json_t *v, const char *ip, void *item);
int dec_object_list(struct field_errors *e, json_t *obj, const char *parent, const char *key, size_t item_size,
                    void **ret_items, size_t *ret_n, decode_item_fn fn);

/* ---- environment sources (pod_env.c) ---- */
int dec_env_var_source(struct field_errors *e, json_t *env_item, const char *path, struct env_var_source **ret);
int dec_env_from(struct field_errors *e, json_t *c, const char *cpath, struct container *ret);
void env_var_source_free(struct env_var_source *s); /* accepts NULL */
void container_env_from_done(struct container *c);

/* ---- security contexts (pod_security.c) ---- */
int dec_container_security_context(struct field_errors *e, json_t *c, const char *cpath, struct container *ret);
int dec_pod_security_context(struct field_errors *e, json_t *spec, struct pod_spec *ret);
void security_context_free(struct security_context *sc);         /* accepts NULL */
void pod_security_context_free(struct pod_security_context *sc); /* accepts NULL */

/* ---- spec.dnsConfig (pod_dns.c) ---- */
int dec_pod_dns_config(struct field_errors *e, json_t *spec, struct pod_spec *ret);
void pod_dns_config_free(struct pod_dns_config *d); /* accepts NULL */

/* ---- validation helpers (pod_validate.c), same purpose ---- */
struct vctx {
        struct field_errors *errs;
        int r;                              /* first allocation failure */
        enum restart_policy restart_policy; /* the pod's (validateResizePolicy) */
        bool host_users;                    /* spec.hostUsers (unset: true): procMount Unmasked needs false */
};

#define CHECK_OOM(c, expr)                 \
        do {                               \
                int _k = (expr);           \
                if (_k < 0 && (c)->r == 0) \
                        (c)->r = _k;       \
        } while (0)

void val_required(struct vctx *c, const char *path, const char *detail); /* "Required value[: detail]" */
void val_invalid_str(struct vctx *c, const char *path, const char *value, const char *msg);
void val_invalid_int(struct vctx *c, const char *path, int64_t value, const char *msg);
void val_duplicate_str(struct vctx *c, const char *path, const char *value);
void val_not_supported(struct vctx *c, const char *path, const char *value, const char *supported);
void val_forbidden(struct vctx *c, const char *path, const char *detail);
void val_port_num_or_name(struct vctx *c, const struct int_or_string *port, const char *path);
/* httpGet of a probe or a lifecycle hook (validateHTTPGetAction): path, port, scheme, header names */
void val_http_get(struct vctx *c, const struct probe *p, const char *hp);
/* Run a name check and report every message as Invalid(path, value, msg). */
void val_check_name(struct vctx *c, const char *path, const char *value,
                    size_t (*check)(const char *, const char * [static NAME_MAX_MSGS]));
/* Paths, recording -ENOMEM in c on failure (then NULL). */
char *val_child(struct vctx *c, const char *parent, const char *name);
char *val_idx(struct vctx *c, const char *parent, size_t i);

/* ---- per-area decoding and validation ---- */
/* pod_lifecycle.c: restartPolicy of init containers (sidecars) */
int pod_decode_container_lifecycle(struct field_errors *e, json_t *c, const char *cpath, struct container *ret);
void pod_validate_lifecycle(struct vctx *c, const struct pod_spec *s);
int pod_default_container_lifecycle(struct container *c); /* SetDefaults_HTTPGetAction of the hooks */
/* pod_env.c */
void val_env_value_from(struct vctx *c, const struct env_var *ev, const char *vpath);
void val_env_from(struct vctx *c, const struct container *ctr, const char *cpath);
void val_file_key_ref_volumes(struct vctx *c, const struct pod *p); /* validateFileKeyRefVolumes */
/* pod_security.c */
void val_container_security_context(struct vctx *c, const struct container *ctr, const char *cpath);
void val_pod_security_context(struct vctx *c, const struct pod_spec *s);
void val_apparmor_annotations(struct vctx *c, const struct pod *pod);
/* pod_dns.c */
void val_pod_dns_config(struct vctx *c, const struct pod_spec *s);
