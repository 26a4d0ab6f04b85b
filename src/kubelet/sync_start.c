/* SPDX-License-Identifier: Apache-2.0 */
/* The start phase of a pod's pass: first the pod's image volumes (getImageVolumes), each through the same image
 * steps as a container's image (below, with the volume's pullPolicy; events on the pod), their resolved images or
 * failures kept in s->image_volumes for the CRI mounts; then the containers the decision named (init containers
 * first, then the app containers, in spec order), one at a time (startContainer). A container that mounts an image
 * volume that could not be had waits with the pull's reason. For each container, in order:
 *
 *   back-off    a container whose last instance exited waits out its CrashLoopBackOff (kr_check_crash_backoff)
 *   image       the image step (sync_image.c, a state machine documented there): ImageStatus unless the pull
 *               policy is Always, then kr_decide_image: use the present image, pull it (with each matching pull
 *               credential in turn: the pull secrets', then the credential provider plugins'), wait out
 *               ImagePullBackOff, or ErrImageNeverPull; a pulled image's ImageStatus gives its user (runAsUser
 *               default, runAsNonRoot). A pull waits for its turn in the kubelet's pull queue (env->image_puller,
 *               src/basic/slots.c: serializeImagePulls, maxParallelImagePulls) and holds its slot through all its
 *               credentials; a pod no longer desired (or being deleted) while it waits leaves the queue and the
 *               pass ends (kubelet_sync_start_withdraw)
 *   create      the files of its env[].valueFrom.fileKeyRef read and its subPath mounts bound (on the volume
 *               contents pool), the device plugins' options (src/cm/devicemanager, for a container with devices),
 *               the container config (kr_build_container_config) and CreateContainer
 *   start       StartContainer, then the postStart hook; a failed hook kills the container (sync_kill.c)
 *
 * The state of the container being started is its step (struct start_step, sync_start.h), freed when it ends. A
 * failure is reported as the container's waiting reason and the next container is tried; the pass then ends in
 * error. */

#include "kubelet/pod_sync.h"
#include "kubelet/sync_start.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <inttypes.h>
#include <string.h>

#include "apis/pod_volumes.h"
#include "basic/duration.h"
#include "basic/error.h"
#include "basic/fs.h"
#include "basic/strv.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/workpool.h"
#include "images/pull_store.h"
#include "kubelet/credprov_sa.h"
#include "kubelet/dra.h"
#include "kubelet/hooks.h"
#include "kubelet/plugins.h"
#include "config/config.h"
#include "kuberuntime/envfile.h"
#include "volumes/subpath.h"
#include "volumes/volumes.h"

/* the subPath binds of one container, on a worker: owns its copies (a job past its deadline may outlive the step) */
struct subpath_job {
        struct pod_sync *s; /* NULL once the step is gone */
        struct vol_subpath_req *reqs;
        size_t n_reqs;
        struct ck_error *error; /* why one failed */
        size_t failed_idx;
};

/* the env files of one container, on a worker: owns its copies (a job past its deadline may outlive the step) */
struct env_file_job {
        struct pod_sync *s; /* NULL once the step is gone */
        struct kr_env_file_req *reqs;
        size_t n_reqs;
};

static void image_volume_next(struct pod_sync *s);
static bool image_volumes_failed(struct pod_sync *s, const struct container *c);

void kubelet_sync_start_step_free(struct pod_sync *s) {
        struct start_step *st = TAKE_PTR(s->start);

        if (!st)
                return;
        if (st->pull_intent)
                pull_store_intent_end(s->env->pull_records, st->image);
        free(st->image_ref);
        free(st->image_username);
        free(st->creds);
        free(st->pull_errors);
        slots_release(s->env->image_puller, &st->pull);
        credprov_lookup_cancel(st->cred_lookup);
        credprov_sa_fetch_cancel(st->sa_fetch);
        cred_keyring_done(&st->provider_keyring);
        free(st->provider_error);
        dm_request_cancel(st->dev_request);
        kubelet_dra_job_cancel(st->dra_job);
        strv_free(st->dra_cdi);
        free(st->started_id);
        if (st->subpath_job)
                st->subpath_job->s = NULL; /* freed by subpath_job_free when its work is over */
        for (size_t i = 0; i < st->n_subpath_targets; i++)
                free(st->subpath_targets[i]);
        free(st->subpath_targets);
        if (st->env_file_job)
                st->env_file_job->s = NULL; /* freed by env_file_job_free when its work is over */
        for (size_t i = 0; i < st->n_env_files; i++) {
                free(st->env_files[i].value);
                free(st->env_files[i].message);
        }
        free(st->env_files);
        free(st);
}

/* the n-th container to start: ephemeral containers first (they may start while an init container fails), then
 * init containers, then app containers */
static const struct container *container_to_start(const struct pod_sync *s, size_t n) {
        if (n < s->actions.n_ephemeral_start)
                return &s->pod->spec.ephemeral_containers[s->actions.ephemeral_start[n]];
        n -= s->actions.n_ephemeral_start;
        if (n < s->actions.n_init_start)
                return &s->pod->spec.init_containers[s->actions.init_start[n]];
        return &s->pod->spec.containers[s->actions.start[n - s->actions.n_init_start]];
}

static size_t containers_to_start(const struct pod_sync *s) {
        return s->actions.n_ephemeral_start + s->actions.n_init_start + s->actions.n_start;
}

/* ---------------------------------------------------------------- back-off */

/* doBackOff: true when the container waits out its CrashLoopBackOff; otherwise this start is recorded. */
static bool in_crash_backoff(struct pod_sync *s, const struct container *c) {
        _cleanup_(kr_crash_backoff_done) struct kr_crash_backoff d = {};
        uint64_t now = now_realtime_usec(), until;
        char delay[GO_DURATION_MAX];
        int r;

        r = kr_check_crash_backoff(s->pod, c, s->status, &s->actions, s->env->crash_backoff, now, &d);
        if (r < 0) {
                log_error("pod %s: container %s: cannot check its back-off: %s", kubelet_sync_pod_desc(s), c->name,
                          strerror(-r));
                return false;
        }
        if (!d.key)
                return false;
        if (!d.in_backoff) {
                (void) backoff_next(s->env->crash_backoff, d.key, d.finished_usec, now);
                return false;
        }
        /* the delay as Go prints a time.Duration: "10s", "1m20s", "5m0s" */
        go_duration_format((int64_t) d.delay_usec * 1000, delay, sizeof(delay));
        kubelet_sync_set_waiting(s, c->name, "CrashLoopBackOff",
                                 "back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, c->name,
                                 s->pod->name, s->pod->namespace_, s->pod->uid);
        log_info("Back-off %s restarting failed container=%s pod=%s", delay, c->name, kubelet_sync_pod_desc(s));
        kubelet_sync_event(s, c->name, "Warning", "BackOff", "Back-off restarting failed container %s in pod %s_%s(%s)",
                           c->name, s->pod->name, s->pod->namespace_, s->pod->uid);
        /* wake when it ends, converted to the monotonic clock */
        until = now_usec() + (d.until_usec > now ? d.until_usec - now : 0);
        if (!s->wake_usec || until < s->wake_usec)
                s->wake_usec = until;
        return true;
}

/* ---------------------------------------------------------------- the steps, one container at a time */

static void start_next(struct pod_sync *s) {
        struct start_step *st;

        if (s->next_start >= containers_to_start(s)) {
                kubelet_pod_sync_next(s);
                return;
        }
        st = calloc(1, sizeof(*st));
        if (!st) {
                kubelet_sync_call_failed(s, "starting a container", -ENOMEM);
                kubelet_pod_sync_next(s);
                return;
        }
        st->c = container_to_start(s, s->next_start);
        st->image = st->c->image;
        st->pull_policy = st->c->image_pull_policy;
        s->start = st;
        if (in_crash_backoff(s, st->c) || image_volumes_failed(s, st->c)) {
                kubelet_sync_start_step_done(s);
                return;
        }
        kubelet_sync_image(s);
}

void kubelet_sync_start_step_done(struct pod_sync *s) {
        bool vol = s->start && s->start->vol;

        if (vol)
                s->next_image_volume = s->start->vol_index + 1;
        kubelet_sync_start_step_free(s);
        if (vol) {
                image_volume_next(s);
                return;
        }
        s->next_start++;
        start_next(s);
}

void kubelet_sync_image_volumes_free(struct pod_sync *s) {
        for (size_t i = 0; i < s->n_image_volumes; i++) {
                free(s->image_volumes[i].ref);
                free(s->image_volumes[i].message);
        }
        s->image_volumes = mfree(s->image_volumes);
        s->n_image_volumes = s->next_image_volume = 0;
}

void kubelet_sync_start(struct pod_sync *s) {
        const struct pod_volumes *pv = s->pod->spec.volumes;

        s->next_start = 0;
        kubelet_sync_image_volumes_free(s);
        /* getImageVolumes: every image volume pulled (or found present) before the first container starts, only when
         * a container is to start; a failure is the failure of each container that mounts the volume */
        if (pv && pv->n_volumes > 0 && containers_to_start(s) > 0) {
                s->image_volumes = calloc(pv->n_volumes, sizeof(*s->image_volumes));
                if (!s->image_volumes) {
                        kubelet_sync_call_failed(s, "pulling image volumes", -ENOMEM);
                        kubelet_pod_sync_next(s);
                        return;
                }
                s->n_image_volumes = pv->n_volumes;
                image_volume_next(s);
                return;
        }
        start_next(s);
}

/* ---------------------------------------------------------------- image volumes */

/* the next image volume to pull, from s->next_image_volume; the containers once none is left */
static void image_volume_next(struct pod_sync *s) {
        const struct pod_volumes *pv = s->pod->spec.volumes;
        struct start_step *st;
        size_t i = s->next_image_volume;

        while (pv && i < pv->n_volumes && i < s->n_image_volumes && pv->volumes[i].type != VOLUME_IMAGE)
                i++;
        if (!pv || i >= pv->n_volumes || i >= s->n_image_volumes) {
                s->next_image_volume = s->n_image_volumes;
                start_next(s);
                return;
        }
        st = calloc(1, sizeof(*st));
        if (!st) {
                kubelet_sync_call_failed(s, "pulling image volumes", -ENOMEM);
                kubelet_pod_sync_next(s);
                return;
        }
        st->vol = &pv->volumes[i];
        st->vol_index = i;
        st->image = strempty(st->vol->image_reference);
        st->pull_policy = st->vol->image_pull_policy;
        s->start = st;
        kubelet_sync_image(s);
}

/* an image volume could not be had: what the containers that mount it report (reason: a literal) */
void kubelet_sync_image_volume_failed(struct pod_sync *s, const char *reason, const char *fmt, ...) {
        struct sync_image_volume *iv = &s->image_volumes[s->start->vol_index];
        va_list ap;

        free(iv->message);
        iv->message = NULL;
        va_start(ap, fmt);
        if (vasprintf(&iv->message, fmt, ap) < 0)
                iv->message = NULL;
        va_end(ap);
        iv->reason = reason;
}

/* toKubeContainerImageVolumes: a container that mounts an image volume that could not be had does not start; its
 * waiting reason is the pull's (ErrImagePull, ImagePullBackOff, ...), its message the pull's, with a Failed
 * event "Error: <reason>" per such volume */
static bool image_volumes_failed(struct pod_sync *s, const struct container *c) {
        const struct volume_mounts *m = pod_container_mounts(s->pod, c);
        const struct sync_image_volume *last = NULL;
        const struct pod_volumes *pv = s->pod->spec.volumes;

        for (size_t i = 0; m && pv && i < m->n; i++) {
                const struct volume *v = pod_volume_find(s->pod, m->items[i].name);
                size_t idx;
                if (!v || v->type != VOLUME_IMAGE)
                        continue;
                idx = (size_t) (v - pv->volumes);
                if (idx >= s->n_image_volumes || !s->image_volumes[idx].reason)
                        continue;
                last = &s->image_volumes[idx];
                kubelet_sync_event(s, c->name, "Warning", "Failed", "Error: %s", last->reason);
        }
        if (!last)
                return false;
        log_error("pod %s: container %s: an image volume it mounts could not be pulled: %s (%s)",
                  kubelet_sync_pod_desc(s), c->name, strempty(last->message), last->reason);
        kubelet_sync_set_waiting(s, c->name, last->reason, "%s", strempty(last->message));
        s->error = true;
        return true;
}

/* the image volume is there: its resolved image goes into the CRI mount */
void kubelet_sync_image_volume_ready(struct pod_sync *s) {
        struct start_step *st = s->start;
        struct sync_image_volume *iv = &s->image_volumes[st->vol_index];

        free(iv->ref);
        iv->ref = TAKE_PTR(st->image_ref);
        log_v(4, "pod %s: image volume %s: image \"%s\" is %s", kubelet_sync_pod_desc(s), st->vol->name, st->image,
              strna(iv->ref));
        kubelet_sync_start_step_done(s);
}

/* ---------------------------------------------------------------- create and start */

/* The restart count of the next instance: one more than the newest, or, with no instance left in the runtime,
 * one more than the highest N.log in the container's log directory (so logs are not overwritten). */
static uint32_t next_restart_count(const struct pod_sync *s, const struct container *c) {
        const struct kc_container *cs = kc_pod_status_find_container(s->status, c->name);
        _cleanup_free_ char *podlog = NULL, *dir = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int max = -1;

        if (cs)
                return (uint32_t) cs->restart_count + 1;
        podlog = kr_pod_log_dir(s->env->opts->pod_logs_dir, s->pod);
        if (!podlog || asprintf(&dir, "%s/%s", podlog, c->name) < 0)
                return 0;
        d = opendir(dir);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                int n;
                char *dot = strrchr(de->d_name, '.');
                if (!dot || !streq(dot, ".log"))
                        continue;
                *dot = '\0';
                if (safe_atoi(de->d_name, &n) >= 0 && n > max)
                        max = n;
        }
        return (uint32_t) (max + 1);
}

/* postStart has no deadline upstream (it holds the pod's sync until it returns): here it is cut at the pod's
 * terminationGracePeriodSeconds, and not before 30 s. */
static uint64_t post_start_timeout_usec(const struct pod_sync *s) {
        return (uint64_t) MAX(s->pod->spec.termination_grace_period_seconds, (int64_t) 30) * USEC_PER_SEC;
}

/* startContainer's last step: a postStart hook that failed kills the container (killContainer with the message
 * "FailedPostStartHook", its preStop included); the step ends once it is stopped. */
static void on_post_start_done(void *userdata, int error, const char *message) {
        struct pod_sync *s = userdata;
        struct start_step *st;
        const struct container *c;
        struct kill_target_ext t;
        int r;

        if (error == -ECANCELED)
                return; /* the pass is being freed */
        st = s->start;
        c = st->c;
        if (error >= 0) {
                kubelet_sync_start_step_done(s);
                return;
        }
        if (!message)
                message = strerror(-error);
        log_error("Failed to execute PostStartHook: pod=\"%s\" podUID=\"%s\" containerName=\"%s\" "
                  "containerID=\"%.12s\": %s",
                  kubelet_sync_pod_desc(s), s->uid, c->name, st->started_id, message);
        kubelet_sync_event(s, c->name, "Warning", "FailedPostStartHook", "%s", message);
        kubelet_sync_set_waiting(s, c->name, "PostStartHookError", "%s", message);
        s->error = true;
        t = (struct kill_target_ext) {
                .id = st->started_id,
                .name = c->name,
                .grace = MAX(kubelet_sync_grace_raw(s, NULL), (int64_t) MINIMUM_GRACE_PERIOD_SECONDS),
                .pre_stop = kubelet_sync_grace_raw(s, NULL) > 0 ? c->pre_stop : NULL,
                .spec = c,
                .sandbox_id = s->sandbox_id,
        };
        log_info("Stopping container: pod=\"%s\" podUID=\"%s\" containerName=\"%s\" containerID=\"%.12s\" "
                 "gracePeriod=%" PRId64 " reason=\"FailedPostStartHook\"",
                 kubelet_sync_pod_desc(s), s->uid, c->name, st->started_id, t.grace);
        kubelet_sync_event(s, c->name, "Normal", "Killing", "FailedPostStartHook");
        r = kubelet_sync_kill_container(s, &t, kubelet_sync_start_step_done);
        if (r < 0) {
                kubelet_sync_call_failed(s, "StopContainer", r);
                kubelet_sync_start_step_done(s);
        }
}

static void on_start_container(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;
        struct start_step *st = s->start;
        const struct container *c = st->c;

        if (reply->r < 0) {
                log_error("pod %s: container %s: RunContainerError: %s", kubelet_sync_pod_desc(s), c->name,
                          reply->message);
                kubelet_sync_event(s, c->name, "Warning", "Failed", "Error: %s", reply->message);
                kubelet_sync_set_waiting(s, c->name, "RunContainerError", "%s", reply->message);
                s->error = true;
                kubelet_sync_start_step_done(s);
                return;
        }
        log_info("Started container: pod=\"%s\" containerName=\"%s\"", kubelet_sync_pod_desc(s), c->name);
        s->env->ops->container_started(s->env->userdata, s->pod, c->name, st->started_id, st->restart_count);
        kubelet_sync_event(s, c->name, "Normal", "Started", "Started container %s", c->name);
        kubelet_sync_clear_waiting(s, c->name);
        if (c->post_start) {
                struct hook_target t = {
                        .pod_desc = kubelet_sync_hook_desc(s),
                        .container_name = c->name,
                        .container_id = st->started_id,
                        .pod_ip = s->pod->spec.host_network ? s->env->node_ip : s->pod_ip,
                        .spec = c,
                };
                int r = kubelet_hook_run_start(s->env->hook_env, &s->hooks, c->post_start, &t,
                                               post_start_timeout_usec(s), on_post_start_done, s);
                if (r >= 0)
                        return; /* the step waits for the hook */
                log_error("pod %s: container %s: cannot run the postStart hook: %s", kubelet_sync_pod_desc(s), c->name,
                          strerror(-r));
                s->error = true;
        }
        kubelet_sync_start_step_done(s);
}

/* the name of the first image volume container c mounts, or NULL */
static const char *first_image_volume(const struct pod *pod, const struct container *c) {
        const struct volume_mounts *m = pod_container_mounts(pod, c);

        for (size_t i = 0; m && i < m->n; i++) {
                const struct volume *v = pod_volume_find(pod, m->items[i].name);
                if (v && v->type == VOLUME_IMAGE)
                        return v->name;
        }
        return NULL;
}

static void on_create_container(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;
        struct start_step *st = s->start;
        const struct container *c = st->c;
        Runtime__V1__StartContainerRequest req = RUNTIME__V1__START_CONTAINER_REQUEST__INIT;
        const Runtime__V1__CreateContainerResponse *resp = (const void *) reply->msg;
        int r;

        if (reply->r < 0) {
                const char *iv = first_image_volume(s->pod, c);
                log_error("pod %s: container %s: CreateContainerError: %s", kubelet_sync_pod_desc(s), c->name,
                          reply->message);
                /* the status says what upstream's says (containerd's message); the log says what is likely behind it */
                if (iv)
                        log_error(
                                "pod %s: container %s mounts the image volume \"%s\": the runtime must support the CRI "
                                "mount's image (containerd 2.1 or later; containerd 1.x reads it as a bind mount of an "
                                "empty host path, which it cannot create)",
                                kubelet_sync_pod_desc(s), c->name, iv);
                kubelet_sync_event(s, c->name, "Warning", "Failed", "Error: %s", reply->message);
                kubelet_sync_set_waiting(s, c->name, "CreateContainerError", "%s", reply->message);
                s->error = true;
                kubelet_sync_start_step_done(s);
                return;
        }
        log_info("Created container: pod=\"%s\" containerName=\"%s\" containerID=\"%.12s\"", kubelet_sync_pod_desc(s),
                 c->name, resp->container_id);
        kubelet_sync_event(s, c->name, "Normal", "Created", "Created container %s", c->name);
        if (free_and_strdup(&st->started_id, resp->container_id) < 0) {
                kubelet_sync_call_failed(s, "StartContainer", -ENOMEM);
                kubelet_sync_start_step_done(s);
                return;
        }
        req.container_id = st->started_id;
        r = cri_start_container(s->env->cri, &req, 0, on_start_container, s, &s->calls);
        if (r < 0) {
                kubelet_sync_call_failed(s, "StartContainer", r);
                kubelet_sync_start_step_done(s);
        }
}

static void create_container_with(struct pod_sync *s, const struct dm_run_options *devices) {
        struct start_step *st = s->start;
        const struct container *c = st->c;
        Runtime__V1__CreateContainerRequest req = RUNTIME__V1__CREATE_CONTAINER_REQUEST__INIT;
        Runtime__V1__ContainerConfig *cfg = NULL;
        _cleanup_free_ char *podlog = NULL, *dir = NULL;
        struct kc_build_context ctx;
        struct kc_build_report report = {};
        uint32_t restart_count = next_restart_count(s, c);
        int r;

        st->restart_count = restart_count;
        podlog = kr_pod_log_dir(s->env->opts->pod_logs_dir, s->pod);
        if (!podlog || asprintf(&dir, "%s/%s", podlog, c->name) < 0 || mkdir_p(dir, 0755) < 0) {
                log_error("pod %s: cannot create the log directory of container %s", kubelet_sync_pod_desc(s), c->name);
                s->error = true;
                kubelet_sync_start_step_done(s);
                return;
        }
        kubelet_sync_build_context(s, &ctx);
        if (!isempty(c->target_container_name)) {
                /* getTargetID: an ephemeral container joins its target's running instance */
                const struct kc_container *target = kc_pod_status_find_container(s->status, c->target_container_name);
                if (!target || target->state != KC_CONTAINER_RUNNING) {
                        kubelet_sync_set_waiting(s, c->name, "CreateContainerConfigError",
                                                 "unable to find target container %s", c->target_container_name);
                        kubelet_sync_event(s, c->name, "Warning", "Failed", "Error: unable to find target container %s",
                                           c->target_container_name);
                        log_error("pod %s: container %s: unable to find target container %s", kubelet_sync_pod_desc(s),
                                  c->name, c->target_container_name);
                        s->error = true;
                        kubelet_sync_start_step_done(s);
                        return;
                }
                ctx.target_id = target->id;
        }
        ctx.image_user_known = st->image_user_known;
        ctx.image_uid_set = st->image_uid_set;
        ctx.image_uid = st->image_uid;
        ctx.image_username = st->image_username;
        ctx.report = &report;
        ctx.subpath_targets = st->subpath_targets;
        ctx.n_subpath_targets = st->n_subpath_targets;
        ctx.env_files = st->env_files;
        ctx.n_env_files = st->n_env_files;
        r = kr_build_container_config(s->pod, c, restart_count, st->image_ref, &ctx, &cfg);
        for (size_t i = 0; report.event_reasons && report.event_reasons[i]; i++)
                kubelet_sync_event(s, NULL, "Warning", report.event_reasons[i], "%s", report.event_messages[i]);
        if (r < 0) {
                const char *msg = ck_error_message_or(report.error, r);
                kubelet_sync_set_waiting(s, c->name, "CreateContainerConfigError", "%s", msg);
                kubelet_sync_event(s, c->name, "Warning", "Failed", "Error: %s", msg);
                log_error("pod %s: container %s: CreateContainerConfigError: %s", kubelet_sync_pod_desc(s), c->name,
                          msg);
                kc_build_report_done(&report);
                s->error = true;
                kubelet_sync_start_step_done(s);
                return;
        }
        kc_build_report_done(&report);
        if (devices && kubelet_apply_device_options(cfg, devices) < 0) {
                pb_free(cfg);
                kubelet_sync_call_failed(s, "adding the devices to the container", -ENOMEM);
                kubelet_sync_start_step_done(s);
                return;
        }
        if (st->dra_cdi) {
                /* the DRA claims' CDI devices, after the device plugins' (as upstream appends them) */
                struct dm_run_options dra = { .cdi_devices = st->dra_cdi };
                if (kubelet_apply_device_options(cfg, &dra) < 0) {
                        pb_free(cfg);
                        kubelet_sync_call_failed(s, "adding the DRA devices to the container", -ENOMEM);
                        kubelet_sync_start_step_done(s);
                        return;
                }
        }
        if (s->env->ops->cpu_apply(s->env->userdata, s->pod, c, cfg) < 0) {
                pb_free(cfg);
                kubelet_sync_call_failed(s, "setting the container's cpuset", -ENOMEM);
                kubelet_sync_start_step_done(s);
                return;
        }
        req.pod_sandbox_id = s->sandbox_id;
        req.config = cfg;
        req.sandbox_config = s->sandbox_config;
        r = cri_create_container(s->env->cri, &req, 0, on_create_container, s, &s->calls);
        pb_free(cfg);
        if (r < 0) {
                kubelet_sync_call_failed(s, "CreateContainer", r);
                kubelet_sync_start_step_done(s);
                return;
        }
        s->did_work = true;
}

/* the device plugins' part of the container (PreStartContainer done): its config can be built */
static void on_device_options(const struct dm_run_options *opts, const char *error, void *userdata) {
        struct pod_sync *s = userdata;
        const struct container *c = s->start->c;

        s->start->dev_request = NULL;
        if (error) {
                /* GetDeviceRunContainerOptions failed: generateContainerConfig's error */
                kubelet_sync_set_waiting(s, c->name, "CreateContainerConfigError", "%s", error);
                kubelet_sync_event(s, c->name, "Warning", "Failed", "Error: %s", error);
                log_error("pod %s: container %s: CreateContainerConfigError: %s", kubelet_sync_pod_desc(s), c->name,
                          error);
                s->error = true;
                kubelet_sync_start_step_done(s);
                return;
        }
        create_container_with(s, opts);
}

static void config_error(struct pod_sync *s, const char *msg) {
        const struct container *c = s->start->c;

        kubelet_sync_set_waiting(s, c->name, "CreateContainerConfigError", "%s", msg);
        kubelet_sync_event(s, c->name, "Warning", "Failed", "Error: %s", msg);
        log_error("pod %s: container %s: CreateContainerConfigError: %s", kubelet_sync_pod_desc(s), c->name, msg);
        s->error = true;
        kubelet_sync_start_step_done(s);
}

static int subpath_work(void *userdata) {
        struct subpath_job *j = userdata;

        for (size_t i = 0; i < j->n_reqs; i++) {
                int r = vol_subpath_bind(&j->reqs[i], &j->error);
                if (r < 0) {
                        j->failed_idx = i;
                        return r;
                }
        }
        return 0;
}

static void subpath_job_free(void *userdata) {
        struct subpath_job *j = userdata;

        vol_subpath_reqs_free(j->reqs, j->n_reqs);
        ck_error_free(j->error);
        free(j);
}

static void subpath_done(int r, void *userdata) {
        struct subpath_job *j = userdata;
        struct pod_sync *s = j->s;
        struct start_step *st;
        _cleanup_free_ char *msg = NULL;
        size_t n = 0;

        if (!s)
                return; /* the step went meanwhile */
        st = s->start;
        st->subpath_job = NULL;
        j->s = NULL;
        if (r == -ECANCELED) {
                kubelet_sync_start_step_done(s); /* the pool is being freed */
                return;
        }
        if (r < 0) {
                const struct vol_subpath_req *q = &j->reqs[r == -ETIMEDOUT ? 0 : j->failed_idx];
                if (r == -ETIMEDOUT)
                        r = asprintf(&msg,
                                     "preparing the subPath mounts of container %s did not finish within %u s (a "
                                     "volume that does not answer?)",
                                     q->container_name,
                                     (unsigned) (KUBELET_VOLUME_CONTENTS_TIMEOUT_USEC / USEC_PER_SEC));
                else if (j->error) {
                        log_error("pod %s: container %s: %s", kubelet_sync_pod_desc(s), q->container_name,
                                  ck_error_message(j->error));
                        r = asprintf(&msg, "%s", ck_error_message(j->error));
                } else
                        r = asprintf(&msg, "failed to prepare subPath for volumeMount \"%s\" of container \"%s\": %s",
                                     q->volume_name, q->container_name, strerror(-r));
                config_error(s, r < 0 ? "cannot prepare the subPath mounts" : msg);
                return;
        }
        for (size_t i = 0; i < j->n_reqs; i++)
                n = MAX(n, j->reqs[i].idx + 1);
        st->subpath_targets = calloc(n, sizeof(char *));
        if (!st->subpath_targets && n > 0) {
                kubelet_sync_call_failed(s, "preparing the subPath mounts", -ENOMEM);
                kubelet_sync_start_step_done(s);
                return;
        }
        st->n_subpath_targets = n;
        for (size_t i = 0; i < j->n_reqs; i++) {
                log_v(3, "pod %s: container %s: subPath \"%s\" of volume \"%s\" bound at %s", kubelet_sync_pod_desc(s),
                      j->reqs[i].container_name, j->reqs[i].sub, j->reqs[i].volume_name, j->reqs[i].target);
                st->subpath_targets[j->reqs[i].idx] = TAKE_PTR(j->reqs[i].target);
        }
        st->subpaths_ready = true;
        kubelet_sync_start_create(s);
}

/* Bind the container's subPath mounts on the volume contents pool (they open, create and mount inside volumes,
 * which may be network filesystems that stopped answering): false when there are none and the config can be
 * built now. */
static bool prepare_subpaths(struct pod_sync *s) {
        struct start_step *st = s->start;
        struct kc_build_context ctx;
        struct subpath_job *j;
        int r;

        if (st->subpaths_ready)
                return false;
        kubelet_sync_build_context(s, &ctx);
        j = calloc(1, sizeof(*j));
        if (!j) {
                kubelet_sync_call_failed(s, "preparing the subPath mounts", -ENOMEM);
                kubelet_sync_start_step_done(s);
                return true;
        }
        r = vol_container_subpath_requests(s->pod, st->c, &ctx, &j->reqs, &j->n_reqs);
        if (r < 0) {
                free(j);
                config_error(s, r == -EINVAL ? "a subPath must be relative and must not contain '..'"
                                             : "the volume of a subPath mount is not mounted");
                return true;
        }
        if (j->n_reqs == 0) {
                subpath_job_free(j);
                st->subpaths_ready = true;
                return false;
        }
        j->s = s;
        /* keyed by pod: one pod's stalled volume holds one thread, never the other pods' containers */
        r = workpool_submit_full(s->env->pool_contents, s->uid, KUBELET_VOLUME_CONTENTS_TIMEOUT_USEC, subpath_work,
                                 subpath_done, subpath_job_free, j);
        if (r < 0) {
                subpath_job_free(j);
                kubelet_sync_call_failed(s, "preparing the subPath mounts", r);
                kubelet_sync_start_step_done(s);
                return true;
        }
        st->subpath_job = j;
        s->did_work = true;
        return true;
}

static int env_file_work(void *userdata) {
        struct env_file_job *j = userdata;

        for (size_t i = 0; i < j->n_reqs; i++)
                kr_env_file_resolve(&j->reqs[i]);
        return 0;
}

static void env_file_job_free(void *userdata) {
        struct env_file_job *j = userdata;

        kr_env_file_reqs_free(j->reqs, j->n_reqs);
        free(j);
}

static void env_file_done(int r, void *userdata) {
        struct env_file_job *j = userdata;
        struct pod_sync *s = j->s;
        struct start_step *st;
        const struct container *c;

        if (!s)
                return; /* the step went meanwhile */
        st = s->start;
        c = st->c;
        st->env_file_job = NULL;
        j->s = NULL;
        if (r == -ECANCELED) {
                kubelet_sync_start_step_done(s); /* the pool is being freed */
                return;
        }
        if (r < 0) {
                _cleanup_free_ char *msg = NULL;
                if (r == -ETIMEDOUT &&
                    asprintf(&msg,
                             "reading the environment files of container %s did not finish within %u s (a volume "
                             "that does not answer?)",
                             c->name, (unsigned) (KUBELET_VOLUME_CONTENTS_TIMEOUT_USEC / USEC_PER_SEC)) < 0)
                        msg = NULL;
                config_error(s, msg ? msg : "cannot read the environment files");
                return;
        }
        st->env_files = calloc(c->n_env, sizeof(*st->env_files));
        if (!st->env_files) {
                kubelet_sync_call_failed(s, "reading the environment files", -ENOMEM);
                kubelet_sync_start_step_done(s);
                return;
        }
        st->n_env_files = c->n_env;
        for (size_t i = 0; i < j->n_reqs; i++) {
                struct kr_env_file_req *q = &j->reqs[i];
                /* upstream logs ParseEnv's error ("Failed to parse env file") and reports a generic message */
                if (q->detail)
                        log_error("pod %s: container %s: Failed to parse env file: %s", kubelet_sync_pod_desc(s),
                                  c->name, q->detail);
                if (q->env_idx < st->n_env_files) {
                        st->env_files[q->env_idx] = q->result;
                        q->result = (struct kc_env_file_value) {};
                }
        }
        st->env_files_ready = true;
        kubelet_sync_start_create(s);
}

/* Read the files of the container's fileKeyRefs on the volume contents pool (they are the pod's, in a volume it
 * writes): false when there are none and the config can be built now. */
static bool prepare_env_files(struct pod_sync *s) {
        struct start_step *st = s->start;
        struct kc_build_context ctx;
        struct env_file_job *j;
        int r;

        if (st->env_files_ready)
                return false;
        kubelet_sync_build_context(s, &ctx);
        j = calloc(1, sizeof(*j));
        if (!j) {
                kubelet_sync_call_failed(s, "reading the environment files", -ENOMEM);
                kubelet_sync_start_step_done(s);
                return true;
        }
        r = kr_env_file_requests(s->pod, st->c, ctx.root_dir, &j->reqs, &j->n_reqs);
        if (r < 0 || j->n_reqs == 0) {
                env_file_job_free(j);
                if (r < 0) {
                        kubelet_sync_call_failed(s, "reading the environment files", r);
                        kubelet_sync_start_step_done(s);
                        return true;
                }
                st->env_files_ready = true;
                return false;
        }
        j->s = s;
        /* keyed by pod: one pod's stalled volume holds one thread, never the other pods' containers */
        r = workpool_submit_full(s->env->pool_contents, s->uid, KUBELET_VOLUME_CONTENTS_TIMEOUT_USEC, env_file_work,
                                 env_file_done, env_file_job_free, j);
        if (r < 0) {
                env_file_job_free(j);
                kubelet_sync_call_failed(s, "reading the environment files", r);
                kubelet_sync_start_step_done(s);
                return true;
        }
        st->env_file_job = j;
        s->did_work = true;
        return true;
}

/* PrepareDynamicResources: the pod's claims prepared before its containers are created */
static void on_dra_prepared(char **cdi_ids, const char *error, void *userdata) {
        struct pod_sync *s = userdata;
        struct start_step *st = s->start;

        /* error and cdi_ids belong to the job: used before it is freed */
        if (error) {
                kubelet_sync_event(s, NULL, "Warning", "FailedPrepareDynamicResources", "%s", error);
                log_error("pod %s: %s", kubelet_sync_pod_desc(s), error);
                kubelet_dra_job_cancel(TAKE_PTR(st->dra_job));
                s->error = true;
                kubelet_sync_start_step_done(s);
                return;
        }
        if (cdi_ids && strv_copy(cdi_ids, &st->dra_cdi) < 0) {
                kubelet_dra_job_cancel(TAKE_PTR(st->dra_job));
                kubelet_sync_call_failed(s, "preparing the dynamic resources", -ENOMEM);
                kubelet_sync_start_step_done(s);
                return;
        }
        kubelet_dra_job_cancel(TAKE_PTR(st->dra_job));
        st->dra_ready = true;
        kubelet_sync_start_create(s);
}

static bool prepare_dra(struct pod_sync *s) {
        struct start_step *st = s->start;
        int r;

        if (st->dra_ready)
                return false;
        r = s->env->ops->dra_prepare(s->env->userdata, s->pod, st->c, on_dra_prepared, s, &st->dra_job);
        if (r == 1) {
                st->dra_ready = true;
                return false;
        }
        if (r < 0) {
                kubelet_sync_call_failed(s, "preparing the dynamic resources", r);
                kubelet_sync_start_step_done(s);
                return true;
        }
        s->did_work = true;
        return true;
}

void kubelet_sync_start_create(struct pod_sync *s) {
        struct start_step *st = s->start;
        int r;

        if (prepare_dra(s))
                return; /* create_container again once the claims are prepared */
        /* the environment before the mounts, as GenerateRunContainerOptions */
        if (prepare_env_files(s))
                return; /* create_container again once they are read */
        if (prepare_subpaths(s))
                return; /* create_container again once they are bound */
        if (!s->env->devices || !dm_pod_uses_devices(s->env->devices, s->pod)) {
                create_container_with(s, NULL);
                return;
        }
        r = dm_container_options(s->env->devices, s->pod, st->c->name, on_device_options, s, &st->dev_request);
        if (r < 0) {
                kubelet_sync_call_failed(s, "getting the container's devices", r);
                kubelet_sync_start_step_done(s);
        }
}
