/* SPDX-License-Identifier: Apache-2.0 */
/* Mounts and unmounts of volumes, on worker threads: see mount.h. */

#include "volumes/mount.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/time.h"
#include "volumes/volumes.h"

extern char **environ;

/* Is path a mount point (another mount or device than its parent)? -ENOENT when it does not exist. */
static int vol_path_is_mount_point(const char *path, bool *ret) {
        return vol_is_mount_point(AT_FDCWD, path, ret);
}

/* create the mount target; 1 when something is mounted on it already (nothing to do), 0 when not */
static int mount_target_prepare(const char *target, struct ck_error **ret_error) {
        bool mounted = false;
        int r;

        r = mkdir_p(target, 0750);
        if (r < 0)
                return ck_error_set(ret_error, r, "mkdir %s: %s", target, strerror(-r));
        r = vol_path_is_mount_point(target, &mounted);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot check whether %s is a mount point: %s", target, strerror(-r));
        return mounted;
}

int vol_bind_mount(const char *source, const char *target, bool read_only, struct ck_error **ret_error) {
        struct stat st;
        int r;

        if (stat(source, &st) < 0)
                return ck_error_set(ret_error, -errno, "path \"%s\" does not exist", source);
        r = mount_target_prepare(target, ret_error);
        if (r != 0)
                return r < 0 ? r : 0;
        if (mount(source, target, NULL, MS_BIND, NULL) < 0)
                return ck_error_set(ret_error, -errno,
                                    "mount failed: %m\nMounting command: mount\nMounting arguments: -o bind %s %s",
                                    source, target);
        if (read_only && mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0) {
                int k = -errno;
                (void) umount2(target, UMOUNT_NOFOLLOW);
                return ck_error_set(ret_error, k,
                                    "mount failed: %s\nMounting command: mount\nMounting arguments: -o bind,remount,ro "
                                    "%s %s",
                                    strerror(-k), source, target);
        }
        return 0;
}

/* run argv with stdout+stderr into out (capped); -ETIMEDOUT after timeout_usec (the child is killed) */
static int run_helper(char *const argv[], uint64_t timeout_usec, char *out, size_t out_size, int *ret_status) {
        posix_spawn_file_actions_t fa;
        _cleanup_close_ int rfd = -EBADF;
        int pipefd[2], status = 0, r;
        uint64_t deadline = now_usec() + timeout_usec;
        size_t len = 0;
        pid_t pid;

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        rfd = pipefd[0];
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
        posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
        posix_spawn_file_actions_addclosefrom_np(&fa, 3); /* nothing else of the kubelet's (close_range) */
        r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(pipefd[1]);
        if (r != 0)
                return -r;
        for (;;) {
                struct pollfd p = { .fd = rfd, .events = POLLIN };
                uint64_t now = now_usec();
                char buf[1024];
                ssize_t n;
                int k;

                if (now >= deadline) {
                        kill(pid, SIGKILL);
                        (void) waitpid(pid, &status, 0);
                        out[MIN(len, out_size - 1)] = '\0';
                        return -ETIMEDOUT;
                }
                k = poll(&p, 1, (int) MIN((deadline - now) / 1000 + 1, (uint64_t) INT_MAX));
                if (k < 0 && errno != EINTR)
                        break;
                if (k <= 0)
                        continue;
                n = read(rfd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break; /* EOF: the helper (and whatever it forked) closed the pipe */
                if (len < out_size - 1) {
                        size_t c = MIN((size_t) n, out_size - 1 - len);
                        memcpy(out + len, buf, c);
                        len += c;
                }
        }
        out[MIN(len, out_size - 1)] = '\0';
        /* the output is closed; the helper exits at once, but never wait past the deadline */
        for (;;) {
                pid_t w = waitpid(pid, &status, WNOHANG);
                if (w == pid)
                        break;
                if (w < 0 && errno != EINTR)
                        return -errno;
                if (now_usec() >= deadline) {
                        kill(pid, SIGKILL);
                        (void) waitpid(pid, &status, 0);
                        return -ETIMEDOUT;
                }
                usleep(10000);
        }
        *ret_status = status;
        return 0;
}

/* exec.ExitError's text: "exit status N" / "signal: killed" */
static void exit_text(int status, char *buf, size_t size) {
        if (WIFEXITED(status))
                snprintf(buf, size, "exit status %d", WEXITSTATUS(status));
        else if (WIFSIGNALED(status))
                snprintf(buf, size, "signal: %s", strsignal(WTERMSIG(status)));
        else
                snprintf(buf, size, "unknown status %d", status);
}

int vol_helper_mount(const char *fstype, const char *source, const char *target, const char *options,
                     uint64_t timeout_usec, struct ck_error **ret_error) {
        char out[VOL_MOUNT_OUTPUT_MAX], why[64];
        _cleanup_free_ char *args = NULL;
        char *argv[10];
        size_t n = 0;
        int status = 0, r;

        r = mount_target_prepare(target, ret_error);
        if (r != 0)
                return r < 0 ? r : 0;
        argv[n++] = (char *) "mount";
        argv[n++] = (char *) "-t";
        argv[n++] = (char *) fstype;
        if (!isempty(options)) {
                argv[n++] = (char *) "-o";
                argv[n++] = (char *) options;
        }
        argv[n++] = (char *) source;
        argv[n++] = (char *) target;
        argv[n] = NULL;
        if (asprintf(&args, "-t %s%s%s %s %s", fstype, isempty(options) ? "" : " -o ", strempty(options), source,
                     target) < 0)
                return ck_error_set(ret_error, -ENOMEM, "out of memory");
        out[0] = '\0';
        r = run_helper(argv, timeout_usec, out, sizeof(out), &status);
        if (r == -ETIMEDOUT)
                return ck_error_set(ret_error, r,
                                    "mount failed: timed out after %" PRIu64
                                    "s\nMounting command: mount\nMounting arguments: %s\nOutput: %s",
                                    timeout_usec / USEC_PER_SEC, args, out);
        if (r < 0)
                return ck_error_set(ret_error, r,
                                    "mount failed: %s\nMounting command: mount\nMounting arguments: %s\nOutput: ",
                                    strerror(-r), args);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return 0;
        exit_text(status, why, sizeof(why));
        return ck_error_set(ret_error, -EIO,
                            "mount failed: %s\nMounting command: mount\nMounting arguments: %s\nOutput: %s", why, args,
                            out);
}

int vol_unmount_and_remove(const char *target, struct ck_error **ret_error) {
        bool mounted = false;
        int r;

        r = vol_path_is_mount_point(target, &mounted);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot check whether %s is a mount point: %s", target, strerror(-r));
        if (mounted && umount2(target, UMOUNT_NOFOLLOW) < 0)
                return ck_error_set(ret_error, -errno, "unmount failed: %m\nUnmounting arguments: %s", target);
        r = vol_path_is_mount_point(target, &mounted);
        if (r < 0 && r != -ENOENT)
                return ck_error_set(ret_error, r, "cannot check whether %s is a mount point: %s", target, strerror(-r));
        if (r >= 0 && mounted)
                return ck_error_set(ret_error, -EBUSY, "%s is still a mount point after unmounting it", target);
        if (r >= 0 && rmdir(target) < 0 && errno != ENOENT)
                return ck_error_set(ret_error, -errno, "failed to remove dir [%s]: %m", target);
        return 0;
}

int vol_remove_mount_dir(const char *dir, const char *data_file, struct ck_error **ret_error) {
        _cleanup_free_ char *parent = NULL, *data = NULL;
        bool mounted = false;
        char *slash;
        int r;

        r = vol_path_is_mount_point(dir, &mounted);
        if (r < 0 && r != -ENOENT)
                return ck_error_set(ret_error, r, "cannot check whether %s is a mount point: %s", dir, strerror(-r));
        if (r >= 0 && mounted)
                return ck_error_set(ret_error, -EBUSY, "%s is still mounted", dir);
        if (r >= 0 && rmdir(dir) < 0 && errno != ENOENT)
                return ck_error_set(ret_error, -errno, "failed to remove dir [%s]: %m", dir);
        parent = strdup(dir);
        if (!parent)
                return ck_error_set(ret_error, -ENOMEM, "out of memory");
        slash = strrchr(parent, '/');
        if (!slash || slash == parent)
                return 0;
        *slash = '\0';
        if (data_file) {
                if (asprintf(&data, "%s/%s", parent, data_file) < 0)
                        return ck_error_set(ret_error, -ENOMEM, "out of memory");
                if (unlink(data) < 0 && errno != ENOENT)
                        return ck_error_set(ret_error, -errno, "failed to delete volume data file [%s]: %m", data);
        }
        if (rmdir(parent) < 0 && errno != ENOENT && errno != ENOTEMPTY)
                return ck_error_set(ret_error, -errno, "failed to delete volume path [%s]: %m", parent);
        return 0;
}
