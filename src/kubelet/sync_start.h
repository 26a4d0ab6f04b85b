/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by the start phase (sync_start.c) and its image step (sync_image.c) only: the state of the container
 * (or image volume) being started, and how the two hand it to each other. */

#include <stdbool.h>
#include <stdint.h>

#include "apis/pod_volumes.h"
#include "basic/macro.h"
#include "kubelet/pod_sync.h"

struct credprov_lookup;
struct credprov_sa_fetch;
struct dm_request;
struct kubelet_dra_job;
struct subpath_job;
struct env_file_job;
struct kc_env_file_value;

struct start_step {
        const struct container *c; /* in s->pod; NULL for an image volume's pull */
        /* the image to have: the container's, or the image volume's (vol, at index vol_index of spec.volumes) */
        const char *image;
        enum pull_policy pull_policy;
        const struct volume *vol;
        size_t vol_index;
        char *image_ref;       /* the resolved image (ImageStatus id, or PullImage's image_ref) */
        bool image_user_known; /* the image's user from ImageStatus */
        bool image_uid_set;
        int64_t image_uid;
        char *image_username;
        const struct cred_auth **creds; /* pull credentials matching the image, tried in turn */
        size_t n_creds, cred_index;
        char *pull_errors; /* the errors of each credential tried so far */
        /* the credential provider plugins' answer for the image (after the pull secrets) */
        struct credprov_lookup *cred_lookup;
        struct credprov_sa_fetch *sa_fetch; /* the pod's service account and tokens, for tokenAttributes */
        struct cred_keyring provider_keyring;
        char *provider_error;
        struct slot_ticket pull; /* its place in the pull queue (env->image_puller) */
        bool pull_intent;        /* its pull is recorded as in flight (env->pull_records) */
        struct dm_request
                *dev_request; /* the device plugins' options of the container (GetDeviceRunContainerOptions) */
        struct kubelet_dra_job *dra_job; /* its pod's ResourceClaims prepared (PrepareDynamicResources) */
        bool dra_ready;
        char **dra_cdi;         /* the CDI devices of the claims it references */
        char *started_id;       /* the container created */
        uint32_t restart_count; /* its attempt */
        /* its subPath mounts, bound on the volume contents pool before the config is built */
        struct subpath_job *subpath_job; /* in flight */
        bool subpaths_ready;
        char **subpath_targets; /* by volumeMount index, NULL where none */
        size_t n_subpath_targets;
        /* its env[].valueFrom.fileKeyRef files, read on the volume contents pool before the config is built */
        struct env_file_job *env_file_job; /* in flight */
        bool env_files_ready;
        struct kc_env_file_value *env_files; /* by env index */
        size_t n_env_files;
};

/* who the image is for, in the events and the logs: the container, or NULL (the pod) for an image volume */
static inline const char *step_container(const struct start_step *st) {
        return st->c ? st->c->name : NULL;
}

static inline const char *step_desc(const struct start_step *st) {
        return st->c ? st->c->name : st->vol->name;
}

/* sync_image.c: the image step of s->start (see there); it ends in kubelet_sync_start_create() (a container's
 * image is there), kubelet_sync_image_volume_ready() (an image volume's is) or kubelet_sync_start_step_done()
 * (it could not be had: reported) */
void kubelet_sync_image(struct pod_sync *s);

/* sync_start.c */
void kubelet_sync_start_step_done(struct pod_sync *s); /* the step ends: the next container (or image volume) */
void kubelet_sync_start_create(struct pod_sync *s);    /* the container's image is there: create it */
void kubelet_sync_image_volume_ready(struct pod_sync *s);
/* an image volume could not be had: what the containers that mount it report (reason: a literal) */
void kubelet_sync_image_volume_failed(struct pod_sync *s, const char *reason, const char *fmt, ...) _printf_(3, 4);
