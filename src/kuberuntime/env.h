/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A container's environment (kubelet_pods.go makeEnvironmentVariables) and $(VAR) expansion
 * (third_party/forked/golang/expansion). */

#include "apis/pod.h"
#include "basic/strmap.h"
#include "cri/cri.h"

struct kc_build_context;

/* Expand $(VAR) references in input against env: "$$" is a literal "$", a reference to an undefined variable
 * and an unterminated "$(" are left as they are. -E2BIG when the result would exceed KR_ENV_VALUE_MAX. */
#define KR_ENV_VALUE_MAX (1024 * 1024)
int kr_expand(const char *input, const struct strmap *env, char **ret);

/* getServiceEnvVarMap + envvars.FromServices: the variables of the master service (master: default/kubernetes,
 * always) and, with enableServiceLinks (links), of the services of the pod's namespace (ns_services, an array of v1
 * Services): <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT, <NAME>_SERVICE_PORT_<PORT NAME>, and the Docker link
 * variables <NAME>_PORT, <NAME>_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR}; services without a cluster IP (headless)
 * give none. master and ns_services may be NULL. */
int kr_service_env(const json_t *master, const json_t *ns_services, const char *ns, bool links, struct strmap *ret);

/* The container's environment in order: envFrom (ConfigMap/Secret keys, with their prefix; keys that are not
 * valid variable names are skipped and reported in ctx->report as an InvalidEnvironmentVariableNames event),
 * then env (values expanded against the variables defined so far, then the service variables; valueFrom
 * resolved; a fileKeyRef from ctx->env_files, read on a worker beforehand), then the service variables it does not
 * define (kr_service_env, from ctx->objects). On a configuration
 * error (a required ConfigMap/Secret or key missing, an object that could not be fetched) returns a negative
 * errno and, when ctx->report is set, the message upstream gives (`configmap "x" not found`, `couldn't find
 * key k in ConfigMap ns/x`). */
int kr_make_environment(const struct pod *pod, const struct container *c, const struct kc_build_context *ctx,
                        struct strmap *ret);

/* Fill cfg->envs, cfg->command and cfg->args (expanded against the environment, as
 * ExpandContainerCommandAndArgs). */
int kr_build_env(const struct pod *pod, const struct container *c, const struct kc_build_context *ctx,
                 Runtime__V1__ContainerConfig *cfg);
