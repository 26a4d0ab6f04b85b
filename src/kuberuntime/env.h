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

/* The container's environment in order: envFrom (ConfigMap/Secret keys, with their prefix; keys that are not
 * valid variable names are skipped and reported in ctx->report as an InvalidEnvironmentVariableNames event),
 * then env (values expanded against the variables defined so far; valueFrom resolved). On a configuration
 * error (a required ConfigMap/Secret or key missing, an object that could not be fetched) returns a negative
 * errno and, when ctx->report is set, the message upstream gives (`configmap "x" not found`, `couldn't find
 * key k in ConfigMap ns/x`). */
int kr_make_environment(const struct pod *pod, const struct container *c, const struct kc_build_context *ctx,
                        struct strmap *ret);

/* Fill cfg->envs, cfg->command and cfg->args (expanded against the environment, as
 * ExpandContainerCommandAndArgs). */
int kr_build_env(const struct pod *pod, const struct container *c, const struct kc_build_context *ctx,
                 Runtime__V1__ContainerConfig *cfg);
