/* SPDX-License-Identifier: Apache-2.0 */
/* /proc/self/mountinfo: see mountinfo.h. */

#include "volumes/mountinfo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fs.h"
#include "basic/macro.h"
#include "basic/string.h"

static void mount_done(struct vol_mount *m) {
        free(m->root);
        free(m->mount_point);
        free(m->options);
        free(m->fstype);
        free(m->source);
        free(m->super_options);
}

void vol_mountinfo_done(struct vol_mountinfo *mi) {
        if (!mi)
                return;
        for (size_t i = 0; i < mi->n; i++)
                mount_done(&mi->mounts[i]);
        free(mi->mounts);
        mi->mounts = NULL;
        mi->n = 0;
}

/* the kernel escapes space, tab, newline and backslash as \ooo */
static char *unescape(const char *s, size_t len) {
        char *out = malloc(len + 1), *o = out;

        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i++) {
                if (s[i] == '\\' && i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
                    s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
                        *o++ = (char) (((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0'));
                        i += 3;
                } else
                        *o++ = s[i];
        }
        *o = '\0';
        return out;
}

/* the next space-separated field of a line */
static bool next_field(const char **p, const char *end, const char **ret, size_t *ret_len) {
        const char *s = *p;

        while (s < end && *s == ' ')
                s++;
        if (s >= end)
                return false;
        *ret = s;
        while (s < end && *s != ' ')
                s++;
        *ret_len = (size_t) (s - *ret);
        *p = s;
        return true;
}

/* 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue */
static int parse_line(const char *line, const char *end, struct vol_mount *m) {
        const char *f[6], *p = line;
        size_t l[6];
        char buf[32];

        *m = (struct vol_mount) {};
        for (size_t i = 0; i < 6; i++)
                if (!next_field(&p, end, &f[i], &l[i]))
                        return -EBADMSG;
        for (size_t i = 0; i < 2; i++) {
                if (l[i] >= sizeof(buf))
                        return -EBADMSG;
                memcpy(buf, f[i], l[i]);
                buf[l[i]] = '\0';
                if (safe_atoi(buf, i == 0 ? &m->id : &m->parent_id) < 0)
                        return -EBADMSG;
        }
        if (l[2] >= sizeof(buf))
                return -EBADMSG;
        memcpy(buf, f[2], l[2]);
        buf[l[2]] = '\0';
        if (sscanf(buf, "%u:%u", &m->major, &m->minor) != 2)
                return -EBADMSG;
        /* optional fields up to the "-" separator */
        for (;;) {
                const char *o;
                size_t ol;
                if (!next_field(&p, end, &o, &ol))
                        return -EBADMSG;
                if (ol == 1 && o[0] == '-')
                        break;
        }
        {
                const char *t, *s, *so;
                size_t tl, sl, sol;
                if (!next_field(&p, end, &t, &tl) || !next_field(&p, end, &s, &sl))
                        return -EBADMSG;
                if (!next_field(&p, end, &so, &sol)) {
                        so = "";
                        sol = 0;
                }
                m->fstype = unescape(t, tl);
                m->source = unescape(s, sl);
                m->super_options = unescape(so, sol);
        }
        m->root = unescape(f[3], l[3]);
        m->mount_point = unescape(f[4], l[4]);
        m->options = unescape(f[5], l[5]);
        if (!m->root || !m->mount_point || !m->options || !m->fstype || !m->source || !m->super_options) {
                mount_done(m);
                return -ENOMEM;
        }
        return 0;
}

int vol_mountinfo_parse(const char *text, struct vol_mountinfo *ret) {
        struct vol_mountinfo mi = {};
        bool any_line = false;
        const char *p = text;

        while (p && *p) {
                const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);
                struct vol_mount m;
                int r;

                if (end > p) {
                        any_line = true;
                        r = parse_line(p, end, &m);
                        if (r == -ENOMEM) {
                                vol_mountinfo_done(&mi);
                                return r;
                        }
                        if (r >= 0) {
                                struct vol_mount *n = reallocarray(mi.mounts, mi.n + 1, sizeof(*n));
                                if (!n) {
                                        mount_done(&m);
                                        vol_mountinfo_done(&mi);
                                        return -ENOMEM;
                                }
                                mi.mounts = n;
                                mi.mounts[mi.n++] = m;
                        }
                }
                p = nl ? nl + 1 : end;
        }
        if (any_line && mi.n == 0)
                return -EBADMSG;
        *ret = mi;
        return 0;
}

int vol_mountinfo_read(const char *path, struct vol_mountinfo *ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_full_file(path ? path : "/proc/self/mountinfo", VOL_MOUNTINFO_MAX, &text, NULL);
        if (r < 0)
                return r;
        return vol_mountinfo_parse(text, ret);
}

const struct vol_mount *vol_mountinfo_find(const struct vol_mountinfo *mi, const char *mount_point) {
        for (size_t i = mi->n; i > 0; i--)
                if (streq(mi->mounts[i - 1].mount_point, mount_point))
                        return &mi->mounts[i - 1];
        return NULL;
}
