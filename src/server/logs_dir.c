/* SPDX-License-Identifier: Apache-2.0 */
/* Files beneath a root for the /logs/ endpoint: safe path resolution, directory listings in Go's
 * http.FileServer format, Content-Type. See logs_dir.h. */

#include "server/logs_dir.h"

#include <dirent.h>
#include <strings.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "basic/fs.h"
#include "basic/log.h"
#include "basic/macro.h"

#define URL_PATH_MAX 4096
#define MAX_SYMLINKS 40
#define MAX_DEPTH 256
#define LIST_MAX_ENTRIES 65536
#define SNIFF_LEN 512

/* ---- request path ---- */

/* Decode the URL path and reduce it to "a/b/c" (or "."): empty and "." components dropped, ".." refused. */
static int url_path_to_relative(const char *url_path, char **ret) {
        _cleanup_free_ char *decoded = NULL, *rel = NULL;
        size_t n = 0, o = 0;
        const char *p;

        if (isempty(url_path)) {
                rel = strdup(".");
                if (!rel)
                        return -ENOMEM;
                *ret = TAKE_PTR(rel);
                return 0;
        }
        if (strlen(url_path) > URL_PATH_MAX)
                return -EINVAL;
        decoded = evhttp_uridecode(url_path, 0, &n);
        if (!decoded)
                return -ENOMEM;
        if (strlen(decoded) != n)
                return -EINVAL; /* embedded NUL */

        rel = malloc(n + 2);
        if (!rel)
                return -ENOMEM;
        p = decoded;
        while (*p) {
                size_t l = strcspn(p, "/");
                if (l == 2 && p[0] == '.' && p[1] == '.')
                        return -EACCES;
                if (l > 0 && !(l == 1 && p[0] == '.')) {
                        if (o > 0)
                                rel[o++] = '/';
                        memcpy(rel + o, p, l);
                        o += l;
                }
                p += l;
                if (*p == '/')
                        p++;
        }
        if (o == 0)
                rel[o++] = '.';
        rel[o] = '\0';
        *ret = TAKE_PTR(rel);
        return 0;
}

/* ---- resolution by walking components ---- */

struct walk {
        int fds[MAX_DEPTH + 1]; /* fds[0] is the root, fds[depth] the current directory */
        size_t depth;
};

static void walk_done(struct walk *w) {
        for (size_t i = 0; i <= w->depth; i++)
                if (w->fds[i] >= 0)
                        close(w->fds[i]);
        w->depth = 0;
        w->fds[0] = -1;
}

/* Resolve rel beneath rootfd as openat2(RESOLVE_BENEATH) would: each component opened O_PATH|O_NOFOLLOW,
 * symlinks expanded by hand and refused when absolute or when their ".." would climb above the root.
 * *ret_fd is an O_PATH fd of the final object (never a symlink). For a final object that is not a
 * directory, *ret_parent (O_PATH) and *ret_name name it for opening it with O_NOFOLLOW; otherwise they
 * are -1 and NULL. */
static int walk_beneath(int rootfd, const char *rel, int *ret_fd, int *ret_parent, char **ret_name) {
        struct walk w = { .depth = 0 };
        _cleanup_free_ char *rest = NULL, *last = NULL;
        _cleanup_close_ int obj = -1;
        unsigned links = 0;
        int r;

        w.fds[0] = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
        if (w.fds[0] < 0)
                return negative_errno();
        rest = strdup(rel);
        if (!rest) {
                r = -ENOMEM;
                goto fail;
        }

        for (;;) {
                _cleanup_free_ char *comp = NULL;
                _cleanup_close_ int fd = -1;
                char *p = rest;
                struct stat st;
                size_t l;

                while (*p == '/')
                        p++;
                if (*p == '\0')
                        break;
                l = strcspn(p, "/");
                comp = strndup(p, l);
                if (!comp) {
                        r = -ENOMEM;
                        goto fail;
                }
                memmove(rest, p + l, strlen(p + l) + 1); /* rest: "" or "/..." */

                if (streq(comp, "."))
                        continue;
                if (streq(comp, "..")) {
                        if (w.depth == 0) {
                                r = -EXDEV; /* above the root */
                                goto fail;
                        }
                        close(w.fds[w.depth]);
                        w.fds[w.depth--] = -1;
                        continue;
                }

                fd = openat(w.fds[w.depth], comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 || fstat(fd, &st) < 0) {
                        r = negative_errno();
                        goto fail;
                }
                if (S_ISLNK(st.st_mode)) {
                        char target[PATH_MAX];
                        ssize_t n;
                        char *nrest;

                        if (++links > MAX_SYMLINKS) {
                                r = -ELOOP;
                                goto fail;
                        }
                        n = readlinkat(fd, "", target, sizeof(target));
                        if (n < 0) {
                                r = negative_errno();
                                goto fail;
                        }
                        if (n == 0 || (size_t) n >= sizeof(target)) {
                                r = n == 0 ? -ENOENT : -ENAMETOOLONG;
                                goto fail;
                        }
                        if (target[0] == '/') {
                                r = -EXDEV; /* absolute: never beneath the root, as RESOLVE_BENEATH */
                                goto fail;
                        }
                        if (asprintf(&nrest, "%.*s%s", (int) n, target, rest) < 0) {
                                r = -ENOMEM;
                                goto fail;
                        }
                        if (strlen(nrest) > PATH_MAX) {
                                free(nrest);
                                r = -ENAMETOOLONG;
                                goto fail;
                        }
                        free(rest);
                        rest = nrest;
                        continue;
                }
                if (!S_ISDIR(st.st_mode)) {
                        if (*rest) {
                                r = -ENOTDIR; /* "file/x", "file/" */
                                goto fail;
                        }
                        obj = TAKE_FD(fd);
                        last = TAKE_PTR(comp);
                        break;
                }
                if (w.depth >= MAX_DEPTH) {
                        r = -ENAMETOOLONG;
                        goto fail;
                }
                w.fds[++w.depth] = TAKE_FD(fd);
        }

        if (obj >= 0) {
                /* a file: its parent is the current directory */
                *ret_parent = TAKE_FD(w.fds[w.depth]);
                w.fds[w.depth] = -1;
                *ret_name = TAKE_PTR(last);
                *ret_fd = TAKE_FD(obj);
        } else {
                /* a directory, the root itself when depth is 0 */
                *ret_fd = TAKE_FD(w.fds[w.depth]);
                w.fds[w.depth] = -1;
                *ret_parent = -1;
                *ret_name = NULL;
        }
        walk_done(&w);
        return 0;
fail:
        walk_done(&w);
        return r;
}

/* ---- opening ---- */

#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

static int map_resolve_error(int r) {
        switch (r) {
        case -EXDEV: /* RESOLVE_BENEATH: leaves the root, absolute symlink */
        case -ELOOP: /* symlink loop, magic link */
                return -EACCES;
        case -ENAMETOOLONG:
                return -EINVAL;
        default:
                return r;
        }
}

/* Open the object behind the O_PATH fd pfd for reading. A directory through pfd itself; a file (which
 * cannot be reopened from an O_PATH fd without procfs) by resolving again, then checking that the same
 * inode was opened. 0, or 1 when the tree changed meanwhile (try again). */
static int open_resolved(int rootfd, const char *rel, bool use_openat2, int pfd, int parent, const char *name,
                         int *ret_fd, bool *ret_is_dir) {
        _cleanup_close_ int fd = -1;
        struct stat a, b;

        if (fstat(pfd, &a) < 0)
                return negative_errno();
        /* a device or FIFO could block or have side effects when opened: only files and directories */
        if (!S_ISREG(a.st_mode) && !S_ISDIR(a.st_mode))
                return -EACCES;

        if (S_ISDIR(a.st_mode)) {
                fd = openat(pfd, ".", OPEN_FLAGS | O_DIRECTORY);
                if (fd < 0)
                        return negative_errno();
        } else if (use_openat2) {
                fd = openat2_beneath(rootfd, rel, OPEN_FLAGS);
                if (fd < 0)
                        return map_resolve_error(fd);
        } else {
                fd = openat(parent, name, OPEN_FLAGS | O_NOFOLLOW);
                if (fd < 0) {
                        if (errno == ELOOP || errno == ENOENT)
                                return 1; /* replaced meanwhile */
                        return negative_errno();
                }
        }
        if (fstat(fd, &b) < 0)
                return negative_errno();
        if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
                return 1;
        if (S_ISREG(b.st_mode)) {
                /* plain blocking reads (O_NONBLOCK was only for the open) */
                int fl = fcntl(fd, F_GETFL);
                if (fl >= 0)
                        (void) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        }
        *ret_is_dir = S_ISDIR(b.st_mode);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int api_logs_dir_openat(int rootfd, const char *url_path, unsigned flags, int *ret_fd, bool *ret_is_dir) {
        _cleanup_free_ char *rel = NULL;
        bool use_openat2 = !(flags & LOGS_DIR_NO_OPENAT2);
        int r;

        if (rootfd < 0 || !ret_fd || !ret_is_dir)
                return -EINVAL;
        r = url_path_to_relative(url_path, &rel);
        if (r < 0)
                return r;

        for (int attempt = 0; attempt < 4; attempt++) {
                _cleanup_close_ int pfd = -1, parent = -1;
                _cleanup_free_ char *name = NULL;

                if (use_openat2) {
                        pfd = openat2_beneath(rootfd, rel, O_PATH | O_CLOEXEC);
                        if (pfd == -ENOSYS || pfd == -EPERM) {
                                /* no openat2 (old kernel, or a seccomp filter that does not know it) */
                                log_v(4, "openat2 unavailable (%s): resolving by components", strerror(-pfd));
                                use_openat2 = false;
                        } else if (pfd < 0)
                                return map_resolve_error(pfd);
                }
                if (!use_openat2) {
                        r = walk_beneath(rootfd, rel, &pfd, &parent, &name);
                        if (r < 0)
                                return map_resolve_error(r);
                }
                r = open_resolved(rootfd, rel, use_openat2, pfd, parent, name, ret_fd, ret_is_dir);
                if (r <= 0)
                        return r;
        }
        return -EAGAIN;
}

int api_logs_dir_open(const char *root, const char *url_path, int *ret_fd, bool *ret_is_dir) {
        _cleanup_close_ int rootfd = -1;

        if (!root || !ret_fd || !ret_is_dir)
                return -EINVAL;
        rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return negative_errno();
        return api_logs_dir_openat(rootfd, url_path, 0, ret_fd, ret_is_dir);
}

/* ---- listing ---- */

struct dir_entry {
        char *name;
        bool dir;
};

static int dir_entry_cmp(const void *a, const void *b) {
        return strcmp(((const struct dir_entry *) a)->name, ((const struct dir_entry *) b)->name);
}

static void dir_entries_free(struct dir_entry *e, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(e[i].name);
        free(e);
}

/* htmlReplacer of net/http */
static int add_html_escaped(struct evbuffer *out, const char *s) {
        for (const char *p = s; *p;) {
                size_t l = strcspn(p, "&<>\"'");
                const char *rep = NULL;
                if (l > 0 && evbuffer_add(out, p, l) < 0)
                        return -ENOMEM;
                p += l;
                switch (*p) {
                case '&':
                        rep = "&amp;";
                        break;
                case '<':
                        rep = "&lt;";
                        break;
                case '>':
                        rep = "&gt;";
                        break;
                case '"':
                        rep = "&#34;";
                        break;
                case '\'':
                        rep = "&#39;";
                        break;
                default:
                        break;
                }
                if (!rep)
                        break;
                if (evbuffer_add(out, rep, strlen(rep)) < 0)
                        return -ENOMEM;
                p++;
        }
        return 0;
}

/* url.URL{Path: s}.String(): escape(s, encodePath), "./" before a first segment with a ':' */
static int add_url_path_escaped(struct evbuffer *out, const char *s) {
        static const char hex[] = "0123456789ABCDEF";
        size_t seg = strcspn(s, "/");

        if (memchr(s, ':', seg) && evbuffer_add(out, "./", 2) < 0)
                return -ENOMEM;
        if (streq(s, "*"))
                return evbuffer_add(out, "*", 1) < 0 ? -ENOMEM : 0;
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                unsigned char c = *p;
                bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                            strchr("-_.~$&+,/:;=@", c);
                if (keep) {
                        if (evbuffer_add(out, p, 1) < 0)
                                return -ENOMEM;
                } else {
                        char e[3] = { '%', hex[c >> 4], hex[c & 15] };
                        if (evbuffer_add(out, e, 3) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

int api_logs_dir_list_html(int fd_in, const char *display_path, struct evbuffer *out) {
        _cleanup_close_ int owned = fd_in;
        struct dir_entry *e = NULL;
        size_t n = 0, allocated = 0;
        struct dirent *de;
        _cleanup_closedir_ DIR *d = NULL;
        int fd, r = 0;

        if (owned < 0 || !out)
                return -EINVAL;
        /* a descriptor of its own: readdir moves the offset and closedir closes it */
        fd = openat(owned, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        d = fdopendir(fd);
        if (!d) {
                r = negative_errno();
                close(fd);
                return r;
        }

        for (;;) {
                bool is_dir;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                r = negative_errno();
                        break;
                }
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (n >= LIST_MAX_ENTRIES) {
                        log_warning("Not listing %s: more than %d entries", strna(display_path), LIST_MAX_ENTRIES);
                        r = -E2BIG;
                        break;
                }
                if (de->d_type == DT_UNKNOWN) {
                        struct stat st;
                        /* as os.DirEntry: the entry itself, a symlink to a directory is not a directory */
                        is_dir = fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
                } else
                        is_dir = de->d_type == DT_DIR;
                if (n >= allocated) {
                        size_t a = allocated ? allocated * 2 : 32;
                        struct dir_entry *ne = reallocarray(e, a, sizeof(*e));
                        if (!ne) {
                                r = -ENOMEM;
                                break;
                        }
                        e = ne;
                        allocated = a;
                }
                e[n].name = strdup(de->d_name);
                if (!e[n].name) {
                        r = -ENOMEM;
                        break;
                }
                e[n++].dir = is_dir;
        }
        if (r < 0) {
                dir_entries_free(e, n);
                return r;
        }

        if (n > 0)
                qsort(e, n, sizeof(*e), dir_entry_cmp);
        if (evbuffer_add(out, "<pre>\n", 6) < 0)
                r = -ENOMEM;
        for (size_t i = 0; i < n && r >= 0; i++) {
                _cleanup_free_ char *name = NULL;
                if (asprintf(&name, "%s%s", e[i].name, e[i].dir ? "/" : "") < 0) {
                        r = -ENOMEM;
                        break;
                }
                if (evbuffer_add(out, "<a href=\"", 9) < 0 || add_url_path_escaped(out, name) < 0 ||
                    evbuffer_add(out, "\">", 2) < 0 || add_html_escaped(out, name) < 0 ||
                    evbuffer_add(out, "</a>\n", 5) < 0)
                        r = -ENOMEM;
        }
        if (r >= 0 && evbuffer_add(out, "</pre>\n", 7) < 0)
                r = -ENOMEM;
        dir_entries_free(e, n);
        return r < 0 ? r : 0;
}

/* ---- Content-Type ---- */

#define TEXT_PLAIN "text/plain; charset=utf-8"

static const char *content_type_by_extension(const char *name) {
        static const struct {
                const char *ext, *type;
        } table[] = {
                /* Go's builtin mime types; the active ones (html, js, svg, xml) are served as text */
                { ".avif", "image/avif" },
                { ".css", "text/css; charset=utf-8" },
                { ".gif", "image/gif" },
                { ".jpeg", "image/jpeg" },
                { ".jpg", "image/jpeg" },
                { ".json", "application/json" },
                { ".pdf", "application/pdf" },
                { ".png", "image/png" },
                { ".wasm", "application/wasm" },
                { ".webp", "image/webp" },
                /* /etc/mime.types, which Go also reads */
                { ".gz", "application/gzip" },
                { ".txt", TEXT_PLAIN },
                { ".log", TEXT_PLAIN },
                { ".htm", TEXT_PLAIN },
                { ".html", TEXT_PLAIN },
                { ".js", TEXT_PLAIN },
                { ".mjs", TEXT_PLAIN },
                { ".svg", TEXT_PLAIN },
                { ".xml", TEXT_PLAIN },
        };
        const char *base, *dot;

        if (!name)
                return NULL;
        base = strrchr(name, '/');
        base = base ? base + 1 : name;
        dot = strrchr(base, '.');
        if (!dot)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (strcasecmp(dot, table[i].ext) == 0) /* Go retries lower-cased */
                        return table[i].type;
        return NULL;
}

static bool has_prefix(const unsigned char *p, size_t len, const char *sig, size_t siglen) {
        return len >= siglen && memcmp(p, sig, siglen) == 0;
}

const char *api_logs_dir_sniff_content_type(const char *name, const void *head, size_t len) {
        const unsigned char *p = head;
        const char *t = content_type_by_extension(name);

        if (t)
                return t;
        if (!p)
                len = 0;
        len = MIN(len, (size_t) SNIFF_LEN);
        /* a subset of net/http's DetectContentType signatures, HTML left out */
        if (has_prefix(p, len, "\xFE\xFF", 2))
                return "text/plain; charset=utf-16be";
        if (has_prefix(p, len, "\xFF\xFE", 2))
                return "text/plain; charset=utf-16le";
        if (has_prefix(p, len, "\xEF\xBB\xBF", 3))
                return TEXT_PLAIN;
        if (has_prefix(p, len, "%PDF-", 5))
                return "application/pdf";
        if (has_prefix(p, len, "\x1F\x8B\x08", 3))
                return "application/x-gzip";
        if (has_prefix(p, len, "PK\x03\x04", 4))
                return "application/zip";
        if (has_prefix(p, len, "\x89PNG\x0D\x0A\x1A\x0A", 8))
                return "image/png";
        if (has_prefix(p, len, "\xFF\xD8\xFF", 3))
                return "image/jpeg";
        if (has_prefix(p, len, "GIF87a", 6) || has_prefix(p, len, "GIF89a", 6))
                return "image/gif";
        /* text: no control bytes other than whitespace (and ESC, as Go) */
        for (size_t i = 0; i < len; i++) {
                unsigned char c = p[i];
                if (c <= 0x08 || c == 0x0B || (c >= 0x0E && c <= 0x1A) || (c >= 0x1C && c <= 0x1F))
                        return "application/octet-stream";
        }
        return TEXT_PLAIN;
}

const char *api_logs_dir_content_type_fd(int fd, const char *name) {
        unsigned char head[SNIFF_LEN];
        ssize_t n = 0;

        if (!content_type_by_extension(name) && fd >= 0) {
                do
                        n = pread(fd, head, sizeof(head), 0);
                while (n < 0 && errno == EINTR);
                if (n < 0)
                        n = 0;
        }
        return api_logs_dir_sniff_content_type(name, head, (size_t) n);
}
