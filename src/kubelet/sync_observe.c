/* SPDX-License-Identifier: Apache-2.0 */
/* The observe phase of a pod's pass (GetPodStatus): the pod's sandboxes and containers, found by the pod UID
 * label, then the status of the newest sandbox and of every container. The result is s->status, sorted newest
 * first. */

#include "kubelet/pod_sync.h"

#include "basic/log.h"
#include "basic/time.h"
#include "basic/workpool.h"
#include "container/labels.h"
#include "kuberuntime/termination.h"
#include "kuberuntime/convert.h"

static void list_done(struct pod_sync *s);

/* ---------------------------------------------------------------- list */

static void on_list_sandboxes(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;

        if (reply->r < 0) {
                log_error("pod %s: ListPodSandbox: %s", kubelet_sync_pod_desc(s), reply->message);
                s->error = true;
        } else {
                const Runtime__V1__ListPodSandboxResponse *resp = (const void *) reply->msg;
                for (size_t i = 0; i < resp->n_items; i++) {
                        struct kc_sandbox *sb;
                        if (kr_sandbox_from_cri(resp->items[i], &sb) < 0 ||
                            kc_pod_status_add_sandbox(s->status, sb) < 0)
                                s->error = true;
                }
        }
        kubelet_sync_fanout_release(s);
}

static void on_list_containers(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;

        if (reply->r < 0) {
                log_error("pod %s: ListContainers: %s", kubelet_sync_pod_desc(s), reply->message);
                s->error = true;
        } else {
                const Runtime__V1__ListContainersResponse *resp = (const void *) reply->msg;
                for (size_t i = 0; i < resp->n_containers; i++) {
                        struct kc_container *c;
                        if (kr_container_from_cri(resp->containers[i], &c) < 0 ||
                            kc_pod_status_add_container(s->status, c) < 0)
                                s->error = true;
                }
        }
        kubelet_sync_fanout_release(s);
}

void kubelet_sync_observe(struct pod_sync *s) {
        Runtime__V1__ListPodSandboxRequest sreq = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
        Runtime__V1__PodSandboxFilter sf = RUNTIME__V1__POD_SANDBOX_FILTER__INIT;
        Runtime__V1__PodSandboxFilter__LabelSelectorEntry
                se = RUNTIME__V1__POD_SANDBOX_FILTER__LABEL_SELECTOR_ENTRY__INIT,
                *sep = &se;
        Runtime__V1__ListContainersRequest creq = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
        Runtime__V1__ContainerFilter cf = RUNTIME__V1__CONTAINER_FILTER__INIT;
        Runtime__V1__ContainerFilter__LabelSelectorEntry ce = RUNTIME__V1__CONTAINER_FILTER__LABEL_SELECTOR_ENTRY__INIT,
                                                         *cep = &ce;
        int r;

        se.key = ce.key = (char *) LABEL_POD_UID;
        se.value = ce.value = (char *) s->uid;
        sf.n_label_selector = cf.n_label_selector = 1;
        sf.label_selector = &sep;
        cf.label_selector = &cep;
        sreq.filter = &sf;
        creq.filter = &cf;

        kubelet_sync_fanout_begin(s, list_done);
        r = cri_list_pod_sandbox(s->env->cri, &sreq, 0, on_list_sandboxes, s, &s->calls);
        if (r < 0)
                kubelet_sync_call_failed(s, "ListPodSandbox", r);
        else
                kubelet_sync_fanout_add(s);
        r = cri_list_containers(s->env->cri, &creq, 0, on_list_containers, s, &s->calls);
        if (r < 0)
                kubelet_sync_call_failed(s, "ListContainers", r);
        else
                kubelet_sync_fanout_add(s);
        kubelet_sync_fanout_end(s);
}

/* ---------------------------------------------------------------- statuses */

/* one status call: which sandbox or container of s->status it is about */
struct status_call {
        struct pod_sync *s;
        size_t index;
};

static struct status_call *status_call_new(struct pod_sync *s, size_t index) {
        struct status_call *c = malloc(sizeof(*c));
        if (c)
                *c = (struct status_call) { .s = s, .index = index };
        return c;
}

static void on_sandbox_status(const struct cri_reply *reply, void *userdata) {
        _cleanup_free_ struct status_call *c = userdata;
        struct pod_sync *s = c->s;

        if (reply->r == -ENOENT) {
                /* removed meanwhile: the next pass will see it gone */
        } else if (reply->r < 0) {
                log_error("pod %s: PodSandboxStatus: %s", kubelet_sync_pod_desc(s), reply->message);
                s->error = true;
        } else {
                const Runtime__V1__PodSandboxStatusResponse *resp = (const void *) reply->msg;
                if (resp->status && kr_sandbox_set_status(s->status->sandboxes[c->index], resp->status) < 0)
                        s->error = true;
        }
        kubelet_sync_fanout_release(s);
}

/* The termination message of an exited container is read on the volume contents pool (its file may sit on a
 * filesystem that stopped answering; with FallbackToLogsOnError the end of its log is read too), keyed by pod, with
 * the pool's deadline: the status waits for it in the fan-out, and comes without the message when the deadline
 * passes. */
struct message_job {
        struct sync_job job;
        size_t index;
        struct kr_termination_read *t;
};

static void message_job_free(void *userdata) {
        struct message_job *j = userdata;

        kr_termination_read_free(j->t);
        free(j);
}

static int message_work(void *userdata) {
        struct message_job *j = userdata;

        return kr_termination_read_run(j->t);
}

static void message_done(int r, void *userdata) {
        struct message_job *j = userdata;
        struct pod_sync *s = kubelet_sync_job_detach(&j->job);
        struct kc_container *kc;

        if (!s)
                return; /* the pass went meanwhile */
        kc = s->status->containers[j->index];
        if (r == -ETIMEDOUT)
                log_warning("pod %s: container %s: reading its termination message did not finish within %u s (a "
                            "volume that does not answer?): its status has none",
                            kubelet_sync_pod_desc(s), kc->name,
                            (unsigned) (KUBELET_VOLUME_CONTENTS_TIMEOUT_USEC / USEC_PER_SEC));
        else if (r == -ECANCELED) {
                /* the pool is being freed */
        } else if (r < 0 || kr_termination_read_apply(j->t, kc) < 0) {
                kubelet_sync_call_failed(s, "reading the termination message", r < 0 ? r : -ENOMEM);
        }
        kubelet_sync_fanout_release(s);
}

/* Nothing to read: 0 at once; else the read is queued and counted in the fan-out. */
static int read_termination_message(struct pod_sync *s, size_t index, const Runtime__V1__ContainerStatus *st) {
        struct message_job *j;
        int r;

        if (!s->env->pool_contents)
                return 0; /* a test's kubelet without one */
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        *j = (struct message_job) { .index = index };
        r = kr_termination_read_new(s->status->containers[index], st, s->env->opts->root_dir, &j->t);
        if (r < 0 || !j->t) {
                free(j);
                return r;
        }
        kubelet_sync_job_attach(s, &j->job);
        r = workpool_submit_full(s->env->pool_contents, s->uid, KUBELET_VOLUME_CONTENTS_TIMEOUT_USEC, message_work,
                                 message_done, message_job_free, j);
        if (r < 0) {
                (void) kubelet_sync_job_detach(&j->job);
                message_job_free(j);
                return r;
        }
        kubelet_sync_fanout_add(s);
        return 0;
}

static void on_container_status(const struct cri_reply *reply, void *userdata) {
        _cleanup_free_ struct status_call *c = userdata;
        struct pod_sync *s = c->s;

        if (reply->r == -ENOENT) {
                /* removed meanwhile */
        } else if (reply->r < 0) {
                log_error("pod %s: ContainerStatus: %s", kubelet_sync_pod_desc(s), reply->message);
                s->error = true;
        } else {
                const Runtime__V1__ContainerStatusResponse *resp = (const void *) reply->msg;
                struct kc_container *kc = s->status->containers[c->index];
                if (resp->status && (kr_container_set_status(kc, resp->status) < 0 ||
                                     read_termination_message(s, c->index, resp->status) < 0))
                        s->error = true;
        }
        kubelet_sync_fanout_release(s);
}

/* the newest sandbox's status (its IP, its network mode) and every container's */
static void list_done(struct pod_sync *s) {
        if (s->error) {
                kubelet_pod_sync_finish(s);
                return;
        }
        kc_pod_status_sort(s->status);

        s->status_calls.drop = free;
        kubelet_sync_fanout_begin(s, kubelet_pod_sync_next);
        if (s->status->n_sandboxes > 0) {
                Runtime__V1__PodSandboxStatusRequest req = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
                struct status_call *c = status_call_new(s, 0);
                int r = c ? 0 : -ENOMEM;

                req.pod_sandbox_id = s->status->sandboxes[0]->id;
                if (r >= 0)
                        r = cri_pod_sandbox_status(s->env->cri, &req, 0, on_sandbox_status, c, &s->status_calls);
                if (r < 0) {
                        free(c);
                        kubelet_sync_call_failed(s, "PodSandboxStatus", r);
                } else
                        kubelet_sync_fanout_add(s);
        }
        for (size_t i = 0; i < s->status->n_containers && !s->error; i++) {
                Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
                struct status_call *c = status_call_new(s, i);
                int r = c ? 0 : -ENOMEM;

                req.container_id = s->status->containers[i]->id;
                if (r >= 0)
                        r = cri_container_status(s->env->cri, &req, 0, on_container_status, c, &s->status_calls);
                if (r < 0) {
                        free(c);
                        kubelet_sync_call_failed(s, "ContainerStatus", r);
                } else
                        kubelet_sync_fanout_add(s);
        }
        kubelet_sync_fanout_end(s);
}
