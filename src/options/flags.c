/* SPDX-License-Identifier: Apache-2.0 */
/* The command line, as pflag parses it (cmd/kubelet/app/options), and --help. */
#include "options/options-internal.h"

#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/yaml_json.h"
#include "apis/pod.h"
#include "basic/error.h"
#include "features/features.h"
#include "nodeshutdown/config.h"
#include "basic/fs.h"
#include "basic/json.h"
#include "basic/log.h"
#include "basic/duration.h"
#include "basic/error.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"

/* ---- values ---- */

/* A duration for a uint64_t usec field. Negative durations are refused here (upstream accepts and then
 * misbehaves); sub-microsecond remainders round up so that "1ns" stays non-zero. */
int options_parse_duration(const char *s, uint64_t *ret_usec, struct ck_error **ret_error) {
        int64_t nsec;
        int r;

        r = go_duration_parse(s, &nsec, ret_error);
        if (r < 0)
                return r;
        if (nsec < 0)
                return ck_error_set(ret_error, -ERANGE, "must not be negative");
        *ret_usec = ((uint64_t) nsec + 999) / 1000;
        return 0;
}

static int header_valid(const char *k, const char *v, struct ck_error **ret_error) {
        /* keep CR/LF out of the request: the manifest URL client (http/client.c) sends the line as given */
        if (isempty(k))
                return ck_error_set(ret_error, -EINVAL, "empty header name");
        for (const char *c = k; *c; c++)
                if ((unsigned char) *c <= ' ' || *c == ':' || (unsigned char) *c == 0x7f)
                        return ck_error_set(ret_error, -EINVAL, "invalid header name \"%s\"", k);
        for (const char *c = v; *c; c++)
                if (*c == '\r' || *c == '\n' || *c == '\0')
                        return ck_error_set(ret_error, -EINVAL, "invalid value for header \"%s\"", k);
        return 0;
}

int options_header_add(char ***l, const char *k, const char *v, struct ck_error **ret_error) {
        char *line;
        int r;

        r = header_valid(k, v, ret_error);
        if (r < 0)
                return r;
        if (asprintf(&line, "%s: %s", k, v) < 0)
                return -ENOMEM;
        return strv_push(l, line);
}

/* "a:x, b:y" appended to *l as "a: x", "b: y", as ColonSeparatedMultimapStringString: empty items are
 * skipped, key and value are trimmed, every item needs a ':'. */
static int parse_headers_value(const char *value, char ***l, struct ck_error **ret_error) {
        _cleanup_free_ char *copy = strdup(value);
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        /* strtok_r would merge empty items, which is what we want: they are skipped */
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                char *colon = strchr(item, ':');
                int r;

                if (!colon)
                        return ck_error_set(ret_error, -EINVAL, "malformed pair, expect string:string");
                *colon = '\0';
                r = options_header_add(l, strstrip(item), strstrip(colon + 1), ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* pflag's map flags: "k=v,k2=v2" (mapStringString) or "k<v,k2<v2" (langleSeparatedMapStringString), keys and
 * values trimmed, empty items skipped. Stored as "k=v,k2=v2"; a later key replaces an earlier one where the map is
 * read. */
static int parse_map_value(const char *value, char sep, char **ret, struct ck_error **ret_error) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *copy = strdup(value);
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                char *at = strchr(item, sep), *k, *v, *pair;

                if (isempty(strstrip(item)))
                        continue;
                if (!at)
                        return ck_error_set(ret_error, -EINVAL, "malformed pair, expect string%cstring", sep);
                *at = '\0';
                k = strstrip(item);
                v = strstrip(at + 1);
                if (strchr(k, '='))
                        return ck_error_set(ret_error, -EINVAL, "invalid key \"%s\"", k);
                if (asprintf(&pair, "%s=%s", k, v) < 0 || strv_push(&l, pair) < 0)
                        return -ENOMEM;
        }
        *ret = l ? strv_join(l, ",") : strdup("");
        return *ret ? 0 : -ENOMEM;
}

/* ---- flags ---- */

/* --version=vX.Y.Z... sets the version reported, as upstream's verflag: it must be the followed release's X.Y.Z,
 * with a pre-release or build suffix at most (component-base's ValidateDynamicVersion) */
static int parse_reported_version(const char *value, struct ck_error **ret_error) {
        const char *rest = value + strlen(KUBE_VERSION);

        if (!startswith(value, KUBE_VERSION) || (*rest != '\0' && *rest != '-' && *rest != '+'))
                return ck_error_set(ret_error, -EINVAL,
                                    "must be true, false, raw or a version with the major, minor and patch of "
                                    "%s (%s-custom)",
                                    KUBE_VERSION, KUBE_VERSION);
        return 0;
}

static const struct flag_def *flag_find(const char *name, size_t len) {
        for (size_t i = 0; i < options_n_flag_defs; i++)
                if (strlen(options_flag_defs[i].name) == len && strneq(options_flag_defs[i].name, name, len))
                        return &options_flag_defs[i];
        return NULL;
}

static const struct flag_def *flag_find_short(char c) {
        for (size_t i = 0; i < options_n_flag_defs; i++)
                if (options_flag_defs[i].shorthand == c)
                        return &options_flag_defs[i];
        return NULL;
}

static bool flag_is_bool(const struct flag_def *f) {
        return f->kind == FLAG_HELP || f->kind == FLAG_VERSION || f->kind == FLAG_BOOL ||
               (f->kind == FLAG_COMPAT && !f->type);
}

static int apply_flag(struct kubelet_options *o, struct parse_state *st, const struct flag_def *f, const char *value,
                      struct ck_error **ret_error) {
        _cleanup_ck_error_ struct ck_error *why = NULL;
        char *base = (char *) o;
        int r = 0;

        if (f->deprecated && st->warn)
                log_warning("Flag --%s has been deprecated, %s", f->name, f->deprecated);
        switch (f->kind) {
        case FLAG_STRING:
                if (f->offset == OFF(reserved_memory)) {
                        /* ReservedMemoryVar: the first use replaces the config file's, later ones add NUMA nodes */
                        char **target = (char **) (base + f->offset);
                        size_t idx = (size_t) (f - options_flag_defs);
                        if (st->maps_seen[idx] && !isempty(*target) && !isempty(value)) {
                                char *joined;
                                if (asprintf(&joined, "%s;%s", *target, value) < 0)
                                        return -ENOMEM;
                                free(*target);
                                *target = joined;
                                return 0;
                        }
                        st->maps_seen[idx] = true;
                }
                return free_and_strdup((char **) (base + f->offset), value);

        case FLAG_FEATURE_GATES:
                r = feature_gates_parse(&o->feature_gates, value, st->warn, &why);
                break;

        case FLAG_DURATION: {
                uint64_t usec = 0;
                r = options_parse_duration(value, &usec, &why);
                if (r >= 0)
                        *(uint64_t *) (base + f->offset) = usec;
                break;
        }

        case FLAG_INT: {
                int v;
                r = safe_atoi(value, &v);
                if (r >= 0)
                        *(int *) (base + f->offset) = v;
                else
                        (void) ck_error_set(&why, r, "%s", r == -ERANGE ? "value out of range" : "not an integer");
                break;
        }

        case FLAG_INT64: {
                int64_t v;
                r = safe_atoi64(value, &v);
                if (r >= 0)
                        *(int64_t *) (base + f->offset) = v;
                else
                        (void) ck_error_set(&why, r, "%s", r == -ERANGE ? "value out of range" : "not an integer");
                break;
        }

        case FLAG_BOOL: {
                bool b;
                r = parse_bool(value, &b);
                if (r >= 0)
                        *(bool *) (base + f->offset) = b;
                else
                        (void) ck_error_set(&why, r, "must be a boolean (true or false)");
                break;
        }

        case FLAG_VERBOSITY: {
                int64_t v;
                r = safe_atoi64(value, &v);
                if (r >= 0 && (v < 0 || v > INT_MAX))
                        r = -ERANGE;
                if (r >= 0)
                        o->verbosity = (int) v;
                else
                        (void) ck_error_set(&why, r, "must be a non-negative integer");
                break;
        }

        case FLAG_HEADERS: {
                _cleanup_strv_free_ char **l = NULL;
                if (st->headers_seen) {
                        r = strv_copy(o->manifest_url_headers, &l);
                        if (r < 0)
                                return r;
                }
                r = parse_headers_value(value, &l, &why);
                if (r >= 0) {
                        strv_free(o->manifest_url_headers);
                        o->manifest_url_headers = TAKE_PTR(l);
                        st->headers_seen = true;
                }
                break;
        }

        case FLAG_MAP:
        case FLAG_LANGLE_MAP: {
                _cleanup_free_ char *parsed = NULL;
                char **target = (char **) (base + f->offset);
                size_t idx = (size_t) (f - options_flag_defs);

                r = parse_map_value(value, f->kind == FLAG_MAP ? '=' : '<', &parsed, &why);
                if (r < 0)
                        break;
                if (st->maps_seen[idx] && !isempty(*target) && !isempty(parsed)) {
                        char *joined;
                        if (asprintf(&joined, "%s,%s", *target, parsed) < 0)
                                return -ENOMEM;
                        free(*target);
                        *target = joined;
                } else {
                        free(*target);
                        *target = TAKE_PTR(parsed);
                }
                st->maps_seen[idx] = true;
                break;
        }

        case FLAG_COMPAT: {
                bool b = false, quiet;
                size_t i = (size_t) (f - options_flag_defs);

                if (!f->type) {
                        r = parse_bool(value, &b);
                        if (r < 0) {
                                (void) ck_error_set(&why, r, "must be a boolean (true or false)");
                                break;
                        }
                        quiet = streq_ptr(f->quiet, b ? "true" : "false");
                } else
                        quiet = isempty(value) || streq_ptr(f->quiet, value);
                quiet = quiet || streq_ptr(f->quiet, COMPAT_ALWAYS_QUIET);
                if (st->warn && !quiet && !st->compat_warned[i]) {
                        st->compat_warned[i] = true;
                        log_warning("Flag --%s of the upstream kubelet is accepted and ignored: %s", f->name, f->help);
                }
                break;
        }

        case FLAG_HELP:
        case FLAG_VERSION: {
                bool b;
                if (f->kind == FLAG_VERSION && streq(value, "raw")) {
                        st->version = VERSION_RAW;
                        return 0;
                }
                if (f->kind == FLAG_VERSION && value[0] == 'v') {
                        r = parse_reported_version(value, &why);
                        if (r >= 0) {
                                st->version = VERSION_NONE;
                                r = free_and_strdup(&o->reported_version, value);
                        }
                        break;
                }
                r = parse_bool(value, &b);
                if (r >= 0) {
                        if (f->kind == FLAG_HELP)
                                st->help = b;
                        else
                                st->version = b ? VERSION_TRUE : VERSION_NONE;
                } else
                        (void) ck_error_set(&why, r,
                                            f->kind == FLAG_VERSION ? "must be true, false, raw or vX.Y.Z"
                                                                    : "must be a boolean (true or false)");
                break;
        }
        }

        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return ck_error_set(ret_error, -EINVAL, "invalid value \"%s\" for flag --%s: %s", value, f->name,
                                    why ? ck_error_message(why) : "invalid value");
        return 0;
}

/* /flagz: the flag as given, its last value kept */
static int record_given_flag(struct kubelet_options *o, const char *name, const char *value) {
        char *v;

        for (char **p = o->given_flags; p && p[0] && p[1]; p += 2)
                if (streq(p[0], name)) {
                        v = strdup(value);
                        if (!v)
                                return -ENOMEM;
                        free(p[1]);
                        p[1] = v;
                        return 0;
                }
        if (strv_extend(&o->given_flags, name) < 0)
                return -ENOMEM;
        if (strv_extend(&o->given_flags, value) < 0) {
                /* keep the list in pairs */
                size_t n = strv_length(o->given_flags);
                free(o->given_flags[n - 1]);
                o->given_flags[n - 1] = NULL;
                return -ENOMEM;
        }
        return 0;
}

int options_parse_argv(struct kubelet_options *o, struct parse_state *st, int argc, char **argv,
                       struct ck_error **ret_error) {
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i], *value = NULL;
                const struct flag_def *f;
                int r;

                if (streq(a, "--")) {
                        if (i + 1 < argc)
                                return ck_error_set(ret_error, -EINVAL, "unknown command \"%s\"", argv[i + 1]);
                        break;
                }
                if (startswith(a, "--")) {
                        const char *name = a + 2, *eq = strchr(name, '=');
                        size_t len = eq ? (size_t) (eq - name) : strlen(name);

                        f = flag_find(name, len);
                        if (!f)
                                return ck_error_set(ret_error, -EINVAL, "unknown flag: --%.*s", (int) len, name);
                        if (eq)
                                value = eq + 1;
                } else if (a[0] == '-' && a[1] != '\0') {
                        /* shorthands: -h, -v 2, -v=2, -v2 */
                        f = flag_find_short(a[1]);
                        if (!f)
                                return ck_error_set(ret_error, -EINVAL, "unknown shorthand flag: '%c' in %s", a[1], a);
                        if (a[2] == '=')
                                value = a + 3;
                        else if (a[2] != '\0') {
                                if (flag_is_bool(f))
                                        return ck_error_set(ret_error, -EINVAL, "unknown shorthand flag: '%c' in %s",
                                                            a[2], a);
                                value = a + 2;
                        }
                } else
                        return ck_error_set(ret_error, -EINVAL, "unknown command \"%s\"", a);

                if (!value) {
                        if (flag_is_bool(f))
                                value = "true";
                        else if (i + 1 < argc)
                                value = argv[++i];
                        else
                                return ck_error_set(ret_error, -EINVAL, "flag needs an argument: --%s", f->name);
                }
                r = apply_flag(o, st, f, value, ret_error);
                if (r < 0)
                        return r;
                r = record_given_flag(o, f->name, value);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- --help ---- */

static void default_text(const struct kubelet_options *d, const struct flag_def *f, char *buf, size_t size) {
        const char *base = (const char *) d;

        buf[0] = '\0';
        switch (f->kind) {
        case FLAG_STRING: {
                const char *s = *(char *const *) (base + f->offset);
                if (!isempty(s))
                        snprintf(buf, size, "\"%s\"", s);
                break;
        }
        case FLAG_DURATION: {
                char t[GO_DURATION_MAX];
                uint64_t usec = *(const uint64_t *) (base + f->offset);
                snprintf(buf, size, "%s", go_duration_format((int64_t) usec * 1000, t, sizeof(t)));
                break;
        }
        case FLAG_INT:
                snprintf(buf, size, "%d", *(const int *) (base + f->offset));
                break;
        case FLAG_INT64:
                snprintf(buf, size, "%" PRId64, *(const int64_t *) (base + f->offset));
                break;
        case FLAG_VERBOSITY:
                snprintf(buf, size, "%d", d->verbosity);
                break;
        case FLAG_BOOL:
                snprintf(buf, size, "%s", *(const bool *) (base + f->offset) ? "true" : "false");
                break;
        case FLAG_MAP:
        case FLAG_LANGLE_MAP: {
                const char *m = *(char *const *) (base + f->offset);
                if (!isempty(m)) {
                        /* as pflag prints it: "memory.available<100Mi,..." for the langle maps */
                        snprintf(buf, size, "%s", m);
                        if (f->kind == FLAG_LANGLE_MAP)
                                for (char *c = buf; *c; c++)
                                        if (*c == '=')
                                                *c = '<';
                }
                break;
        }
        case FLAG_HEADERS:
        case FLAG_FEATURE_GATES:
        case FLAG_HELP:
        case FLAG_VERSION:
        case FLAG_COMPAT:
                break;
        }
}

static int flag_def_ptr_compare(const void *a, const void *b) {
        const struct flag_def *const *x = a, *const *y = b;

        return strcmp((*x)->name, (*y)->name);
}

/* Usage text for --help. */
void options_print_help(void) {
        struct kubelet_options d;
        bool have_defaults = kubelet_options_init(&d) >= 0;
        const struct flag_def *sorted[options_n_flag_defs];
        int width = 0;

        /* listed by name, as pflag does, whatever the order of the table */
        for (size_t i = 0; i < options_n_flag_defs; i++) {
                sorted[i] = &options_flag_defs[i];
                width = MAX(width, (int) (strlen(options_flag_defs[i].name) +
                                          strlen(strempty(options_flag_defs[i].type)) + 9));
        }
        qsort(sorted, ELEMENTSOF(sorted), sizeof(sorted[0]), flag_def_ptr_compare);
        printf("ckubelet runs the pods of one node through a CRI runtime (containerd): static pods from files or a URL,\n"
               "and with --kubeconfig the pods the API server binds to the node, whose Node object it registers and\n"
               "keeps up to date. It serves the kubelet API (logs, exec, port-forward, stats) on --port.\n\n"
               "Usage:\n  ckubelet [flags]\n\nFlags:\n");
        for (size_t i = 0; i < ELEMENTSOF(sorted); i++) {
                const struct flag_def *f = sorted[i];
                char def[128] = "";
                char lhs[96];

                if (f->shorthand)
                        snprintf(lhs, sizeof(lhs), "  -%c, --%s%s%s", f->shorthand, f->name, f->type ? " " : "",
                                 strempty(f->type));
                else
                        snprintf(lhs, sizeof(lhs), "      --%s%s%s", f->name, f->type ? " " : "", strempty(f->type));
                if (have_defaults)
                        default_text(&d, f, def, sizeof(def));
                if (f->kind == FLAG_COMPAT)
                        printf("%-*s   Accepted for compatibility with the upstream kubelet, ignored: %s", width, lhs,
                               f->help);
                else
                        printf("%-*s   %s", width, lhs, f->help);
                if (def[0])
                        printf(" (default %s)", def);
                if (f->field)
                        printf(" [config: %s]", f->field);
                printf("\n");
        }
        printf("\nThe --config file may also set podLogsDir (default \"%s\"); fields ckubelet does not act on are\n"
               "accepted with a warning. Flags and fields: docs/flags.md (/usr/share/doc/ckubelet in the package).\n",
               DEFAULT_POD_LOGS_DIR);
        if (have_defaults)
                kubelet_options_done(&d);
}
