/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Take ownership of a pointer: returns it and sets the variable to NULL. */
#define TAKE_PTR(p)                      \
        ({                               \
                __typeof__(p) _p_ = (p); \
                (p) = NULL;              \
                _p_;                     \
        })

/* Free what a points to and move b into it (b becomes NULL). */
#define free_and_replace(a, b)     \
        ({                         \
                free(a);           \
                (a) = TAKE_PTR(b); \
                0;                 \
        })

#define TAKE_FD(fd)              \
        ({                       \
                int _fd_ = (fd); \
                (fd) = -1;       \
                _fd_;            \
        })

/* free() that returns NULL: p = mfree(p); */
static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

/* a switch case that goes on into the next one on purpose (-Wimplicit-fallthrough, gcc and clang) */
#define _fallthrough_ __attribute__((__fallthrough__))

/* a variable only there for its cleanup (clang warns about one never read) */
#define _unused_ __attribute__((__unused__))

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

static inline void closedirp(DIR **d) {
        if (*d) {
                int saved = errno;
                closedir(*d);
                errno = saved;
        }
}
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Close a directory now (before removing it, say); accepts NULL, returns NULL. */
static inline DIR *safe_closedir(DIR *d) {
        closedirp(&d);
        return NULL;
}

/* Define a cleanup helper "name##p" for a destructor that accepts NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
        static inline void func##p(type *p) {   \
                if (*p)                         \
                        func(*p);               \
        }

#define streq(a, b) (strcmp((a), (b)) == 0)
#define strneq(a, b, n) (strncmp((a), (b), (n)) == 0)
#define isempty(s) (!(s) || (s)[0] == '\0')
#define strempty(s) ((s) ? (s) : "")
#define strna(s) ((s) ? (s) : "n/a")

/* In a variadic function: format its (fmt, ...) arguments into a new string stored in ret (NULL on
 * failure). Evaluates to 0 or -ENOMEM. */
#define VA_FORMAT(ret, fmt)                           \
        ({                                            \
                va_list _ap_;                         \
                int _r_;                              \
                va_start(_ap_, fmt);                  \
                _r_ = vasprintf(&(ret), (fmt), _ap_); \
                va_end(_ap_);                         \
                if (_r_ < 0)                          \
                        (ret) = NULL;                 \
                _r_ < 0 ? -ENOMEM : 0;                \
        })

/* Return a negative errno for a failed libc call that sets errno. */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}
