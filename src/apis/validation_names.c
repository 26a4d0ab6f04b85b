/* SPDX-License-Identifier: Apache-2.0 */
/* Name checks with the messages of k8s.io/apimachinery/pkg/util/validation (IsDNS1123Label,
 * IsDNS1123Subdomain, IsValidPortName, IsQualifiedName, IsValidLabelValue, IsRelaxedEnvVarName). The regular
 * expressions are matched by hand; the messages embed them as upstream does. */
#include <stdbool.h>
#include <string.h>

#include "apis/apis-internal.h"
#include "apis/pod.h"
#include "basic/string.h"

/* upstream RegexError(msg, fmt, examples...): "msg (e.g. 'a',  or 'b', regex used for validation is 'fmt')" —
 * the double space comes from how upstream joins the examples and is kept on purpose. */
#define EG1(a) " (e.g. '" a "', "
#define EG2(a, b) " (e.g. '" a "',  or '" b "', "
#define EG3(a, b, c) " (e.g. '" a "',  or '" b "',  or '" c "', "
#define REGEX(fmt) "regex used for validation is '" fmt "')"

#define DNS1123_LABEL_FMT "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define DNS1123_LABEL_MSG                                                                                       \
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start " \
        "and end with an alphanumeric character"
#define DNS1123_SUBDOMAIN_FMT DNS1123_LABEL_FMT "(\\." DNS1123_LABEL_FMT ")*"
#define DNS1123_SUBDOMAIN_MSG                                                                                 \
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and " \
        "must start and end with an alphanumeric character"
#define QNAME_FMT "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define QNAME_MSG                                                                                   \
        "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " \
        "alphanumeric character"
#define LABEL_VALUE_FMT "(" QNAME_FMT ")?"
#define LABEL_VALUE_MSG                                                                                      \
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and " \
        "must start and end with an alphanumeric character"

static const char dns1123_label_regex_err[] = DNS1123_LABEL_MSG EG2("my-name", "123-abc") REGEX(DNS1123_LABEL_FMT);
static const char dns1123_subdomain_regex_err[] = DNS1123_SUBDOMAIN_MSG EG1("example.com") REGEX(DNS1123_SUBDOMAIN_FMT);

static bool is_lower_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c) {
        return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ over s[0..n) */
static bool match_label(const char *s, size_t n) {
        if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!is_lower_alnum(s[i]) && s[i] != '-')
                        return false;
        return true;
}

static bool match_subdomain(const char *s, size_t n) {
        size_t start = 0;
        for (size_t i = 0; i <= n; i++)
                if (i == n || s[i] == '.') {
                        if (!match_label(s + start, i - start))
                                return false;
                        start = i + 1;
                }
        return true;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] */
static bool match_qname(const char *s, size_t n) {
        if (n == 0 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
                        return false;
        return true;
}

size_t check_dns1123_label(const char *s, const char *msgs[static NAME_MAX_MSGS]) {
        size_t n = 0, len = strlen(strempty(s));
        s = strempty(s);
        if (len > 63)
                msgs[n++] = "must be no more than 63 characters";
        if (!match_label(s, len)) {
                if (match_subdomain(s, len))
                        msgs[n++] = "must not contain dots";
                else
                        msgs[n++] = dns1123_label_regex_err;
        }
        return n;
}

size_t check_dns1123_subdomain(const char *s, const char *msgs[static NAME_MAX_MSGS]) {
        size_t n = 0, len = strlen(strempty(s));
        s = strempty(s);
        if (len > 253)
                msgs[n++] = "must be no more than 253 characters";
        if (!match_subdomain(s, len))
                msgs[n++] = dns1123_subdomain_regex_err;
        return n;
}

size_t check_iana_svc_name(const char *s, const char *msgs[static NAME_MAX_MSGS]) {
        size_t n = 0, len = strlen(strempty(s));
        bool charset = len > 0, letter = false;

        s = strempty(s);
        for (size_t i = 0; i < len; i++) {
                if (!is_lower_alnum(s[i]) && s[i] != '-')
                        charset = false;
                if (s[i] >= 'a' && s[i] <= 'z')
                        letter = true;
        }
        if (len > 15)
                msgs[n++] = "must be no more than 15 characters";
        if (!charset)
                msgs[n++] = "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)";
        if (!letter)
                msgs[n++] = "must contain at least one letter (a-z)";
        if (strstr(s, "--"))
                msgs[n++] = "must not contain consecutive hyphens";
        if (len > 0 && (s[0] == '-' || s[len - 1] == '-'))
                msgs[n++] = "must not begin or end with a hyphen";
        return n;
}

size_t check_qualified_name(const char *s, const char *msgs[static NAME_MAX_MSGS]) {
        static const char too_many[] = "a qualified name " QNAME_MSG EG3("MyName", "my.name", "123-abc")
                REGEX(QNAME_FMT) " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
        static const char prefix_too_long[] = "prefix part must be no more than 253 characters";
        static const char prefix_regex[] = "prefix part " DNS1123_SUBDOMAIN_MSG EG1("example.com")
                REGEX(DNS1123_SUBDOMAIN_FMT);
        static const char name_regex[] = "name part " QNAME_MSG EG3("MyName", "my.name", "123-abc") REGEX(QNAME_FMT);
        const char *slash, *name;
        size_t n = 0, name_len;

        s = strempty(s);
        slash = strchr(s, '/');
        if (slash && strchr(slash + 1, '/')) {
                msgs[n++] = too_many;
                return n;
        }
        if (slash) {
                size_t plen = (size_t) (slash - s);
                if (plen == 0)
                        msgs[n++] = "prefix part must be non-empty";
                else {
                        if (plen > 253)
                                msgs[n++] = prefix_too_long;
                        if (!match_subdomain(s, plen))
                                msgs[n++] = prefix_regex;
                }
                name = slash + 1;
        } else
                name = s;
        name_len = strlen(name);
        if (name_len == 0)
                msgs[n++] = "name part must be non-empty";
        else if (name_len > 63)
                msgs[n++] = "name part must be no more than 63 characters";
        if (!match_qname(name, name_len))
                msgs[n++] = name_regex;
        return n;
}

size_t check_label_value(const char *s, const char *msgs[static NAME_MAX_MSGS]) {
        static const char regex_err[] = LABEL_VALUE_MSG EG3("MyValue", "my_value", "12345") REGEX(LABEL_VALUE_FMT);
        size_t n = 0, len = strlen(strempty(s));
        s = strempty(s);
        if (len > 63)
                msgs[n++] = "must be no more than 63 characters";
        if (len > 0 && !match_qname(s, len))
                msgs[n++] = regex_err;
        return n;
}

/* IsRelaxedEnvVarName: what the apiserver and kubelet accept since RelaxedEnvironmentVariableValidation went GA
 * (v1.34, locked on): any printable ASCII character but '=' */
size_t check_relaxed_env_var_name(const char *s, const char *msgs[static NAME_MAX_MSGS]) {
        size_t n = 0;

        s = strempty(s);
        if (!*s)
                msgs[n++] = "environment variable name must be non-empty";
        for (; *s; s++)
                if (*s < 0x20 || *s > 0x7e || *s == '=') {
                        msgs[n++] = "a valid environment variable name must consist only of printable ASCII "
                                    "characters other than '='";
                        break;
                }
        return n;
}

#define FIRST_MSG(check, s)                        \
        ({                                         \
                const char *_m[NAME_MAX_MSGS];     \
                check((s), _m) > 0 ? _m[0] : NULL; \
        })

const char *validate_qualified_name(const char *s) {
        return FIRST_MSG(check_qualified_name, s);
}

const char *validate_label_value(const char *s) {
        return FIRST_MSG(check_label_value, s);
}

const char *validate_relaxed_env_var_name(const char *s) {
        return FIRST_MSG(check_relaxed_env_var_name, s);
}
