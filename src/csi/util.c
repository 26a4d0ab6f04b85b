/* SPDX-License-Identifier: Apache-2.0 */
/* The pure parts of the CSI volume plugin: see csi.h. */

#include "csi/csi.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/hash.h"
#include "basic/json.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "csi.pb-c.h"

/* utilstrings.EscapeQualifiedName: "/" → "~" */
static char *escape_qualified(const char *s) {
        char *e = strdup(s);
        for (char *p = e; e && *p; p++)
                if (*p == '/')
                        *p = '~';
        return e;
}

char *csi_pod_volume_dir(const char *root_dir, const char *pod_uid, const char *spec_name) {
        _cleanup_free_ char *n = escape_qualified(spec_name);
        char *p = NULL;

        if (!n || asprintf(&p, "%s/pods/%s/volumes/%s/%s", root_dir, pod_uid, CSI_PLUGIN_DIR_NAME, n) < 0)
                return NULL;
        return p;
}

char *csi_pod_mount_path(const char *root_dir, const char *pod_uid, const char *spec_name) {
        _cleanup_free_ char *d = csi_pod_volume_dir(root_dir, pod_uid, spec_name);
        char *p = NULL;

        if (!d || asprintf(&p, "%s/mount", d) < 0)
                return NULL;
        return p;
}

static int sha256_hex(const char *s, char buf[static 65]) {
        return hash_hex("sha256", s, strlen(s), buf, 65);
}

char *csi_global_dir(const char *root_dir, const char *driver, const char *volume_handle) {
        char sha[65];
        char *p = NULL;

        if (sha256_hex(volume_handle, sha) < 0 ||
            asprintf(&p, "%s/plugins/%s/%s/%s", root_dir, CSI_PLUGIN_NAME, driver, sha) < 0)
                return NULL;
        return p;
}

char *csi_global_mount_path(const char *root_dir, const char *driver, const char *volume_handle) {
        _cleanup_free_ char *d = csi_global_dir(root_dir, driver, volume_handle);
        char *p = NULL;

        if (!d || asprintf(&p, "%s/globalmount", d) < 0)
                return NULL;
        return p;
}

char *csi_unique_volume_name(const char *driver, const char *volume_handle) {
        char *p = NULL;
        if (asprintf(&p, "%s/%s^%s", CSI_PLUGIN_NAME, driver, volume_handle) < 0)
                return NULL;
        return p;
}

static char *csi_sha_name(const char *a, const char *b, const char *c) {
        _cleanup_free_ char *in = NULL;
        char sha[65], *p = NULL;

        if (asprintf(&in, "%s%s%s", a, b, strempty(c)) < 0 || sha256_hex(in, sha) < 0 ||
            asprintf(&p, "csi-%s", sha) < 0)
                return NULL;
        return p;
}

char *csi_attachment_name(const char *volume_handle, const char *driver, const char *node_name) {
        return csi_sha_name(volume_handle, driver, node_name);
}

char *csi_ephemeral_volume_handle(const char *pod_uid, const char *volume_name) {
        return csi_sha_name(pod_uid, volume_name, NULL);
}

/* ---------------------------------------------------------------- vol_data.json */

void csi_vol_data_done(struct csi_vol_data *d) {
        if (!d)
                return;
        free(d->spec_vol_id);
        free(d->volume_handle);
        free(d->driver_name);
        free(d->node_name);
        free(d->attachment_id);
        free(d->lifecycle_mode);
        *d = (struct csi_vol_data) {};
}

char *csi_vol_data_format(const struct csi_vol_data *d) {
        json_auto_t *o = json_object();
        const struct {
                const char *key, *value;
        } f[] = {
                { "attachmentID", d->attachment_id }, { "driverName", d->driver_name },
                { "nodeName", d->node_name },         { "specVolID", d->spec_vol_id },
                { "volumeHandle", d->volume_handle }, { "volumeLifecycleMode", d->lifecycle_mode },
        };

        if (!o)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(f); i++)
                if (f[i].value && json_object_set_new(o, f[i].key, json_string(f[i].value)) < 0)
                        return NULL;
        return json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
}

int csi_vol_data_parse(const char *text, struct csi_vol_data *ret, struct ck_error **ret_error) {
        struct csi_vol_data d = {};
        json_auto_t *o = NULL;
        json_error_t je;
        const char *key;
        json_t *v;

        o = json_loads(text, 0, &je);
        if (!json_is_object(o))
                return ck_error_set(ret_error, -EBADMSG, "not a JSON object: %s", o ? "wrong type" : je.text);
        json_object_foreach(o, key, v) {
                char **slot = streq(key, "specVolID")             ? &d.spec_vol_id
                              : streq(key, "volumeHandle")        ? &d.volume_handle
                              : streq(key, "driverName")          ? &d.driver_name
                              : streq(key, "nodeName")            ? &d.node_name
                              : streq(key, "attachmentID")        ? &d.attachment_id
                              : streq(key, "volumeLifecycleMode") ? &d.lifecycle_mode
                                                                  : NULL;
                if (!json_is_string(v)) {
                        csi_vol_data_done(&d);
                        return ck_error_set(ret_error, -EBADMSG, "%s: not a string", key);
                }
                if (slot && free_and_strdup(slot, json_string_value(v)) < 0) {
                        csi_vol_data_done(&d);
                        return ck_error_set(ret_error, -ENOMEM, "out of memory");
                }
        }
        if (isempty(d.driver_name) || isempty(d.volume_handle)) {
                csi_vol_data_done(&d);
                return ck_error_set(ret_error, -EBADMSG, "no driverName or volumeHandle");
        }
        *ret = d;
        return 0;
}

int csi_vol_data_save(const char *dir, const struct csi_vol_data *d) {
        _cleanup_free_ char *text = csi_vol_data_format(d), *path = NULL;

        if (!text || asprintf(&path, "%s/%s", dir, CSI_VOL_DATA_FILE) < 0)
                return -ENOMEM;
        return write_file_atomic(path, text, strlen(text), 0600);
}

int csi_vol_data_load(const char *dir, struct csi_vol_data *ret, struct ck_error **ret_error) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        int r;

        if (asprintf(&path, "%s/%s", dir, CSI_VOL_DATA_FILE) < 0)
                return ck_error_set(ret_error, -ENOMEM, "out of memory");
        r = read_full_file(path, CSI_VOL_DATA_MAX, &text, NULL);
        if (r < 0)
                return ck_error_set(ret_error, r, "failed to open volume data file [%s]: %s", path, strerror(-r));
        r = csi_vol_data_parse(text, ret, ret_error);
        if (r < 0)
                return ck_error_prefix(ret_error, "failed to parse volume data file [%s]", path);
        return 0;
}

/* ---------------------------------------------------------------- requests */

int csi_volume_context(const struct strmap *attributes, const struct csi_pod_info *pod, bool ephemeral,
                       struct strmap *ret) {
        struct strmap m = {};
        int r = 0;

        for (size_t i = 0; attributes && i < attributes->n && r >= 0; i++)
                r = strmap_set(&m, attributes->keys[i], attributes->values[i]);
        if (r >= 0 && pod) {
                r = strmap_set(&m, "csi.storage.k8s.io/pod.name", strempty(pod->name));
                if (r >= 0)
                        r = strmap_set(&m, "csi.storage.k8s.io/pod.namespace", strempty(pod->namespace_));
                if (r >= 0)
                        r = strmap_set(&m, "csi.storage.k8s.io/pod.uid", strempty(pod->uid));
                if (r >= 0)
                        r = strmap_set(&m, "csi.storage.k8s.io/serviceAccount.name", strempty(pod->service_account));
                if (r >= 0)
                        r = strmap_set(&m, "csi.storage.k8s.io/ephemeral", ephemeral ? "true" : "false");
        }
        if (r < 0) {
                strmap_done(&m);
                return r;
        }
        *ret = m;
        return 0;
}

int csi_access_mode(const char *m) {
        if (streq_ptr(m, "ReadWriteOnce"))
                return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_WRITER;
        if (streq_ptr(m, "ReadOnlyMany"))
                return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY;
        if (streq_ptr(m, "ReadWriteMany"))
                return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_MULTI_WRITER;
        return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__UNKNOWN;
}

/* ---------------------------------------------------------------- errors */

/* Go's codes.Code names ("DeadlineExceeded"); "Code(N)" for unknown ones is not needed: "Unknown". */
static const char *csi_code_name(int c) {
        static const char *const names[] = {
                "OK",       "Canceled",        "Unknown",          "InvalidArgument",   "DeadlineExceeded",
                "NotFound", "AlreadyExists",   "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
                "Aborted",  "OutOfRange",      "Unimplemented",    "Internal",          "Unavailable",
                "DataLoss", "Unauthenticated",
        };
        return c >= 0 && (size_t) c < ELEMENTSOF(names) ? names[c] : "Unknown";
}

char *csi_rpc_error(int grpc_status, const char *message) {
        char *p = NULL;
        if (asprintf(&p, "rpc error: code = %s desc = %s", csi_code_name(grpc_status), strempty(message)) < 0)
                return NULL;
        return p;
}

bool csi_is_final_error(int c) {
        switch (c) {
        case 1:  /* Canceled */
        case 4:  /* DeadlineExceeded */
        case 14: /* Unavailable */
        case 8:  /* ResourceExhausted */
        case 10: /* Aborted */
                return false;
        default:
                return true;
        }
}

/* utilversion.ParseGeneric: [v]X[.Y[.Z]] with an optional suffix after the numbers ignored */
static int parse_version(const char *s, unsigned v[3]) {
        unsigned n = 0;
        const char *p = s;

        v[0] = v[1] = v[2] = 0;
        while (*p == ' ')
                p++;
        if (*p == 'v')
                p++;
        for (;;) {
                char *end;
                unsigned long x;
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                x = strtoul(p, &end, 10);
                if (x > 1000000 || n >= 3)
                        return -EINVAL;
                v[n++] = (unsigned) x;
                p = end;
                if (*p != '.')
                        break;
                p++;
        }
        if (n < 2)
                return -EINVAL; /* ParseGeneric wants at least major.minor */
        return 0;
}

int csi_version_compare(const char *a, const char *b) {
        unsigned x[3], y[3];
        if (parse_version(a, x) < 0 || parse_version(b, y) < 0)
                return strcmp(a, b);
        for (size_t i = 0; i < 3; i++)
                if (x[i] != y[i])
                        return x[i] < y[i] ? -1 : 1;
        return 0;
}

int csi_highest_supported_version(char *const *versions, char **ret, struct ck_error **ret_error) {
        unsigned best[3] = {}, v[3];
        bool found = false;
        char *s = NULL;

        if (!versions || !versions[0])
                return ck_error_set(ret_error, -EINVAL,
                                    "kubernetes.io/csi: CSI driver reporting empty array for supported versions");
        for (size_t i = 0; versions[i]; i++) {
                if (parse_version(versions[i], v) < 0 || v[0] > 1)
                        continue;
                if (!found || v[0] > best[0] ||
                    (v[0] == best[0] && (v[1] > best[1] || (v[1] == best[1] && v[2] > best[2])))) {
                        memcpy(best, v, sizeof(best));
                        found = true;
                }
        }
        if (!found)
                return ck_error_set(ret_error, -EINVAL,
                                    "could not find a highest supported version from versions reported by this driver");
        if (best[0] != 1)
                return ck_error_set(ret_error, -EINVAL,
                                    "highest supported version reported by driver is %u.%u.%u, must be v1.x", best[0],
                                    best[1], best[2]);
        if (asprintf(&s, "%u.%u.%u", best[0], best[1], best[2]) < 0)
                return ck_error_set(ret_error, -ENOMEM, "out of memory");
        *ret = s;
        return 0;
}
