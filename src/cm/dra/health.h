/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The DRA device health cache (pkg/kubelet/cm/dra healthinfo.go): the health each DRA driver last reported for
 * its devices through NodeWatchResources (DRAResourceHealth), per (driver, pool, device), with the time it came
 * (CLOCK_MONOTONIC) and the device's timeout (the plugin's health_check_timeout_seconds, else 30s). A device not
 * reported again within its timeout is Unknown; a device never reported is Unknown. Pure: no loop, no I/O; the
 * kubelet feeds it (kubelet/dra.c) and arms a timer at dra_health_next_expiry(). Also pure: which pods a change
 * touches and a container's allocatedResourcesStatus entry for a claim (manager.go's
 * UpdateAllocatedResourcesStatus). */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dra_claim;
struct dra_claims;

enum dra_health {
        DRA_HEALTH_UNKNOWN,
        DRA_HEALTH_HEALTHY,
        DRA_HEALTH_UNHEALTHY,
};

#define DRA_HEALTH_DEFAULT_TIMEOUT_USEC (30 * UINT64_C(1000000)) /* upstream's DefaultHealthTimeout */
#define DRA_HEALTH_MAX_TIMEOUT_SEC (INT64_C(365) * 24 * 3600)    /* a plugin's timeout is capped to this */
#define DRA_HEALTH_MAX_MESSAGE 1024                              /* longer: cut to 1021 + "..." (upstream) */
#define DRA_HEALTH_MAX_DEVICES 4096                              /* per driver, per message */
#define DRA_HEALTH_MAX_NAME 253                                  /* pool and device names */

struct dra_health_report {
        const char *pool, *device;
        enum dra_health health;
        int64_t timeout_sec; /* <= 0: the default */
        const char *message; /* NULL or "" when none */
};

/* A changed device: the keys of dra_health_update() and dra_health_expire(). */
struct dra_health_key {
        char *driver, *pool, *device;
};
void dra_health_keys_free(struct dra_health_key *keys, size_t n);

struct dra_health_cache;
int dra_health_cache_new(struct dra_health_cache **ret);
struct dra_health_cache *dra_health_cache_free(struct dra_health_cache *c); /* accepts NULL */

/* A driver's complete report at now_usec: reported devices are updated (their time is now); devices of the driver
 * not reported whose timeout passed become Unknown. -EINVAL (nothing changed) when a report has an empty or too
 * long pool or device name, or there are more than DRA_HEALTH_MAX_DEVICES. *ret_changed: the devices whose health,
 * message or timeout changed (upstream's changedDevices; a new device is a change). */
int dra_health_update(struct dra_health_cache *c, const char *driver, const struct dra_health_report *reports, size_t n,
                      uint64_t now_usec, struct dra_health_key **ret_changed, size_t *ret_n_changed);
/* The driver's stream ended: its devices are forgotten (Unknown). *ret_changed: those that were not Unknown. */
int dra_health_clear_driver(struct dra_health_cache *c, const char *driver, struct dra_health_key **ret_changed,
                            size_t *ret_n_changed);
/* Devices whose timeout passed at now_usec become Unknown (and are listed). */
int dra_health_expire(struct dra_health_cache *c, uint64_t now_usec, struct dra_health_key **ret_changed,
                      size_t *ret_n_changed);
/* The earliest time a device that is not Unknown times out; 0 when none. */
uint64_t dra_health_next_expiry(const struct dra_health_cache *c);

/* The device's health at now_usec (Unknown when unknown or timed out); *ret_message (optional): borrowed, NULL
 * when none. */
enum dra_health dra_health_get(const struct dra_health_cache *c, const char *driver, const char *pool,
                               const char *device, uint64_t now_usec, const char **ret_message);

/* The UIDs of the pods of the claims holding one of the changed devices (a new strv, each once, NULL when none). */
int dra_health_affected_pods(const struct dra_claims *claims, const struct dra_health_key *changed, size_t n,
                             char ***ret_pod_uids);

/* A container's allocatedResourcesStatus entry for its reference to the claim (resources.claims[]: name,
 * request): {name: "claim:<name>" or "claim:<name>/<request>", resources: [{resourceID, health, message?}]}:
 * the claim's devices (those of the request, its subrequests included, when request is set), resourceID the
 * device's first CDI ID, else "<driver>/<pool>/<device>", each ID once, sorted. NULL (*ret) when the claim has no
 * such device. with_message: ResourceHealthStatusMessage. */
int dra_health_claim_status(const struct dra_health_cache *c, const struct dra_claim *claim, const char *ref_name,
                            const char *request, bool with_message, uint64_t now_usec, json_t **ret);
