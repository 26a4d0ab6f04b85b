/* SPDX-License-Identifier: Apache-2.0 */
/* YAML → JSON: core schema types, multiple documents, refusals, caps, error positions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "apis/manifest.h"

static json_t *convert(const char *yaml) {
        struct ck_error *err = NULL;
        json_t *docs = NULL;
        if (yaml_to_json_docs(yaml, strlen(yaml), &docs, &err) < 0)
                fail_msg("yaml_to_json_docs: %s", ck_error_message(err));
        assert_null(err);
        return docs;
}

/* Convert and compare the compact, sorted JSON of all documents. */
static void expect_json(const char *yaml, const char *json) {
        json_t *docs = convert(yaml);
        char *s = json_dumps(docs, JSON_COMPACT | JSON_SORT_KEYS);
        if (!streq(s, json))
                fail_msg("YAML:\n%s\ngot:  %s\nwant: %s", yaml, s, json);
        free(s);
        json_decref(docs);
}

static void expect_error(const char *yaml, int code, const char *msg) {
        struct ck_error *err = NULL;
        json_t *docs = (json_t *) 0x1;
        int r = yaml_to_json_docs(yaml, strlen(yaml), &docs, &err);
        if (r != code)
                fail_msg("YAML:\n%s\nreturned %d, want %d (%s)", yaml, r, code, strna(ck_error_message(err)));
        assert_ptr_equal(docs, (json_t *) 0x1); /* untouched on failure */
        assert_non_null(err);
        if (!strstr(ck_error_message(err), msg))
                fail_msg("YAML:\n%s\nerror \"%s\" does not contain \"%s\"", yaml, ck_error_message(err), msg);
        ck_error_free(err);
}

static void test_scalars(void **state) {
        expect_json("a: 1\nb: -2\nc: +3\nd: 0x1F\ne: 0o17\nf: 007\n",
                    "[{\"a\":1,\"b\":-2,\"c\":3,\"d\":31,\"e\":15,\"f\":7}]");
        /* as upstream's go-yaml v2 (YAML 1.1): a leading 0 is octal, '_' separates, 0b binary; 08 is decimal */
        expect_json("a: 0440\nb: 0644\nc: -010\nd: 1_000\ne: 0b101\nf: 08\ng: 0\nh: -0x10\n",
                    "[{\"a\":288,\"b\":420,\"c\":-8,\"d\":1000,\"e\":5,\"f\":8,\"g\":0,\"h\":-16}]");
        expect_json("a: -9223372036854775808\nb: 0x\nc: 0b2\nd: _1\n",
                    "[{\"a\":-9223372036854775808,\"b\":\"0x\",\"c\":\"0b2\",\"d\":\"_1\"}]");
        expect_json("a: 1.5\nb: .5\nc: 1e3\nd: -2.5E-1\n", "[{\"a\":1.5,\"b\":0.5,\"c\":1000.0,\"d\":-0.25}]");
        expect_json("a: true\nb: False\nc: TRUE\nd: yes\ne: on\nf: no\n",
                    "[{\"a\":true,\"b\":false,\"c\":true,\"d\":\"yes\",\"e\":\"on\",\"f\":\"no\"}]");
        expect_json("a: null\nb: ~\nc:\nd: Null\ne: 'null'\n",
                    "[{\"a\":null,\"b\":null,\"c\":null,\"d\":null,\"e\":\"null\"}]");
        expect_json("a: '1'\nb: \"true\"\nc: 1.2.3\nd: 0x\ne: 12abc\nf: \"\"\n",
                    "[{\"a\":\"1\",\"b\":\"true\",\"c\":\"1.2.3\",\"d\":\"0x\",\"e\":\"12abc\",\"f\":\"\"}]");
        expect_json("a: !!str 80\nb: !!int \"80\"\nc: !!float 1\nd: ! 12\n",
                    "[{\"a\":\"80\",\"b\":80,\"c\":1.0,\"d\":\"12\"}]");
        expect_json("a: |\n  line1\n  line2\nb: >\n  folded\n  text\n",
                    "[{\"a\":\"line1\\nline2\\n\",\"b\":\"folded text\\n\"}]");
        expect_json("1: one\ntrue: yes\n", "[{\"1\":\"one\",\"true\":\"yes\"}]");
        expect_json("a: 99999999999999999999\n", "[{\"a\":1e20}]");
        expect_json("- a\n- [1, 2, {b: c}]\n- {}\n- []\n", "[[\"a\",[1,2,{\"b\":\"c\"}],{},[]]]");
        expect_json("s: \"caf\\u00e9 \\t\"\n", "[{\"s\":\"caf\xc3\xa9 \\t\"}]");
}

static void test_json_input(void **state) {
        expect_json(
                "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"spec\": {\"containers\": [{\"name\": \"a\", \"ports\": [{\"containerPort\": 80}]}]}}",
                "[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":80}]}]}}]");
}

static void test_multi_doc(void **state) {
        expect_json("a: 1\n---\nb: 2\n---\n# only a comment\n---\n...\n---\nc: 3\n", "[{\"a\":1},{\"b\":2},{\"c\":3}]");
        expect_json("---\n---\n", "[]");
        expect_json("", "[]");
        expect_json("# nothing\n", "[]");
        expect_json("--- scalar\n", "[\"scalar\"]");
}

static void test_refusals(void **state) {
        expect_error("a: &x 1\nb: *x\n", -EINVAL, "aliases are not supported");
        expect_error("a: &x {b: 1}\n", -EINVAL, "line 1:4: aliases are not supported");
        expect_error("base: &b {x: 1}\nuse:\n  <<: *b\n", -EINVAL, "aliases are not supported");
        expect_error("a: 1\na: 2\n", -EINVAL, "line 2:4: duplicate key \"a\"");
        expect_error("? [a, b]\n: c\n", -EINVAL, "mapping keys must be scalars");
        expect_error("a: .inf\n", -EINVAL, "cannot represent .inf in JSON");
        expect_error("a: !!int abc\n", -EINVAL, "cannot decode \"abc\" as tag:yaml.org,2002:int");
        expect_error("a: !custom x\n", -EINVAL, "unsupported tag !custom");
        expect_error("a: \"x\\0y\"\n", -EINVAL, "NUL characters are not supported");
}

static void test_syntax_errors(void **state) {
        expect_error("a: 1\nb: [1, 2\n", -EINVAL, "line 3:1: did not find expected ',' or ']'");
        expect_error("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n bad: indent\n", -EINVAL, "line 5:");
        expect_error("a: b: c\n", -EINVAL, "line 1:5: mapping values are not allowed in this context");
        expect_error("a: \"unterminated\n", -EINVAL, "line 2:1: found unexpected end of stream");
        expect_error("a: \tb\x01\n", -EINVAL, "line 1:");
        expect_error("a: \xff\xfe\n", -EINVAL, "line 1:4: invalid leading UTF-8 octet");
        expect_error("ok: 1\nnext: \xc3\n", -EINVAL, "line 2:8: invalid trailing UTF-8 octet");
}

static void test_caps(void **state) {
        char *deep, *p;
        size_t n;

        /* depth: YAML_MAX_DEPTH levels are fine, one more is refused */
        n = YAML_MAX_DEPTH;
        deep = malloc(2 * n + 2);
        p = deep;
        for (size_t i = 0; i < n; i++)
                *p++ = '[';
        for (size_t i = 0; i < n; i++)
                *p++ = ']';
        *p = '\0';
        json_decref(convert(deep));
        free(deep);

        n = YAML_MAX_DEPTH + 1;
        deep = malloc(2 * n + 2);
        p = deep;
        for (size_t i = 0; i < n; i++)
                *p++ = '[';
        for (size_t i = 0; i < n; i++)
                *p++ = ']';
        *p = '\0';
        expect_error(deep, -EINVAL, "line 1:65: nesting too deep");
        free(deep);

        /* node count */
        n = YAML_MAX_NODES + 10;
        deep = malloc(n * 3 + 4);
        p = deep;
        *p++ = '[';
        for (size_t i = 0; i < n; i++) {
                *p++ = '1';
                *p++ = ',';
        }
        p[-1] = ']';
        *p = '\0';
        expect_error(deep, -EINVAL, "too many nodes");
        free(deep);

        /* input size */
        {
                struct ck_error *err = NULL;
                json_t *docs = NULL;
                assert_int_equal(yaml_to_json_docs("a", YAML_MAX_SIZE + 1, &docs, &err), -EINVAL);
                assert_null(docs);
                assert_non_null(strstr(ck_error_message(err), "too large"));
                ck_error_free(err);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_scalars),  cmocka_unit_test(test_json_input),    cmocka_unit_test(test_multi_doc),
                cmocka_unit_test(test_refusals), cmocka_unit_test(test_syntax_errors), cmocka_unit_test(test_caps),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
