/* SPDX-License-Identifier: Apache-2.0 */
/* ckubelet-crictl: a small crictl-alike on ckubelet's CRI client, used by the end-to-end tests (cri-tools
 * is not packaged in Debian). `pods` and `ps` print crictl's table by default (`ps` the running containers,
 * `-a` all of them, `-q` the IDs only); `-o json` and the other commands print JSON in the protobuf JSON mapping
 * crictl prints (lowerCamelCase names, enums by name, 64-bit integers as strings). */

#include <event2/event.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <string.h>
#include <time.h>

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
        bool quiet; /* -q: IDs only */
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

/* ---------------------------------------------------------------- crictl's tables */

/* docker/go-units' HumanDuration, as crictl prints CREATED ("2 minutes ago") */
static void human_duration(int64_t usec, char *buf, size_t size) {
        int64_t sec = usec / 1000000, min = sec / 60, hours = (usec + 1800LL * 1000000) / (3600LL * 1000000);

        if (sec < 1)
                snprintf(buf, size, "Less than a second");
        else if (sec == 1)
                snprintf(buf, size, "1 second");
        else if (sec < 60)
                snprintf(buf, size, "%" PRId64 " seconds", sec);
        else if (min == 1)
                snprintf(buf, size, "About a minute");
        else if (min < 60)
                snprintf(buf, size, "%" PRId64 " minutes", min);
        else if (hours == 1)
                snprintf(buf, size, "About an hour");
        else if (hours < 48)
                snprintf(buf, size, "%" PRId64 " hours", hours);
        else if (hours < 24 * 7 * 2)
                snprintf(buf, size, "%" PRId64 " days", hours / 24);
        else if (hours < 24 * 30 * 2)
                snprintf(buf, size, "%" PRId64 " weeks", hours / 24 / 7);
        else if (hours < 24 * 365 * 2)
                snprintf(buf, size, "%" PRId64 " months", hours / 24 / 30);
        else
                snprintf(buf, size, "%" PRId64 " years", hours / 24 / 365);
}

static void created_ago(int64_t created_ns, char *buf, size_t size) {
        struct timespec now;
        char d[48];

        clock_gettime(CLOCK_REALTIME, &now);
        human_duration(((int64_t) now.tv_sec * 1000000000 + now.tv_nsec - created_ns) / 1000, d, sizeof(d));
        snprintf(buf, size, "%s ago", d);
}

#define TABLE_COLS 8
#define TABLE_CELL 256

struct table {
        size_t n_cols, n_rows;
        char (*cells)[TABLE_COLS][TABLE_CELL]; /* row 0: the header */
};

/* as Go's tabwriter with crictl's settings (minimum width 20, padding 3): every column but the last as wide as
 * its widest cell plus 3, at least 20 */
static void table_print(const struct table *t) {
        size_t width[TABLE_COLS] = {};

        for (size_t r = 0; r < t->n_rows; r++)
                for (size_t c = 0; c < t->n_cols; c++)
                        width[c] = MAX(width[c], MAX(strlen(t->cells[r][c]) + 3, (size_t) 20));
        for (size_t r = 0; r < t->n_rows; r++) {
                for (size_t c = 0; c + 1 < t->n_cols; c++)
                        printf("%-*s", (int) width[c], t->cells[r][c]);
                printf("%s\n", t->cells[r][t->n_cols - 1]);
        }
}

static const char *trunc_id(const char *id, char *buf) {
        snprintf(buf, 14, "%s", strempty(id)); /* crictl shows 13 characters of an ID */
        return buf;
}

static const char *label(Runtime__V1__Container__LabelsEntry **l, size_t n, const char *key) {
        for (size_t i = 0; i < n; i++)
                if (streq_ptr(l[i]->key, key))
                        return l[i]->value;
        return "";
}

static void print_pods_table(struct ctx *x, const ProtobufCMessage *m) {
        const Runtime__V1__ListPodSandboxResponse *r = (const void *) m;
        static const char *const header[] = { "POD ID", "CREATED", "STATE", "NAME", "NAMESPACE", "ATTEMPT", "RUNTIME" };
        struct table t = { .n_cols = ELEMENTSOF(header), .n_rows = r->n_items + 1 };
        char id[14];

        if (x->quiet) {
                for (size_t i = 0; i < r->n_items; i++)
                        printf("%s\n", r->items[i]->id);
                return;
        }
        t.cells = calloc(t.n_rows, sizeof(*t.cells));
        if (!t.cells)
                return;
        for (size_t c = 0; c < t.n_cols; c++)
                snprintf(t.cells[0][c], TABLE_CELL, "%s", header[c]);
        /* newest first, as crictl sorts them */
        for (size_t i = 0; i < r->n_items; i++) {
                const Runtime__V1__PodSandbox *p = r->items[i];
                size_t row = 1;
                for (size_t j = 0; j < r->n_items; j++)
                        row += r->items[j]->created_at > p->created_at ||
                               (r->items[j]->created_at == p->created_at && j < i);
                snprintf(t.cells[row][0], TABLE_CELL, "%s", trunc_id(p->id, id));
                created_ago(p->created_at, t.cells[row][1], TABLE_CELL);
                snprintf(t.cells[row][2], TABLE_CELL, "%s",
                         p->state == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY ? "Ready" : "NotReady");
                snprintf(t.cells[row][3], TABLE_CELL, "%s", p->metadata ? strempty(p->metadata->name) : "");
                snprintf(t.cells[row][4], TABLE_CELL, "%s", p->metadata ? strempty(p->metadata->namespace_) : "");
                snprintf(t.cells[row][5], TABLE_CELL, "%u", p->metadata ? p->metadata->attempt : 0);
                snprintf(t.cells[row][6], TABLE_CELL, "%s",
                         isempty(p->runtime_handler) ? "(default)" : p->runtime_handler);
        }
        table_print(&t);
        free(t.cells);
}

static const char *container_state(Runtime__V1__ContainerState s) {
        switch (s) {
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED:
                return "Created";
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING:
                return "Running";
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED:
                return "Exited";
        default:
                return "Unknown";
        }
}

static void print_containers_table(struct ctx *x, const ProtobufCMessage *m) {
        const Runtime__V1__ListContainersResponse *r = (const void *) m;
        static const char *const header[] = { "CONTAINER", "IMAGE",   "CREATED", "STATE",
                                              "NAME",      "ATTEMPT", "POD ID",  "POD" };
        struct table t = { .n_cols = ELEMENTSOF(header), .n_rows = r->n_containers + 1 };
        char id[14];

        if (x->quiet) {
                for (size_t i = 0; i < r->n_containers; i++)
                        printf("%s\n", r->containers[i]->id);
                return;
        }
        t.cells = calloc(t.n_rows, sizeof(*t.cells));
        if (!t.cells)
                return;
        for (size_t c = 0; c < t.n_cols; c++)
                snprintf(t.cells[0][c], TABLE_CELL, "%s", header[c]);
        for (size_t i = 0; i < r->n_containers; i++) {
                const Runtime__V1__Container *c = r->containers[i];
                const char *image = c->image && !isempty(c->image->image) ? c->image->image : strempty(c->image_ref);
                size_t row = 1;
                for (size_t j = 0; j < r->n_containers; j++)
                        row += r->containers[j]->created_at > c->created_at ||
                               (r->containers[j]->created_at == c->created_at && j < i);
                snprintf(t.cells[row][0], TABLE_CELL, "%s", trunc_id(c->id, id));
                /* an image ID (sha256:...) is shortened as crictl does, a name is shown whole */
                if (startswith(image, "sha256:"))
                        snprintf(t.cells[row][1], TABLE_CELL, "%s", trunc_id(image + strlen("sha256:"), id));
                else
                        snprintf(t.cells[row][1], TABLE_CELL, "%s", image);
                created_ago(c->created_at, t.cells[row][2], TABLE_CELL);
                snprintf(t.cells[row][3], TABLE_CELL, "%s", container_state(c->state));
                snprintf(t.cells[row][4], TABLE_CELL, "%s", c->metadata ? strempty(c->metadata->name) : "");
                snprintf(t.cells[row][5], TABLE_CELL, "%u", c->metadata ? c->metadata->attempt : 0);
                snprintf(t.cells[row][6], TABLE_CELL, "%s", trunc_id(c->pod_sandbox_id, id));
                snprintf(t.cells[row][7], TABLE_CELL, "%s", label(c->labels, c->n_labels, "io.kubernetes.pod.name"));
        }
        table_print(&t);
        free(t.cells);
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
        fprintf(stderr, "usage: ckubelet-crictl [--runtime-endpoint EP] [--timeout DUR] CMD ...\n"
                        "  pods [-o json|table] [-q] | ps [-a] [-o json|table] [-q]\n"
                        "  version | info | images | inspect ID | inspectp ID | inspecti IMAGE | pull IMAGE\n"
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
        const char *output = "table";
        bool all = false;
        for (; i < argc; i++) {
                if ((streq(argv[i], "-o") || streq(argv[i], "--output")) && i + 1 < argc) {
                        output = argv[++i];
                        if (!streq(output, "json") && !streq(output, "table"))
                                return usage();
                        continue;
                }
                if (startswith(argv[i], "--output=") || startswith(argv[i], "-o=")) {
                        output = strchr(argv[i], '=') + 1;
                        if (!streq(output, "json") && !streq(output, "table"))
                                return usage();
                        continue;
                }
                if (streq(argv[i], "-a") || streq(argv[i], "--all")) {
                        all = true;
                        continue;
                }
                if (streq(argv[i], "-q") || streq(argv[i], "--quiet")) {
                        x.quiet = true;
                        continue;
                }
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
                r = cri_version(c, &req, 0, on_reply, &x, NULL);
        } else if (streq(cmd, "info")) {
                Runtime__V1__StatusRequest req = RUNTIME__V1__STATUS_REQUEST__INIT;
                req.verbose = true;
                r = cri_status(c, &req, 0, on_reply, &x, NULL);
        } else if (streq(cmd, "pods")) {
                Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
                if (x.quiet || streq(output, "table"))
                        x.print = print_pods_table;
                r = cri_list_pod_sandbox(c, &req, 0, on_reply, &x, NULL);
        } else if (streq(cmd, "ps")) {
                Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
                Runtime__V1__ContainerFilter filter = RUNTIME__V1__CONTAINER_FILTER__INIT;
                Runtime__V1__ContainerStateValue running = RUNTIME__V1__CONTAINER_STATE_VALUE__INIT;
                /* as crictl: the running containers unless -a */
                if (!all) {
                        running.state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
                        filter.state = &running;
                        req.filter = &filter;
                }
                if (x.quiet || streq(output, "table"))
                        x.print = print_containers_table;
                r = cri_list_containers(c, &req, 0, on_reply, &x, NULL);
        } else if (streq(cmd, "images")) {
                Runtime__V1__ListImagesRequest req = RUNTIME__V1__LIST_IMAGES_REQUEST__INIT;
                r = cri_list_images(c, &req, 0, on_reply, &x, NULL);
        } else if (streq(cmd, "inspect") && id) {
                Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
                req.container_id = (char *) id;
                req.verbose = true; /* info: pid, runtime spec */
                r = cri_container_status(c, &req, 0, on_reply, &x, NULL);
        } else if (streq(cmd, "inspectp") && id) {
                Runtime__V1__PodSandboxStatusRequest req = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
                req.pod_sandbox_id = (char *) id;
                req.verbose = true; /* info: the stored sandbox config, pid */
                r = cri_pod_sandbox_status(c, &req, 0, on_reply, &x, NULL);
        } else if ((streq(cmd, "inspecti") || streq(cmd, "pull")) && image) {
                Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
                spec.image = (char *) image;
                if (streq(cmd, "pull")) {
                        Runtime__V1__PullImageRequest req = RUNTIME__V1__PULL_IMAGE_REQUEST__INIT;
                        req.image = &spec;
                        r = cri_pull_image(c, &req, 0, on_reply, &x, NULL);
                } else {
                        Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
                        req.image = &spec;
                        r = cri_image_status(c, &req, 0, on_reply, &x, NULL);
                }
        } else if (streq(cmd, "exec") && id && n_rest > 0) {
                Runtime__V1__ExecSyncRequest req = RUNTIME__V1__EXEC_SYNC_REQUEST__INIT;
                req.container_id = (char *) id;
                req.cmd = rest;
                req.n_cmd = (size_t) n_rest;
                req.timeout = timeout / (int64_t) USEC_PER_SEC;
                x.print = print_exec;
                r = cri_exec_sync(c, &req, 0, on_reply, &x, NULL);
        } else if (streq(cmd, "stop") && id) {
                Runtime__V1__StopContainerRequest req = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
                req.container_id = (char *) id;
                req.timeout = stop_timeout;
                x.print = NULL;
                r = cri_stop_container(c, &req, 0, on_reply, &x, NULL);
        } else if (streq(cmd, "start") && id) {
                Runtime__V1__StartContainerRequest req = RUNTIME__V1__START_CONTAINER_REQUEST__INIT;
                req.container_id = (char *) id;
                x.print = NULL;
                r = cri_start_container(c, &req, 0, on_reply, &x, NULL);
        } else if (streq(cmd, "rm") && id) {
                Runtime__V1__RemoveContainerRequest req = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;
                req.container_id = (char *) id;
                x.print = NULL;
                r = cri_remove_container(c, &req, 0, on_reply, &x, NULL);
        } else if (streq(cmd, "stopp") && id) {
                Runtime__V1__StopPodSandboxRequest req = RUNTIME__V1__STOP_POD_SANDBOX_REQUEST__INIT;
                req.pod_sandbox_id = (char *) id;
                x.print = NULL;
                r = cri_stop_pod_sandbox(c, &req, 0, on_reply, &x, NULL);
        } else if (streq(cmd, "rmp") && id) {
                Runtime__V1__RemovePodSandboxRequest req = RUNTIME__V1__REMOVE_POD_SANDBOX_REQUEST__INIT;
                req.pod_sandbox_id = (char *) id;
                x.print = NULL;
                r = cri_remove_pod_sandbox(c, &req, 0, on_reply, &x, NULL);
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
                        r = cri_run_pod_sandbox(c, &req, 0, on_reply, &x, NULL);
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
                        r = cri_create_container(c, &req, 0, on_reply, &x, NULL);
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
