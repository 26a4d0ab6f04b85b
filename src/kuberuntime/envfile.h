/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* env[].valueFrom.fileKeyRef (EnvFiles, KEP-5142; beta and on by default since v1.35; follows v1.37): a variable
 * read from a file in an emptyDir of the pod (typically written by an init container), as kubelet_pods.go
 * makeEnvironmentVariables and pkg/kubelet/util/env ParseEnv do.
 *
 * The file is pod-writable: it is read on a worker (the volume contents pool, with its deadline), never on the
 * loop, opened with openat2 RESOLVE_IN_ROOT below the volume's directory (the semantics of upstream's
 * securejoin.SecureJoin, enforced by the kernel: an absolute symlink or ".." resolves inside the volume, nothing
 * outside it is ever opened), only a regular file (a FIFO or a device in its place is refused, opened
 * O_NONBLOCK), at most KR_ENV_FILE_MAX bytes. The build of the container config then takes the parsed values
 * (struct kc_env_file_value, ctx->env_files). */

#include <stdbool.h>
#include <stddef.h>

#include "apis/pod.h"
#include "container/build.h"

/* Our cap on an env file (upstream has none but bufio.Scanner's per line): 1 MiB, the cap of any value
 * (KR_ENV_VALUE_MAX); a variable that large could not be passed to execve anyway (MAX_ARG_STRLEN is 128 KiB). */
#define KR_ENV_FILE_MAX (1024 * 1024)
/* bufio.Scanner's MaxScanTokenSize: a line (without its '\n') longer than this minus one fails upstream's parse */
#define KR_ENV_FILE_LINE_MAX (64 * 1024)

/* ParseEnv(file, key) on the file's contents (data, size; NUL bytes allowed in the data): lines "KEY='value'",
 * the value single-quoted and literal (may span lines; no escapes), leading blanks ignored, blank lines and
 * "#" comment lines skipped, a "# comment" allowed after the closing quote, "KEY= 'x'" (a blank after '=')
 * an empty value. The first line with the key decides, and the lines after it are not looked at (as upstream,
 * which stops reading there). 1: found, *ret_value set (may be ""); 0: absent; -EINVAL: a format error before
 * the key was found, *ret_error in upstream's wording ("invalid environment variable format at line
 * 3: missing '='"); -E2BIG: a line longer than KR_ENV_FILE_LINE_MAX - 1. A value with a NUL byte is refused
 * (-EINVAL; upstream would pass it on to the runtime, which cannot take it). */
int kr_env_file_parse(const char *data, size_t size, const char *key, char **ret_value, struct ck_error **ret_error);

/* One fileKeyRef of a container, made on the loop (strings only) and resolved on a worker. */
struct kr_env_file_req {
        size_t env_idx;   /* the env[] index */
        char *volume_dir; /* the emptyDir's host directory, NULL when the pod has no such emptyDir */
        char *volume_name, *path, *key;
        struct kc_env_file_value result;
        char *detail; /* why it failed, for the log (upstream logs ParseEnv's error, the message is generic) */
};
void kr_env_file_reqs_free(struct kr_env_file_req *l, size_t n);

/* On the loop: the fileKeyRef requests of container c (none: *ret NULL, *ret_n 0). */
int kr_env_file_requests(const struct pod *pod, const struct container *c, const char *root_dir,
                         struct kr_env_file_req **ret, size_t *ret_n);

/* On a worker (blocking; logs nothing): read q's file and fill q->result with the value or upstream's message, and
 * q->detail. */
void kr_env_file_resolve(struct kr_env_file_req *q);

/* The open and read of the worker: path below the directory volume_dir (RESOLVE_IN_ROOT), a regular file of at most
 * max bytes (-EFBIG beyond), NUL-terminated. */
int kr_env_file_read(const char *volume_dir, const char *path, size_t max, char **ret_data, size_t *ret_size);

/* tests only: called on the worker before each read (a test blocks there, as a stalled volume would) */
extern void (*kr_env_file_read_test_hook)(const struct kr_env_file_req *q);
