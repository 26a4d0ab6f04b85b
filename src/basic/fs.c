/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int read_full_file(const char *path, size_t max_size, char **ret_data, size_t *ret_size) {
        return read_full_file_at(AT_FDCWD, path, max_size, ret_data, ret_size);
}

int read_full_file_at(int dirfd, const char *path, size_t max_size, char **ret_data, size_t *ret_size) {
        _cleanup_close_ int fd = -1;

        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return negative_errno();
        return read_full_fd(fd, max_size, ret_data, ret_size);
}

int read_full_fd(int fd, size_t max_size, char **ret_data, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, alloc = 0;
        struct stat st;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if ((uint64_t) st.st_size > max_size)
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

int openat2_retry(int rootfd, const char *rel, const struct open_how *how) {
        for (int attempt = 0;; attempt++) {
                long fd = syscall(SYS_openat2, rootfd, rel, how, sizeof(*how));
                if (fd >= 0)
                        return (int) fd;
                if ((errno == EAGAIN || errno == EINTR) && attempt < 8)
                        continue;
                return negative_errno();
        }
}

int openat2_beneath(int rootfd, const char *rel, uint64_t flags) {
        struct open_how how = {
                .flags = flags | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
        };

        return openat2_retry(rootfd, rel, &how);
}

int fd_verify_regular(int fd) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (S_ISLNK(st.st_mode))
                return -ELOOP;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        return 0;
}

int open_regular(const char *path) {
        int fd, r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        r = fd_verify_regular(fd);
        if (r < 0) {
                close(fd);
                return r;
        }
        return fd;
}

int open_regular_beneath(int rootfd, const char *rel) {
        struct open_how how = {
                .flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        _cleanup_close_ int fd = -EBADF;
        int r;

        fd = openat2_retry(rootfd, rel, &how);
        if (fd < 0)
                return fd;
        r = fd_verify_regular(fd);
        if (r < 0)
                return r;
        return TAKE_FD(fd);
}
