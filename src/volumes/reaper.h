/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Removing the directories of pods that are gone (cleanupOrphanedPodDirs), off the event loop: housekeeping lists
 * <root_dir>/pods on the loop (a directory only the kubelet writes) and hands every pod directory no pod wants any
 * more to the removal pool (its own threads, one job per pod at a time), which unmounts what the pod left mounted
 * and removes the tree (vol_remove_pod_dir). The result comes back to the loop; a failure is retried at the next
 * scan. A pod whose directory is still being removed is not set up again meanwhile (vol_reaper_busy). */

#include <stdbool.h>

#include <event2/event.h>

struct vol_reaper;

int vol_reaper_new(struct event_base *base, const char *root_dir, struct vol_reaper **ret);
/* stops the removal that is running where it is (what is left goes at the next start) and cancels the others.
 * Accepts NULL, returns NULL. */
struct vol_reaper *vol_reaper_free(struct vol_reaper *r);

/* Start the removal of every pod directory for whose uid keep() is false and no removal runs. Returns the number
 * of removals started, or a negative errno when root_dir/pods cannot be read. */
int vol_reaper_scan(struct vol_reaper *r, bool (*keep)(const char *uid, void *userdata), void *userdata);

typedef void (*vol_reaper_done_fn)(const char *uid, int r, void *userdata);

/* Tear down the volumes of a pod that finished for good (vol_teardown_pod_volumes) on the removal pool; done(uid, r)
 * runs on the loop afterwards (r < 0: something is left, -EBUSY when still mounted), never once the reaper is being
 * freed. Returns 1 when started, 0 when a removal or teardown of that pod is already queued or running (done does not
 * run then), or a negative errno. */
int vol_reaper_teardown(struct vol_reaper *r, const char *uid, vol_reaper_done_fn done, void *userdata);

/* A removal of the pod's directory (or a teardown of its volumes) is queued or running. */
bool vol_reaper_busy(const struct vol_reaper *r, const char *uid);
