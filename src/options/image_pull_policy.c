/* SPDX-License-Identifier: Apache-2.0 */
#include "options/image_pull_policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string.h"

static const char *const policy_names[_IMAGE_PULL_VERIFY_POLICY_MAX] = {
        [IMAGE_PULL_NEVER_VERIFY] = "NeverVerify",
        [IMAGE_PULL_NEVER_VERIFY_PRELOADED_IMAGES] = "NeverVerifyPreloadedImages",
        [IMAGE_PULL_NEVER_VERIFY_ALLOWLISTED_IMAGES] = "NeverVerifyAllowlistedImages",
        [IMAGE_PULL_ALWAYS_VERIFY] = "AlwaysVerify",
};

int image_pull_verify_policy_from_string(const char *s) {
        if (!s)
                return -EINVAL;
        for (int i = 0; i < _IMAGE_PULL_VERIFY_POLICY_MAX; i++)
                if (strcmp(s, policy_names[i]) == 0)
                        return i;
        return -EINVAL;
}

/* Is the first path component a registry host (docker/distribution's rule: contains '.' or ':' or is
 * "localhost", or has upper case)? */
static bool component_is_domain(const char *s, size_t n) {
        if (n == 9 && strncmp(s, "localhost", 9) == 0)
                return true;
        for (size_t i = 0; i < n; i++)
                if (s[i] == '.' || s[i] == ':' || (s[i] >= 'A' && s[i] <= 'Z'))
                        return true;
        return false;
}

/* The length of the name part (no "@digest", no ":tag" after the last '/'). */
static size_t name_length(const char *image) {
        size_t n = strcspn(image, "@");
        const char *slash = NULL;
        for (size_t i = 0; i < n; i++)
                if (image[i] == '/')
                        slash = image + i;
        const char *start = slash ? slash + 1 : image;
        const char *colon = memchr(start, ':', n - (size_t) (start - image));
        if (colon)
                n = (size_t) (colon - image);
        return n;
}

char *image_pull_normalized_name(const char *image) {
        if (!image)
                return NULL;
        size_t n = name_length(image);
        if (n == 0)
                return NULL;
        const char *slash = memchr(image, '/', n);
        const char *domain = "docker.io", *rest = image;
        size_t dn = 9, rn = n;
        if (slash && component_is_domain(image, (size_t) (slash - image))) {
                domain = image;
                dn = (size_t) (slash - image);
                rest = slash + 1;
                rn = n - dn - 1;
        }
        if (dn == 15 && strncmp(domain, "index.docker.io", 15) == 0) {
                domain = "docker.io";
                dn = 9;
        }
        bool library = dn == 9 && strncmp(domain, "docker.io", 9) == 0 && !memchr(rest, '/', rn);
        char *out = NULL;
        if (asprintf(&out, "%.*s/%s%.*s", (int) dn, domain, library ? "library/" : "", (int) rn, rest) < 0)
                return NULL;
        return out;
}

static bool name_chars_valid(const char *s) {
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || strchr("._-/:@", *s) ||
                      (*s >= 'A' && *s <= 'Z')))
                        return false;
        return true;
}

int image_pull_allowlist_pattern_check(const char *pattern, char *why, size_t why_size) {
        size_t len = strlen(pattern);

        why[0] = '\0';
        if (len > 0 && (strchr(" \t\n\r\v\f", pattern[0]) || strchr(" \t\n\r\v\f", pattern[len - 1]))) {
                snprintf(why, why_size, "leading/trailing spaces are not allowed: %s", pattern);
                return -EINVAL;
        }
        bool wildcard = len >= 2 && strcmp(pattern + len - 2, "/*") == 0;
        size_t tn = wildcard ? len - 1 : len;
        if (tn == 0) {
                snprintf(why, why_size, "the supplied pattern is too short: %s", pattern);
                return -EINVAL;
        }
        if (memchr(pattern, '*', tn)) {
                snprintf(why, why_size, "not a valid wildcard pattern, only patterns ending with '/*' are allowed: %s",
                         pattern);
                return -EINVAL;
        }
        if (wildcard) {
                if (tn == 1) {
                        snprintf(why, why_size, "at least registry hostname is required");
                        return -EINVAL;
                }
                return 0;
        }
        if (!name_chars_valid(pattern) || pattern[0] == '/' || pattern[len - 1] == '/' || strstr(pattern, "//")) {
                snprintf(why, why_size, "failed to parse as an image name: invalid reference format");
                return -EINVAL;
        }
        if (strchr(pattern, '@') || name_length(pattern) != len) {
                snprintf(why, why_size, "neither tag nor digest is accepted in an image reference: %s", pattern);
                return -EINVAL;
        }
        return 0;
}

static bool allowlist_matches(const char *allowlist, const char *image) {
        char *name = image_pull_normalized_name(image);
        bool match = false;

        if (!name)
                return false;
        for (const char *p = allowlist; p && *p && !match;) {
                size_t n = strcspn(p, ",");
                if (n >= 2 && p[n - 1] == '*' && p[n - 2] == '/') {
                        /* a prefix ("registry/path/"), compared with the normalized name as upstream */
                        match = strncmp(name, p, n - 1) == 0;
                } else if (n > 0) {
                        char *entry = strndup(p, n), *norm = entry ? image_pull_normalized_name(entry) : NULL;
                        match = norm && strcmp(norm, name) == 0;
                        free(norm);
                        free(entry);
                }
                p += n;
                if (*p == ',')
                        p++;
        }
        free(name);
        return match;
}

bool image_pull_require_verification(enum image_pull_verify_policy p, const char *allowlist, const char *image,
                                     bool pulled_by_kubelet) {
        switch (p) {
        case IMAGE_PULL_NEVER_VERIFY:
                return false;
        case IMAGE_PULL_NEVER_VERIFY_PRELOADED_IMAGES:
                return pulled_by_kubelet;
        case IMAGE_PULL_NEVER_VERIFY_ALLOWLISTED_IMAGES:
                return !allowlist_matches(allowlist, image);
        case IMAGE_PULL_ALWAYS_VERIFY:
        default:
                return true;
        }
}
