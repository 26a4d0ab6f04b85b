/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Termination messages (kuberuntime_container.go getTerminationMessage, kubelet_pods.go makeMounts): a file
 * per container instance under <root-dir>/pods/<uid>/containers/<name>/, mounted at the container's
 * terminationMessagePath; read when the container has exited, with FallbackToLogsOnError the end of its log
 * when the file is empty and the exit code is not 0. */

#include <stdbool.h>

#include "apis/pod.h"
#include "cri/cri.h"
#include "container/container.h"

#define KR_TERMINATION_MESSAGE_MAX 4096 /* MaxContainerTerminationMessageLength */
#define KR_TERMINATION_LOG_LINES 80     /* MaxContainerTerminationMessageLogLines */
#define KR_TERMINATION_LOG_MAX 2048     /* MaxContainerTerminationMessageLogLength */
/* FallbackToLogsOnError reads at most this much of the log's end (issue 26): the last 80 lines are looked for in
 * it, from its first line boundary, so that a log of partial lines or one huge line is never scanned whole. */
#define KR_TERMINATION_LOG_WINDOW (64 * 1024)

/* Create the message file of a new instance of c and add its mount to cfg. Nothing when the container has
 * no terminationMessagePath or root_dir is NULL. */
int kr_termination_message_mount(const struct pod *pod, const struct container *c, const char *root_dir,
                                 Runtime__V1__ContainerConfig *cfg);

/* For an exited container: the message from its file (the last 4096 bytes; found through the status's
 * mounts at the annotated terminationMessagePath) or, with FallbackToLogsOnError, an empty file and a
 * non-zero exit code, from the end of its log; appended to c->message (after ": " when the runtime gave
 * one). Errors reading the file become the message, as upstream.
 *
 * It is read in three steps, so that the reads (a file that may sit on a filesystem that stopped answering, and
 * the log) run on a worker thread (issue 26 item 4):
 *  - kr_termination_read_new, on the loop: what is to be read for c, copied from c and st (*ret NULL when nothing
 *    is: c has not exited, or has no message file and no log fallback). With root_dir, a message file where
 *    kr_termination_message_mount makes it is opened beneath <root_dir>/pods through no symlink at all; any other
 *    path is opened without following a symlink as its last component.
 *  - kr_termination_read_run, anywhere: the reads; touches nothing but t. -ENOMEM only.
 *  - kr_termination_read_apply, on the loop: the message appended to c->message, as above. */
struct kr_termination_read;
int kr_termination_read_new(const struct kc_container *c, const Runtime__V1__ContainerStatus *st, const char *root_dir,
                            struct kr_termination_read **ret);
int kr_termination_read_run(struct kr_termination_read *t);
int kr_termination_read_apply(const struct kr_termination_read *t, struct kc_container *c);
struct kr_termination_read *kr_termination_read_free(struct kr_termination_read *t); /* accepts NULL */

/* Tests only: called on the worker with the path before each file is opened; a negative return fails that read. */
extern int (*kr_termination_read_test_hook)(const char *path);
