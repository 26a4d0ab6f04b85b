/* SPDX-License-Identifier: Apache-2.0 */
#include "images/pull_store.h"
#include "images/pull_store-testing.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/hash.h"
#include "basic/hashmap.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/workpool.h"

struct pull_intent {
        char *image;
        unsigned in_flight; /* pulls of this image going on now; 0 with leftover */
        bool leftover;      /* read at start: a pull the previous kubelet did not finish */
};

struct pull_store {
        char *pulling_dir, *pulled_dir;
        struct workpool *pool;
        struct hashmap records; /* imageRef (the record's own imageRef string) → json_t * */
        struct hashmap intents; /* image (intent->image) → struct pull_intent * */
        unsigned writes;
};

/* a write (data) or removal (data NULL) of one file, on the pool */
struct file_job {
        struct pull_store *s;
        char *path;
        char *data;
};

static int file_job_work(void *userdata) {
        struct file_job *j = userdata;

        if (!j->data)
                return unlink(j->path) < 0 && errno != ENOENT ? -errno : 0;
        return write_file_atomic(j->path, j->data, strlen(j->data), 0600);
}

static void file_job_done(int r, void *userdata) {
        struct file_job *j = userdata;

        j->s->writes--;
        if (r < 0)
                log_error("image pull records: cannot %s %s: %s", j->data ? "write" : "remove", j->path, strerror(-r));
}

static void file_job_free(void *userdata) {
        struct file_job *j = userdata;

        free(j->path);
        free(j->data);
        free(j);
}

/* takes data (NULL: remove the file) */
static int store_file(struct pull_store *s, const char *dir, const char *key, char *data) {
        _cleanup_free_ char *owned = data;
        char name[80];
        struct file_job *j;
        int r;

        r = pull_record_file_name(key, name, sizeof(name));
        if (r < 0)
                return r;
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->s = s;
        j->data = TAKE_PTR(owned);
        if (asprintf(&j->path, "%s/%s", dir, name) < 0) {
                j->path = NULL;
                file_job_free(j);
                return -ENOMEM;
        }
        /* keyed by the file: its writes and removal happen in the order asked */
        r = workpool_submit_full(s->pool, j->path, 0, file_job_work, file_job_done, file_job_free, j);
        if (r < 0) {
                file_job_free(j);
                return r;
        }
        s->writes++;
        return 0;
}

static bool cache_file_name(const char *name) {
        return startswith(name, "sha256-") && !strstr(name, ".tmp");
}

/* every sha256-* file of dir (no temporary ones), read and handed to take(); the bad ones are logged and skipped */
static int load_dir(struct pull_store *s, const char *dir,
                    int (*take)(struct pull_store *s, const char *name, const char *buf, size_t len)) {
        DIR *d = opendir(dir);
        struct dirent *de;
        unsigned n = 0;

        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                _cleanup_free_ char *path = NULL, *buf = NULL;
                size_t len = 0;
                int r;

                if (!cache_file_name(de->d_name))
                        continue;
                if (++n > PULL_STORE_MAX_FILES) {
                        log_warning("image pull records: more than %u files in %s, the others are ignored",
                                    PULL_STORE_MAX_FILES, dir);
                        break;
                }
                if (asprintf(&path, "%s/%s", dir, de->d_name) < 0) {
                        closedir(d);
                        return -ENOMEM;
                }
                r = read_full_file(path, PULL_RECORD_MAX_SIZE, &buf, &len);
                if (r >= 0)
                        r = take(s, de->d_name, buf, len);
                if (r == -ENOMEM) {
                        closedir(d);
                        return r;
                }
                if (r < 0)
                        log_warning("image pull records: ignoring %s: %s", path, strerror(-r));
        }
        closedir(d);
        return 0;
}

static void intent_free(struct pull_intent *i) {
        if (!i)
                return;
        free(i->image);
        free(i);
}

static int take_intent(struct pull_store *s, const char *name, const char *buf, size_t len) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_free_ char *image = NULL;
        struct pull_intent *i;
        char want[80];
        int r;

        r = pull_intent_decode(buf, len, &image, &err);
        if (r < 0) {
                log_warning("image pull records: ignoring pulling/%s: %s", name, ck_error_message(err));
                return 0;
        }
        if (pull_record_file_name(image, want, sizeof(want)) < 0 || !streq(want, name) ||
            hashmap_contains(&s->intents, image))
                return 0;
        i = calloc(1, sizeof(*i));
        if (!i)
                return -ENOMEM;
        i->image = TAKE_PTR(image);
        i->leftover = true;
        r = hashmap_put(&s->intents, i->image, i);
        if (r < 0)
                intent_free(i);
        return r;
}

static int take_record(struct pull_store *s, const char *name, const char *buf, size_t len) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        json_t *rec = NULL;
        const char *ref;
        char want[80];
        int r;

        r = pulled_record_decode(buf, len, &rec, &err);
        if (r < 0) {
                log_warning("image pull records: ignoring pulled/%s: %s", name, ck_error_message(err));
                return 0;
        }
        ref = json_string_value(json_object_get(rec, "imageRef"));
        if (pull_record_file_name(ref, want, sizeof(want)) < 0 || !streq(want, name) ||
            hashmap_contains(&s->records, ref)) {
                json_decref(rec);
                return 0;
        }
        r = hashmap_put(&s->records, ref, rec);
        if (r < 0)
                json_decref(rec);
        return r;
}

int pull_store_new(struct event_base *base, const char *root_dir, struct pull_store **ret) {
        struct pull_store *s;
        int r;

        assert(base && root_dir && ret);
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        if (asprintf(&s->pulling_dir, "%s/image_manager/pulling", root_dir) < 0 ||
            asprintf(&s->pulled_dir, "%s/image_manager/pulled", root_dir) < 0) {
                r = -ENOMEM;
                goto fail;
        }
        r = mkdir_p(s->pulling_dir, 0700);
        if (r >= 0 && mkdir(s->pulling_dir, 0700) < 0 && errno != EEXIST)
                r = -errno;
        if (r >= 0)
                r = mkdir_p(s->pulled_dir, 0700);
        if (r >= 0 && mkdir(s->pulled_dir, 0700) < 0 && errno != EEXIST)
                r = -errno;
        if (r >= 0)
                r = load_dir(s, s->pulling_dir, take_intent);
        if (r >= 0)
                r = load_dir(s, s->pulled_dir, take_record);
        if (r >= 0)
                r = workpool_new(base, "image-pull-records", 1, &s->pool);
        if (r < 0)
                goto fail;
        if (hashmap_size(&s->intents) > 0 || hashmap_size(&s->records) > 0)
                log_info("image pull records: %zu pulled records, %zu pull intents left from before",
                         hashmap_size(&s->records), hashmap_size(&s->intents));
        *ret = s;
        return 0;
fail:
        pull_store_free(s);
        return r;
}

struct pull_store *pull_store_free(struct pull_store *s) {
        const char *k;
        void *v;

        if (!s)
                return NULL;
        s->pool = workpool_free(s->pool);
        for (size_t i = 0; hashmap_iterate(&s->records, &i, &k, &v);)
                json_decref(v);
        hashmap_done(&s->records);
        for (size_t i = 0; hashmap_iterate(&s->intents, &i, &k, &v);)
                intent_free(v);
        hashmap_done(&s->intents);
        free(s->pulling_dir);
        free(s->pulled_dir);
        free(s);
        return NULL;
}

int pull_store_intent_begin(struct pull_store *s, const char *image) {
        struct pull_intent *i = hashmap_get(&s->intents, image);
        char *data;
        int r;

        if (!i) {
                i = calloc(1, sizeof(*i));
                if (!i || !(i->image = strdup(image))) {
                        free(i);
                        return -ENOMEM;
                }
                r = hashmap_put(&s->intents, i->image, i);
                if (r < 0) {
                        intent_free(i);
                        return r;
                }
        }
        if (i->in_flight++ > 0 || i->leftover)
                return 0; /* its file is there (or on its way) */
        data = pull_intent_encode(image);
        r = data ? store_file(s, s->pulling_dir, image, data) : -ENOMEM;
        if (r < 0) {
                /* not recorded: no pull of it in flight as far as the records go */
                hashmap_remove(&s->intents, image);
                intent_free(i);
        }
        return r;
}

static void intent_remove(struct pull_store *s, const char *image) {
        const char *key = NULL;
        struct pull_intent *i = hashmap_remove2(&s->intents, image, &key);
        int r;

        if (!i)
                return;
        r = store_file(s, s->pulling_dir, i->image, NULL);
        if (r < 0)
                log_error("image pull records: cannot remove the pull intent of %s: %s", i->image, strerror(-r));
        intent_free(i);
}

void pull_store_intent_end(struct pull_store *s, const char *image) {
        struct pull_intent *i = hashmap_get(&s->intents, image);

        if (!i || i->in_flight == 0)
                return;
        if (--i->in_flight > 0)
                return;
        intent_remove(s, image);
}

/* the record with no credentials for image's repository (the image was pulled, by whom is not known) */
static json_t *record_bare(const char *image_ref, uint64_t now) {
        char ts[64];

        if (!format_rfc3339(now, ts, sizeof(ts)))
                return NULL;
        return json_pack("{s:s, s:s, s:s, s:s, s:{}}", "kind", "ImagePulledRecord", "apiVersion",
                         PULL_RECORD_API_VERSION, "lastUpdatedTime", ts, "imageRef", image_ref, "credentialMapping");
}

int pull_store_pulled(struct pull_store *s, const char *image, const char *image_ref, const struct pull_creds *creds,
                      uint64_t now) {
        _cleanup_free_ char *repo = image_pull_normalized_name(image);
        json_t *old = hashmap_get(&s->records, image_ref), *rec;
        char *text;
        int r;

        if (!repo || isempty(image_ref))
                return -EINVAL;
        rec = old ? json_deep_copy(old) : record_bare(image_ref, now);
        if (!rec)
                return -ENOMEM;
        if (creds && (creds->node_pods_accessible || creds->n_secrets > 0 || creds->n_sas > 0)) {
                r = pulled_record_add(&rec, image_ref, repo, creds, now);
                if (r < 0) {
                        json_decref(rec);
                        return r;
                }
        }
        /* written only when the credentials changed: the time alone is not worth a write */
        if (old && json_equal(json_object_get(old, "credentialMapping"), json_object_get(rec, "credentialMapping"))) {
                /* but in memory the time moves on, so that a pull during a listing keeps its record from pruning */
                char ts[64];
                json_decref(rec);
                if (format_rfc3339(now, ts, sizeof(ts)))
                        (void) json_object_set_new(old, "lastUpdatedTime", json_string(ts));
                return 0;
        }
        text = pulled_record_encode(rec);
        if (!text) {
                json_decref(rec);
                return -ENOMEM;
        }
        r = hashmap_put(&s->records, json_string_value(json_object_get(rec, "imageRef")), rec);
        if (r < 0) {
                free(text);
                json_decref(rec);
                return r;
        }
        json_decref(old);
        return store_file(s, s->pulled_dir, image_ref, text);
}

bool pull_store_must_pull(struct pull_store *s, enum image_pull_verify_policy policy, const char *allowlist,
                          const char *image, const char *image_ref, const struct pull_creds *pod_creds, uint64_t now) {
        _cleanup_free_ char *repo = NULL;
        const json_t *rec;
        struct pull_intent *i;

        if (isempty(image_ref))
                return true;
        rec = hashmap_get(&s->records, image_ref);
        i = hashmap_get(&s->intents, image);
        if (!rec && i && i->leftover && i->in_flight == 0) {
                /* a pull the previous kubelet did not see end, and the image is here: it was pulled by the
                 * kubelet, with credentials nobody knows any more (upstream's initialize) */
                int r = pull_store_pulled(s, image, image_ref, NULL, now);
                if (r < 0)
                        log_warning("image pull records: cannot record %s as pulled: %s", image_ref, strerror(-r));
                else
                        intent_remove(s, image);
                return image_pull_require_verification(policy, allowlist, image, true);
        }
        if (!image_pull_require_verification(policy, allowlist, image, rec || i))
                return false;
        if (!rec)
                return true;
        repo = image_pull_normalized_name(image);
        if (!repo)
                return true;
        if (!pulled_record_match(rec, repo, pod_creds))
                return true;
        /* a secret that matched by its hash alone (a new secret with the same credentials) or by its coordinates
         * alone (the secret's credentials rotated) is added so that it matches both ways from now on, as
         * upstream; only the pod's secrets that match, one by one */
        if (json_array_size(json_object_get(json_object_get(json_object_get(rec, "credentialMapping"), repo),
                                            "kubernetesSecretCoordinates")) >= PULL_STORE_MAX_SECRETS_ADDED_ON_MATCH)
                return false; /* no more writes for a namespace turnover (upstream's writeRecordWhileMatchingLimit) */
        for (size_t k = 0; pod_creds && k < pod_creds->n_secrets; k++) {
                struct pull_creds one = { .secrets = &pod_creds->secrets[k], .n_secrets = 1 };
                int r;

                if (!pulled_record_match(rec, repo, &one))
                        continue;
                r = pull_store_pulled(s, image, image_ref, &one, now);
                if (r < 0)
                        log_warning("image pull records: cannot update the record of %s: %s", image_ref, strerror(-r));
                break;
        }
        return false;
}

void pull_store_prune(struct pull_store *s, const char *const *ids, size_t n, int64_t listed_usec) {
        struct hashmap present = {};
        const char *k;
        void *v;
        char **gone = NULL;
        size_t n_gone = 0;

        for (size_t i = 0; i < n; i++)
                if (hashmap_put(&present, ids[i], NULL) < 0)
                        goto out; /* out of memory: nothing pruned this time */
        for (size_t i = 0; hashmap_iterate(&s->records, &i, &k, &v);) {
                int64_t updated_nsec = 0;
                char **g;

                if (hashmap_contains(&present, k))
                        continue;
                const char *updated = json_string_value(json_object_get(v, "lastUpdatedTime"));
                if (updated && parse_rfc3339(updated, &updated_nsec) >= 0 && updated_nsec / 1000 >= listed_usec)
                        continue; /* updated since the listing began */
                g = reallocarray(gone, n_gone + 1, sizeof(*gone));
                if (!g)
                        goto out;
                gone = g;
                gone[n_gone++] = (char *) k;
        }
        for (size_t i = 0; i < n_gone; i++) {
                const char *key = NULL;
                json_t *rec = hashmap_remove2(&s->records, gone[i], &key);
                int r;

                log_v(2, "image pull records: %s is gone from the node, its record too", key);
                r = store_file(s, s->pulled_dir, key, NULL);
                if (r < 0)
                        log_error("image pull records: cannot remove the record of %s: %s", key, strerror(-r));
                json_decref(rec);
        }
out:
        free(gone);
        hashmap_done(&present);
}

int pull_store_credential_hash(const char *username, const char *password, char *buf, size_t size) {
        json_t *o = json_pack("{s:s, s:s}", "username", strempty(username), "password", strempty(password));
        char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        int r;

        json_decref(o);
        if (!text)
                return -ENOMEM;
        r = hash_hex("sha256", text, strlen(text), buf, size);
        explicit_bzero(text, strlen(text));
        free(text);
        return r;
}

const json_t *pull_store_record(const struct pull_store *s, const char *image_ref) {
        return hashmap_get(&s->records, image_ref);
}

bool pull_store_intent_known(const struct pull_store *s, const char *image) {
        return hashmap_contains(&s->intents, image);
}

unsigned pull_store_writes_in_flight(const struct pull_store *s) {
        return s->writes;
}
