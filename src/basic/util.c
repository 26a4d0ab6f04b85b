/* SPDX-License-Identifier: Apache-2.0 */
#include "util.h"
#include "duration.h"

#include <ctype.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

size_t strv_length(char *const *l) {
        size_t n = 0;
        if (!l)
                return 0;
        while (l[n])
                n++;
        return n;
}

void strv_remove_at(char **l, size_t i) {
        free(l[i]);
        memmove(l + i, l + i + 1, (strv_length(l + i + 1) + 1) * sizeof(char *));
}

char *strv_join(char *const *l, const char *sep) {
        size_t n = 1, k = strlen(sep), i;
        char *s, *p;

        for (i = 0; l && l[i]; i++)
                n += strlen(l[i]) + k;
        s = p = malloc(n);
        if (!s)
                return NULL;
        for (i = 0; l && l[i]; i++) {
                if (i > 0)
                        p = stpcpy(p, sep);
                p = stpcpy(p, l[i]);
        }
        *p = '\0';
        return s;
}

char **strv_free(char **l) {
        if (!l)
                return NULL;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
        return NULL;
}

int strv_push(char ***l, char *value) {
        size_t n = strv_length(*l);
        char **c;

        if (!value)
                return -EINVAL;
        c = realloc(*l, sizeof(char *) * (n + 2));
        if (!c) {
                free(value);
                return -ENOMEM;
        }
        c[n] = value;
        c[n + 1] = NULL;
        *l = c;
        return 0;
}

int strv_extend(char ***l, const char *value) {
        char *v = strdup(value);
        if (!v)
                return -ENOMEM;
        return strv_push(l, v);
}

int strv_copy(char *const *l, char ***ret) {
        _cleanup_strv_free_ char **c = NULL;
        size_t n = strv_length(l);

        c = calloc(n + 1, sizeof(char *));
        if (!c)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                c[i] = strdup(l[i]);
                if (!c[i])
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

bool strv_equal(char *const *a, char *const *b) {
        size_t na = strv_length(a), nb = strv_length(b);
        if (na != nb)
                return false;
        for (size_t i = 0; i < na; i++)
                if (!streq(a[i], b[i]))
                        return false;
        return true;
}

bool strv_contains(char *const *l, const char *s) {
        for (size_t i = 0; l && l[i]; i++)
                if (streq(l[i], s))
                        return true;
        return false;
}

void strmap_done(struct strmap *m) {
        if (!m)
                return;
        for (size_t i = 0; i < m->n; i++) {
                free(m->keys[i]);
                free(m->values[i]);
        }
        free(m->keys);
        free(m->values);
        *m = (struct strmap) {};
}

int strmap_set(struct strmap *m, const char *k, const char *v) {
        char *nk, *nv, **ks, **vs;

        nv = strdup(v ? v : "");
        if (!nv)
                return -ENOMEM;
        for (size_t i = 0; i < m->n; i++)
                if (streq(m->keys[i], k)) {
                        free(m->values[i]);
                        m->values[i] = nv;
                        return 0;
                }
        nk = strdup(k);
        if (!nk) {
                free(nv);
                return -ENOMEM;
        }
        ks = realloc(m->keys, sizeof(char *) * (m->n + 1));
        if (ks)
                m->keys = ks;
        vs = realloc(m->values, sizeof(char *) * (m->n + 1));
        if (vs)
                m->values = vs;
        if (!ks || !vs) {
                free(nk);
                free(nv);
                return -ENOMEM;
        }
        m->keys[m->n] = nk;
        m->values[m->n] = nv;
        m->n++;
        return 0;
}

const char *strmap_get(const struct strmap *m, const char *k) {
        for (size_t i = 0; m && i < m->n; i++)
                if (streq(m->keys[i], k))
                        return m->values[i];
        return NULL;
}

int strmap_copy(const struct strmap *src, struct strmap *ret) {
        struct strmap c = {};
        for (size_t i = 0; src && i < src->n; i++) {
                int r = strmap_set(&c, src->keys[i], src->values[i]);
                if (r < 0) {
                        strmap_done(&c);
                        return r;
                }
        }
        *ret = c;
        return 0;
}

void strmap_sort(struct strmap *m) {
        /* insertion sort: maps are small */
        for (size_t i = 1; i < m->n; i++)
                for (size_t j = i; j > 0 && strcmp(m->keys[j - 1], m->keys[j]) > 0; j--) {
                        char *tk = m->keys[j], *tv = m->values[j];
                        m->keys[j] = m->keys[j - 1];
                        m->values[j] = m->values[j - 1];
                        m->keys[j - 1] = tk;
                        m->values[j - 1] = tv;
                }
}

char *strdup_or_null(const char *s) {
        return s ? strdup(s) : NULL;
}

int free_and_strdup(char **p, const char *s) {
        char *c = NULL;
        if (s) {
                c = strdup(s);
                if (!c)
                        return -ENOMEM;
        }
        free(*p);
        *p = c;
        return 0;
}

bool startswith(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool endswith(const char *s, const char *suffix) {
        size_t ls = strlen(s), lx = strlen(suffix);
        return ls >= lx && memcmp(s + ls - lx, suffix, lx) == 0;
}

int safe_atoi64(const char *s, int64_t *ret) {
        char *end;
        long long v;

        if (isempty(s) || isspace((unsigned char) s[0]))
                return -EINVAL;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (*end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

int safe_atoi(const char *s, int *ret) {
        int64_t v;
        int r = safe_atoi64(s, &v);
        if (r < 0)
                return r;
        if (v < INT_MIN || v > INT_MAX)
                return -ERANGE;
        *ret = (int) v;
        return 0;
}

int parse_duration_usec(const char *s, int64_t *ret_usec) {
        int64_t nsec;
        int r = go_duration_parse(s, &nsec, NULL);
        if (r < 0)
                return r;
        *ret_usec = nsec / 1000;
        return 0;
}

int parse_bool(const char *s, bool *ret) {
        /* Go strconv.ParseBool */
        static const char *const t[] = { "1", "t", "T", "true", "TRUE", "True" };
        static const char *const f[] = { "0", "f", "F", "false", "FALSE", "False" };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                if (streq(s, t[i])) {
                        *ret = true;
                        return 0;
                }
                if (streq(s, f[i])) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

int read_full_file(const char *path, size_t max_size, char **ret_data, size_t *ret_size) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, alloc = 0;
        struct stat st;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (S_ISREG(st.st_mode) && (uint64_t) st.st_size > max_size)
                return -EFBIG;
        for (;;) {
                ssize_t n;
                if (alloc - size < 4096) {
                        size_t na = alloc ? alloc * 2 : 8192;
                        char *nb;
                        if (na > max_size + 4097)
                                na = max_size + 4097;
                        nb = realloc(buf, na);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                        alloc = na;
                }
                n = read(fd, buf + size, alloc - size - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                size += (size_t) n;
                if (size > max_size)
                        return -EFBIG;
        }
        if (!buf) {
                buf = malloc(1);
                if (!buf)
                        return -ENOMEM;
        }
        buf[size] = '\0';
        *ret_data = TAKE_PTR(buf);
        if (ret_size)
                *ret_size = size;
        return 0;
}

int write_file_atomic(const char *path, const void *data, size_t size, int mode) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -1;
        const char *p = data;

        if (asprintf(&tmp, "%s.tmp.%d", path, (int) getpid()) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
                return negative_errno();
        while (size > 0) {
                ssize_t n = write(fd, p, size);
                if (n < 0) {
                        int r;
                        if (errno == EINTR)
                                continue;
                        r = negative_errno();
                        unlink(tmp);
                        return r;
                }
                p += n;
                size -= (size_t) n;
        }
        if (fsync(fd) < 0 || rename(tmp, path) < 0) {
                int r = negative_errno();
                unlink(tmp);
                return r;
        }
        return 0;
}

int mkdir_p(const char *path, int mode) {
        _cleanup_free_ char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = '\0';
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return negative_errno();
                *s = '/';
        }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

struct timeval timeval_from_usec(uint64_t usec) {
        return (struct timeval) { .tv_sec = (time_t) (usec / USEC_PER_SEC), .tv_usec = (suseconds_t) (usec % USEC_PER_SEC) };
}

void evtimer_add_usec(struct event *ev, uint64_t usec) {
        struct timeval tv = timeval_from_usec(usec);
        evtimer_add(ev, &tv);
}

uint64_t now_realtime_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

char *format_rfc3339(uint64_t realtime_usec, char *buf, size_t size) {
        time_t t = (time_t) (realtime_usec / USEC_PER_SEC);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
        return buf;
}

char *format_rfc3339nano(int64_t unix_nsec, char *buf, size_t size) {
        time_t t = (time_t) (unix_nsec / NSEC_PER_SEC);
        struct tm tm;
        char base[32];
        gmtime_r(&t, &tm);
        strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf, size, "%s.%09lldZ", base, (long long) (unix_nsec % NSEC_PER_SEC));
        return buf;
}

int parse_rfc3339(const char *s, int64_t *ret_unix_nsec) {
        struct tm tm = {};
        const char *p;
        int64_t nsec = 0, off = 0;
        time_t t;

        p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!p)
                return -EINVAL;
        if (*p == '.') {
                int digits = 0;
                p++;
                while (isdigit((unsigned char) *p)) {
                        if (digits < 9) {
                                nsec = nsec * 10 + (*p - '0');
                                digits++;
                        }
                        p++;
                }
                if (digits == 0)
                        return -EINVAL;
                while (digits++ < 9)
                        nsec *= 10;
        }
        if (*p == 'Z' || *p == 'z')
                p++;
        else if (*p == '+' || *p == '-') {
                int hh, mm;
                if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2 || strlen(p) != 6)
                        return -EINVAL;
                off = (hh * 3600 + mm * 60) * (*p == '+' ? 1 : -1);
                p += 6;
        } else
                return -EINVAL;
        if (*p)
                return -EINVAL;
        t = timegm(&tm);
        if (t == (time_t) -1)
                return -EINVAL;
        *ret_unix_nsec = ((int64_t) t - off) * NSEC_PER_SEC + nsec;
        return 0;
}

int hash_hex(const char *algo, const void *data, size_t len, char *buf, size_t bufsize) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        const EVP_MD *type = EVP_get_digestbyname(algo);

        if (!type)
                return -EINVAL;
        if (!EVP_Digest(data, len, md, &mdlen, type, NULL))
                return -EIO;
        if (bufsize < mdlen * 2 + 1)
                return -ENOBUFS;
        for (unsigned i = 0; i < mdlen; i++)
                snprintf(buf + i * 2, 3, "%02x", md[i]);
        return 0;
}

uint64_t fnv1a64(uint64_t h, const void *data, size_t len) {
        const unsigned char *p = data;
        for (size_t i = 0; i < len; i++) {
                h ^= p[i];
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}
