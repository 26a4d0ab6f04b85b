/* SPDX-License-Identifier: Apache-2.0 */
#include "certificate/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"

#define CERT_FILE_MAX_SIZE (1024u * 1024u)

void cert_pair_done(struct cert_pair *p) {
        if (!p)
                return;
        free(p->cert_pem);
        if (p->key_pem) {
                explicit_bzero(p->key_pem, strlen(p->key_pem));
                free(p->key_pem);
        }
        cert_info_done(&p->info);
        free(p->path);
        *p = (struct cert_pair) {};
}

int cert_store_init(struct cert_store *s, const char *dir, const char *prefix, const char *cert_file,
                    const char *key_file) {
        *s = (struct cert_store) {
                .dir = strdup(dir),
                .prefix = strdup(prefix),
                .cert_file = isempty(cert_file) ? NULL : strdup(cert_file),
                .key_file = isempty(key_file) ? NULL : strdup(key_file),
        };
        if (!s->dir || !s->prefix || (!isempty(cert_file) && !s->cert_file) || (!isempty(key_file) && !s->key_file)) {
                cert_store_done(s);
                return -ENOMEM;
        }
        return 0;
}

void cert_store_done(struct cert_store *s) {
        if (!s)
                return;
        free(s->dir);
        free(s->prefix);
        free(s->cert_file);
        free(s->key_file);
        *s = (struct cert_store) {};
}

static char *store_path(const struct cert_store *s, const char *qualifier) {
        char *p;

        if (asprintf(&p, "%s/%s-%s.pem", s->dir, s->prefix, qualifier) < 0)
                return NULL;
        return p;
}

char *cert_store_current_path(const struct cert_store *s) {
        return store_path(s, "current");
}

/* upstream's recover(): complete an update interrupted between the two renames */
static int store_recover(const struct cert_store *s, struct ck_error **ret_error) {
        _cleanup_free_ char *current = cert_store_current_path(s), *updated = store_path(s, "updated");
        struct stat st;

        if (!current || !updated)
                return -ENOMEM;
        if (lstat(current, &st) == 0)
                return 0;
        if (errno != ENOENT)
                return ck_error_set(ret_error, negative_errno(), "cannot read %s: %m", current);
        if (lstat(updated, &st) < 0)
                return errno == ENOENT ? 0 : ck_error_set(ret_error, negative_errno(), "cannot read %s: %m", updated);
        if (!S_ISLNK(st.st_mode))
                return ck_error_set(ret_error, -EINVAL, "expected %s to be a symlink but it is a file", updated);
        if (rename(updated, current) < 0)
                return ck_error_set(ret_error, negative_errno(), "unable to rename %s to %s: %m", updated, current);
        log_info("Completed an interrupted certificate update: %s", current);
        return 0;
}

static int read_small(const char *path, char **ret, size_t *ret_size, struct ck_error **ret_error) {
        int r = read_full_file(path, CERT_FILE_MAX_SIZE, ret, ret_size);

        if (r == -EFBIG)
                return ck_error_set(ret_error, r, "%s is too large for a certificate (more than %u bytes)", path,
                                    CERT_FILE_MAX_SIZE);
        if (r < 0 && r != -ENOMEM)
                return ck_error_set(ret_error, r, "cannot read %s: %s", path, strerror(-r));
        return r;
}

static int load_pair_file(const char *path, struct cert_pair *ret, struct ck_error **ret_error) {
        _cleanup_free_ char *data = NULL;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        struct cert_pair p = {};
        size_t size;
        int r;

        r = read_small(path, &data, &size, ret_error);
        if (r < 0)
                return r;
        r = cert_pair_parse(data, size, &p.cert_pem, &p.key_pem, &p.info, &why);
        explicit_bzero(data, size);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return ck_error_set(ret_error, r, "could not convert data from %s into cert/key pair: %s", path,
                                    ck_error_message(why));
        p.path = strdup(path);
        if (!p.path) {
                cert_pair_done(&p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

static int load_separate(const char *cert, const char *key, struct cert_pair *ret, struct ck_error **ret_error) {
        _cleanup_free_ char *c = NULL, *k = NULL, *both = NULL;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        struct cert_pair p = {};
        size_t cs, ks;
        int r;

        r = read_small(cert, &c, &cs, ret_error);
        if (r >= 0)
                r = read_small(key, &k, &ks, ret_error);
        if (r < 0)
                return r;
        if (asprintf(&both, "%s\n%s", c, k) < 0)
                return -ENOMEM;
        explicit_bzero(k, ks);
        r = cert_pair_parse(both, strlen(both), &p.cert_pem, &p.key_pem, &p.info, &why);
        explicit_bzero(both, strlen(both));
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return ck_error_set(ret_error, r, "could not load the cert/key pair (%s, %s): %s", cert, key,
                                    ck_error_message(why));
        if (asprintf(&p.path, "%s, %s", cert, key) < 0) {
                p.path = NULL;
                cert_pair_done(&p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

static bool exists(const char *path) {
        return path && access(path, F_OK) == 0;
}

int cert_store_load(struct cert_store *s, struct cert_pair *ret, struct ck_error **ret_error) {
        _cleanup_free_ char *current = cert_store_current_path(s), *crt = NULL, *key = NULL;
        int r;

        if (!current)
                return -ENOMEM;
        r = store_recover(s, ret_error);
        if (r < 0)
                return r;
        if (exists(current))
                return load_pair_file(current, ret, ret_error);
        if (exists(s->cert_file) && exists(s->key_file))
                return load_separate(s->cert_file, s->key_file, ret, ret_error);
        if (asprintf(&crt, "%s/%s.crt", s->dir, s->prefix) < 0 || asprintf(&key, "%s/%s.key", s->dir, s->prefix) < 0)
                return -ENOMEM;
        if (exists(crt) && exists(key))
                return load_separate(crt, key, ret, ret_error);
        return ck_error_set(ret_error, -ENOENT, "no cert/key files read at %s, (%s, %s) or (%s, %s)", current,
                            strempty(s->cert_file), strempty(s->key_file), crt, key);
}

/* mode 0600, written to a temporary name and renamed into place: a file the current link may already point at
 * (two updates within a second get the same name) is never seen half-written */
static int write_private_file(const char *path, const char *data, size_t size) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -1;
        int r;

        if (asprintf(&tmp, "%s.tmp", path) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return negative_errno();
        if (fchmod(fd, 0600) < 0)
                goto fail;
        while (size > 0) {
                ssize_t n = write(fd, data, size);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        goto fail;
                }
                data += n;
                size -= (size_t) n;
        }
        if (fsync(fd) < 0 || rename(tmp, path) < 0)
                goto fail;
        return 0;
fail:
        r = negative_errno();
        (void) unlink(tmp);
        return r;
}

int cert_store_update(struct cert_store *s, const char *cert_pem, const char *key_pem, uint64_t now_realtime_usec,
                      struct cert_pair *ret, struct ck_error **ret_error) {
        _cleanup_free_ char *current = cert_store_current_path(s), *updated = store_path(s, "updated");
        _cleanup_free_ char *path = NULL, *data = NULL, *canon_cert = NULL;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        _cleanup_free_ char *canon_key = NULL;
        struct cert_pair stored = {};
        char stamp[32];
        struct stat st;
        struct tm tm;
        time_t secs = (time_t) (now_realtime_usec / 1000000);
        int r;

        if (!current || !updated)
                return -ENOMEM;
        localtime_r(&secs, &tm);
        strftime(stamp, sizeof(stamp), "%Y-%m-%d-%H-%M-%S", &tm);
        path = store_path(s, stamp);
        if (!path)
                return -ENOMEM;
        r = mkdir_p(s->dir, 0755);
        if (r < 0)
                return ck_error_set(ret_error, r, "could not create directory %s to store certificates: %s", s->dir,
                                    strerror(-r));
        /* the certificates, then the key, re-encoded: what is stored is what was checked */
        if (asprintf(&data, "%s\n%s", cert_pem, key_pem) < 0)
                return -ENOMEM;
        r = cert_pair_parse(data, strlen(data), &canon_cert, &canon_key, NULL, &why);
        explicit_bzero(data, strlen(data));
        free(data);
        data = NULL;
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return ck_error_set(ret_error, r, "invalid certificate data: %s", ck_error_message(why));
        if (asprintf(&data, "%s%s", canon_cert, canon_key) < 0) {
                data = NULL;
                return -ENOMEM;
        }
        explicit_bzero(canon_key, strlen(canon_key));
        r = write_private_file(path, data, strlen(data));
        explicit_bzero(data, strlen(data));
        if (r < 0)
                return ck_error_set(ret_error, r, "could not open %s: %s", path, strerror(-r));
        /* read it back before pointing at it */
        r = load_pair_file(path, &stored, ret_error);
        if (r < 0)
                return r;

        if (lstat(current, &st) == 0 && !S_ISLNK(st.st_mode)) {
                _cleanup_free_ char *aside = NULL;
                if (asprintf(&aside, "%s.broken-%s", current, stamp) < 0) {
                        cert_pair_done(&stored);
                        return -ENOMEM;
                }
                if (rename(current, aside) < 0) {
                        r = ck_error_set(ret_error, negative_errno(),
                                         "%s is a file, not a symlink, and cannot be moved "
                                         "aside: %m",
                                         current);
                        cert_pair_done(&stored);
                        return r;
                }
                log_warning("%s was a file, not a symlink to a certificate: moved it to %s", current, aside);
        }
        if (unlink(updated) < 0 && errno != ENOENT) {
                r = ck_error_set(ret_error, negative_errno(), "unable to remove %s: %m", updated);
                cert_pair_done(&stored);
                return r;
        }
        /* the link's target: absolute when the directory is (as upstream), else relative to the link's directory */
        if (symlink(path[0] == '/' ? path : strrchr(path, '/') + 1, updated) < 0) {
                r = ck_error_set(ret_error, negative_errno(), "unable to create a symlink from %s to %s: %m", updated,
                                 path);
                cert_pair_done(&stored);
                return r;
        }
        if (rename(updated, current) < 0) {
                r = ck_error_set(ret_error, negative_errno(), "unable to rename %s to %s: %m", updated, current);
                (void) unlink(updated);
                cert_pair_done(&stored);
                return r;
        }
        if (ret)
                *ret = stored;
        else
                cert_pair_done(&stored);
        return 0;
}
