/* SPDX-License-Identifier: Apache-2.0 */
/* ckubelet-crictl: a small crictl-alike on ckubelet's CRI client, used by the end-to-end tests (cri-tools
 * is not packaged in Debian). Output is JSON in the protobuf JSON mapping crictl prints (lowerCamelCase
 * names, enums by name, 64-bit integers as strings). */

#include <event2/event.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <string.h>

#include "basic/duration.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "cri/cri.h"

struct ctx {
        struct event_base *base;
        int exit_code;
        bool done;
        void (*print)(struct ctx *x, const ProtobufCMessage *m);
};

/* ---------------------------------------------------------------- protobuf → JSON */

static json_t *msg_to_json(const ProtobufCMessage *m);

static char *camel(const char *name) {
        char *s = strdup(name), *o = s;
        bool up = false;
        if (!s)
                return NULL;
        for (const char *p = name; *p; p++) {
                if (*p == '_') {
                        up = true;
                        continue;
                }
                *o++ = up ? (char) (*p >= 'a' && *p <= 'z' ? *p - 32 : *p) : *p;
                up = false;
        }
        *o = '\0';
        return s;
}

static json_t *value_to_json(const ProtobufCFieldDescriptor *f, const void *v) {
        char buf[32];
        switch (f->type) {
        case PROTOBUF_C_TYPE_INT32:
        case PROTOBUF_C_TYPE_SINT32:
        case PROTOBUF_C_TYPE_SFIXED32:
                return json_integer(*(const int32_t *) v);
        case PROTOBUF_C_TYPE_UINT32:
        case PROTOBUF_C_TYPE_FIXED32:
                return json_integer(*(const uint32_t *) v);
        case PROTOBUF_C_TYPE_INT64:
        case PROTOBUF_C_TYPE_SINT64:
        case PROTOBUF_C_TYPE_SFIXED64:
                snprintf(buf, sizeof(buf), "%" PRId64, *(const int64_t *) v);
                return json_string(buf);
        case PROTOBUF_C_TYPE_UINT64:
        case PROTOBUF_C_TYPE_FIXED64:
                snprintf(buf, sizeof(buf), "%" PRIu64, *(const uint64_t *) v);
                return json_string(buf);
        case PROTOBUF_C_TYPE_FLOAT:
                return json_real(*(const float *) v);
        case PROTOBUF_C_TYPE_DOUBLE:
                return json_real(*(const double *) v);
        case PROTOBUF_C_TYPE_BOOL:
                return json_boolean(*(const protobuf_c_boolean *) v);
        case PROTOBUF_C_TYPE_ENUM: {
                const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *) v);
                return ev ? json_string(ev->name) : json_integer(*(const int *) v);
        }
        case PROTOBUF_C_TYPE_STRING:
                return json_string(*(char *const *) v ? *(char *const *) v : "");
        case PROTOBUF_C_TYPE_BYTES: {
                const ProtobufCBinaryData *b = v;
                return json_stringn((const char *) b->data, b->len);
        }
        case PROTOBUF_C_TYPE_MESSAGE:
                return *(ProtobufCMessage *const *) v ? msg_to_json(*(ProtobufCMessage *const *) v) : json_null();
        }
        return json_null();
}

static size_t type_size(const ProtobufCFieldDescriptor *f) {
        switch (f->type) {
        case PROTOBUF_C_TYPE_INT32:
        case PROTOBUF_C_TYPE_SINT32:
        case PROTOBUF_C_TYPE_SFIXED32:
        case PROTOBUF_C_TYPE_UINT32:
        case PROTOBUF_C_TYPE_FIXED32:
        case PROTOBUF_C_TYPE_FLOAT:
        case PROTOBUF_C_TYPE_ENUM:
                return 4;
        case PROTOBUF_C_TYPE_BOOL:
                return sizeof(protobuf_c_boolean);
        case PROTOBUF_C_TYPE_BYTES:
                return sizeof(ProtobufCBinaryData);
        case PROTOBUF_C_TYPE_STRING:
        case PROTOBUF_C_TYPE_MESSAGE:
                return sizeof(void *);
        default:
                return 8;
        }
}

static bool is_map_entry(const ProtobufCFieldDescriptor *f) {
        const ProtobufCMessageDescriptor *d = f->descriptor;
        return f->type == PROTOBUF_C_TYPE_MESSAGE && d && d->n_fields == 2 && endswith(d->name, "Entry") &&
               streq(d->fields[0].name, "key") && streq(d->fields[1].name, "value");
}

static json_t *msg_to_json(const ProtobufCMessage *m) {
        json_t *o = json_object();
        for (unsigned i = 0; i < m->descriptor->n_fields; i++) {
                const ProtobufCFieldDescriptor *f = &m->descriptor->fields[i];
                const char *base = (const char *) m;
                _cleanup_free_ char *name = camel(f->name);
                json_t *v;

                if (f->label == PROTOBUF_C_LABEL_REPEATED) {
                        size_t n = *(const size_t *) (base + f->quantifier_offset);
                        const char *arr = *(char *const *) (base + f->offset);
                        if (is_map_entry(f)) {
                                v = json_object();
                                for (size_t j = 0; j < n; j++) {
                                        const ProtobufCMessage *e = ((ProtobufCMessage *const *) arr)[j];
                                        const char *eb = (const char *) e;
                                        const char *k = *(char *const *) (eb + e->descriptor->fields[0].offset);
                                        json_object_set_new(v, strempty(k),
                                                            value_to_json(&e->descriptor->fields[1],
                                                                          eb + e->descriptor->fields[1].offset));
                                }
                        } else {
                                v = json_array();
                                for (size_t j = 0; j < n; j++)
                                        json_array_append_new(v, value_to_json(f, arr + j * type_size(f)));
                        }
                } else
                        v = value_to_json(f, base + f->offset);
                json_object_set_new(o, name ? name : f->name, v);
        }
        return o;
}

static void print_json(struct ctx *x, const ProtobufCMessage *m) {
        json_t *j = msg_to_json(m);
        json_dumpf(j, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(j);
}

/* ---------------------------------------------------------------- calls */

static void on_reply(const struct cri_reply *reply, void *userdata) {
        struct ctx *x = userdata;
        if (reply->r < 0) {
                fprintf(stderr, "ckubelet-crictl: rpc error: code = %d desc = %s\n", reply->grpc_status,
                        reply->message);
                x->exit_code = 1;
        } else if (x->print)
                x->print(x, reply->msg);
        x->done = true;
        event_base_loopbreak(x->base);
}

static void print_id(struct ctx *x, const ProtobufCMessage *m) {
        /* RunPodSandboxResponse / CreateContainerResponse: one string field */
        const ProtobufCFieldDescriptor *f = &m->descriptor->fields[0];
        printf("%s\n", *(char *const *) ((const char *) m + f->offset));
}

static void print_exec(struct ctx *x, const ProtobufCMessage *m) {
        const Runtime__V1__ExecSyncResponse *r = (const void *) m;
        fwrite(r->stdout.data, 1, r->stdout.len, stdout);
        fwrite(r->stderr.data, 1, r->stderr.len, stderr);
        fflush(stdout);
        x->exit_code = r->exit_code;
}

static int usage(void) {
        fprintf(stderr,
                "usage: ckubelet-crictl [--runtime-endpoint EP] [--timeout DUR] CMD ...\n"
                "  version | info | pods | ps | images | inspect ID | inspectp ID | inspecti IMAGE | pull IMAGE\n"
                "  exec ID -- CMD... | stop ID [--timeout S] | rm ID | stopp ID | rmp ID | start ID\n"
                "  runp --name N --namespace NS --uid U\n"
                "  create --pod ID --name N --image IMG [--pod-name N --namespace NS --uid U] -- CMD...\n");
        return 2;
}

#define KV(Type, INIT, k, v)                     \
        ({                                       \
                Type *_e = malloc(sizeof(Type)); \
                *_e = (Type) INIT;               \
                _e->key = (char *) (k);          \
                _e->value = (char *) (v);        \
                _e;                              \
        })

int main(int argc, char **argv) {
        const char *endpoint = getenv("CONTAINER_RUNTIME_ENDPOINT");
        int64_t timeout = 30 * USEC_PER_SEC, stop_timeout = 10;
        const char *name = NULL, *ns = "default", *uid = NULL, *pod = NULL, *image = NULL, *pod_name = NULL;
        struct ctx x = { .print = print_json };
        struct cri_client *c = NULL;
        const char *cmd;
        int i = 1, r;

        if (!endpoint)
                endpoint = "unix:///run/containerd/containerd.sock";
        for (; i < argc && startswith(argv[i], "--"); i++) {
                if (streq(argv[i], "--runtime-endpoint") && i + 1 < argc)
                        endpoint = argv[++i];
                else if (streq(argv[i], "--timeout") && i + 1 < argc) {
                        int64_t nsec;
                        if (go_duration_parse(argv[++i], &nsec, NULL) < 0 || nsec < 0)
                                return usage();
                        timeout = nsec / 1000;
                } else
                        return usage();
        }
        if (i >= argc)
                return usage();
        cmd = argv[i++];
        /* command options */
        char **rest = NULL;
        int n_rest = 0;
        for (; i < argc; i++) {
                if (streq(argv[i], "--")) {
                        rest = argv + i + 1;
                        n_rest = argc - i - 1;
                        break;
                }
                if (startswith(argv[i], "--") && i + 1 < argc) {
                        const char *o = argv[i] + 2, *v = argv[++i];
                        if (streq(o, "name"))
                                name = v;
                        else if (streq(o, "namespace"))
                                ns = v;
                        else if (streq(o, "uid"))
                                uid = v;
                        else if (streq(o, "pod"))
                                pod = v;
                        else if (streq(o, "image"))
                                image = v;
                        else if (streq(o, "pod-name"))
                                pod_name = v;
                        else if (streq(o, "timeout")) {
                                if (safe_atoi64(v, &stop_timeout) < 0)
                                        return usage();
                        } else
                                return usage();
                } else if (!image && !pod)
                        image = pod = argv[i]; /* positional ID / IMAGE */
                else
                        return usage();
        }
        const char *id = pod;

        x.base = event_base_new();
        r = cri_client_new(x.base, endpoint, NULL, (uint64_t) timeout, &c);
        if (r < 0) {
                fprintf(stderr, "ckubelet-crictl: invalid endpoint %s: %s\n", endpoint, strerror(-r));
                return 1;
        }

        if (streq(cmd, "version")) {
                Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
                req.version = (char *) "v1";
                r = cri_version(c, &req, 0, on_reply, &x);
        } else if (streq(cmd, "info")) {
                Runtime__V1__StatusRequest req = RUNTIME__V1__STATUS_REQUEST__INIT;
                req.verbose = true;
                r = cri_status(c, &req, 0, on_reply, &x);
        } else if (streq(cmd, "pods")) {
                Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
                r = cri_list_pod_sandbox(c, &req, 0, on_reply, &x);
        } else if (streq(cmd, "ps")) {
                Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
                r = cri_list_containers(c, &req, 0, on_reply, &x);
        } else if (streq(cmd, "images")) {
                Runtime__V1__ListImagesRequest req = RUNTIME__V1__LIST_IMAGES_REQUEST__INIT;
                r = cri_list_images(c, &req, 0, on_reply, &x);
        } else if (streq(cmd, "inspect") && id) {
                Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
                req.container_id = (char *) id;
                req.verbose = true; /* info: pid, runtime spec */
                r = cri_container_status(c, &req, 0, on_reply, &x);
        } else if (streq(cmd, "inspectp") && id) {
                Runtime__V1__PodSandboxStatusRequest req = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
                req.pod_sandbox_id = (char *) id;
                req.verbose = true; /* info: the stored sandbox config, pid */
                r = cri_pod_sandbox_status(c, &req, 0, on_reply, &x);
        } else if ((streq(cmd, "inspecti") || streq(cmd, "pull")) && image) {
                Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
                spec.image = (char *) image;
                if (streq(cmd, "pull")) {
                        Runtime__V1__PullImageRequest req = RUNTIME__V1__PULL_IMAGE_REQUEST__INIT;
                        req.image = &spec;
                        r = cri_pull_image(c, &req, 0, on_reply, &x);
                } else {
                        Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
                        req.image = &spec;
                        r = cri_image_status(c, &req, 0, on_reply, &x);
                }
        } else if (streq(cmd, "exec") && id && n_rest > 0) {
                Runtime__V1__ExecSyncRequest req = RUNTIME__V1__EXEC_SYNC_REQUEST__INIT;
                req.container_id = (char *) id;
                req.cmd = rest;
                req.n_cmd = (size_t) n_rest;
                req.timeout = timeout / (int64_t) USEC_PER_SEC;
                x.print = print_exec;
                r = cri_exec_sync(c, &req, 0, on_reply, &x);
        } else if (streq(cmd, "stop") && id) {
                Runtime__V1__StopContainerRequest req = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
                req.container_id = (char *) id;
                req.timeout = stop_timeout;
                x.print = NULL;
                r = cri_stop_container(c, &req, 0, on_reply, &x);
        } else if (streq(cmd, "start") && id) {
                Runtime__V1__StartContainerRequest req = RUNTIME__V1__START_CONTAINER_REQUEST__INIT;
                req.container_id = (char *) id;
                x.print = NULL;
                r = cri_start_container(c, &req, 0, on_reply, &x);
        } else if (streq(cmd, "rm") && id) {
                Runtime__V1__RemoveContainerRequest req = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;
                req.container_id = (char *) id;
                x.print = NULL;
                r = cri_remove_container(c, &req, 0, on_reply, &x);
        } else if (streq(cmd, "stopp") && id) {
                Runtime__V1__StopPodSandboxRequest req = RUNTIME__V1__STOP_POD_SANDBOX_REQUEST__INIT;
                req.pod_sandbox_id = (char *) id;
                x.print = NULL;
                r = cri_stop_pod_sandbox(c, &req, 0, on_reply, &x);
        } else if (streq(cmd, "rmp") && id) {
                Runtime__V1__RemovePodSandboxRequest req = RUNTIME__V1__REMOVE_POD_SANDBOX_REQUEST__INIT;
                req.pod_sandbox_id = (char *) id;
                x.print = NULL;
                r = cri_remove_pod_sandbox(c, &req, 0, on_reply, &x);
        } else if ((streq(cmd, "runp") && name && uid) ||
                   (streq(cmd, "create") && pod && name && image && n_rest > 0)) {
                Runtime__V1__PodSandboxConfig sc = RUNTIME__V1__POD_SANDBOX_CONFIG__INIT;
                Runtime__V1__PodSandboxMetadata md = RUNTIME__V1__POD_SANDBOX_METADATA__INIT;
                Runtime__V1__PodSandboxConfig__LabelsEntry *labels[3];
                const char *pname = streq(cmd, "runp") ? name : (pod_name ? pod_name : "unknown");
                const char *puid = uid ? uid : "unknown";
                labels[0] = KV(Runtime__V1__PodSandboxConfig__LabelsEntry,
                               RUNTIME__V1__POD_SANDBOX_CONFIG__LABELS_ENTRY__INIT, "io.kubernetes.pod.name", pname);
                labels[1] = KV(Runtime__V1__PodSandboxConfig__LabelsEntry,
                               RUNTIME__V1__POD_SANDBOX_CONFIG__LABELS_ENTRY__INIT, "io.kubernetes.pod.namespace", ns);
                labels[2] = KV(Runtime__V1__PodSandboxConfig__LabelsEntry,
                               RUNTIME__V1__POD_SANDBOX_CONFIG__LABELS_ENTRY__INIT, "io.kubernetes.pod.uid", puid);
                md.name = (char *) pname;
                md.namespace_ = (char *) ns;
                md.uid = (char *) puid;
                sc.metadata = &md;
                sc.hostname = (char *) pname;
                sc.log_directory = (char *) "/tmp";
                sc.labels = labels;
                sc.n_labels = 3;
                if (streq(cmd, "runp")) {
                        Runtime__V1__RunPodSandboxRequest req = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;
                        req.config = &sc;
                        x.print = print_id;
                        r = cri_run_pod_sandbox(c, &req, 0, on_reply, &x);
                } else {
                        Runtime__V1__CreateContainerRequest req = RUNTIME__V1__CREATE_CONTAINER_REQUEST__INIT;
                        Runtime__V1__ContainerConfig cc = RUNTIME__V1__CONTAINER_CONFIG__INIT;
                        Runtime__V1__ContainerMetadata cm = RUNTIME__V1__CONTAINER_METADATA__INIT;
                        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
                        Runtime__V1__ContainerConfig__LabelsEntry *cl[4];
                        for (int j = 0; j < 3; j++)
                                cl[j] = KV(Runtime__V1__ContainerConfig__LabelsEntry,
                                           RUNTIME__V1__CONTAINER_CONFIG__LABELS_ENTRY__INIT, labels[j]->key,
                                           labels[j]->value);
                        cl[3] = KV(Runtime__V1__ContainerConfig__LabelsEntry,
                                   RUNTIME__V1__CONTAINER_CONFIG__LABELS_ENTRY__INIT, "io.kubernetes.container.name",
                                   name);
                        cm.name = (char *) name;
                        spec.image = (char *) image;
                        cc.metadata = &cm;
                        cc.image = &spec;
                        cc.command = rest;
                        cc.n_command = (size_t) n_rest;
                        cc.labels = cl;
                        cc.n_labels = 4;
                        req.pod_sandbox_id = (char *) pod;
                        req.config = &cc;
                        req.sandbox_config = &sc;
                        x.print = print_id;
                        r = cri_create_container(c, &req, 0, on_reply, &x);
                        for (int j = 0; j < 4; j++)
                                free(cl[j]);
                }
                for (int j = 0; j < 3; j++)
                        free(labels[j]);
        } else {
                cri_client_free(c);
                event_base_free(x.base);
                return usage();
        }
        if (r < 0) {
                fprintf(stderr, "ckubelet-crictl: %s\n", strerror(-r));
                x.exit_code = 1;
        } else
                while (!x.done)
                        event_base_loop(x.base, EVLOOP_ONCE);
        cri_client_free(c);
        event_base_free(x.base);
        return x.exit_code;
}
