/* SPDX-License-Identifier: Apache-2.0 */
/* /statusz and /flagz, as upstream v1.37 serves them for the kubelet (k8s.io/apiserver pkg/server/statusz and
 * flagz, ComponentStatusz and ComponentFlagz beta and on since v1.36): on the authenticated port with the
 * debugging handlers, any method, authorized as nodes/statusz and nodes/configz. Without an Accept header, or
 * when text/plain wins the negotiation, a text page meant for people (a random delimiter after each name, so
 * that nobody parses it); application/json or application/yaml only with the structured kind asked for
 * (";as=Statusz;g=config.k8s.io;v=v1beta1", v1alpha1 too with a deprecation Warning); anything else 406. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "basic/evbuffer.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "features/features.h"
#include "basic/time.h"
#include "server/server-internal.h"

#define ZPAGES_GROUP "config.k8s.io"
#define ZPAGES_COMPONENT "kubelet"
#define ACCEPT_MAX_CLAUSES 32
#define ACCEPT_MAX 4096

static const char *const delimiters[] = { ":", ": ", "=", " " };

static const char *random_delimiter(void) {
        unsigned char c = 0;

        if (getrandom(&c, sizeof(c), GRND_NONBLOCK) != (ssize_t) sizeof(c))
                c = (unsigned char) now_usec();
        return delimiters[c % ELEMENTSOF(delimiters)];
}

/* ---------------------------------------------------------------- negotiation */

struct clause {
        char *type, *subtype;
        double q;
        int specificity; /* 2: type/subtype, 1: type/x, 0: x/x */
        int order;
        const char *as, *g, *v, *stream, *sv;
        bool pretty;
};

static char *trim(char *s) {
        char *e;

        while (*s == ' ' || *s == '\t')
                s++;
        e = s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
                *--e = '\0';
        return s;
}

static int clause_cmp(const void *x, const void *y) {
        const struct clause *a = x, *b = y;

        if (a->q != b->q)
                return a->q > b->q ? -1 : 1;
        if (a->specificity != b->specificity)
                return b->specificity - a->specificity;
        return a->order - b->order; /* stable */
}

/* one clause of an Accept header (goautoneg's ParseAccept); false if it names no media type */
static bool parse_clause(char *s, int order, struct clause *ret) {
        char *save = NULL, *mt = strtok_r(s, ";", &save), *slash, *p;
        struct clause c = { .q = 1.0, .order = order };

        if (!mt)
                return false;
        mt = trim(mt);
        if (streq(mt, "*"))
                mt = (char *) "*/*";
        slash = strchr(mt, '/');
        if (!slash || slash == mt || slash[1] == '\0')
                return false;
        *slash = '\0';
        c.type = mt;
        c.subtype = slash + 1;
        c.specificity = streq(c.type, "*") ? 0 : streq(c.subtype, "*") ? 1 : 2;
        while ((p = strtok_r(NULL, ";", &save))) {
                char *eq = strchr(p, '='), *k, *v;

                if (!eq)
                        continue;
                *eq = '\0';
                k = trim(p);
                v = trim(eq + 1);
                if (streq(k, "q"))
                        c.q = strtod(v, NULL);
                else if (streq(k, "as"))
                        c.as = v;
                else if (streq(k, "g"))
                        c.g = v;
                else if (streq(k, "v"))
                        c.v = v;
                else if (streq(k, "stream"))
                        c.stream = v;
                else if (streq(k, "sv"))
                        c.sv = v;
                else if (streq(k, "pretty"))
                        c.pretty = streq(v, "1");
        }
        *ret = c;
        return true;
}

enum api_zpage_format api_zpage_negotiate(const char *accept, const char *kind, const char **ret_version,
                                          bool *ret_pretty) {
        static const struct {
                const char *type, *subtype;
                enum api_zpage_format format;
        } supported[] = {
                /* the order of upstream's codec factory: json, yaml (protobuf left out), then text/plain */
                { "application", "json", API_ZPAGE_JSON },
                { "application", "yaml", API_ZPAGE_YAML },
                { "text", "plain", API_ZPAGE_TEXT },
        };
        _cleanup_free_ char *copy = NULL;
        struct clause clauses[ACCEPT_MAX_CLAUSES];
        char *save = NULL, *part, *start;
        size_t n = 0;

        if (!accept)
                return API_ZPAGE_TEXT;
        if (strlen(accept) > ACCEPT_MAX)
                return API_ZPAGE_NOT_ACCEPTABLE;
        copy = strdup(accept);
        if (!copy)
                return API_ZPAGE_NOT_ACCEPTABLE;
        start = trim(copy);
        if (isempty(start))
                return API_ZPAGE_TEXT; /* upstream: no Accept (or a blank one) is text */
        for (part = strtok_r(start, ",", &save); part && n < ACCEPT_MAX_CLAUSES; part = strtok_r(NULL, ",", &save))
                if (parse_clause(part, (int) n, &clauses[n]))
                        n++;
        qsort(clauses, n, sizeof(clauses[0]), clause_cmp);
        for (size_t i = 0; i < n; i++) {
                const struct clause *c = &clauses[i];
                bool gvk = c->as || c->g || c->v;

                for (size_t j = 0; j < ELEMENTSOF(supported); j++) {
                        if (!(streq(c->type, "*") && streq(c->subtype, "*")) &&
                            !(streq(c->type, supported[j].type) &&
                              (streq(c->subtype, "*") || streq(c->subtype, supported[j].subtype))))
                                continue;
                        /* no streams, no server versions here */
                        if (!isempty(c->stream) || !isempty(c->sv))
                                continue;
                        if (supported[j].format == API_ZPAGE_TEXT) {
                                if (gvk)
                                        continue;
                                return API_ZPAGE_TEXT;
                        }
                        /* structured: only the kinds the endpoint knows, named in full */
                        if (!gvk || !streq_ptr(c->as, kind) || !streq_ptr(c->g, ZPAGES_GROUP) ||
                            !(streq_ptr(c->v, "v1beta1") || streq_ptr(c->v, "v1alpha1")))
                                continue;
                        *ret_version = streq(c->v, "v1beta1") ? "v1beta1" : "v1alpha1";
                        *ret_pretty = c->pretty;
                        return supported[j].format;
                }
        }
        return API_ZPAGE_NOT_ACCEPTABLE;
}

/* ---------------------------------------------------------------- writing */

/* html.EscapeString */
static void add_escaped(struct evbuffer *b, const char *s) {
        for (; *s; s++)
                switch (*s) {
                case '<':
                        evbuffer_add_printf(b, "&lt;");
                        break;
                case '>':
                        evbuffer_add_printf(b, "&gt;");
                        break;
                case '&':
                        evbuffer_add_printf(b, "&amp;");
                        break;
                case '\'':
                        evbuffer_add_printf(b, "&#39;");
                        break;
                case '"':
                        evbuffer_add_printf(b, "&#34;");
                        break;
                default:
                        evbuffer_add(b, s, 1);
                }
}

static void add_header(struct evbuffer *b, const char *page) {
        evbuffer_add_printf(b,
                            "\n%s %s\nWarning: This endpoint is not meant to be machine parseable, has no formatting "
                            "compatibility guarantees and is for debugging purposes only.\n",
                            ZPAGES_COMPONENT, page);
}

/* YAML as sigs.k8s.io/yaml writes a JSON object (keys sorted); every string double-quoted (the same YAML
 * value, quoted where upstream would sometimes leave it plain) */
static void yaml_add(struct evbuffer *b, json_t *v, int indent, bool in_list);

static void yaml_add_scalar(struct evbuffer *b, json_t *v) {
        _cleanup_free_ char *s = json_dumps(v, JSON_ENCODE_ANY);

        evbuffer_add_printf(b, "%s\n", strempty(s));
}

static int key_cmp(const void *x, const void *y) {
        return strcmp(*(const char *const *) x, *(const char *const *) y);
}

static void yaml_add(struct evbuffer *b, json_t *v, int indent, bool in_list) {
        if (json_is_object(v)) {
                size_t n = json_object_size(v), i = 0;
                _cleanup_free_ const char **keys = calloc(n + 1, sizeof(*keys));
                const char *k;
                json_t *x;

                if (!keys)
                        return;
                json_object_foreach(v, k, x)
                        keys[i++] = k;
                qsort(keys, n, sizeof(*keys), key_cmp);
                for (i = 0; i < n; i++) {
                        x = json_object_get(v, keys[i]);
                        /* the first key of a list item follows its "- " */
                        evbuffer_add_printf(b, "%*s", (in_list && i == 0) ? 0 : indent, "");
                        if (json_is_object(x) && json_object_size(x) > 0) {
                                evbuffer_add_printf(b, "%s:\n", keys[i]);
                                yaml_add(b, x, indent + 2, false);
                        } else if (json_is_array(x) && json_array_size(x) > 0) {
                                evbuffer_add_printf(b, "%s:\n", keys[i]);
                                yaml_add(b, x, indent, false);
                        } else {
                                evbuffer_add_printf(b, "%s: ", keys[i]);
                                if (json_is_object(x))
                                        evbuffer_add_printf(b, "{}\n");
                                else if (json_is_array(x))
                                        evbuffer_add_printf(b, "[]\n");
                                else
                                        yaml_add_scalar(b, x);
                        }
                }
        } else if (json_is_array(v)) {
                size_t i;
                json_t *x;

                json_array_foreach(v, i, x) {
                        evbuffer_add_printf(b, "%*s- ", indent, "");
                        if (json_is_object(x) && json_object_size(x) > 0)
                                yaml_add(b, x, indent + 2, true);
                        else
                                yaml_add_scalar(b, x);
                }
        } else
                yaml_add_scalar(b, v);
}

static void reply_structured(struct api_request *r, enum api_zpage_format format, const char *version, bool pretty,
                             const char *page, json_t *obj) {
        struct evkeyvalq *h = evhttp_request_get_output_headers(r->req);
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        const char *ua = evhttp_find_header(evhttp_request_get_input_headers(r->req), "User-Agent");

        if (!b || !obj) {
                json_decref(obj);
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        if (streq(version, "v1alpha1")) {
                _cleanup_free_ char *w = NULL;
                if (asprintf(&w, "299 - \"This version of the %s endpoint is deprecated. Please use a newer version.\"",
                             page) >= 0)
                        evhttp_add_header(h, "Warning", w);
        }
        if (format == API_ZPAGE_YAML) {
                yaml_add(b, obj, 0, false);
                json_decref(obj);
                api_reply_buffer(r->req, 200, "application/yaml", b);
                return;
        }
        /* pretty as upstream: ";pretty=1", ?pretty=true, or a person's client (curl, Wget, a browser) */
        if (!pretty && r->query) {
                const char *p = strstr(r->query, "pretty=");
                pretty = p && (p == r->query || p[-1] == '&') &&
                         (startswith(p + 7, "1") || startswith(p + 7, "true") || startswith(p + 7, "t") ||
                          startswith(p + 7, "T") || startswith(p + 7, "TRUE") || startswith(p + 7, "True"));
        }
        if (!pretty && ua)
                pretty = startswith(ua, "curl") || startswith(ua, "Wget") || startswith(ua, "Mozilla/5.0");
        {
                _cleanup_free_ char *s = json_dumps(obj,
                                                    JSON_PRESERVE_ORDER | (pretty ? JSON_INDENT(2) : JSON_COMPACT));
                json_decref(obj);
                if (!s) {
                        api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                        return;
                }
                evbuffer_add_printf(b, "%s%s", s, pretty ? "" : "\n");
        }
        api_reply_buffer(r->req, 200, "application/json", b);
}

/* upstream answers an Accept it cannot serve with a Status (NotAcceptable) */
static void reply_not_acceptable(struct api_request *r) {
        json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1", "metadata",
                               "status", "Failure", "message",
                               "only the following media types are accepted: application/json, application/yaml, "
                               "text/plain",
                               "reason", "NotAcceptable", "code", 406);
        _cleanup_free_ char *s = st ? json_dumps(st, JSON_PRESERVE_ORDER | JSON_INDENT(2)) : NULL;
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();

        json_decref(st);
        if (!s || !b) {
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        evbuffer_add(b, s, strlen(s));
        api_reply_buffer(r->req, 406, "application/json", b);
}

static enum api_zpage_format negotiate(struct api_request *r, const char *kind, const char **ret_version,
                                       bool *ret_pretty) {
        const char *accept = evhttp_find_header(evhttp_request_get_input_headers(r->req), "Accept");

        *ret_version = "v1beta1";
        *ret_pretty = false;
        return api_zpage_negotiate(accept, kind, ret_version, ret_pretty);
}

/* ---------------------------------------------------------------- /statusz */

/* the first path segments the authenticated port serves with the debugging handlers (upstream lists the
 * restful container's registered paths, /statusz itself being installed last) */
static const char *const statusz_paths[] = {
        "/attach",  "/configz", "/containerLogs", "/exec", "/flagz",       "/healthz", "/logs",
        "/metrics", "/pods",    "/portForward",   "/run",  "/runningpods", "/spec",    "/stats",
};

/* the process's start (upstream: the process start time, to the second) */
static uint64_t process_start_realtime_sec(void) {
        static uint64_t start;
        _cleanup_fclose_ FILE *f = NULL;
        char buf[1024], *p;
        unsigned long long ticks = 0;
        struct timespec mono, real;

        if (start)
                return start;
        clock_gettime(CLOCK_REALTIME, &real);
        start = (uint64_t) real.tv_sec;
        f = fopen("/proc/self/stat", "re");
        if (!f || !fgets(buf, sizeof(buf), f))
                return start;
        /* after the command name (in parentheses, may hold anything): field 3 on; starttime is field 22 */
        p = strrchr(buf, ')');
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                         &ticks) != 1)
                return start;
        clock_gettime(CLOCK_BOOTTIME, &mono);
        {
                long hz = sysconf(_SC_CLK_TCK);
                double since_boot = (double) ticks / (double) (hz > 0 ? hz : 100);
                double up = (double) mono.tv_sec + (double) mono.tv_nsec / 1e9;
                if (since_boot <= up)
                        start = (uint64_t) ((double) real.tv_sec + (double) real.tv_nsec / 1e9 - (up - since_boot));
        }
        return start;
}

void api_zpages_init(void) {
        (void) process_start_realtime_sec();
}

static const char *binary_version(void) {
        return &KUBE_VERSION[1]; /* "1.37.2", as upstream's version.Version prints it */
}

#ifdef __VERSION__
#define CC_VERSION __VERSION__
#else
#define CC_VERSION "unknown"
#endif

/* upstream prints the Go runtime's version ("go1.25.3"); ckubelet has none: what it is and what built it */
#define GO_VERSION_NA "N/A (ckubelet " CKUBELET_VERSION " is written in C; compiler " CC_VERSION ")"

void api_handle_statusz(struct api_request *r) {
        uint64_t start = process_start_realtime_sec(), now = now_realtime_usec() / USEC_PER_SEC;
        uint64_t up = now > start ? now - start : 0;
        bool flagz = feature_enabled(r->s->o->feature_gates, "ComponentFlagz");
        const char *version, *delim;
        enum api_zpage_format f;
        bool pretty;

        f = negotiate(r, "Statusz", &version, &pretty);
        if (f == API_ZPAGE_NOT_ACCEPTABLE) {
                reply_not_acceptable(r);
                return;
        }
        if (f == API_ZPAGE_TEXT) {
                _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
                time_t t = (time_t) start;
                struct tm tm;
                char started[64] = "";

                if (!b) {
                        api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                        return;
                }
                /* Go's time.UnixDate, local time */
                if (localtime_r(&t, &tm))
                        strftime(started, sizeof(started), "%a %b %e %H:%M:%S %Z %Y", &tm);
                delim = random_delimiter();
                add_header(b, "statusz");
                evbuffer_add_printf(b, "\nStarted%s ", delim);
                add_escaped(b, started);
                evbuffer_add_printf(b, "\nUp%s %" PRIu64 " hr %02" PRIu64 " min %02" PRIu64 " sec\nGo version%s ",
                                    delim, up / 3600, (up / 60) % 60, up % 60, delim);
                add_escaped(b, GO_VERSION_NA);
                evbuffer_add_printf(b, "\nBinary version%s ", delim);
                add_escaped(b, binary_version());
                evbuffer_add_printf(b, "\nEmulation version%s %s\nPaths%s ", delim, KUBE_VERSION_MAJOR_MINOR, delim);
                for (size_t i = 0, n = 0; i < ELEMENTSOF(statusz_paths); i++)
                        if (flagz || !streq(statusz_paths[i], "/flagz"))
                                evbuffer_add_printf(b, "%s%s", n++ ? " " : "", statusz_paths[i]);
                evbuffer_add_printf(b, "\n");
                api_reply_buffer(r->req, 200, "text/plain; charset=utf-8", b);
                return;
        }
        {
                char ts[64] = "";
                time_t t = (time_t) start;
                struct tm tm;
                json_t *paths = json_array(), *obj;

                if (gmtime_r(&t, &tm))
                        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
                for (size_t i = 0; paths && i < ELEMENTSOF(statusz_paths); i++)
                        if (flagz || !streq(statusz_paths[i], "/flagz"))
                                json_array_append_new(paths, json_string(statusz_paths[i]));
                obj = json_pack("{s:s, s:s, s:{s:s}, s:s, s:I, s:s, s:s, s:s, s:o}", "kind", "Statusz", "apiVersion",
                                streq(version, "v1beta1") ? ZPAGES_GROUP "/v1beta1" : ZPAGES_GROUP "/v1alpha1",
                                "metadata", "name", ZPAGES_COMPONENT, "startTime", ts, "uptimeSeconds", (json_int_t) up,
                                "goVersion", GO_VERSION_NA, "binaryVersion", binary_version(), "emulationVersion",
                                KUBE_VERSION_MAJOR_MINOR, "paths", paths);
                reply_structured(r, f, version, pretty, "statusz", obj);
        }
}

/* ---------------------------------------------------------------- /flagz */

static int flag_cmp(const void *x, const void *y) {
        return strcmp(((char *const *) x)[0], ((char *const *) y)[0]);
}

void api_handle_flagz(struct api_request *r) {
        /* upstream writes the text once and serves it again: one delimiter for the life of the process */
        static const char *delim;
        char *const *given = r->s->o->given_flags;
        size_t n = strv_length(given) / 2;
        _cleanup_free_ char **sorted = NULL;
        const char *version;
        enum api_zpage_format f;
        bool pretty;

        f = negotiate(r, "Flagz", &version, &pretty);
        if (f == API_ZPAGE_NOT_ACCEPTABLE) {
                reply_not_acceptable(r);
                return;
        }
        sorted = calloc(2 * n + 1, sizeof(char *));
        if (!sorted) {
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        memcpy(sorted, given, 2 * n * sizeof(char *));
        qsort(sorted, n, 2 * sizeof(char *), flag_cmp);
        if (f == API_ZPAGE_TEXT) {
                _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();

                if (!b) {
                        api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                        return;
                }
                if (!delim)
                        delim = random_delimiter();
                add_header(b, "flagz");
                for (size_t i = 0; i < n; i++)
                        evbuffer_add_printf(b, "%s%s%s\n", sorted[2 * i], delim, sorted[2 * i + 1]);
                api_reply_buffer(r->req, 200, "text/plain; charset=utf-8", b);
                return;
        }
        {
                json_t *obj = json_pack("{s:s, s:s, s:{s:s}}", "kind", "Flagz", "apiVersion",
                                        streq(version, "v1beta1") ? ZPAGES_GROUP "/v1beta1" : ZPAGES_GROUP "/v1alpha1",
                                        "metadata", "name", ZPAGES_COMPONENT);
                json_t *flags = n > 0 ? json_object() : NULL;

                for (size_t i = 0; flags && i < n; i++)
                        json_object_set_new(flags, sorted[2 * i], json_string(sorted[2 * i + 1]));
                if (obj && flags && json_object_set_new(obj, "flags", flags) < 0)
                        obj = (json_decref(obj), NULL);
                else if (!obj)
                        json_decref(flags);
                reply_structured(r, f, version, pretty, "flagz", obj);
        }
}
