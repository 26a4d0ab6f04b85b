/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/cpumanager/cpumanager.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fs.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "apis/qos.h"
#include "apis/resource.h"

#define STATE_FILE "cpu_manager_state"
#define STATE_MAX (4 * 1024 * 1024)

struct entry {
        char *uid, *name;
        struct cpuset cpus;
};

struct cpumanager {
        bool is_static;
        struct cpumanager_options opts;
        struct cpu_topology *topo;
        struct cpuset reserved, reserved_physical, def;
        struct entry *entries;
        size_t n_entries;
        char *reuse_uid; /* cpusToReuse: the CPUs of a pod's finished init containers */
        struct cpuset reuse;
        char *state_path;
        int cpus_per_core;
};

/* ---------------------------------------------------------------- guaranteed CPUs */

static bool has_cpu_request(const struct container *c) {
        return resource_list_get(&c->resources.requests, "cpu") != NULL;
}

int cpumanager_container_guaranteed_cpus(const struct pod *p, const struct container *c) {
        const struct quantity *q;

        /* a pod with pod-level resources gets none while PodLevelResourceManagers is off (beta off in v1.37) */
        if (pod_qos_class(p) != QOS_GUARANTEED || pod_level_resources_set(p))
                return 0;
        q = resource_list_get(&c->resources.requests, "cpu");
        if (!q || q->value * 1000 != q->milli || q->value > CPUSET_MAX)
                return 0;
        return (int) q->value;
}

int cpumanager_pod_guaranteed_cpus(const struct pod *p) {
        int init = 0, restartable = 0, app = 0;

        for (size_t i = 0; i < p->spec.n_init_containers; i++) {
                const struct container *c = &p->spec.init_containers[i];
                int n;
                if (!has_cpu_request(c))
                        continue;
                n = cpumanager_container_guaranteed_cpus(p, c);
                if (container_is_sidecar(c))
                        restartable += n;
                else if (restartable + n > init)
                        init = restartable + n;
        }
        for (size_t i = 0; i < p->spec.n_containers; i++)
                if (has_cpu_request(&p->spec.containers[i]))
                        app += cpumanager_container_guaranteed_cpus(p, &p->spec.containers[i]);
        return MAX(init, app + restartable);
}

/* ---------------------------------------------------------------- state */

static struct entry *find_entry(const struct cpumanager *m, const char *uid, const char *name) {
        for (size_t i = 0; i < m->n_entries; i++)
                if (streq(m->entries[i].uid, uid) && streq(m->entries[i].name, name))
                        return &m->entries[i];
        return NULL;
}

static int add_entry(struct cpumanager *m, const char *uid, const char *name, const struct cpuset *cpus) {
        struct entry *n = reallocarray(m->entries, m->n_entries + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        m->entries = n;
        n[m->n_entries] = (struct entry) { .uid = strdup(uid), .name = strdup(name), .cpus = *cpus };
        if (!n[m->n_entries].uid || !n[m->n_entries].name) {
                free(n[m->n_entries].uid);
                free(n[m->n_entries].name);
                return -ENOMEM;
        }
        m->n_entries++;
        return 0;
}

static void drop_entry(struct cpumanager *m, struct entry *e) {
        size_t i = (size_t) (e - m->entries);
        free(e->uid);
        free(e->name);
        memmove(e, e + 1, (m->n_entries - i - 1) * sizeof(*e));
        m->n_entries--;
}

uint32_t cpumanager_fnv32a(const char *s) {
        uint32_t h = 2166136261u;
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                h ^= *p;
                h *= 16777619u;
        }
        return h;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* the sorted distinct pod uids, and for one pod its sorted entries (indexes) */
static char **sorted_uids(char *const *uids, size_t n) {
        _cleanup_strv_free_ char **l = NULL;
        for (size_t i = 0; i < n; i++)
                if (!strv_contains(l, uids[i]) && strv_extend(&l, uids[i]) < 0)
                        return NULL;
        if (!l)
                l = calloc(1, sizeof(char *));
        if (l)
                qsort(l, strv_length(l), sizeof(char *), cmp_str);
        return TAKE_PTR(l);
}

static int append(char **buf, size_t *len, const char *s) {
        size_t n = strlen(s);
        char *nb = realloc(*buf, *len + n + 1);
        if (!nb)
                return -ENOMEM;
        memcpy(nb + *len, s, n + 1);
        *buf = nb;
        *len += n;
        return 0;
}

static int append_json_string(char **buf, size_t *len, const char *s) {
        json_auto_t *j = json_string(s);
        _cleanup_free_ char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
        return t ? append(buf, len, t) : -ENOMEM;
}

/* Go's json.Marshal of CPUManagerCheckpointData (fields in struct order, map keys sorted, entries omitted when
 * empty) and spew's dump of the v2 struct for its checksum (dump.ForHash, with the legacy struct name) */
int cpumanager_state_format(const char *policy, const struct cpuset *def, char *const *uids, char *const *names,
                            const struct cpuset *sets, size_t n, char **ret) {
        _cleanup_strv_free_ char **pods = sorted_uids(uids, n);
        _cleanup_free_ char *data = NULL, *spew = NULL, *entries = NULL, *out = NULL, *hashin = NULL;
        size_t dl = 0, sl = 0, el = 0;
        char defs[CPUSET_TEXT_MAX];
        json_auto_t *top = NULL, *jentries = NULL;
        int r = 0;

        if (!pods)
                return -ENOMEM;
        cpuset_format(def, defs, sizeof(defs));
        r = append(&data, &dl, "{\"policyName\":");
        r = r ?: append_json_string(&data, &dl, policy);
        r = r ?: append(&data, &dl, ",\"defaultCpuSet\":");
        r = r ?: append_json_string(&data, &dl, defs);
        r = r ?: append(&spew, &sl, "map[");
        jentries = json_object();
        if (!jentries)
                return -ENOMEM;
        for (size_t p = 0; !r && pods[p]; p++) {
                _cleanup_strv_free_ char **cnames = NULL;
                json_t *jpod = json_object();

                if (!jpod || json_object_set_new(jentries, pods[p], jpod) < 0)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++)
                        if (streq(uids[i], pods[p]) && strv_extend(&cnames, names[i]) < 0)
                                return -ENOMEM;
                qsort(cnames, strv_length(cnames), sizeof(char *), cmp_str);
                r = r ?: append(&entries, &el, p ? "," : "");
                r = r ?: append_json_string(&entries, &el, pods[p]);
                r = r ?: append(&entries, &el, ":{");
                r = r ?: append(&spew, &sl, p ? " " : "");
                r = r ?: append(&spew, &sl, pods[p]);
                r = r ?: append(&spew, &sl, ":map[");
                for (size_t c = 0; !r && cnames && cnames[c]; c++) {
                        char s[CPUSET_TEXT_MAX];
                        for (size_t i = 0; i < n; i++)
                                if (streq(uids[i], pods[p]) && streq(names[i], cnames[c]))
                                        cpuset_format(&sets[i], s, sizeof(s));
                        if (json_object_set_new(jpod, cnames[c], json_string(s)) < 0)
                                return -ENOMEM;
                        r = r ?: append(&entries, &el, c ? "," : "");
                        r = r ?: append_json_string(&entries, &el, cnames[c]);
                        r = r ?: append(&entries, &el, ":");
                        r = r ?: append_json_string(&entries, &el, s);
                        r = r ?: append(&spew, &sl, c ? " " : "");
                        r = r ?: append(&spew, &sl, cnames[c]);
                        r = r ?: append(&spew, &sl, ":");
                        r = r ?: append(&spew, &sl, s);
                }
                r = r ?: append(&entries, &el, "}");
                r = r ?: append(&spew, &sl, "]");
        }
        r = r ?: append(&spew, &sl, "]");
        if (!r && n > 0) {
                r = append(&data, &dl, ",\"entries\":{");
                r = r ?: append(&data, &dl, entries);
                r = r ?: append(&data, &dl, "}");
        }
        r = r ?: append(&data, &dl, "}");
        if (r < 0)
                return r;
        if (asprintf(&hashin,
                     "(*state.CPUManagerCheckpoint){PolicyName:(string)%s DefaultCPUSet:(string)%s "
                     "Entries:(map[string]map[string]string)%s Checksum:(checksum.Checksum)0}",
                     policy, defs, spew) < 0) {
                hashin = NULL;
                return -ENOMEM;
        }
        {
                _cleanup_free_ char *dh = NULL;
                if (asprintf(&dh, "(string)%s", data) < 0)
                        return -ENOMEM;
                top = json_pack("{s:s, s:s, s:O, s:I, s:s, s:I}", "policyName", policy, "defaultCpuSet", defs,
                                "entries", jentries, "checksum", (json_int_t) cpumanager_fnv32a(hashin), "data", data,
                                "dataChecksum", (json_int_t) cpumanager_fnv32a(dh));
        }
        if (!top)
                return -ENOMEM;
        if (n == 0)
                (void) json_object_del(top, "entries");
        out = json_dumps(top, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!out)
                return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}

static int store(struct cpumanager *m) {
        _cleanup_free_ char *text = NULL;
        _cleanup_free_ char **uids = NULL, **names = NULL;
        _cleanup_free_ struct cpuset *sets = NULL;
        int r;

        if (!m->state_path)
                return 0;
        uids = calloc(m->n_entries + 1, sizeof(char *));
        names = calloc(m->n_entries + 1, sizeof(char *));
        sets = calloc(m->n_entries + 1, sizeof(*sets));
        if (!uids || !names || !sets)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_entries; i++) {
                uids[i] = m->entries[i].uid;
                names[i] = m->entries[i].name;
                sets[i] = m->entries[i].cpus;
        }
        r = cpumanager_state_format(m->is_static ? "static" : "none", &m->def, uids, names, sets, m->n_entries, &text);
        if (r < 0)
                return r;
        r = write_file_atomic(m->state_path, text, strlen(text), 0644);
        if (r < 0)
                log_error("cpumanager: cannot write %s: %s", m->state_path, strerror(-r));
        return r;
}

static int corrupt(struct cpumanager *m, struct ck_error **ret_error, const char *why) {
        return ck_error_set(ret_error, -EINVAL,
                            "could not restore state from checkpoint: %s, please drain this node and delete the CPU "
                            "manager checkpoint file \"%s\" before restarting Kubelet",
                            why, m->state_path);
}

static int restore(struct cpumanager *m, struct ck_error **ret_error) {
        _cleanup_free_ char *text = NULL;
        json_auto_t *top = NULL, *data = NULL;
        json_t *src, *entries, *pod, *v;
        const char *policy, *defs, *uid, *name;
        bool check_v2 = false;
        size_t size;
        int r;

        r = read_full_file(m->state_path, STATE_MAX, &text, &size);
        if (r == -ENOENT)
                return 0; /* a new state, written by the caller */
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot read %s: %s", m->state_path, strerror(-r));
        top = json_loadb(text, size, 0, NULL);
        if (!json_is_object(top))
                return corrupt(m, ret_error, "checkpoint is corrupted");
        src = top;
        if (json_object_get(top, "data")) {
                const char *d = json_string_value(json_object_get(top, "data"));
                _cleanup_free_ char *dh = NULL;
                json_t *cs = json_object_get(top, "dataChecksum");
                if (!d || !json_is_integer(cs))
                        return corrupt(m, ret_error, "checkpoint is corrupted");
                if (asprintf(&dh, "(string)%s", d) < 0)
                        return -ENOMEM;
                if ((uint64_t) json_integer_value(cs) != cpumanager_fnv32a(dh))
                        return corrupt(m, ret_error, "checkpoint is corrupted");
                data = json_loads(d, 0, NULL);
                if (!json_is_object(data))
                        return corrupt(m, ret_error, "checkpoint is corrupted");
                src = data;
        } else if (json_object_get(top, "dataChecksum"))
                return corrupt(m, ret_error, "checkpoint is corrupted");
        else
                check_v2 = json_integer_value(json_object_get(top, "checksum")) != 0;
        /* JSON object keys are matched case-insensitively by Go's decoder: defaultCpuSet or defaultCPUSet */
        policy = json_string_value(json_object_get(src, "policyName"));
        defs = json_string_value(json_object_get(src, "defaultCpuSet"))
                       ?: json_string_value(json_object_get(src, "defaultCPUSet"));
        if (!streq_ptr(policy, m->is_static ? "static" : "none"))
                return ck_error_set(ret_error, -EINVAL,
                                    "could not restore state from checkpoint: configured policy \"%s\" differs from "
                                    "state checkpoint policy \"%s\", please drain this node and delete the CPU "
                                    "manager checkpoint file \"%s\" before restarting Kubelet",
                                    m->is_static ? "static" : "none", strempty(policy), m->state_path);
        if (cpuset_parse(strempty(defs), &m->def) < 0)
                return ck_error_set(ret_error, -EINVAL, "could not parse default CPU set \"%s\"", strempty(defs));
        entries = json_object_get(src, "entries");
        json_object_foreach(entries, uid, pod) {
                if (!json_is_object(pod))
                        return ck_error_set(ret_error, -EINVAL, "%s: entries.%s: not a map of containers",
                                            m->state_path, uid);
                json_object_foreach(pod, name, v) {
                        struct cpuset s;
                        if (cpuset_parse(strempty(json_string_value(v)), &s) < 0)
                                return ck_error_set(ret_error, -EINVAL,
                                                    "could not parse cpuset \"%s\" for container \"%s\" in pod \"%s\"",
                                                    strempty(json_string_value(v)), name, uid);
                        r = add_entry(m, uid, name, &s);
                        if (r < 0)
                                return r;
                }
        }
        if (check_v2) {
                /* a v2/v3 checkpoint (no data section): its checksum is the one we compute for the v2 fields */
                _cleanup_free_ char *again = NULL, **uids = calloc(m->n_entries + 1, sizeof(char *)),
                                    **names = calloc(m->n_entries + 1, sizeof(char *));
                _cleanup_free_ struct cpuset *sets = calloc(m->n_entries + 1, sizeof(*sets));
                json_auto_t *j = NULL;

                if (!uids || !names || !sets)
                        return -ENOMEM;
                for (size_t i = 0; i < m->n_entries; i++) {
                        uids[i] = m->entries[i].uid;
                        names[i] = m->entries[i].name;
                        sets[i] = m->entries[i].cpus;
                }
                r = cpumanager_state_format(policy, &m->def, uids, names, sets, m->n_entries, &again);
                if (r < 0)
                        return r;
                j = json_loads(again, 0, NULL);
                if (json_integer_value(json_object_get(j, "checksum")) !=
                    json_integer_value(json_object_get(top, "checksum")))
                        return corrupt(m, ret_error, "checkpoint is corrupted");
        }
        return 0;
}

/* ---------------------------------------------------------------- start */

static bool go_parse_bool(const char *s, bool *ret) {
        /* strconv.ParseBool */
        static const char *const t[] = { "1", "t", "T", "TRUE", "true", "True" }, *const f[] = { "0",     "f",
                                                                                                 "F",     "FALSE",
                                                                                                 "false", "False" };
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                if (streq(s, t[i]))
                        return *ret = true, true;
        for (size_t i = 0; i < ELEMENTSOF(f); i++)
                if (streq(s, f[i]))
                        return *ret = false, true;
        return false;
}

/* NewStaticPolicyOptions and ValidateStaticPolicyOptions: unknown names, gates, values, incompatible pairs as
 * upstream; then distribute-cpus-across-cores, which ckubelet does not implement, set to true refuses the start
 * (never ignored) */
static int parse_options(const struct cpumanager_config *cfg, const struct cpu_topology *topo,
                         struct cpumanager_options *o, struct ck_error **err) {
        static const struct {
                const char *name;
                char stage; /* 'a'lpha, 'b'eta, 'g'a */
        } known[] = { { "full-pcpus-only", 'g' },        { "distribute-cpus-across-numa", 'b' },
                      { "align-by-socket", 'a' },        { "distribute-cpus-across-cores", 'a' },
                      { "strict-cpu-reservation", 'b' }, { "prefer-align-cpus-by-uncorecache", 'b' } };
        bool across_numa = false, across_cores = false, uncore = false;

        for (size_t i = 0; cfg->option_names && cfg->option_names[i]; i++) {
                const char *name = cfg->option_names[i], *value = strempty(cfg->option_values[i]);
                char stage = 0;
                bool b;

                for (size_t k = 0; k < ELEMENTSOF(known); k++)
                        if (streq(name, known[k].name))
                                stage = known[k].stage;
                if (!stage)
                        return ck_error_set(err, -EINVAL,
                                            "new static policy error: unknown CPU Manager Policy option: \"%s\"", name);
                if (stage == 'a' && !cfg->alpha_options)
                        return ck_error_set(err, -EINVAL,
                                            "new static policy error: CPU Manager Policy Alpha-level Options not "
                                            "enabled, but option \"%s\" provided",
                                            name);
                if (stage == 'b' && cfg->beta_options_off)
                        return ck_error_set(err, -EINVAL,
                                            "new static policy error: CPU Manager Policy Beta-level Options not "
                                            "enabled, but option \"%s\" provided",
                                            name);
                if (!go_parse_bool(value, &b))
                        return ck_error_set(err, -EINVAL,
                                            "new static policy error: bad value for option \"%s\": strconv.ParseBool: "
                                            "parsing \"%s\": invalid syntax",
                                            name, value);
                if (streq(name, "full-pcpus-only"))
                        o->full_pcpus_only = b;
                else if (streq(name, "strict-cpu-reservation"))
                        o->strict_cpu_reservation = b;
                else if (streq(name, "align-by-socket"))
                        o->align_by_socket = b;
                else if (streq(name, "distribute-cpus-across-numa"))
                        across_numa = b;
                else if (streq(name, "distribute-cpus-across-cores"))
                        across_cores = b;
                else
                        uncore = b;
        }
        if (o->full_pcpus_only && across_cores)
                return ck_error_set(err, -EINVAL,
                                    "new static policy error: static policy options full-pcpus-only and "
                                    "distribute-cpus-across-cores can not be used at the same time");
        if (across_numa && across_cores)
                return ck_error_set(err, -EINVAL,
                                    "new static policy error: static policy options distribute-cpus-across-numa and "
                                    "distribute-cpus-across-cores can not be used at the same time");
        if (uncore && across_cores)
                return ck_error_set(err, -EINVAL,
                                    "new static policy error: static policy options prefer-align-cpus-by-uncorecache "
                                    "and distribute-cpus-across-cores can not be used at the same time");
        if (uncore && across_numa)
                return ck_error_set(err, -EINVAL,
                                    "new static policy error: static policy options prefer-align-cpus-by-uncorecache "
                                    "and distribute-cpus-across-numa can not be used at the same time");
        if (o->align_by_socket) {
                if (cfg->tm_single_numa_node)
                        return ck_error_set(err, -EINVAL,
                                            "new static policy error: Topolgy manager single-numa-node policy is "
                                            "incompatible with CPUManager align-by-socket policy option");
                if (topo->n_sockets > topo->n_numa)
                        return ck_error_set(err, -EINVAL,
                                            "new static policy error: Align by socket is not compatible with hardware "
                                            "where number of sockets are more than number of NUMA");
        }
        o->distribute_cpus_across_numa = across_numa;
        o->prefer_align_cpus_by_uncorecache = uncore;
        /* a real option of upstream's that ckubelet does not implement: refused, not ignored */
        if (across_cores)
                return ck_error_set(err, -EOPNOTSUPP,
                                    "new static policy error: CPU Manager Policy option \"%s\" is not supported by "
                                    "ckubelet",
                                    "distribute-cpus-across-cores");
        return 0;
}

static int validate_state(struct cpumanager *m, struct ck_error **err) {
        struct cpuset all = cputopo_all(m->topo), known = m->def;
        char a[CPUSET_TEXT_MAX], b[CPUSET_TEXT_MAX];

        if (m->opts.strict_cpu_reservation)
                all = cpuset_diff(&all, &m->reserved);
        if (cpuset_empty(&m->def)) {
                if (m->n_entries > 0)
                        return ck_error_set(err, -EINVAL, "default cpuset cannot be empty");
                m->def = all;
                return 0;
        }
        if (m->opts.strict_cpu_reservation) {
                struct cpuset x = cpuset_and(&m->reserved, &m->def);
                if (!cpuset_empty(&x))
                        return ck_error_set(
                                err, -EINVAL,
                                "some of strictly reserved cpus: \"%s\" are present in defaultCpuSet: \"%s\"",
                                cpuset_format(&x, a, sizeof(a)), cpuset_format(&m->def, b, sizeof(b)));
        } else {
                struct cpuset x = cpuset_and(&m->reserved, &m->def);
                if (!cpuset_equal(&x, &m->reserved))
                        return ck_error_set(err, -EINVAL,
                                            "not all reserved cpus: \"%s\" are present in defaultCpuSet: \"%s\"",
                                            cpuset_format(&m->reserved, a, sizeof(a)),
                                            cpuset_format(&m->def, b, sizeof(b)));
        }
        for (size_t i = 0; i < m->n_entries; i++) {
                struct cpuset x = cpuset_and(&m->def, &m->entries[i].cpus);
                if (!cpuset_empty(&x))
                        return ck_error_set(err, -EINVAL,
                                            "pod: %s, container: %s cpuset: \"%s\" overlaps with default cpuset \"%s\"",
                                            m->entries[i].uid, m->entries[i].name,
                                            cpuset_format(&m->entries[i].cpus, a, sizeof(a)),
                                            cpuset_format(&m->def, b, sizeof(b)));
                known = cpuset_union(&known, &m->entries[i].cpus);
        }
        if (!cpuset_equal(&known, &all))
                return ck_error_set(err, -EINVAL,
                                    "current set of available CPUs \"%s\" doesn't match with CPUs in state \"%s\"",
                                    cpuset_format(&all, a, sizeof(a)), cpuset_format(&known, b, sizeof(b)));
        return 0;
}

int cpumanager_new(const struct cpumanager_config *cfg, struct cpu_topology *topo, struct cpumanager **ret,
                   struct ck_error **ret_error) {
        _cleanup_(cpumanager_freep) struct cpumanager *m = NULL;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m) {
                cputopo_free(topo);
                return -ENOMEM;
        }
        m->topo = topo;
        if (isempty(cfg->policy) || streq(cfg->policy, "none"))
                m->is_static = false;
        else if (streq(cfg->policy, "static"))
                m->is_static = true;
        else
                return ck_error_set(ret_error, -EINVAL, "unknown policy: \"%s\"", cfg->policy);
        if (cfg->state_dir && asprintf(&m->state_path, "%s/%s", cfg->state_dir, STATE_FILE) < 0) {
                m->state_path = NULL;
                return -ENOMEM;
        }
        m->cpus_per_core = cputopo_cpus_per_core(topo);
        if (m->is_static) {
                int n_reserved;
                struct cpuset all = cputopo_all(topo);

                r = parse_options(cfg, topo, &m->opts, ret_error);
                if (r < 0)
                        return r;
                if (!isempty(cfg->reserved_system_cpus)) {
                        struct cpuset x;
                        if (cpuset_parse(cfg->reserved_system_cpus, &m->reserved) < 0)
                                return ck_error_set(ret_error, -EINVAL,
                                                    "invalid configuration: unable to parse reservedSystemCPUs "
                                                    "(--reserved-cpus) %s",
                                                    cfg->reserved_system_cpus);
                        x = cpuset_diff(&m->reserved, &all);
                        if (!cpuset_empty(&x))
                                return ck_error_set(ret_error, -EINVAL,
                                                    "new static policy error: reservedSystemCPUs %s: CPUs that are not "
                                                    "on this node",
                                                    cfg->reserved_system_cpus);
                        n_reserved = cpuset_count(&m->reserved);
                } else {
                        n_reserved = (int) ((cfg->reserved_cpu_milli + 999) / 1000);
                        if (n_reserved == 0)
                                return ck_error_set(ret_error, -EINVAL,
                                                    "[cpumanager] the static policy requires systemreserved.cpu + "
                                                    "kubereserved.cpu to be greater than zero");
                        /* policy.takeByTopology: with the options, as upstream */
                        r = cpumanager_take_by_topology_opts(topo, &all, n_reserved, &m->opts, &m->reserved, NULL);
                        if (r < 0)
                                return ck_error_set(ret_error, -EINVAL,
                                                    "new static policy error: [cpumanager] unable to reserve the "
                                                    "required amount of CPUs (size of  did not equal %d)",
                                                    n_reserved);
                }
                CPUSET_FOREACH(c, &m->reserved) {
                        const struct cpu_info *ci = cputopo_cpu(topo, c);
                        struct cpuset core = cputopo_cpus_in(topo, CPU_LEVEL_CORE, ci->core);
                        m->reserved_physical = cpuset_union(&m->reserved_physical, &core);
                }
        }
        if (m->state_path) {
                r = restore(m, ret_error);
                if (r < 0)
                        return r;
        }
        if (m->is_static) {
                r = validate_state(m, ret_error);
                if (r < 0)
                        return r;
        } else if (m->n_entries > 0 || !cpuset_empty(&m->def)) {
                /* the none policy keeps nothing */
                for (size_t i = m->n_entries; i > 0; i--)
                        drop_entry(m, &m->entries[i - 1]);
                m->def = (struct cpuset) {};
        }
        r = store(m);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot write %s: %s", m->state_path, strerror(-r));
        *ret = TAKE_PTR(m);
        return 0;
}

struct cpumanager *cpumanager_free(struct cpumanager *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_entries; i++) {
                free(m->entries[i].uid);
                free(m->entries[i].name);
        }
        free(m->entries);
        free(m->reuse_uid);
        free(m->state_path);
        cputopo_free(m->topo);
        free(m);
        return NULL;
}

bool cpumanager_is_static(const struct cpumanager *m) {
        return m && m->is_static;
}

const struct cpu_topology *cpumanager_topology(const struct cpumanager *m) {
        return m->topo;
}

/* ---------------------------------------------------------------- allocation */

static void update_reuse(struct cpumanager *m, const struct pod *p, const struct container *c, const struct cpuset *s) {
        if (!streq_ptr(m->reuse_uid, p->uid)) {
                free(m->reuse_uid);
                m->reuse_uid = strdup(p->uid);
                m->reuse = (struct cpuset) {};
        }
        for (size_t i = 0; i < p->spec.n_init_containers; i++)
                if (streq(p->spec.init_containers[i].name, c->name) && !container_is_sidecar(c)) {
                        m->reuse = cpuset_union(&m->reuse, s);
                        return;
                }
        m->reuse = cpuset_diff(&m->reuse, s);
}

/* the CPUs of the NUMA nodes in mask */
static struct cpuset cpus_in_numa_mask(const struct cpu_topology *t, uint64_t mask) {
        struct cpuset s = {};
        for (size_t i = 0; i < t->n; i++)
                if (t->cpus[i].numa >= 0 && t->cpus[i].numa < 64 && (mask >> t->cpus[i].numa & 1))
                        cpuset_add(&s, t->cpus[i].cpu);
        return s;
}

/* the sockets of the CPUs of the NUMA nodes in mask (SocketsInNUMANodes), as a mask of socket ids */
static uint64_t sockets_of_numa_mask(const struct cpu_topology *t, uint64_t mask) {
        uint64_t sockets = 0;
        for (size_t i = 0; i < t->n; i++)
                if (t->cpus[i].numa >= 0 && t->cpus[i].numa < 64 && (mask >> t->cpus[i].numa & 1) &&
                    t->cpus[i].socket >= 0 && t->cpus[i].socket < 64)
                        sockets |= UINT64_C(1) << t->cpus[i].socket;
        return sockets;
}

/* getAlignedCPUs: the CPUs of the affinity's NUMA nodes, or with align-by-socket of their whole sockets */
static struct cpuset aligned_cpus(const struct cpumanager *m, uint64_t mask) {
        struct cpuset s = {};
        uint64_t sockets;

        if (!m->opts.align_by_socket)
                return cpus_in_numa_mask(m->topo, mask);
        sockets = sockets_of_numa_mask(m->topo, mask);
        for (size_t i = 0; i < m->topo->n; i++)
                if (m->topo->cpus[i].socket >= 0 && m->topo->cpus[i].socket < 64 &&
                    (sockets >> m->topo->cpus[i].socket & 1))
                        cpuset_add(&s, m->topo->cpus[i].cpu);
        return s;
}

/* allocateCPUs: the aligned CPUs first, the rest (when they are not enough) from anywhere */
static int take_aligned(const struct cpumanager *m, const struct cpuset *avail, int n, const struct tm_hint *affinity,
                        struct cpuset *ret, struct ck_error **ret_error) {
        struct cpuset got = {}, rest;
        int r;

        if (affinity && affinity->has_affinity) {
                struct cpuset in = aligned_cpus(m, affinity->affinity), aligned = cpuset_and(avail, &in);
                int k = MIN(n, cpuset_count(&aligned));
                if (k > 0) {
                        r = cpumanager_take_by_topology_opts(m->topo, &aligned, k, &m->opts, &got, ret_error);
                        if (r < 0)
                                return r;
                }
        }
        if (cpuset_count(&got) < n) {
                struct cpuset more;
                rest = cpuset_diff(avail, &got);
                r = cpumanager_take_by_topology_opts(m->topo, &rest, n - cpuset_count(&got), &m->opts, &more,
                                                     ret_error);
                if (r < 0)
                        return r;
                got = cpuset_union(&got, &more);
        }
        *ret = got;
        return 0;
}

static int allocate_container(struct cpumanager *m, const struct pod *p, const struct container *c,
                              const struct tm_hint *affinity, struct ck_error **ret_error) {
        int n = cpumanager_container_guaranteed_cpus(p, c);
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct entry *e;
        struct cpuset avail, got;
        int r;

        if (n == 0)
                return 0;
        e = find_entry(m, p->uid, c->name);
        if (e) {
                update_reuse(m, p, c, &e->cpus);
                return 0;
        }
        if (m->opts.full_pcpus_only) {
                struct cpuset phys = cpuset_diff(&m->def, &m->reserved_physical);
                int avail_phys = cpuset_count(&phys);
                if (n % m->cpus_per_core != 0)
                        return ck_error_set_reason(
                                ret_error, -ENOSPC, "SMTAlignmentError",
                                "SMT Alignment Error: requested %d cpus not multiple cpus per core = %d", n,
                                m->cpus_per_core);
                if (n > avail_phys)
                        return ck_error_set_reason(ret_error, -ENOSPC, "SMTAlignmentError",
                                                   "SMT Alignment Error: not enough free physical CPUs: available "
                                                   "physical CPUs = %d, requested CPUs = %d, CPUs per core = %d",
                                                   avail_phys, n, m->cpus_per_core);
        }
        avail = cpuset_diff(&m->def, &m->reserved);
        if (streq_ptr(m->reuse_uid, p->uid))
                avail = cpuset_union(&avail, &m->reuse);
        r = take_aligned(m, &avail, n, affinity, &got, &err);
        if (r < 0)
                return ck_error_set_reason(ret_error, -ENOSPC, "UnexpectedAdmissionError",
                                           "Allocate failed due to %s, which is unexpected", ck_error_message(err));
        r = add_entry(m, p->uid, c->name, &got);
        if (r < 0)
                return r;
        m->def = cpuset_diff(&m->def, &got);
        update_reuse(m, p, c, &got);
        return 0;
}

int cpumanager_allocate(struct cpumanager *m, const struct pod *p, const struct container *c,
                        const struct tm_hint *affinity, struct ck_error **ret_error) {
        if (!m || !m->is_static)
                return 0;
        return allocate_container(m, p, c, affinity, ret_error);
}

struct cpumanager_mark cpumanager_mark(const struct cpumanager *m) {
        return (struct cpumanager_mark) { .n_entries = m ? m->n_entries : 0, .def = m ? m->def : (struct cpuset) {} };
}

void cpumanager_rollback(struct cpumanager *m, const struct cpumanager_mark *mark) {
        /* nothing of a refused pod is kept */
        if (!m)
                return;
        while (m->n_entries > mark->n_entries)
                drop_entry(m, &m->entries[m->n_entries - 1]);
        m->def = mark->def;
}

void cpumanager_commit(struct cpumanager *m, const struct cpumanager_mark *mark) {
        if (m && m->n_entries != mark->n_entries)
                (void) store(m);
}

/* ---------------------------------------------------------------- topology hints */

struct hint_gen {
        const struct cpumanager *m;
        const struct cpuset *avail, *reuse;
        int request, min_size;
        struct tm_hint *v;
        size_t n;
        bool oom;
};

static void hint_mask(uint64_t mask, void *userdata) {
        struct hint_gen *g = userdata;
        struct cpuset in = cpus_in_numa_mask(g->m->topo, mask), x;
        int matching;

        if (cpuset_count(&in) >= g->request && tm_count(mask) < g->min_size)
                g->min_size = tm_count(mask);
        x = cpuset_diff(g->reuse, &in);
        if (!cpuset_empty(&x))
                return; /* a reusable CPU outside the mask */
        x = cpuset_and(g->avail, &in);
        matching = cpuset_count(g->reuse) + cpuset_count(&x);
        if (matching < g->request)
                return;
        if (g->n % 16 == 0) {
                struct tm_hint *nv = reallocarray(g->v, g->n + 16, sizeof(*nv));
                if (!nv) {
                        g->oom = true;
                        return;
                }
                g->v = nv;
        }
        g->v[g->n++] = (struct tm_hint) { .affinity = mask, .has_affinity = true };
}

/* isHintSocketAligned: the hint's NUMA nodes span as few sockets as the narrowest hint needs */
static bool hint_socket_aligned(const struct cpu_topology *t, uint64_t mask, int min_size) {
        int per_socket = t->n_sockets > 0 ? t->n_numa / t->n_sockets : 0, min_sockets;

        if (per_socket == 0)
                return false;
        min_sockets = (min_size + per_socket - 1) / per_socket;
        return tm_count(sockets_of_numa_mask(t, mask)) == min_sockets;
}

/* generateCPUTopologyHints: with align-by-socket, the socket-aligned hints are preferred too */
static int add_cpu_hints(const struct cpumanager *m, const struct cpuset *avail, const struct cpuset *reuse,
                         int request, struct tm_hints *acc) {
        int nodes[TM_MAX_NUMA];
        size_t n = 0;
        struct hint_gen g = { .m = m, .avail = avail, .reuse = reuse, .request = request };
        int r;

        for (size_t i = 0; i < m->topo->n; i++) {
                int id = m->topo->cpus[i].numa;
                bool seen = false;
                for (size_t j = 0; j < n; j++)
                        seen = seen || nodes[j] == id;
                if (!seen && id >= 0 && id < TM_MAX_NUMA && n < TM_MAX_NUMA)
                        nodes[n++] = id;
        }
        for (size_t i = 1; i < n; i++) /* ascending, as CPUDetails.NUMANodes().List() */
                for (size_t j = i; j > 0 && nodes[j - 1] > nodes[j]; j--) {
                        int t = nodes[j];
                        nodes[j] = nodes[j - 1];
                        nodes[j - 1] = t;
                }
        g.min_size = (int) n;
        tm_iterate_masks(nodes, n, hint_mask, &g);
        if (g.oom) {
                free(g.v);
                return -ENOMEM;
        }
        for (size_t i = 0; i < g.n; i++)
                g.v[i].preferred = (m->opts.align_by_socket &&
                                    hint_socket_aligned(m->topo, g.v[i].affinity, g.min_size)) ||
                                   tm_count(g.v[i].affinity) == g.min_size;
        r = tm_hints_add(acc, g.v, g.n);
        free(g.v);
        return r;
}

int cpumanager_container_hints(const struct cpumanager *m, const struct pod *p, const struct container *c,
                               struct tm_hints *acc) {
        int request = m && m->is_static ? cpumanager_container_guaranteed_cpus(p, c) : 0;
        const struct entry *e;
        struct cpuset avail, none = {}, reuse;

        if (request == 0)
                return tm_hints_add_any(acc); /* no preference */
        e = find_entry(m, p->uid, c->name);
        if (e) {
                if (cpuset_count(&e->cpus) != request)
                        return tm_hints_add(acc, NULL, 0);
                return add_cpu_hints(m, &e->cpus, &none, request, acc);
        }
        avail = cpuset_diff(&m->def, &m->reserved);
        reuse = streq_ptr(m->reuse_uid, p->uid) ? m->reuse : none;
        return add_cpu_hints(m, &avail, &reuse, request, acc);
}

int cpumanager_pod_hints(const struct cpumanager *m, const struct pod *p, struct tm_hints *acc) {
        int request = m && m->is_static ? cpumanager_pod_guaranteed_cpus(p) : 0;
        struct cpuset assigned = {}, avail, none = {}, reuse;

        if (request == 0)
                return tm_hints_add_any(acc);
        for (size_t i = 0; i < p->spec.n_init_containers + p->spec.n_containers; i++) {
                const struct container *c = i < p->spec.n_init_containers
                                                    ? &p->spec.init_containers[i]
                                                    : &p->spec.containers[i - p->spec.n_init_containers];
                const struct entry *e = find_entry(m, p->uid, c->name);
                if (!e)
                        continue;
                if (cpuset_count(&e->cpus) != cpumanager_container_guaranteed_cpus(p, c))
                        return tm_hints_add(acc, NULL, 0);
                assigned = cpuset_union(&assigned, &e->cpus);
        }
        if (cpuset_count(&assigned) == request)
                return add_cpu_hints(m, &assigned, &none, request, acc);
        avail = cpuset_diff(&m->def, &m->reserved);
        reuse = streq_ptr(m->reuse_uid, p->uid) ? m->reuse : none;
        reuse = cpuset_union(&reuse, &assigned);
        return add_cpu_hints(m, &avail, &reuse, request, acc);
}

bool cpumanager_container_cpus(const struct cpumanager *m, const char *pod_uid, const char *container,
                               struct cpuset *ret) {
        const struct entry *e;

        if (!m || !m->is_static)
                return false;
        e = find_entry(m, pod_uid, container);
        *ret = e ? e->cpus : m->def;
        return true;
}

struct cpuset cpumanager_exclusive_cpus(const struct cpumanager *m, const char *pod_uid, const char *container) {
        const struct entry *e = m ? find_entry(m, pod_uid, container) : NULL;
        return e ? e->cpus : (struct cpuset) {};
}

struct cpuset cpumanager_allocatable(const struct cpumanager *m) {
        struct cpuset all;
        if (!m || !m->is_static)
                return (struct cpuset) {};
        all = cputopo_all(m->topo);
        return cpuset_diff(&all, &m->reserved);
}

struct cpuset cpumanager_shared_pool(const struct cpumanager *m) {
        return m ? m->def : (struct cpuset) {};
}

struct cpuset cpumanager_all_exclusive(const struct cpumanager *m) {
        struct cpuset s = {};
        for (size_t i = 0; m && i < m->n_entries; i++)
                s = cpuset_union(&s, &m->entries[i].cpus);
        return s;
}

const struct cpumanager_options *cpumanager_options(const struct cpumanager *m) {
        return &m->opts;
}

size_t cpumanager_n_entries(const struct cpumanager *m) {
        return m ? m->n_entries : 0;
}

static bool release(struct cpumanager *m, struct entry *e) {
        struct cpuset rel = e->cpus, before = m->def;
        char *uid = strdup(e->uid);

        for (size_t i = 0; i < m->n_entries; i++)
                if (&m->entries[i] != e && streq(m->entries[i].uid, e->uid))
                        rel = cpuset_diff(&rel, &m->entries[i].cpus);
        drop_entry(m, e);
        m->def = cpuset_union(&m->def, &rel);
        free(uid);
        return !cpuset_equal(&before, &m->def);
}

bool cpumanager_remove_container(struct cpumanager *m, const char *pod_uid, const char *container) {
        struct entry *e = m ? find_entry(m, pod_uid, container) : NULL;
        bool changed;

        if (!e)
                return false;
        changed = release(m, e);
        (void) store(m);
        return changed;
}

bool cpumanager_remove_stale(struct cpumanager *m, char *const *active_uids) {
        bool changed = false, dropped = false;

        if (!m)
                return false;
        for (size_t i = m->n_entries; i > 0; i--)
                if (!strv_contains((char **) active_uids, m->entries[i - 1].uid)) {
                        changed = release(m, &m->entries[i - 1]) || changed;
                        dropped = true;
                }
        if (dropped)
                (void) store(m);
        return changed;
}
