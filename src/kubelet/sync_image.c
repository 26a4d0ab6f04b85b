/* SPDX-License-Identifier: Apache-2.0 */
/* The image step of the start phase (sync_start.c): getting the image of the container being started, or of the
 * image volume being pulled, s->start (struct start_step, sync_start.h). A state machine whose every arrow is a
 * callback; it ends in exactly one of: the container created (kubelet_sync_start_create), the image volume ready
 * (kubelet_sync_image_volume_ready), or the step done without its image (kubelet_sync_start_step_done: reported as
 * the container's waiting reason with the events, or kept as the image volume's failure), or the pass ended (the
 * pod went away meanwhile, or the kubelet stops).
 *
 *   STATUS   ImageStatus, unless the pull policy is Always (kr_image_status_first)                   -> DECIDE
 *   DECIDE   kr_decide_image(pull policy, present, in ImagePullBackOff):
 *              the present image: Pulled "already present"                       -> created / volume ready
 *              ErrImageNeverPull; ImagePullBackOff (the pass wakes when it ends)  -> step done
 *              pull: Pulling, the pull secrets' credentials for the image         -> CREDS, or QUEUE without plugins
 *   CREDS    the credential provider plugins (--image-credential-provider-config): first the pod's service
 *            account when a matching plugin has tokenAttributes (credprov_sa_fetch), then the plugins asked
 *            off the loop; their credentials come after the secrets'                                 -> QUEUE
 *   QUEUE    the pod no longer desired or being deleted: the pass ends; else wait for a slot of
 *            env->image_puller (serializeImagePulls, maxParallelImagePulls), held through every credential;
 *            withdrawn meanwhile (kubelet_sync_start_withdraw): the pass ends                          -> PULL
 *   PULL     PullImage with the next credential (none when there is none), without a deadline:
 *              failed with another credential left                                                   -> PULL
 *              failed: ErrImagePull (all the credentials' errors), the image's back-off steps      -> step done
 *              pulled: the back-off reset; an image volume                                 -> volume ready
 *              pulled: a container                                                                   -> USER
 *   USER     ImageStatus of the pulled image for its user (runAsUser default, runAsNonRoot)         -> created
 *
 * An ImageStatus that fails is ErrImageInspect (step done). */

#include "kubelet/pod_sync.h"
#include "kubelet/sync_start.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "config/config.h"
#include "images/pull_store.h"
#include "kubelet/credprov_sa.h"

static void image_decided(struct pod_sync *s, bool present);
static void pull_try(struct pod_sync *s);
static void pull_queue(struct pod_sync *s);

/* the image's user from an ImageStatus reply; false when the reply has no image */
static int take_image_user(struct start_step *st, const Runtime__V1__ImageStatusResponse *resp) {
        if (!resp->image || isempty(resp->image->id))
                return 0;
        st->image_user_known = true;
        st->image_uid_set = resp->image->uid != NULL;
        st->image_uid = resp->image->uid ? resp->image->uid->value : 0;
        if (free_and_strdup(&st->image_username, isempty(resp->image->username) ? NULL : resp->image->username) < 0)
                return -ENOMEM;
        return 1;
}

static void image_status(struct pod_sync *s, const char *image, cri_callback_t cb) {
        Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
        int r;

        spec.image = (char *) image;
        req.image = &spec;
        r = cri_image_status(s->env->cri, &req, 0, cb, s, &s->calls);
        if (r < 0) {
                kubelet_sync_call_failed(s, "ImageStatus", r);
                kubelet_sync_start_step_done(s);
        }
}

static bool image_status_failed(struct pod_sync *s, const struct cri_reply *reply) {
        const struct start_step *st = s->start;

        if (reply->r >= 0)
                return false;
        log_error("pod %s: %s %s: ImageStatus \"%s\": %s", kubelet_sync_pod_desc(s), st->c ? "container" : "volume",
                  step_desc(st), st->image, reply->message);
        if (st->c) {
                kubelet_sync_set_waiting(s, st->c->name, "ErrImageInspect", "%s", reply->message);
                s->error = true;
        } else
                kubelet_sync_image_volume_failed(s, "ErrImageInspect", "%s", reply->message);
        kubelet_sync_start_step_done(s);
        return true;
}

/* is the image present? (its id is then the image to run) */
static void on_image_present(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;
        struct start_step *st = s->start;
        const Runtime__V1__ImageStatusResponse *resp = (const void *) reply->msg;
        int present;

        if (image_status_failed(s, reply))
                return;
        present = take_image_user(st, resp);
        if (present > 0 && free_and_strdup(&st->image_ref, resp->image->id) < 0)
                present = -ENOMEM;
        if (present < 0) {
                kubelet_sync_call_failed(s, "ImageStatus", present);
                kubelet_sync_start_step_done(s);
                return;
        }
        image_decided(s, present > 0);
}

void kubelet_sync_image(struct pod_sync *s) {
        const struct start_step *st = s->start;

        if (kr_image_status_first(st->pull_policy))
                image_status(s, st->image, on_image_present);
        else
                image_decided(s, false);
}

static char *image_backoff_key(const struct pod_sync *s, const char *image) {
        char *k = NULL;
        if (asprintf(&k, "%s_%s", s->uid, image) < 0)
                return NULL;
        return k;
}

/* is the image in its pull back-off (a pull failed recently)? */
static bool in_pull_backoff(struct pod_sync *s, const char *image, uint64_t *ret_until) {
        _cleanup_free_ char *key = image_backoff_key(s, image);

        return key && backoff_in_backoff_since(s->env->image_backoff, key,
                                               backoff_last_update(s->env->image_backoff, key), now_usec(), ret_until);
}

static void pull(struct pod_sync *s);

/* The pod's pull secrets' credentials for the image, as the pulled-image records know them (coordinates and
 * credential hash); hashes holds the hashes (65 bytes each). */
static int pod_secret_creds(struct pod_sync *s, const char *image, struct pull_secret_coord **ret, char **ret_hashes,
                            size_t *ret_n) {
        _cleanup_free_ const struct cred_auth **auths = NULL;
        _cleanup_free_ struct pull_secret_coord *coords = NULL;
        _cleanup_free_ char *hashes = NULL;
        size_t n_auths = 0, n = 0;
        int r;

        r = cred_keyring_lookup(&s->keyring, image, &auths, &n_auths);
        if (r < 0)
                return r;
        if (n_auths > 0) {
                coords = calloc(n_auths, sizeof(*coords));
                hashes = calloc(n_auths, 65);
                if (!coords || !hashes)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n_auths; i++) {
                const struct cred_auth *a = auths[i];
                if (!a->secret_uid)
                        continue;
                char *hash = hashes + n * 65;
                r = pull_store_credential_hash(a->username, a->password, hash, 65);
                if (r < 0)
                        return r;
                coords[n++] = (struct pull_secret_coord) { .uid = a->secret_uid,
                                                           .namespace = a->secret_namespace,
                                                           .name = a->secret_name,
                                                           .credential_hash = hash };
        }
        *ret = TAKE_PTR(coords);
        *ret_hashes = TAKE_PTR(hashes);
        *ret_n = n;
        return 0;
}

/* KubeletEnsureSecretPulledImages (upstream's MustAttemptImagePull): must the pod's credentials be verified
 * (by a pull) before it uses the image present? */
static bool must_verify_present_image(struct pod_sync *s) {
        const struct start_step *st = s->start;
        _cleanup_free_ struct pull_secret_coord *coords = NULL;
        _cleanup_free_ char *hashes = NULL;
        size_t n = 0;
        int r;

        if (!s->env->pull_records)
                return false;
        r = pod_secret_creds(s, st->image, &coords, &hashes, &n);
        if (r < 0) {
                log_warning("pod %s: cannot gather the pull secrets' credentials for \"%s\", verifying them: %s",
                            kubelet_sync_pod_desc(s), st->image, strerror(-r));
                return true;
        }
        return pull_store_must_pull(s->env->pull_records, s->env->pull_verify_policy,
                                    s->env->opts->preloaded_images_verification_allowlist, st->image, st->image_ref,
                                    &(struct pull_creds) { .secrets = coords, .n_secrets = n }, now_realtime_usec());
}

#define NEVER_PULL_UNVERIFIED                                                                                       \
        "Container image \"%s\" is present with pull policy of \"Never\" but does not have the proper auth (image " \
        "secret) that was used to pull the image"

static void image_decided(struct pod_sync *s, bool present) {
        const struct start_step *st = s->start;
        const char *image = st->image, *cn = step_container(st);
        uint64_t until = 0;
        bool backoff = in_pull_backoff(s, image, &until);
        enum kr_image_action d = kr_decide_image(st->pull_policy, present, backoff);

        if (d == KR_IMAGE_USE_PRESENT && must_verify_present_image(s)) {
                if (st->pull_policy == PULL_POLICY_NEVER) {
                        log_error("pod %s: %s %s: " NEVER_PULL_UNVERIFIED " (ErrImageNeverPull)",
                                  kubelet_sync_pod_desc(s), st->c ? "container" : "volume", step_desc(st), image);
                        kubelet_sync_event(s, cn, "Warning", "ErrImageNeverPull", NEVER_PULL_UNVERIFIED, image);
                        if (st->c) {
                                kubelet_sync_set_waiting(s, cn, "ErrImageNeverPull", NEVER_PULL_UNVERIFIED, image);
                                s->error = true;
                        } else
                                kubelet_sync_image_volume_failed(s, "ErrImageNeverPull", NEVER_PULL_UNVERIFIED, image);
                        kubelet_sync_start_step_done(s);
                        return;
                }
                log_v(2, "pod %s: image \"%s\" present, its pull credentials are verified by pulling it",
                      kubelet_sync_pod_desc(s), image);
                d = backoff ? KR_IMAGE_PULL_BACKOFF : KR_IMAGE_PULL;
        }
        switch (d) {
        case KR_IMAGE_USE_PRESENT:
                log_v(3, "pod %s: container image \"%s\" already present on machine", kubelet_sync_pod_desc(s), image);
                /* with KubeletEnsureSecretPulledImages, upstream says the pod's access was checked */
                kubelet_sync_event(s, cn, "Normal", "Pulled", "Container image \"%s\" already present on machine%s",
                                   image, s->env->pull_records ? " and can be accessed by the pod" : "");
                if (!st->c) {
                        kubelet_sync_image_volume_ready(s);
                        return;
                }
                kubelet_sync_start_create(s);
                return;
        case KR_IMAGE_NEVER_PULL:
                log_error("pod %s: %s %s: Container image \"%s\" is not present with pull policy of Never "
                          "(ErrImageNeverPull)",
                          kubelet_sync_pod_desc(s), st->c ? "container" : "volume", step_desc(st), image);
                if (st->c) {
                        kubelet_sync_set_waiting(s, cn, "ErrImageNeverPull",
                                                 "Container image \"%s\" is not present with pull policy of Never",
                                                 image);
                        s->error = true;
                } else
                        kubelet_sync_image_volume_failed(
                                s, "ErrImageNeverPull",
                                "Container image \"%s\" is not present with pull policy of Never", image);
                kubelet_sync_start_step_done(s);
                return;
        case KR_IMAGE_PULL_BACKOFF:
                if (st->c)
                        kubelet_sync_set_waiting(s, cn, "ImagePullBackOff", "Back-off pulling image \"%s\"", image);
                else
                        kubelet_sync_image_volume_failed(s, "ImagePullBackOff", "Back-off pulling image \"%s\"", image);
                log_v(2, "pod %s: %s: Back-off pulling image \"%s\"", kubelet_sync_pod_desc(s), step_desc(st), image);
                kubelet_sync_event(s, cn, "Normal", "BackOff", "Back-off pulling image \"%s\"", image);
                kubelet_sync_event(s, cn, "Warning", "Failed", "Error: ImagePullBackOff");
                if (!s->wake_usec || until < s->wake_usec)
                        s->wake_usec = until;
                kubelet_sync_start_step_done(s);
                return;
        case KR_IMAGE_PULL:
                pull(s);
                return;
        }
}

/* The plugins answered: their credentials come after the pull secrets' (UnionDockerKeyring: the secrets' keyring,
 * then the providers'), each tried in turn. A plugin that failed gives none; its error goes with a pull that
 * then fails. */
static void on_provider_credentials(struct cred_keyring *creds, const char *error, void *userdata) {
        struct pod_sync *s = userdata;
        struct start_step *st = s->start;
        const struct cred_auth **more = NULL, **all;
        size_t n_more = 0;

        st->cred_lookup = NULL;
        st->provider_keyring = *creds;
        *creds = (struct cred_keyring) {};
        if (error)
                st->provider_error = strdup(error);
        if (cred_keyring_lookup(&st->provider_keyring, st->image, &more, &n_more) < 0) {
                kubelet_sync_call_failed(s, "looking up pull credentials", -ENOMEM);
                kubelet_sync_start_step_done(s);
                return;
        }
        if (n_more > 0) {
                all = reallocarray(st->creds, st->n_creds + n_more, sizeof(*all));
                if (!all) {
                        free(more);
                        kubelet_sync_call_failed(s, "looking up pull credentials", -ENOMEM);
                        kubelet_sync_start_step_done(s);
                        return;
                }
                memcpy(all + st->n_creds, more, n_more * sizeof(*all));
                st->creds = all;
                st->n_creds += n_more;
        }
        free(more);
        pull_queue(s);
}

/* the plugins for the image's repository, asked off the loop (a child process each), with the pod's service
 * account when a plugin has tokenAttributes */
static int provider_lookup(struct pod_sync *s, const struct credprov_pod_sa *sa) {
        struct start_step *st = s->start;
        _cleanup_free_ char *repo = cred_image_repository(st->image);

        return repo ? credprov_lookup(s->env->credprov, repo, sa, on_provider_credentials, s, &st->cred_lookup)
                    : -ENOMEM;
}

static void on_pod_service_account(const struct credprov_pod_sa *sa, void *userdata) {
        struct pod_sync *s = userdata;
        int r;

        s->start->sa_fetch = NULL;
        r = provider_lookup(s, sa);
        if (r < 0) {
                kubelet_sync_call_failed(s, "asking the credential provider plugins", r);
                kubelet_sync_start_step_done(s);
        }
}

/* KubeletServiceAccountTokenForCredentialProviders: the pod's service account (spec.serviceAccountName; none
 * for a static pod) when a matching plugin has tokenAttributes. 1: asked, on_pod_service_account follows. */
static int provider_service_account(struct pod_sync *s) {
        struct start_step *st = s->start;
        _cleanup_free_ char *repo = cred_image_repository(st->image);
        const char *sa_name;
        int r;

        if (!repo)
                return -ENOMEM;
        if (pod_config_is_static(s->pod) || !credprov_wants_service_account(s->env->credprov, repo))
                return 0;
        sa_name = json_string_value(json_object_get(json_object_get(s->pod->raw, "spec"), "serviceAccountName"));
        if (isempty(sa_name))
                return 0;
        if (!kubelet_sync_client(s)) {
                struct credprov_pod_sa sa = {
                        .namespace = s->pod->namespace_,
                        .pod_name = s->pod->name,
                        .pod_uid = s->uid,
                        .name = sa_name,
                        .error = "failed to get service account: cannot get ServiceAccounts when kubelet is in "
                                 "standalone mode",
                };
                r = provider_lookup(s, &sa);
                return r < 0 ? r : 1;
        }
        r = credprov_sa_fetch(kubelet_sync_client(s), s->env->credprov, repo, s->pod->namespace_, s->pod->name, s->uid,
                              sa_name, on_pod_service_account, s, &st->sa_fetch);
        return r < 0 ? r : 1;
}

static void pull(struct pod_sync *s) {
        struct start_step *st = s->start;
        int r;

        log_info("Pulling image: pod=\"%s\" image=\"%s\"", kubelet_sync_pod_desc(s), st->image);
        if (s->env->pull_records && !st->pull_intent) {
                r = pull_store_intent_begin(s->env->pull_records, st->image);
                if (r < 0) {
                        /* upstream fails the pull when its intent cannot be recorded */
                        kubelet_sync_call_failed(s, "recording the image pull intent", r);
                        kubelet_sync_start_step_done(s);
                        return;
                }
                st->pull_intent = true;
        }
        kubelet_sync_event(s, step_container(st), "Normal", "Pulling", "Pulling image \"%s\"", st->image);
        if (st->c)
                kubelet_sync_set_waiting(s, st->c->name, "ContainerCreating", "%s", "");
        r = cred_keyring_lookup(&s->keyring, st->image, &st->creds, &st->n_creds);
        if (r < 0) {
                kubelet_sync_call_failed(s, "looking up pull credentials", r);
                kubelet_sync_start_step_done(s);
                return;
        }
        if (s->env->credprov) {
                r = provider_service_account(s);
                if (r == 0)
                        r = provider_lookup(s, NULL);
                if (r >= 0)
                        return;
                kubelet_sync_call_failed(s, "asking the credential provider plugins", r);
                kubelet_sync_start_step_done(s);
                return;
        }
        pull_queue(s);
}

/* the pulled image's user, as getImageUser asks for it before creating the container */
static void on_pulled_image_status(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;
        int r;

        if (image_status_failed(s, reply))
                return;
        /* just pulled, yet not listed: as upstream's getImageUser, an image without a user is run as root (uid
         * 0), so runAsNonRoot refuses it rather than creating the container unchecked */
        r = take_image_user(s->start, (const void *) reply->msg);
        if (r < 0) {
                kubelet_sync_call_failed(s, "ImageStatus", -ENOMEM);
                kubelet_sync_start_step_done(s);
                return;
        }
        if (r == 0) {
                s->start->image_user_known = true;
                s->start->image_uid_set = false;
                s->start->image_username = mfree(s->start->image_username);
        }
        kubelet_sync_start_create(s);
}

/* RecordImagePulled / RecordImagePullFailed: the credentials that pulled the image (a pull secret's, or node-wide
 * ones: none, or a credential provider plugin's) recorded, the pull intent ended */
static void pull_ended(struct pod_sync *s, bool pulled) {
        struct start_step *st = s->start;
        const struct cred_auth *a = st->cred_index < st->n_creds ? st->creds[st->cred_index] : NULL;
        char hash[65];
        int r;

        if (!st->pull_intent)
                return;
        if (pulled && !isempty(st->image_ref)) {
                struct pull_secret_coord coord = {};
                struct pull_creds creds = { .node_pods_accessible = true };
                if (a && a->secret_uid) {
                        r = pull_store_credential_hash(a->username, a->password, hash, sizeof(hash));
                        coord = (struct pull_secret_coord) { .uid = a->secret_uid,
                                                             .namespace = a->secret_namespace,
                                                             .name = a->secret_name,
                                                             .credential_hash = r >= 0 ? hash : NULL };
                        creds = (struct pull_creds) { .secrets = &coord, .n_secrets = 1 };
                }
                r = pull_store_pulled(s->env->pull_records, st->image, st->image_ref, &creds, now_realtime_usec());
                if (r < 0)
                        log_error("pod %s: cannot record the pull of \"%s\": %s", kubelet_sync_pod_desc(s), st->image,
                                  strerror(-r));
        }
        pull_store_intent_end(s->env->pull_records, st->image);
        st->pull_intent = false;
}

static void on_pull_image(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;
        struct start_step *st = s->start;
        const char *image = st->image, *cn = step_container(st);
        _cleanup_free_ char *key = image_backoff_key(s, image);

        if (reply->r < 0 && st->n_creds > 1) {
                /* with several matching credentials, each is tried in turn; the error aggregates them all */
                char *n = NULL;
                if (asprintf(&n, "%s%s%s", strempty(st->pull_errors), st->pull_errors ? ", " : "", reply->message) >=
                    0) {
                        free(st->pull_errors);
                        st->pull_errors = n;
                }
                if (++st->cred_index < st->n_creds) {
                        pull_try(s);
                        return;
                }
        }
        /* the pull is over (every credential tried): the next one in the queue may start */
        slots_release(s->env->image_puller, &st->pull);
        if (reply->r < 0) {
                _cleanup_free_ char *agg = NULL, *with_plugin = NULL;
                const char *message = reply->message;
                if (st->n_creds > 1 && st->pull_errors && asprintf(&agg, "[%s]", st->pull_errors) >= 0)
                        message = agg;
                /* a credential provider plugin that failed (hung, crashed, answered garbage) says so here: the
                 * pull went on without its credentials, as upstream, and that is likely why it failed */
                if (st->provider_error && asprintf(&with_plugin, "%s; credential provider plugin failed: %s", message,
                                                   st->provider_error) >= 0)
                        message = with_plugin;
                log_error("pod %s: %s %s: Failed to pull image \"%s\": %s (ErrImagePull)", kubelet_sync_pod_desc(s),
                          st->c ? "container" : "volume", step_desc(st), image, message);
                kubelet_sync_event(s, cn, "Warning", "Failed", "Failed to pull image \"%s\": %s", image, message);
                kubelet_sync_event(s, cn, "Warning", "Failed", "Error: ErrImagePull");
                if (st->c) {
                        kubelet_sync_set_waiting(s, cn, "ErrImagePull", "%s", message);
                        s->error = true;
                } else
                        kubelet_sync_image_volume_failed(s, "ErrImagePull", "%s", message);
                if (key)
                        (void) backoff_next(s->env->image_backoff, key, now_usec(), now_usec());
                pull_ended(s, false);
                kubelet_sync_start_step_done(s);
                return;
        }
        log_info("Successfully pulled image: pod=\"%s\" image=\"%s\"", kubelet_sync_pod_desc(s), image);
        kubelet_sync_event(s, cn, "Normal", "Pulled", "Successfully pulled image \"%s\"", image);
        if (key)
                backoff_reset(s->env->image_backoff, key);
        if (free_and_strdup(&st->image_ref,
                            ((const Runtime__V1__PullImageResponse *) (const void *) reply->msg)->image_ref) < 0) {
                kubelet_sync_call_failed(s, "PullImage", -ENOMEM);
                kubelet_sync_start_step_done(s);
                return;
        }
        pull_ended(s, true);
        if (!st->c) {
                kubelet_sync_image_volume_ready(s);
                return;
        }
        image_status(s, st->image_ref, on_pulled_image_status);
}

/* PullImage with the next matching credential (none when there is none) */
static void pull_try(struct pod_sync *s) {
        struct start_step *st = s->start;
        Runtime__V1__PullImageRequest req = RUNTIME__V1__PULL_IMAGE_REQUEST__INIT;
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
        Runtime__V1__AuthConfig auth = RUNTIME__V1__AUTH_CONFIG__INIT;
        int r;

        spec.image = (char *) st->image;
        req.image = &spec;
        req.sandbox_config = s->sandbox_config;
        if (st->cred_index < st->n_creds) {
                /* no server_address: containerd ignores credentials whose address does not parse as its host */
                auth.username = st->creds[st->cred_index]->username;
                auth.password = st->creds[st->cred_index]->password;
                req.auth = &auth;
                log_v(3, "pod %s: pulling image \"%s\" with the credentials for %s", kubelet_sync_pod_desc(s),
                      st->image, st->creds[st->cred_index]->key);
        }
        /* pulls can take long: no deadline at all, as upstream's PullImage (the runtime's own progress timeout
         * ends a stalled pull) */
        r = cri_pull_image(s->env->cri, &req, UINT64_MAX, on_pull_image, s, &s->calls);
        if (r < 0) {
                slots_release(s->env->image_puller, &st->pull);
                kubelet_sync_call_failed(s, "PullImage", r);
                kubelet_sync_start_step_done(s);
                return;
        }
        s->did_work = true;
}

/* The pull's turn came: PullImage with the first credential; or it was withdrawn: the pass ends here and the
 * next one (already asked for) sees the pod's new state. */
static void on_pull_turn(void *userdata, int r) {
        struct pod_sync *s = userdata;
        struct start_step *st = s->start;

        if (r < 0) {
                slots_release(s->env->image_puller, &st->pull);
                log_v(2, "pod %s: %s: the pull of image \"%s\" left the queue", kubelet_sync_pod_desc(s), step_desc(st),
                      st->image);
                s->did_work = true; /* observe again at once */
                kubelet_pod_sync_finish(s);
                return;
        }
        log_v(2, "pod %s: %s: pull of image \"%s\" started (%u running, %u waiting)", kubelet_sync_pod_desc(s),
              step_desc(st), st->image, slots_running(s->env->image_puller), slots_waiting(s->env->image_puller));
        pull_try(s);
}

/* wait for a slot in the pull queue (serializeImagePulls, maxParallelImagePulls) */
static void pull_queue(struct pod_sync *s) {
        struct start_step *st = s->start;
        struct pod_sync_worker_state ws = kubelet_sync_worker_state(s);

        if (!ws.pod || ws.deleting) {
                /* removed or deleted while its credentials were looked up: no pull, the next pass stops it */
                s->did_work = true;
                kubelet_pod_sync_finish(s);
                return;
        }

        if (slots_waiting(s->env->image_puller) > 0 || slots_running(s->env->image_puller) > 0)
                log_v(3, "pod %s: %s: the pull of image \"%s\" waits for its turn (%u running, %u waiting)",
                      kubelet_sync_pod_desc(s), step_desc(st), st->image, slots_running(s->env->image_puller),
                      slots_waiting(s->env->image_puller));
        slots_enqueue(s->env->image_puller, &st->pull, on_pull_turn, s);
}

void kubelet_sync_start_withdraw(struct pod_sync *s) {
        if (s->start)
                (void) slots_withdraw(s->env->image_puller, &s->start->pull);
}
