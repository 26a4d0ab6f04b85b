/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Serving files under a root directory safely: the kubelet's /logs/ endpoint (http.FileServer over
 * /var/log). Nothing outside the root is ever opened: ".." in the request is refused, symbolic links are
 * followed only while they stay beneath the root (absolute links are refused), resolution is done by the
 * kernel with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), or, where openat2 is missing, by walking
 * the path one component at a time with O_NOFOLLOW. Only regular files and directories are opened. */

#include <stdbool.h>
#include <stddef.h>

struct evbuffer;

/* Open what url_path names beneath root. url_path is the raw request path after "/logs/" (still
 * percent-encoded, no query; NULL or "" for the root itself). On success *ret_fd is an O_RDONLY|O_CLOEXEC
 * fd of a regular file or a directory and *ret_is_dir tells which.
 *   -EACCES   the path leaves the root (".." component, also encoded; absolute symlink; relative symlink
 *             pointing outside; too many symlinks) or names something that is not a file or directory
 *   -EINVAL   the path does not decode (embedded NUL) or is too long
 *   -ENOENT, -ENOTDIR  nothing there
 *   other negative errno from the kernel */
int api_logs_dir_open(const char *root, const char *url_path, int *ret_fd, bool *ret_is_dir);

/* The same beneath an already open root directory fd (not consumed). With LOGS_DIR_NO_OPENAT2 the
 * component walk is used even where openat2 works (tests). */
#define LOGS_DIR_NO_OPENAT2 (1U << 0)
int api_logs_dir_openat(int rootfd, const char *url_path, unsigned flags, int *ret_fd, bool *ret_is_dir);

/* Append Go http.FileServer's directory listing of dirfd to out:
 *     <pre>\n<a href="name">name</a>\n...</pre>\n
 * entries sorted by name (bytewise), directories with a trailing '/', names HTML-escaped and hrefs
 * URL-escaped as Go's url.URL{Path: name}.String(). Takes ownership of dirfd: it is closed in all cases.
 * display_path is only used in log messages. -E2BIG for directories with more than 65536 entries. */
int api_logs_dir_list_html(int dirfd, const char *display_path, struct evbuffer *out);

/* Content-Type as Go's http.ServeContent finds it: by extension when known (Go's mime.TypeByExtension table plus
 * "application/gzip" for .gz; types that a browser would execute, .html, .htm, .svg, .js, .mjs, .xml, are
 * "text/plain; charset=utf-8"; name may be a path, only its last component counts), else by sniffing the first
 * bytes (text, and no bytes at all, is "text/plain; charset=utf-8", gzip/zip/pdf/images by their signatures, other
 * binary data "application/octet-stream"). HTML is never sniffed. */
const char *api_logs_dir_sniff_content_type(const char *name, const void *head, size_t len);
/* The same, reading up to 512 bytes of fd at offset 0 (pread: the fd's offset is not changed). */
const char *api_logs_dir_content_type_fd(int fd, const char *name);
