/* SPDX-License-Identifier: Apache-2.0 */
/* YAML (or JSON) text → JSON documents.
 *
 * YAML is read with libyaml's event parser and turned into jansson values directly; no YAML node tree is
 * built. Plain scalars resolve as the YAML 1.2 core schema, except integers, which resolve as upstream's YAML
 * reader does (go-yaml v2, YAML 1.1: "0440" is octal, "1_000" is 1000, 0b binary); "yes" and "on" stay strings
 * (go-yaml v2 makes them booleans, which a string field then refuses); quoted scalars are always strings. Anchors and aliases are refused: they are
 * not needed for pods and are the classic amplification attack ("billion laughs"). Nesting depth and node
 * count are capped. */
#include "basic/yaml_json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <yaml.h>

#include "basic/error.h"
#include "basic/string.h"

#define TAG_STR "tag:yaml.org,2002:str"
#define TAG_INT "tag:yaml.org,2002:int"
#define TAG_FLOAT "tag:yaml.org,2002:float"
#define TAG_BOOL "tag:yaml.org,2002:bool"
#define TAG_NULL "tag:yaml.org,2002:null"
#define TAG_MAP "tag:yaml.org,2002:map"
#define TAG_SEQ "tag:yaml.org,2002:seq"

static int set_error(struct ck_error **ret_error, const yaml_mark_t *mark, const char *fmt, ...) _printf_(3, 4);
static int set_error(struct ck_error **ret_error, const yaml_mark_t *mark, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;

        if (!ret_error)
                return -EINVAL;
        if (VA_FORMAT(msg, fmt) < 0)
                return -ENOMEM;
        if (mark)
                return ck_error_set(ret_error, -EINVAL, "line %zu:%zu: %s", mark->line + 1, mark->column + 1, msg);
        return ck_error_set(ret_error, -EINVAL, "%s", msg);
}

/* ---- YAML 1.2 core schema ---- */

static bool is_digits(const char *s, const char *set) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (!strchr(set, *s))
                        return false;
        return true;
}

/* [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )? */
static bool is_float(const char *s) {
        bool digits = false;
        if (*s == '-' || *s == '+')
                s++;
        if (*s == '.') {
                s++;
                if (!(*s >= '0' && *s <= '9'))
                        return false;
                while (*s >= '0' && *s <= '9')
                        s++;
                digits = true;
        } else {
                while (*s >= '0' && *s <= '9') {
                        s++;
                        digits = true;
                }
                if (!digits)
                        return false;
                if (*s == '.') {
                        s++;
                        while (*s >= '0' && *s <= '9')
                                s++;
                }
        }
        if (*s == 'e' || *s == 'E') {
                s++;
                if (*s == '-' || *s == '+')
                        s++;
                if (!(*s >= '0' && *s <= '9'))
                        return false;
                while (*s >= '0' && *s <= '9')
                        s++;
        }
        return *s == '\0';
}

enum resolved {
        RESOLVED_STRING,
        RESOLVED_NULL,
        RESOLVED_BOOL,
        RESOLVED_INT,
        RESOLVED_FLOAT,
        RESOLVED_INVALID,
};

/* An integer as upstream reads one (sigs.k8s.io/yaml over go-yaml v2: Go's ParseInt with base 0 after dropping
 * '_'): 0x hex, 0o octal, 0b binary, and a leading 0 octal as YAML 1.1 has it (defaultMode: 0440 is 288, not
 * 440); "08" (not octal) stays decimal 8, as go-yaml's float fallback makes it. RESOLVED_STRING: not one. */
static enum resolved resolve_int(const char *s, json_t **ret) {
        char digits[80];
        const char *set = "0123456789";
        bool negative = false;
        unsigned long long v;
        size_t n = 0;
        int base = 10;

        if (*s == '-' || *s == '+')
                negative = *s++ == '-';
        if (!(*s >= '0' && *s <= '9'))
                return RESOLVED_STRING;
        for (; *s; s++) {
                if (*s == '_')
                        continue;
                if (n + 1 >= sizeof(digits))
                        return RESOLVED_STRING;
                digits[n++] = *s;
        }
        digits[n] = '\0';
        s = digits;
        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
                base = 16, set = "0123456789abcdefABCDEF", s += 2;
        else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
                base = 8, set = "01234567", s += 2;
        else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
                base = 2, set = "01", s += 2;
        else if (s[0] == '0' && s[1] && is_digits(s + 1, "01234567"))
                base = 8, set = "01234567", s += 1;
        if (!is_digits(s, set))
                return RESOLVED_STRING;
        errno = 0;
        v = strtoull(s, NULL, base);
        if (errno == ERANGE || v > (unsigned long long) INT64_MAX + (negative ? 1 : 0)) {
                if (base != 10)
                        return RESOLVED_INVALID;
                /* beyond int64: keep it as a number, as a JSON parser would */
                *ret = json_real(negative ? -strtod(s, NULL) : strtod(s, NULL));
                return *ret ? RESOLVED_FLOAT : RESOLVED_INVALID;
        }
        *ret = json_integer(negative ? (json_int_t) (0 - v) : (json_int_t) v);
        return *ret ? RESOLVED_INT : RESOLVED_INVALID;
}

static enum resolved resolve_plain(const char *s, json_t **ret) {
        enum resolved r;

        if (streq(s, "") || streq(s, "~") || streq(s, "null") || streq(s, "Null") || streq(s, "NULL")) {
                *ret = json_null();
                return RESOLVED_NULL;
        }
        if (streq(s, "true") || streq(s, "True") || streq(s, "TRUE")) {
                *ret = json_true();
                return RESOLVED_BOOL;
        }
        if (streq(s, "false") || streq(s, "False") || streq(s, "FALSE")) {
                *ret = json_false();
                return RESOLVED_BOOL;
        }
        r = resolve_int(s, ret);
        if (r != RESOLVED_STRING)
                return r;
        if (is_float(s)) {
                double d = strtod(s, NULL);
                if (!isfinite(d))
                        return RESOLVED_INVALID;
                *ret = json_real(d);
                return RESOLVED_FLOAT;
        }
        {
                const char *t = (s[0] == '-' || s[0] == '+') ? s + 1 : s;
                if (streq(t, ".inf") || streq(t, ".Inf") || streq(t, ".INF") || streq(s, ".nan") || streq(s, ".NaN") ||
                    streq(s, ".NAN"))
                        return RESOLVED_INVALID; /* JSON has no infinities or NaN */
        }
        *ret = json_string(s);
        return RESOLVED_STRING;
}

/* ---- event loop ---- */

struct frame {
        json_t *value;     /* object or array (borrowed: owned by its parent or by the frame stack) */
        char *pending_key; /* mappings: the key waiting for its value */
        bool owned;        /* the root frame owns its value */
};

struct converter {
        struct frame stack[YAML_MAX_DEPTH];
        size_t depth;
        size_t nodes;
        json_t *root; /* root of the current document (owned) */
        struct ck_error **ret_error;
};

static void converter_reset(struct converter *c) {
        for (size_t i = 0; i < c->depth; i++)
                free(c->stack[i].pending_key);
        c->depth = 0;
        json_decref(c->root);
        c->root = NULL;
}

/* Attach a new value at the current position (takes ownership of v). */
static int attach(struct converter *c, json_t *v, const yaml_mark_t *mark) {
        struct frame *f;
        int r;

        if (!v)
                return -ENOMEM;
        if (c->depth == 0) {
                json_decref(c->root);
                c->root = v;
                return 0;
        }
        f = &c->stack[c->depth - 1];
        if (json_is_array(f->value))
                return json_array_append_new(f->value, v) < 0 ? -ENOMEM : 0;
        /* mapping: this is the value for the pending key */
        if (!f->pending_key) {
                json_decref(v);
                return set_error(c->ret_error, mark, "mapping keys must be scalars");
        }
        if (json_object_get(f->value, f->pending_key)) {
                _cleanup_free_ char *q = go_quote(f->pending_key);
                json_decref(v);
                return set_error(c->ret_error, mark, "duplicate key %s", q ? q : f->pending_key);
        }
        r = json_object_set_new(f->value, f->pending_key, v);
        f->pending_key = mfree(f->pending_key);
        return r < 0 ? -ENOMEM : 0;
}

static bool expecting_key(const struct converter *c) {
        return c->depth > 0 && json_is_object(c->stack[c->depth - 1].value) && !c->stack[c->depth - 1].pending_key;
}

static int count_node(struct converter *c, const yaml_mark_t *mark) {
        if (++c->nodes > YAML_MAX_NODES)
                return set_error(c->ret_error, mark, "too many nodes (more than %d)", YAML_MAX_NODES);
        return 0;
}

static int refuse_anchor(struct converter *c, const yaml_char_t *anchor, const yaml_mark_t *mark) {
        if (!anchor)
                return 0;
        return set_error(c->ret_error, mark, "aliases are not supported (anchor &%s)", (const char *) anchor);
}

static int on_scalar(struct converter *c, const yaml_event_t *ev) {
        const char *value = (const char *) ev->data.scalar.value;
        const char *tag = (const char *) ev->data.scalar.tag;
        size_t len = ev->data.scalar.length;
        const yaml_mark_t *mark = &ev->start_mark;
        json_t *v = NULL;
        enum resolved kind;
        int r;

        r = refuse_anchor(c, ev->data.scalar.anchor, mark);
        if (r < 0)
                return r;
        r = count_node(c, mark);
        if (r < 0)
                return r;
        if (strlen(value) != len)
                return set_error(c->ret_error, mark, "NUL characters are not supported");

        if (expecting_key(c)) {
                /* keys are strings in JSON: take the scalar's text as written */
                char *k = strdup(value);
                if (!k)
                        return -ENOMEM;
                c->stack[c->depth - 1].pending_key = k;
                return 0;
        }

        if (tag && !streq(tag, "!") && !streq(tag, "?")) {
                if (streq(tag, TAG_STR))
                        v = json_string(value);
                else if (streq(tag, TAG_NULL) || streq(tag, TAG_BOOL) || streq(tag, TAG_INT) || streq(tag, TAG_FLOAT)) {
                        kind = resolve_plain(value, &v);
                        if ((streq(tag, TAG_NULL) && kind != RESOLVED_NULL) ||
                            (streq(tag, TAG_BOOL) && kind != RESOLVED_BOOL) ||
                            (streq(tag, TAG_INT) && kind != RESOLVED_INT) ||
                            (streq(tag, TAG_FLOAT) && kind != RESOLVED_FLOAT && kind != RESOLVED_INT)) {
                                json_decref(v);
                                return set_error(c->ret_error, mark, "cannot decode \"%s\" as %s", value, tag);
                        }
                        if (streq(tag, TAG_FLOAT) && kind == RESOLVED_INT) {
                                json_t *f = json_real((double) json_integer_value(v));
                                json_decref(v);
                                v = f;
                        }
                } else
                        return set_error(c->ret_error, mark, "unsupported tag %s", tag);
        } else if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !tag) {
                kind = resolve_plain(value, &v);
                if (kind == RESOLVED_INVALID)
                        return set_error(c->ret_error, mark, "cannot represent %s in JSON", value);
        } else
                v = json_string(value); /* quoted, block literal/folded, or the "!" tag */

        return attach(c, v, mark);
}

static int on_collection_start(struct converter *c, const yaml_event_t *ev, bool mapping) {
        const yaml_char_t *anchor = mapping ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
        const char *tag = (const char *) (mapping ? ev->data.mapping_start.tag : ev->data.sequence_start.tag);
        const yaml_mark_t *mark = &ev->start_mark;
        json_t *v;
        int r;

        r = refuse_anchor(c, anchor, mark);
        if (r < 0)
                return r;
        r = count_node(c, mark);
        if (r < 0)
                return r;
        if (tag && !streq(tag, "!") && !streq(tag, mapping ? TAG_MAP : TAG_SEQ))
                return set_error(c->ret_error, mark, "unsupported tag %s", tag);
        if (expecting_key(c))
                return set_error(c->ret_error, mark, "mapping keys must be scalars");
        if (c->depth >= YAML_MAX_DEPTH)
                return set_error(c->ret_error, mark, "nesting too deep (more than %d levels)", YAML_MAX_DEPTH);

        v = mapping ? json_object() : json_array();
        if (!v)
                return -ENOMEM;
        /* attach first (the parent holds the reference), then push */
        r = attach(c, json_incref(v), mark);
        if (r < 0) {
                json_decref(v);
                return r;
        }
        json_decref(v); /* now held by the parent or by c->root */
        c->stack[c->depth++] = (struct frame) { .value = v };
        return 0;
}

static int parser_error(const yaml_parser_t *p, const char *data, size_t size, struct ck_error **ret_error) {
        const char *problem = p->problem ? p->problem : "invalid YAML";

        if (p->error == YAML_MEMORY_ERROR)
                return -ENOMEM;
        if (p->error == YAML_READER_ERROR) {
                /* the reader reports a byte offset only: turn it into line:column */
                yaml_mark_t m = {};
                for (size_t i = 0; i < MIN(p->problem_offset, size); i++)
                        if (data[i] == '\n') {
                                m.line++;
                                m.column = 0;
                        } else
                                m.column++;
                return set_error(ret_error, &m, "%s", problem);
        }
        if (p->context)
                return set_error(ret_error, &p->problem_mark, "%s (%s at line %zu:%zu)", problem, p->context,
                                 p->context_mark.line + 1, p->context_mark.column + 1);
        return set_error(ret_error, &p->problem_mark, "%s", problem);
}

int yaml_to_json_docs(const char *data, size_t size, json_t **ret_array, struct ck_error **ret_error) {
        _cleanup_ck_error_ struct ck_error *error = NULL;
        struct converter c = { .ret_error = &error };
        yaml_parser_t parser;
        json_auto_t *docs = NULL;
        bool done = false;
        int r = 0;

        if (!data && size > 0)
                return -EINVAL;
        if (size > YAML_MAX_SIZE) {
                r = set_error(&error, NULL, "document too large (%zu bytes, at most %u)", size, YAML_MAX_SIZE);
                goto finish_nodocs;
        }
        docs = json_array();
        if (!docs)
                return -ENOMEM;
        if (!yaml_parser_initialize(&parser))
                return -ENOMEM;
        yaml_parser_set_input_string(&parser, (const unsigned char *) (data ? data : ""), size);

        while (!done && r >= 0) {
                yaml_event_t ev;

                if (!yaml_parser_parse(&parser, &ev)) {
                        r = parser_error(&parser, data, size, &error);
                        break;
                }
                switch (ev.type) {
                case YAML_STREAM_END_EVENT:
                        done = true;
                        break;
                case YAML_DOCUMENT_START_EVENT:
                        converter_reset(&c);
                        break;
                case YAML_DOCUMENT_END_EVENT:
                        /* an empty document (nothing, or only comments) yields a null root: skip it */
                        if (c.root && !json_is_null(c.root)) {
                                if (json_array_append(docs, c.root) < 0)
                                        r = -ENOMEM;
                        }
                        converter_reset(&c);
                        break;
                case YAML_ALIAS_EVENT:
                        r = set_error(&error, &ev.start_mark, "aliases are not supported (*%s)",
                                      (const char *) ev.data.alias.anchor);
                        break;
                case YAML_SCALAR_EVENT:
                        r = on_scalar(&c, &ev);
                        break;
                case YAML_SEQUENCE_START_EVENT:
                        r = on_collection_start(&c, &ev, false);
                        break;
                case YAML_MAPPING_START_EVENT:
                        r = on_collection_start(&c, &ev, true);
                        break;
                case YAML_SEQUENCE_END_EVENT:
                case YAML_MAPPING_END_EVENT:
                        if (c.depth > 0) {
                                c.depth--;
                                c.stack[c.depth].pending_key = mfree(c.stack[c.depth].pending_key);
                        }
                        break;
                default:
                        break;
                }
                yaml_event_delete(&ev);
        }
        yaml_parser_delete(&parser);
        converter_reset(&c);

        if (r < 0)
                goto finish_nodocs;
        if (ret_array)
                *ret_array = TAKE_PTR(docs);
        return 0;

finish_nodocs:
        if (r == -EINVAL && error)
                ck_error_pass(ret_error, &error);
        else if (r == -ENOMEM)
                ck_error_set(ret_error, r, "out of memory");
        return r;
}
