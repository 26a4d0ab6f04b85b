/* SPDX-License-Identifier: Apache-2.0 */
/* The memory manager, Static policy (src/cm/memorymanager) on the fake topology (4 NUMA nodes of 16 GiB, 512 huge
 * pages of 2 MiB each): machine discovery, reservedMemory validation, the default machine state, hints, allocation
 * with and without the topology manager's affinity, the state file across restarts, release, and the checkpoint's
 * text and checksums against what upstream's code writes for the same state. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "apis/manifest.h"
#include "apis/pod.h"
#include "basic/error.h"
#include "basic/fs.h"
#include "basic/macro.h"
#include "cm/fake_sysfs.h"
#include "cm/memorymanager/memorymanager.h"

#define GIB (UINT64_C(1) << 30)
#define MIB (UINT64_C(1) << 20)

static char *tmpdir(void) {
        char tmpl[] = "/tmp/ckubelet-mm-state-XXXXXX";
        return strdup(mkdtemp(tmpl));
}

static struct pod *parse_pod(const char *uid, const char *spec) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct pod *p;

        assert_true(asprintf(&yaml, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: %s}\nspec:\n%s", uid, spec) >
                    0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

#define GU(name, mem)                                                                                         \
        "  - name: " name "\n    image: x\n    resources: {limits: {cpu: \"1\", memory: " mem "}, requests: " \
        "{cpu: \"1\", memory: " mem "}}\n"

static struct memorymanager *new_static(const char *sysfs, const char *dir, struct ck_error **err) {
        struct mm_machine mach;
        struct memorymanager *m = NULL;

        assert_int_equal(mm_machine_discover(sysfs, &mach, NULL), 0);
        if (memorymanager_new(&(struct mm_config) { .policy = "Static",
                                                    .reserved_memory = "0:memory=1Gi",
                                                    .node_reservation = "memory=1Gi",
                                                    .state_dir = dir },
                              &mach, &m, err) < 0)
                return NULL;
        return m;
}

static void test_machine(void **state) {
        _cleanup_free_ char *sysfs = fake_sysfs_new();
        struct mm_machine mach;
        char buf[64];

        assert_int_equal(mm_machine_discover(sysfs, &mach, NULL), 0);
        assert_int_equal(mach.n, 4);
        for (size_t i = 0; i < 4; i++) {
                assert_int_equal(mach.nodes[i].id, (int) i);
                assert_int_equal(mach.nodes[i].memory, 16 * GIB);
                assert_int_equal(mach.nodes[i].n_hugepages, 2);
        }
        assert_string_equal(mm_hugepage_name(2048, buf, sizeof(buf)), "hugepages-2Mi");
        assert_string_equal(mm_hugepage_name(1048576, buf, sizeof(buf)), "hugepages-1Gi");
        assert_string_equal(mm_hugepage_name(64, buf, sizeof(buf)), "hugepages-64Ki");
        /* the node ids are tm_numa_discover's: its refusal of node ids past 63 is the memory manager's too */
        fake_sysfs_put(sysfs, "devices/system/node/node64/meminfo", "Node 64 MemTotal: 1 kB\n");
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                assert_int_equal(mm_machine_discover(sysfs, &mach, &err), -EOPNOTSUPP);
                assert_non_null(strstr(ck_error_message(err), "NUMA node 64"));
        }
        /* a node without meminfo: an error naming the file */
        fake_sysfs_rm(sysfs);
        fake_sysfs_make(sysfs);
        {
                _cleanup_free_ char *path = NULL;
                _cleanup_ck_error_ struct ck_error *err = NULL;
                assert_true(asprintf(&path, "%s/devices/system/node/node2/meminfo", sysfs) > 0);
                assert_int_equal(unlink(path), 0);
                assert_int_equal(mm_machine_discover(sysfs, &mach, &err), -ENOENT);
                assert_non_null(strstr(ck_error_message(err), "node2/meminfo"));
        }
        /* no node directory at all: no NUMA memory (the caller reports the machine's as node 0) */
        fake_sysfs_rm(sysfs);
        fake_sysfs_put(sysfs, "devices/system/cpu/online", "0-1\n");
        assert_int_equal(mm_machine_discover(sysfs, &mach, NULL), 0);
        assert_int_equal(mach.n, 0);
        fake_sysfs_rm(sysfs);
}

/* validateReservedMemory / NewPolicyStatic's refusals, in upstream's words */
static void test_reserved(void **state) {
        _cleanup_free_ char *sysfs = fake_sysfs_new();
        struct mm_machine mach;
        struct memorymanager *m = NULL;
        struct mm_reservation *rl = NULL;
        size_t n = 0;
        struct ck_error *err = NULL;
        static const struct {
                const char *reserved, *node, *error;
        } cases[] = {
                { "0:memory=1Gi", "memory=2Gi",
                  "the total amount \"1Gi\" of type \"memory\" is not equal to the value \"2Gi\" determined by Node "
                  "Allocatable feature" },
                { "0:memory=512Mi;1:memory=512Mi,hugepages-2Mi=2Mi", "memory=1Gi",
                  "the total amount \"2Mi\" of type \"hugepages-2Mi\" is not equal to the value \"0\" determined by "
                  "Node Allocatable feature" },
                { "", "", "[memorymanager] you should specify the system reserved memory" },
                { "7:memory=1Gi", "memory=1Gi",
                  "the reserved memory configuration references a NUMA node 7 that does not exist on this machine" },
                { "0:cpu=1", "memory=1Gi",
                  "invalid configuration: the limit type \"cpu\" for NUMA node 0 is not supported, only [memory "
                  "hugepages-<HugePageSize>] is accepted" },
                { "0=memory", "", NULL /* a syntax error: named, not matched */ },
        };

        assert_int_equal(mm_machine_discover(sysfs, &mach, NULL), 0);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                assert_int_equal(memorymanager_new(&(struct mm_config) { .policy = "Static",
                                                                         .reserved_memory = cases[i].reserved,
                                                                         .node_reservation = cases[i].node },
                                                   &mach, &m, &err),
                                 -EINVAL);
                if (cases[i].error)
                        assert_string_equal(ck_error_message(err), cases[i].error);
                err = ck_error_free(err);
        }
        assert_int_equal(memorymanager_new(&(struct mm_config) { .policy = "static" }, &mach, &m, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "unknown policy: \"static\"");
        err = ck_error_free(err);
        /* the split of the reservation over nodes is free; the total must match */
        assert_int_equal(memorymanager_new(&(struct mm_config) { .policy = "Static",
                                                                 .reserved_memory = "0:memory=512Mi;1:memory=612Mi",
                                                                 .node_reservation = "memory=1124Mi" },
                                           &mach, &m, NULL),
                         0);
        m = memorymanager_free(m);
        assert_int_equal(mm_parse_reserved("0:memory=1Gi,hugepages-2Mi=4Mi; 1:memory=2Gi", &rl, &n, NULL), 0);
        assert_int_equal(n, 3);
        assert_int_equal(rl[1].bytes, 4 * MIB);
        assert_int_equal(rl[2].numa, 1);
        mm_reservations_free(rl, n);
        fake_sysfs_rm(sysfs);
}

struct blocks {
        char text[512];
        size_t len;
};

static void collect_block(const char *resource, uint64_t size, uint64_t numa_mask, void *userdata) {
        struct blocks *b = userdata;
        char mask[64];
        b->len += (size_t) snprintf(b->text + b->len, sizeof(b->text) - b->len, "%s%s=%llu@%s", b->len ? " " : "",
                                    resource, (unsigned long long) size, tm_mask_format(numa_mask, mask, sizeof(mask)));
}

static void assert_blocks(const struct memorymanager *m, const char *uid, const char *c, const char *want) {
        struct blocks b = {};
        memorymanager_foreach_container_block(m, uid, c, collect_block, &b);
        assert_string_equal(b.text, want);
}

static void hints_text(const struct tm_hints *h, char *buf, size_t size) {
        size_t len = 0;
        buf[0] = 0;
        for (size_t l = 0; l < h->n; l++)
                for (size_t i = 0; i < h->lists[l].n; i++) {
                        const struct tm_hint *x = &h->lists[l].v[i];
                        char one[64];
                        len += (size_t) snprintf(buf + len, size - len, "%s%s{%s%s}", len ? " " : "",
                                                 i == 0 && l > 0 ? "| " : "",
                                                 x->has_affinity ? tm_mask_format(x->affinity, one, sizeof(one))
                                                                 : "nil",
                                                 x->preferred ? " P" : "");
                }
}

static void test_allocate(void **state) {
        _cleanup_free_ char *sysfs = fake_sysfs_new(), *dir = tmpdir(), *path = NULL, *text = NULL;
        struct memorymanager *m = new_static(sysfs, dir, NULL);
        struct pod *small = parse_pod("small", "  containers:\n" GU("a", "1Gi")),
                   *big = parse_pod("big", "  containers:\n" GU("a", "20Gi")),
                   *burst = parse_pod("burst", "  containers:\n  - {name: a, image: x, resources: {requests: {memory: "
                                               "1Gi}}}\n"),
                   *huge = parse_pod("huge", "  containers:\n  - name: a\n    image: x\n    resources: {limits: "
                                             "{cpu: \"1\", memory: 1Gi, hugepages-2Mi: 4Mi}, requests: {cpu: \"1\", "
                                             "memory: 1Gi, hugepages-2Mi: 4Mi}}\n");
        struct tm_hints h = {};
        _cleanup_ck_error_ struct ck_error *aerr = NULL;
        char buf[1024];
        struct mm_mark *mark;

        assert_non_null(m);
        {
                /* the checksums upstream's code computes for this state (its structs, go-spew and encoding/json, run
                 * on this file's data): the v1 checksum of spew's dump, the data's */
                _cleanup_free_ char *t = NULL;
                assert_int_equal(memorymanager_state_text(m, &t), 0);
                assert_non_null(strstr(t, "\"checksum\":4188005364,\"data\":"));
                assert_non_null(strstr(t, "\"dataChecksum\":3831928075}"));
        }
        /* the default state: node 0 has 16Gi - 1Gi reserved - 1Gi of huge pages allocatable */
        {
                struct blocks b = {};
                memorymanager_foreach_allocatable(m, collect_block, &b);
                assert_string_equal(b.text, "hugepages-2Mi=1073741824@0 memory=15032385536@0 "
                                            "hugepages-2Mi=1073741824@1 memory=16106127360@1 "
                                            "hugepages-2Mi=1073741824@2 memory=16106127360@2 "
                                            "hugepages-2Mi=1073741824@3 memory=16106127360@3");
        }
        /* hints: every set of nodes that fits; the single nodes preferred */
        assert_int_equal(memorymanager_container_hints(m, small, &small->spec.containers[0], &h), 0);
        hints_text(&h, buf, sizeof(buf));
        assert_string_equal(buf, "{0 P} {1 P} {2 P} {3 P} {0-1} {0,2} {0,3} {1-2} {1,3} {2-3} {0-2} {0-1,3} {0,2-3} "
                                 "{1-3} {0-3}");
        tm_hints_done(&h);
        /* not Guaranteed: no preference, nothing allocated */
        assert_int_equal(memorymanager_container_hints(m, burst, &burst->spec.containers[0], &h), 0);
        hints_text(&h, buf, sizeof(buf));
        assert_string_equal(buf, "{nil P}");
        tm_hints_done(&h);
        assert_int_equal(memorymanager_allocate(m, burst, &burst->spec.containers[0], NULL, &aerr), 0);
        assert_int_equal(memorymanager_n_entries(m), 0);
        /* the topology manager's affinity */
        mark = memorymanager_mark(m);
        assert_int_equal(memorymanager_allocate(m, small, &small->spec.containers[0],
                                                &(struct tm_hint) {
                                                        .affinity = 0x2, .has_affinity = true, .preferred = true },
                                                &aerr),
                         0);
        memorymanager_commit(m, mark);
        assert_blocks(m, "small", "a", "memory=1073741824@1");
        assert_int_equal(memorymanager_container_nodes(m, "small", "a"), 0x2);
        /* the hints of an allocated container are its blocks' */
        assert_int_equal(memorymanager_container_hints(m, small, &small->spec.containers[0], &h), 0);
        hints_text(&h, buf, sizeof(buf));
        assert_string_equal(buf, "{1 P}");
        tm_hints_done(&h);
        /* 20Gi fits on no single node: two nodes preferred, not those with node 1 (it has a single-node
         * assignment) */
        assert_int_equal(memorymanager_container_hints(m, big, &big->spec.containers[0], &h), 0);
        hints_text(&h, buf, sizeof(buf));
        assert_string_equal(buf, "{0,2 P} {0,3 P} {2-3 P} {0,2-3}");
        tm_hints_done(&h);
        /* no affinity (topology manager none): the default hint, the narrowest preferred */
        mark = memorymanager_mark(m);
        assert_int_equal(memorymanager_allocate(m, big, &big->spec.containers[0], NULL, &aerr), 0);
        memorymanager_commit(m, mark);
        assert_blocks(m, "big", "a", "memory=21474836480@0,2");
        /* a single node of that group is not offered any more */
        assert_int_equal(memorymanager_container_hints(m, small,
                                                       &(struct container) {
                                                               .name = (char *) "b",
                                                               .resources = small->spec.containers[0].resources },
                                                       &h),
                         0);
        hints_text(&h, buf, sizeof(buf));
        assert_string_equal(buf, "{1 P} {3 P} {0,2}");
        tm_hints_done(&h);
        /* an affinity that violates the group: refused, nothing kept */
        mark = memorymanager_mark(m);
        assert_int_equal(memorymanager_allocate(m, huge, &huge->spec.containers[0],
                                                &(struct tm_hint) { .affinity = 0x3, .has_affinity = true }, &aerr),
                         -ENOSPC);
        assert_string_equal(ck_error_reason(aerr), "UnexpectedAdmissionError");
        assert_string_equal(ck_error_message(aerr),
                            "Allocate failed due to [memorymanager] preferred hint violates NUMA node "
                            "allocation, which is unexpected");
        aerr = ck_error_free(aerr);
        memorymanager_rollback(m, mark);
        assert_int_equal(memorymanager_n_entries(m), 2);
        /* huge pages: a block per resource */
        mark = memorymanager_mark(m);
        assert_int_equal(memorymanager_allocate(m, huge, &huge->spec.containers[0],
                                                &(struct tm_hint) { .affinity = 0x8, .has_affinity = true }, &aerr),
                         0);
        memorymanager_commit(m, mark);
        assert_blocks(m, "huge", "a", "hugepages-2Mi=4194304@3 memory=1073741824@3");

        /* the state file: kept across a restart (a kill -9 never double-allocates) */
        assert_true(asprintf(&path, "%s/memory_manager_state", dir) > 0);
        assert_int_equal(read_full_file(path, 1 << 20, &text, NULL), 0);
        /* as upstream's code writes this state, byte for byte (checked with its structs, go-spew and
         * encoding/json): the checksums */
        assert_non_null(strstr(text, "\"checksum\":592935578,\"data\":"));
        assert_non_null(strstr(text, "\"dataChecksum\":2056779399}"));
        assert_non_null(strstr(text, "{\"policyName\":\"Static\",\"machineState\":{\"0\":{\"numberOfAssignments\":1,"));
        assert_non_null(strstr(text, "\"entries\":{\"big\":{\"a\":[{\"numaAffinity\":[0,2],\"type\":\"memory\","
                                     "\"size\":21474836480}]},"));
        m = memorymanager_free(m);
        m = new_static(sysfs, dir, NULL);
        assert_non_null(m);
        assert_int_equal(memorymanager_n_entries(m), 3);
        assert_blocks(m, "big", "a", "memory=21474836480@0,2");
        mark = memorymanager_mark(m);
        assert_int_equal(memorymanager_allocate(m, big, &big->spec.containers[0], NULL, &aerr), 0);
        memorymanager_commit(m, mark);
        assert_int_equal(memorymanager_n_entries(m), 3);
        /* release: the memory is free again; the group dissolves with its last assignment */
        memorymanager_remove_container(m, "big", "a");
        memorymanager_remove_stale(m, (char *[]) { (char *) "small", NULL });
        assert_int_equal(memorymanager_n_entries(m), 1);
        assert_int_equal(memorymanager_container_hints(m, big, &big->spec.containers[0], &h), 0);
        hints_text(&h, buf, sizeof(buf));
        assert_string_equal(buf, "{0,2 P} {0,3 P} {2-3 P} {0,2-3}");
        tm_hints_done(&h);
        m = memorymanager_free(m);

        /* a state that does not add up refuses the start */
        {
                _cleanup_free_ char *bad = NULL;
                struct ck_error *err = NULL;
                m = new_static(sysfs, dir, NULL);
                assert_int_equal(memorymanager_state_text(m, &bad), 0);
                m = memorymanager_free(m);
                *strstr(bad, "\"dataChecksum\":") = 0;
                strcat(bad, "\"dataChecksum\":1}");
                assert_int_equal(write_file_atomic(path, bad, strlen(bad), 0644), 0);
                assert_null(new_static(sysfs, dir, &err));
                assert_non_null(strstr(ck_error_message(err), "checkpoint is corrupted"));
                err = ck_error_free(err);
                /* another policy's */
                assert_int_equal(write_file_atomic(path, "{}", 2, 0644), 0);
                assert_null(new_static(sysfs, dir, &err));
                err = ck_error_free(err);
        }
        pod_free(small);
        pod_free(big);
        pod_free(burst);
        pod_free(huge);
        fake_sysfs_rm(dir);
        fake_sysfs_rm(sysfs);
}

static void reserved_on(const struct memorymanager *m, int node, char *buf, size_t size) {
        _cleanup_free_ char *text = NULL;
        json_t *top, *n;
        char key[16];

        assert_int_equal(memorymanager_state_text(m, &text), 0);
        top = json_loads(text, 0, NULL);
        assert_non_null(top);
        snprintf(key, sizeof(key), "%d", node);
        n = json_object_get(json_object_get(top, "machineState"), key);
        snprintf(buf, size, "reserved=%lld n=%lld",
                 (long long) json_integer_value(
                         json_object_get(json_object_get(json_object_get(n, "memoryMap"), "memory"), "reserved")),
                 (long long) json_integer_value(json_object_get(n, "numberOfAssignments")));
        json_decref(top);
}

/* the memory of an init container is reused by the containers after it (initContainersReusableMemory): its block
 * shrinks by what they reuse, the machine state counts it once */
static void test_init_reuse(void **state) {
        _cleanup_free_ char *sysfs = fake_sysfs_new();
        struct memorymanager *m = new_static(sysfs, NULL, NULL);
        struct pod *p = parse_pod("withinit", "  initContainers:\n" GU("i", "2Gi") "  containers:\n" GU("a", "1Gi"));
        const struct tm_hint one = { .affinity = 0x2, .has_affinity = true, .preferred = true };
        _cleanup_ck_error_ struct ck_error *aerr = NULL;
        char buf[128];
        struct mm_mark *mark = memorymanager_mark(m);

        assert_int_equal(memorymanager_allocate(m, p, &p->spec.init_containers[0], &one, &aerr), 0);
        assert_int_equal(memorymanager_allocate(m, p, &p->spec.containers[0], &one, &aerr), 0);
        memorymanager_commit(m, mark);
        assert_blocks(m, "withinit", "i", "memory=1073741824@1");
        assert_blocks(m, "withinit", "a", "memory=1073741824@1");
        reserved_on(m, 1, buf, sizeof(buf));
        assert_string_equal(buf, "reserved=2147483648 n=2");
        /* a refused pod's allocations are rolled back with the blocks they shrank */
        {
                struct pod *q = parse_pod("withinit",
                                          "  initContainers:\n" GU("i", "2Gi") "  containers:\n" GU("a", "1Gi")
                                                  GU("b", "512Mi"));
                mark = memorymanager_mark(m);
                assert_int_equal(memorymanager_allocate(m, q, &q->spec.containers[1], &one, &aerr), 0);
                assert_blocks(m, "withinit", "i", "memory=536870912@1");
                memorymanager_rollback(m, mark);
                assert_blocks(m, "withinit", "i", "memory=1073741824@1");
                assert_blocks(m, "withinit", "b", "");
                pod_free(q);
        }
        memorymanager_remove_stale(m, (char *[]) { NULL });
        reserved_on(m, 1, buf, sizeof(buf));
        assert_string_equal(buf, "reserved=0 n=0");
        pod_free(p);
        memorymanager_free(m);
        fake_sysfs_rm(sysfs);
}

/* TestStaticPolicyAllocateWithInitContainers' cases: one NUMA node, memory and 1Gi huge pages, two init containers
 * then two app containers each asking the same of both; the init containers' blocks shrink as the app containers
 * reuse them, the machine state counts the pod once */
static void test_init_reuse_upstream(void **state) {
        static const struct {
                const char *name;
                int init1, init2, app1, app2; /* GiB of memory and of huge pages each */
                int alloc_gib;                /* the node's allocatable memory and huge pages */
                int want_init1, want_init2;   /* the init containers' blocks after */
                int want_reserved;            /* GiB */
        } cases[] = {
                { "init containers requests 1Gi and 2Gi, apps containers 3Gi and 4Gi", 1, 2, 3, 4, 8, 0, 0, 7 },
                { "init containers requests 4Gi and 3Gi, apps containers 2Gi and 1Gi", 4, 3, 2, 1, 8, 0, 1, 4 },
                { "init containers requests 7Gi and 4Gi, apps containers 4Gi and 3Gi", 7, 4, 4, 3, 8, 0, 0, 7 },
                { "init containers requests 7Gi and 4Gi, apps containers 5Gi and 2Gi", 7, 4, 5, 2, 10, 0, 0, 7 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct mm_machine mach = { .n = 1 };
                struct memorymanager *m = NULL;
                _cleanup_free_ char *yaml = NULL, *text = NULL;
                _cleanup_ck_error_ struct ck_error *aerr = NULL;
                char want[128], key[8];
                const char *names[] = { "initContainer1", "initContainer2", "container1", "container2" };
                int sizes[] = { cases[i].want_init1, cases[i].want_init2, cases[i].app1, cases[i].app2 };
                struct pod *p;
                json_t *top, *mem, *huge;

                mach.nodes[0] = (struct mm_machine_node) {
                        .id = 0,
                        .memory = 2 * (uint64_t) cases[i].alloc_gib * GIB, /* its memory and its huge pages */
                        .hugepages = { { .page_kb = 1048576, .pages = (uint64_t) cases[i].alloc_gib } },
                        .n_hugepages = 1,
                };
                assert_int_equal(memorymanager_new(&(struct mm_config) { .policy = "Static",
                                                                         .reserved_memory = "0:memory=512Mi",
                                                                         .node_reservation = "memory=512Mi" },
                                                   &mach, &m, NULL),
                                 0);
#define C(name, g)                                                                                             \
        "  - name: " name "\n    image: x\n    resources: {limits: {cpu: \"1\", memory: %dGi, hugepages-1Gi: " \
        "%dGi}, requests: {cpu: \"1\", memory: %dGi, hugepages-1Gi: %dGi}}\n"
                assert_true(asprintf(&yaml,
                                     "  initContainers:\n" C("initContainer1", )
                                             C("initContainer2", ) "  containers:\n" C("container1", )
                                                     C("container2", ),
                                     cases[i].init1, cases[i].init1, cases[i].init1, cases[i].init1, cases[i].init2,
                                     cases[i].init2, cases[i].init2, cases[i].init2, cases[i].app1, cases[i].app1,
                                     cases[i].app1, cases[i].app1, cases[i].app2, cases[i].app2, cases[i].app2,
                                     cases[i].app2) > 0);
#undef C
                p = parse_pod("pod1", yaml);
                for (size_t c = 0; c < 4; c++)
                        assert_int_equal(memorymanager_allocate(m, p,
                                                                c < 2 ? &p->spec.init_containers[c]
                                                                      : &p->spec.containers[c - 2],
                                                                &(struct tm_hint) {}, &aerr),
                                         0);
                for (size_t c = 0; c < 4; c++) {
                        snprintf(want, sizeof(want), "hugepages-1Gi=%llu@0 memory=%llu@0",
                                 (unsigned long long) sizes[c] * GIB, (unsigned long long) sizes[c] * GIB);
                        print_message("%s: %s\n", cases[i].name, names[c]);
                        assert_blocks(m, "pod1", names[c], want);
                }
                assert_int_equal(memorymanager_state_text(m, &text), 0);
                top = json_loads(text, 0, NULL);
                snprintf(key, sizeof(key), "0");
                mem = json_object_get(json_object_get(json_object_get(json_object_get(top, "machineState"), key),
                                                      "memoryMap"),
                                      "memory");
                huge = json_object_get(json_object_get(json_object_get(json_object_get(top, "machineState"), key),
                                                       "memoryMap"),
                                       "hugepages-1Gi");
                assert_int_equal(json_integer_value(json_object_get(mem, "reserved")),
                                 (long long) cases[i].want_reserved * (long long) GIB);
                assert_int_equal(json_integer_value(json_object_get(huge, "reserved")),
                                 (long long) cases[i].want_reserved * (long long) GIB);
                assert_int_equal(json_integer_value(json_object_get(mem, "free")),
                                 (long long) cases[i].alloc_gib * (long long) GIB - 512 * (long long) MIB -
                                         (long long) cases[i].want_reserved * (long long) GIB);
                assert_int_equal(json_integer_value(
                                         json_object_get(json_object_get(json_object_get(top, "machineState"), key),
                                                         "numberOfAssignments")),
                                 8);
                json_decref(top);
                pod_free(p);
                memorymanager_free(m);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_machine),
                cmocka_unit_test(test_reserved),
                cmocka_unit_test(test_allocate),
                cmocka_unit_test(test_init_reuse),
                cmocka_unit_test(test_init_reuse_upstream),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
