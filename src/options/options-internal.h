/* SPDX-License-Identifier: Apache-2.0 */
/* Inside src/options: the flag table (table.c), the command line (flags.c), the config file (config.c), the
 * checks after both (validate.c) and the entry points (options.c). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"
#include "options/options.h"

#define KUBELET_CONFIG_API_VERSION "kubelet.config.k8s.io/v1beta1"
#define KUBELET_CONFIG_KIND "KubeletConfiguration"
/* a KubeletConfiguration is a few kilobytes; anything near this is not one */
#define KUBELET_CONFIG_MAX_SIZE (1024u * 1024u)
/* --config-dir: how deep and how many files (a drop-in directory holds a handful) */
#define KUBELET_CONFIG_DIR_MAX_DEPTH 8u
#define KUBELET_CONFIG_DIR_MAX_FILES 1000u

#define DEFAULT_CONTAINER_RUNTIME_ENDPOINT "unix:///run/containerd/containerd.sock"
#define DEFAULT_ROOT_DIR "/var/lib/kubelet"
#define DEFAULT_POD_LOGS_DIR "/var/log/pods"
#define DEFAULT_FILE_CHECK_FREQUENCY_USEC (20 * USEC_PER_SEC)
#define DEFAULT_HTTP_CHECK_FREQUENCY_USEC (20 * USEC_PER_SEC)
#define DEFAULT_SYNC_FREQUENCY_USEC (60 * USEC_PER_SEC)
#define DEFAULT_RUNTIME_REQUEST_TIMEOUT_USEC (120 * USEC_PER_SEC)
#define DEFAULT_MAX_PODS 110
#define DEFAULT_PORT 10250
#define DEFAULT_HEALTHZ_PORT 10248
#define DEFAULT_CERT_DIR "/var/lib/kubelet/pki"
#define DEFAULT_CONTAINER_LOGS_DIR "/var/log/containers"
#define DEFAULT_POD_INFRA_CONTAINER_IMAGE "registry.k8s.io/pause:3.10"
/* v1beta1's DefaultEvictionHard */
#define DEFAULT_EVICTION_HARD "memory.available=100Mi,nodefs.available=10%,imagefs.available=15%,nodefs.inodesFree=5%"

enum flag_kind {
        FLAG_STRING,        /* char * at offset */
        FLAG_DURATION,      /* uint64_t usec at offset */
        FLAG_INT,           /* int at offset */
        FLAG_INT64,         /* int64_t at offset */
        FLAG_BOOL,          /* bool at offset */
        FLAG_HEADERS,       /* --manifest-url-header */
        FLAG_MAP,           /* "k=v,k2=v2" (pflag mapStringString): char * at offset, repeated uses merge */
        FLAG_LANGLE_MAP,    /* "k<v,k2<v2" (langleSeparatedMapStringString), stored as "k=v,k2=v2" */
        FLAG_VERBOSITY,     /* --v / -v */
        FLAG_FEATURE_GATES, /* --feature-gates: merged gate by gate */
        FLAG_HELP,
        FLAG_VERSION,
        FLAG_COMPAT, /* an upstream kubelet flag ckubelet has no behaviour for: accepted, warned about once */
};

/* How a KubeletConfiguration field is read. The flag's kind decides when the file's type is the flag's
 * (CONFIG_AUTO); the other kinds are where the file holds a path, a list or a map the flag writes as text. */
enum config_kind {
        CONFIG_AUTO,           /* FLAG_STRING string, FLAG_DURATION duration (0 keeps the default), FLAG_INT
                                * int32, FLAG_INT64 integer, FLAG_BOOL boolean, FLAG_MAP/LANGLE_MAP map,
                                * FLAG_VERBOSITY non-negative int32 */
        CONFIG_PATH,           /* string, relative to the config file's directory */
        CONFIG_PATH_DEFAULT,   /* CONFIG_PATH whose "" keeps the default */
        CONFIG_STRING_DEFAULT, /* string whose "" keeps the default */
        CONFIG_DURATION_ANY,   /* duration, 0 included */
        CONFIG_INT32_DEFAULT,  /* int32 whose 0 keeps the default */
        CONFIG_LIST,           /* []string, stored as the flag's "a,b" */
        CONFIG_MAP,            /* map[string]string, stored as the flag's "k=v,k2=v2" */
        CONFIG_TAINTS,         /* []Taint, stored as "key=value:Effect,..." */
        CONFIG_RESERVED_MEMORY,
        CONFIG_CUSTOM, /* the row's own reader */
};

struct config_ctx;
struct kubelet_options;
typedef int (*config_custom_fn)(struct config_ctx *c, const char *field, json_t *v, struct kubelet_options *o);

/* the readers of the fields whose value is not one of the kinds above (config.c) */
int options_config_headers(struct config_ctx *c, const char *field, json_t *v, struct kubelet_options *o);
int options_config_feature_gates(struct config_ctx *c, const char *field, json_t *v, struct kubelet_options *o);
int options_config_shutdown_by_priority(struct config_ctx *c, const char *field, json_t *v, struct kubelet_options *o);
int options_config_max_parallel_image_pulls(struct config_ctx *c, const char *field, json_t *v,
                                            struct kubelet_options *o);

struct flag_def {
        const char *name;
        char shorthand;
        enum flag_kind kind;
        size_t offset;
        const char *field; /* KubeletConfiguration field, NULL for flag-only */
        const char *type;  /* as pflag prints it in --help */
        const char *help;
        const char *deprecated;  /* pflag's deprecation note, printed when the flag is used */
        const char *quiet;       /* FLAG_COMPAT: the value that is what ckubelet does anyway (no warning), or
                                 * COMPAT_ALWAYS_QUIET */
        enum config_kind cfg;    /* how `field` is read from the config file; CONFIG_AUTO: from `kind` */
        config_custom_fn custom; /* CONFIG_CUSTOM */
};

#define COMPAT_ALWAYS_QUIET "\001"
/* An upstream kubelet flag (of the release ckubelet follows, or an older one that distributions' unit files and
 * kubeadm drop-ins still pass) that ckubelet has no behaviour for: accepted so that ckubelet starts wherever the
 * upstream kubelet would, with one warning naming it unless its value is what ckubelet does anyway. type NULL:
 * a boolean flag (its value is checked as one). */
#define COMPAT(name, type, quiet, note) \
        { name, 0, FLAG_COMPAT, 0, NULL, type, note, NULL, quiet }

#define OFF(f) offsetof(struct kubelet_options, f)

/* table.c: every flag, in pflag's order of definition; the config fields without a flag; the config fields
 * upstream has and ckubelet does not act on */
extern const struct flag_def options_flag_defs[];
extern const size_t options_n_flag_defs;
extern const struct flag_def options_config_only_defs[];
extern const size_t options_n_config_only_defs;
extern const char *const options_unsupported_fields[];
extern const size_t options_n_unsupported_fields;
#define OPTIONS_MAX_FLAGS 512u /* parse_state's per-flag bits: table.c checks the table fits */

bool options_strv_contains(const char *const *l, size_t n, const char *s);

/* flags.c */
enum { VERSION_NONE, VERSION_TRUE, VERSION_RAW };

struct parse_state {
        bool help;
        int version;                           /* VERSION_* */
        bool warn;                             /* the first pass: print deprecation notes (once) */
        bool compat_warned[OPTIONS_MAX_FLAGS]; /* FLAG_COMPAT: warned about already */
        bool headers_seen;                     /* the first --manifest-url-header replaces what the config file gave */
        bool maps_seen[OPTIONS_MAX_FLAGS];     /* by flag index: the first use of a map flag replaces, later ones add */
};

int options_parse_duration(const char *s, uint64_t *ret_usec, struct ck_error **ret_error);
int options_header_add(char ***l, const char *k, const char *v, struct ck_error **ret_error);
int options_parse_argv(struct kubelet_options *o, struct parse_state *st, int argc, char **argv,
                       struct ck_error **ret_error);
void options_print_help(void);

/* config.c */
int options_load_configuration(struct kubelet_options *o, const char *path, const char *dropin_dir,
                               struct ck_error **ret_error);

/* validate.c */
int options_validate(const struct kubelet_options *o, struct ck_error **ret_error);
