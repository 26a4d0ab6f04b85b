/* SPDX-License-Identifier: Apache-2.0 */
#include "kubelet/userns.h"
#include "kubelet/userns-testing.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/hashmap.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"

#define USERNS_FILE "userns"
#define USERNS_FILE_MAX 4096
#define SUBID_FILE_MAX (1u << 20)

struct userns_manager {
        char *pods_dir;
        uint32_t length;       /* IDs per pod */
        uint32_t off;          /* the first slot: kubelet's first ID / length */
        uint32_t n;            /* slots */
        uint8_t *used;         /* bitmap of n slots */
        struct hashmap by_pod; /* UID → slot + 1 (as a pointer-sized integer) */
};

static bool slot_used(const struct userns_manager *m, uint32_t i) {
        return m->used[i / 8] & (1u << (i % 8));
}

static void slot_set(struct userns_manager *m, uint32_t i, bool v) {
        if (v)
                m->used[i / 8] |= (uint8_t) (1u << (i % 8));
        else
                m->used[i / 8] &= (uint8_t) ~(1u << (i % 8));
}

/* the single "<user>:<start>:<count>" entry of a subordinate ID file; -ENOENT when there is none */
static int subid_entry(const char *path, const char *user, uint32_t *ret_start, uint32_t *ret_count,
                       struct ck_error **ret_error) {
        _cleanup_free_ char *data = NULL;
        size_t n = 0;
        int found = 0, r;
        char *save = NULL;

        r = read_full_file(path, SUBID_FILE_MAX, &data, NULL);
        if (r == -ENOENT)
                return -ENOENT;
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot read %s: %s", path, strerror(-r));
        for (char *l = strtok_r(data, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                char name[256];
                unsigned long long start, count;
                n++;
                if (sscanf(l, "%255[^:]:%llu:%llu", name, &start, &count) != 3 || !streq(name, user))
                        continue;
                if (start > UINT32_MAX || count > UINT32_MAX)
                        return ck_error_set(ret_error, -ERANGE, "%s: the range of %s is out of range: %s", path, user,
                                            l);
                if (found++)
                        return ck_error_set(ret_error, -EINVAL,
                                            "%s: user %s has more than one range: it must contain only one", path,
                                            user);
                *ret_start = (uint32_t) start;
                *ret_count = (uint32_t) count;
        }
        return found ? 0 : -ENOENT;
}

/* getKubeletMappings */
static int kubelet_mappings(const struct userns_config *cfg, uint32_t length, uint32_t *ret_first, uint32_t *ret_len,
                            struct ck_error **ret_error) {
        const char *user = cfg->user ? cfg->user : "kubelet";
        uint32_t us = 0, uc = 0, gs = 0, gc = 0;
        int r, g;

        *ret_first = length;
        *ret_len = (uint32_t) ((UINT64_C(1) << 32) - length);
        if (!cfg->user_exists) {
                log_v(5, "user namespaces: user %s not found, using default mappings", user);
                return 0;
        }
        r = subid_entry(cfg->subuid_path ? cfg->subuid_path : "/etc/subuid", user, &us, &uc, ret_error);
        if (r < 0 && r != -ENOENT)
                return r;
        g = subid_entry(cfg->subgid_path ? cfg->subgid_path : "/etc/subgid", user, &gs, &gc, ret_error);
        if (g < 0 && g != -ENOENT)
                return g;
        if (r == -ENOENT && g == -ENOENT) {
                log_v(5, "user namespaces: no subordinate IDs for user %s, using default mappings", user);
                return 0;
        }
        if (r != g || us != gs || uc != gc)
                return ck_error_set(ret_error, -EINVAL, "mismatched subuids and subgids for user \"%s\"", user);
        log_v(5, "user namespaces: user %s found, using its subordinate IDs %" PRIu32 "+%" PRIu32, user, us, uc);
        *ret_first = us;
        *ret_len = uc;
        return 0;
}

static char *pod_file(const struct userns_manager *m, const char *uid) {
        char *p = NULL;
        return asprintf(&p, "%s/%s/" USERNS_FILE, m->pods_dir, uid) < 0 ? NULL : p;
}

/* record: the range [from, from+length) is the pod's */
static int record(struct userns_manager *m, const char *uid, uint32_t from, uint32_t length,
                  struct ck_error **ret_error) {
        uintptr_t prev = (uintptr_t) hashmap_get(&m->by_pod, uid);
        uint32_t slot;
        char *key;
        int r;

        if (length != m->length)
                return ck_error_set(ret_error, -EINVAL, "wrong user namespace length %" PRIu32, length);
        if (from % m->length != 0)
                return ck_error_set(ret_error, -EINVAL, "wrong user namespace offset specified %" PRIu32, from);
        if (from / m->length < m->off || from / m->length - m->off >= m->n)
                return ck_error_set(ret_error, -ERANGE, "id %" PRIu32 " is out of range", from);
        slot = from / m->length - m->off;
        if (prev && prev - 1 != slot)
                return ck_error_set(ret_error, -EEXIST, "different user namespace range already used by pod \"%s\"",
                                    uid);
        if (prev)
                return 0;
        if (slot_used(m, slot))
                return ck_error_set(ret_error, -EEXIST, "range picked for pod \"%s\" already taken", uid);
        key = strdup(uid);
        if (!key)
                return -ENOMEM;
        r = hashmap_put(&m->by_pod, key, (void *) (uintptr_t) (slot + 1));
        if (r < 0) {
                free(key);
                return r;
        }
        slot_set(m, slot, true);
        return 0;
}

static int mapping_of(json_t *l, uint32_t *ret_host, uint32_t *ret_container, uint32_t *ret_len) {
        json_t *e = json_array_get(l, 0), *h = json_object_get(e, "hostId"), *c = json_object_get(e, "containerId"),
               *n = json_object_get(e, "length");

        if (json_array_size(l) != 1 || !json_is_integer(h) || !json_is_integer(c) || !json_is_integer(n) ||
            json_integer_value(h) < 0 || json_integer_value(h) > UINT32_MAX || json_integer_value(c) < 0 ||
            json_integer_value(c) > UINT32_MAX || json_integer_value(n) < 0 || json_integer_value(n) > UINT32_MAX)
                return -EINVAL;
        *ret_host = (uint32_t) json_integer_value(h);
        *ret_container = (uint32_t) json_integer_value(c);
        *ret_len = (uint32_t) json_integer_value(n);
        return 0;
}

/* parseUserNsFileAndRecord */
static int parse_and_record(struct userns_manager *m, const char *uid, const char *data, uint32_t *ret_host,
                            uint32_t *ret_len, struct ck_error **ret_error) {
        json_auto_t *j = json_loads(data, 0, NULL);
        uint32_t uh, uc, ul, gh, gc, gl;

        if (!j)
                return ck_error_set(ret_error, -EINVAL, "invalid user namespace mappings file of pod %s", uid);
        if (mapping_of(json_object_get(j, "uidMappings"), &uh, &uc, &ul) < 0)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid user namespace configuration: no more than one mapping allowed.");
        if (mapping_of(json_object_get(j, "gidMappings"), &gh, &gc, &gl) < 0)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid user namespace configuration: GID and UID mappings should be identical.");
        if (uh != gh || uc != gc || ul != gl)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid user namespace configuration: GID and UID mapping should be identical");
        if (uc != 0)
                return ck_error_set(ret_error, -EINVAL, "invalid user namespace configuration: UID 0 must be mapped");
        *ret_host = uh;
        *ret_len = ul;
        return record(m, uid, uh, ul, ret_error);
}

int userns_manager_new(const struct userns_config *cfg, struct userns_manager **ret, struct ck_error **ret_error) {
        struct userns_manager *m;
        uint32_t length = cfg->ids_per_pod ? cfg->ids_per_pod : USERNS_UNIT_LENGTH, first, len;
        DIR *d;
        int r;

        if (length % USERNS_UNIT_LENGTH != 0)
                return ck_error_set(ret_error, -EINVAL,
                                    "kubelet user namespace length %" PRIu32 " is not a multiple of %u", length,
                                    USERNS_UNIT_LENGTH);
        r = kubelet_mappings(cfg, length, &first, &len, ret_error);
        if (r < 0)
                return r;
        if (first % length != 0)
                return ck_error_set(ret_error, -EINVAL,
                                    "kubelet user assigned ID %" PRIu32 " is not a multiple of %" PRIu32, first,
                                    length);
        if (first < length)
                return ck_error_set(ret_error, -EINVAL,
                                    "kubelet user assigned ID %" PRIu32 " must be greater or equal to %" PRIu32, first,
                                    length);
        if (len % length != 0)
                return ck_error_set(ret_error, -EINVAL,
                                    "kubelet user assigned IDs length %" PRIu32 " is not a multiple of %" PRIu32, len,
                                    length);
        if (len / length < (uint32_t) MAX(cfg->max_pods, 0))
                return ck_error_set(ret_error, -EINVAL, "kubelet user assigned IDs are not enough to support %d pods",
                                    cfg->max_pods);
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->length = length;
        m->off = first / length;
        m->n = len / length;
        m->used = calloc((m->n + 7) / 8, 1);
        if (!m->used || asprintf(&m->pods_dir, "%s/pods", cfg->root_dir) < 0) {
                userns_manager_free(m);
                return -ENOMEM;
        }
        log_v(5, "User namespace manager mapping: offset=%" PRIu32 " length=%" PRIu32 " idsPerPod=%" PRIu32, m->off,
              m->n, length);
        /* the ranges of the pods on disk (recordPodMappings) */
        d = opendir(m->pods_dir);
        if (!d) {
                if (errno == ENOENT) {
                        *ret = m;
                        return 0;
                }
                r = -errno;
                userns_manager_free(m);
                return ck_error_set(ret_error, r, "read pods from disk: %s", strerror(-r));
        }
        r = 0;
        for (struct dirent *e; r >= 0 && (e = readdir(d));) {
                _cleanup_free_ char *path = NULL, *data = NULL;
                uint32_t h, l;
                if (e->d_name[0] == '.')
                        continue;
                path = pod_file(m, e->d_name);
                if (!path) {
                        r = -ENOMEM;
                        break;
                }
                r = read_full_file(path, USERNS_FILE_MAX, &data, NULL);
                if (r == -ENOENT || r == -ENOTDIR) {
                        r = 0;
                        continue;
                }
                if (r < 0) {
                        r = ck_error_set(ret_error, r, "record pod mappings for existing pod \"%s\": %s", e->d_name,
                                         strerror(-r));
                        break;
                }
                if (isempty(data))
                        continue;
                r = parse_and_record(m, e->d_name, data, &h, &l, ret_error);
                if (r < 0 && ret_error && *ret_error) {
                        _cleanup_free_ char *inner = strdup(ck_error_message(*ret_error));
                        ck_error_free(*ret_error);
                        *ret_error = NULL;
                        r = ck_error_set(ret_error, r, "record pod mappings for existing pod \"%s\": %s", e->d_name,
                                         strna(inner));
                }
        }
        closedir(d);
        if (r < 0) {
                userns_manager_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

struct userns_manager *userns_manager_free(struct userns_manager *m) {
        size_t i = 0;
        const char *k;
        void *v;

        if (!m)
                return NULL;
        while (hashmap_iterate(&m->by_pod, &i, &k, &v))
                free((char *) k);
        hashmap_done(&m->by_pod);
        free(m->used);
        free(m->pods_dir);
        free(m);
        return NULL;
}

/* writeMappingsToFile: atomically, and the pod directory synced (durable before the sandbox uses the range) */
static int write_mappings(const struct userns_manager *m, const char *uid, uint32_t host, uint32_t length) {
        _cleanup_free_ char *path = pod_file(m, uid), *dir = NULL, *data = NULL;
        json_auto_t *j = NULL;
        int fd, r;

        if (!path || asprintf(&dir, "%s/%s", m->pods_dir, uid) < 0)
                return -ENOMEM;
        j = json_pack("{s:[{s:I, s:i, s:I}], s:[{s:I, s:i, s:I}]}", "uidMappings", "hostId", (json_int_t) host,
                      "containerId", 0, "length", (json_int_t) length, "gidMappings", "hostId", (json_int_t) host,
                      "containerId", 0, "length", (json_int_t) length);
        data = j ? json_dumps(j, JSON_COMPACT) : NULL;
        if (!data)
                return -ENOMEM;
        r = mkdir_p(dir, 0750);
        if (r < 0)
                return r;
        r = write_file_atomic(path, data, strlen(data), 0600);
        if (r < 0)
                return r;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = fsync(fd) < 0 ? -errno : 0;
        close(fd);
        return r;
}

int userns_get_or_create(struct userns_manager *m, const char *pod_uid, uint32_t *ret_host_id, uint32_t *ret_length,
                         struct ck_error **ret_error) {
        _cleanup_free_ char *path = pod_file(m, pod_uid), *data = NULL;
        uint32_t start = 0, slot, host;
        int r;

        if (!path)
                return -ENOMEM;
        r = read_full_file(path, USERNS_FILE_MAX, &data, NULL);
        if (r < 0 && r != -ENOENT && r != -ENOTDIR)
                return ck_error_set(ret_error, r, "user namespace: cannot read %s: %s", path, strerror(-r));
        if (r >= 0 && !isempty(data)) {
                r = parse_and_record(m, pod_uid, data, ret_host_id, ret_length, ret_error);
                if (r < 0 && ret_error && *ret_error) {
                        _cleanup_free_ char *inner = strdup(ck_error_message(*ret_error));
                        ck_error_free(*ret_error);
                        *ret_error = NULL;
                        return ck_error_set(ret_error, r, "user namespace: %s", strna(inner));
                }
                return r;
        }
        /* allocateOne: a free slot, the scan starting at a random one as upstream's allocator */
        if (getrandom(&start, sizeof(start), GRND_NONBLOCK) != sizeof(start))
                start = (uint32_t) getpid();
        for (uint32_t i = 0; i < m->n; i++) {
                slot = (start + i) % m->n;
                if (slot_used(m, slot))
                        continue;
                host = (slot + m->off) * m->length;
                r = record(m, pod_uid, host, m->length, ret_error);
                if (r < 0)
                        return r;
                r = write_mappings(m, pod_uid, host, m->length);
                if (r < 0) {
                        userns_release(m, pod_uid);
                        return ck_error_set(ret_error, r, "create user namespace: %s", strerror(-r));
                }
                log_v(5, "new pod user namespace allocation: podUID=\"%s\" hostId=%" PRIu32, pod_uid, host);
                *ret_host_id = host;
                *ret_length = m->length;
                return 0;
        }
        return ck_error_set(ret_error, -ENOSPC,
                            "create user namespace: could not find an empty slot to allocate a user namespace");
}

void userns_release(struct userns_manager *m, const char *pod_uid) {
        _cleanup_free_ char *path = NULL;
        const char *key = NULL;
        uintptr_t slot;

        if (!m)
                return;
        /* the stored key is freed with the entry */
        slot = (uintptr_t) hashmap_remove2(&m->by_pod, pod_uid, &key);
        if (!key)
                return;
        free((char *) key);
        if (slot)
                slot_set(m, (uint32_t) (slot - 1), false);
        path = pod_file(m, pod_uid);
        if (path)
                (void) unlink(path);
        log_v(5, "releasing pod user namespace allocation: podUID=\"%s\"", pod_uid);
}

int userns_lookup(const struct userns_manager *m, const char *pod_uid, uint32_t *ret_host_id, uint32_t *ret_length) {
        uintptr_t slot = m ? (uintptr_t) hashmap_get(&m->by_pod, pod_uid) : 0;

        if (!slot)
                return -ENOENT;
        *ret_host_id = ((uint32_t) (slot - 1) + m->off) * m->length;
        *ret_length = m->length;
        return 0;
}

void userns_release_orphans(struct userns_manager *m, bool (*wanted)(const char *uid, void *userdata), void *userdata) {
        _cleanup_strv_free_ char **gone = NULL;
        const char *k;
        size_t i = 0;
        void *v;

        if (!m)
                return;
        while (hashmap_iterate(&m->by_pod, &i, &k, &v))
                if (!wanted(k, userdata) && strv_extend(&gone, k) < 0)
                        return;
        for (size_t j = 0; gone && gone[j]; j++) {
                log_v(5, "Clean up orphaned pod user namespace possible allocation: podUID=\"%s\"", gone[j]);
                userns_release(m, gone[j]);
        }
}

size_t userns_allocated(const struct userns_manager *m) {
        return m ? hashmap_size(&m->by_pod) : 0;
}
