/* SPDX-License-Identifier: Apache-2.0 */
/* Pod volumes on the node: see volumes.h. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "apis/pod_volumes.h"
#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "volumes/contents.h"
#include "volumes/subpath.h"
#include "volumes/volumes.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

#define HOSTS_FILE_MAX (1024 * 1024)
#define MANAGED_HOSTS_HEADER "# Kubernetes-managed hosts file.\n"
#define MANAGED_HOSTS_HEADER_HOST_NETWORK "# Kubernetes-managed hosts file (host network).\n"

char *vol_pod_dir(const char *root_dir, const char *uid) {
        char *p = NULL;
        if (asprintf(&p, "%s/pods/%s", root_dir ? root_dir : "/var/lib/kubelet", uid) < 0)
                return NULL;
        return p;
}

/* the plugin directory name of a volume type (kubernetes.io~<plugin>) */
static const char *plugin_name(enum volume_type t) {
        switch (t) {
        case VOLUME_EMPTY_DIR:
                return "empty-dir";
        case VOLUME_HOST_PATH:
                return "host-path";
        case VOLUME_CONFIG_MAP:
                return "configmap";
        case VOLUME_SECRET:
                return "secret";
        case VOLUME_DOWNWARD_API:
                return "downward-api";
        case VOLUME_PROJECTED:
                return "projected";
        default:
                return NULL;
        }
}

/* The host path of a volume (GetPath): the directory for emptyDir, the path itself for hostPath. */
static char *volume_host_path(const struct pod *pod, const struct volume *v, const char *root_dir) {
        _cleanup_free_ char *pd = NULL;
        char *p = NULL;

        if (v->type == VOLUME_HOST_PATH)
                return strdup(v->host_path);
        pd = vol_pod_dir(root_dir, pod->uid);
        if (!pd || asprintf(&p, "%s/volumes/kubernetes.io~%s/%s", pd, plugin_name(v->type), v->name) < 0)
                return NULL;
        return p;
}

char *vol_volume_host_path(const struct pod *pod, const struct volume *v, const char *root_dir) {
        if (!plugin_name(v->type))
                return NULL;
        return volume_host_path(pod, v, root_dir);
}

int vol_is_mount_point(int dirfd, const char *name, bool *ret) {
        _cleanup_free_ char *parent = NULL;
        struct statx a, b;
        char *slash;

        if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW, STATX_MNT_ID | STATX_INO, &a) < 0)
                return -errno;
        if (dirfd == AT_FDCWD || name[0] == '/') {
                parent = strdup(name);
                if (!parent)
                        return -ENOMEM;
                slash = strrchr(parent, '/');
                if (!slash)
                        parent[0] = '.', parent[1] = '\0';
                else if (slash == parent)
                        slash[1] = '\0';
                else
                        *slash = '\0';
                if (statx(dirfd, parent, AT_SYMLINK_NOFOLLOW, STATX_MNT_ID | STATX_INO, &b) < 0)
                        return -errno;
        } else if (statx(dirfd, "", AT_EMPTY_PATH, STATX_MNT_ID | STATX_INO, &b) < 0)
                return -errno;
        if (!(a.stx_mask & STATX_MNT_ID) || !(b.stx_mask & STATX_MNT_ID))
                return -EOPNOTSUPP;
        *ret = a.stx_mnt_id != b.stx_mnt_id || a.stx_dev_major != b.stx_dev_major ||
               a.stx_dev_minor != b.stx_dev_minor || (a.stx_ino == b.stx_ino && a.stx_dev_minor == b.stx_dev_minor);
        return 0;
}

static int is_mount_point(const char *path, bool *ret) {
        return vol_is_mount_point(AT_FDCWD, path, ret);
}

static uint64_t node_memory_bytes(void) {
        struct sysinfo si;
        if (sysinfo(&si) < 0)
                return 0;
        return (uint64_t) si.totalram * si.mem_unit;
}

/* emptyDir: a 0777 directory (umask aside), or a tmpfs (1777) on it for medium Memory, sized by sizeLimit or else
 * the node's memory (upstream: node allocatable memory / the pod's memory limit). */
static int setup_empty_dir(const struct volume *v, const char *dir, struct ck_error **ret_error) {
        bool mounted = false;
        int r;

        if (!isempty(v->medium) && !streq(v->medium, "Memory"))
                return ck_error_set(ret_error, -EINVAL, "unknown storage medium \"%s\"", v->medium);
        r = mkdir_p(dir, 0750);
        if (r < 0)
                return ck_error_set(ret_error, r, "mkdir %s: %s", dir, strerror(-r));
        if (isempty(v->medium)) {
                struct stat st;
                /* as upstream's setupDir: only when the permission bits differ, so that the setgid bit fsGroup
                 * gave the directory is kept on the next pass */
                if (stat(dir, &st) < 0)
                        return ck_error_set(ret_error, -errno, "stat %s: %m", dir);
                if ((st.st_mode & 0777) != 0777 && chmod(dir, 0777) < 0)
                        return ck_error_set(ret_error, -errno, "chmod %s: %m", dir);
                return 0;
        }
        r = is_mount_point(dir, &mounted);
        if (r < 0)
                return ck_error_set(ret_error, r, "stat %s: %s", dir, strerror(-r));
        if (mounted) {
                struct statfs sfs;
                if (statfs(dir, &sfs) < 0)
                        return ck_error_set(ret_error, -errno, "statfs %s: %m", dir);
                if ((unsigned long) sfs.f_type != TMPFS_MAGIC)
                        return ck_error_set(ret_error, -EBUSY, "%s is a mount point but not a tmpfs", dir);
                return 0;
        }
        {
                char opts[64];
                uint64_t size = v->size_limit.str && v->size_limit.value > 0 ? (uint64_t) v->size_limit.value
                                                                             : node_memory_bytes();
                /* tmpfs's own root mode, 1777 (sticky): upstream passes no mode (e2e_node's "nonexistent volume
                 * subPath should have the correct mode and owner using FSGroup" wants dgtrwxrwxrwx) */
                if (size > 0)
                        snprintf(opts, sizeof(opts), "mode=1777,size=%" PRIu64, size);
                else
                        snprintf(opts, sizeof(opts), "mode=1777");
                if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                        return ck_error_set(ret_error, -errno, "mount tmpfs on %s: %m", dir);
                log_v(2, "mounted tmpfs on %s (%s)", dir, opts);
        }
        return 0;
}

/* hostPath type checks (pkg/volume/hostpath checkType). */
static int setup_host_path(const struct volume *v, struct ck_error **ret_error) {
        return vol_host_path_check(v->host_path, v->host_path_type, ret_error);
}

int vol_host_path_check(const char *p, const char *t, struct ck_error **ret_error) {
        struct stat st;
        int r;

#define TYPE_FAIL(what) ck_error_set(ret_error, -EINVAL, "hostPath type check failed: %s is not " what, p)
        if (isempty(t))
                return 0;
        if (streq(t, "DirectoryOrCreate")) {
                if (stat(p, &st) < 0) {
                        r = mkdir_p(p, 0755);
                        if (r < 0)
                                return ck_error_set(ret_error, r,
                                                    "hostPath type check failed: cannot create directory %s: %s", p,
                                                    strerror(-r));
                        if (chmod(p, 0755) < 0)
                                return ck_error_set(ret_error, -errno, "chmod %s: %m", p);
                        return 0;
                }
                return S_ISDIR(st.st_mode) ? 0 : TYPE_FAIL("a directory");
        }
        if (streq(t, "FileOrCreate")) {
                if (stat(p, &st) < 0) {
                        /* O_EXCL: something that appeared meanwhile (a FIFO from another pod) is never opened */
                        int fd = open(p, O_CREAT | O_EXCL | O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
                                      0644);
                        if (fd < 0 && errno == EEXIST && lstat(p, &st) >= 0)
                                return S_ISREG(st.st_mode) ? 0 : TYPE_FAIL("a file");
                        if (fd < 0)
                                return ck_error_set(ret_error, -errno,
                                                    "hostPath type check failed: cannot create file %s: %m", p);
                        close(fd);
                        return 0;
                }
                return S_ISREG(st.st_mode) ? 0 : TYPE_FAIL("a file");
        }
        if (stat(p, &st) < 0)
                st.st_mode = 0;
        if (streq(t, "Directory"))
                return S_ISDIR(st.st_mode) ? 0 : TYPE_FAIL("a directory");
        if (streq(t, "File"))
                return S_ISREG(st.st_mode) ? 0 : TYPE_FAIL("a file");
        if (streq(t, "Socket"))
                return S_ISSOCK(st.st_mode) ? 0 : TYPE_FAIL("a socket file");
        if (streq(t, "CharDevice"))
                return S_ISCHR(st.st_mode) ? 0 : TYPE_FAIL("a character device");
        if (streq(t, "BlockDevice"))
                return S_ISBLK(st.st_mode) ? 0 : TYPE_FAIL("a block device");
#undef TYPE_FAIL
        return ck_error_set(ret_error, -EINVAL, "invalid HostPathType %s", t);
}

/* configMap, secret, downwardAPI, projected: a directory (a tmpfs for secrets and projected volumes, which
 * may hold tokens and secrets, as upstream) written by the atomic writer, rewritten when the content changes */
static int setup_written_volume(const struct pod *pod, const struct volume *v, const char *dir,
                                const struct kc_build_context *ctx, struct ck_error **ret_error) {
        struct volume wrapper = { .medium = (char *) (v->type == VOLUME_SECRET || v->type == VOLUME_PROJECTED ? "Memory"
                                                                                                              : "") };
        struct vol_payload payload = {};
        int r;

        r = setup_empty_dir(&wrapper, dir, ret_error);
        if (r < 0)
                return r;
        r = vol_volume_payload(pod, v, ctx, &payload, ret_error);
        if (r < 0)
                return r;
        r = vol_atomic_write(dir, &payload);
        vol_payload_done(&payload);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot write the files of the volume: %s", strerror(-r));
        return 0;
}

/* ---------------------------------------------------------------- /etc/hosts */

static int append(char **buf, size_t *len, const char *fmt, ...) _printf_(3, 4);
static int append(char **buf, size_t *len, const char *fmt, ...) {
        va_list ap;
        char *s = NULL, *n;
        int l;

        va_start(ap, fmt);
        l = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (l < 0)
                return -ENOMEM;
        n = realloc(*buf, *len + (size_t) l + 1);
        if (!n) {
                free(s);
                return -ENOMEM;
        }
        memcpy(n + *len, s, (size_t) l + 1);
        *buf = n;
        *len += (size_t) l;
        free(s);
        return 0;
}

int vol_hosts_file_content(const struct pod *pod, const char *pod_ip, const char *cluster_domain,
                           const char *host_hosts, char **ret) {
        const struct pod_volumes *pv = pod->spec.volumes;
        _cleanup_free_ char *buf = NULL, *hostname = NULL, *node_hosts = NULL;
        size_t len = 0;
        int r;

        if (pod->spec.host_network) {
                if (!host_hosts) {
                        r = read_full_file("/etc/hosts", HOSTS_FILE_MAX, &node_hosts, NULL);
                        if (r < 0)
                                return r;
                        host_hosts = node_hosts;
                }
                r = append(&buf, &len, "%s%s", MANAGED_HOSTS_HEADER_HOST_NETWORK, host_hosts);
        } else {
                hostname = pod_hostname(pod);
                if (!hostname)
                        return -ENOMEM;
                r = append(&buf, &len,
                           MANAGED_HOSTS_HEADER
                           "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
                           "fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\n"
                           "fe00::2\tip6-allrouters\n");
                if (r >= 0 && !isempty(pod_ip)) {
                        if (!isempty(pod->spec.subdomain) && !pod->spec.has_hostname_override)
                                r = append(&buf, &len, "%s\t%s.%s.%s.svc.%s\t%s\n", pod_ip, hostname,
                                           pod->spec.subdomain, pod->namespace_, strempty(cluster_domain), hostname);
                        else
                                r = append(&buf, &len, "%s\t%s\n", pod_ip, hostname);
                }
        }
        if (r >= 0 && pv && pv->n_host_aliases > 0) {
                r = append(&buf, &len, "\n# Entries added by HostAliases.\n");
                for (size_t i = 0; r >= 0 && i < pv->n_host_aliases; i++) {
                        _cleanup_free_ char *names = strv_join(pv->host_aliases[i].hostnames, "\t");
                        r = names ? append(&buf, &len, "%s\t%s\n", pv->host_aliases[i].ip, names) : -ENOMEM;
                }
        }
        if (r < 0)
                return r;
        if (!buf && !(buf = strdup("")))
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}

static bool mounts_etc_hosts(const struct volume_mounts *m) {
        for (size_t i = 0; m && i < m->n; i++)
                if (streq_ptr(m->items[i].mount_path, "/etc/hosts"))
                        return true;
        return false;
}

static int write_hosts_file(const struct pod *pod, const struct kc_build_context *ctx, struct ck_error **ret_error) {
        _cleanup_free_ char *pd = NULL, *path = NULL, *content = NULL, *old = NULL;
        size_t old_len = 0;
        int r;

        pd = vol_pod_dir(ctx->root_dir, pod->uid);
        if (!pd || asprintf(&path, "%s/etc-hosts", pd) < 0)
                return -ENOMEM;
        r = vol_hosts_file_content(pod, ctx->pod_ip, strempty(ctx->cluster_domain), NULL, &content);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot make the hosts file: %s", strerror(-r));
        if (read_full_file(path, HOSTS_FILE_MAX, &old, &old_len) >= 0 && old_len == strlen(content) &&
            memcmp(old, content, old_len) == 0)
                return 0;
        r = write_file_atomic(path, content, strlen(content), 0644);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot write %s: %s", path, strerror(-r));
        return 0;
}

/* ---------------------------------------------------------------- setup */

int vol_setup_pod(const struct pod *pod, const struct kc_build_context *ctx, struct ck_error **ret_error) {
        const struct pod_volumes *pv = pod->spec.volumes;
        _cleanup_free_ char *pd = NULL;
        int r;

        pd = vol_pod_dir(ctx->root_dir, pod->uid);
        if (!pd)
                return -ENOMEM;
        r = mkdir_p(pd, 0750);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot create the pod directory %s: %s", pd, strerror(-r));
        for (size_t i = 0; pv && i < pv->n_volumes; i++) {
                const struct volume *v = &pv->volumes[i];
                _cleanup_free_ char *dir = NULL;

                switch (v->type) {
                case VOLUME_EMPTY_DIR:
                        dir = volume_host_path(pod, v, ctx->root_dir);
                        r = dir ? setup_empty_dir(v, dir, ret_error) : -ENOMEM;
                        break;
                case VOLUME_HOST_PATH:
                        r = setup_host_path(v, ret_error);
                        break;
                case VOLUME_CONFIG_MAP:
                case VOLUME_SECRET:
                case VOLUME_DOWNWARD_API:
                case VOLUME_PROJECTED:
                        dir = volume_host_path(pod, v, ctx->root_dir);
                        r = dir ? setup_written_volume(pod, v, dir, ctx, ret_error) : -ENOMEM;
                        break;
                case VOLUME_PVC:
                case VOLUME_EPHEMERAL:
                case VOLUME_CSI:
                case VOLUME_NFS:
                        r = 0; /* mounted by the volume manager before the sandbox */
                        break;
                case VOLUME_IMAGE:
                        r = 0; /* nothing on the host: the runtime mounts the pulled image (the CRI mount's image) */
                        break;
                default:
                        r = ck_error_set(ret_error, -EOPNOTSUPP, "unsupported volume type \"%s\"", strna(v->type_name));
                        break;
                }
                if (r < 0)
                        /* upstream's wording, " : " included */
                        return ck_error_set(ret_error, r, "MountVolume.SetUp failed for volume \"%s\" : %s", v->name,
                                            ck_error_message_or(ret_error ? *ret_error : NULL, r));
        }
        r = write_hosts_file(pod, ctx, ret_error);
        if (r < 0 && ret_error && !*ret_error)
                return ck_error_set(ret_error, r, "%s", strerror(-r));
        return r;
}

/* ---------------------------------------------------------------- mounts */

static int add_mount(Runtime__V1__Mount ***l, size_t *n, const char *container_path, const char *host_path,
                     bool read_only, bool recursive_read_only, const char *propagation) {
        Runtime__V1__Mount **nl, *m;

        nl = reallocarray(*l, *n + 1, sizeof(*nl));
        if (!nl)
                return -ENOMEM;
        *l = nl;
        m = malloc(sizeof(*m));
        if (!m)
                return -ENOMEM;
        *m = (Runtime__V1__Mount) RUNTIME__V1__MOUNT__INIT;
        nl[(*n)++] = m;
        m->container_path = strdup(container_path);
        m->host_path = strdup(host_path);
        if (!m->container_path || !m->host_path)
                return -ENOMEM;
        m->readonly = read_only;
        m->recursive_read_only = recursive_read_only;
        if (streq_ptr(propagation, "HostToContainer"))
                m->propagation = RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_HOST_TO_CONTAINER;
        else if (streq_ptr(propagation, "Bidirectional"))
                m->propagation = RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_BIDIRECTIONAL;
        else
                m->propagation = RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_PRIVATE;
        return 0;
}

/* The kubelet writes these and compares what it wrote on every sync: a container that could write to them could
 * put a FIFO or a device where the atomic writer reads, and swap files under it. Upstream mounts them read-only
 * whatever the volumeMount says (the mounters' ReadOnly attribute, CVE-2017-1002102); so do we. */
static bool always_read_only(enum volume_type t) {
        return t == VOLUME_CONFIG_MAP || t == VOLUME_SECRET || t == VOLUME_DOWNWARD_API || t == VOLUME_PROJECTED;
}

static void free_mounts(Runtime__V1__Mount **l, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (l[i])
                        protobuf_c_message_free_unpacked(&l[i]->base, NULL);
        free(l);
}

/* makeMounts for an image volume: no host path, the image (the ref the pull resolved, as the user wrote it too),
 * read-only whatever the volumeMount says (the image plugin's ReadOnly attribute), subPath and subPathExpr (expanded)
 * as image_sub_path, checked as a subPath is (relative, no ".."); the runtime fails a sub path not in the image */
static int add_image_mount(Runtime__V1__Mount ***l, size_t *n, const struct container *c, const struct volume *v,
                           const struct volume_mount *vm, bool rro, const struct kc_build_context *ctx) {
        _cleanup_free_ char *sub = NULL;
        const char *ref = NULL;
        Runtime__V1__Mount *m;
        int r;

        if (ctx->image_volume_ref)
                ref = ctx->image_volume_ref(ctx->image_volume_userdata, v->name);
        if (isempty(ref))
                return ctx->report ? ck_error_set(&ctx->report->error, -ENOENT,
                                                  "image volume \"%s\" has not been pulled", v->name)
                                   : -ENOENT;
        if (!isempty(vm->sub_path_expr)) {
                r = vol_subpath_expand(c, vm->sub_path_expr, &sub);
                if (r < 0)
                        return r;
        } else if (!isempty(vm->sub_path) && !(sub = strdup(vm->sub_path)))
                return -ENOMEM;
        if (sub && sub[0] == '/')
                return ctx->report ? ck_error_set(&ctx->report->error, -EINVAL,
                                                  "error SubPath `%s` must not be an absolute path", sub)
                                   : -EINVAL;
        if (sub && pod_path_has_backsteps(sub))
                return ctx->report ? ck_error_set(&ctx->report->error, -EINVAL,
                                                  "unable to provision SubPath `%s`: must not contain '..'", sub)
                                   : -EINVAL;
        r = add_mount(l, n, vm->mount_path, "", true, rro, vm->mount_propagation);
        if (r < 0)
                return r;
        m = (*l)[*n - 1];
        free(m->host_path);
        m->host_path = (char *) protobuf_c_empty_string;
        m->image = malloc(sizeof(*m->image));
        if (!m->image)
                return -ENOMEM;
        *m->image = (Runtime__V1__ImageSpec) RUNTIME__V1__IMAGE_SPEC__INIT;
        m->image->image = strdup(ref);
        m->image->user_specified_image = strdup(strempty(v->image_reference));
        if (!m->image->image || !m->image->user_specified_image)
                return -ENOMEM;
        if (sub)
                m->image_sub_path = TAKE_PTR(sub);
        return 0;
}

/* the host path of volumeMount vm's volume, and whether it must be mounted read-only */
static int mount_host_path(const struct pod *pod, const struct volume_mount *vm, const struct kc_build_context *ctx,
                           char **ret, bool *ret_must_ro) {
        const struct volume *v = pod_volume_find(pod, vm->name);
        char *hp;

        *ret_must_ro = false;
        if (v && !plugin_name(v->type) && ctx->managed_volume_path) {
                hp = ctx->managed_volume_path(ctx->managed_volume_userdata, v->name, ret_must_ro);
                if (!hp)
                        return -ENOENT; /* not mounted (yet): the pass waited for it, so it went away */
        } else if (!v || !plugin_name(v->type))
                return -EOPNOTSUPP; /* refused by vol_setup_pod already */
        else if (!(hp = volume_host_path(pod, v, ctx->root_dir)))
                return -ENOMEM;
        *ret = hp;
        return 0;
}

static bool has_subpath(const struct volume_mount *vm) {
        return !isempty(vm->sub_path) || !isempty(vm->sub_path_expr);
}

int vol_container_subpath_requests(const struct pod *pod, const struct container *c, const struct kc_build_context *ctx,
                                   struct vol_subpath_req **ret, size_t *ret_n) {
        const struct volume_mounts *m = pod_container_mounts(pod, c);
        struct vol_subpath_req *l = NULL;
        size_t n = 0;
        int r = 0;

        for (size_t i = 0; m && i < m->n; i++) {
                _cleanup_free_ char *hp = NULL;
                struct vol_subpath_req *nl;
                bool must_ro;

                const struct volume *v = pod_volume_find(pod, m->items[i].name);
                if (!has_subpath(&m->items[i]) || (v && v->type == VOLUME_IMAGE))
                        continue; /* an image volume's sub path is the runtime's (image_sub_path) */
                r = mount_host_path(pod, &m->items[i], ctx, &hp, &must_ro);
                if (r < 0)
                        break;
                nl = reallocarray(l, n + 1, sizeof(*nl));
                if (!nl) {
                        r = -ENOMEM;
                        break;
                }
                l = nl;
                r = vol_subpath_request(pod, c, i, hp, ctx, &l[n]);
                if (r < 0)
                        break;
                n++;
        }
        if (r < 0) {
                vol_subpath_reqs_free(l, n);
                return r;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

void vol_subpath_reqs_free(struct vol_subpath_req *l, size_t n) {
        for (size_t i = 0; i < n; i++)
                vol_subpath_req_done(&l[i]);
        free(l);
}

int vol_container_mounts(const struct pod *pod, const struct container *c, const struct kc_build_context *ctx,
                         Runtime__V1__Mount ***ret, size_t *ret_n) {
        const struct volume_mounts *m = pod_container_mounts(pod, c);
        Runtime__V1__Mount **l = NULL;
        size_t n = 0;
        int r = 0;

        for (size_t i = 0; m && i < m->n; i++) {
                const struct volume_mount *vm = &m->items[i];
                const struct volume *v = pod_volume_find(pod, vm->name);
                _cleanup_free_ char *hp = NULL;
                bool must_ro = false, rro = false;
                _cleanup_ck_error_ struct ck_error *rro_error = NULL;

                /* makeMounts: the recursive read-only mode first, a mount that cannot have it fails the container */
                r = pod_mount_recursive_read_only(vm, ctx->runtime_supports_rro, &rro, &rro_error);
                if (r == -EINVAL) {
                        r = ctx->report ? ck_error_set(&ctx->report->error, r,
                                                       "failed to resolve recursive read-only mode: %s",
                                                       ck_error_message(rro_error))
                                        : r;
                        break;
                }
                if (r < 0)
                        break;
                if (v && v->type == VOLUME_IMAGE) {
                        r = add_image_mount(&l, &n, c, v, vm, rro, ctx);
                        if (r < 0)
                                break;
                        continue;
                }
                r = mount_host_path(pod, vm, ctx, &hp, &must_ro);
                if (r < 0)
                        break;
                if (has_subpath(vm)) {
                        /* bound on a worker beforehand (vol_container_subpath_requests, vol_subpath_bind): never here,
                         * on the loop */
                        if (!ctx->subpath_targets || i >= ctx->n_subpath_targets || !ctx->subpath_targets[i]) {
                                r = -EAGAIN;
                                break;
                        }
                        free(hp);
                        hp = strdup(ctx->subpath_targets[i]);
                        if (!hp) {
                                r = -ENOMEM;
                                break;
                        }
                }
                r = add_mount(&l, &n, vm->mount_path, hp, vm->read_only || must_ro || always_read_only(v->type), rro,
                              vm->mount_propagation);
                if (r < 0)
                        break;
        }
        if (r >= 0 && !isempty(ctx->pod_ip) && !mounts_etc_hosts(m)) {
                _cleanup_free_ char *pd = vol_pod_dir(ctx->root_dir, pod->uid), *hosts = NULL;
                if (!pd || asprintf(&hosts, "%s/etc-hosts", pd) < 0)
                        r = -ENOMEM;
                else
                        r = add_mount(&l, &n, "/etc/hosts", hosts, false, false, NULL);
        }
        if (r < 0) {
                free_mounts(l, n);
                return r;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

/* ---------------------------------------------------------------- orphan cleanup */

/* unmount our tmpfs volumes (emptyDir medium Memory, secret, projected) of a pod directory */
static void unmount_plugin_dir(const char *base) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *e;

        d = opendir(base);
        if (!d)
                return;
        while ((e = readdir(d))) {
                _cleanup_free_ char *p = NULL;
                struct statfs sfs;
                bool mounted = false;
                if (e->d_name[0] == '.' || asprintf(&p, "%s/%s", base, e->d_name) < 0)
                        continue;
                if (vol_is_mount_point(AT_FDCWD, p, &mounted) < 0 || !mounted)
                        continue;
                if (statfs(p, &sfs) < 0 || (unsigned long) sfs.f_type != TMPFS_MAGIC) {
                        log_warning("%s is a mount point but not our tmpfs: left alone", p);
                        continue;
                }
                if (umount2(p, UMOUNT_NOFOLLOW) < 0)
                        log_warning("cannot unmount the tmpfs of %s: %m", p);
                else
                        log_v(2, "unmounted tmpfs %s", p);
        }
}

/* the plugins whose volumes the sync sets up itself (the volume manager's are its own) */
static const char *const sync_plugins[] = { "empty-dir", "secret", "projected", "configmap", "downward-api" };

static void unmount_empty_dirs(const char *pod_dir) {
        for (size_t i = 0; i < ELEMENTSOF(sync_plugins); i++) {
                _cleanup_free_ char *base = NULL;
                if (asprintf(&base, "%s/volumes/kubernetes.io~%s", pod_dir, sync_plugins[i]) >= 0)
                        unmount_plugin_dir(base);
        }
}

static int check_uid(const char *uid) {
        return isempty(uid) || strchr(uid, '/') || streq(uid, ".") || streq(uid, "..") ? -EINVAL : 0;
}

int vol_remove_pod_dir(const char *root_dir, const char *uid, const _Atomic bool *cancel) {
        _cleanup_free_ char *base = NULL, *pd = NULL;
        _cleanup_close_ int basefd = -EBADF;

        if (check_uid(uid) < 0)
                return -EINVAL;
        if (asprintf(&base, "%s/pods", root_dir ? root_dir : "/var/lib/kubelet") < 0 ||
            asprintf(&pd, "%s/%s", base, uid) < 0)
                return -ENOMEM;
        basefd = open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (basefd < 0)
                return errno == ENOENT ? 0 : -errno;
        (void) vol_subpath_unmount_all(pd);
        unmount_empty_dirs(pd);
        return fs_remove_tree_at_cancellable(basefd, uid, cancel);
}

int vol_teardown_pod_volumes(const char *root_dir, const char *uid, const _Atomic bool *cancel) {
        _cleanup_free_ char *pd = NULL;
        _cleanup_close_ int podfd = -EBADF, volfd = -EBADF;
        int r, k;

        if (check_uid(uid) < 0)
                return -EINVAL;
        pd = vol_pod_dir(root_dir ? root_dir : "/var/lib/kubelet", uid);
        if (!pd)
                return -ENOMEM;
        podfd = open(pd, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (podfd < 0)
                return errno == ENOENT ? 0 : -errno;
        /* CleanSubPaths: the binds first, then their directories (never through a bind still mounted) */
        r = vol_subpath_unmount_all(pd);
        if (r >= 0)
                r = fs_remove_tree_at_cancellable(podfd, "volume-subpaths", cancel);
        if (r == -ECANCELED)
                return r;
        unmount_empty_dirs(pd);
        volfd = openat(podfd, "volumes", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (volfd < 0)
                return errno == ENOENT ? r : -errno;
        for (size_t i = 0; i < ELEMENTSOF(sync_plugins); i++) {
                char name[64];

                (void) snprintf(name, sizeof(name), "kubernetes.io~%s", sync_plugins[i]);
                k = fs_remove_tree_at_cancellable(volfd, name, cancel);
                if (k < 0 && r == 0)
                        r = k;
                if (k == -ECANCELED)
                        break;
        }
        return r;
}
