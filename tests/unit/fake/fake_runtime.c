/* SPDX-License-Identifier: Apache-2.0 */
/* The fake runtime of fake_runtime.h, and the cri.h client that talks to it. */
#include "fake/fake_runtime.h"

#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/list.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/hash.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "cri/cri.h"

/* ---------------------------------------------------------------- memory (test code: out of memory aborts) */

static void *xcalloc(size_t n, size_t size) {
        void *p = calloc(n ? n : 1, size ? size : 1);
        if (!p) {
                fputs("fake runtime: out of memory\n", stderr);
                abort();
        }
        return p;
}

static char *xstrdup(const char *s) {
        char *p = strdup(s ? s : "");
        if (!p) {
                fputs("fake runtime: out of memory\n", stderr);
                abort();
        }
        return p;
}

static char *xasprintf(const char *fmt, ...) _printf_(1, 2);
static char *xasprintf(const char *fmt, ...) {
        char *s;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0) {
                fputs("fake runtime: out of memory\n", stderr);
                abort();
        }
        return s;
}

#define GROW(array, n, cap)                                                     \
        do {                                                                    \
                if ((n) == (cap)) {                                             \
                        size_t _c = (cap) ? 2 * (cap) : 16;                     \
                        void *_p = realloc((array), _c * sizeof(*(array)));     \
                        if (!_p) {                                              \
                                fputs("fake runtime: out of memory\n", stderr); \
                                abort();                                        \
                        }                                                       \
                        (array) = _p;                                           \
                        (cap) = _c;                                             \
                }                                                               \
        } while (0)

/* What a reply is built from: freed in one go once packed. */
struct arena {
        void **p;
        size_t n, cap;
};

static void *a_new(struct arena *a, size_t size) {
        void *x = xcalloc(1, size);
        GROW(a->p, a->n, a->cap);
        a->p[a->n++] = x;
        return x;
}

static char *a_printf(struct arena *a, const char *fmt, ...) _printf_(2, 3);
static char *a_printf(struct arena *a, const char *fmt, ...) {
        char *s;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                abort();
        GROW(a->p, a->n, a->cap);
        a->p[a->n++] = s;
        return s;
}

static void arena_done(struct arena *a) {
        for (size_t i = 0; i < a->n; i++)
                free(a->p[i]);
        free(a->p);
        *a = (struct arena) {};
}

/* map entries of one message type copied (by reference) into another's: same wire form, other C type */
#define COPY_MAP(a, dst_n, dst, EntryType, ENTRY_INIT, src_n, src)            \
        do {                                                                  \
                (dst_n) = (src_n);                                            \
                (dst) = a_new((a), sizeof(*(dst)) * ((src_n) ? (src_n) : 1)); \
                for (size_t _i = 0; _i < (src_n); _i++) {                     \
                        EntryType *_e = a_new((a), sizeof(EntryType));        \
                        *_e = (EntryType) ENTRY_INIT;                         \
                        _e->key = (src)[_i]->key;                             \
                        _e->value = (src)[_i]->value;                         \
                        (dst)[_i] = _e;                                       \
                }                                                             \
        } while (0)

/* ---------------------------------------------------------------- state */

struct ctr {
        struct fake_container c; /* first: the public part */
        struct fake_runtime *rt;
        Runtime__V1__CreateContainerRequest *req; /* owns c.config */
        struct event *exit_timer;
        int32_t planned_exit;
        bool has_stats;
        uint64_t cpu_nsec, working_set;
};

struct sbx {
        struct fake_sandbox s;
        Runtime__V1__RunPodSandboxRequest *req; /* owns s.config */
};

struct failure {
        char *method;
        unsigned countdown; /* calls of method left before the one that fails; FAKE_EVERY_CALL: all */
        bool every;
        int status;
        char *message;
};

struct named {
        char *name;
        uint64_t usec;
        int32_t code;
        char *out;
};

struct condition {
        char *type;
        bool status;
        char *reason, *message;
};

struct cri_call;

struct fake_runtime {
        struct fake_runtime *next;
        int cgroup_driver; /* RuntimeConfig's answer (enum Runtime__V1__CgroupDriver), -1: Unimplemented */
        struct event_base *base;
        char *endpoint, *path;
        struct cri_client *clients;
        unsigned next_id, next_ip;
        int64_t last_stamp;

        struct sbx **sandboxes;
        size_t n_sandboxes, cap_sandboxes;
        struct ctr **containers;
        size_t n_containers, cap_containers;
        struct fake_image **images;
        size_t n_images, cap_images;
        char **unpullable;
        char **unlisted; /* images ImageStatus does not describe (normalized references) */

        struct named *execs, *lifetimes, *delays;
        size_t n_execs, cap_execs, n_lifetimes, cap_lifetimes, n_delays, cap_delays;
        struct condition *conditions;
        size_t n_conditions, cap_conditions;

        struct fake_call *calls;
        size_t n_calls, cap_calls;
        unsigned seq;

        struct failure *failures;
        size_t n_failures, cap_failures;
        bool down;
        bool serve_events;       /* GetContainerEvents is served (containerd 2.x); else Unimplemented (1.x) */
        unsigned streams_opened; /* GetContainerEvents calls answered, open or refused */
};

static struct fake_runtime *runtimes;
static unsigned runtime_count;

/* ---------------------------------------------------------------- the client side (cri.h) */

struct cri_op_entry {
        const char *method;
        struct cri_op_stats stats;
};

struct cri_client {
        struct cri_client *next; /* in rt->clients */
        struct event_base *base;
        struct fake_runtime *rt; /* NULL: nothing listens at the endpoint (or it went away) */
        char *endpoint;
        uint64_t default_timeout_usec;
        struct cri_call *calls;
        struct cri_stream *streams; /* GetContainerEvents */
        bool freeing;
        struct cri_op_entry ops[32];
        size_t n_ops;
};

struct method;

struct cri_call {
        struct cri_call *prev, *next;             /* in client->calls */
        struct cri_call *owner_prev, *owner_next; /* in owner->head */
        struct cri_calls *owner;
        struct cri_client *client;
        const struct method *m;
        char *full_method;
        uint8_t *req;
        size_t req_len;
        const ProtobufCMessageDescriptor *resp_desc;
        cri_callback_t cb;
        void *userdata;
        struct event *ev;
        unsigned seq;
        bool fail; /* injected failure */
        int fail_status;
        char *fail_message;
        bool deadline; /* the delay outlasts the deadline */
        int op;
        uint64_t start_usec;
};

/* ---------------------------------------------------------------- helpers */

static int64_t now_nsec(void) {
        return (int64_t) now_realtime_usec() * 1000;
}

/* The time of an event in the runtime: now, but after every event before, as on a real runtime whose every
 * operation takes some nanoseconds (the virtual clock stands still while the loop runs, and the kubelet
 * orders instances by these times). */
static int64_t stamp(struct fake_runtime *rt) {
        int64_t t = now_nsec();
        rt->last_stamp = t > rt->last_stamp ? t : rt->last_stamp + 1;
        return rt->last_stamp;
}

static char *new_id(struct fake_runtime *rt, unsigned kind) {
        /* 64 hex digits like containerd's; the kind and a counter first, so that %.12s tells them apart */
        return xasprintf("%02x%02x%06x%054x", kind, runtime_count & 0xff, ++rt->next_id, 0u);
}

/* docker.io/library/busybox:latest from busybox (containerd's normalization, enough for tests) */
static char *normalize_image(const char *ref) {
        const char *slash = strchr(ref, '/'), *last = strrchr(ref, '/');
        bool domain = slash && (memchr(ref, '.', (size_t) (slash - ref)) || memchr(ref, ':', (size_t) (slash - ref)) ||
                                strneq(ref, "localhost/", 10));
        bool tagged = strchr(last ? last : ref, ':') || strchr(ref, '@');

        if (startswith(ref, "sha256:"))
                return xstrdup(ref);
        return xasprintf("%s%s%s",
                         domain  ? ""
                         : slash ? "docker.io/"
                                 : "docker.io/library/",
                         ref, tagged ? "" : ":latest");
}

static struct fake_image *image_find(const struct fake_runtime *rt, const char *ref) {
        _cleanup_free_ char *n = NULL;

        if (isempty(ref))
                return NULL;
        n = normalize_image(ref);
        for (size_t i = 0; i < rt->n_images; i++) {
                struct fake_image *im = rt->images[i];
                if (streq(im->id, ref))
                        return im;
                for (char **t = im->tags; t && *t; t++)
                        if (streq(*t, n))
                                return im;
        }
        return NULL;
}

static struct sbx *sandbox_find(const struct fake_runtime *rt, const char *id) {
        for (size_t i = 0; id && i < rt->n_sandboxes; i++)
                if (streq(rt->sandboxes[i]->s.id, id))
                        return rt->sandboxes[i];
        return NULL;
}

static struct ctr *container_find(const struct fake_runtime *rt, const char *id) {
        for (size_t i = 0; id && i < rt->n_containers; i++)
                if (streq(rt->containers[i]->c.id, id))
                        return rt->containers[i];
        return NULL;
}

static const char *map_get(size_t n, void *const *entries, const char *key) {
        /* every map entry type has the same layout: base, key, value */
        for (size_t i = 0; i < n; i++) {
                const Runtime__V1__PodSandboxConfig__LabelsEntry *e = entries[i];
                if (streq(e->key, key))
                        return e->value;
        }
        return NULL;
}

static bool labels_match(size_t n_sel, void *const *sel, size_t n, void *const *labels) {
        for (size_t i = 0; i < n_sel; i++) {
                const Runtime__V1__PodSandboxConfig__LabelsEntry *e = sel[i];
                const char *v = map_get(n, labels, e->key);
                if (!v || !streq(v, e->value))
                        return false;
        }
        return true;
}

static const char *state_name(Runtime__V1__ContainerState s) {
        switch (s) {
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED:
                return "CONTAINER_CREATED";
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING:
                return "CONTAINER_RUNNING";
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED:
                return "CONTAINER_EXITED";
        default:
                return "CONTAINER_UNKNOWN";
        }
}

static const struct named *named_find(const struct named *v, size_t n, const char *name) {
        for (size_t i = 0; name && i < n; i++)
                if (streq(v[i].name, name))
                        return &v[i];
        return NULL;
}

static struct named *named_set(struct named **v, size_t *n, size_t *cap, const char *name) {
        for (size_t i = 0; i < *n; i++)
                if (streq((*v)[i].name, name))
                        return &(*v)[i];
        GROW(*v, *n, *cap);
        (*v)[*n] = (struct named) { .name = xstrdup(name) };
        return &(*v)[(*n)++];
}

static void named_free(struct named *v, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(v[i].name);
                free(v[i].out);
        }
        free(v);
}

/* ---------------------------------------------------------------- world changes */

static void events_emit_exit(struct fake_runtime *rt, const struct ctr *c);

static void ctr_set_reason(struct ctr *c, const char *reason, const char *message) {
        free(c->c.reason);
        free(c->c.message);
        c->c.reason = xstrdup(reason);
        c->c.message = xstrdup(message);
}

static void ctr_exit(struct ctr *c, int32_t code, int64_t at) {
        if (c->c.state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED)
                return;
        if (c->exit_timer)
                event_del(c->exit_timer);
        c->c.state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED;
        c->c.exit_code = code;
        c->c.finished_at = at ? at : stamp(c->rt);
        ctr_set_reason(c, code == 0 ? "Completed" : "Error", "");
        log_v(3, "fake runtime: container %s (%.12s) exited with %" PRId32, c->c.name, c->c.id, code);
        events_emit_exit(c->rt, c);
}

static void on_lifetime_end(evutil_socket_t fd, short what, void *userdata) {
        struct ctr *c = userdata;
        if (c->c.state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING)
                ctr_exit(c, c->planned_exit, 0);
}

static void ctr_free(struct ctr *c) {
        if (!c)
                return;
        if (c->exit_timer)
                event_free(c->exit_timer);
        if (c->req)
                protobuf_c_message_free_unpacked(&c->req->base, NULL);
        free(c->c.id);
        free(c->c.sandbox_id);
        free(c->c.name);
        free(c->c.image_ref);
        free(c->c.log_path);
        free(c->c.reason);
        free(c->c.message);
        free(c);
}

static void sbx_free(struct sbx *s) {
        if (!s)
                return;
        if (s->req)
                protobuf_c_message_free_unpacked(&s->req->base, NULL);
        free(s->s.id);
        free(s->s.runtime_handler);
        free(s->s.ip);
        free(s);
}

static void image_free(struct fake_image *im) {
        if (!im)
                return;
        free(im->id);
        strv_free(im->tags);
        free(im->username);
        free(im);
}

static void container_remove_at(struct fake_runtime *rt, size_t i) {
        ctr_free(rt->containers[i]);
        memmove(&rt->containers[i], &rt->containers[i + 1], (rt->n_containers - i - 1) * sizeof(rt->containers[0]));
        rt->n_containers--;
}

static void container_remove(struct fake_runtime *rt, struct ctr *c) {
        for (size_t i = 0; i < rt->n_containers; i++)
                if (rt->containers[i] == c) {
                        container_remove_at(rt, i);
                        return;
                }
}

static void sandbox_remove(struct fake_runtime *rt, struct sbx *s) {
        for (size_t i = 0; i < rt->n_containers;)
                if (streq(rt->containers[i]->c.sandbox_id, s->s.id))
                        container_remove_at(rt, i);
                else
                        i++;
        for (size_t i = 0; i < rt->n_sandboxes; i++)
                if (rt->sandboxes[i] == s) {
                        sbx_free(s);
                        memmove(&rt->sandboxes[i], &rt->sandboxes[i + 1],
                                (rt->n_sandboxes - i - 1) * sizeof(rt->sandboxes[0]));
                        rt->n_sandboxes--;
                        return;
                }
}

static void sandbox_stop(struct fake_runtime *rt, struct sbx *s) {
        for (size_t i = 0; i < rt->n_containers; i++) {
                struct ctr *c = rt->containers[i];
                if (streq(c->c.sandbox_id, s->s.id) && (c->c.state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING ||
                                                        c->c.state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_UNKNOWN))
                        ctr_exit(c, 137, 0);
        }
        s->s.state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY;
}

static struct fake_image *image_add(struct fake_runtime *rt, const char *ref) {
        struct fake_image *im = image_find(rt, ref);
        char hex[65];

        if (im)
                return im;
        im = xcalloc(1, sizeof(*im));
        if (startswith(ref, "sha256:"))
                im->id = xstrdup(ref);
        else {
                _cleanup_free_ char *n = normalize_image(ref);
                if (hash_hex("sha256", n, strlen(n), hex, sizeof(hex)) < 0)
                        abort();
                im->id = xasprintf("sha256:%s", hex);
                if (strv_extend(&im->tags, n) < 0)
                        abort();
        }
        im->size = 1024 * 1024;
        GROW(rt->images, rt->n_images, rt->cap_images);
        rt->images[rt->n_images++] = im;
        return im;
}

/* ---------------------------------------------------------------- handlers */

struct call_ctx {
        struct fake_runtime *rt;
        struct arena *a;
        ProtobufCMessage *req;  /* unpacked; a handler may take it (set to NULL) */
        ProtobufCMessage *resp; /* set on success */
        const char *message;    /* on failure */
};

typedef int (*handler_t)(struct call_ctx *x);

#define REQ(Type) ((Runtime__V1__##Type *) (void *) x->req)
#define NEW(Type, INIT)                                             \
        ({                                                          \
                Runtime__V1__##Type *_m = a_new(x->a, sizeof(*_m)); \
                *_m = (Runtime__V1__##Type) INIT;                   \
                _m;                                                 \
        })

static int h_version(struct call_ctx *x) {
        Runtime__V1__VersionResponse *r = NEW(VersionResponse, RUNTIME__V1__VERSION_RESPONSE__INIT);
        r->version = (char *) "0.1.0";
        r->runtime_name = (char *) "fakeRuntime";
        r->runtime_version = (char *) "0.1.0";
        r->runtime_api_version = (char *) "v1";
        x->resp = &r->base;
        return GRPC_OK;
}

static int h_status(struct call_ctx *x) {
        Runtime__V1__StatusResponse *r = NEW(StatusResponse, RUNTIME__V1__STATUS_RESPONSE__INIT);
        Runtime__V1__RuntimeStatus *st = NEW(RuntimeStatus, RUNTIME__V1__RUNTIME_STATUS__INIT);
        struct fake_runtime *rt = x->rt;

        st->n_conditions = rt->n_conditions;
        st->conditions = a_new(x->a, sizeof(*st->conditions) * (rt->n_conditions + 1));
        for (size_t i = 0; i < rt->n_conditions; i++) {
                Runtime__V1__RuntimeCondition *c = NEW(RuntimeCondition, RUNTIME__V1__RUNTIME_CONDITION__INIT);
                c->type = rt->conditions[i].type;
                c->status = rt->conditions[i].status;
                c->reason = rt->conditions[i].reason;
                c->message = rt->conditions[i].message;
                st->conditions[i] = c;
        }
        r->status = st;
        x->resp = &r->base;
        return GRPC_OK;
}

static int h_runtime_config(struct call_ctx *x) {
        Runtime__V1__RuntimeConfigResponse *r = NEW(RuntimeConfigResponse, RUNTIME__V1__RUNTIME_CONFIG_RESPONSE__INIT);
        Runtime__V1__LinuxRuntimeConfiguration *l = NEW(LinuxRuntimeConfiguration,
                                                        RUNTIME__V1__LINUX_RUNTIME_CONFIGURATION__INIT);

        if (x->rt->cgroup_driver < 0)
                return GRPC_UNIMPLEMENTED; /* containerd 1.x */
        l->cgroup_driver = x->rt->cgroup_driver;
        r->linux = l;
        x->resp = &r->base;
        return GRPC_OK;
}

static Runtime__V1__PodSandboxMetadata *sandbox_metadata(const struct sbx *s) {
        return s->s.config->metadata;
}

static int h_run_pod_sandbox(struct call_ctx *x) {
        Runtime__V1__RunPodSandboxRequest *req = REQ(RunPodSandboxRequest);
        Runtime__V1__RunPodSandboxResponse *r;
        Runtime__V1__PodSandboxMetadata *md = req->config ? req->config->metadata : NULL;
        struct fake_runtime *rt = x->rt;
        Runtime__V1__NamespaceOption *ns;
        struct sbx *s;

        if (!md || isempty(md->name) || isempty(md->uid) || isempty(md->namespace_)) {
                x->message = "sandbox config must include metadata with name, namespace and uid";
                return GRPC_INVALID_ARGUMENT;
        }
        for (size_t i = 0; i < rt->n_sandboxes; i++) {
                const Runtime__V1__PodSandboxMetadata *o = sandbox_metadata(rt->sandboxes[i]);
                if (streq(o->name, md->name) && streq(o->namespace_, md->namespace_) && streq(o->uid, md->uid) &&
                    o->attempt == md->attempt) {
                        _cleanup_free_ char *name = xasprintf("%s_%s_%s_%" PRIu32, md->name, md->namespace_, md->uid,
                                                              md->attempt);
                        x->message = a_printf(x->a,
                                              "failed to reserve sandbox name \"%s\": name \"%s\" is reserved for "
                                              "\"%s\"",
                                              name, name, rt->sandboxes[i]->s.id);
                        return GRPC_UNKNOWN;
                }
        }
        s = xcalloc(1, sizeof(*s));
        s->req = req;
        x->req = NULL;
        s->s.config = req->config;
        s->s.id = new_id(rt, 0x5b);
        s->s.runtime_handler = xstrdup(req->runtime_handler);
        s->s.state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
        s->s.created_at = stamp(rt);
        ns = req->config->linux && req->config->linux->security_context
                     ? req->config->linux->security_context->namespace_options
                     : NULL;
        if (ns && ns->network == RUNTIME__V1__NAMESPACE_MODE__NODE)
                s->s.ip = xstrdup("");
        else {
                unsigned n = 2 + rt->next_ip++;
                s->s.ip = xasprintf("10.88.%u.%u", n / 250, n % 250);
        }
        GROW(rt->sandboxes, rt->n_sandboxes, rt->cap_sandboxes);
        rt->sandboxes[rt->n_sandboxes++] = s;
        r = NEW(RunPodSandboxResponse, RUNTIME__V1__RUN_POD_SANDBOX_RESPONSE__INIT);
        r->pod_sandbox_id = s->s.id;
        x->resp = &r->base;
        return GRPC_OK;
}

static int h_stop_pod_sandbox(struct call_ctx *x) {
        struct sbx *s = sandbox_find(x->rt, REQ(StopPodSandboxRequest)->pod_sandbox_id);

        if (!s) {
                x->message = a_printf(x->a, "an error occurred when try to find sandbox \"%s\": not found",
                                      REQ(StopPodSandboxRequest)->pod_sandbox_id);
                return GRPC_NOT_FOUND;
        }
        sandbox_stop(x->rt, s);
        x->resp = &NEW(StopPodSandboxResponse, RUNTIME__V1__STOP_POD_SANDBOX_RESPONSE__INIT)->base;
        return GRPC_OK;
}

static int h_remove_pod_sandbox(struct call_ctx *x) {
        struct sbx *s = sandbox_find(x->rt, REQ(RemovePodSandboxRequest)->pod_sandbox_id);

        if (s) {
                sandbox_stop(x->rt, s);
                sandbox_remove(x->rt, s);
        }
        x->resp = &NEW(RemovePodSandboxResponse, RUNTIME__V1__REMOVE_POD_SANDBOX_RESPONSE__INIT)->base;
        return GRPC_OK;
}

static Runtime__V1__PodSandbox *sandbox_item(struct call_ctx *x, const struct sbx *s) {
        Runtime__V1__PodSandbox *p = NEW(PodSandbox, RUNTIME__V1__POD_SANDBOX__INIT);
        const Runtime__V1__PodSandboxConfig *cfg = s->s.config;

        p->id = s->s.id;
        p->metadata = cfg->metadata;
        p->state = s->s.state;
        p->created_at = s->s.created_at;
        p->runtime_handler = s->s.runtime_handler;
        COPY_MAP(x->a, p->n_labels, p->labels, Runtime__V1__PodSandbox__LabelsEntry,
                 RUNTIME__V1__POD_SANDBOX__LABELS_ENTRY__INIT, cfg->n_labels, cfg->labels);
        COPY_MAP(x->a, p->n_annotations, p->annotations, Runtime__V1__PodSandbox__AnnotationsEntry,
                 RUNTIME__V1__POD_SANDBOX__ANNOTATIONS_ENTRY__INIT, cfg->n_annotations, cfg->annotations);
        return p;
}

static int h_pod_sandbox_status(struct call_ctx *x) {
        const char *id = REQ(PodSandboxStatusRequest)->pod_sandbox_id;
        struct sbx *s = sandbox_find(x->rt, id);
        Runtime__V1__PodSandboxStatusResponse *r;
        Runtime__V1__PodSandboxStatus *st;
        const Runtime__V1__PodSandboxConfig *cfg;

        if (!s) {
                x->message = a_printf(x->a, "an error occurred when try to find sandbox: not found");
                return GRPC_NOT_FOUND;
        }
        cfg = s->s.config;
        st = NEW(PodSandboxStatus, RUNTIME__V1__POD_SANDBOX_STATUS__INIT);
        st->id = s->s.id;
        st->metadata = cfg->metadata;
        st->state = s->s.state;
        st->created_at = s->s.created_at;
        st->runtime_handler = s->s.runtime_handler;
        if (!isempty(s->s.ip)) {
                st->network = NEW(PodSandboxNetworkStatus, RUNTIME__V1__POD_SANDBOX_NETWORK_STATUS__INIT);
                st->network->ip = s->s.ip;
        }
        if (cfg->linux && cfg->linux->security_context && cfg->linux->security_context->namespace_options) {
                st->linux = NEW(LinuxPodSandboxStatus, RUNTIME__V1__LINUX_POD_SANDBOX_STATUS__INIT);
                st->linux->namespaces = NEW(Namespace, RUNTIME__V1__NAMESPACE__INIT);
                st->linux->namespaces->options = cfg->linux->security_context->namespace_options;
        }
        COPY_MAP(x->a, st->n_labels, st->labels, Runtime__V1__PodSandboxStatus__LabelsEntry,
                 RUNTIME__V1__POD_SANDBOX_STATUS__LABELS_ENTRY__INIT, cfg->n_labels, cfg->labels);
        COPY_MAP(x->a, st->n_annotations, st->annotations, Runtime__V1__PodSandboxStatus__AnnotationsEntry,
                 RUNTIME__V1__POD_SANDBOX_STATUS__ANNOTATIONS_ENTRY__INIT, cfg->n_annotations, cfg->annotations);
        r = NEW(PodSandboxStatusResponse, RUNTIME__V1__POD_SANDBOX_STATUS_RESPONSE__INIT);
        r->status = st;
        r->timestamp = now_nsec();
        x->resp = &r->base;
        return GRPC_OK;
}

static int h_list_pod_sandbox(struct call_ctx *x) {
        const Runtime__V1__PodSandboxFilter *f = REQ(ListPodSandboxRequest)->filter;
        Runtime__V1__ListPodSandboxResponse *r = NEW(ListPodSandboxResponse,
                                                     RUNTIME__V1__LIST_POD_SANDBOX_RESPONSE__INIT);
        struct fake_runtime *rt = x->rt;

        r->items = a_new(x->a, sizeof(*r->items) * (rt->n_sandboxes + 1));
        for (size_t i = 0; i < rt->n_sandboxes; i++) {
                const struct sbx *s = rt->sandboxes[i];
                if (f && !isempty(f->id) && !streq(f->id, s->s.id))
                        continue;
                if (f && f->state && f->state->state != s->s.state)
                        continue;
                if (f && !labels_match(f->n_label_selector, (void *const *) f->label_selector, s->s.config->n_labels,
                                       (void *const *) s->s.config->labels))
                        continue;
                r->items[r->n_items++] = sandbox_item(x, s);
        }
        x->resp = &r->base;
        return GRPC_OK;
}

static int h_create_container(struct call_ctx *x) {
        Runtime__V1__CreateContainerRequest *req = REQ(CreateContainerRequest);
        Runtime__V1__CreateContainerResponse *r;
        const Runtime__V1__ContainerConfig *cfg = req->config;
        struct fake_runtime *rt = x->rt;
        struct sbx *s = sandbox_find(rt, req->pod_sandbox_id);
        struct fake_image *im;
        struct ctr *c;

        if (!cfg || !cfg->metadata || isempty(cfg->metadata->name)) {
                x->message = "container config must include metadata with a name";
                return GRPC_INVALID_ARGUMENT;
        }
        if (!s) {
                x->message = a_printf(x->a, "failed to get sandbox \"%s\": not found", req->pod_sandbox_id);
                return GRPC_NOT_FOUND;
        }
        if (s->s.state != RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY) {
                x->message = a_printf(x->a, "sandbox container \"%s\" is not running", s->s.id);
                return GRPC_UNKNOWN;
        }
        for (size_t i = 0; i < rt->n_containers; i++) {
                const struct ctr *o = rt->containers[i];
                if (streq(o->c.sandbox_id, s->s.id) && streq(o->c.name, cfg->metadata->name) &&
                    o->c.attempt == cfg->metadata->attempt) {
                        x->message = a_printf(x->a,
                                              "failed to reserve container name \"%s_%s_%s_%s_%" PRIu32 "\": name is "
                                              "reserved for \"%s\"",
                                              cfg->metadata->name, sandbox_metadata(s)->name,
                                              sandbox_metadata(s)->namespace_, sandbox_metadata(s)->uid,
                                              cfg->metadata->attempt, o->c.id);
                        return GRPC_UNKNOWN;
                }
        }
        im = cfg->image ? image_find(rt, cfg->image->image) : NULL;
        if (!im) {
                x->message = a_printf(x->a, "failed to get image \"%s\": not found",
                                      cfg->image ? cfg->image->image : "");
                return GRPC_NOT_FOUND;
        }
        c = xcalloc(1, sizeof(*c));
        c->rt = rt;
        c->req = req;
        x->req = NULL;
        c->c.config = req->config;
        c->c.id = new_id(rt, 0xc0);
        c->c.sandbox_id = xstrdup(s->s.id);
        c->c.name = xstrdup(cfg->metadata->name);
        c->c.attempt = cfg->metadata->attempt;
        c->c.image_ref = xstrdup(im->id);
        c->c.log_path = isempty(cfg->log_path)
                                ? xstrdup("")
                                : xasprintf("%s/%s", strempty(s->s.config->log_directory), cfg->log_path);
        c->c.state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED;
        c->c.created_at = stamp(rt);
        c->c.reason = xstrdup("");
        c->c.message = xstrdup("");
        c->exit_timer = evtimer_new(rt->base, on_lifetime_end, c);
        if (!c->exit_timer)
                abort();
        GROW(rt->containers, rt->n_containers, rt->cap_containers);
        rt->containers[rt->n_containers++] = c;
        r = NEW(CreateContainerResponse, RUNTIME__V1__CREATE_CONTAINER_RESPONSE__INIT);
        r->container_id = c->c.id;
        x->resp = &r->base;
        return GRPC_OK;
}

static int not_found(struct call_ctx *x, const char *id) {
        x->message = a_printf(x->a, "an error occurred when try to find container \"%s\": not found", id);
        return GRPC_NOT_FOUND;
}

/* containerd opens the container's log file when it starts it (and again on ReopenContainerLog): here only where the
 * kubelet made the directory, never anywhere else on the host */
static void ctr_open_log(const struct ctr *c) {
        int fd;

        if (isempty(c->c.log_path))
                return;
        fd = open(c->c.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        if (fd >= 0)
                close(fd);
}

static int h_start_container(struct call_ctx *x) {
        const char *id = REQ(StartContainerRequest)->container_id;
        struct ctr *c = container_find(x->rt, id);
        const struct named *life;

        if (!c)
                return not_found(x, id);
        if (c->c.state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED) {
                x->message = a_printf(x->a,
                                      "failed to set starting state for container \"%s\": container is in %s state", id,
                                      state_name(c->c.state));
                return GRPC_UNKNOWN;
        }
        c->c.state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
        c->c.started_at = stamp(x->rt);
        ctr_open_log(c);
        life = named_find(x->rt->lifetimes, x->rt->n_lifetimes, c->c.name);
        if (life && life->usec != UINT64_MAX) {
                c->planned_exit = life->code;
                if (life->usec == 0)
                        ctr_exit(c, life->code, c->c.started_at);
                else
                        evtimer_add_usec(c->exit_timer, life->usec);
        }
        x->resp = &NEW(StartContainerResponse, RUNTIME__V1__START_CONTAINER_RESPONSE__INIT)->base;
        return GRPC_OK;
}

static int h_stop_container(struct call_ctx *x) {
        const char *id = REQ(StopContainerRequest)->container_id;
        struct ctr *c = container_find(x->rt, id);

        if (!c)
                return not_found(x, id);
        if (c->c.state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING ||
            c->c.state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_UNKNOWN)
                ctr_exit(c, 137, 0);
        x->resp = &NEW(StopContainerResponse, RUNTIME__V1__STOP_CONTAINER_RESPONSE__INIT)->base;
        return GRPC_OK;
}

/* as containerd: the new values go into the container's config (what ContainerStatus reports) */
static int h_update_container_resources(struct call_ctx *x) {
        const Runtime__V1__UpdateContainerResourcesRequest *req = REQ(UpdateContainerResourcesRequest);
        struct ctr *c = container_find(x->rt, req->container_id);
        Runtime__V1__LinuxContainerResources *res;

        if (!c)
                return not_found(x, req->container_id);
        if (c->c.state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING &&
            c->c.state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED) {
                x->message = a_printf(x->a, "container %s is not running", req->container_id);
                return GRPC_UNKNOWN;
        }
        res = c->c.config->linux ? c->c.config->linux->resources : NULL;
        if (res && req->linux && !isempty(req->linux->cpuset_cpus)) {
                /* as containerd: a non-empty cpuset replaces the container's */
                if (res->cpuset_cpus != protobuf_c_empty_string)
                        free(res->cpuset_cpus);
                res->cpuset_cpus = strdup(req->linux->cpuset_cpus);
        }
        if (res && req->linux && isempty(req->linux->cpuset_cpus)) {
                res->cpu_period = req->linux->cpu_period;
                res->cpu_quota = req->linux->cpu_quota;
                res->cpu_shares = req->linux->cpu_shares;
                res->memory_limit_in_bytes = req->linux->memory_limit_in_bytes;
                res->memory_swap_limit_in_bytes = req->linux->memory_swap_limit_in_bytes;
        }
        x->resp = &NEW(UpdateContainerResourcesResponse, RUNTIME__V1__UPDATE_CONTAINER_RESOURCES_RESPONSE__INIT)->base;
        return GRPC_OK;
}

static int h_remove_container(struct call_ctx *x) {
        struct ctr *c = container_find(x->rt, REQ(RemoveContainerRequest)->container_id);

        if (c)
                container_remove(x->rt, c);
        x->resp = &NEW(RemoveContainerResponse, RUNTIME__V1__REMOVE_CONTAINER_RESPONSE__INIT)->base;
        return GRPC_OK;
}

/* containerd: the container must be running; its shim reopens the log file at the same path */
static int h_reopen_container_log(struct call_ctx *x) {
        const char *id = REQ(ReopenContainerLogRequest)->container_id;
        struct ctr *c = container_find(x->rt, id);

        if (!c)
                return not_found(x, id);
        if (c->c.state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING) {
                x->message = a_printf(x->a, "container is not running");
                return GRPC_UNKNOWN;
        }
        ctr_open_log(c);
        x->resp = &NEW(ReopenContainerLogResponse, RUNTIME__V1__REOPEN_CONTAINER_LOG_RESPONSE__INIT)->base;
        return GRPC_OK;
}

static int h_list_containers(struct call_ctx *x) {
        const Runtime__V1__ContainerFilter *f = REQ(ListContainersRequest)->filter;
        Runtime__V1__ListContainersResponse *r = NEW(ListContainersResponse,
                                                     RUNTIME__V1__LIST_CONTAINERS_RESPONSE__INIT);
        struct fake_runtime *rt = x->rt;

        r->containers = a_new(x->a, sizeof(*r->containers) * (rt->n_containers + 1));
        for (size_t i = 0; i < rt->n_containers; i++) {
                const struct ctr *c = rt->containers[i];
                const Runtime__V1__ContainerConfig *cfg = c->c.config;
                Runtime__V1__Container *o;

                if (f && !isempty(f->id) && !streq(f->id, c->c.id))
                        continue;
                if (f && f->state && f->state->state != c->c.state)
                        continue;
                if (f && !isempty(f->pod_sandbox_id) && !streq(f->pod_sandbox_id, c->c.sandbox_id))
                        continue;
                if (f && !labels_match(f->n_label_selector, (void *const *) f->label_selector, cfg->n_labels,
                                       (void *const *) cfg->labels))
                        continue;
                o = NEW(Container, RUNTIME__V1__CONTAINER__INIT);
                o->id = c->c.id;
                o->pod_sandbox_id = c->c.sandbox_id;
                o->metadata = cfg->metadata;
                o->image = cfg->image;
                o->image_ref = c->c.image_ref;
                o->image_id = c->c.image_ref;
                o->state = c->c.state;
                o->created_at = c->c.created_at;
                COPY_MAP(x->a, o->n_labels, o->labels, Runtime__V1__Container__LabelsEntry,
                         RUNTIME__V1__CONTAINER__LABELS_ENTRY__INIT, cfg->n_labels, cfg->labels);
                COPY_MAP(x->a, o->n_annotations, o->annotations, Runtime__V1__Container__AnnotationsEntry,
                         RUNTIME__V1__CONTAINER__ANNOTATIONS_ENTRY__INIT, cfg->n_annotations, cfg->annotations);
                r->containers[r->n_containers++] = o;
        }
        x->resp = &r->base;
        return GRPC_OK;
}

static int h_container_status(struct call_ctx *x) {
        const char *id = REQ(ContainerStatusRequest)->container_id;
        struct ctr *c = container_find(x->rt, id);
        Runtime__V1__ContainerStatusResponse *r;
        Runtime__V1__ContainerStatus *st;
        const Runtime__V1__ContainerConfig *cfg;

        if (!c)
                return not_found(x, id);
        cfg = c->c.config;
        st = NEW(ContainerStatus, RUNTIME__V1__CONTAINER_STATUS__INIT);
        st->id = c->c.id;
        st->metadata = cfg->metadata;
        st->state = c->c.state;
        st->created_at = c->c.created_at;
        st->started_at = c->c.started_at;
        st->finished_at = c->c.finished_at;
        st->exit_code = c->c.exit_code;
        st->image = cfg->image;
        st->image_ref = c->c.image_ref;
        st->image_id = c->c.image_ref;
        st->reason = c->c.reason;
        st->message = c->c.message;
        st->log_path = c->c.log_path;
        st->n_mounts = cfg->n_mounts;
        st->mounts = cfg->mounts;
        if (cfg->linux && cfg->linux->resources) {
                /* the resources it runs with, as containerd reports them */
                st->resources = NEW(ContainerResources, RUNTIME__V1__CONTAINER_RESOURCES__INIT);
                st->resources->linux = cfg->linux->resources;
        }
        COPY_MAP(x->a, st->n_labels, st->labels, Runtime__V1__ContainerStatus__LabelsEntry,
                 RUNTIME__V1__CONTAINER_STATUS__LABELS_ENTRY__INIT, cfg->n_labels, cfg->labels);
        COPY_MAP(x->a, st->n_annotations, st->annotations, Runtime__V1__ContainerStatus__AnnotationsEntry,
                 RUNTIME__V1__CONTAINER_STATUS__ANNOTATIONS_ENTRY__INIT, cfg->n_annotations, cfg->annotations);
        r = NEW(ContainerStatusResponse, RUNTIME__V1__CONTAINER_STATUS_RESPONSE__INIT);
        r->status = st;
        x->resp = &r->base;
        return GRPC_OK;
}

static int h_exec_sync(struct call_ctx *x) {
        const char *id = REQ(ExecSyncRequest)->container_id;
        struct ctr *c = container_find(x->rt, id);
        Runtime__V1__ExecSyncResponse *r;
        const struct named *e;

        if (!c)
                return not_found(x, id);
        if (c->c.state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING) {
                x->message = a_printf(x->a, "container is in %s state", state_name(c->c.state));
                return GRPC_UNKNOWN;
        }
        if (REQ(ExecSyncRequest)->n_cmd > 0) {
                _cleanup_free_ char *key = xasprintf("%s\x1f%s", c->c.name, REQ(ExecSyncRequest)->cmd[0]);
                e = named_find(x->rt->execs, x->rt->n_execs, key);
        } else
                e = NULL;
        if (!e)
                e = named_find(x->rt->execs, x->rt->n_execs, c->c.name);
        r = NEW(ExecSyncResponse, RUNTIME__V1__EXEC_SYNC_RESPONSE__INIT);
        if (e) {
                r->exit_code = e->code;
                r->stdout.data = (uint8_t *) e->out;
                r->stdout.len = strlen(e->out);
        }
        x->resp = &r->base;
        return GRPC_OK;
}

static int h_streaming(struct call_ctx *x, const char *what, const char *id, bool sandbox) {
        if (sandbox ? !sandbox_find(x->rt, id) : !container_find(x->rt, id))
                return not_found(x, id);
        if (x->req->descriptor == &runtime__v1__exec_request__descriptor) {
                Runtime__V1__ExecResponse *r = NEW(ExecResponse, RUNTIME__V1__EXEC_RESPONSE__INIT);
                r->url = a_printf(x->a, "http://127.0.0.1:1/%s/%s", what, id);
                x->resp = &r->base;
        } else if (x->req->descriptor == &runtime__v1__attach_request__descriptor) {
                Runtime__V1__AttachResponse *r = NEW(AttachResponse, RUNTIME__V1__ATTACH_RESPONSE__INIT);
                r->url = a_printf(x->a, "http://127.0.0.1:1/%s/%s", what, id);
                x->resp = &r->base;
        } else {
                Runtime__V1__PortForwardResponse *r = NEW(PortForwardResponse,
                                                          RUNTIME__V1__PORT_FORWARD_RESPONSE__INIT);
                r->url = a_printf(x->a, "http://127.0.0.1:1/%s/%s", what, id);
                x->resp = &r->base;
        }
        return GRPC_OK;
}

static int h_exec(struct call_ctx *x) {
        return h_streaming(x, "exec", REQ(ExecRequest)->container_id, false);
}

static int h_attach(struct call_ctx *x) {
        return h_streaming(x, "attach", REQ(AttachRequest)->container_id, false);
}

static int h_port_forward(struct call_ctx *x) {
        return h_streaming(x, "portforward", REQ(PortForwardRequest)->pod_sandbox_id, true);
}

static Runtime__V1__UInt64Value *u64(struct call_ctx *x, uint64_t v) {
        Runtime__V1__UInt64Value *u = NEW(UInt64Value, RUNTIME__V1__UINT64_VALUE__INIT);
        u->value = v;
        return u;
}

static Runtime__V1__ContainerStats *container_stats(struct call_ctx *x, const struct ctr *c) {
        Runtime__V1__ContainerStats *s = NEW(ContainerStats, RUNTIME__V1__CONTAINER_STATS__INIT);
        const Runtime__V1__ContainerConfig *cfg = c->c.config;
        int64_t now = now_nsec();

        s->attributes = NEW(ContainerAttributes, RUNTIME__V1__CONTAINER_ATTRIBUTES__INIT);
        s->attributes->id = c->c.id;
        s->attributes->metadata = cfg->metadata;
        COPY_MAP(x->a, s->attributes->n_labels, s->attributes->labels, Runtime__V1__ContainerAttributes__LabelsEntry,
                 RUNTIME__V1__CONTAINER_ATTRIBUTES__LABELS_ENTRY__INIT, cfg->n_labels, cfg->labels);
        COPY_MAP(x->a, s->attributes->n_annotations, s->attributes->annotations,
                 Runtime__V1__ContainerAttributes__AnnotationsEntry,
                 RUNTIME__V1__CONTAINER_ATTRIBUTES__ANNOTATIONS_ENTRY__INIT, cfg->n_annotations, cfg->annotations);
        s->cpu = NEW(CpuUsage, RUNTIME__V1__CPU_USAGE__INIT);
        s->cpu->timestamp = now;
        s->cpu->usage_core_nano_seconds = u64(x, c->cpu_nsec);
        s->memory = NEW(MemoryUsage, RUNTIME__V1__MEMORY_USAGE__INIT);
        s->memory->timestamp = now;
        s->memory->working_set_bytes = u64(x, c->working_set);
        return s;
}

static int h_container_stats(struct call_ctx *x) {
        const char *id = REQ(ContainerStatsRequest)->container_id;
        struct ctr *c = container_find(x->rt, id);
        Runtime__V1__ContainerStatsResponse *r;

        if (!c || !c->has_stats) {
                x->message = a_printf(x->a, "no stats for container \"%s\"", id);
                return GRPC_NOT_FOUND;
        }
        r = NEW(ContainerStatsResponse, RUNTIME__V1__CONTAINER_STATS_RESPONSE__INIT);
        r->stats = container_stats(x, c);
        x->resp = &r->base;
        return GRPC_OK;
}

static int h_list_container_stats(struct call_ctx *x) {
        const Runtime__V1__ContainerStatsFilter *f = REQ(ListContainerStatsRequest)->filter;
        Runtime__V1__ListContainerStatsResponse *r = NEW(ListContainerStatsResponse,
                                                         RUNTIME__V1__LIST_CONTAINER_STATS_RESPONSE__INIT);
        struct fake_runtime *rt = x->rt;

        r->stats = a_new(x->a, sizeof(*r->stats) * (rt->n_containers + 1));
        for (size_t i = 0; i < rt->n_containers; i++) {
                const struct ctr *c = rt->containers[i];
                if (!c->has_stats)
                        continue;
                if (f && !isempty(f->id) && !streq(f->id, c->c.id))
                        continue;
                if (f && !isempty(f->pod_sandbox_id) && !streq(f->pod_sandbox_id, c->c.sandbox_id))
                        continue;
                if (f && !labels_match(f->n_label_selector, (void *const *) f->label_selector, c->c.config->n_labels,
                                       (void *const *) c->c.config->labels))
                        continue;
                r->stats[r->n_stats++] = container_stats(x, c);
        }
        x->resp = &r->base;
        return GRPC_OK;
}

static int h_list_pod_sandbox_stats(struct call_ctx *x) {
        const Runtime__V1__PodSandboxStatsFilter *f = REQ(ListPodSandboxStatsRequest)->filter;
        Runtime__V1__ListPodSandboxStatsResponse *r = NEW(ListPodSandboxStatsResponse,
                                                          RUNTIME__V1__LIST_POD_SANDBOX_STATS_RESPONSE__INIT);
        struct fake_runtime *rt = x->rt;

        r->stats = a_new(x->a, sizeof(*r->stats) * (rt->n_sandboxes + 1));
        for (size_t i = 0; i < rt->n_sandboxes; i++) {
                const struct sbx *s = rt->sandboxes[i];
                const Runtime__V1__PodSandboxConfig *cfg = s->s.config;
                Runtime__V1__PodSandboxStats *ps;
                size_t n = 0;

                if (f && !isempty(f->id) && !streq(f->id, s->s.id))
                        continue;
                if (f && !labels_match(f->n_label_selector, (void *const *) f->label_selector, cfg->n_labels,
                                       (void *const *) cfg->labels))
                        continue;
                for (size_t j = 0; j < rt->n_containers; j++)
                        if (rt->containers[j]->has_stats && streq(rt->containers[j]->c.sandbox_id, s->s.id))
                                n++;
                if (n == 0)
                        continue; /* only sandboxes with scripted stats */
                ps = NEW(PodSandboxStats, RUNTIME__V1__POD_SANDBOX_STATS__INIT);
                ps->attributes = NEW(PodSandboxAttributes, RUNTIME__V1__POD_SANDBOX_ATTRIBUTES__INIT);
                ps->attributes->id = s->s.id;
                ps->attributes->metadata = cfg->metadata;
                ps->linux = NEW(LinuxPodSandboxStats, RUNTIME__V1__LINUX_POD_SANDBOX_STATS__INIT);
                ps->linux->containers = a_new(x->a, sizeof(*ps->linux->containers) * n);
                for (size_t j = 0; j < rt->n_containers; j++)
                        if (rt->containers[j]->has_stats && streq(rt->containers[j]->c.sandbox_id, s->s.id))
                                ps->linux->containers[ps->linux->n_containers++] = container_stats(x,
                                                                                                   rt->containers[j]);
                r->stats[r->n_stats++] = ps;
        }
        x->resp = &r->base;
        return GRPC_OK;
}

static Runtime__V1__Image *image_msg(struct call_ctx *x, const struct fake_image *im) {
        Runtime__V1__Image *m = NEW(Image, RUNTIME__V1__IMAGE__INIT);

        m->id = im->id;
        m->n_repo_tags = strv_length(im->tags);
        m->repo_tags = im->tags;
        m->size = im->size;
        if (im->has_uid) {
                m->uid = NEW(Int64Value, RUNTIME__V1__INT64_VALUE__INIT);
                m->uid->value = im->uid;
        }
        m->username = im->username ? im->username : (char *) "";
        return m;
}

static int h_list_images(struct call_ctx *x) {
        const Runtime__V1__ImageFilter *f = REQ(ListImagesRequest)->filter;
        Runtime__V1__ListImagesResponse *r = NEW(ListImagesResponse, RUNTIME__V1__LIST_IMAGES_RESPONSE__INIT);
        bool filtered = f && f->image && !isempty(f->image->image);
        const struct fake_image *only = filtered ? image_find(x->rt, f->image->image) : NULL;
        struct fake_runtime *rt = x->rt;

        r->images = a_new(x->a, sizeof(*r->images) * (rt->n_images + 1));
        for (size_t i = 0; i < rt->n_images; i++)
                if (!filtered || rt->images[i] == only)
                        r->images[r->n_images++] = image_msg(x, rt->images[i]);
        x->resp = &r->base;
        return GRPC_OK;
}

static int h_image_status(struct call_ctx *x) {
        const Runtime__V1__ImageSpec *spec = REQ(ImageStatusRequest)->image;
        Runtime__V1__ImageStatusResponse *r = NEW(ImageStatusResponse, RUNTIME__V1__IMAGE_STATUS_RESPONSE__INIT);
        const struct fake_image *im = spec ? image_find(x->rt, spec->image) : NULL;

        for (size_t i = 0; im && im->tags && im->tags[i]; i++)
                if (strv_contains(x->rt->unlisted, im->tags[i]))
                        im = NULL;
        if (im)
                r->image = image_msg(x, im); /* an image not present is no error: no image in the reply */
        x->resp = &r->base;
        return GRPC_OK;
}

static int h_pull_image(struct call_ctx *x) {
        const Runtime__V1__ImageSpec *spec = REQ(PullImageRequest)->image;
        Runtime__V1__PullImageResponse *r;
        _cleanup_free_ char *n = NULL;
        struct fake_image *im;

        if (!spec || isempty(spec->image)) {
                x->message = "image spec is required";
                return GRPC_INVALID_ARGUMENT;
        }
        n = normalize_image(spec->image);
        if (strv_contains(x->rt->unpullable, n)) {
                x->message = a_printf(x->a,
                                      "failed to pull and unpack image \"%s\": failed to resolve reference \"%s\": "
                                      "%s: not found",
                                      n, n, n);
                return GRPC_NOT_FOUND;
        }
        im = image_add(x->rt, spec->image);
        r = NEW(PullImageResponse, RUNTIME__V1__PULL_IMAGE_RESPONSE__INIT);
        r->image_ref = im->id;
        x->resp = &r->base;
        return GRPC_OK;
}

static int h_remove_image(struct call_ctx *x) {
        const Runtime__V1__ImageSpec *spec = REQ(RemoveImageRequest)->image;
        if (spec)
                (void) fake_runtime_remove_image(x->rt, spec->image);
        x->resp = &NEW(RemoveImageResponse, RUNTIME__V1__REMOVE_IMAGE_RESPONSE__INIT)->base;
        return GRPC_OK;
}

static int h_image_fs_info(struct call_ctx *x) {
        Runtime__V1__ImageFsInfoResponse *r = NEW(ImageFsInfoResponse, RUNTIME__V1__IMAGE_FS_INFO_RESPONSE__INIT);
        Runtime__V1__FilesystemUsage *u = NEW(FilesystemUsage, RUNTIME__V1__FILESYSTEM_USAGE__INIT);
        uint64_t used = 0;

        for (size_t i = 0; i < x->rt->n_images; i++)
                used += x->rt->images[i]->size;
        u->timestamp = now_nsec();
        u->fs_id = NEW(FilesystemIdentifier, RUNTIME__V1__FILESYSTEM_IDENTIFIER__INIT);
        u->fs_id->mountpoint = (char *) "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs";
        u->used_bytes = u64(x, used);
        u->inodes_used = u64(x, x->rt->n_images * 100);
        r->n_image_filesystems = 1;
        r->image_filesystems = a_new(x->a, sizeof(*r->image_filesystems));
        r->image_filesystems[0] = u;
        x->resp = &r->base;
        return GRPC_OK;
}

/* ---------------------------------------------------------------- methods */

enum subject_kind { SUBJ_NONE, SUBJ_CONTAINER_ID, SUBJ_SANDBOX_ID, SUBJ_IMAGE, SUBJ_NEW_CONTAINER, SUBJ_NEW_SANDBOX };

struct method {
        const char *name;
        const char *op; /* the metrics' operation name, as src/cri/cri.c */
        bool image_service;
        const ProtobufCMessageDescriptor *req_desc, *resp_desc;
        handler_t handle;
        enum subject_kind subject;
        bool action;
};

#define M(name, op, img, req, resp, h, subj, act) \
        { name, op, img, &runtime__v1__##req##__descriptor, &runtime__v1__##resp##__descriptor, h, subj, act }

static const struct method methods[] = {
        M("Version", "version", false, version_request, version_response, h_version, SUBJ_NONE, false),
        M("Status", "status", false, status_request, status_response, h_status, SUBJ_NONE, false),
        M("RuntimeConfig", "runtime_config", false, runtime_config_request, runtime_config_response, h_runtime_config,
          SUBJ_NONE, false),
        M("RunPodSandbox", "run_podsandbox", false, run_pod_sandbox_request, run_pod_sandbox_response,
          h_run_pod_sandbox, SUBJ_NEW_SANDBOX, true),
        M("StopPodSandbox", "stop_podsandbox", false, stop_pod_sandbox_request, stop_pod_sandbox_response,
          h_stop_pod_sandbox, SUBJ_SANDBOX_ID, true),
        M("RemovePodSandbox", "remove_podsandbox", false, remove_pod_sandbox_request, remove_pod_sandbox_response,
          h_remove_pod_sandbox, SUBJ_SANDBOX_ID, true),
        M("PodSandboxStatus", "podsandbox_status", false, pod_sandbox_status_request, pod_sandbox_status_response,
          h_pod_sandbox_status, SUBJ_SANDBOX_ID, false),
        M("ListPodSandbox", "list_podsandbox", false, list_pod_sandbox_request, list_pod_sandbox_response,
          h_list_pod_sandbox, SUBJ_NONE, false),
        M("CreateContainer", "create_container", false, create_container_request, create_container_response,
          h_create_container, SUBJ_NEW_CONTAINER, true),
        M("StartContainer", "start_container", false, start_container_request, start_container_response,
          h_start_container, SUBJ_CONTAINER_ID, true),
        M("StopContainer", "stop_container", false, stop_container_request, stop_container_response, h_stop_container,
          SUBJ_CONTAINER_ID, true),
        M("UpdateContainerResources", "update_container", false, update_container_resources_request,
          update_container_resources_response, h_update_container_resources, SUBJ_CONTAINER_ID, true),
        M("RemoveContainer", "remove_container", false, remove_container_request, remove_container_response,
          h_remove_container, SUBJ_CONTAINER_ID, true),
        M("ListContainers", "list_containers", false, list_containers_request, list_containers_response,
          h_list_containers, SUBJ_NONE, false),
        M("ContainerStatus", "container_status", false, container_status_request, container_status_response,
          h_container_status, SUBJ_CONTAINER_ID, false),
        M("ReopenContainerLog", "reopen_container_log", false, reopen_container_log_request,
          reopen_container_log_response, h_reopen_container_log, SUBJ_CONTAINER_ID, false),
        M("ExecSync", "exec_sync", false, exec_sync_request, exec_sync_response, h_exec_sync, SUBJ_CONTAINER_ID, false),
        M("Exec", "exec", false, exec_request, exec_response, h_exec, SUBJ_CONTAINER_ID, false),
        M("Attach", "attach", false, attach_request, attach_response, h_attach, SUBJ_CONTAINER_ID, false),
        M("PortForward", "port_forward", false, port_forward_request, port_forward_response, h_port_forward,
          SUBJ_SANDBOX_ID, false),
        M("ContainerStats", "container_stats", false, container_stats_request, container_stats_response,
          h_container_stats, SUBJ_CONTAINER_ID, false),
        M("ListContainerStats", "list_container_stats", false, list_container_stats_request,
          list_container_stats_response, h_list_container_stats, SUBJ_NONE, false),
        M("ListPodSandboxStats", "list_podsandbox_stats", false, list_pod_sandbox_stats_request,
          list_pod_sandbox_stats_response, h_list_pod_sandbox_stats, SUBJ_NONE, false),
        M("ListImages", "list_images", true, list_images_request, list_images_response, h_list_images, SUBJ_NONE,
          false),
        M("ImageStatus", "image_status", true, image_status_request, image_status_response, h_image_status, SUBJ_IMAGE,
          false),
        M("PullImage", "pull_image", true, pull_image_request, pull_image_response, h_pull_image, SUBJ_IMAGE, true),
        M("RemoveImage", "remove_image", true, remove_image_request, remove_image_response, h_remove_image, SUBJ_IMAGE,
          true),
        M("ImageFsInfo", "image_fs_info", true, image_fs_info_request, image_fs_info_response, h_image_fs_info,
          SUBJ_NONE, false),
};

_Static_assert(ELEMENTSOF(methods) <= 32, "struct cri_client.ops is too small");

static const struct method *method_find(const char *full) {
        const char *slash = full ? strrchr(full, '/') : NULL;

        if (!slash)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(methods); i++) {
                const char *svc = methods[i].image_service ? "/runtime.v1.ImageService/"
                                                           : "/runtime.v1.RuntimeService/";
                if (streq(slash + 1, methods[i].name) && strneq(full, svc, strlen(svc)) &&
                    (size_t) (slash - full) + 1 == strlen(svc))
                        return &methods[i];
        }
        return NULL;
}

static const struct method *method_by_name(const char *name) {
        for (size_t i = 0; name && i < ELEMENTSOF(methods); i++)
                if (streq(methods[i].name, name))
                        return &methods[i];
        return NULL;
}

/* What a call is about, for the record: resolved when it is issued. */
static char *call_subject(const struct fake_runtime *rt, const struct method *m, const ProtobufCMessage *req) {
        const char *id = NULL;

        switch (m->subject) {
        case SUBJ_NEW_SANDBOX: {
                const Runtime__V1__RunPodSandboxRequest *r = (const void *) req;
                return xstrdup(r->config && r->config->metadata ? r->config->metadata->name : "");
        }
        case SUBJ_NEW_CONTAINER: {
                const Runtime__V1__CreateContainerRequest *r = (const void *) req;
                return xstrdup(r->config && r->config->metadata ? r->config->metadata->name : "");
        }
        case SUBJ_IMAGE: {
                const Runtime__V1__ImageSpec *spec;
                if (m->req_desc == &runtime__v1__pull_image_request__descriptor)
                        spec = ((const Runtime__V1__PullImageRequest *) (const void *) req)->image;
                else if (m->req_desc == &runtime__v1__image_status_request__descriptor)
                        spec = ((const Runtime__V1__ImageStatusRequest *) (const void *) req)->image;
                else
                        spec = ((const Runtime__V1__RemoveImageRequest *) (const void *) req)->image;
                return xstrdup(spec ? spec->image : "");
        }
        case SUBJ_SANDBOX_ID: {
                const struct sbx *s;
                /* every request of this kind has the sandbox id first */
                id = ((const Runtime__V1__StopPodSandboxRequest *) (const void *) req)->pod_sandbox_id;
                s = sandbox_find(rt, id);
                return xstrdup(s ? s->s.config->metadata->name : strempty(id));
        }
        case SUBJ_CONTAINER_ID: {
                const struct ctr *c;
                id = ((const Runtime__V1__StartContainerRequest *) (const void *) req)->container_id;
                c = container_find(rt, id);
                return xstrdup(c ? c->c.name : strempty(id));
        }
        default:
                return xstrdup("");
        }
}

/* ---------------------------------------------------------------- delivery */

static void pending_unlink(struct cri_call *p) {
        DLIST_REMOVE(p->client->calls, p);
}

static void pending_free(struct cri_call *p) {
        if (!p)
                return;
        if (p->ev)
                event_free(p->ev);
        free(p->full_method);
        free(p->req);
        free(p->fail_message);
        free(p);
}

static void record_status(struct fake_runtime *rt, const struct cri_call *p, int status) {
        /* the record is found by its sequence number: the log may have been cleared meanwhile */
        if (!rt)
                return;
        for (size_t i = rt->n_calls; i > 0; i--)
                if (rt->calls[i - 1].seq == p->seq) {
                        rt->calls[i - 1].status = status;
                        return;
                }
}

static void stats_record(struct cri_client *c, int op, bool error, uint64_t start) {
        double s = (double) (now_usec() - start) / 1e6;
        if (op < 0 || (size_t) op >= c->n_ops)
                return;
        c->ops[op].stats.count++;
        if (error)
                c->ops[op].stats.errors++;
        c->ops[op].stats.seconds_sum += s;
        histogram_observe(&c->ops[op].stats.duration, s);
}

/* Handle the call in the runtime (unless it fails before), then run the callback. */
static void deliver(struct cri_call *p, int forced_status, const char *forced_message) {
        struct cri_client *c = p->client;
        struct fake_runtime *rt = c->rt;
        struct cri_reply reply = {};
        struct arena a = {};
        struct call_ctx x = { .rt = rt, .a = &a };
        ProtobufCMessage *msg = NULL;
        _cleanup_free_ char *message = NULL, *down = NULL;
        int status;

        pending_unlink(p);
        if (p->owner)
                DLIST_REMOVE_F(owner_prev, owner_next, p->owner->head, p);
        if (forced_status >= 0) {
                status = forced_status;
                message = xstrdup(forced_message);
        } else if (!rt || rt->down) {
                status = GRPC_UNAVAILABLE;
                message = xasprintf("connection error: desc = \"transport: Error while dialing: dial unix %s: connect: "
                                    "connection refused\"",
                                    rt ? rt->path : c->endpoint);
        } else if (p->deadline) {
                status = GRPC_DEADLINE_EXCEEDED;
                message = xstrdup("context deadline exceeded");
        } else if (p->fail) {
                status = p->fail_status;
                message = xstrdup(p->fail_message);
        } else if (!p->m) {
                status = GRPC_UNIMPLEMENTED;
                message = xasprintf("unknown method %s", p->full_method);
        } else {
                x.req = protobuf_c_message_unpack(p->m->req_desc, NULL, p->req_len, p->req);
                if (!x.req) {
                        status = GRPC_INTERNAL;
                        message = xstrdup("grpc: error unmarshalling request");
                } else {
                        status = p->m->handle(&x);
                        message = xstrdup(status == GRPC_OK ? "" : strempty(x.message));
                }
        }
        if (status == GRPC_OK) {
                /* through the wire encoding, as the real client decodes it */
                size_t len = protobuf_c_message_get_packed_size(x.resp);
                _cleanup_free_ uint8_t *buf = xcalloc(1, len);
                protobuf_c_message_pack(x.resp, buf);
                msg = protobuf_c_message_unpack(p->resp_desc, NULL, len, buf);
                if (!msg) {
                        status = GRPC_INTERNAL;
                        free(message);
                        message = xstrdup("cannot decode the response message");
                }
        }
        if (x.req)
                protobuf_c_message_free_unpacked(x.req, NULL);
        arena_done(&a);

        record_status(rt, p, status);
        reply = (struct cri_reply) {
                .r = grpc_status_to_errno(status),
                .grpc_status = status,
                .message = message,
                .msg = msg,
        };
        stats_record(c, p->op, reply.r < 0, p->start_usec);
        if (reply.r < 0)
                log_v(5, "CRI %s failed: %s (grpc status %d)", p->full_method, reply.message, reply.grpc_status);
        p->cb(&reply, p->userdata);
        if (msg)
                protobuf_c_message_free_unpacked(msg, NULL);
        pending_free(p);
}

static void on_due(evutil_socket_t fd, short what, void *userdata) {
        deliver(userdata, -1, NULL);
}

/* as the real client: a cancelled call's callback never runs; one the runtime has not handled yet (still
 * waiting for its delay) never reaches it, so its record says Canceled */
void cri_calls_cancel(struct cri_calls *calls) {
        struct cri_call *p;

        while (calls && (p = calls->head)) {
                DLIST_REMOVE_F(owner_prev, owner_next, calls->head, p);
                pending_unlink(p);
                record_status(p->client->rt, p, GRPC_CANCELLED);
                if (calls->drop)
                        calls->drop(p->userdata);
                pending_free(p);
        }
}

bool cri_calls_pending(const struct cri_calls *calls) {
        return calls && calls->head;
}

/* ---------------------------------------------------------------- cri.h */

int cri_client_new(struct event_base *base, const char *runtime_endpoint, const char *image_endpoint,
                   uint64_t default_timeout_usec, struct cri_client **ret) {
        static const struct { const char *method, *op; } extra[] = { { "/PodSandboxStats", "podsandbox_stats" } };
        struct cri_client *c;

        if (!base || isempty(runtime_endpoint) || !ret)
                return -EINVAL;
        c = xcalloc(1, sizeof(*c));
        c->base = base;
        c->endpoint = xstrdup(runtime_endpoint);
        c->default_timeout_usec = default_timeout_usec ? default_timeout_usec : 120 * USEC_PER_SEC;
        for (struct fake_runtime *rt = runtimes; rt; rt = rt->next)
                if (streq(rt->endpoint, runtime_endpoint)) {
                        c->rt = rt;
                        c->next = rt->clients;
                        rt->clients = c;
                        break;
                }
        /* an image endpoint elsewhere is not modelled: images are the runtime's */
        (void) image_endpoint;
        for (size_t i = 0; i < ELEMENTSOF(methods) + ELEMENTSOF(extra); i++) {
                c->ops[i].method = i < ELEMENTSOF(methods) ? methods[i].name : extra[i - ELEMENTSOF(methods)].method;
                c->ops[i].stats.operation = i < ELEMENTSOF(methods) ? methods[i].op : extra[i - ELEMENTSOF(methods)].op;
                histogram_init_exponential(&c->ops[i].stats.duration, 0.005, 2.5, 14);
                c->n_ops++;
        }
        *ret = c;
        return 0;
}

static void stream_end_now(struct cri_stream *s, int status, const char *message);
static void streams_end_later(struct cri_client *c, int status, const char *message);

static void client_detach(struct cri_client *c) {
        if (!c->rt)
                return;
        streams_end_later(c, GRPC_UNAVAILABLE, "error reading from server: EOF");
        for (struct cri_client **pc = &c->rt->clients; *pc; pc = &(*pc)->next)
                if (*pc == c) {
                        *pc = c->next;
                        break;
                }
        c->rt = NULL;
        c->next = NULL;
}

struct cri_client *cri_client_free(struct cri_client *c) {
        if (!c)
                return NULL;
        c->freeing = true;
        while (c->streams)
                stream_end_now(c->streams, GRPC_CANCELLED, "client is shutting down");
        /* as the real client: calls in flight end now, cancelled, and the runtime never sees them */
        while (c->calls)
                deliver(c->calls, GRPC_CANCELLED, "client is shutting down");
        client_detach(c);
        free(c->endpoint);
        free(c);
        return NULL;
}

void cri_client_foreach_stats(struct cri_client *c, void (*fn)(const struct cri_op_stats *s, void *ud), void *ud) {
        for (size_t i = 0; c && i < c->n_ops; i++)
                if (c->ops[i].stats.count > 0)
                        fn(&c->ops[i].stats, ud);
}

static bool failure_due(struct fake_runtime *rt, const char *method, int *ret_status, char **ret_message) {
        bool hit = false;

        for (size_t i = 0; i < rt->n_failures;) {
                struct failure *f = &rt->failures[i];
                if (!streq(f->method, method)) {
                        i++;
                        continue;
                }
                if (f->every) {
                        if (!hit) {
                                *ret_status = f->status;
                                *ret_message = xstrdup(f->message);
                                hit = true;
                        }
                        i++;
                        continue;
                }
                if (--f->countdown > 0) {
                        i++;
                        continue;
                }
                if (!hit) {
                        *ret_status = f->status;
                        *ret_message = xstrdup(f->message);
                        hit = true;
                }
                free(f->method);
                free(f->message);
                memmove(f, f + 1, (rt->n_failures - i - 1) * sizeof(*f));
                rt->n_failures--;
        }
        return hit;
}

int cri_call(struct cri_client *c, const char *method, const ProtobufCMessage *req,
             const ProtobufCMessageDescriptor *resp_desc, uint64_t timeout_usec, cri_callback_t cb, void *userdata,
             struct cri_calls *owner) {
        struct fake_runtime *rt;
        struct cri_call *p;
        uint64_t delay = 0, timeout;
        size_t len;

        if (!c || c->freeing)
                return -ESHUTDOWN;
        if (!method || !req || !resp_desc || !cb)
                return -EINVAL;
        rt = c->rt;
        p = xcalloc(1, sizeof(*p));
        p->client = c;
        p->full_method = xstrdup(method);
        p->m = method_find(method);
        /* the caller's types must be the method's: a mismatch would not decode on a real runtime either */
        assert(!p->m || (req->descriptor == p->m->req_desc && resp_desc == p->m->resp_desc));
        len = protobuf_c_message_get_packed_size(req);
        p->req = xcalloc(1, len);
        p->req_len = protobuf_c_message_pack(req, p->req);
        p->resp_desc = resp_desc;
        p->cb = cb;
        p->userdata = userdata;
        p->start_usec = now_usec();
        p->op = -1;
        for (size_t i = 0; p->m && i < c->n_ops; i++)
                if (streq(c->ops[i].method, p->m->name))
                        p->op = (int) i;
        timeout = timeout_usec ? timeout_usec : c->default_timeout_usec;

        if (rt && p->m) {
                struct fake_call rec = {
                        .seq = ++rt->seq,
                        .method = p->m->name,
                        .req = protobuf_c_message_unpack(p->m->req_desc, NULL, p->req_len, p->req),
                        .subject = call_subject(rt, p->m, req),
                        .at_usec = now_usec(),
                        .status = -1,
                };
                const struct named *d = named_find(rt->delays, rt->n_delays, p->m->name);

                if (!rec.req)
                        abort();
                p->seq = rec.seq;
                GROW(rt->calls, rt->n_calls, rt->cap_calls);
                rt->calls[rt->n_calls++] = rec;
                if (!rt->down)
                        p->fail = failure_due(rt, p->m->name, &p->fail_status, &p->fail_message);
                delay = d ? d->usec : 0;
                if (delay >= timeout) {
                        p->deadline = true;
                        delay = timeout;
                }
        }
        p->ev = evtimer_new(c->base, on_due, p);
        if (!p->ev)
                abort();
        DLIST_PREPEND(c->calls, p);
        if (owner) {
                p->owner = owner;
                DLIST_PREPEND_F(owner_prev, owner_next, owner->head, p);
        }
        evtimer_add_usec(p->ev, delay);
        return 0;
}

CRI_METHODS(CRI_DEFINE)

/* ---------------------------------------------------------------- GetContainerEvents (server stream) */

struct queued_event {
        uint8_t *buf;
        size_t len;
};

struct cri_stream {
        struct cri_stream *next; /* in client->streams */
        struct cri_client *client;
        cri_event_cb on_event;
        cri_callback_t on_end;
        void *userdata;
        struct event *ev; /* opens it, delivers what is queued, ends it: always on the loop */
        bool open, ending, delivering, cancelled;
        int end_status;
        char *end_message;
        struct queued_event *queue;
        size_t n_queue, cap_queue;
};

static void stream_unlink(struct cri_stream *s) {
        for (struct cri_stream **ps = &s->client->streams; *ps; ps = &(*ps)->next)
                if (*ps == s) {
                        *ps = s->next;
                        break;
                }
        s->next = NULL;
}

static void stream_free(struct cri_stream *s) {
        if (s->ev)
                event_free(s->ev);
        for (size_t i = 0; i < s->n_queue; i++)
                free(s->queue[i].buf);
        free(s->queue);
        free(s->end_message);
        free(s);
}

static void stream_end_now(struct cri_stream *s, int status, const char *message) {
        _cleanup_free_ char *m = xstrdup(message); /* may be the stream's own */
        const struct cri_reply reply = {
                .r = status == GRPC_OK ? 0 : grpc_status_to_errno(status),
                .grpc_status = status,
                .message = m,
        };
        cri_callback_t cb = s->on_end;
        void *ud = s->userdata;

        stream_unlink(s);
        stream_free(s);
        cb(&reply, ud);
}

static void stream_end_later(struct cri_stream *s, int status, const char *message) {
        if (s->ending)
                return;
        s->ending = true;
        s->end_status = status;
        s->end_message = xstrdup(message);
        evtimer_add_usec(s->ev, 0);
}

static void streams_end_later(struct cri_client *c, int status, const char *message) {
        for (struct cri_stream *s = c->streams; s; s = s->next)
                stream_end_later(s, status, message);
}

static void on_stream_due(evutil_socket_t fd, short what, void *userdata) {
        struct cri_stream *s = userdata;
        struct fake_runtime *rt = s->client->rt;

        if (!s->open && !s->ending) {
                if (rt)
                        rt->streams_opened++;
                if (!rt || rt->down)
                        stream_end_later(
                                s, GRPC_UNAVAILABLE,
                                "connection error: desc = \"transport: Error while dialing: connection refused\"");
                else if (!rt->serve_events) /* containerd 1.6.20's answer */
                        stream_end_later(s, GRPC_UNIMPLEMENTED, "method GetContainerEvents not implemented");
                else
                        s->open = true;
        }
        /* what is queued goes first (as a stream's messages before its end); one message per turn of the loop */
        if (s->n_queue > 0) {
                struct queued_event q = s->queue[0];
                Runtime__V1__ContainerEventResponse *ev = runtime__v1__container_event_response__unpack(NULL, q.len,
                                                                                                        q.buf);
                memmove(s->queue, s->queue + 1, (s->n_queue - 1) * sizeof(*s->queue));
                s->n_queue--;
                free(q.buf);
                if (!ev)
                        abort();
                s->delivering = true;
                s->on_event(ev, s->userdata);
                s->delivering = false;
                runtime__v1__container_event_response__free_unpacked(ev, NULL);
                if (s->cancelled) {
                        stream_unlink(s);
                        stream_free(s);
                        return;
                }
                evtimer_add_usec(s->ev, 0);
                return;
        }
        if (s->ending)
                stream_end_now(s, s->end_status, s->end_message);
}

int cri_get_container_events(struct cri_client *c, cri_event_cb on_event, cri_callback_t on_end, void *userdata,
                             struct cri_stream **ret) {
        struct cri_stream *s;

        if (!c || c->freeing)
                return -ESHUTDOWN;
        assert(on_event && on_end && ret);
        s = xcalloc(1, sizeof(*s));
        *s = (struct cri_stream) { .client = c, .on_event = on_event, .on_end = on_end, .userdata = userdata };
        s->ev = evtimer_new(c->base, on_stream_due, s);
        if (!s->ev)
                abort();
        s->next = c->streams;
        c->streams = s;
        evtimer_add_usec(s->ev, 0);
        *ret = s;
        return 0;
}

void cri_stream_cancel(struct cri_stream *s) {
        if (!s)
                return;
        if (s->delivering) {
                s->cancelled = true;
                return;
        }
        stream_unlink(s);
        stream_free(s);
}

static void events_emit_exit(struct fake_runtime *rt, const struct ctr *c) {
        Runtime__V1__ContainerEventResponse ev = RUNTIME__V1__CONTAINER_EVENT_RESPONSE__INIT;
        Runtime__V1__PodSandboxStatus ps = RUNTIME__V1__POD_SANDBOX_STATUS__INIT;
        Runtime__V1__ContainerStatus cs = RUNTIME__V1__CONTAINER_STATUS__INIT, *list[1] = { &cs };
        const struct sbx *sb;
        bool any = false;

        for (struct cri_client *cl = rt ? rt->clients : NULL; cl && !any; cl = cl->next)
                for (struct cri_stream *s = cl->streams; s && !any; s = s->next)
                        any = s->open && !s->ending;
        if (!any)
                return;
        sb = sandbox_find(rt, c->c.sandbox_id);
        ev.container_id = c->c.id;
        ev.container_event_type = RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_STOPPED_EVENT;
        ev.created_at = c->c.finished_at;
        if (sb) {
                ps.id = sb->s.id;
                ps.metadata = sb->s.config->metadata;
                ps.state = sb->s.state;
                ps.created_at = sb->s.created_at;
                ev.pod_sandbox_status = &ps;
        }
        cs.id = c->c.id;
        cs.metadata = c->c.config ? c->c.config->metadata : NULL;
        cs.state = c->c.state;
        cs.created_at = c->c.created_at;
        cs.started_at = c->c.started_at;
        cs.finished_at = c->c.finished_at;
        cs.exit_code = c->c.exit_code;
        cs.reason = c->c.reason;
        ev.containers_statuses = list;
        ev.n_containers_statuses = 1;
        for (struct cri_client *cl = rt->clients; cl; cl = cl->next)
                for (struct cri_stream *s = cl->streams; s; s = s->next) {
                        struct queued_event q;
                        if (!s->open || s->ending)
                                continue;
                        q.len = runtime__v1__container_event_response__get_packed_size(&ev);
                        q.buf = xcalloc(1, q.len + 1);
                        runtime__v1__container_event_response__pack(&ev, q.buf);
                        GROW(s->queue, s->n_queue, s->cap_queue);
                        s->queue[s->n_queue++] = q;
                        evtimer_add_usec(s->ev, 0);
                }
}

void fake_runtime_set_events(struct fake_runtime *rt, bool serve) {
        rt->serve_events = serve;
}

void fake_runtime_end_streams(struct fake_runtime *rt, int grpc_status, const char *message) {
        for (struct cri_client *cl = rt->clients; cl; cl = cl->next)
                streams_end_later(cl, grpc_status, message);
}

size_t fake_runtime_n_streams(const struct fake_runtime *rt) {
        size_t n = 0;
        for (struct cri_client *cl = rt->clients; cl; cl = cl->next)
                for (struct cri_stream *s = cl->streams; s; s = s->next)
                        n += s->open && !s->ending;
        return n;
}

unsigned fake_runtime_streams_opened(const struct fake_runtime *rt) {
        return rt->streams_opened;
}

/* ---------------------------------------------------------------- the fake runtime */

int fake_runtime_new(struct event_base *base, struct fake_runtime **ret) {
        struct fake_runtime *rt;

        if (!base || !ret)
                return -EINVAL;
        rt = xcalloc(1, sizeof(*rt));
        rt->base = base;
        rt->cgroup_driver = -1;
        runtime_count++;
        rt->path = xasprintf("/run/ckubelet-fake-runtime/%u.sock", runtime_count);
        rt->endpoint = xasprintf("unix://%s", rt->path);
        (void) fake_runtime_set_condition(rt, "RuntimeReady", true, "", "");
        (void) fake_runtime_set_condition(rt, "NetworkReady", true, "", "");
        rt->next = runtimes;
        runtimes = rt;
        *ret = rt;
        return 0;
}

struct fake_runtime *fake_runtime_free(struct fake_runtime *rt) {
        if (!rt)
                return NULL;
        for (struct fake_runtime **p = &runtimes; *p; p = &(*p)->next)
                if (*p == rt) {
                        *p = rt->next;
                        break;
                }
        while (rt->clients)
                client_detach(rt->clients);
        fake_runtime_clear_calls(rt);
        free(rt->calls);
        fake_runtime_clear_failures(rt, NULL);
        free(rt->failures);
        for (size_t i = 0; i < rt->n_containers; i++)
                ctr_free(rt->containers[i]);
        free(rt->containers);
        for (size_t i = 0; i < rt->n_sandboxes; i++)
                sbx_free(rt->sandboxes[i]);
        free(rt->sandboxes);
        for (size_t i = 0; i < rt->n_images; i++)
                image_free(rt->images[i]);
        free(rt->images);
        strv_free(rt->unpullable);
        strv_free(rt->unlisted);
        named_free(rt->execs, rt->n_execs);
        named_free(rt->lifetimes, rt->n_lifetimes);
        named_free(rt->delays, rt->n_delays);
        for (size_t i = 0; i < rt->n_conditions; i++) {
                free(rt->conditions[i].type);
                free(rt->conditions[i].reason);
                free(rt->conditions[i].message);
        }
        free(rt->conditions);
        free(rt->endpoint);
        free(rt->path);
        free(rt);
        return NULL;
}

const char *fake_runtime_endpoint(const struct fake_runtime *rt) {
        return rt->endpoint;
}

size_t fake_runtime_n_calls(const struct fake_runtime *rt) {
        return rt->n_calls;
}

const struct fake_call *fake_runtime_call(const struct fake_runtime *rt, size_t i) {
        return i < rt->n_calls ? &rt->calls[i] : NULL;
}

size_t fake_runtime_count(const struct fake_runtime *rt, const char *method) {
        size_t n = 0;
        for (size_t i = 0; i < rt->n_calls; i++)
                if (!method || streq(rt->calls[i].method, method))
                        n++;
        return n;
}

unsigned fake_runtime_max_in_flight(const struct fake_runtime *rt, const char *method, uint64_t duration_usec) {
        unsigned most = 0;

        assert(method);
        for (size_t i = 0; i < rt->n_calls; i++) {
                unsigned k = 0;
                if (!streq(rt->calls[i].method, method))
                        continue;
                for (size_t j = 0; j < rt->n_calls; j++)
                        if (streq(rt->calls[j].method, method) && rt->calls[j].at_usec <= rt->calls[i].at_usec &&
                            rt->calls[i].at_usec < rt->calls[j].at_usec + duration_usec)
                                k++;
                most = MAX(most, k);
        }
        return most;
}

size_t fake_runtime_count_subject(const struct fake_runtime *rt, const char *method, const char *subject) {
        size_t n = 0;
        for (size_t i = 0; i < rt->n_calls; i++)
                if ((!method || streq(rt->calls[i].method, method)) &&
                    (!subject || streq(rt->calls[i].subject, subject)))
                        n++;
        return n;
}

const struct fake_call *fake_runtime_last(const struct fake_runtime *rt, const char *method, const char *subject) {
        for (size_t i = rt->n_calls; i > 0; i--) {
                const struct fake_call *c = &rt->calls[i - 1];
                if ((!method || streq(c->method, method)) && (!subject || streq(c->subject, subject)))
                        return c;
        }
        return NULL;
}

char *fake_runtime_actions(const struct fake_runtime *rt, size_t since) {
        char *s = xstrdup("");

        for (size_t i = since; i < rt->n_calls; i++) {
                const struct method *m = method_by_name(rt->calls[i].method);
                char *n;
                if (!m || !m->action)
                        continue;
                n = xasprintf("%s%s%s:%s", s, *s ? " " : "", m->name, rt->calls[i].subject);
                free(s);
                s = n;
        }
        return s;
}

void fake_runtime_clear_calls(struct fake_runtime *rt) {
        for (size_t i = 0; i < rt->n_calls; i++) {
                protobuf_c_message_free_unpacked(rt->calls[i].req, NULL);
                free(rt->calls[i].subject);
        }
        rt->n_calls = 0;
}

int fake_runtime_fail(struct fake_runtime *rt, const char *method, unsigned nth, int grpc_status, const char *message) {
        if (!method_by_name(method) || grpc_status <= GRPC_OK || grpc_status > GRPC_UNAUTHENTICATED)
                return -EINVAL;
        GROW(rt->failures, rt->n_failures, rt->cap_failures);
        rt->failures[rt->n_failures++] = (struct failure) {
                .method = xstrdup(method),
                .countdown = nth,
                .every = nth == FAKE_EVERY_CALL,
                .status = grpc_status,
                .message = xstrdup(message),
        };
        return 0;
}

void fake_runtime_clear_failures(struct fake_runtime *rt, const char *method) {
        for (size_t i = 0; i < rt->n_failures;) {
                if (method && !streq(rt->failures[i].method, method)) {
                        i++;
                        continue;
                }
                free(rt->failures[i].method);
                free(rt->failures[i].message);
                memmove(&rt->failures[i], &rt->failures[i + 1], (rt->n_failures - i - 1) * sizeof(rt->failures[0]));
                rt->n_failures--;
        }
}

int fake_runtime_set_delay(struct fake_runtime *rt, const char *method, uint64_t usec) {
        if (!method_by_name(method))
                return -EINVAL;
        named_set(&rt->delays, &rt->n_delays, &rt->cap_delays, method)->usec = usec;
        return 0;
}

void fake_runtime_set_cgroup_driver(struct fake_runtime *rt, int driver) {
        rt->cgroup_driver = driver;
}

void fake_runtime_set_down(struct fake_runtime *rt, bool down) {
        rt->down = down;
        if (down)
                fake_runtime_end_streams(rt, GRPC_UNAVAILABLE, "error reading from server: EOF");
}

size_t fake_runtime_n_sandboxes(const struct fake_runtime *rt) {
        return rt->n_sandboxes;
}

const struct fake_sandbox *fake_runtime_sandbox_at(const struct fake_runtime *rt, size_t i) {
        return i < rt->n_sandboxes ? &rt->sandboxes[i]->s : NULL;
}

const struct fake_sandbox *fake_runtime_sandbox(const struct fake_runtime *rt, const char *id) {
        struct sbx *s = sandbox_find(rt, id);
        return s ? &s->s : NULL;
}

const struct fake_sandbox *fake_runtime_pod_sandbox(const struct fake_runtime *rt, const char *pod_uid) {
        for (size_t i = rt->n_sandboxes; i > 0; i--)
                if (streq(rt->sandboxes[i - 1]->s.config->metadata->uid, pod_uid))
                        return &rt->sandboxes[i - 1]->s;
        return NULL;
}

size_t fake_runtime_n_containers(const struct fake_runtime *rt) {
        return rt->n_containers;
}

const struct fake_container *fake_runtime_container_at(const struct fake_runtime *rt, size_t i) {
        return i < rt->n_containers ? &rt->containers[i]->c : NULL;
}

const struct fake_container *fake_runtime_container(const struct fake_runtime *rt, const char *id) {
        struct ctr *c = container_find(rt, id);
        return c ? &c->c : NULL;
}

const char *fake_container_label(const struct fake_container *c, const char *key) {
        return map_get(c->config->n_labels, (void *const *) c->config->labels, key);
}

const char *fake_container_annotation(const struct fake_container *c, const char *key) {
        return map_get(c->config->n_annotations, (void *const *) c->config->annotations, key);
}

const char *fake_sandbox_label(const struct fake_sandbox *s, const char *key) {
        return map_get(s->config->n_labels, (void *const *) s->config->labels, key);
}

static bool container_of_pod(const struct ctr *c, const char *pod_uid) {
        return streq_ptr(fake_container_label(&c->c, "io.kubernetes.pod.uid"), pod_uid);
}

const struct fake_container *fake_runtime_find(const struct fake_runtime *rt, const char *pod_uid, const char *name) {
        for (size_t i = rt->n_containers; i > 0; i--) {
                const struct ctr *c = rt->containers[i - 1];
                if (container_of_pod(c, pod_uid) && streq(c->c.name, name))
                        return &c->c;
        }
        return NULL;
}

size_t fake_runtime_count_instances(const struct fake_runtime *rt, const char *pod_uid, const char *name, int state) {
        size_t n = 0;
        for (size_t i = 0; i < rt->n_containers; i++) {
                const struct ctr *c = rt->containers[i];
                if (container_of_pod(c, pod_uid) && (!name || streq(c->c.name, name)) &&
                    (state < 0 || (int) c->c.state == state))
                        n++;
        }
        return n;
}

const struct fake_image *fake_runtime_image(const struct fake_runtime *rt, const char *ref) {
        return image_find(rt, ref);
}

int fake_runtime_exit(struct fake_runtime *rt, const char *container_id, int32_t exit_code, int64_t finished_at) {
        struct ctr *c = container_find(rt, container_id);
        if (!c)
                return -ENOENT;
        if (c->c.state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED)
                return -EALREADY;
        if (c->c.started_at == 0)
                c->c.started_at = c->c.created_at;
        ctr_exit(c, exit_code, finished_at);
        return 0;
}

int fake_runtime_set_lifetime(struct fake_runtime *rt, const char *container_name, uint64_t usec, int32_t exit_code) {
        struct named *n = named_set(&rt->lifetimes, &rt->n_lifetimes, &rt->cap_lifetimes, container_name);
        n->usec = usec;
        n->code = exit_code;
        return 0;
}

int fake_runtime_vanish(struct fake_runtime *rt, const char *container_id) {
        struct ctr *c = container_find(rt, container_id);
        if (!c)
                return -ENOENT;
        container_remove(rt, c);
        return 0;
}

int fake_runtime_sandbox_die(struct fake_runtime *rt, const char *sandbox_id) {
        struct sbx *s = sandbox_find(rt, sandbox_id);
        if (!s)
                return -ENOENT;
        sandbox_stop(rt, s);
        return 0;
}

int fake_runtime_sandbox_vanish(struct fake_runtime *rt, const char *sandbox_id) {
        struct sbx *s = sandbox_find(rt, sandbox_id);
        if (!s)
                return -ENOENT;
        sandbox_remove(rt, s);
        return 0;
}

int fake_runtime_add_image(struct fake_runtime *rt, const char *ref, int64_t uid, const char *username) {
        struct fake_image *im = image_add(rt, ref);

        im->has_uid = uid >= 0;
        im->uid = uid >= 0 ? uid : 0;
        free(im->username);
        im->username = username ? xstrdup(username) : NULL;
        return 0;
}

int fake_runtime_remove_image(struct fake_runtime *rt, const char *ref) {
        struct fake_image *im = image_find(rt, ref);

        if (!im)
                return -ENOENT;
        for (size_t i = 0; i < rt->n_images; i++)
                if (rt->images[i] == im) {
                        image_free(im);
                        memmove(&rt->images[i], &rt->images[i + 1], (rt->n_images - i - 1) * sizeof(rt->images[0]));
                        rt->n_images--;
                        break;
                }
        return 0;
}

int fake_runtime_set_pullable(struct fake_runtime *rt, const char *ref, bool pullable) {
        _cleanup_free_ char *n = normalize_image(ref);

        for (size_t i = 0; rt->unpullable && rt->unpullable[i]; i++)
                if (streq(rt->unpullable[i], n)) {
                        if (pullable)
                                strv_remove_at(rt->unpullable, i);
                        return 0;
                }
        return pullable ? 0 : strv_extend(&rt->unpullable, n);
}

int fake_runtime_set_unlisted(struct fake_runtime *rt, const char *ref, bool unlisted) {
        _cleanup_free_ char *n = normalize_image(ref);

        if (!n)
                return -ENOMEM;
        for (size_t i = 0; rt->unlisted && rt->unlisted[i]; i++)
                if (streq(rt->unlisted[i], n)) {
                        if (!unlisted)
                                strv_remove_at(rt->unlisted, i);
                        return 0;
                }
        return unlisted ? strv_extend(&rt->unlisted, n) : 0;
}

int fake_runtime_set_exec(struct fake_runtime *rt, const char *container_name, int32_t exit_code, const char *out) {
        struct named *n = named_set(&rt->execs, &rt->n_execs, &rt->cap_execs, container_name);
        n->code = exit_code;
        free(n->out);
        n->out = xstrdup(out);
        return 0;
}

int fake_runtime_set_exec_for(struct fake_runtime *rt, const char *container_name, const char *command,
                              int32_t exit_code, const char *out) {
        _cleanup_free_ char *key = xasprintf("%s\x1f%s", container_name, command);
        return fake_runtime_set_exec(rt, key, exit_code, out);
}

int fake_runtime_set_condition(struct fake_runtime *rt, const char *type, bool status, const char *reason,
                               const char *message) {
        struct condition *c = NULL;

        for (size_t i = 0; i < rt->n_conditions; i++)
                if (streq(rt->conditions[i].type, type))
                        c = &rt->conditions[i];
        if (!c) {
                GROW(rt->conditions, rt->n_conditions, rt->cap_conditions);
                c = &rt->conditions[rt->n_conditions++];
                *c = (struct condition) { .type = xstrdup(type) };
        }
        free(c->reason);
        free(c->message);
        c->status = status;
        c->reason = xstrdup(reason);
        c->message = xstrdup(message);
        return 0;
}

int fake_runtime_set_stats(struct fake_runtime *rt, const char *container_id, uint64_t cpu_usage_nsec,
                           uint64_t working_set_bytes) {
        struct ctr *c = container_find(rt, container_id);
        if (!c)
                return -ENOENT;
        c->has_stats = true;
        c->cpu_nsec = cpu_usage_nsec;
        c->working_set = working_set_bytes;
        return 0;
}

/* Pack and unpack: an owned copy, as a request arriving from a client. */
static ProtobufCMessage *message_copy(const ProtobufCMessage *m) {
        size_t len = protobuf_c_message_get_packed_size(m);
        _cleanup_free_ uint8_t *buf = xcalloc(1, len);
        ProtobufCMessage *c;

        protobuf_c_message_pack(m, buf);
        c = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
        if (!c)
                abort();
        return c;
}

/* Run a request through a handler directly (no client, no record). */
static int handle_direct(struct fake_runtime *rt, handler_t h, const ProtobufCMessage *req, char **ret_id) {
        struct arena a = {};
        struct call_ctx x = { .rt = rt, .a = &a, .req = message_copy(req) };
        int status = h(&x);

        if (status == GRPC_OK && ret_id) {
                if (x.resp->descriptor == &runtime__v1__run_pod_sandbox_response__descriptor)
                        *ret_id = xstrdup(((Runtime__V1__RunPodSandboxResponse *) (void *) x.resp)->pod_sandbox_id);
                else
                        *ret_id = xstrdup(((Runtime__V1__CreateContainerResponse *) (void *) x.resp)->container_id);
        }
        if (status != GRPC_OK)
                log_error("fake runtime: %s", strempty(x.message));
        if (x.req)
                protobuf_c_message_free_unpacked(x.req, NULL);
        arena_done(&a);
        return status == GRPC_OK ? 0 : grpc_status_to_errno(status);
}

int fake_runtime_add_sandbox(struct fake_runtime *rt, const char *pod_uid, const char *pod_name, uint32_t attempt,
                             char **ret_id) {
        Runtime__V1__RunPodSandboxRequest req = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;
        Runtime__V1__PodSandboxConfig cfg = RUNTIME__V1__POD_SANDBOX_CONFIG__INIT;
        Runtime__V1__PodSandboxMetadata md = RUNTIME__V1__POD_SANDBOX_METADATA__INIT;
        Runtime__V1__PodSandboxConfig__LabelsEntry l[3], *lp[3];
        static const char *const keys[] = { "io.kubernetes.pod.uid", "io.kubernetes.pod.name",
                                            "io.kubernetes.pod.namespace" };
        const char *values[] = { pod_uid, pod_name, "default" };

        for (size_t i = 0; i < 3; i++) {
                l[i] = (Runtime__V1__PodSandboxConfig__LabelsEntry) RUNTIME__V1__POD_SANDBOX_CONFIG__LABELS_ENTRY__INIT;
                l[i].key = (char *) keys[i];
                l[i].value = (char *) values[i];
                lp[i] = &l[i];
        }
        md.name = (char *) pod_name;
        md.uid = (char *) pod_uid;
        md.namespace_ = (char *) "default";
        md.attempt = attempt;
        cfg.metadata = &md;
        cfg.n_labels = 3;
        cfg.labels = lp;
        cfg.log_directory = (char *) "/var/log/pods/fake";
        req.config = &cfg;
        return handle_direct(rt, h_run_pod_sandbox, &req.base, ret_id);
}

int fake_runtime_add_container(struct fake_runtime *rt, const char *sandbox_id, const char *name, uint32_t attempt,
                               bool start, char **ret_id) {
        Runtime__V1__CreateContainerRequest req = RUNTIME__V1__CREATE_CONTAINER_REQUEST__INIT;
        Runtime__V1__ContainerConfig cfg = RUNTIME__V1__CONTAINER_CONFIG__INIT;
        Runtime__V1__ContainerMetadata md = RUNTIME__V1__CONTAINER_METADATA__INIT;
        Runtime__V1__ImageSpec image = RUNTIME__V1__IMAGE_SPEC__INIT;
        Runtime__V1__ContainerConfig__LabelsEntry l[4], *lp[4];
        const struct sbx *s = sandbox_find(rt, sandbox_id);
        _cleanup_free_ char *log_path = NULL, *id = NULL;
        int r;

        if (!s)
                return -ENOENT;
        for (size_t i = 0; i < 4; i++) {
                l[i] = (Runtime__V1__ContainerConfig__LabelsEntry) RUNTIME__V1__CONTAINER_CONFIG__LABELS_ENTRY__INIT;
                lp[i] = &l[i];
        }
        l[0].key = (char *) "io.kubernetes.pod.uid";
        l[0].value = s->s.config->metadata->uid;
        l[1].key = (char *) "io.kubernetes.pod.name";
        l[1].value = s->s.config->metadata->name;
        l[2].key = (char *) "io.kubernetes.pod.namespace";
        l[2].value = s->s.config->metadata->namespace_;
        l[3].key = (char *) "io.kubernetes.container.name";
        l[3].value = (char *) name;
        md.name = (char *) name;
        md.attempt = attempt;
        (void) image_add(rt, "busybox:1.36");
        image.image = (char *) "busybox:1.36";
        log_path = xasprintf("%s/%" PRIu32 ".log", name, attempt);
        cfg.metadata = &md;
        cfg.image = &image;
        cfg.log_path = log_path;
        cfg.n_labels = 4;
        cfg.labels = lp;
        req.pod_sandbox_id = (char *) sandbox_id;
        req.config = &cfg;
        r = handle_direct(rt, h_create_container, &req.base, &id);
        if (r >= 0 && start) {
                Runtime__V1__StartContainerRequest sreq = RUNTIME__V1__START_CONTAINER_REQUEST__INIT;
                sreq.container_id = id;
                r = handle_direct(rt, h_start_container, &sreq.base, NULL);
        }
        if (r >= 0 && ret_id)
                *ret_id = TAKE_PTR(id);
        return r;
}
