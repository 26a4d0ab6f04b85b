/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The plugin manager (pkg/kubelet/pluginmanager): plugins announce themselves with a unix socket in
 * <root-dir>/plugins_registry (or a directory below it) serving pluginregistration.Registration. The watcher
 * (inotify) keeps the desired state (the sockets there, each with a generation bumped when it is made anew); the
 * reconciler, on every change and every second, deregisters the registered plugins whose socket went away or was
 * replaced and registers the new ones: GetInfo (1 s deadline), the handler of the plugin's type validates and
 * registers it, and the plugin is told the outcome with NotifyRegistrationStatus. A socket that cannot be asked
 * yet or fails validation is tried again with back-off (1 s doubling to 30 s). Everything runs on the loop over
 * src/grpc. */

#include <event2/event.h>

struct ck_error;
struct pluginmanager;

struct pluginmanager_handler {
        const char *type; /* PluginInfo.type: "CSIPlugin", "DevicePlugin", "DRAPlugin" */
        /* ValidatePlugin: 0 or a negative errno with the reason */
        int (*validate)(void *userdata, const char *name, const char *endpoint, char *const *versions,
                        struct ck_error **ret_error);
        /* RegisterPlugin: 0 when done() will run once, later, with the outcome (r < 0: error, its message) */
        int (*register_plugin)(void *userdata, const char *name, const char *endpoint, char *const *versions,
                               void (*done)(int r, const char *error, void *cbdata), void *cbdata);
        void (*deregister)(void *userdata, const char *name);
        /* instead of deregister when set: the plugin's endpoint too (DRA: several plugins per driver) */
        void (*deregister_endpoint)(void *userdata, const char *name, const char *endpoint);
        void *userdata;
};

int pluginmanager_new(struct event_base *base, const char *dir, struct pluginmanager **ret);
/* Registered plugins stay as they are. The handlers' owners are freed first (a registration waiting for its
 * handler is dropped). Accepts NULL. */
struct pluginmanager *pluginmanager_free(struct pluginmanager *pm);
/* h is copied (its userdata borrowed). Before pluginmanager_start(). */
int pluginmanager_add_handler(struct pluginmanager *pm, const struct pluginmanager_handler *h);
/* Creates the directory (0755), watches it and scans what is there. */
int pluginmanager_start(struct pluginmanager *pm, struct ck_error **ret_error);
