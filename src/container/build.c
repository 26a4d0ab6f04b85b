/* SPDX-License-Identifier: Apache-2.0 */
#include "container/build.h"

#include <stdlib.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/strv.h"

void kc_build_report_done(struct kc_build_report *r) {
        if (!r)
                return;
        ck_error_free(r->error);
        strv_free(r->event_reasons);
        strv_free(r->event_messages);
        *r = (struct kc_build_report) {};
}

int kc_build_report_event(struct kc_build_report *r, const char *reason, const char *message) {
        int k;
        if (!r)
                return 0;
        k = strv_extend(&r->event_reasons, reason);
        if (k < 0)
                return k;
        k = strv_extend(&r->event_messages, message);
        if (k < 0) {
                strv_remove_at(r->event_reasons, strv_length(r->event_reasons) - 1);
                return k;
        }
        return 0;
}

void kc_build_allocatable(const struct kc_build_context *ctx, struct resource_allocatable *ret) {
        struct sysinfo si;
        struct statvfs st;
        long n;

        *ret = (struct resource_allocatable) {
                .cpu_milli = ctx->alloc_cpu_milli,
                .memory = ctx->alloc_memory_bytes,
        };
        if (ret->cpu_milli <= 0) {
                n = sysconf(_SC_NPROCESSORS_ONLN);
                ret->cpu_milli = n > 0 ? (int64_t) n * 1000 : 1000;
        }
        if (ret->memory <= 0)
                ret->memory = sysinfo(&si) == 0 ? (int64_t) si.totalram * si.mem_unit : 0;
        if (statvfs(!isempty(ctx->root_dir) ? ctx->root_dir : "/", &st) == 0)
                ret->ephemeral_storage = (int64_t) st.f_blocks * (int64_t) st.f_frsize;
}
